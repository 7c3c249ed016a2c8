"""Calibrated rounding for the HM_Q4 formats: error-compensating (GPTQ-style) quantization.

Plain rounding makes each weight's error independently; what a matrix W is for is W x on the
inputs x it really sees. Given H = E[x x^T] over a calibration text (measured by the engine's
hmllm_calibrate tool), the columns are rounded one at a time, and each column's rounding error is
spread over the columns not yet rounded so that the outputs W x move least (the optimal update
for a quadratic loss: Frantar et al., "GPTQ", 2022, with its Cholesky form and lazy block
updates). Columns are rounded largest input first ("act order"), so every group's scale is chosen
up front, from the weights as given, with the same least-squares scale search as plain rounding
(int4_format._search_scales, each column weighted by its input's mean square); the result is an
ordinary HM_Q4 tensor the runtime reads as is.

Written here rather than taken from a package: the PyPI GPTQ implementations need PyTorch (and
mostly CUDA) and write their own tensor layouts; this needs NumPy only and writes our tiles.
Rows are independent given H, so a tensor is processed in row chunks like plain rounding.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hmbuild.model.int4_format import _check_shape, _search_scales

BLOCK = 128  # columns per lazy update (a multiple of every group size)
# Diagonal damping, as a share of the mean input second moment. GPTQ's paper uses 0.01 with far
# more calibration data; with a few thousand tokens the measured moments are noisy and stronger
# damping (closer to plain rounding) measured better on Gemma 3 270M at group 128, `hmbuild eval`
# KL against the original (blocks only / tied embedding only): 0.01 -> 0.200 / 0.278, 0.03 ->
# 0.093 / -, 0.1 -> 0.089 / -, 0.3 -> 0.088 / 0.108, 1.0 -> 0.106 / 0.110 (plain: 0.355 / 0.178).
DAMP = 0.3


class Factor(NamedTuple):
    """What quantize_codes needs of one input: the columns' rounding order, U for that order, and
    the weight of each column's squared error when a group's scale is chosen."""
    order: np.ndarray   # int64 [n]: column indices, largest input second moment first
    u: np.ndarray       # inverse_factor of H permuted to that order
    weight: np.ndarray  # float32 [n], file order: the damped diagonal of H


def prepare(h: np.ndarray, damp: float = DAMP) -> Factor:
    """Columns whose inputs are largest are rounded first ("act order"), while the most columns
    are left to take up their error. H is checked, symmetrised and damped here, once."""
    h = np.array(h, dtype=np.float64)
    if h.ndim != 2 or h.shape[0] != h.shape[1]:
        raise ValueError(f"the input second-moment matrix must be square, got shape {h.shape}")
    if not np.all(np.isfinite(h)):
        raise ValueError("the input second-moment matrix holds NaN or infinity")
    h = (h + h.T) / 2
    diag = np.diag(h).copy()
    live = diag[diag > 0]
    shift = damp * (float(live.mean()) if live.size else 1.0)
    order = np.argsort(-diag, kind="stable")
    # The scale search weighs each column's error by its input's mean square (the diagonal part of
    # the output error), damped like H so a column whose input never fires still counts: measured
    # on Gemma 3 270M at group 128, KL 0.200 -> 0.172 (evaluation text), 0.287 -> 0.252 (another
    # English text); at group 32 about even (0.102 -> 0.108, top-1 0.776 -> 0.783).
    weight = (np.maximum(diag, 0) + shift).astype(np.float32)
    return Factor(order, inverse_factor(h[np.ix_(order, order)], shift), weight)


def inverse_factor(h: np.ndarray, shift: float) -> np.ndarray:
    """The upper Cholesky factor U of (H + shift * I)^-1 for a symmetric, finite H, float32 [n, n]:
    row i of U, divided by U[i, i], is how column i's rounding error is spread over the columns
    after it. Inputs that were never non-zero (diag 0) get a unit diagonal: their columns are
    rounded plainly and nothing is pushed onto them."""
    h = np.array(h, dtype=np.float64)
    dead = np.diag(h) <= 0
    h[dead, :] = 0
    h[:, dead] = 0
    h[dead, dead] = 1
    h[np.diag_indices_from(h)] += shift
    # H^-1 from H's own Cholesky factor, then the upper factor of H^-1.
    lower = np.linalg.cholesky(h)
    inv_lower = np.linalg.inv(lower)
    hinv = inv_lower.T @ inv_lower
    return np.linalg.cholesky(hinv).T.astype(np.float32)


def quantize_codes(weights: np.ndarray, group: int, factor: Factor) -> tuple[np.ndarray, np.ndarray]:
    """Like int4_format.quantize_hm_q4_codes (q uint8 0..15, d float16 [rows, cols / group]) but
    with each column's rounding error compensated on the later columns (prepare() of the matrix's
    input second moments). Columns go in factor.order, so the group scales (groups are runs of
    columns in the file's order) are chosen first, from the weights as given, each column's error
    weighted by factor.weight."""
    w = np.asarray(weights, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError(f"weights must be 2-D, got shape {w.shape}")
    n_rows, n_cols = w.shape
    _check_shape(n_rows, n_cols, group)
    order, u, weight = factor
    if u.shape != (n_cols, n_cols):
        raise ValueError(f"the calibration matrix is {u.shape[0]} wide but the tensor has {n_cols} columns")
    d16 = _search_scales(w.reshape(n_rows, n_cols // group, group),
                         weight.reshape(n_cols // group, group))[..., 0].astype(np.float16)
    step_all = d16.astype(np.float32)
    with np.errstate(divide="ignore"):
        inv_all = np.where(step_all != 0, np.float32(1.0) / np.where(step_all != 0, step_all, np.float32(1.0)),
                           np.float32(0.0)).astype(np.float32)
    wp = w[:, order]  # a copy, in rounding order: updated in place
    col_group = order // group
    codes_p = np.empty((n_rows, n_cols), dtype=np.float32)
    for b0 in range(0, n_cols, BLOCK):
        b1 = min(b0 + BLOCK, n_cols)
        blk = wp[:, b0:b1]  # a view: updates land in wp
        errs = np.empty((n_rows, b1 - b0), dtype=np.float32)
        ub = u[b0:b1, b0:b1]
        for i in range(b1 - b0):
            k = col_group[b0 + i]
            step, inv = step_all[:, k], inv_all[:, k]
            x = blk[:, i]
            codes = np.clip(np.rint(x * inv), -8.0, 7.0)
            codes_p[:, b0 + i] = codes
            err = (x - codes * step) / ub[i, i]
            errs[:, i] = err
            if i + 1 < b1 - b0:
                blk[:, i + 1:] -= np.outer(err, ub[i, i + 1:])
        if b1 < n_cols:
            wp[:, b1:] -= errs @ u[b0:b1, b1:]
    q = np.empty((n_rows, n_cols), dtype=np.uint8)
    q[:, order] = (codes_p + 8.0).astype(np.uint8)
    return q, d16
