"""Calibrated quantization (`hmbuild quantize --calibrate`): the error-compensating rounding itself
(hmbuild/gptq.py) on matrices with known inputs; the native hmllm_calibrate tool's input moments
against a NumPy forward pass of the same tiny model; the command end to end, its one-sentence
refusals; and on the real Gemma 3 270M that calibration lowers the KL divergence `hmbuild eval`
measures against the original."""
import json

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from conftest import run_hmbuild
from tiny_models import TinyConfig, reference_logits, write_tiny_model

from hmbuild.model import gptq
from hmbuild.model.int4_format import dequantize_hm_q4, pack_hm_q4, quantize_hm_q4_codes

ENV = {"CMAKE_BUILD_PARALLEL_LEVEL": "2"}


def correlated_inputs(rng, n_cols, n=4096):
    """Activations whose columns co-vary strongly and differ in scale, as a transformer's do."""
    mix = rng.normal(size=(n_cols, n_cols)) * 0.3 + np.eye(n_cols)
    scale = np.exp(rng.normal(size=n_cols))
    return (rng.normal(size=(n, n_cols)) @ mix) * scale


def output_error(w, q, d, group, x):
    wq = dequantize_hm_q4(pack_hm_q4(q, d, group), *w.shape, group)
    return float(np.linalg.norm((w - wq) @ x.T))


# ---------------------------------------------------------------------------------------------
# The rounding


@pytest.mark.parametrize("group", [32, 128])
def test_compensation_cuts_the_output_error(group):
    rng = np.random.default_rng(1)
    w = rng.normal(size=(64, 256)).astype(np.float32)
    x = correlated_inputs(rng, 256)
    h = x.T @ x / len(x)
    q, d = gptq.quantize_codes(w, group, gptq.prepare(h))
    q0, d0 = quantize_hm_q4_codes(w, group)
    calibrated, plain = output_error(w, q, d, group, x), output_error(w, q0, d0, group, x)
    assert calibrated < 0.85 * plain, (calibrated, plain)
    # Less damping fits these very inputs closer still (the default trades that for noisy moments).
    q1, d1 = gptq.quantize_codes(w, group, gptq.prepare(h, damp=0.01))
    assert output_error(w, q1, d1, group, x) < 0.75 * plain


def test_independent_equal_inputs_give_plain_rounding():
    # Nothing to compensate through and every column weighs the same (1 + damping 1 = 2, exact in
    # floats): the same codes and scales as plain rounding, bit for bit.
    rng = np.random.default_rng(2)
    w = rng.normal(size=(16, 128)).astype(np.float32)
    factor = gptq.prepare(np.eye(128), damp=1.0)
    q, d = gptq.quantize_codes(w, 32, factor)
    q0, d0 = quantize_hm_q4_codes(w, 32)
    assert np.array_equal(q, q0) and np.array_equal(d.view(np.uint16), d0.view(np.uint16))


def test_inputs_that_never_fire_and_bad_shapes():
    rng = np.random.default_rng(3)
    x = correlated_inputs(rng, 64)
    x[:, 5] = 0.0  # an input that is always zero: its column is rounded plainly, nothing breaks
    factor = gptq.prepare(x.T @ x / len(x))
    q, d = gptq.quantize_codes(rng.normal(size=(8, 64)).astype(np.float32), 32, factor)
    assert q.shape == (8, 64) and np.all(np.isfinite(d.astype(np.float32)))
    with pytest.raises(ValueError, match="64 wide but the tensor has 128 columns"):
        gptq.quantize_codes(np.zeros((8, 128), np.float32), 32, factor)
    with pytest.raises(ValueError, match="square"):
        gptq.prepare(np.zeros((3, 4)))


def test_a_shared_input_is_prepared_once(tmp_path, monkeypatch):
    """Q, K and V share one input; in file order attn_output can come between them. Each moment
    file is factorised once, and the factor of the tensors between is the right one."""
    from hmbuild.model.quantize import Calibration

    rng = np.random.default_rng(4)
    for site, n in (("attn_in", 32), ("attn_out", 16)):
        x = correlated_inputs(rng, n, n=256)
        np.save(tmp_path / f"{site}.npy", x.T @ x / len(x))
    tensors = {"attn_q": "attn_in.npy", "attn_k": "attn_in.npy", "attn_output": "attn_out.npy",
               "attn_v": "attn_in.npy"}
    (tmp_path / "manifest.json").write_text(json.dumps({"tokens": 256, "tensors": tensors}))
    prepared = []
    real_prepare = gptq.prepare
    monkeypatch.setattr(gptq, "prepare", lambda h: prepared.append(h.shape) or real_prepare(h))
    cal = Calibration(tmp_path)
    widths = [len(cal.factor(name, 16 if name == "attn_output" else 32).order)
              for name in ("attn_q", "attn_k", "attn_output", "attn_v")]
    assert widths == [32, 32, 16, 32] and prepared == [(32, 32), (16, 16)]


def test_a_rotated_matrix_is_rounded_for_its_rotated_inputs(tmp_path):
    """A matrix stored as W·R sees R·x: its factor comes from R·H·R, kept apart from the plain one,
    and rounding W·R with it moves (W·R)(R·x) = W·x less than rounding it for H would."""
    from hmbuild.model.int4_format import rotate_columns, rotate_moments
    from hmbuild.model.quantize import Calibration

    rng = np.random.default_rng(5)
    x = correlated_inputs(rng, 128, n=2048)
    h = x.T @ x / len(x)
    np.save(tmp_path / "in.npy", h)
    (tmp_path / "manifest.json").write_text(json.dumps({"tokens": len(x), "tensors": {"w": "in.npy"}}))
    cal = Calibration(tmp_path)
    rotated, plain = cal.factor("w", 128, rotated=True), cal.factor("w", 128)
    want = gptq.prepare(rotate_moments(h))
    assert np.array_equal(rotated.order, want.order) and np.allclose(rotated.u, want.u)
    assert not np.allclose(rotated.u, plain.u)
    w = rng.normal(size=(32, 128)).astype(np.float32)
    wr, xr = rotate_columns(w), rotate_columns(x)

    def err(factor):
        q, d = gptq.quantize_codes(wr, 32, factor)
        return output_error(wr, q, d, 32, xr)

    assert err(rotated) < err(plain)


# ---------------------------------------------------------------------------------------------
# The native tool and the command

TOKENS = [5, 17, 260, 99, 3, 42, 42, 7, 150, 201, 33, 64, 12, 280, 9, 1, 77, 123, 250, 18]


@pytest.fixture(scope="module")
def project(host_project):
    return host_project


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("calmodels")
    cfg = TinyConfig(weight_type=Q.F32, ctx=256)
    path = d / "llama-f32.gguf"
    return cfg, write_tiny_model(path, cfg), path


def test_the_tools_moments_are_the_models_inputs(project, tiny, tmp_path):
    cfg, W, path = tiny
    tool = project / "build" / "host-release" / "hmllm" / "hmllm_calibrate"
    import subprocess

    out = tmp_path / "moments"
    proc = subprocess.run([str(tool), "--model", str(path), "--tokens", ",".join(map(str, TOKENS)), "--out", str(out),
                           "--threads", "2", "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["tokens"] == len(TOKENS) and summary["sites"] == 4 * cfg.n_layers + 1
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["tensors"]["blk.1.attn_v.weight"] == "blk.1.attn_in.npy"
    assert manifest["tensors"]["blk.0.ffn_down.weight"] == "blk.0.ffn_mid.npy"
    assert manifest["tensors"]["output.weight"] == "output.npy"  # llama: an untied output matrix
    inputs = {}
    reference_logits(cfg, W, TOKENS, inputs=inputs)
    for site, x in inputs.items():
        got = np.load(out / f"{site}.npy")
        want = x.T @ x / len(TOKENS)
        assert got.shape == want.shape, site
        assert np.abs(got - want).max() <= 2e-3 * np.abs(want).max(), site
    assert not (tmp_path / "moments.partial").exists()
    again = subprocess.run([str(tool), "--model", str(path), "--tokens", "1,2", "--out", str(out)],
                           capture_output=True, text=True)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_quantize_calibrate_end_to_end(project, tiny, tmp_path):
    cfg, W, path = tiny
    text = tmp_path / "notes.txt"
    text.write_text("the moon was in a tent and the cat sat on the mat. " * 40, encoding="utf-8")
    out = tmp_path / "cal.gguf"
    proc = run_hmbuild("-C", str(project), "quantize", str(path), str(out), "--scheme", "int4-g32", "--calibrate",
                       str(text), "--calibration-tokens", "200", "--json", env=ENV)
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    hm = res["tensors"]["HM_Q4_G32"]
    # o, gate, up and down per layer and the output matrix; the untied embedding (only looked up) is not.
    assert res["calibrated_tensors"] == 4 * cfg.n_layers + 1 and hm == res["calibrated_tensors"] + 1
    assert res["calibration"]["text_tokens"] == 200 and res["added_keys"]["hmbuild.model.quantize.calibration_tokens"] >= 200
    # The calibrated file runs in the engine and stays close to the source on the calibrated inputs.
    plain = tmp_path / "plain.gguf"
    run_hmbuild("quantize", str(path), str(plain), "--scheme", "int4-g32", check=True)
    ev = {}
    for name, model in (("cal", out), ("plain", plain)):
        p = run_hmbuild("-C", str(project), "eval", "--model", str(model), "--reference", str(path), "--text",
                        str(text), "--threads", "1", "--json", env=ENV)
        assert p.returncode == 0, p.stderr
        ev[name] = json.loads(p.stdout)
    assert ev["cal"]["kl_mean"] < ev["plain"]["kl_mean"], ev


def error_line(proc):
    lines = [l for l in proc.stderr.splitlines() if l.startswith("hmbuild: error: ")]
    assert proc.returncode != 0 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_bad_calibration_input_is_one_sentence(project, tiny, tmp_path):
    _, _, path = tiny
    out = tmp_path / "out.gguf"

    def q(*args, cwd=None):
        return run_hmbuild(*(["-C", str(project)] if cwd is None else []), "quantize", str(path), str(out), *args,
                           cwd=cwd, env=ENV)

    assert "does not exist" in error_line(q("--calibrate", str(tmp_path / "missing.txt")))
    (tmp_path / "empty.txt").write_text("  \n")
    assert "is empty" in error_line(q("--calibrate", str(tmp_path / "empty.txt")))
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00")
    assert "not valid UTF-8" in error_line(q("--calibrate", str(tmp_path / "bin.txt")))
    (tmp_path / "folder").mkdir()
    assert "not one hmllm_calibrate wrote" in error_line(q("--calibrate", str(tmp_path / "folder")))
    assert "too few" in error_line(q("--calibrate", "default", "--calibration-tokens", "3"))
    # Outside a project there is no engine to measure with.
    assert "is not an hmbuild project" in error_line(q("--calibrate", "default", cwd=tmp_path))
    # Options that only act on a calibration are refused without one, not silently ignored.
    assert "only with --calibrate" in error_line(q("--threads", "2"))
    assert "only with --calibrate" in error_line(q("--calibration-tokens", "500"))
    # Moments of another model: the shapes do not match.
    other = TinyConfig(weight_type=Q.F32, ctx=256, d_model=128, d_ff=256, head_dim=32)
    other_path = tmp_path / "other.gguf"
    write_tiny_model(other_path, other)
    tool = project / "build" / "host-release" / "hmllm" / "hmllm_calibrate"
    import subprocess

    subprocess.run([str(tool), "--model", str(other_path), "--tokens", "1,2,3,4", "--out", str(tmp_path / "m")],
                   check=True, capture_output=True)
    assert "measured on another model" in error_line(q("--calibrate", str(tmp_path / "m")))
    assert not out.exists() and not list(tmp_path.glob(".out.gguf.*"))


# ---------------------------------------------------------------------------------------------
# The real model


def quantize_and_eval(project, model, out, *quantize_args):
    """`hmbuild quantize MODEL OUT ARGS` then `hmbuild eval` of OUT against MODEL: both JSON objects."""
    proc = run_hmbuild("-C", str(project), "quantize", model, str(out), *quantize_args, "--json", env=ENV)
    assert proc.returncode == 0, proc.stderr
    ev = run_hmbuild("-C", str(project), "eval", "--model", str(out), "--reference", model, "--ctx", "256",
                     "--threads", "2", "--json", env=ENV)
    assert ev.returncode == 0, ev.stderr
    return json.loads(proc.stdout), json.loads(ev.stdout)


@pytest.mark.quality
def test_calibration_lowers_the_drift_of_gemma(project, tmp_path):
    """The FFN gate and up matrices of all 18 layers re-quantized at group 128, the rest copied:
    calibrated on hmbuild's default calibration text, judged by `hmbuild eval` on its (different)
    evaluation text. (ffn_down too took twice as long, 86 s against 44 s, for the same verdict.)"""
    model = run_hmbuild("fetch-model", check=True).stdout.strip()
    keep = ["--keep", "source:*", "--keep", "int4-g128:blk.*.ffn_[gu]*"]
    results = {}
    for name, extra in (("plain", []), ("cal", ["--calibrate", "default", "--calibration-tokens", "1024"])):
        made, results[name] = quantize_and_eval(project, model, tmp_path / f"{name}.gguf", *keep, *extra)
        assert made["calibrated_tensors"] == (36 if extra else 0)
    assert results["cal"]["kl_mean"] < 0.8 * results["plain"]["kl_mean"], results
    assert results["cal"]["top1_agreement"] >= results["plain"]["top1_agreement"], results


@pytest.mark.quality
def test_rotation_lowers_the_drift_of_gemma(project, tmp_path):
    """Gemma's tied embedding (also its output matrix, 168 M of its 268 M weights) rounded to 4 bits
    at group 128, plainly, with and without rotated inputs; the rest copied. The engine rotates
    the rotated file's inputs itself: judged by `hmbuild eval` against the original."""
    model = run_hmbuild("fetch-model", check=True).stdout.strip()
    keep = ["--keep", "source:*", "--keep", "int4-g128:token_embd.weight"]
    results = {}
    for name, extra in (("rotated", []), ("plain", ["--no-rotate"])):
        made, results[name] = quantize_and_eval(project, model, tmp_path / f"{name}.gguf", *keep, *extra)
        assert made["rotated_tensors"] == (0 if extra else 1)
    assert results["rotated"]["kl_mean"] < 0.6 * results["plain"]["kl_mean"], results
    assert results["rotated"]["top1_agreement"] > results["plain"]["top1_agreement"], results
    # Where the original is confident (its top token p >= 0.5) the 4-bit files keep its answer more
    # often than on average: the flips gather at near-ties.
    for r in results.values():
        assert 0.1 < r["confident_share"] < 0.9, r
        assert r["top1_agreement_confident"] > r["top1_agreement"] + 0.05, r
