"""Smoke run of the libFuzzer targets (scripts/fuzz.py, native/fuzz/): each target is built with
clang++-19 -fsanitize=fuzzer,address,undefined, replays its seed corpus and every regression input
(inputs that once crashed the runtime), then fuzzes for a few seconds. A crash, sanitizer report,
broken property, hang or out-of-memory input fails the test and names the saved input."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "fuzz.py"
SECONDS = 4  # per target; the build (cached after the first run) takes most of the time


def _load_script():
    spec = importlib.util.spec_from_file_location("hmbuild_fuzz_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while building the class
    spec.loader.exec_module(module)
    return module


fuzz = _load_script()


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    problem = fuzz.toolchain_problem()
    if problem:
        pytest.skip(f"libFuzzer is not available: {problem}")
    # The cache (compiled objects, working corpus) is shared with scripts/fuzz.py runs; fuzzing
    # from a grown corpus only makes the smoke run stronger.
    r = subprocess.run([sys.executable, str(SCRIPT), "--seconds", str(SECONDS), "--json", "--jobs", "2"],
                       capture_output=True, text=True, timeout=600)
    assert r.stdout.strip(), f"fuzz.py printed no JSON; stderr:\n{r.stderr[-4000:]}"
    report = json.loads(r.stdout)
    assert report.get("error") is None, report["error"]  # e.g. a harness that does not compile
    return r.returncode, report, r.stderr


def test_every_target_runs_without_a_crash(smoke):
    code, report, stderr = smoke
    crashed = [f"{t['target']}: {t['crash']} (input: {t['crash_input']})"
               for t in report["targets"] if not t["ok"]]
    assert not crashed, "\n".join(crashed) + "\n" + stderr[-4000:]
    assert code == 0
    assert sorted(t["target"] for t in report["targets"]) == sorted(fuzz.TARGETS)


def test_each_target_executes_inputs_and_reaches_code(smoke):
    _, report, _ = smoke
    for t in report["targets"]:
        # A harness that returned early on every input would show a handful of executions and
        # almost no coverage; a few seconds give thousands of runs even under sanitizers.
        assert t["executions"] > 500, t
        assert t["coverage"] > 20 and t["features"] > t["coverage"] / 2, t


def test_seeds_and_regression_inputs_are_replayed(smoke):
    _, report, _ = smoke
    by_name = {t["target"]: t for t in report["targets"]}
    for name in fuzz.TARGETS:
        seeds = fuzz._inputs(fuzz.CORPUS_DIR / name)
        regressions = fuzz._inputs(fuzz.REGRESSIONS_DIR / name)
        assert seeds, f"native/fuzz/corpus/{name} has no seeds"
        assert by_name[name]["replayed"] == len(seeds) + len(regressions)


def test_a_crashing_input_fails_the_run_and_is_reported(tmp_path, monkeypatch):
    """The failure path users rely on: a target that aborts makes fuzz.py exit 1 and name it."""
    if fuzz.toolchain_problem():
        pytest.skip("libFuzzer is not available")
    target = fuzz.Target("text_input", ["src/text_input.cpp"], 64)
    harness = tmp_path / "fuzz_text_input.cpp"
    # Aborts on any input containing "!", which the fuzzer finds within moments from the seeds.
    harness.write_text('#include <cstdint>\n#include <cstddef>\n#include <cstdlib>\n'
                       'extern "C" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t n) {\n'
                       '  for (size_t i = 0; i < n; ++i) if (d[i] == 33) std::abort();\n  return 0;\n}\n')
    monkeypatch.setattr(fuzz, "FUZZ_DIR", tmp_path)
    monkeypatch.setattr(fuzz, "CORPUS_DIR", tmp_path / "corpus")
    monkeypatch.setattr(fuzz, "REGRESSIONS_DIR", tmp_path / "regressions")
    (tmp_path / "corpus" / "text_input").mkdir(parents=True)
    (tmp_path / "corpus" / "text_input" / "seed").write_bytes(b"hello!")
    cache = tmp_path / "cache"
    binary = fuzz.build([target], cache, 2)["text_input"]
    result = fuzz.Result("text_input")
    fuzz.replay(binary, target, result, cache)
    assert not result.ok
    assert "deadly signal" in result.crash or "abort" in result.crash.lower()
    assert result.crash_input and result.crash_input.endswith("seed")
