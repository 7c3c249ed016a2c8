"""GGUF tensor types, in one place for the Python half (quantize, plan, the INT4 format): the PyPI gguf
package's GGMLQuantizationType and GGML_QUANT_SIZES, plus hmbuild's own INT4 types HM_Q4_G32,
HM_Q4_G64 and HM_Q4_G128 (docs/int4-format.md). The C++ side's table is native/src/ggml_types.cpp;
tests/test_ggml_types.py checks that the two agree.

gguf is imported on first use, not with this module: it costs 0.2 s, and every command imports the
model package.
"""

from __future__ import annotations

# GGUF's own type ids (gguf.GGMLQuantizationType) for the types hmbuild names in code, spelt out
# so that naming one does not import gguf; tests/test_ggml_types.py checks each against the enum.
F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 = 0, 1, 2, 3, 6, 7, 8
Q2_K, Q3_K, Q4_K, Q5_K, Q6_K = 10, 11, 12, 13, 14
IQ4_NL, IQ4_XS = 20, 23
BF16 = 30

# hmbuild's INT4: group size G -> type id (outside ggml's enum), and back.
HM_Q4 = {32: 1032, 64: 1064, 128: 1128}
HM_GROUP = {type_id: group for group, type_id in HM_Q4.items()}
HM_NAMES = {type_id: f"HM_Q4_G{group}" for group, type_id in HM_Q4.items()}
# (weights, bytes) per block: G 4-bit codes and one fp16 scale, 2 + G/2 bytes per row and group.
HM_BLOCK = {type_id: (group, 2 + group // 2) for group, type_id in HM_Q4.items()}

# What `hmbuild quantize` reads: what gguf.quants.dequantize handles among the float, classic,
# K-quant and 4-bit non-linear (IQ4) types, and hmbuild's INT4 (int4_format.dequantize_hm_q4).
READABLE = frozenset({F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS,
                      *HM_Q4.values()})
# What the engine runs as it is: the rows of native/src/ggml_types.cpp with a dot kernel.
ENGINE_TYPES = frozenset({F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS,
                          *HM_Q4.values()})
FLOAT_TYPES = frozenset({F32, F16, BF16})

_registered = False


def register_with_gguf() -> None:
    """Teaches the gguf package hmbuild's INT4 types: GGML_QUANT_SIZES gets their block sizes, so
    GGUFWriter.add_tensor(raw_dtype=1032 / 1064 / 1128) can write them (the tile order is opaque to
    it), and GGMLQuantizationType a pseudo-member per id (named HM_Q4_G<G>), so GGUFReader reads
    files that hold them instead of failing on an unknown enum value. Idempotent."""
    global _registered
    if _registered:
        return
    import gguf

    enum = gguf.GGMLQuantizationType
    for type_id, sizes in HM_BLOCK.items():
        gguf.constants.GGML_QUANT_SIZES.setdefault(type_id, sizes)
        if type_id not in enum._value2member_map_:
            # The enum has no API to add a member; this is how its own _missing_ would build one.
            member = int.__new__(enum, type_id)
            member._name_ = HM_NAMES[type_id]
            member._value_ = type_id
            enum._value2member_map_[type_id] = member
    _registered = True


def type_name(type_id: int) -> str:
    """GGUF's name of a type (Q4_K, HM_Q4_G128), or 'type N' for an id no one knows."""
    if type_id in HM_NAMES:
        return HM_NAMES[type_id]
    import gguf

    try:
        return gguf.GGMLQuantizationType(type_id).name
    except ValueError:
        return f"type {type_id}"


def block(type_id: int) -> tuple[int, int]:
    """(weights per block, bytes per block) of a type; KeyError for a type without a size."""
    if type_id in HM_BLOCK:
        return HM_BLOCK[type_id]
    import gguf

    register_with_gguf()
    try:
        return gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(type_id)]
    except ValueError:
        raise KeyError(type_id) from None


def ggml_name(type_id: int) -> str:
    """ggml's spelling of a type (q4_K, iq2_xxs, hm_q4_g32), as the runtime's messages write it."""
    name = type_name(type_id)
    if name.startswith("type "):
        return "number " + name[5:]
    name = name.lower()
    return name[:-2] + "_K" if name.endswith("_k") else name


def unrunnable_message(path, tensor: str, type_id: int) -> str:
    """The runtime's sentence for a file holding a tensor it cannot compute with (the same words as
    native/src/ggml_types.cpp's unrunnable_tensor_message), with the types that do run."""
    runs = [ggml_name(t) for t in sorted(ENGINE_TYPES)]
    return (f"{path} cannot be loaded: tensor {tensor} has type {ggml_name(type_id)}, which this runtime cannot run; "
            f"it runs files whose tensors are {', '.join(runs[:-1])} and {runs[-1]}.")


def first_unrunnable(tensors) -> tuple[str, int] | None:
    """(name, type id) of the first of (name, type id) pairs whose type the engine cannot run."""
    return next(((name, int(t)) for name, t in tensors if int(t) not in ENGINE_TYPES), None)


def check_runnable(path, tensors) -> None:
    """Refuses (HmbuildError, one sentence) a file with a tensor whose type the engine cannot run;
    tensors: (name, type id) pairs, e.g. from a gguf reader's tensors."""
    from hmbuild.errors import HmbuildError

    bad = first_unrunnable(tensors)
    if bad is not None:
        raise HmbuildError(unrunnable_message(path, *bad))


def bits_per_weight(type_id: int) -> float:
    weights, size = block(type_id)
    return size * 8 / weights


def nbytes(type_id: int, n_rows: int, n_cols: int) -> int:
    """Bytes of an n_rows x n_cols matrix in the type (n_cols a multiple of its block)."""
    weights, size = block(type_id)
    return n_rows * (n_cols // weights) * size


def fits(type_id: int, n_cols: int) -> bool:
    """Whether rows of n_cols weights are whole blocks of the type."""
    return n_cols % block(type_id)[0] == 0
