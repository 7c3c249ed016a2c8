"""The Python GGUF type table (hmbuild/model/ggml_types.py): built on the gguf package, with
hmbuild's INT4 types added, and in agreement with the C++ table (native/src/ggml_types.cpp)."""
import re

import gguf

from conftest import REPO
from hmbuild.model import ggml_types as T


def test_the_named_ids_are_ggufs_own():
    for name in ("F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
                 "IQ4_NL", "IQ4_XS"):
        assert getattr(T, name) == gguf.GGMLQuantizationType[name].value, name


def test_sizes_come_from_gguf_and_the_int4_types_are_added():
    assert T.block(T.Q8_0) == gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0] == (32, 34)
    assert T.block(T.Q4_K) == (256, 144) and T.bits_per_weight(T.Q6_K) == 6.5625
    assert [T.block(T.HM_Q4[g]) for g in (32, 64, 128)] == [(32, 18), (64, 34), (128, 66)]
    assert T.nbytes(T.HM_Q4[128], 4, 256) == 4 * 2 * 66 and T.fits(T.Q8_0, 640) and not T.fits(T.Q8_0, 100)
    assert [T.type_name(t) for t in (T.Q4_K, 1064, 999)] == ["Q4_K", "HM_Q4_G64", "type 999"]
    T.register_with_gguf()
    assert gguf.GGMLQuantizationType(1128).name == "HM_Q4_G128"
    assert gguf.GGML_QUANT_SIZES[1032] == (32, 18)


def test_the_python_and_cpp_tables_agree():
    """Every row of the C++ table (id, name, block size, bytes per block) is the Python table's,
    and the types the engine runs are exactly the C++ rows that have a dot kernel."""
    src = (REPO / "native/src/ggml_types.cpp").read_text()
    header = (REPO / "native/include/hmllm/ggml_types.h").read_text()
    ids = {name: int(v) for name, v in re.findall(r"^\s*(\w+) = (\d+),", header, re.M)}
    rows = re.findall(r'\{GgmlType::(\w+),\s*"(\w+)",\s*(\d+),\s*([\d +]+),\s*\d+,\s*\w+(?:<\d+>)?,'
                      r'\s*[\w:]+,\s*([\w:-]+)\}', src)
    assert len(rows) == 20, f"the C++ table's rows were not all found: {rows}"
    with_kernel = {ids[enum] for enum, *_, kernel in rows if kernel != "-1"}
    assert T.ENGINE_TYPES == with_kernel
    for enum, name, block, size, kernel in rows:
        type_id = ids[enum]
        assert T.type_name(type_id).lower() == name.lower() == enum.lower(), (enum, name)
        cpp = (int(block), sum(map(int, size.split("+"))))
        if enum == "Q8_1":
            # ggml's block_q8_1 is 36 bytes (fp16 d and s); gguf-py still says 4 + 4 + 32 = 40. It
            # is an activation format, never a tensor in a file; the C++ table follows ggml.
            assert cpp == (32, 36) and T.block(type_id) == (32, 40)
            continue
        assert T.block(type_id) == cpp, name


def test_the_native_dequantize_fixture_is_gguf_pys():
    """native/tests/data/gguf_dequant.bin, which the native kernel test holds every type's to_float
    to bit for bit, is what the installed gguf package's gguf.quants.dequantize gives on its blocks."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "record_dequant_reference.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_dequantize_fixture_covers_every_engine_type_and_reads_back():
    """Each GGUF type the engine runs (all but F32 and hmbuild's own INT4) has blocks in the fixture,
    and its values are gguf-py's dequantization of those blocks."""
    import struct

    import numpy as np

    data = (REPO / "native/tests/data/gguf_dequant.bin").read_bytes()
    assert data[:4] == b"HMDQ"
    _, count = struct.unpack_from("<II", data, 4)
    off, seen = 12, set()
    for _ in range(count):
        type_id, n, nbytes = struct.unpack_from("<III", data, off)
        off += 12
        raw = np.frombuffer(data, np.uint8, nbytes, off)
        values = np.frombuffer(data, "<f4", n, off + nbytes)
        want = gguf.quants.dequantize(raw.reshape(1, -1), gguf.GGMLQuantizationType(type_id)).reshape(-1)
        assert np.array_equal(values.view(np.uint32), want.astype(np.float32).view(np.uint32)), T.type_name(type_id)
        seen.add(type_id)
        off += nbytes + 4 * n
    assert off == len(data)
    assert seen == T.ENGINE_TYPES - {T.F32, *T.HM_Q4.values()}
def write_to_float_cases(path, seed=29):
    """A GGUF file with, for every ggml type the engine runs, tensor w.<type> (8 x 512) and gguf-py's
    dequantization of it as ref.<type> (F32): rows quantized by gguf-py where it can quantize the
    type (realistic scales), and raw random bytes everywhere else and in a second tensor of each
    type (every bit pattern of scales and quants, NaN and inf included). Returns the type names."""
    import numpy as np
    from gguf import GGMLQuantizationType as Q, GGUFWriter, quants

    rng = np.random.default_rng(seed)
    writer = GGUFWriter(str(path), "llama")
    names = []
    for type_id in sorted(T.ENGINE_TYPES - set(T.HM_Q4.values())):
        qtype = Q(type_id)
        block, size = T.block(type_id)
        rows, cols = 8, 512
        tensors = {}
        try:
            tensors[qtype.name] = quants.quantize(rng.standard_normal((rows, cols), dtype=np.float32), qtype)
        except NotImplementedError:
            pass
        raw = rng.integers(0, 256, (rows, cols // block * size), dtype=np.uint8)
        tensors[qtype.name + "_bytes"] = raw.view(np.float32) if qtype == Q.F32 else raw
        for name, data in tensors.items():
            data = np.ascontiguousarray(data)
            with np.errstate(invalid="ignore", over="ignore"):  # random fp16 scales: inf * 0
                ref = quants.dequantize(data.view(np.uint8) if qtype != Q.F32 else data,
                                        qtype).astype(np.float32)
            if qtype == Q.F32:
                writer.add_tensor("w." + name, data)
            else:  # bytes: gguf-py takes the shape from the byte count per row
                writer.add_tensor("w." + name, data.view(np.uint8), raw_dtype=qtype)
            writer.add_tensor("ref." + name, ref.reshape(rows, cols))
            names.append(name)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return names


def test_to_float_equals_gguf_py_dequantize(host_project, tmp_path):
    """The engine's to_float (the embedding lookup's dequantization) of every type it runs gives
    gguf-py's dequantize bit for bit: the native type-table test reads the file written here."""
    import os
    import subprocess

    cases = tmp_path / "to_float.gguf"
    names = write_to_float_cases(cases)
    assert {"Q4_1", "Q5_1", "Q4_1_bytes", "Q5_1_bytes", "Q6_K_bytes"} <= set(names)
    binary = host_project / "build" / "host-release" / "hmllm" / "hmllm_test_ggml_types"
    proc = subprocess.run([str(binary), "to_float_matches_a_reference_file"], capture_output=True, text=True,
                          env=dict(os.environ, HMLLM_TO_FLOAT_FILE=str(cases)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in names:
        assert f"# w.{name}: 8 x 512 values equal" in proc.stdout, proc.stdout
