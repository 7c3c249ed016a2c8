"""HM_Q4 packer: numpy round trip within the stated error, and the documented byte layout."""

import numpy as np
import pytest

from hmbuild.int4_format import (dequantize_hm_q4, quantize_hm_q4, quantize_hm_q4_codes,
                                 tensor_bytes)


@pytest.mark.parametrize("group", [64, 128])
@pytest.mark.parametrize("shape", [(4, 128), (8, 640), (12, 256)])
def test_round_trip_error_is_within_half_a_step(group, shape):
    rng = np.random.default_rng(1234 + group)
    w = rng.standard_normal(shape).astype(np.float32)
    data = quantize_hm_q4(w, group)
    assert len(data) == tensor_bytes(*shape, group) == shape[0] * shape[1] // group * (2 + group // 2)
    back = dequantize_hm_q4(data, *shape, group)
    _, d = quantize_hm_q4_codes(w, group)
    step = np.repeat(d.astype(np.float32), group, axis=1)
    err = np.abs(back - w)
    # Every element within half a step (plus fp16 rounding slack of d: amax/7 rounds to fp16).
    assert np.all(err <= step * 0.5 * (1 + 2e-3) + 1e-7)
    # And overall: relative RMS error of a Gaussian matrix at 4 bits is a few percent.
    assert np.sqrt(np.mean(err ** 2)) / np.sqrt(np.mean(w ** 2)) < 0.12


def test_layout_scales_first_then_interleaved_nibbles():
    group, n_rows, n_cols = 64, 4, 64
    # Row r, column c holds the code (c + r) % 15 + 1 - 8 with scale 1/(r+1) (amax 7/(r+1)).
    r = np.arange(n_rows)[:, None]
    c = np.arange(n_cols)[None, :]
    codes = (c + r) % 15 + 1
    w = (codes - 8) / (r + 1.0)
    w[:, 0] = 7.0 / (r[:, 0] + 1.0)  # make amax exactly 7 * d in every row
    codes[:, 0] = 15
    data = quantize_hm_q4(w.astype(np.float32), group)
    assert len(data) == 8 + 128
    scales = np.frombuffer(data[:8], dtype="<f2")
    assert np.allclose(scales, 1.0 / np.arange(1, 5), rtol=1e-3)
    nib = np.frombuffer(data[8:], dtype=np.uint8)
    for row in range(4):
        for col in range(64):
            chunk, k = divmod(col, 32)
            half, k = divmod(k, 16)
            i, e = divmod(k, 4)
            byte = nib[64 * chunk + 16 * i + 4 * row + e]
            assert (byte >> (4 * half)) & 0xF == codes[row, col]


def test_tiles_are_contiguous_in_row_order():
    rng = np.random.default_rng(5)
    w = rng.standard_normal((8, 128)).astype(np.float32)
    whole = quantize_hm_q4(w, 128)
    assert whole == quantize_hm_q4(w[:4], 128) + quantize_hm_q4(w[4:], 128)


def test_zero_group_gives_zero_scale_and_code_8():
    w = np.zeros((4, 64), dtype=np.float32)
    data = quantize_hm_q4(w, 64)
    assert data[:8] == b"\0" * 8
    assert data[8:] == bytes([0x88]) * 128
    assert not np.any(dequantize_hm_q4(data, 4, 64, 64))


@pytest.mark.parametrize("shape,group", [((3, 64), 64), ((4, 96), 64), ((4, 64), 32)])
def test_rejects_shapes_the_format_cannot_hold(shape, group):
    with pytest.raises(ValueError):
        quantize_hm_q4(np.ones(shape, dtype=np.float32), group)


def test_rejects_wrong_byte_count():
    with pytest.raises(ValueError):
        dequantize_hm_q4(b"\0" * 10, 4, 64, 64)
