"""The project's own INT4 weight formats, HM_Q4_G64 and HM_Q4_G128 (docs/int4-format.md).

Symmetric 4-bit per row and group of G columns with one fp16 scale: value = (q - 8) * d,
q in 0..15, d = fp16(amax / 7) so that q - 8 stays in -7..7 and every element is within d / 2
of its original value. Rows are stored in tiles of 4, in the order the NEON dotprod kernel
reads them, so the runtime uses the mapped file as is. The byte layout of one tile-group:

    8 bytes     fp16 d of the tile's rows 0, 1, 2, 3 (little-endian)
    G/32 chunks of 64 bytes; in chunk c, byte 16*i + 4*r + e (i, r, e in 0..3) holds row r's
                column 32c + 4i + e in its low nibble and column 32c + 16 + 4i + e in its high one

Tiles follow each other in row order, a tile's groups in column order: 4 * (2 + G/2) bytes
per tile-group, i.e. 2 + G/2 bytes per row and group. n_rows must be a multiple of 4 and
n_cols a multiple of G.
"""

from __future__ import annotations

import numpy as np

GGML_TYPE = {64: 1064, 128: 1128}  # HM_Q4_G64, HM_Q4_G128 in the GGUF tensor-type enum
TILE_ROWS = 4


def _check_shape(n_rows: int, n_cols: int, group: int) -> None:
    if group not in GGML_TYPE:
        raise ValueError(f"group must be 64 or 128, not {group}")
    if n_rows % TILE_ROWS != 0:
        raise ValueError(f"n_rows ({n_rows}) must be a multiple of {TILE_ROWS}")
    if n_cols % group != 0:
        raise ValueError(f"n_cols ({n_cols}) must be a multiple of the group size {group}")


def tensor_bytes(n_rows: int, n_cols: int, group: int) -> int:
    """Size in bytes of an n_rows x n_cols tensor in the format."""
    _check_shape(n_rows, n_cols, group)
    return n_rows * (n_cols // group) * (2 + group // 2)


def quantize_hm_q4_codes(weights: np.ndarray, group: int) -> tuple[np.ndarray, np.ndarray]:
    """Returns (q uint8 [n_rows, n_cols] in 0..15, d float16 [n_rows, n_cols / group])."""
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError(f"weights must be 2-D, got shape {w.shape}")
    n_rows, n_cols = w.shape
    _check_shape(n_rows, n_cols, group)
    if not np.all(np.isfinite(w)):
        raise ValueError("weights contain NaN or infinity")
    g = w.reshape(n_rows, n_cols // group, group)
    amax = np.max(np.abs(g), axis=2)
    d16 = (amax / np.float32(7.0)).astype(np.float16)
    d = d16.astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(d > 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    q = np.clip(np.rint(g * inv[:, :, None]) + np.float32(8.0), 0, 15).astype(np.uint8)
    return q.reshape(n_rows, n_cols), d16


def pack_hm_q4(q: np.ndarray, d: np.ndarray, group: int) -> bytes:
    """Lays out codes and scales (as from quantize_hm_q4_codes) in the tiled byte order."""
    n_rows, n_cols = q.shape
    _check_shape(n_rows, n_cols, group)
    tiles, groups, chunks = n_rows // TILE_ROWS, n_cols // group, group // 32
    # column = k*G + 32c + 16h + 4i + e  ->  axes (tile, r, k, c, h, i, e)
    q7 = q.reshape(tiles, TILE_ROWS, groups, chunks, 2, 4, 4)
    q7 = q7.transpose(0, 2, 3, 5, 1, 6, 4)  # (tile, k, c, i, r, e, h)
    nib = (q7[..., 0] | (q7[..., 1] << 4)).astype(np.uint8).reshape(tiles, groups, chunks * 64)
    scales = d.astype("<f2").reshape(tiles, TILE_ROWS, groups).transpose(0, 2, 1)
    scales = np.ascontiguousarray(scales).view(np.uint8).reshape(tiles, groups, 8)
    return np.concatenate([scales, nib], axis=2).tobytes()


def quantize_hm_q4(weights: np.ndarray, group: int) -> bytes:
    """Quantizes a float [n_rows, n_cols] matrix to HM_Q4_G<group> bytes."""
    q, d = quantize_hm_q4_codes(weights, group)
    return pack_hm_q4(q, d, group)


def dequantize_hm_q4(data: bytes, n_rows: int, n_cols: int, group: int) -> np.ndarray:
    """Inverse of quantize_hm_q4 up to the quantization error: float32 [n_rows, n_cols]."""
    _check_shape(n_rows, n_cols, group)
    if len(data) != tensor_bytes(n_rows, n_cols, group):
        raise ValueError(
            f"expected {tensor_bytes(n_rows, n_cols, group)} bytes for {n_rows}x{n_cols} "
            f"G{group}, got {len(data)}")
    tiles, groups, chunks = n_rows // TILE_ROWS, n_cols // group, group // 32
    raw = np.frombuffer(data, dtype=np.uint8).reshape(tiles, groups, 8 + 2 * group)
    d = raw[:, :, :8].copy().view("<f2").astype(np.float32)  # (tile, k, r)
    nib = raw[:, :, 8:].reshape(tiles, groups, chunks, 4, TILE_ROWS, 4)  # (tile, k, c, i, r, e)
    q = np.stack([nib & 0xF, nib >> 4], axis=-1)  # (tile, k, c, i, r, e, h)
    q = q.transpose(0, 4, 1, 2, 6, 3, 5).reshape(n_rows, groups, group)  # (tile, r, k, c, h, i, e)
    dr = d.transpose(0, 2, 1).reshape(n_rows, groups, 1)
    return ((q.astype(np.float32) - 8.0) * dr).reshape(n_rows, n_cols)


def register_with_gguf() -> None:
    """Teaches the PyPI gguf writer the sizes of these types, so GGUFWriter.add_tensor(raw_dtype=1064
    or 1128) can write them (it only needs bytes per block; the tile order is opaque to it)."""
    import gguf

    for group, type_id in GGML_TYPE.items():
        gguf.constants.GGML_QUANT_SIZES.setdefault(type_id, (group, 2 + group // 2))
