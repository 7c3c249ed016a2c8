"""hmbuild plan: the memory plan equals the engine's (the real Gemma 3 270M through the built
library's memoryBudgetBytes check, byte for byte, and hmllm_run's reported plan), the KV-cache and
weight formulas, budget verdicts and fixes, size units, and one-sentence refusals."""
import json
import shutil
import subprocess

import gguf
import numpy as np
import pytest

from conftest import run_hmbuild
from hmbuild.model import plan as P
from hmbuild.errors import HmbuildError
from hmbuild.model.ggml_types import register_with_gguf

GB = 10**9
THREE_B = dict(params="3B", layers=32, kv_heads=8, head_dim=128, vocab=128256)
THREE_B_FLAGS = ["--params", "3B", "--layers", "32", "--kv-heads", "8", "--head-dim", "128", "--vocab", "128256"]


@pytest.fixture(scope="module")
def gemma():
    from hmbuild.model.catalog import fetch_model

    try:
        return fetch_model()
    except HmbuildError as exc:
        pytest.skip(f"the Gemma 3 270M test model is not available: {exc}")


@pytest.fixture(scope="module")
def stock_reader(gemma):
    """The gguf package's own GGUFReader over the whole file (slow: ~15 s for the tokenizer)."""
    register_with_gguf()
    return gguf.GGUFReader(str(gemma))


# ---- units

@pytest.mark.parametrize("text,expected", [
    ("2.5GB", 2_500_000_000), ("800MB", 800_000_000), ("1.5GiB", 3 * 2**29), ("512MiB", 512 * 2**20),
    ("4096", 4096), ("4096B", 4096), ("2.5 gb", 2_500_000_000), ("1e9B", 10**9), ("64KiB", 65536), ("3KB", 3000),
])
def test_sizes_parse_decimal_and_binary_units(text, expected):
    assert P.parse_size(text) == expected


@pytest.mark.parametrize("text", ["2.5XB", "", "GB", "-1GB", "2.5G", "1.2.3MB", "0B", "lots"])
def test_unreadable_sizes_are_refused(text):
    with pytest.raises(HmbuildError):
        P.parse_size(text)


def test_sizes_print_in_decimal_units_like_the_engine():
    assert P.format_size(287_064_576) == "287.1 MB"
    assert P.format_size(2_500_000_000) == "2.50 GB"
    assert P.format_gib(3 * 2**29) == "1.50 GiB"
    assert P.describe(246_587_904, 37_748_736, 2_728_000) == \
        "weights 246.6 MB + KV cache 37.7 MB + scratch 2.7 MB = 287.1 MB"


@pytest.mark.parametrize("text,expected", [("3B", 3 * 10**9), ("1.5B", 1_500_000_000), ("270M", 270_000_000),
                                           ("3000000000", 3 * 10**9)])
def test_parameter_counts_parse(text, expected):
    assert P.parse_params(text) == expected


# ---- formulas

def test_kv_cache_of_a_3b_model_is_the_formula():
    f16 = P.plan(**THREE_B, ctx=2048, kv="f16")
    assert f16.kv_cache_bytes == 2 * 32 * 8 * 128 * 2048 * 2 == 268_435_456
    q8 = P.plan(**THREE_B, ctx=2048, kv="q8_0")
    assert q8.kv_cache_bytes == 2 * 32 * 8 * 128 * 2048 * 34 // 32
    assert q8.kv_cache_bytes / f16.kv_cache_bytes == pytest.approx(34 / 64)
    assert f16.total_bytes == f16.weights_bytes + f16.kv_cache_bytes + f16.scratch_bytes


@pytest.mark.parametrize("scheme,bits", [("int4-g128", 4 + 16 / 128), ("int4-g64", 4 + 16 / 64), ("int4-g32", 4.5),
                                         ("q8_0", 8.5), ("q4_k_m", 4.85), ("f16", 16)])
def test_params_weights_are_params_times_bits(scheme, bits):
    p = P.plan(**THREE_B, quant=scheme)
    assert p.weights_bytes == int(3e9 * bits / 8)
    assert p.quant == scheme


def test_params_default_to_int4_g128_and_estimate_missing_dims():
    p = P.plan(**THREE_B)
    assert p.quant == "int4-g128" and set(p.estimated_dims) == {"d_model", "d_ff"}
    given = P.plan(**THREE_B, d_model=3072, d_ff=8192)
    assert (given.d_model, given.d_ff, given.estimated_dims) == (3072, 8192, [])
    per_token = 3 * 3072 + 2 * 3072 + 2 * 1024 + 2 * 8192 + 8192  # and one rotated input, the widest (d_ff)
    assert given.scratch_bytes == per_token * 32 * 6 + 128256 * 4 + 4 * (3072 // 1024) * 2048 * 4


def test_scratch_is_plan_memorys_formula():
    # native/src/engine.cpp plan_memory(), written out for d_model 640, q_dim 1024, kv_dim 256,
    # d_ff 2048, vocab 262144, 2 threads, ctx 512.
    per_token = 3 * 640 + 2 * 1024 + 2 * 256 + 2 * 2048 + 2048  # and one rotated input, the widest (d_ff)
    assert P.scratch_bytes(640, 1024, 256, 2048, 262144, 512, 2) == \
        per_token * 32 * 4 + per_token * 32 * 2 + 262144 * 4 + 2 * 4 * 512 * 4


# ---- verdicts and fixes

def test_a_budget_at_the_total_fits_and_one_byte_less_does_not():
    total = P.plan(**THREE_B).total_bytes
    at = P.plan(**THREE_B, budget=total)
    assert at.fits and at.headroom_bytes == 0 and at.fixes == []
    below = P.plan(**THREE_B, budget=total - 1)
    assert below.fits is False and below.headroom_bytes == -1 and below.fixes


def test_a_budget_just_below_suggests_a_context_that_really_fits():
    total = P.plan(**THREE_B, kv="q8_0").total_bytes
    p = P.plan(**THREE_B, kv="q8_0", budget=total - 1000)
    ctx_fixes = [f for f in p.fixes if f.flags.startswith("--ctx")]
    assert len(ctx_fixes) == 1 and ctx_fixes[0].fits
    n = int(ctx_fixes[0].flags.split()[1])
    assert P.MIN_SUGGESTED_CTX <= n < 2048
    again = P.plan(**THREE_B, kv="q8_0", ctx=n, budget=total - 1000)
    assert again.fits and again.total_bytes == ctx_fixes[0].total_bytes
    assert not P.plan(**THREE_B, kv="q8_0", ctx=n + 1, budget=total - 1000).fits  # the largest that fits


def test_fixes_are_ranked_fitting_first_and_each_total_is_right():
    p = P.plan(**THREE_B, quant="q8_0", budget="2.5GB")
    assert p.fits is False
    fits = [f.fits for f in p.fixes]
    assert fits == sorted(fits, reverse=True)
    kinds = {f.flags.split()[0] if f.flags.startswith("--") else "tier": f for f in p.fixes}
    assert kinds["--kv"].total_bytes == P.plan(**THREE_B, quant="q8_0", kv="q8_0").total_bytes
    scheme = kinds["--quant"].flags.split()[1]
    assert kinds["--quant"].fits and P.scheme_bits(scheme) < 8.5
    assert kinds["--quant"].total_bytes == P.plan(**THREE_B, quant=scheme).total_bytes
    assert "1–2B" in kinds["tier"].fix and kinds["tier"].fits


def test_kv_cache_fix_comes_first_when_it_is_enough():
    p = P.plan(**THREE_B, budget=P.plan(**THREE_B).total_bytes - 10_000_000)
    assert p.fixes[0].flags == "--kv q8_0" and p.fixes[0].fits
    assert p.fixes[1].flags.startswith("--ctx")


def test_no_q8_kv_fix_for_a_head_size_the_engine_cannot_cache_in_8_bits():
    args = dict(THREE_B, head_dim=80)
    p = P.plan(**args, budget=P.plan(**args).total_bytes - 1)
    assert all(f.flags != "--kv q8_0" for f in p.fixes)


@pytest.mark.parametrize("params,tier", [("270M", "<0.5B"), ("0.5B", "<0.5B"), ("1B", "1–2B"), ("2B", "1–2B"),
                                         ("3B", "3–4B"), ("4B", "3–4B"), ("7B", "7B"), ("13B", "7B")])
def test_tiers(params, tier):
    p = P.plan(**dict(THREE_B, params=params))
    assert p.tier == tier and p.tier_good_for


def test_json_has_the_documented_keys(hmbuild):
    proc = hmbuild("plan", *THREE_B_FLAGS, "--budget", "1.5GB", "--json")
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    for key in ("weights_bytes", "kv_cache_bytes", "scratch_bytes", "total_bytes", "budget_bytes", "fits", "fixes",
                "tier", "params", "layers", "kv_heads", "head_dim", "vocab", "quant", "ctx", "kv", "threads"):
        assert key in d, key
    assert d["budget_bytes"] == 1_500_000_000 and d["fits"] is False
    assert d["kv_cache_bytes"] == 2 * 32 * 8 * 128 * 2048 * 2
    assert all(set(f) >= {"fix", "total_bytes"} for f in d["fixes"]) and d["fixes"]


def test_text_output_names_verdict_fixes_and_tier(hmbuild):
    proc = hmbuild("plan", *THREE_B_FLAGS, "--quant", "q8_0", "--budget", "2.5GB")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Does NOT fit the budget of 2.50 GB" in out and "Fixes, cheapest first:" in out
    assert "--quant" in out and "Tier 3–4B: good for summarisation" in out and "10^9 bytes" in out
    ok = hmbuild("plan", *THREE_B_FLAGS, "--budget", "2.5GB")
    assert "Fits the budget of 2.50 GB" in ok.stdout and "to spare" in ok.stdout


# ---- bad input

def _write_gguf(path, arch, tensor="w"):
    w = gguf.GGUFWriter(str(path), arch)
    w.add_tensor(tensor, np.zeros(32, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("args", [
    [],
    ["--model", "MODEL", *THREE_B_FLAGS],
    ["--params", "3B", "--layers", "32"],
    [*THREE_B_FLAGS, "--budget", "2.5XB"],
    [*THREE_B_FLAGS, "--ctx", "0"],
    [*THREE_B_FLAGS, "--params", "lots"],
    ["--model", "NOT_GGUF"],
    ["--model", "CLIP"],
    ["--model", "MISSING"],
    ["--params", "3B", "--layers", "32", "--kv-heads", "8", "--head-dim", "80", "--vocab", "1000", "--kv", "q8_0"],
], ids=["nothing", "both", "missing-dims", "bad-size", "ctx-0", "bad-params", "not-gguf", "not-llm", "missing-file",
        "q8-kv-head-80"])
def test_bad_input_is_one_sentence(hmbuild, tmp_path, args):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_text("this is not a model at all")
    clip = _write_gguf(tmp_path / "clip.gguf", "clip")
    subst = {"MODEL": str(clip), "NOT_GGUF": str(bogus), "CLIP": str(clip), "MISSING": str(tmp_path / "nope.gguf")}
    proc = hmbuild("plan", *[subst.get(a, a) for a in args])
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hmbuild: error: "), proc.stderr
    assert "Traceback" not in proc.stderr and "Internal error" not in proc.stderr
    assert lines[0].endswith(".")


def test_bad_input_with_json_prints_ok_false(hmbuild):
    proc = hmbuild("plan", "--json")
    assert proc.returncode != 0 and json.loads(proc.stdout)["ok"] is False


def test_a_gguf_without_an_llm_is_refused(tmp_path):
    with pytest.raises(HmbuildError, match="'clip' GGUF"):
        P.plan(_write_gguf(tmp_path / "c.gguf", "clip"))
    with pytest.raises(HmbuildError, match="not a readable GGUF"):
        (tmp_path / "x.gguf").write_bytes(b"GGUF")
        P.plan(tmp_path / "x.gguf")


# ---- the real Gemma 3 270M, against numbers computed here from its tensor list

def test_the_fast_header_reader_reads_what_the_stock_gguf_reader_reads(gemma, stock_reader):
    fast = P._header_reader(gemma)
    assert fast.data_offset == stock_reader.data_offset
    assert [(t.name, int(t.tensor_type), t.shape.tolist(), t.n_bytes, t.data_offset) for t in fast.tensors] == \
        [(t.name, int(t.tensor_type), t.shape.tolist(), t.n_bytes, t.data_offset) for t in stock_reader.tensors]
    assert list(fast.fields) == list(stock_reader.fields)
    for key, field in stock_reader.fields.items():
        if not (field.types[0] == gguf.GGUFValueType.ARRAY and field.types[-1] == gguf.GGUFValueType.STRING):
            assert fast.fields[key].contents() == field.contents(), key


def test_gemma_plan_from_the_gguf_tensor_list(gemma, stock_reader):
    r = stock_reader
    # Every tensor of this file is one the engine binds (token_embd doubles as the output).
    by_hand = 0
    for t in r.tensors:
        block, size = gguf.GGML_QUANT_SIZES[t.tensor_type]
        by_hand += int(t.n_elements) // block * size
    for ctx, kv, threads in [(2048, "f16", 4), (512, "q8_0", 2), (100, "f16", 1)]:
        p = P.plan(gemma, ctx=ctx, kv=kv, threads=threads)
        assert (p.layers, p.kv_heads, p.head_dim, p.d_model, p.d_ff, p.q_dim, p.vocab) == \
            (18, 1, 256, 640, 2048, 1024, 262144)
        assert p.weights_bytes == by_hand == 246_587_904
        row = 256 * 2 if kv == "f16" else 256 // 32 * 34
        assert p.kv_cache_bytes == 2 * 18 * ctx * row
        per_token = 3 * 640 + 2 * 1024 + 2 * 256 + 2 * 2048 + 2048  # and one rotated input, the widest (d_ff)
        assert p.scratch_bytes == per_token * 32 * 6 + 262144 * 4 + threads * 4 * ctx * 4  # 4 query heads per KV head
        assert p.tier == "<0.5B" and p.params == sum(int(t.n_elements) for t in r.tensors)


def test_gemma_plan_is_quick(gemma):
    import time

    t0 = time.monotonic()
    P.plan(gemma)
    assert time.monotonic() - t0 < 5  # the header only; the stock reader would parse 262144 tokens


def test_gemma_context_is_capped_at_its_training_context(gemma):
    p = P.plan(gemma, ctx=65536)
    assert p.ctx == 32768 and p.ctx_requested == 65536 and any("32768" in n for n in p.notes)


def test_gemma_requantised_estimate_equals_what_hmbuild_quantize_plans(gemma, stock_reader):
    quantize = pytest.importorskip("hmbuild.model.quantize")
    r = stock_reader
    for group in (128, 64, 32):
        planned = sum(t.nbytes for t in quantize.plan_tensors(r, group, []))
        assert P.plan(gemma, quant=f"int4-g{group}").weights_bytes == planned
    # The file is Q4_K_M already: --quant q4_k_m keeps its real sizes.
    assert P.plan(gemma, quant="q4_k_m").weights_bytes == P.plan(gemma).weights_bytes
    assert P.plan(gemma, quant="q8_0").weights_bytes > P.plan(gemma, quant="int4-g32").weights_bytes


def test_gemma_cli_text(gemma, hmbuild):
    proc = hmbuild("plan", "--model", str(gemma), "--budget", "270MB")
    assert proc.returncode == 0, proc.stderr
    assert "weights      246.6 MB" in proc.stdout and "Does NOT fit" in proc.stdout
    assert "1. an 8-bit KV cache [--kv q8_0]: total 269.9 MB (fits)" in proc.stdout
    assert "Tier <0.5B: good for classification / intent routing" in proc.stdout


# ---- against the engine itself

PROBE = r"""
const mod = { exports: {} };
process.dlopen(mod, process.env.HMBUILD_LIBRARY);
const lib = mod.exports;
const [model, ctx, kv, threads, budget] = process.argv.slice(2);
const out = [];
for (const b of [Number(budget), Number(budget) - 1]) {
  try {
    const id = lib.init(model, { contextSize: Number(ctx), kvCacheType: kv, threads: Number(threads),
                                 memoryBudgetBytes: b });
    lib.release(id);
    out.push({ ok: true });
  } catch (e) { out.push({ ok: false, code: e.code, message: e.message }); }
}
console.log(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def built(host_project):
    proc = run_hmbuild("-C", str(host_project), "build", "--json", check=True)
    return host_project, json.loads(proc.stdout)["library"]


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
@pytest.mark.parametrize("ctx,kv,threads", [(512, "q8_0", 2), (2048, "f16", 4), (300, "f16", 3)])
def test_gemma_plan_is_exactly_where_the_engine_draws_the_line(gemma, built, tmp_path, ctx, kv, threads):
    """memoryBudgetBytes = the planned total loads; one byte less is OUT_OF_MEMORY."""
    _, library = built
    p = P.plan(gemma, ctx=ctx, kv=kv, threads=threads)
    probe = tmp_path / "probe.mjs"
    probe.write_text(PROBE)
    proc = subprocess.run(["node", str(probe), str(gemma), str(ctx), kv, str(threads), str(p.total_bytes)],
                          env={"HMBUILD_LIBRARY": library, "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    at, below = json.loads(proc.stdout)
    assert at == {"ok": True}
    assert below["ok"] is False and below["code"] == "OUT_OF_MEMORY"
    assert p.engine_describe in below["message"]
    assert P.plan(gemma, ctx=ctx, kv=kv, threads=threads, budget=p.total_bytes - 1).fits is False


def test_gemma_plan_matches_the_plan_hmllm_run_reports(gemma, built):
    root, _ = built
    proc = run_hmbuild("-C", str(root), "run", "--json", "--model", str(gemma), "--tokens", "2,651", "--max-tokens",
                       "1", "--ctx", "1024", "--kv", "q8_0", "--threads", "2")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["memory"] == P.plan(gemma, ctx=1024, kv="q8_0", threads=2).engine_describe


# ---- the families phones run, at their published shapes

# Parameter counts the model cards state (Hugging Face model pages), to check the shapes against:
# a wrong layer count, width or tie shows as a count that is off by far more than rounding.
PUBLISHED_PARAMS = {"qwen2.5-0.5b": 0.49e9, "qwen2.5-1.5b": 1.54e9, "qwen2.5-3b": 3.09e9, "qwen3-0.6b": 0.6e9,
                    "qwen3-1.7b": 1.7e9, "qwen3-4b": 4.0e9, "llama-3.2-1b": 1.23e9, "llama-3.2-3b": 3.21e9,
                    "gemma-3-270m": 0.268e9, "gemma-3-1b": 1.0e9, "gemma-3-4b": 3.88e9, "qwen2.5-7b": 7.62e9}


def test_known_models_cover_every_family_at_each_size_class():
    have = {(m.arch, m.size_class) for m in P.KNOWN_MODELS}
    for arch in ("qwen2", "qwen3", "llama", "gemma3"):
        for size in ("0.5B", "1.5B", "3B"):
            if (arch, size) == ("llama", "0.5B"):
                continue  # Llama 3.2's smallest is 1B
            assert (arch, size) in have, (arch, size)
    assert {m.arch for m in P.KNOWN_MODELS} <= set(P.SUPPORTED_ARCHS)


@pytest.mark.parametrize("key", sorted(PUBLISHED_PARAMS))
def test_known_shapes_give_the_published_parameter_count(key):
    m = P.known_model(key)
    assert abs(m.params - PUBLISHED_PARAMS[key]) / PUBLISHED_PARAMS[key] < 0.02, f"{key}: {m.params:,}"
    assert m.n_heads % m.kv_heads == 0 and m.head_dim % 2 == 0


def test_kv_per_1k_tokens_is_the_engines_cache_for_1024_positions():
    m = P.known_model("llama-3.2-1b")  # 16 layers x 8 KV heads x 64
    per = P.kv_per_1k_tokens(m.layers, m.kv_heads, m.head_dim)
    assert per["f16"] == 2 * 16 * 8 * 64 * 1024 * 2 == 33_554_432
    assert per["q8_0"] == 2 * 16 * 1024 * (8 * 64 // 32) * 34
    assert P.kv_per_1k_tokens(2, 1, 80)["q8_0"] is None  # the engine refuses an 8-bit cache there
    p = P.plan(family="qwen3-1.7b", ctx=4096)
    assert p.kv_cache_bytes == 4 * p.kv_per_1k_tokens_f16_bytes  # the cache is linear in the context
    assert p.params == P.known_model("qwen3-1.7b").params
    assert p.arch == "qwen3" and p.quant == "int4-g128" and p.head_dim == 128


def test_plan_families_lists_every_known_model_with_kv_per_1k(hmbuild):
    proc = hmbuild("plan", "--families", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["families"]
    assert [r["family"] for r in rows] == [m.key for m in P.KNOWN_MODELS]
    for r in rows:
        m = P.known_model(r["family"])
        assert r["kv_per_1k_tokens_f16_bytes"] == P.kv_cache_bytes(m.layers, 1024, m.kv_heads * m.head_dim, "f16")
        assert r["kv_per_1k_tokens_q8_0_bytes"] == P.kv_cache_bytes(m.layers, 1024, m.kv_heads * m.head_dim, "q8_0")
        assert r["source"].startswith("https://huggingface.co/")
    text = hmbuild("plan", "--families").stdout
    assert "qwen3-4b" in text and "117.4 MB" in text  # Qwen3-1.7B / 0.6B, Llama 3.2 3B: 28 x 8 x 128


def test_plan_family_text_names_the_shape_and_kv_per_1k(hmbuild):
    proc = hmbuild("plan", "--family", "gemma-3-1b", "--kv", "q8_0", "--budget", "1GB")
    assert proc.returncode == 0, proc.stderr
    assert "Gemma-3-1B (gemma3" in proc.stdout and "per 1k tokens: 27.3 MB f16, 14.5 MB q8_0" in proc.stdout
    assert "Fits the budget" in proc.stdout


@pytest.mark.parametrize("args", [
    ["--family", "mistral-7b"],
    ["--family", "qwen3-4b", "--layers", "3"],
    ["--family", "qwen3-4b", "--params", "3B"],
    ["--families", "--family", "qwen3-4b"],
], ids=["unknown", "family-with-dims", "family-and-params", "list-and-family"])
def test_bad_family_input_is_one_sentence(hmbuild, args):
    proc = hmbuild("plan", *args)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hmbuild: error: ") and lines[0].endswith("."), proc.stderr


@pytest.mark.parametrize("family", ["qwen3", "llama3-rope"])
def test_a_qwen3_or_llama3_rope_file_is_planned_with_the_tensors_the_engine_binds(tmp_path, family):
    from tiny_models import family_config, write_tiny_model

    path = tmp_path / f"{family}.gguf"
    write_tiny_model(path, family_config(family))
    reader = gguf.GGUFReader(str(path))
    p = P.plan(model=path, ctx=128)
    assert p.arch in ("qwen3", "llama") and not p.notes  # no "this runtime does not load" note
    # Every tensor of these files is bound (q/k norms; rope_freqs for llama), so the plan's weights are the file's.
    assert p.weights_bytes == sum(int(t.n_bytes) for t in reader.tensors)
    assert p.head_dim == family_config(family).head_dim


def test_a_qwen3_file_without_its_qk_norms_is_refused_in_one_sentence(tmp_path):
    from tiny_models import family_config, write_tiny_model

    good = tmp_path / "qwen3.gguf"
    write_tiny_model(good, family_config("qwen3"))
    src = gguf.GGUFReader(str(good))
    bad = tmp_path / "no-norm.gguf"
    w = gguf.GGUFWriter(str(bad), "qwen3")
    for f in src.fields.values():
        if f.name.startswith("qwen3.") and f.types and f.types[0] != gguf.GGUFValueType.ARRAY:
            w.add_key_value(f.name, f.contents(), f.types[0])
    for t in src.tensors:
        if t.name != "blk.0.attn_q_norm.weight":
            w.add_tensor(t.name, np.array(t.data), raw_shape=tuple(reversed([int(x) for x in t.shape])),
                         raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(HmbuildError, match="lacks tensor blk.0.attn_q_norm.weight, which the engine needs for a qwen3"):
        P.plan(model=bad)
