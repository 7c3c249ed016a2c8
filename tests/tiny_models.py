"""Tiny random-weight GGUF models (llama, llama with Llama 3 rope_freqs, qwen2, qwen3, gemma3) written
with the PyPI gguf package, and a NumPy reference forward pass over their dequantized weights, to
check the C++ engine against.

The reference is written from the architectures' definitions (llama.cpp's graph builders are the
source of truth for the GGUF conventions: gemma3 norm weights already include the +1, q/k RoPE
rotates halves for qwen2/qwen3/gemma3 and adjacent pairs for llama, qwen3 and gemma3 RMS-norm each
q and k head before RoPE, gemma3 layers 5, 11, ... are global, Llama 3's rope_freqs.weight divides
each rotary frequency).

A model is a pure function of its TinyConfig: the same config and gguf version write the same
bytes, so a fixture recorded from llama.cpp on one (tests/fixtures/llama_cpp/tiny_families.json)
can name it by SHA-256 and CI can rebuild it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import quants

from hmbuild.model.ggml_types import HM_Q4 as HM_TYPES
from hmbuild.model.ggml_types import register_with_gguf
from hmbuild.model.int4_format import dequantize_hm_q4, quantize_hm_q4

HM_Q4_G32, HM_Q4_G64, HM_Q4_G128 = HM_TYPES[32], HM_TYPES[64], HM_TYPES[128]  # own INT4 (docs/int4-format.md)
HM_GROUP = {t: g for g, t in HM_TYPES.items()}
register_with_gguf()


def type_name(qtype) -> str:
    return f"HM_Q4_G{HM_GROUP[int(qtype)]}" if int(qtype) in HM_GROUP else Q(qtype).name

# Types gguf-py can quantize; the K-quants and IQ4 types it only dequantizes, so those tensors get
# random but well-formed blocks (sane fp16 scales, random quants), which exercises every bit of the
# layout.
RANDOM_BLOCK_TYPES = {Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.IQ4_NL, Q.IQ4_XS}


@dataclass
class TinyConfig:
    arch: str = "llama"
    n_layers: int = 2
    d_model: int = 256
    n_heads: int = 4
    n_kv_heads: int = 2
    head_dim: int = 64
    d_ff: int = 512
    n_vocab: int = 300
    ctx: int = 128
    rms_eps: float = 1e-6
    rope_base: float = 10000.0
    sliding_window: int = 3
    weight_type: int = Q.F32  # a GGMLQuantizationType, or HM_Q4_G32 / HM_Q4_G64 / HM_Q4_G128
    seed: int = 0
    embed_scale: float = 0.5   # standard deviation of the token embedding
    weight_scale: float = 0.08  # of the other matrices
    tied_output: bool | None = None  # None: the family's usual choice (gemma3 ties, the others do not)
    # Llama 3.x rope scaling, as config.json's rope_scaling {"rope_type": "llama3", ...} gives it;
    # written as the rope_freqs.weight tensor (llama only). None: no scaling.
    llama3_rope: dict | None = None
    # Linear RoPE scaling (<arch>.rope.scaling.type linear, .factor), as Gemma 3 4B carries it (8):
    # every angle divided by the factor, except on gemma3's sliding-window layers. None: none.
    rope_linear_factor: float | None = None
    # Tensors written in another type than weight_type, as random blocks of it: {name: GGMLQuantizationType}
    # (e.g. one IQ2_XXS matrix, which the engine refuses; its weights are not checked, so not kept).
    tensor_types: dict | None = None

    @property
    def tied(self) -> bool:
        return self.arch == "gemma3" if self.tied_output is None else self.tied_output


def llama3_rope_factors(base: float, head_dim: int, factor: float = 8.0, low_freq_factor: float = 1.0,
                        high_freq_factor: float = 4.0, original_context: int = 8192) -> np.ndarray:
    """Llama 3's per-frequency divisors (rope_type "llama3"): frequencies whose wavelength is shorter
    than original_context / high_freq_factor stay, those longer than original_context /
    low_freq_factor are divided by `factor`, and the band between is blended smoothly."""
    freqs = 1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim)
    wavelen = 2 * np.pi / freqs.astype(np.float64)
    smooth = (original_context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    blended = 1.0 / ((1.0 - smooth) / factor + smooth)
    out = np.where(wavelen < original_context / high_freq_factor, 1.0,
                   np.where(wavelen > original_context / low_freq_factor, factor, blended))
    return out.astype(np.float32)


def vocab(n_vocab: int) -> tuple[list[str], list[float], list[int]]:
    """<pad> <eos> <bos> <unk>, the 256 byte tokens, then words; SentencePiece-style."""
    toks = ["<pad>", "<eos>", "<bos>", "<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [3, 3, 3, 2] + [6] * 256
    words = ["▁", "▁the", "▁a", "e", "t", "o", "▁moon", "▁was", "in", "an"]
    i = 0
    while len(toks) < n_vocab:
        toks.append(words[i] if i < len(words) else f"▁w{i}")
        types.append(1)
        i += 1
    scores = [0.0] * 260 + [-float(k) for k in range(len(toks) - 260)]
    return toks, scores, types


def _random_blocks(rng, qtype: Q, n_rows: int, n_cols: int) -> np.ndarray:
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    nb = n_cols // block
    raw = rng.integers(0, 256, size=(n_rows, nb, size), dtype=np.uint8)
    def f16(v):
        return np.array([v], dtype=np.float16).view(np.uint8)

    if qtype == Q.Q4_K:  # d, dmin (fp16) then scales[12], qs[128]
        raw[:, :, 0:2] = f16(0.002)
        raw[:, :, 2:4] = f16(0.001)
    elif qtype == Q.Q6_K:  # ql[128], qh[64], scales[16] (int8), d (fp16)
        raw[:, :, 208:210] = f16(0.0003)
    elif qtype == Q.Q5_K:  # d, dmin, scales[12], qh[32], qs[128]
        raw[:, :, 0:2] = f16(0.001)
        raw[:, :, 2:4] = f16(0.001)
    elif qtype == Q.Q3_K:  # hmask[32], qs[64], scales[12], d
        raw[:, :, 108:110] = f16(0.002)
    elif qtype == Q.Q2_K:  # scales[16], qs[64], d, dmin
        raw[:, :, 80:82] = f16(0.01)
        raw[:, :, 82:84] = f16(0.005)
    elif qtype == Q.IQ4_NL:  # d, qs[16]
        raw[:, :, 0:2] = f16(0.001)
    elif qtype == Q.IQ4_XS:  # d, scales_h, scales_l[4], qs[128]
        raw[:, :, 0:2] = f16(0.0001)
    return raw.reshape(n_rows, nb * size)


class TinyWriter:
    def __init__(self, cfg: TinyConfig):
        self.cfg = cfg
        self.rng = np.random.default_rng(cfg.seed)
        self.tensors: dict[str, np.ndarray] = {}  # name -> dequantized float64 (what the engine should see)
        self.raw: list[tuple[str, np.ndarray, Q, tuple]] = []

    def weight(self, name: str, n_rows: int, n_cols: int, qtype: Q | None = None, scale: float | None = None):
        qtype = self.cfg.weight_type if qtype is None else qtype
        scale = self.cfg.weight_scale if scale is None else scale
        if self.cfg.tensor_types and name in self.cfg.tensor_types:
            qtype = self.cfg.tensor_types[name]
            self.raw.append((name, _random_blocks(self.rng, qtype, n_rows, n_cols), qtype, (n_rows, n_cols)))
            return
        if int(qtype) in HM_GROUP:
            group = HM_GROUP[int(qtype)]
            w = (self.rng.standard_normal((n_rows, n_cols)) * scale).astype(np.float32)
            data = np.frombuffer(quantize_hm_q4(w, group), dtype=np.uint8).reshape(n_rows, -1)
            deq = dequantize_hm_q4(data.tobytes(), n_rows, n_cols, group)
        elif qtype in RANDOM_BLOCK_TYPES:
            data = _random_blocks(self.rng, qtype, n_rows, n_cols)
            deq = quants.dequantize(data, qtype).reshape(n_rows, n_cols)
        else:
            w = (self.rng.standard_normal((n_rows, n_cols)) * scale).astype(np.float32)
            if qtype == Q.F32:
                data, deq = w, w
            elif qtype == Q.F16:
                data = w.astype(np.float16)
                deq = data.astype(np.float32)
            else:
                data = quants.quantize(w, qtype)
                deq = quants.dequantize(data, qtype).reshape(n_rows, n_cols)
        self.tensors[name] = deq.astype(np.float64)
        self.raw.append((name, data, qtype, (n_rows, n_cols)))

    def vector(self, name: str, n: int, around: float = 1.0, spread: float = 0.1):
        v = (around + self.rng.standard_normal(n) * spread).astype(np.float32)
        self.tensors[name] = v.astype(np.float64)
        self.raw.append((name, v, Q.F32, (n,)))

    def fixed(self, name: str, v: np.ndarray):
        """An F32 tensor of given values (not drawn from the generator)."""
        v = np.ascontiguousarray(v, dtype=np.float32)
        self.tensors[name] = v.astype(np.float64)
        self.raw.append((name, v, Q.F32, v.shape))

    def write(self, path: Path) -> Path:
        c = self.cfg
        w = gguf.GGUFWriter(str(path), c.arch)
        a = c.arch
        w.add_block_count(c.n_layers)
        w.add_embedding_length(c.d_model)
        w.add_feed_forward_length(c.d_ff)
        w.add_head_count(c.n_heads)
        w.add_head_count_kv(c.n_kv_heads)
        w.add_key_length(c.head_dim)
        w.add_value_length(c.head_dim)
        w.add_context_length(c.ctx)
        w.add_layer_norm_rms_eps(c.rms_eps)
        w.add_rope_freq_base(c.rope_base)
        if c.rope_linear_factor is not None:
            w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
            w.add_rope_scaling_factor(c.rope_linear_factor)
        if a == "gemma3":
            w.add_sliding_window(c.sliding_window)
        toks, scores, types = vocab(c.n_vocab)
        w.add_tokenizer_model("llama")
        w.add_token_list(toks)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_bos_token_id(2)
        w.add_eos_token_id(1)
        w.add_unk_token_id(3)
        w.add_add_bos_token(True)
        for name, data, qtype, shape in self.raw:
            if qtype == Q.F32 or qtype == Q.F16:
                w.add_tensor(name, data)
            else:
                w.add_tensor(name, data, raw_shape=data.shape, raw_dtype=qtype)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return path


def write_tiny_model(path: Path, cfg: TinyConfig) -> dict[str, np.ndarray]:
    """Writes the model; returns its dequantized weights by tensor name."""
    c = cfg
    t = TinyWriter(c)
    q_dim, kv_dim = c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim
    # The token embedding stays Q8_0 or the chosen type; gemma3 ties the output to it.
    t.weight("token_embd.weight", c.n_vocab, c.d_model, scale=c.embed_scale)
    t.vector("output_norm.weight", c.d_model)
    if not c.tied:
        t.weight("output.weight", c.n_vocab, c.d_model, scale=0.2)
    if c.llama3_rope is not None:
        t.fixed("rope_freqs.weight", llama3_rope_factors(c.rope_base, c.head_dim, **c.llama3_rope))
    for il in range(c.n_layers):
        p = f"blk.{il}."
        t.vector(p + "attn_norm.weight", c.d_model)
        t.weight(p + "attn_q.weight", q_dim, c.d_model)
        t.weight(p + "attn_k.weight", kv_dim, c.d_model)
        t.weight(p + "attn_v.weight", kv_dim, c.d_model)
        t.weight(p + "attn_output.weight", c.d_model, q_dim)
        t.vector(p + "ffn_norm.weight", c.d_model)
        t.weight(p + "ffn_gate.weight", c.d_ff, c.d_model)
        t.weight(p + "ffn_up.weight", c.d_ff, c.d_model)
        t.weight(p + "ffn_down.weight", c.d_model, c.d_ff)
        if c.arch == "qwen2":
            t.vector(p + "attn_q.bias", q_dim, 0.0, 0.05)
            t.vector(p + "attn_k.bias", kv_dim, 0.0, 0.05)
            t.vector(p + "attn_v.bias", kv_dim, 0.0, 0.05)
        if c.arch in ("qwen3", "gemma3"):
            t.vector(p + "attn_q_norm.weight", c.head_dim)
            t.vector(p + "attn_k_norm.weight", c.head_dim)
        if c.arch == "gemma3":
            t.vector(p + "post_attention_norm.weight", c.d_model)
            t.vector(p + "post_ffw_norm.weight", c.d_model)
    t.write(path)
    return t.tensors


# ---------------------------------------------------------------------------------------------
# NumPy reference forward pass (float64)


def _rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def _rope(x, pos, base, neox, factors=None):
    """x: [..., head_dim] at position pos; `factors` divide the frequencies (Llama 3's rope_freqs)."""
    hd = x.shape[-1]
    half = hd // 2
    theta = pos * base ** (-2.0 * np.arange(half) / hd)
    if factors is not None:
        theta = theta / factors
    c, s = np.cos(theta), np.sin(theta)
    out = x.copy()
    if neox:
        a, b = x[..., :half], x[..., half:]
        out[..., :half] = a * c - b * s
        out[..., half:] = a * s + b * c
    else:
        a, b = x[..., 0::2], x[..., 1::2]
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = a * s + b * c
    return out


def reference_logits(cfg: TinyConfig, W: dict[str, np.ndarray], tokens: list[int], trace: list | None = None,
                     inputs: dict | None = None) -> np.ndarray:
    """Logits [len(tokens), n_vocab] of every position; `trace` collects the residual stream after each layer,
    `inputs` each matrix input by hmllm_calibrate's site name ("blk.0.attn_in", ..., "output")."""
    c = cfg
    gemma = c.arch == "gemma3"
    neox = c.arch in ("qwen2", "qwen3", "gemma3")
    factors = W.get("rope_freqs.weight") if c.arch == "llama" else None
    hd, group = c.head_dim, c.n_heads // c.n_kv_heads
    n = len(tokens)
    x = W["token_embd.weight"][tokens] * (np.sqrt(c.d_model) if gemma else 1.0)
    for il in range(c.n_layers):
        p = f"blk.{il}."
        sliding = gemma and il % 6 != 5
        base = 10000.0 if sliding else c.rope_base  # gemma3 sliding layers: fixed local base
        # Linear scaling divides every angle by the factor: the same as dividing the position.
        pos_scale = 1.0 if sliding or c.rope_linear_factor is None else 1.0 / c.rope_linear_factor
        h = _rmsnorm(x, W[p + "attn_norm.weight"], c.rms_eps)
        if inputs is not None:
            inputs[f"blk.{il}.attn_in"] = h
        q = h @ W[p + "attn_q.weight"].T
        k = h @ W[p + "attn_k.weight"].T
        v = h @ W[p + "attn_v.weight"].T
        if c.arch == "qwen2":
            q, k, v = q + W[p + "attn_q.bias"], k + W[p + "attn_k.bias"], v + W[p + "attn_v.bias"]
        q = q.reshape(n, c.n_heads, hd)
        k = k.reshape(n, c.n_kv_heads, hd)
        v = v.reshape(n, c.n_kv_heads, hd)
        if c.arch in ("qwen3", "gemma3"):
            q = _rmsnorm(q, W[p + "attn_q_norm.weight"], c.rms_eps)
            k = _rmsnorm(k, W[p + "attn_k_norm.weight"], c.rms_eps)
        q = np.stack([_rope(q[t], t * pos_scale, base, neox, factors) for t in range(n)])
        k = np.stack([_rope(k[t], t * pos_scale, base, neox, factors) for t in range(n)])
        q = q / np.sqrt(hd)
        att = np.zeros((n, c.n_heads, hd))
        for t in range(n):
            lo = max(0, t - c.sliding_window + 1) if sliding else 0
            for hh in range(c.n_heads):
                kv = hh // group
                s = k[lo:t + 1, kv] @ q[t, hh]
                s = np.exp(s - s.max())
                s /= s.sum()
                att[t, hh] = s @ v[lo:t + 1, kv]
        if inputs is not None:
            inputs[f"blk.{il}.attn_out"] = att.reshape(n, -1)
        o = att.reshape(n, -1) @ W[p + "attn_output.weight"].T
        if gemma:
            o = _rmsnorm(o, W[p + "post_attention_norm.weight"], c.rms_eps)
        x = x + o
        h = _rmsnorm(x, W[p + "ffn_norm.weight"], c.rms_eps)
        if inputs is not None:
            inputs[f"blk.{il}.ffn_in"] = h
        g = h @ W[p + "ffn_gate.weight"].T
        u = h @ W[p + "ffn_up.weight"].T
        if gemma:
            g = 0.5 * g * (1 + np.tanh(0.7978845608028654 * (g + 0.044715 * g ** 3)))
        else:
            g = g / (1 + np.exp(-g))
        if inputs is not None:
            inputs[f"blk.{il}.ffn_mid"] = g * u
        f = (g * u) @ W[p + "ffn_down.weight"].T
        if gemma:
            f = _rmsnorm(f, W[p + "post_ffw_norm.weight"], c.rms_eps)
        x = x + f
        if trace is not None:
            trace.append(x.copy())
    x = _rmsnorm(x, W["output_norm.weight"], c.rms_eps)
    if inputs is not None:
        inputs["output"] = x
    out = W["token_embd.weight"] if c.tied else W["output.weight"]
    return x @ out.T


# ---------------------------------------------------------------------------------------------
# The families checked against llama.cpp (tests/fixtures/llama_cpp/tiny_families.json, recorded by
# scripts/record_llama_reference.py). Each mirrors its real family's layout in miniature: qwen3 has
# a key length (128) unrelated to d_model / n_heads and a tied output, like Qwen3-0.6B; llama3-rope
# ties its output like Llama-3.2-1B and takes Llama 3's factors (8, 1, 4) with the original context
# shrunk from 8192 to 64, so that the blended band falls on the positions a 41-token test reaches.
# Tied models get a smaller embedding and larger matrices, or the residual of the current token
# dominates and greedy decoding repeats one token, which would test nothing.
FAMILIES: dict[str, dict] = {
    "llama": dict(arch="llama", rope_base=10000.0),
    "qwen2": dict(arch="qwen2", rope_base=1e6),
    "qwen3": dict(arch="qwen3", head_dim=128, rope_base=1e6, tied_output=True, embed_scale=0.1, weight_scale=0.15),
    "gemma3": dict(arch="gemma3", n_layers=6, rope_base=1e6, sliding_window=3, tied_output=False),
    # Gemma 3 4B's linear scaling (factor 8) on the global layers (5 here), none on the sliding ones.
    "gemma3-linear-rope": dict(arch="gemma3", n_layers=6, rope_base=1e6, sliding_window=3, tied_output=False,
                               rope_linear_factor=8.0),
    "llama3-rope": dict(arch="llama", rope_base=500000.0, tied_output=True, embed_scale=0.1, weight_scale=0.15,
                        llama3_rope=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_context=64)),
}


def family_config(family: str, weight_type: int = Q.F32, seed: int = 0) -> TinyConfig:
    return TinyConfig(**FAMILIES[family], weight_type=weight_type, seed=seed)
