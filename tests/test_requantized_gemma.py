"""The file types phones download, made from the Gemma 3 270M test model by llama.cpp's own quantizer
(Q5_K_M, Q3_K_M, IQ4_XS, Q2_K: K-quants, IQ4_NL / IQ4_XS and their fallbacks), follow llama.cpp's
greedy tokens (tests/fixtures/llama_cpp/gemma3_requant_greedy.json, recorded by
scripts/record_llama_requant_reference.py), on the host and under qemu.

The files are made once per machine with the llama-cpp-python venv that recorded the fixture
(HMBUILD_LLAMA_REF_PYTHON, default ~/.cache/hmbuild/llama-ref-venv/bin/python) and cached in
~/.cache/hmbuild/models/requant; their SHA-256 must be the fixture's, so the tokens compared are
the ones llama.cpp gave on the same bytes. Without that venv the tests skip.
"""
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, have_arm64_tools, run_hmbuild
from hmbuild.model import ggml_types as T

FIXTURE = json.loads((REPO / "tests/fixtures/llama_cpp/gemma3_requant_greedy.json").read_text())
FILES = {f["file_type"]: f for f in FIXTURE["files"]}
CACHE = Path.home() / ".cache" / "hmbuild" / "models" / "requant"
LLAMA_PY = Path(os.environ.get("HMBUILD_LLAMA_REF_PYTHON",
                               Path.home() / ".cache" / "hmbuild" / "llama-ref-venv" / "bin" / "python"))

# Per file type; the engine's outputs are the same bits on every kernel set, so these hold on any
# machine. Measured (x86_64 host, against llama.cpp 0.3.36; Q5_K_M, Q3_K_M and IQ4_XS with Q5_1
# kernels merged in): flips, largest near-tie, logit difference mean / max
#   Q5_K_M 6, 0.19, 0.24 / 0.79;  Q3_K_M 9, 0.37, 0.21 / 0.73;  IQ4_XS 5, 0.29, 0.22 / 0.94;
#   Q2_K 8, 0.48, 0.29 / 1.40.  The Q4_K_M source itself: 3, 0.40, 0.22 / 0.93.
#   near_tie   where the engine's greedy pick differs from llama.cpp's, llama.cpp's token must be
#              within this many logits of the engine's best (a near-tie the 8-bit activations of
#              both engines may break either way), and then the run resumes on llama.cpp's path;
#   flips      at most this many such steps over the 6 x 16 steps;
#   mean, max  |engine logit - llama.cpp logit| of llama.cpp's token on the steps the two share.
TOLERANCE = {
    "Q5_K_M": {"near_tie": 0.4, "flips": 10, "mean": 0.3, "max": 1.0},
    "Q3_K_M": {"near_tie": 0.5, "flips": 12, "mean": 0.3, "max": 1.0},
    "IQ4_XS": {"near_tie": 0.4, "flips": 10, "mean": 0.3, "max": 1.2},
    "Q2_K": {"near_tie": 0.6, "flips": 12, "mean": 0.35, "max": 1.8},
}


@pytest.fixture(scope="module")
def project(host_project):
    return host_project


def sha256_of(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def requantized(ftype: str) -> Path:
    """The cached file of this type, made with llama.cpp's quantizer if missing; skips when it cannot
    be made here or holds a type this runtime does not compute."""
    info = FILES[ftype]
    path = CACHE / info["file"]
    if not path.is_file():
        if not LLAMA_PY.is_file():
            pytest.skip(f"{path} is not cached and making it needs llama-cpp-python ({LLAMA_PY} is missing)")
        from hmbuild.model.catalog import fetch_model

        fetch_model()  # the source model, into the model cache
        proc = subprocess.run([str(LLAMA_PY), str(REPO / "scripts" / "record_llama_requant_reference.py"),
                               "--make-only", ftype], capture_output=True, text=True)
        assert proc.returncode == 0 and path.is_file(), proc.stderr[-2000:]
    assert sha256_of(path) == info["sha256"], (
        f"{path} is not the file llama.cpp's tokens were recorded on; delete it to have it made again")
    missing = sorted(t for t in info["tensor_types"] if getattr(T, t) not in T.ENGINE_TYPES)
    if missing:
        pytest.skip(f"{ftype} holds {', '.join(missing)} tensors, which this runtime does not compute yet")
    return path


def run_json(project, *args):
    proc = run_hmbuild("-C", str(project), "run", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.quality
@pytest.mark.parametrize("ftype", list(FILES))
def test_llama_cpp_requantized_gemma_follows_llama_cpp_greedy_tokens(project, ftype, tmp_path):
    """Greedy decoding from llama.cpp's path: each step's pick is llama.cpp's, or a near-tie with it
    after which the run goes on from llama.cpp's token; the logit of llama.cpp's token is close to
    llama.cpp's own wherever the two share the context."""
    path, tol = requantized(ftype), TOLERANCE[ftype]
    logits_file = tmp_path / "logits.bin"
    flips, diffs = [], []
    for run in FILES[ftype]["runs"]:
        ref, k = run["generated_ids"], 0
        while k < len(ref):
            out = run_json(project, "--model", str(path), "--tokens", ",".join(map(str, run["prompt_ids"] + ref[:k])),
                           "--max-tokens", str(len(ref) - k), "--ctx", "512", "--threads", "2",
                           "--logits-out", str(logits_file))
            got = out["tokens"]
            logits = np.fromfile(logits_file, dtype=np.float32).reshape(len(got), -1)
            j = next((i for i, (a, b) in enumerate(zip(got, ref[k:])) if a != b), None)
            for i in range(len(got) if j is None else j + 1):  # the steps whose context is llama.cpp's
                diffs.append(abs(float(logits[i][ref[k + i]]) - run["generated_logits"][k + i]))
            if j is None:
                assert len(got) == len(ref) - k
                break
            row, step = logits[j], k + j
            gap = float(row.max() - row[ref[step]])
            assert gap <= tol["near_tie"], (
                f"{ftype} {run['prompt']!r} step {step}: llama.cpp's token {ref[step]} is {gap:.2f} below the "
                f"engine's pick {got[j]}")
            flips.append((run["prompt"][:20], step, round(gap, 3)))
            k = step + 1
    assert len(flips) <= tol["flips"], flips
    assert float(np.mean(diffs)) <= tol["mean"] and max(diffs) <= tol["max"], (np.mean(diffs), max(diffs))


@pytest.mark.quality
@pytest.mark.qemu
@pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user")
@pytest.mark.parametrize("cpu", ["cortex-a53", "max"])
@pytest.mark.parametrize("ftype", list(FILES))
def test_llama_cpp_requantized_gemma_gives_the_host_tokens_on_linux_arm64(project, ftype, cpu):
    """Every kernel set gives the scalar reference's bits, so aarch64 picks the host's tokens."""
    path = requantized(ftype)
    tokens = ",".join(map(str, FILES[ftype]["runs"][0]["prompt_ids"]))
    args = ["--model", str(path), "--tokens", tokens, "--max-tokens", "8", "--threads", "2"]
    host = run_json(project, *args)
    arm = run_json(project, *args, "--target", "linux-arm64", "--cpu", cpu)
    assert arm["tokens"] == host["tokens"]
    assert arm["kernels"] == {"cortex-a53": "neon", "max": "neon-i8mm"}[cpu]
