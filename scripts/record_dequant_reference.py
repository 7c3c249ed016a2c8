"""Record gguf-py's dequantization of blocks of every GGUF type the runtime computes, as the fixture
the native kernel test compares each type's to_float to, bit for bit
(native/tests/data/gguf_dequant.bin, read by native/tests/test_kernels.cpp).

    python scripts/record_dequant_reference.py          # rewrite the fixture
    python scripts/record_dequant_reference.py --check  # exit 1 when the committed one is out of date

tests/test_ggml_types.py runs the --check form, so the fixture is always what the installed gguf
package's gguf.quants.dequantize gives. The blocks are random bytes from a fixed seed (every bit
pattern of quants, scales and mins, which real files only reach by chance) with finite fp16 scale
fields, and for the types gguf-py quantizes itself (F16, BF16, Q4_0, Q5_0, Q8_0) also its own
quantization of random floats.

Layout, little-endian: b"HMDQ", uint32 version (1), uint32 entry count; per entry uint32 GGML
type, uint32 element count, uint32 byte count, the blocks, then the element count of float32.
"""
from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hmbuild.model.ggml_types import ENGINE_TYPES  # noqa: E402

OUT = REPO / "native" / "tests" / "data" / "gguf_dequant.bin"
SEED = 29

# Type name -> byte offsets of the fp16 scale fields inside one block (written with finite values
# of a realistic size, so no scale is inf or NaN) and the magnitude of those scales.
SCALE_FIELDS = {
    "Q4_0": ((0,), 0.01), "Q5_0": ((0,), 0.01), "Q8_0": ((0,), 0.01), "IQ4_NL": ((0,), 0.001),
    "Q2_K": ((80, 82), 0.01), "Q3_K": ((108,), 0.002), "Q4_K": ((0, 2), 0.002), "Q5_K": ((0, 2), 0.002),
    "Q6_K": ((208,), 0.001), "IQ4_XS": ((0,), 0.0005),
}
# Q4_1 / Q5_1 are recorded once the engine runs them (only the ENGINE_TYPES of hmbuild's table are).
QUANTIZED_BY_GGUF_PY = ("F16", "BF16", "Q4_0", "Q5_0", "Q8_0", "Q4_1", "Q5_1")
ELEMENTS = 512  # two K-quant super-blocks, sixteen 32-blocks


def entries() -> list[tuple[int, bytes, np.ndarray]]:
    """(type id, block bytes, gguf-py's float32 values) per recorded case, in a fixed order."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quants

    rng = np.random.RandomState(SEED)
    out = []
    for name, (fields, mag) in SCALE_FIELDS.items():
        qtype = GGMLQuantizationType[name]
        if qtype not in ENGINE_TYPES:
            continue
        block, size = GGML_QUANT_SIZES[qtype]
        raw = rng.randint(0, 256, size=(ELEMENTS // block, size)).astype(np.uint8)
        for off in fields:
            scales = (mag * rng.uniform(0.2, 1.0, size=raw.shape[0])).astype(np.float16)
            raw[:, off:off + 2] = scales.view(np.uint8).reshape(-1, 2)
        out.append((int(qtype), raw.tobytes(), quants.dequantize(raw.reshape(1, -1), qtype).reshape(-1)))
    for name in QUANTIZED_BY_GGUF_PY:
        qtype = GGMLQuantizationType[name]
        if qtype not in ENGINE_TYPES:
            continue
        x = (rng.standard_normal(ELEMENTS) * rng.uniform(0.01, 2.0)).astype(np.float32)
        raw = np.asarray(quants.quantize(x.reshape(1, -1), qtype))
        out.append((int(qtype), raw.tobytes(), quants.dequantize(raw, qtype).reshape(-1)))
    return out


def render() -> bytes:
    cases = entries()
    parts = [b"HMDQ", struct.pack("<II", 1, len(cases))]
    for type_id, raw, values in cases:
        values = np.asarray(values, dtype="<f4")
        assert values.size == ELEMENTS and np.isfinite(values).all()
        parts += [struct.pack("<III", type_id, values.size, len(raw)), raw, values.tobytes()]
    return b"".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when the committed fixture is out of date")
    args = ap.parse_args()
    data = render()
    if args.check:
        if not OUT.is_file() or OUT.read_bytes() != data:
            print(f"{OUT.relative_to(REPO)} is not what gguf-py gives: run python scripts/record_dequant_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    OUT.write_bytes(data)
    print(f"wrote {OUT.relative_to(REPO)} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
