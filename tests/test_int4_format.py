"""HM_Q4 packer: numpy round trip within the stated error, the MSE scale search, the documented
byte layout, and the gguf package's reader and writer taught the three type ids."""

import gguf
import numpy as np
import pytest

from hmbuild.model.ggml_types import HM_Q4 as GGML_TYPE
from hmbuild.model.ggml_types import register_with_gguf
from hmbuild.model.int4_format import (ROTATION_BLOCK, rotate_columns, rotate_moments, dequantize_hm_q4, pack_hm_q4, quantize_hm_q4,
                                 quantize_hm_q4_codes, tensor_bytes)


@pytest.mark.parametrize("group", [32, 64, 128])
@pytest.mark.parametrize("shape", [(4, 128), (8, 640), (12, 256)])
def test_amax_round_trip_error_is_within_half_a_step(group, shape):
    rng = np.random.default_rng(1234 + group)
    w = rng.standard_normal(shape).astype(np.float32)
    data = quantize_hm_q4(w, group, method="amax")
    assert len(data) == tensor_bytes(*shape, group) == shape[0] * shape[1] // group * (2 + group // 2)
    back = dequantize_hm_q4(data, *shape, group)
    _, d = quantize_hm_q4_codes(w, group, method="amax")
    step = np.repeat(d.astype(np.float32), group, axis=1)
    err = np.abs(back - w)
    # Every element within half a step (plus fp16 rounding slack of d: amax/7 rounds to fp16).
    assert np.all(err <= step * 0.5 * (1 + 2e-3) + 1e-7)
    # And overall: relative RMS error of a Gaussian matrix at 4 bits is a few percent.
    assert np.sqrt(np.mean(err ** 2)) / np.sqrt(np.mean(w ** 2)) < 0.12


@pytest.mark.parametrize("group", [32, 64, 128])
def test_mse_search_beats_amax_over_7_and_uses_code_0(group):
    rng = np.random.default_rng(7 + group)
    w = (rng.standard_normal((64, 512)) * 0.05).astype(np.float32)
    w[:, ::97] *= 6.0  # a few outliers, as real weight matrices have
    errs = {}
    for method in ("amax", "mse"):
        data = quantize_hm_q4(w, group, method=method)
        errs[method] = float(np.sqrt(np.mean((dequantize_hm_q4(data, *w.shape, group) - w) ** 2)))
    assert errs["mse"] < errs["amax"] * 0.95, errs
    q, d = quantize_hm_q4_codes(w, group)
    assert q.min() == 0 and q.max() == 15  # the full -8..7 range
    assert np.all(np.isfinite(d.astype(np.float32)))
    # Each group's scale is at least as good as amax/7's for that group (the search includes it).
    back = dequantize_hm_q4(pack_hm_q4(q, d, group), *w.shape, group).reshape(64, -1, group)
    qa, da = quantize_hm_q4_codes(w, group, method="amax")
    back_a = dequantize_hm_q4(pack_hm_q4(qa, da, group), *w.shape, group).reshape(64, -1, group)
    wg = w.reshape(64, -1, group)
    e_mse = ((back - wg) ** 2).sum(axis=2)
    e_amax = ((back_a - wg) ** 2).sum(axis=2)
    assert np.all(e_mse <= e_amax * 1.01 + 1e-12)


def test_mse_search_reproduces_exactly_representable_values():
    rng = np.random.default_rng(3)
    codes = rng.integers(-8, 8, size=(8, 128))
    codes[:, 0] = -8
    w = (codes * 0.25).astype(np.float32)
    back = dequantize_hm_q4(quantize_hm_q4(w, 64), 8, 128, 64)
    assert np.array_equal(back, w)


def test_layout_scales_first_then_interleaved_nibbles():
    group, n_rows, n_cols = 64, 4, 64
    # Row r, column c holds the code (c + r) % 15 + 1 - 8 with scale 1/(r+1) (amax 7/(r+1)).
    r = np.arange(n_rows)[:, None]
    c = np.arange(n_cols)[None, :]
    codes = (c + r) % 15 + 1
    w = (codes - 8) / (r + 1.0)
    w[:, 0] = 7.0 / (r[:, 0] + 1.0)  # make amax exactly 7 * d in every row
    codes[:, 0] = 15
    data = quantize_hm_q4(w.astype(np.float32), group, method="amax")
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


def test_group_32_is_one_chunk_per_tile_group():
    rng = np.random.default_rng(11)
    w = rng.standard_normal((4, 64)).astype(np.float32)
    data = quantize_hm_q4(w, 32)
    assert len(data) == 2 * (8 + 64) == tensor_bytes(4, 64, 32)
    q, d = quantize_hm_q4_codes(w, 32)
    for k in range(2):  # tile-group k = scales of rows 0-3 for columns 32k.., then one chunk
        tg = data[72 * k:72 * (k + 1)]
        assert np.array_equal(np.frombuffer(tg[:8], dtype="<f2"), d[:, k])
        for row in range(4):
            for col in range(32):
                half, j = divmod(col, 16)
                i, e = divmod(j, 4)
                assert (tg[8 + 16 * i + 4 * row + e] >> (4 * half)) & 0xF == q[row, 32 * k + col]
    assert GGML_TYPE[32] == 1032


def test_gguf_writer_and_reader_know_the_types(tmp_path):
    register_with_gguf()
    rng = np.random.default_rng(2)
    path = tmp_path / "t.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    mats = {}
    for group, type_id in GGML_TYPE.items():
        w = rng.standard_normal((8, 256)).astype(np.float32)
        raw = np.frombuffer(quantize_hm_q4(w, group), dtype=np.uint8).reshape(8, -1)
        writer.add_tensor(f"w{group}", raw, raw_shape=raw.shape, raw_dtype=type_id)
        mats[group] = raw.tobytes()
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader = gguf.GGUFReader(str(path))
    for t in reader.tensors:
        group = int(t.name[1:])
        assert int(t.tensor_type) == GGML_TYPE[group] and t.tensor_type.name == f"HM_Q4_G{group}"
        assert list(t.shape) == [256, 8] and t.n_bytes == tensor_bytes(8, 256, group)
        assert np.asarray(t.data).tobytes() == mats[group]


@pytest.mark.parametrize("shape,group", [((3, 64), 64), ((4, 96), 64), ((4, 48), 32), ((4, 64), 16)])
def test_rejects_shapes_the_format_cannot_hold(shape, group):
    with pytest.raises(ValueError):
        quantize_hm_q4(np.ones(shape, dtype=np.float32), group)


def test_rejects_wrong_byte_count():
    with pytest.raises(ValueError):
        dequantize_hm_q4(b"\0" * 10, 4, 64, 64)


def test_importance_weighs_the_scale_search_towards_heavy_columns():
    rng = np.random.default_rng(9)
    w = rng.standard_normal((16, 128)).astype(np.float32)
    imp = np.full(128, 0.01, dtype=np.float32)
    imp[::8] = 10.0
    heavy = np.zeros(128, dtype=bool)
    heavy[::8] = True
    errs = {}
    for name, importance in (("plain", None), ("weighted", imp)):
        q, d = quantize_hm_q4_codes(w, 64, importance=importance)
        back = dequantize_hm_q4(pack_hm_q4(q, d, 64), 16, 128, 64)
        errs[name] = float(np.mean((back - w)[:, heavy] ** 2))
    assert errs["weighted"] < errs["plain"], errs
    with pytest.raises(ValueError):
        quantize_hm_q4_codes(w, 64, importance=np.ones(5))


def test_native_fixture_bytes_match_the_packer():
    """native/tests/test_kernels.cpp (hm_q4_python_fixture) holds hex strings of this packer's
    output for w[r][c] = ((r * k + c) % 15 - 7) / 4, 4 x 64; they must stay what it writes."""
    import re
    from pathlib import Path

    src = (Path(__file__).resolve().parent.parent / "native" / "tests" / "test_kernels.cpp").read_text()
    calls = re.findall(r'check_python_fixture\((\d+), (\d+),[^"]*((?:"[0-9a-f]*"\s*)+)\);', src)
    assert {int(g) for g, _, _ in calls} == {32, 64}, calls
    for g, k, lits in calls:
        hexstr = "".join(re.findall(r'"([0-9a-f]*)"', lits))
        w = np.array([[((r * int(k) + c) % 15 - 7) / 4 for c in range(64)] for r in range(4)], dtype=np.float32)
        assert quantize_hm_q4(w, int(g), method="amax").hex() == hexstr, f"G{g}"


def test_the_rotation_is_the_normalized_sylvester_hadamard_per_128_block():
    """What the engine's hadamard_rows computes (the tiny-model engine tests check the native side
    against this): R[i][j] = (-1)^popcount(i & j) / sqrt(128) on each 128-block of columns."""
    i = np.arange(ROTATION_BLOCK)
    sign = np.array([[(-1.0) ** bin(a & b).count("1") for b in i] for a in i])
    rng = np.random.default_rng(7)
    w = rng.normal(size=(6, 256)).astype(np.float32)
    want = np.concatenate([w[:, :128] @ sign, w[:, 128:] @ sign], axis=1) / np.sqrt(128)
    got = rotate_columns(w)
    assert np.allclose(got, want, atol=1e-5)
    assert np.allclose(rotate_columns(got), w, atol=1e-5)  # its own inverse
    assert np.isclose(np.linalg.norm(got), np.linalg.norm(w), rtol=1e-5)  # orthonormal
    x = rng.normal(size=(50, 256))
    h = x.T @ x / len(x)
    xr = rotate_columns(x).astype(np.float64)
    assert np.allclose(rotate_moments(h), xr.T @ xr / len(x), atol=1e-5)
    with pytest.raises(ValueError, match="multiple of 128"):
        rotate_columns(np.zeros((4, 96), np.float32))


def test_rotation_rounds_a_matrix_with_outliers_more_closely():
    """The reason for storing W·R: a group whose extreme value sets the scale wastes the other codes;
    after rotation the group is evenly spread. Same 4 bits, same size."""
    rng = np.random.default_rng(8)
    w = rng.normal(size=(64, 256)).astype(np.float32)
    w[:, [5, 77, 200]] *= 12.0  # a few outlier input channels, as in transformer weights
    plain = dequantize_hm_q4(quantize_hm_q4(w, 128), 64, 256, 128)
    rot = rotate_columns(dequantize_hm_q4(quantize_hm_q4(rotate_columns(w), 128), 64, 256, 128))
    err = lambda a: float(np.linalg.norm(a - w))
    assert err(rot) < 0.7 * err(plain)
