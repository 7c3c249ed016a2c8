"""`hmbuild plan`: what a model costs in memory on the phone, before anything is built or loaded.

The breakdown is the engine's own memory plan (native/src/engine.cpp, plan_memory()), computed in
Python from the same inputs, so a plan that fits here is one Engine::create accepts under the
same memoryBudgetBytes and one that does not fit is one it refuses (total > budget):

    weights   the bytes of every tensor the forward pass reads (mapped, not copied), as
              load_model() binds them (native/src/model.cpp); or an estimate for a scheme
    KV cache  KvCache::bytes_for (native/src/kv_cache.cpp): 2 x layers x ctx x row bytes
    scratch   the activation buffers sized once for max_batch (32) prompt tokens, the logits and
              one attention score row per thread

Sizes: decimal units are decimal (1 MB = 10^6 bytes, 1 GB = 10^9 bytes, as the engine's
"262.1 MB" messages), binary units binary (1 MiB = 2^20, 1 GiB = 2^30 bytes).

Everything here is a pure function of its arguments (the GGUF file is only read); plan() returns a
Plan dataclass that the CLI prints as text or JSON.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from hmbuild.errors import HmbuildError
from hmbuild.model import ggml_types as T
from hmbuild.model.ggml_types import check_runnable, register_with_gguf
from hmbuild.model.quantize import keeps_source

# ---- units

_DECIMAL = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_BINARY = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?\s*([A-Za-z]*)\s*$")


def parse_size(text: str) -> int:
    """Bytes in a size such as 2.5GB (2.5 x 10^9), 800MB, 1.5GiB (1.5 x 2^30), 4096 or 4096B.

    Decimal units (KB, MB, GB, TB) are powers of 1000 and binary ones (KiB, MiB, GiB, TiB) powers
    of 1024; the unit's letters may be in any case. A bare K / M / G is refused, because it could
    mean either."""
    m = _SIZE_RE.match(str(text))
    unit = m.group(3).lower() if m else ""
    if not m or (unit not in _DECIMAL and unit not in _BINARY):
        if m and unit in ("k", "m", "g", "t"):
            raise HmbuildError(f"Size '{text}' has no unit of bytes; write {m.group(1)}{unit.upper()}B "
                               f"(decimal, 10^n bytes) or {m.group(1)}{unit.upper()}iB (binary, 2^n bytes).")
        raise HmbuildError(f"Cannot read the size '{text}'; write a number of bytes with a unit such as "
                           "2.5GB, 800MB or 1.5GiB (GB = 10^9 bytes, GiB = 2^30 bytes).")
    value = float(m.group(1)) * 10 ** int(m.group(2) or 0) * (_DECIMAL.get(unit) or _BINARY[unit])
    if not math.isfinite(value) or value < 1:
        raise HmbuildError(f"The size '{text}' is less than one byte; give a positive size such as 2.5GB.")
    return int(value)


def format_size(n: int) -> str:
    """Decimal units, as the engine prints them: '262.1 MB' (10^6 bytes), '2.50 GB' (10^9 bytes)."""
    if abs(n) >= 10**9:
        return f"{n / 1e9:.2f} GB"
    if abs(n) >= 10**6:
        return f"{n / 1e6:.1f} MB"
    if abs(n) >= 10**3:
        return f"{n / 1e3:.1f} KB"
    return f"{n} B"


def format_gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def parse_params(text: str) -> int:
    """A parameter count: 3B, 1.5B, 270M, 3e9 or 3000000000 (B = billion here, not bytes)."""
    m = re.match(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?\s*([kKmMbBgGtT]?)\s*$", str(text))
    if not m:
        raise HmbuildError(f"Cannot read the parameter count '{text}'; write it as 3B, 1.5B, 270M or 3000000000.")
    scale = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}[m.group(3).lower()]
    value = float(m.group(1)) * 10 ** int(m.group(2) or 0) * scale
    if not math.isfinite(value) or value < 1e6:
        raise HmbuildError(f"The parameter count '{text}' is below a million; give the model's size such as 3B.")
    return int(value)


# ---- weight schemes

# Bits per weight of each scheme, used with --params (and for the tier fix):
#   int4-g<G>  hmbuild's HM_Q4_G<G> (hmbuild/int4_format.py): 4-bit codes + one fp16 scale per
#              G weights = 4 + 16/G bits (int4-g32: 4.5)
#   q8_0       ggml Q8_0: 32 int8 + one fp16 scale = 34 bytes per 32 weights = 8.5 bits
#   q4_k_m     llama.cpp's Q4_K_M mix (Q4_K = 4.5 bits, Q6_K = 6.5625 bits for attn_v / ffn_down in
#              half the layers and the output): about 4.85 bits over a whole model. Source:
#              llama.cpp tools/quantize/quantize.cpp lists Q4_K_M as "3.80G @ LLaMA-v1-7B" and
#              "4.58G @ Llama-3-8B" (GiB), i.e. 4.08e9 bytes / 6.74e9 weights = 4.84 bits and
#              4.92e9 / 8.03e9 = 4.90 bits. An estimate, not a layout.
#   f16        16 bits
SCHEMES = ("int4-g128", "int4-g64", "int4-g32", "q4_k_m", "q8_0", "f16")
_INT4_GROUP = {"int4-g128": 128, "int4-g64": 64, "int4-g32": 32}
_SCHEME_TYPE = {**{s: T.HM_Q4[g] for s, g in _INT4_GROUP.items()}, "q8_0": T.Q8_0, "f16": T.F16}
Q4_K_M_BITS = 4.85


def scheme_bits(scheme: str) -> float:
    """Bits per weight of a scheme: its type's (from the type table), or the Q4_K_M estimate."""
    return Q4_K_M_BITS if scheme == "q4_k_m" else T.bits_per_weight(_SCHEME_TYPE[scheme])
# general.file_type values (llama.cpp's LlamaFileType) that already are a scheme: --quant with the
# file's own scheme keeps its real tensor sizes instead of an estimate.
_FILE_TYPE_SCHEME = {1: "f16", 7: "q8_0", 15: "q4_k_m"}

def requantised_tensor_bytes(name: str, shape: tuple[int, ...], scheme: str, source_type: int = 0,
                             source_bytes: int | None = None) -> int:
    """Bytes of one tensor (shape in GGUF's ne order, ne[0] = n_cols) after re-quantization with
    SCHEME, by the rules of `hmbuild quantize` (hmbuild/quantize.py, _default_type and _fit):
    1-D tensors and anything named *norm* stay F32; under the INT4 schemes the attention Q, K, V
    (and fused QKV) projections stay Q8_0 and every other matrix (token embedding, attn_output,
    FFN, output) becomes HM_Q4_G<G>; a matrix the INT4 format cannot hold (not 2-D, n_rows % 4,
    n_cols % G) falls back to Q8_0, or to a float type (F32 if it was F32, else F16) when n_cols % 32
    too. A matrix already stored narrower than its default type (source_bytes given) keeps its size,
    as quantize never widens one. q8_0 and f16 put every matrix in that type (Q8_0 with the same float
    fallback); q4_k_m, which hmbuild does not write, is the ~4.85-bit llama.cpp average per matrix element."""
    n_cols = shape[0]
    n_rows = math.prod(shape[1:]) if len(shape) > 1 else 1
    n = n_cols * n_rows
    if len(shape) == 1 or "norm" in name:
        return n * 4
    float_bytes = n * (4 if source_type == T.F32 else 2)
    q8 = T.nbytes(T.Q8_0, n_rows, n_cols) if T.fits(T.Q8_0, n_cols) else float_bytes
    if scheme == "f16":
        return T.nbytes(T.F16, n_rows, n_cols)
    if scheme == "q8_0":
        return q8
    if scheme == "q4_k_m":
        return int(n * Q4_K_M_BITS / 8)
    group = _INT4_GROUP[scheme]
    is_qkv = name.endswith(("attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_qkv.weight"))
    if source_bytes is not None and keeps_source(source_type, T.Q8_0 if is_qkv else T.HM_Q4[group]):
        return source_bytes
    if is_qkv:
        return q8
    if len(shape) != 2 or n_rows % 4 or not T.fits(T.HM_Q4[group], n_cols):
        return q8
    return T.nbytes(T.HM_Q4[group], n_rows, n_cols)


def weights_from_params(params: int, scheme: str) -> int:
    return int(params * scheme_bits(scheme) / 8)


# ---- the engine's formulas

ENGINE_MAX_BATCH = 32  # EngineOptions::max_batch (native/include/hmllm/engine.h)
DEFAULT_THREADS = 4  # Session: the big cores, 4 when unknown (native/src/session.cpp)
MIN_SUGGESTED_CTX = 256


def kv_cache_bytes(n_layers: int, ctx: int, kv_dim: int, kv: str) -> int:
    """KvCache::bytes_for (native/src/kv_cache.cpp), exactly: a row is kv_dim halves (f16) or
    kv_dim / 32 blocks of 34 bytes (q8_0: an fp16 scale + 32 int8, integer division as in C++);
    keys and values, every layer, every position: 2 x layers x ctx x row. For f16 that is
    2 x layers x kv_heads x head_dim x ctx x 2 bytes, for q8_0 x 34/32 bytes."""
    row = kv_dim * 2 if kv == "f16" else (kv_dim // 32) * 34
    return 2 * n_layers * ctx * row


def scratch_bytes(d_model: int, q_dim: int, kv_dim: int, d_ff: int, n_vocab: int, ctx: int, threads: int,
                  max_batch: int = ENGINE_MAX_BATCH) -> int:
    """plan_memory()'s scratch (native/src/engine.cpp), term for term: per batch row 3 d_model +
    2 q_dim + 2 kv_dim + 2 d_ff floats (4 bytes), one rotated matmul input (the widest of d_model,
    d_ff, q_dim) and their quantized copies (<= 2 bytes), the logits (n_vocab floats) and per thread
    one attention score row (ctx floats) for each query head that shares a KV head (q_dim / kv_dim
    of them)."""
    per_token = 3 * d_model + 2 * q_dim + 2 * kv_dim + 2 * d_ff + max(d_model, d_ff, q_dim)
    group = max(1, q_dim // kv_dim)
    return per_token * max_batch * 4 + per_token * max_batch * 2 + n_vocab * 4 + threads * group * ctx * 4


def describe(weights: int, kv: int, scratch: int) -> str:
    """MemoryPlan::describe(): 'weights 246.6 MB + KV cache 18.9 MB + scratch 6.1 MB = 271.6 MB'."""
    mb = lambda b: f"{b / 1e6:.1f} MB"  # noqa: E731 - the engine's mb(): %.1f of bytes / 1e6
    return f"weights {mb(weights)} + KV cache {mb(kv)} + scratch {mb(scratch)} = {mb(weights + kv + scratch)}"


# ---- the families phones run, at their real shapes

@dataclass(frozen=True)
class KnownModel:
    """A published model's shape, from its config.json on Hugging Face (`source`): hidden_size,
    num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim (hidden_size / heads
    when absent), intermediate_size, vocab_size, tie_word_embeddings, max_position_embeddings."""
    name: str
    arch: str  # its GGUF general.architecture
    size_class: str  # "0.5B", "1.5B" or "3B": the seed's tiers 0.5B / 1-2B / 3-4B
    layers: int
    d_model: int
    n_heads: int
    kv_heads: int
    head_dim: int
    d_ff: int
    vocab: int
    tied: bool
    ctx_train: int
    source: str

    @property
    def key(self) -> str:  # what --family takes: "qwen3-1.7b"
        return self.name.lower()

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def params(self) -> int:
        """Counted from the shape as load_model() binds the tensors (embedding, the untied output,
        per layer Q K V O and the gated FFN, their norms; qwen2's QKV biases, qwen3/gemma3's q/k
        norms, gemma3's post-norms), so weights under a scheme are what `quantize` would write."""
        d, q, kv = self.d_model, self.q_dim, self.kv_heads * self.head_dim
        per_layer = 2 * d * q + 2 * d * kv + 3 * d * self.d_ff + 2 * d
        if self.arch == "qwen2":
            per_layer += q + 2 * kv
        if self.arch in ("qwen3", "gemma3"):
            per_layer += 2 * self.head_dim
        if self.arch == "gemma3":
            per_layer += 2 * d
        return self.vocab * d * (1 if self.tied else 2) + self.layers * per_layer + d

    def dims(self) -> ModelDims:
        return ModelDims(layers=self.layers, kv_heads=self.kv_heads, head_dim=self.head_dim, vocab=self.vocab,
                         d_model=self.d_model, d_ff=self.d_ff, q_dim=self.q_dim, params=self.params, arch=self.arch,
                         name=self.name, ctx_train=self.ctx_train)


_HF = "https://huggingface.co/{}/blob/main/config.json"
KNOWN_MODELS = (
    KnownModel("Qwen2.5-0.5B", "qwen2", "0.5B", 24, 896, 14, 2, 64, 4864, 151936, True, 32768,
               _HF.format("Qwen/Qwen2.5-0.5B")),
    KnownModel("Qwen2.5-1.5B", "qwen2", "1.5B", 28, 1536, 12, 2, 128, 8960, 151936, True, 32768,
               _HF.format("Qwen/Qwen2.5-1.5B")),
    KnownModel("Qwen2.5-3B", "qwen2", "3B", 36, 2048, 16, 2, 128, 11008, 151936, True, 32768,
               _HF.format("Qwen/Qwen2.5-3B")),
    KnownModel("Qwen3-0.6B", "qwen3", "0.5B", 28, 1024, 16, 8, 128, 3072, 151936, True, 40960,
               _HF.format("Qwen/Qwen3-0.6B")),
    KnownModel("Qwen3-1.7B", "qwen3", "1.5B", 28, 2048, 16, 8, 128, 6144, 151936, True, 40960,
               _HF.format("Qwen/Qwen3-1.7B")),
    KnownModel("Qwen3-4B", "qwen3", "3B", 36, 2560, 32, 8, 128, 9728, 151936, True, 40960,
               _HF.format("Qwen/Qwen3-4B")),
    # Llama 3.2 carries rope_scaling {"rope_type": "llama3", "factor": 32}: the GGUF's rope_freqs.weight.
    KnownModel("Llama-3.2-1B", "llama", "1.5B", 16, 2048, 32, 8, 64, 8192, 128256, True, 131072,
               _HF.format("meta-llama/Llama-3.2-1B")),
    KnownModel("Llama-3.2-3B", "llama", "3B", 28, 3072, 24, 8, 128, 8192, 128256, True, 131072,
               _HF.format("meta-llama/Llama-3.2-3B")),
    KnownModel("Gemma-3-270M", "gemma3", "0.5B", 18, 640, 4, 1, 256, 2048, 262144, True, 32768,
               _HF.format("google/gemma-3-270m")),
    KnownModel("Gemma-3-1B", "gemma3", "1.5B", 26, 1152, 4, 1, 256, 6912, 262144, True, 32768,
               _HF.format("google/gemma-3-1b-pt")),
    # The text model of Gemma 3 4B (text_config; the vision tower is not run here).
    KnownModel("Gemma-3-4B", "gemma3", "3B", 34, 2560, 8, 4, 256, 10240, 262208, True, 131072,
               _HF.format("google/gemma-3-4b-pt")),
    # The 7B tier's stand-in (not a phone model; the "smaller model" fix starts below it).
    KnownModel("Qwen2.5-7B", "qwen2", "7B", 28, 3584, 28, 4, 128, 18944, 152064, False, 131072,
               _HF.format("Qwen/Qwen2.5-7B")),
)


def known_model(key: str) -> KnownModel:
    for m in KNOWN_MODELS:
        if key.lower() == m.key:
            return m
    raise HmbuildError(f"Unknown model family '{key}'; use one of {', '.join(m.key for m in KNOWN_MODELS)}.")


def kv_per_1k_tokens(layers: int, kv_heads: int, head_dim: int) -> dict[str, int | None]:
    """KV cache bytes per 1024 tokens of context, f16 and q8_0 (None where the engine cannot cache
    that head size in 8 bits). The engine keeps every layer's whole context, sliding-window layers
    included (llama.cpp's iSWA cache would keep only the window for those)."""
    kv_dim = kv_heads * head_dim
    return {"f16": kv_cache_bytes(layers, 1024, kv_dim, "f16"),
            "q8_0": kv_cache_bytes(layers, 1024, kv_dim, "q8_0") if head_dim % 32 == 0 else None}


def family_table(quant: str = "int4-g128") -> list[dict]:
    """One row per known model: its shape, parameters, weights under `quant` and KV per 1k tokens."""
    rows = []
    for m in KNOWN_MODELS:
        kv = kv_per_1k_tokens(m.layers, m.kv_heads, m.head_dim)
        rows.append({"family": m.key, "name": m.name, "arch": m.arch, "size_class": m.size_class,
                     "params": m.params, "layers": m.layers, "kv_heads": m.kv_heads, "head_dim": m.head_dim,
                     "quant": quant, "weights_bytes": weights_from_params(m.params, quant),
                     "kv_per_1k_tokens_f16_bytes": kv["f16"], "kv_per_1k_tokens_q8_0_bytes": kv["q8_0"],
                     "source": m.source})
    return rows


def render_family_table(rows: list[dict]) -> str:
    quant = rows[0]["quant"] if rows else "int4-g128"
    lines = [f"{'family':<14} {'arch':<7} {'class':<5} {'params':>7}  {'layers':>6}  {'KV heads x dim':>14}  "
             f"{'weights ' + quant:>18}  {'KV/1k f16':>9}  {'KV/1k q8_0':>10}"]
    for r in rows:
        q8 = format_size(r["kv_per_1k_tokens_q8_0_bytes"]) if r["kv_per_1k_tokens_q8_0_bytes"] else "-"
        lines.append(f"{r['family']:<14} {r['arch']:<7} {r['size_class']:<5} {r['params'] / 1e9:>6.2f}B  "
                     f"{r['layers']:>6}  {str(r['kv_heads']) + ' x ' + str(r['head_dim']):>14}  "
                     f"{format_size(r['weights_bytes']):>18}  {format_size(r['kv_per_1k_tokens_f16_bytes']):>9}  "
                     f"{q8:>10}")
    lines.append("(KV per 1k tokens: 2 x layers x KV heads x head dim x 1024 x 2 bytes (f16) or 34/32 bytes "
                 "(q8_0); MB = 10^6 bytes. Shapes from each model's config.json; plan one with --family NAME.)")
    return "\n".join(lines)


# ---- tiers

@dataclass(frozen=True)
class Tier:
    name: str
    below: float  # parameter count this tier ends at
    good_for: str
    reference_key: str  # a KNOWN_MODELS model that stands for the tier, for the "smaller model" fix

    @property
    def reference(self) -> KnownModel:
        return known_model(self.reference_key)


TIERS = (
    Tier("<0.5B", 0.75e9, "classification / intent routing: pick a label, extract a slot, answer yes or no",
         "gemma-3-270m"),
    Tier("1–2B", 2.5e9, "short generation: replies, rewrites, titles, short summaries", "qwen2.5-1.5b"),
    Tier("3–4B", 5.5e9, "summarisation / QA over a note, a mail or a page", "llama-3.2-3b"),
    Tier("7B", math.inf, "reasoning: multi-step answers and planning; rarely fits in a phone app's memory",
         "qwen2.5-7b"),
)


def tier_for(params: int) -> Tier:
    return next(t for t in TIERS if params < t.below)


# ---- model description

@dataclass
class ModelDims:
    layers: int
    kv_heads: int
    head_dim: int
    vocab: int
    d_model: int
    d_ff: int
    q_dim: int  # n_heads x head_dim
    params: int
    arch: str | None = None
    name: str | None = None
    ctx_train: int | None = None  # the engine caps the context at this
    file_type: int | None = None
    tensors: list[tuple[str, tuple[int, ...], int, int]] = field(default_factory=list)  # name, ne, bytes, type
    estimated: list[str] = field(default_factory=list)  # dims not given, derived from params

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim


SUPPORTED_ARCHS = ("llama", "qwen2", "qwen3", "gemma3")


def _bound_tensor_names(arch: str, n_layers: int, has_output: bool, has_rope_freqs: bool = False) -> list[str]:
    """The tensors load_model() binds (native/src/model.cpp), so weights == ModelWeights::weight_bytes."""
    names = ["token_embd.weight", "output_norm.weight"] + (["output.weight"] if has_output else [])
    if arch == "llama" and has_rope_freqs:
        names.append("rope_freqs.weight")
    for il in range(n_layers):
        p = f"blk.{il}."
        names += [p + s for s in ("attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight",
                                  "attn_output.weight", "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight",
                                  "ffn_down.weight")]
        if arch == "qwen2":
            names += [p + "attn_q.bias", p + "attn_k.bias", p + "attn_v.bias"]
        if arch in ("qwen3", "gemma3"):
            names += [p + "attn_q_norm.weight", p + "attn_k_norm.weight"]
        if arch == "gemma3":
            names += [p + "post_attention_norm.weight", p + "post_ffw_norm.weight"]
    return names


def _header_reader(path: Path):
    """gguf.GGUFReader, minus its cost on long metadata arrays: the stock reader makes one numpy
    part per array element, which takes 15 s for Gemma's 262144 tokenizer strings. Here an array
    of numbers becomes one part (contents() gives the same list) and an array of strings is
    stepped over by its lengths (its contents() is empty: a plan reads no tokenizer)."""
    import struct

    import gguf
    import numpy as np

    V = gguf.GGUFValueType

    class HeaderReader(gguf.GGUFReader):
        def _get_field_parts(self, orig_offs, raw_type):
            if raw_type != V.ARRAY:
                return super()._get_field_parts(orig_offs, raw_type)
            raw_itype = self._get(orig_offs, np.uint32)
            alen = self._get(orig_offs + 4, np.uint64)
            itype, n, offs = V(raw_itype[0]), int(alen[0]), orig_offs + 12
            nptype = self.gguf_scalar_to_np.get(itype)
            if nptype is not None:
                arr = self._get(offs, nptype, n)
                return 12 + int(arr.nbytes), [raw_itype, alen, arr], [2], [V.ARRAY, itype]
            if itype == V.STRING:
                fmt = ">Q" if self.byte_order == "S" else "<Q"
                for _ in range(n):
                    offs += 8 + struct.unpack_from(fmt, self.data, offs)[0]
                return offs - orig_offs, [raw_itype, alen], [], [V.ARRAY, itype]
            return super()._get_field_parts(orig_offs, raw_type)

    return HeaderReader(str(path), "r")


def open_gguf_header(path: Path):
    """The _header_reader of an existing GGUF file (hmbuild's own HM_Q4_G* types registered, so a
    `hmbuild quantize` output reads too), or one sentence saying why it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise HmbuildError(f"Model file {path} does not exist; pass an existing .gguf file.")
    try:
        import gguf  # noqa: F401
    except ImportError:
        raise HmbuildError("Reading a GGUF needs the gguf package; install it with: "
                           "pip install gguf==0.19.0 (or pip install -e '.[dev]').") from None
    try:
        register_with_gguf()
        return _header_reader(path)
    except Exception as exc:  # noqa: BLE001 - gguf raises ValueError/struct errors/etc. on junk
        raise HmbuildError(f"{path} is not a readable GGUF file ({type(exc).__name__}: {exc}); "
                           "pass a .gguf model.") from None


def field_value(reader, key: str):
    """A metadata field's value, or None when it is absent or unreadable."""
    f = reader.fields.get(key)
    if f is None:
        return None
    try:
        return f.contents()
    except Exception:  # noqa: BLE001
        return None


def string_array_items(reader, key: str, wanted: set[int]) -> dict[int, str]:
    """{index: text} of the wanted items of a string-array field, which _header_reader steps over
    (its contents() is empty); walked by the items' lengths, up to the last index wanted."""
    import struct

    f = reader.fields.get(key)
    if f is None or not wanted:
        return {}
    fmt = ">Q" if reader.byte_order == "S" else "<Q"
    key_len = struct.unpack_from(fmt, reader.data, f.offset)[0]
    offs = f.offset + 8 + key_len + 4 + 4          # key, value type, item type
    count = struct.unpack_from(fmt, reader.data, offs)[0]
    offs += 8
    out, last = {}, max(wanted)
    for i in range(min(count, last + 1)):
        n = struct.unpack_from(fmt, reader.data, offs)[0]
        if i in wanted:
            out[i] = bytes(reader.data[offs + 8: offs + 8 + n]).decode("utf-8", errors="replace")
        offs += 8 + n
    return out


def read_gguf(path: Path) -> ModelDims:
    """Hyper-parameters and tensor sizes of an LLM GGUF, read with the PyPI gguf package, as the
    engine's load_model() reads them (head_dim = key_length or d_model / heads, kv heads = heads
    unless given, context_length defaulting to 2048)."""
    path = Path(path)
    reader = open_gguf_header(path)
    check_runnable(path, ((t.name, t.tensor_type) for t in reader.tensors))  # never plan a file that cannot run

    def value(key):
        return field_value(reader, key)

    def int_value(key):
        v = value(key)
        if isinstance(v, list):  # per-layer values (e.g. OpenELM): the largest sizes the buffers
            v = max(v) if v else None
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    arch = value("general.architecture")
    tensors = {t.name: t for t in reader.tensors}
    a = arch if isinstance(arch, str) else ""
    layers, d_model = int_value(f"{a}.block_count"), int_value(f"{a}.embedding_length")
    n_heads = int_value(f"{a}.attention.head_count")
    if not a or not layers or not d_model or not n_heads or "token_embd.weight" not in tensors:
        what = f"a '{a}'" if a else "an untyped"
        raise HmbuildError(f"{path} is {what} GGUF without a language model's block_count, embedding_length, "
                           "attention.head_count and token_embd.weight; pass an LLM's .gguf.")
    kv_heads = int_value(f"{a}.attention.head_count_kv") or n_heads
    head_dim = int_value(f"{a}.attention.key_length") or d_model // n_heads
    d_ff = int_value(f"{a}.feed_forward_length") or 4 * d_model
    ctx_train = int_value(f"{a}.context_length") or 2048
    emb = tensors["token_embd.weight"]
    vocab = int(emb.shape[1]) if len(emb.shape) > 1 else int(emb.n_elements) // d_model
    if a in SUPPORTED_ARCHS:
        names = _bound_tensor_names(a, layers, "output.weight" in tensors, "rope_freqs.weight" in tensors)
        missing = [n for n in names if n not in tensors]
        if missing:
            raise HmbuildError(f"{path} lacks tensor {missing[0]}, which the engine needs for a {a} model, so it "
                               "would refuse to load it; use a complete model file.")
    else:
        names = list(tensors)
    listed = [(n, tuple(int(x) for x in tensors[n].shape), int(tensors[n].n_bytes), int(tensors[n].tensor_type))
              for n in names]
    params = sum(int(tensors[n].n_elements) for n in names)
    name = value("general.name")
    file_type = int_value("general.file_type")
    return ModelDims(layers=layers, kv_heads=kv_heads, head_dim=head_dim, vocab=vocab, d_model=d_model, d_ff=d_ff,
                     q_dim=n_heads * head_dim, params=params, arch=a, name=name if isinstance(name, str) else None,
                     ctx_train=ctx_train, file_type=file_type, tensors=listed)


def dims_from_params(params: int, layers: int | None, kv_heads: int | None, head_dim: int | None,
                     vocab: int | None, d_model: int | None = None, d_ff: int | None = None) -> ModelDims:
    """A hypothetical model. d_model and d_ff only size the scratch (a few MB); when not given they
    are solved from params ~ vocab d + layers (2 d^2 + 2 d kv_dim + 3 d d_ff) (Q = O = d x d,
    K, V = d x kv_dim, a gated FFN) with d_ff = 8/3 d (LLaMA's rule); q_dim is taken as d_model."""
    missing = [flag for flag, v in (("--layers", layers), ("--kv-heads", kv_heads), ("--head-dim", head_dim),
                                    ("--vocab", vocab)) if v is None]
    if missing:
        raise HmbuildError(f"--params needs {', '.join(missing)} too (the KV cache and logits depend on them); "
                           "add them or pass --model M.gguf instead.")
    for flag, v in (("--layers", layers), ("--kv-heads", kv_heads), ("--head-dim", head_dim), ("--vocab", vocab),
                    ("--d-model", d_model), ("--d-ff", d_ff)):
        if v is not None and v < 1:
            raise HmbuildError(f"{flag} must be at least 1, not {v}.")
    kv_dim = kv_heads * head_dim
    estimated = []
    if d_model is None:
        ff_ratio = None if d_ff is not None else 8 / 3
        # a d^2 + b d - params = 0
        qa = layers * (2 + 3 * ff_ratio) if ff_ratio else 2 * layers
        qb = vocab + 2 * layers * kv_dim + (0 if ff_ratio else 3 * layers * d_ff)
        d_model = max(1, int((-qb + math.sqrt(qb * qb + 4 * qa * params)) / (2 * qa)))
        estimated.append("d_model")
    if d_ff is None:
        rest = params - vocab * d_model - layers * (2 * d_model * d_model + 2 * d_model * kv_dim)
        d_ff = int(rest / (3 * layers * d_model)) if rest > 0 else 0
        if d_ff < d_model:
            d_ff = int(8 / 3 * d_model)
        estimated.append("d_ff")
    return ModelDims(layers=layers, kv_heads=kv_heads, head_dim=head_dim, vocab=vocab, d_model=d_model, d_ff=d_ff,
                     q_dim=d_model, params=params, estimated=estimated)


# ---- the plan

@dataclass
class Fix:
    fix: str  # what to change, in words
    flags: str  # the hmbuild plan / run options that make it
    total_bytes: int
    fits: bool
    rank: int = 0


@dataclass
class Plan:
    # inputs used
    model: str | None
    model_name: str | None
    arch: str | None
    params: int
    layers: int
    kv_heads: int
    head_dim: int
    q_dim: int
    vocab: int
    d_model: int
    d_ff: int
    estimated_dims: list[str]
    quant: str | None  # None: the file as it is
    weights_source: str
    bits_per_weight: float
    ctx: int  # what the engine would use
    ctx_requested: int
    ctx_train: int | None
    kv: str
    threads: int
    max_batch: int
    # the breakdown
    weights_bytes: int
    kv_cache_bytes: int
    kv_per_1k_tokens_f16_bytes: int
    kv_per_1k_tokens_q8_0_bytes: int | None  # None: a head size the engine cannot cache in 8 bits
    scratch_bytes: int
    total_bytes: int
    engine_describe: str
    # the verdict
    budget_bytes: int | None
    fits: bool | None
    headroom_bytes: int | None
    fixes: list[Fix]
    tier: str
    tier_good_for: str
    notes: list[str]

    def to_json(self) -> dict:
        d = asdict(self)
        d["fixes"] = [{"fix": f.fix, "flags": f.flags, "total_bytes": f.total_bytes, "fits": f.fits}
                      for f in self.fixes]
        return d


def _weights(dims: ModelDims, quant: str | None) -> tuple[int, str]:
    if dims.tensors:
        if quant is None or _FILE_TYPE_SCHEME.get(dims.file_type) == quant:
            return sum(t[2] for t in dims.tensors), "the GGUF's tensor sizes"
        how = {"q8_0": "every matrix as Q8_0, norms F32", "f16": "every matrix as F16, norms F32",
               "q4_k_m": "matrices at ~4.85 bits (llama.cpp's Q4_K_M average), norms F32"}.get(
            quant, f"as `hmbuild quantize --scheme {quant}` writes them")
        return (sum(requantised_tensor_bytes(n, s, quant, ty, nb) for n, s, nb, ty in dims.tensors),
                f"the GGUF's tensors re-estimated: {how}")
    return weights_from_params(dims.params, quant), f"{dims.params:,} parameters x {scheme_bits(quant):g} bits"


def _total(weights: int, dims: ModelDims, ctx: int, kv: str, threads: int) -> tuple[int, int, int]:
    k = kv_cache_bytes(dims.layers, ctx, dims.kv_dim, kv)
    s = scratch_bytes(dims.d_model, dims.q_dim, dims.kv_dim, dims.d_ff, dims.vocab, ctx, threads)
    return weights + k + s, k, s


def largest_ctx(weights: int, dims: ModelDims, kv: str, threads: int, budget: int) -> int:
    """The largest context whose total is within the budget (0 if even one token is over): the
    total is linear in ctx (KV cache rows and one score per thread and position)."""
    fixed = _total(weights, dims, 0, kv, threads)[0]
    per_token = _total(weights, dims, 1, kv, threads)[0] - fixed
    return max(0, (budget - fixed) // per_token) if budget >= fixed else 0


def plan(model: Path | None = None, params: str | int | None = None, *, layers: int | None = None,
         kv_heads: int | None = None, head_dim: int | None = None, vocab: int | None = None,
         d_model: int | None = None, d_ff: int | None = None, quant: str | None = None, ctx: int = 2048,
         kv: str = "f16", budget: str | int | None = None, threads: int = DEFAULT_THREADS,
         family: str | None = None) -> Plan:
    """The memory plan of a model file (model=), a known model's shape (family=, KNOWN_MODELS) or a
    hypothetical model (params= and its dims), a verdict against budget and, when it does not fit,
    the fixes ranked by what they cost the app."""
    if sum(x is not None for x in (model, params, family)) != 1:
        raise HmbuildError("Give exactly one of --model M.gguf, --family NAME (see --families) and --params N "
                           "(with --layers, --kv-heads, --head-dim and --vocab).")
    if quant is not None and quant not in SCHEMES:
        raise HmbuildError(f"Unknown scheme '{quant}'; use one of {', '.join(SCHEMES)}.")
    if kv not in ("f16", "q8_0"):
        raise HmbuildError(f"Unknown KV cache type '{kv}'; use f16 or q8_0.")
    if not isinstance(ctx, int) or ctx < 1 or ctx > 1 << 20:
        raise HmbuildError(f"The context size must be 1 to {1 << 20} tokens, not {ctx}.")
    if not isinstance(threads, int) or threads < 1 or threads > 256:
        raise HmbuildError(f"--threads must be 1 to 256, not {threads}.")
    budget_bytes = parse_size(budget) if isinstance(budget, str) else budget
    if budget_bytes is not None and budget_bytes < 1:
        raise HmbuildError("The budget must be a positive size such as 2.5GB.")
    notes: list[str] = []
    if model is not None:
        if any(v is not None for v in (layers, kv_heads, head_dim, vocab, d_model, d_ff)):
            raise HmbuildError("--layers, --kv-heads, --head-dim, --vocab, --d-model and --d-ff go with --params; "
                               "with --model they come from the file.")
        dims = read_gguf(Path(model))
        if dims.arch not in SUPPORTED_ARCHS:
            notes.append(f"This runtime loads {', '.join(SUPPORTED_ARCHS[:-1])} and {SUPPORTED_ARCHS[-1]} models, "
                         f"not '{dims.arch}': the plan counts every tensor in the file.")
    elif family is not None:
        if any(v is not None for v in (params, layers, kv_heads, head_dim, vocab, d_model, d_ff)):
            raise HmbuildError("--layers, --kv-heads, --head-dim, --vocab, --d-model and --d-ff go with --params; "
                               "with --family they come from the model's published shape.")
        known = known_model(family)
        dims = known.dims()
        if quant is None:
            quant = "int4-g128"
        notes.append(f"{known.name}'s shape is from {known.source}; weights are its parameter count at the "
                     "scheme's bits, not a file's tensor sizes.")
    else:
        n = parse_params(params) if isinstance(params, str) else int(params)
        dims = dims_from_params(n, layers, kv_heads, head_dim, vocab, d_model, d_ff)
        if quant is None:
            quant = "int4-g128"
        if dims.estimated:
            notes.append(f"{' and '.join(dims.estimated)} estimated from the parameter count "
                         f"(d_model {dims.d_model}, d_ff {dims.d_ff}); they only size the scratch.")
    if kv == "q8_0" and dims.head_dim % 32:
        raise HmbuildError(f"An 8-bit KV cache needs a head size that is a multiple of 32 (this one is "
                           f"{dims.head_dim}), so the engine would refuse it; use --kv f16.")
    eff_ctx = ctx
    if dims.ctx_train is not None and ctx > dims.ctx_train:
        eff_ctx = dims.ctx_train  # Engine::create caps context_size at ctx_train
        notes.append(f"The model was trained for {dims.ctx_train} tokens; the engine caps --ctx {ctx} to that.")
    weights, source = _weights(dims, quant)
    total, kv_b, scratch = _total(weights, dims, eff_ctx, kv, threads)
    bpw = weights * 8 / dims.params
    tier = tier_for(dims.params)
    per_1k = kv_per_1k_tokens(dims.layers, dims.kv_heads, dims.head_dim)

    fits = headroom = None
    fixes: list[Fix] = []
    if budget_bytes is not None:
        fits = total <= budget_bytes  # Engine::create refuses plan.total() > memory_budget_bytes
        headroom = budget_bytes - total
        if not fits:
            fixes = _fixes(dims, weights, quant, bpw, eff_ctx, kv, threads, budget_bytes, tier)

    return Plan(model=str(model) if model is not None else None, model_name=dims.name, arch=dims.arch,
                params=dims.params, layers=dims.layers, kv_heads=dims.kv_heads, head_dim=dims.head_dim,
                q_dim=dims.q_dim, vocab=dims.vocab, d_model=dims.d_model, d_ff=dims.d_ff,
                estimated_dims=dims.estimated, quant=quant, weights_source=source, bits_per_weight=round(bpw, 3),
                ctx=eff_ctx, ctx_requested=ctx, ctx_train=dims.ctx_train, kv=kv, threads=threads,
                max_batch=ENGINE_MAX_BATCH, weights_bytes=weights, kv_cache_bytes=kv_b,
                kv_per_1k_tokens_f16_bytes=per_1k["f16"], kv_per_1k_tokens_q8_0_bytes=per_1k["q8_0"],
                scratch_bytes=scratch,
                total_bytes=total, engine_describe=describe(weights, kv_b, scratch), budget_bytes=budget_bytes,
                fits=fits, headroom_bytes=headroom, fixes=fixes, tier=tier.name, tier_good_for=tier.good_for,
                notes=notes)


def _fixes(dims: ModelDims, weights: int, quant: str | None, bpw: float, ctx: int, kv: str, threads: int,
           budget: int, tier: Tier) -> list[Fix]:
    """Each fix changes one thing (the last two combine the first two), with its new total. Ranked
    by what the app gives up, least first: an 8-bit KV cache (a small, usually invisible accuracy
    cost), a shorter context (less text per request), both, a lower-bit scheme (some quality), a
    smaller model (a lesser tier of tasks); fixes that still do not fit come after those that do."""
    fixes: list[Fix] = []
    q8_ok = kv == "f16" and dims.head_dim % 32 == 0
    if q8_ok:
        t = _total(weights, dims, ctx, "q8_0", threads)[0]
        fixes.append(Fix("an 8-bit KV cache", "--kv q8_0", t, t <= budget, 0))
    n = min(largest_ctx(weights, dims, kv, threads, budget), ctx - 1)
    if n >= MIN_SUGGESTED_CTX:
        t = _total(weights, dims, n, kv, threads)[0]
        fixes.append(Fix(f"a shorter context: {n} tokens, the most that fits", f"--ctx {n}", t, True, 1))
    if q8_ok and not any(f.fits for f in fixes):
        n = min(largest_ctx(weights, dims, "q8_0", threads, budget), ctx - 1)
        if n >= MIN_SUGGESTED_CTX:
            t = _total(weights, dims, n, "q8_0", threads)[0]
            fixes.append(Fix(f"an 8-bit KV cache and a {n}-token context", f"--kv q8_0 --ctx {n}", t, True, 2))
    # Lower-bit schemes: the highest-bit one that fits, else the smallest there is.
    lower = []
    for s in sorted(SCHEMES, key=lambda s: -scheme_bits(s)):
        w = _weights(dims, s)[0]
        if w < weights and s != quant:
            lower.append((s, _total(w, dims, ctx, kv, threads)[0]))
    if lower:
        fitting = [x for x in lower if x[1] <= budget]
        s, t = fitting[0] if fitting else lower[-1]
        fixes.append(Fix(f"a lower-bit scheme: {s} ({scheme_bits(s):g} bits per weight)",
                         f"--quant {s}", t, t <= budget, 3))
    # Smaller tiers: the largest one whose reference model fits, else the smallest.
    smaller = []
    for tr in TIERS[:TIERS.index(tier)]:
        r = tr.reference
        t = _total(int(r.params * bpw / 8), r.dims(), ctx, kv, threads)[0]
        smaller.append((tr, t))
    if smaller:
        fitting = [x for x in smaller if x[1] <= budget]
        tr, t = fitting[-1] if fitting else smaller[0]
        fixes.append(Fix(f"a smaller model of tier {tr.name}, e.g. {tr.reference.name} at the same {bpw:.2f} bits per "
                         f"weight (good for {tr.good_for.split(':')[0]})", f"a {tr.name} model", t, t <= budget, 4))
    fixes.sort(key=lambda f: (not f.fits, f.rank))
    return fixes


def render_text(p: Plan) -> str:
    """The plan for a person: the breakdown, the verdict, the fixes and the tier."""
    what = p.model_name or (Path(p.model).name if p.model else None)
    if p.model:
        head = f"{what} ({p.arch}, {p.params / 1e6:,.0f}M parameters) from {p.model}"
    elif p.model_name:
        head = f"{p.model_name} ({p.arch}, {p.params / 1e6:,.0f}M parameters), its published shape"
    else:
        head = f"a hypothetical {p.params / 1e9:g}B-parameter model"
    lines = [f"Memory plan for {head}",
             f"  {p.layers} layers, {p.kv_heads} KV head{'s' if p.kv_heads != 1 else ''} of {p.head_dim}, "
             f"d_model {p.d_model}, d_ff {p.d_ff}, "
             f"vocab {p.vocab}",
             f"  context {p.ctx} tokens, KV cache {p.kv}, {p.threads} threads, "
             f"weights {p.quant or 'as in the file'} ({p.bits_per_weight:.2f} bits per weight)",
             "",
             f"  weights    {format_size(p.weights_bytes):>10}   {p.weights_source}",
             f"  KV cache   {format_size(p.kv_cache_bytes):>10}   2 x {p.layers} layers x {p.kv_heads} x {p.head_dim} "
             f"x {p.ctx} tokens x {'2' if p.kv == 'f16' else '34/32'} bytes",
             f"             {'':>10}   per 1k tokens: {format_size(p.kv_per_1k_tokens_f16_bytes)} f16, "
             + (f"{format_size(p.kv_per_1k_tokens_q8_0_bytes)} q8_0" if p.kv_per_1k_tokens_q8_0_bytes
                else "no q8_0 (head size not a multiple of 32)"),
             f"  scratch    {format_size(p.scratch_bytes):>10}   activations for {p.max_batch} tokens, logits, "
             f"attention rows",
             f"  total      {format_size(p.total_bytes):>10}   ({p.total_bytes:,} bytes = {format_gib(p.total_bytes)})",
             ]
    if p.budget_bytes is not None:
        b = f"{format_size(p.budget_bytes)} ({p.budget_bytes:,} bytes = {format_gib(p.budget_bytes)})"
        lines.append("")
        if p.fits:
            lines.append(f"Fits the budget of {b}: {format_size(p.headroom_bytes)} to spare.")
        else:
            lines.append(f"Does NOT fit the budget of {b}: {format_size(-p.headroom_bytes)} over.")
            lines.append("Fixes, cheapest first:")
            for i, f in enumerate(p.fixes, 1):
                state = "fits" if f.fits else "still over"
                lines.append(f"  {i}. {f.fix} [{f.flags}]: total {format_size(f.total_bytes)} ({state})")
            if not p.fixes:
                lines.append("  none found; this model needs a device with more memory.")
    lines.append("")
    lines.append(f"Tier {p.tier}: good for {p.tier_good_for}.")
    for n in p.notes:
        lines.append(f"Note: {n}")
    lines.append("(MB and GB are decimal, 10^6 and 10^9 bytes, as the engine reports; GiB is 2^30 bytes.)")
    return "\n".join(lines)


def check_file_runnable(path) -> None:
    """check_runnable on a model file's tensors (read through plan's header reader). A file the gguf
    package cannot read is left alone: the runtime's reader names what is wrong with it."""
    try:
        tensors = [(t.name, t.tensor_type) for t in open_gguf_header(path).tensors]
    except Exception:  # noqa: BLE001 - HmbuildError or whatever a damaged file trips
        return
    check_runnable(path, tensors)
