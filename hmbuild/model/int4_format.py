"""The project's own INT4 weight formats, HM_Q4_G32, HM_Q4_G64 and HM_Q4_G128 (docs/int4-format.md).

Symmetric 4-bit per row and group of G columns (32, 64 or 128) with one fp16 scale: value =
(q - 8) * d, q in 0..15. The quantizer picks, per row and group, the d (of either sign) with the
least squared error over a small grid around the group's extreme value, refitted by least squares
(method "mse"), or the plain d = fp16(amax / 7) with q - 8 in -7..7 (method "amax"). Rows are
stored in tiles of 4, in the order the NEON dotprod kernel reads them, so the runtime uses the
mapped file as is. The byte layout of one tile-group:

    8 bytes     fp16 d of the tile's rows 0, 1, 2, 3 (little-endian)
    G/32 chunks of 64 bytes; in chunk c, byte 16*i + 4*r + e (i, r, e in 0..3) holds row r's
                column 32c + 4i + e in its low nibble and column 32c + 16 + 4i + e in its high one

Tiles follow each other in row order, a tile's groups in column order: 4 * (2 + G/2) bytes
per tile-group, i.e. 2 + G/2 bytes per row and group. n_rows must be a multiple of 4 and
n_cols a multiple of G.
"""

from __future__ import annotations

import numpy as np

from hmbuild.model.ggml_types import HM_Q4, nbytes

TILE_ROWS = 4


def _check_shape(n_rows: int, n_cols: int, group: int) -> None:
    if group not in HM_Q4:
        raise ValueError(f"group must be one of {sorted(HM_Q4)}, not {group}")
    if n_rows % TILE_ROWS != 0:
        raise ValueError(f"n_rows ({n_rows}) must be a multiple of {TILE_ROWS}")
    if n_cols % group != 0:
        raise ValueError(f"n_cols ({n_cols}) must be a multiple of the group size {group}")


def tensor_bytes(n_rows: int, n_cols: int, group: int) -> int:
    """Size in bytes of an n_rows x n_cols tensor in the format."""
    _check_shape(n_rows, n_cols, group)
    return nbytes(HM_Q4[group], n_rows, n_cols)


# Candidate scales of the MSE search, as divisors of the group's signed extreme m (the element of
# largest magnitude): d = -m / k puts m on code -8 for k = 8, beyond the range (clipped) for k > 8;
# k = -7 is the plain d = amax / 7 with m on +7, so the search is never worse than that.
SCALE_DIVISORS = (-7.0, -7.5, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5, 10.0)
_ROWS_PER_BLOCK = 1024  # rows quantized at a time (bounds the temporaries, keeps them cache-sized)


def _codes(g: np.ndarray, iscale: np.ndarray) -> np.ndarray:
    """Signed codes clamp(round_half_even(g * iscale), -8, 7) as float32 (iscale broadcasts)."""
    L = g * iscale
    np.rint(L, out=L)
    np.clip(L, -8.0, 7.0, out=L)
    return L


def _search_scales(g: np.ndarray, imp: np.ndarray | None = None) -> np.ndarray:
    """float32 d [rows, groups, 1] minimising sum(imp * (L * d - x)^2) over the candidate grid,
    refitted by least squares (d = sum(imp x L) / sum(imp L^2) for the chosen codes L). imp
    [groups, group] weighs columns (None: all 1)."""
    gi = g if imp is None else g * imp
    if imp is None:
        def sums(L):
            return (np.einsum("ijk,ijk->ij", g, L)[..., None], np.einsum("ijk,ijk->ij", L, L)[..., None])
    else:
        def sums(L):
            return (np.einsum("ijk,ijk->ij", gi, L)[..., None], np.einsum("ijk,ijk,jk->ij", L, L, imp)[..., None])
    idx = np.argmax(np.abs(g), axis=2)[..., None]
    m = np.take_along_axis(g, idx, axis=2)
    safe_m = np.where(m != 0, m, np.float32(1.0)).astype(np.float32)
    best = np.full(m.shape, -1.0, dtype=np.float32)
    best_k = np.zeros(m.shape, dtype=np.float32)
    for k in SCALE_DIVISORS:
        L = _codes(g, np.float32(-k) / safe_m)
        slx, sl2 = sums(L)
        # For fixed codes the best d is slx / sl2 and the squared error sum(x^2) - slx^2 / sl2.
        score = slx * slx / np.maximum(sl2, np.float32(1e-30))
        better = score > best
        best = np.where(better, score, best)
        best_k = np.where(better, np.float32(k), best_k)
    L = _codes(g, -best_k / safe_m)
    slx, sl2 = sums(L)
    return np.where((sl2 > 0) & (m != 0), slx / np.maximum(sl2, np.float32(1e-30)), np.float32(0.0))


def quantize_hm_q4_codes(weights: np.ndarray, group: int, method: str = "mse",
                         importance: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Returns (q uint8 [n_rows, n_cols] in 0..15, d float16 [n_rows, n_cols / group]).

    method "mse" (default): per row and group, the scale (either sign) of least squared error over
    SCALE_DIVISORS, refitted by least squares; codes use the full -8..7. method "amax": d =
    amax / 7 and codes -7..7, every element within d / 2 of its value (the original rule).
    Either way q = clamp(round_half_even(x / fp16(d)) + 8, 0, 15). importance (n_cols positive
    floats, "mse" only) weighs the squared error per column, e.g. by the mean square of the
    activations the matrix multiplies."""
    if method not in ("mse", "amax"):
        raise ValueError(f"method must be 'mse' or 'amax', not {method!r}")
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError(f"weights must be 2-D, got shape {w.shape}")
    n_rows, n_cols = w.shape
    _check_shape(n_rows, n_cols, group)
    if not np.all(np.isfinite(w)):
        raise ValueError("weights contain NaN or infinity")
    imp = None
    if importance is not None:
        imp = np.asarray(importance, dtype=np.float32).reshape(-1)
        if imp.shape != (n_cols,) or not np.all(np.isfinite(imp)) or np.any(imp < 0):
            raise ValueError(f"importance must be {n_cols} finite non-negative floats")
        imp = imp.reshape(n_cols // group, group)
    q = np.empty((n_rows, n_cols), dtype=np.uint8)
    d16 = np.empty((n_rows, n_cols // group), dtype=np.float16)
    for r0 in range(0, n_rows, _ROWS_PER_BLOCK):
        g = w[r0:r0 + _ROWS_PER_BLOCK].reshape(-1, n_cols // group, group)
        if method == "amax":
            d = (np.max(np.abs(g), axis=2, keepdims=True) / np.float32(7.0))
        else:
            d = _search_scales(g, imp)
        dh = d.astype(np.float16)
        df = dh.astype(np.float32)
        with np.errstate(divide="ignore"):
            inv = np.where(df != 0, np.float32(1.0) / np.where(df != 0, df, np.float32(1.0)), np.float32(0.0))
        L = _codes(g, inv.astype(np.float32))
        L += np.float32(8.0)
        q[r0:r0 + _ROWS_PER_BLOCK] = L.astype(np.uint8).reshape(-1, n_cols)
        d16[r0:r0 + _ROWS_PER_BLOCK] = dh[..., 0]
    return q, d16


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


def quantize_hm_q4(weights: np.ndarray, group: int, method: str = "mse") -> bytes:
    """Quantizes a float [n_rows, n_cols] matrix to HM_Q4_G<group> bytes."""
    q, d = quantize_hm_q4_codes(weights, group, method)
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


# Rotated inputs (docs/int4-format.md): a matrix named in the file's ROTATED_KEY array is stored as
# W·R, R = blockdiag(H/sqrt(128)) over its columns, H the 128x128 Sylvester-Hadamard matrix; the
# engine multiplies each input by R first (native hadamard_rows), so (W·R)(R·x) = W·x. R spreads a
# group's outliers over the whole group, so 4-bit rounding of W·R loses less than of W.
ROTATED_KEY = "hmllm.rotated_inputs"
ROTATION_BLOCK = 128


def _hadamard(n: int) -> np.ndarray:
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(n)


_R = _hadamard(ROTATION_BLOCK)


def _rotate64(w: np.ndarray) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    rows, n_cols = w.shape
    if n_cols % ROTATION_BLOCK:
        raise ValueError(f"n_cols ({n_cols}) must be a multiple of {ROTATION_BLOCK} to rotate")
    return (w.reshape(rows, n_cols // ROTATION_BLOCK, ROTATION_BLOCK) @ _R).reshape(rows, n_cols)


def rotate_columns(w: np.ndarray) -> np.ndarray:
    """w·R (float32) for a [rows, n_cols] matrix, n_cols a multiple of 128; R is symmetric and its
    own inverse, so the same call undoes it."""
    return _rotate64(w).astype(np.float32)


def rotate_moments(h: np.ndarray) -> np.ndarray:
    """R·H·R (float64): the second moments of R·x from those of x (H symmetric)."""
    return _rotate64(_rotate64(h).T).T


def rotated_tensors(reader) -> set[str]:
    """The names a GGUFReader's file lists under ROTATED_KEY (empty when it has none); ValueError
    when the key is not an array of names of the file's 2-D tensors with whole 128-blocks of
    columns (what the engine checks too)."""
    import gguf

    f = reader.fields.get(ROTATED_KEY)
    if f is None:
        return set()
    if list(f.types) != [gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.STRING]:
        raise ValueError("it is not an array of tensor names")
    shapes = {t.name: [int(x) for x in t.shape] for t in reader.tensors}
    names = {str(x) for x in f.contents()}
    for name in sorted(names):
        shape = shapes.get(name)
        if shape is None or len(shape) != 2 or shape[0] % ROTATION_BLOCK:
            raise ValueError(f"it names {name!r}, which is not a matrix of whole {ROTATION_BLOCK}-column blocks "
                             "in the file")
    return names
