"""A corpus of malformed GGUF models, each made from one valid tiny model (tests/tiny_models.py) by
changing one thing: the container (empty file, truncations at every section boundary, bad magic,
unknown version, forged counts and lengths, tensor data out of bounds or misaligned, unknown
types, duplicates) or the model inside it (missing or wrong hyper-parameters, wrong architecture,
missing or misshapen tensors, types the engine cannot multiply, a vocabulary that does not match
the embedding, an unknown tokenizer).

The valid file is read back with gguf.GGUFReader and re-serialized here piece by piece, so every
variant knows where its sections start and can be forged byte-exactly.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from pathlib import Path

import gguf
from gguf import GGMLQuantizationType as Q

from tiny_models import TinyConfig, vocab, write_tiny_model

FORGED = 1 << 62  # a count no file can back; allocating for it would take exabytes
ALIGNMENT = 32
V = gguf.GGUFValueType
STRING, ARRAY, UINT32, INT32, FLOAT32 = int(V.STRING), int(V.ARRAY), int(V.UINT32), int(V.INT32), int(V.FLOAT32)


def config() -> TinyConfig:
    """The valid model the corpus starts from: a 1-layer llama small enough to forge ~90 times."""
    return TinyConfig(arch="llama", n_layers=1, d_model=64, n_heads=2, n_kv_heads=1, head_dim=32, d_ff=128,
                      n_vocab=300, ctx=64, weight_type=Q.F32)


def _u32(v: int) -> bytes:
    return struct.pack("<I", v)


def _u64(v: int) -> bytes:
    return struct.pack("<Q", v)


def _str(s: str | bytes) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return _u64(len(b)) + b


def string_value(s: str) -> bytes:
    """A metadata payload (type + value) holding a string."""
    return _u32(STRING) + _str(s)


def u32_value(v: int) -> bytes:
    return _u32(UINT32) + _u32(v)


@dataclass
class Tensor:
    name: str
    ne: list[int]  # ggml order: ne[0] is the row length
    type: int
    data: bytes
    offset: int | None = None  # None: placed after the previous tensor, aligned


@dataclass
class Gguf:
    kvs: list[tuple[str, bytes]]  # key -> payload (u32 type + value bytes), in file order
    tensors: list[Tensor]
    version: int = 3
    magic: bytes = b"GGUF"
    tensor_count: int | None = None  # None: the real count
    kv_count: int | None = None
    boundaries: dict[str, int] = field(default_factory=dict)  # filled by to_bytes

    def copy(self) -> "Gguf":
        return replace(self, kvs=list(self.kvs), tensors=[replace(t) for t in self.tensors], boundaries={})

    def kv(self, key: str) -> bytes:
        return dict(self.kvs)[key]

    def set_kv(self, key: str, payload: bytes) -> "Gguf":
        self.kvs = [(k, payload if k == key else v) for k, v in self.kvs]
        return self

    def add_kv(self, key: str, payload: bytes) -> "Gguf":
        assert key not in dict(self.kvs), key
        self.kvs.append((key, payload))
        return self

    def drop_kv(self, key: str) -> "Gguf":
        assert key in dict(self.kvs), key
        self.kvs = [(k, v) for k, v in self.kvs if k != key]
        return self

    def tensor(self, name: str) -> Tensor:
        return next(t for t in self.tensors if t.name == name)

    def drop_tensor(self, name: str) -> "Gguf":
        self.tensors = [t for t in self.tensors if t.name != name]
        return self

    def to_bytes(self) -> bytes:
        b = self.boundaries
        out = bytearray(self.magic)
        b["magic"] = len(out)
        out += _u32(self.version)
        b["version"] = len(out)
        out += _u64(len(self.tensors) if self.tensor_count is None else self.tensor_count)
        b["tensor_count"] = len(out)
        out += _u64(len(self.kvs) if self.kv_count is None else self.kv_count)
        b["header"] = len(out)
        for i, (key, payload) in enumerate(self.kvs):
            b[f"kv{i}_key"] = len(out) + 8 + len(key.encode()) // 2  # inside the key's text
            out += _str(key) + payload
            b[f"kv{i}"] = len(out)
        b["kvs"] = len(out)
        offsets, pos = [], 0
        for t in self.tensors:
            if t.offset is not None:  # forged: its data is not written
                offsets.append(t.offset)
                continue
            offsets.append(pos)
            pos = (pos + len(t.data) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
        for i, (t, off) in enumerate(zip(self.tensors, offsets)):
            out += _str(t.name) + _u32(len(t.ne)) + b"".join(_u64(n) for n in t.ne) + _u32(t.type) + _u64(off)
            b[f"tensor{i}"] = len(out)
        b["tensor_infos"] = len(out)
        out += bytes(-len(out) % ALIGNMENT)
        data_start = len(out)
        b["data"] = data_start
        data = bytearray(pos)
        for t, off in zip(self.tensors, offsets):
            if t.offset is None:
                data[off:off + len(t.data)] = t.data
        out += data
        b["end"] = len(out)
        return bytes(out)


def read_gguf(path: Path) -> Gguf:
    """The pieces of a GGUF file, as raw payloads, so they round-trip byte for byte."""
    r = gguf.GGUFReader(str(path))
    kvs = []
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue
        payload = b"".join(p.tobytes() for p in f.parts[2:])  # parts: key length, key, type, value...
        kvs.append((f.name, payload))
    raw = Path(path).read_bytes()
    tensors = [Tensor(t.name, [int(n) for n in t.shape], int(t.tensor_type),
                      raw[t.data_offset:t.data_offset + t.n_bytes]) for t in r.tensors]
    return Gguf(kvs, tensors)


@dataclass
class Malformed:
    name: str
    path: Path
    expect: str  # a fragment of the error message that names the problem


def write_valid_model(path: Path) -> Path:
    write_tiny_model(path, config())
    return path


def write_corpus(directory: Path) -> tuple[Path, list[Malformed]]:
    """Writes the valid model and every malformed variant of it; returns (valid path, variants)."""
    directory.mkdir(parents=True, exist_ok=True)
    c = config()
    base = read_gguf(write_valid_model(directory / "source.gguf"))
    valid_bytes = base.copy().to_bytes()
    valid = directory / "valid.gguf"
    valid.write_bytes(valid_bytes)
    layout = base.copy()
    layout.to_bytes()
    at = layout.boundaries
    keys = [k for k, _ in base.kvs]
    out: list[Malformed] = []

    def emit(name: str, data: bytes | Gguf, expect: str):
        path = directory / f"{name}.gguf"
        path.write_bytes(data.to_bytes() if isinstance(data, Gguf) else data)
        out.append(Malformed(name, path, expect))

    def edit(fn) -> Gguf:
        g = base.copy()
        fn(g)
        return g

    def patch(offset: int, value: bytes) -> bytes:
        return valid_bytes[:offset] + value + valid_bytes[offset + len(value):]

    # --- the container -------------------------------------------------------------------------
    emit("empty", b"", "is empty")
    tokens_kv = keys.index("tokenizer.ggml.tokens")
    cuts = {
        "after_magic": (at["magic"], "ends inside the header"),
        "after_version": (at["version"], "ends inside the header"),
        "after_tensor_count": (at["tensor_count"], "ends inside the header"),
        "after_header": (at["header"], "metadata entries, more than the remaining"),
        "inside_first_key": (at["kv0_key"], "metadata entries, more than the remaining"),
        "inside_token_list": ((at[f"kv{tokens_kv - 1}"] + at[f"kv{tokens_kv}"]) // 2,
                              f"metadata entry {tokens_kv} ('tokenizer.ggml.tokens')"),
        "after_metadata": (at["kvs"], "tensors, more than the remaining"),
        "inside_tensor_infos": ((at["kvs"] + at["tensor_infos"]) // 2, "tensors, more than the remaining"),
        "at_data_start": (at["data"], "past the end of the file"),
        "inside_tensor_data": ((at["data"] + at["end"]) // 2, "past the end of the file"),
        "last_byte_missing": (at["end"] - 1, "past the end of the file"),
    }
    if at["tensor_infos"] != at["data"]:  # inside the padding before the data section
        cuts["inside_data_padding"] = (at["data"] - 1, "tensor data section would start at byte")
    # Every metadata entry boundary too: the reader must stop cleanly wherever the file ends.
    for i in range(len(keys) - 1):
        cuts[f"after_kv{i}"] = (at[f"kv{i}"], "is not a valid GGUF file")
    for name, (cut, expect) in cuts.items():
        emit(f"truncated_{name}", valid_bytes[:cut], expect)

    emit("bad_magic", patch(0, b"GGML"), "not a GGUF file (bad magic)")
    emit("version_99", patch(4, _u32(99)), "unknown GGUF version 99")
    emit("version_1", patch(4, _u32(1)), "GGUF version 1 is not supported")
    emit("tensor_count_2e62", patch(8, _u64(FORGED)), f"claims {FORGED} tensors")
    emit("kv_count_2e62", patch(16, _u64(FORGED)), f"claims {FORGED} metadata entries")
    # The token list's element count, right after its key, element type and u32 array type.
    tok_payload_at = at[f"kv{tokens_kv - 1}"] + 8 + len("tokenizer.ggml.tokens") + 4 + 4
    emit("array_count_2e62", patch(tok_payload_at, _u64(FORGED)), f"claims {FORGED} array elements")
    emit("key_length_past_end", patch(at["header"], _u64(1 << 40)), "has a key of")
    # The first token string's length: past the end of the file.
    emit("string_length_past_end", patch(tok_payload_at + 8, _u64(len(valid_bytes))), "a string in metadata entry")
    emit("string_length_2e62", patch(tok_payload_at + 8, _u64(FORGED)), "a string in metadata entry")
    emit("unknown_value_type", edit(lambda g: g.set_kv("general.architecture", _u32(77) + _str("llama"))),
         "unknown value type 77")

    emb = "token_embd.weight"
    emit("tensor_offset_past_end", edit(lambda g: setattr(g.tensor(emb), "offset", 1 << 40)),
         f"tensor '{emb}' needs")
    emit("tensor_size_past_end", edit(lambda g: setattr(g.tensor("output.weight"), "ne", [c.d_model, 1 << 30])),
         "tensor 'output.weight' needs")
    emit("tensor_size_overflows",
         edit(lambda g: setattr(g.tensor("output.weight"), "ne", [c.d_model, 1 << 40, 1 << 20])),
         "has more elements than fit in a 64-bit count")
    emit("tensor_offset_misaligned", edit(lambda g: setattr(g.tensor(emb), "offset", 4)),
         "not a multiple of the alignment 32")
    emit("alignment_not_power_of_two", edit(lambda g: g.kvs.append(("general.alignment", u32_value(24)))),
         "general.alignment is 24, which is not a power of two")
    emit("tensor_type_unknown", edit(lambda g: setattr(g.tensor(emb), "type", 200)), "has unknown type 200")
    emit("tensor_type_not_implemented", edit(lambda g: setattr(g.tensor(emb), "type", 16)),  # IQ2_XXS
         "has type iq2_xxs, which this runtime cannot run; it runs files whose tensors are f32, f16, q4_0, q4_1")
    def q8_0_of_30(g):  # Q8_0 packs rows in blocks of 32 weights
        t = g.tensor("blk.0.attn_norm.weight")
        t.type, t.ne = int(Q.Q8_0), [30]

    emit("tensor_shape_not_block_multiple", edit(q8_0_of_30), "not a multiple of the block size 32")
    emit("tensor_zero_dims", edit(lambda g: setattr(g.tensor(emb), "ne", [])), "0 dimensions")
    emit("tensor_zero_extent", edit(lambda g: setattr(g.tensor(emb), "ne", [c.d_model, 0])),
         "has dimension 1 of 0")
    emit("duplicate_key", edit(lambda g: g.kvs.append(("llama.block_count", u32_value(1)))),
         "metadata key 'llama.block_count' appears more than once")
    emit("duplicate_tensor", edit(lambda g: g.tensors.append(replace(g.tensor("output_norm.weight")))),
         "tensor 'output_norm.weight' appears more than once")

    # --- the model inside a well-formed file ---------------------------------------------------
    emit("no_architecture", edit(lambda g: g.drop_kv("general.architecture")), "has no general.architecture")
    emit("unknown_architecture", edit(lambda g: g.set_kv("general.architecture", string_value("mamba"))),
         "is a 'mamba' model; supported: llama, qwen2, qwen3, gemma3")

    def rename_arch(arch):
        def fn(g):
            g.set_kv("general.architecture", string_value(arch))
            g.kvs = [(arch + k[5:] if k.startswith("llama.") else k, v) for k, v in g.kvs]
        return fn

    emit("wrong_architecture_qwen2", edit(rename_arch("qwen2")), "tensor blk.0.attn_q.bias is missing")
    emit("wrong_architecture_gemma3", edit(rename_arch("gemma3")), "tensor blk.0.attn_q_norm.weight is missing")
    emit("wrong_architecture_qwen3", edit(rename_arch("qwen3")), "tensor blk.0.attn_q_norm.weight is missing")
    emit("architecture_without_its_keys", edit(lambda g: g.set_kv("general.architecture", string_value("qwen2"))),
         "lacks the required key qwen2.block_count")
    for key in ("llama.block_count", "llama.embedding_length", "llama.attention.head_count",
                "llama.feed_forward_length"):
        emit(f"missing_{key.split('.')[-1]}", edit(lambda g, key=key: g.drop_kv(key)),
             f"lacks the required key {key}")
    emit("block_count_is_a_string", edit(lambda g: g.set_kv("llama.block_count", string_value("1"))),
         "llama.block_count must be an integer from 1 to 1024")
    emit("block_count_2e31", edit(lambda g: g.set_kv("llama.block_count", u32_value(1 << 31))),
         "llama.block_count is 2147483648, outside 1 to 1024")
    emit("context_length_2e31", edit(lambda g: g.set_kv("llama.context_length", u32_value(1 << 31))),
         "llama.context_length is 2147483648, outside 1 to 2147483647")
    emit("context_length_0", edit(lambda g: g.set_kv("llama.context_length", u32_value(0))),
         "llama.context_length is 0, outside 1 to 2147483647")
    emit("head_count_kv_too_large", edit(lambda g: g.set_kv("llama.attention.head_count_kv", u32_value(3))),
         "llama.attention.head_count_kv is 3, outside 1 to 2")
    emit("key_length_odd", edit(lambda g: g.set_kv("llama.attention.key_length", u32_value(31))),
         "an attention layout this runtime does not support")
    emit("more_blocks_than_tensors", edit(lambda g: g.set_kv("llama.block_count", u32_value(2))),
         "tensor blk.1.attn_norm.weight is missing")
    emit("embedding_length_mismatch",
         edit(lambda g: g.set_kv("llama.embedding_length", u32_value(2 * c.d_model))),
         f"tensor {emb} has shape [{c.d_model}, {c.n_vocab}], expected [{2 * c.d_model}, {c.n_vocab}]")
    emit("missing_tensor_output_norm", edit(lambda g: g.drop_tensor("output_norm.weight")),
         "tensor output_norm.weight is missing")
    emit("missing_tensor_token_embd", edit(lambda g: g.drop_tensor(emb)), f"tensor {emb} is missing")
    emit("missing_tensor_ffn_down", edit(lambda g: g.drop_tensor("blk.0.ffn_down.weight")),
         "tensor blk.0.ffn_down.weight is missing")

    def transpose(name):
        def fn(g):
            t = g.tensor(name)
            t.ne = [t.ne[1], t.ne[0]]
        return fn

    emit("tensor_shape_mismatch", edit(transpose("blk.0.ffn_up.weight")),
         f"tensor blk.0.ffn_up.weight has shape [{c.d_ff}, {c.d_model}], expected [{c.d_model}, {c.d_ff}]")

    def retype(name, qtype):
        def fn(g):
            t = g.tensor(name)
            block, size = gguf.GGML_QUANT_SIZES[qtype]
            t.type = int(qtype)
            n = 1
            for d in t.ne[1:]:
                n *= d
            t.data = bytes(n * t.ne[0] // block * size)
        return fn

    # Q8_1: a type the table sizes but no kernel computes (ggml's activation format, never a weight).
    emit("matrix_type_q8_1", edit(retype("blk.0.attn_q.weight", Q.Q8_1)),
         "tensor blk.0.attn_q.weight has type q8_1, which this runtime cannot run; it runs files whose tensors are")
    emit("tensor_extra_dimension", edit(lambda g: setattr(g.tensor(emb), "ne", [c.d_model, c.n_vocab // 3, 3])),
         f"tensor {emb} has shape [{c.d_model}, {c.n_vocab // 3}, 3], expected [{c.d_model}, {c.n_vocab // 3}]")
    emit("norm_is_a_matrix", edit(lambda g: setattr(g.tensor("output_norm.weight"), "ne", [c.d_model // 2, 2])),
         f"tensor output_norm.weight must be an F32 vector of {c.d_model}")
    emit("rms_epsilon_is_a_string",
         edit(lambda g: g.set_kv("llama.attention.layer_norm_rms_epsilon", string_value("1e-6"))),
         "llama.attention.layer_norm_rms_epsilon must be a number from 0 to 1")
    emit("rope_base_zero", edit(lambda g: g.set_kv("llama.rope.freq_base", _u32(FLOAT32) + struct.pack("<f", 0.0))),
         "llama.rope.freq_base must be a number from 1 to 1e+12")
    emit("rope_scaling_yarn", edit(lambda g: g.add_kv("llama.rope.scaling.type", string_value("yarn"))),
         "uses 'yarn' RoPE scaling; this runtime supports none, linear and Llama 3's rope_freqs")
    emit("rope_scaling_type_not_a_string", edit(lambda g: g.add_kv("llama.rope.scaling.type", u32_value(2))),
         "llama.rope.scaling.type must be a string")
    emit("rope_partial_rotary", edit(lambda g: g.add_kv("llama.rope.dimension_count", u32_value(c.head_dim // 2))),
         f"rotates {c.head_dim // 2} of {c.head_dim} dimensions per head")
    def rope_freqs(values):
        return lambda g: g.tensors.append(Tensor("rope_freqs.weight", [len(values)], int(Q.F32),
                                                 b"".join(struct.pack("<f", v) for v in values)))

    emit("rope_freqs_wrong_length", edit(rope_freqs([1.0] * c.head_dim)),
         f"tensor rope_freqs.weight must be an F32 vector of {c.head_dim // 2}")
    emit("rope_freqs_not_positive", edit(rope_freqs([1.0] * (c.head_dim // 2 - 1) + [-8.0])),
         "rope_freqs.weight must hold positive numbers")
    emit("norm_type_f16", edit(retype("output_norm.weight", Q.F16)),
         f"tensor output_norm.weight must be an F32 vector of {c.d_model}")

    # --- the tokenizer: as many tokens as embedding rows, of a known kind ------------------------
    def str_array(items):
        return _u32(ARRAY) + _u32(STRING) + _u64(len(items)) + b"".join(_str(s) for s in items)

    def f32_array(items):
        return _u32(ARRAY) + _u32(FLOAT32) + _u64(len(items)) + b"".join(struct.pack("<f", x) for x in items)

    def i32_array(items):
        return _u32(ARRAY) + _u32(INT32) + _u64(len(items)) + b"".join(struct.pack("<i", x) for x in items)

    def resize_vocab(n):
        toks, scores, types = vocab(n)

        def fn(g):
            g.set_kv("tokenizer.ggml.tokens", str_array(toks))
            g.set_kv("tokenizer.ggml.scores", f32_array(scores))
            g.set_kv("tokenizer.ggml.token_type", i32_array(types))
        return fn

    emit("vocab_larger_than_embedding", edit(resize_vocab(c.n_vocab + 5)),
         f"{c.n_vocab + 5} tokens but token_embd.weight has {c.n_vocab} rows")
    emit("vocab_smaller_than_embedding", edit(resize_vocab(c.n_vocab - 5)),
         f"{c.n_vocab - 5} tokens but token_embd.weight has {c.n_vocab} rows")
    emit("tokenizer_model_unknown", edit(lambda g: g.set_kv("tokenizer.ggml.model", string_value("bert"))),
         "tokenizer type 'bert' is not supported")
    emit("tokenizer_model_missing", edit(lambda g: g.drop_kv("tokenizer.ggml.model")),
         "tokenizer.ggml.model is missing")
    emit("tokenizer_gpt2_without_merges", edit(lambda g: g.set_kv("tokenizer.ggml.model", string_value("gpt2"))),
         "tokenizer.ggml.merges is missing")
    emit("tokenizer_tokens_not_strings",
         edit(lambda g: g.set_kv("tokenizer.ggml.tokens", _u32(ARRAY) + _u32(UINT32) + _u64(c.n_vocab) +
                                 b"".join(_u32(i) for i in range(c.n_vocab)))),
         "tokenizer.ggml.tokens is missing or not an array of strings")
    emit("tokenizer_tokens_missing", edit(lambda g: g.drop_kv("tokenizer.ggml.tokens")),
         "tokenizer.ggml.tokens is missing")
    emit("tokenizer_scores_short", edit(lambda g: g.set_kv("tokenizer.ggml.scores", f32_array([0.0] * 10))),
         "tokenizer.ggml.scores is too short")

    # --- hmllm.rotated_inputs (matrices stored as W·R): a list of this model's matrices ------------
    emit("rotated_inputs_not_strings", edit(lambda g: g.add_kv("hmllm.rotated_inputs", u32_value(1))),
         "hmllm.rotated_inputs must be an array of tensor names")
    emit("rotated_inputs_unknown_tensor",
         edit(lambda g: g.add_kv("hmllm.rotated_inputs", str_array(["blk.0.attn_x.weight"]))),
         "names blk.0.attn_x.weight, which is not a weight matrix of this model")
    emit("rotated_inputs_partial_block",
         edit(lambda g: g.add_kv("hmllm.rotated_inputs", str_array(["blk.0.attn_q.weight"]))),
         f"its {c.d_model} columns are not whole blocks of 128")
    emit("rotated_inputs_numbers",
         edit(lambda g: g.add_kv("hmllm.rotated_inputs", _u32(ARRAY) + _u32(UINT32) + _u64(1) + _u32(7))),
         "hmllm.rotated_inputs must be an array of tensor names")
    emit("rotated_inputs_a_vector",
         edit(lambda g: g.add_kv("hmllm.rotated_inputs", str_array(["output_norm.weight"]))),
         "names output_norm.weight, which is not a weight matrix of this model")
    return valid, out
