"""`hmbuild bench --count`: aarch64 instructions and bytes per token under qemu with hmbuild's TCG
plugin. The plugin's decoded load/store sizes agree with what qemu's own memory callbacks see, the
counts repeat exactly, blocks are attributed to the right ELF symbols, and the CI guard holds the
recorded instructions per token of the test model on cortex-a76 (re-record with the command in
BASELINE_COMMAND when a change is meant to move them)."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, have_arm64_tools, run_hmbuild

BASELINE = REPO / "tests" / "fixtures" / "insn_counts" / "gemma3-270m-cortex-a76.json"
BASELINE_COMMAND = (f"hmbuild -C PROJECT bench --target linux-arm64 --cpu cortex-a76 --count "
                    f"--save-baseline {BASELINE.relative_to(REPO)}")
needs_arm64 = pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user (see README)")


@pytest.fixture(scope="module")
def arm64_project(demo_project):
    run_hmbuild("-C", str(demo_project), "build", "--target", "linux-arm64", check=True,
                env={"CMAKE_BUILD_PARALLEL_LEVEL": "2"})
    return demo_project


@pytest.fixture(scope="module")
def model():
    from hmbuild.model.catalog import fetch_model
    return fetch_model()


def hmllm_run(project: Path) -> Path:
    return project / "build" / "linux-arm64-release" / "hmllm" / "hmllm_run"


def runner(cpu="cortex-a76"):
    from hmbuild.targets.target import resolve_target
    t = resolve_target("linux-arm64")
    return (t.runner[0], "-cpu", cpu, *t.runner[1:])


@pytest.mark.qemu
@needs_arm64
def test_decoded_load_and_store_bytes_equal_what_qemu_sees(arm64_project, model):
    from hmbuild.build.insn_count import counted_run
    argv = [str(hmllm_run(arm64_project)), "--model", str(model), "--tokens", "2,818,2255,70", "--max-tokens", "2",
            "--threads", "1", "--ctx", "64", "--json"]
    counts, _ = counted_run(runner(), argv, exact=True)
    total = counts.total
    assert total.instructions > 100_000_000 and total.loaded > 100_000_000
    # Within 0.01% (measured: 7 KB in 1.28 GB loaded, from accesses qemu makes in helpers). The exact
    # stores include DC ZVA, memset's 64-byte zeroing (5.9 MB here, the KV cache's), counted by an
    # execution callback: it runs in a qemu helper that memory callbacks do not see.
    assert abs(counts.exact_loaded - total.loaded) <= total.loaded * 1e-4
    assert abs(counts.exact_stored - total.stored) <= total.stored * 1e-4


@pytest.mark.qemu
@needs_arm64
def test_counts_repeat_and_name_the_kernels(arm64_project, model):
    from hmbuild.build.insn_count import counted_run
    argv = [str(hmllm_run(arm64_project)), "--model", str(model), "--tokens", "2,818,2255,70", "--max-tokens", "2",
            "--threads", "1", "--ctx", "64", "--json"]
    a, _ = counted_run(runner(), argv)
    b, _ = counted_run(runner(), argv)
    assert abs(a.total.instructions - b.total.instructions) <= a.total.instructions * 0.001
    names = " ".join(a.functions)
    # cortex-a76 (dotprod): the Q8_0 embedding / output and the Q5_0 matrices are interleaved at load.
    for kernel in ("matmul_x4<hmllm::kern::X4Q8>", "matmul_x4<hmllm::kern::X4Q5>", "Q4KRow", "Q6KRow",
                   "Engine::attention", "argmax"):
        assert kernel in names, kernel


def test_blocks_are_attributed_to_the_elf_symbol_that_holds_them():
    from elftools.elf.elffile import ELFFile
    from hmbuild.build.insn_count import parse_counts, plugin_path
    so = plugin_path()
    with open(so, "rb") as fh:
        elf = ELFFile(fh)
        sym = next(s for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name == "qemu_plugin_install")
        seg = next(s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD" and
                   s["p_vaddr"] <= sym["st_value"] < s["p_vaddr"] + s["p_memsz"])
    offset = sym["st_value"] - seg["p_vaddr"] + seg["p_offset"]
    base = 0x7f0000000000
    text = "\n".join([
        "# insn_count 1",
        f"tb {offset + 4:x} {base + offset + 4:x} 10 8 4 3 0 0",   # inside qemu_plugin_install, 3 executions
        f"tb 10 {0x1000:x} 5 0 0 2 16 0",                           # outside any mapping
        "maps",
        f"{base:x}-{base + 0x100000:x} r-xp 00000000 fe:00 1 {so}",
        "end"])
    counts = parse_counts(text)
    assert counts.functions["qemu_plugin_install"].instructions == 30
    assert counts.functions["qemu_plugin_install"].loaded == 24 and counts.functions["qemu_plugin_install"].stored == 12
    assert counts.functions["[unknown]"].instructions == 10 and counts.functions["[unknown]"].loaded == 16


def test_a_qemu_without_plugins_is_one_sentence(tmp_path):
    from hmbuild.build.insn_count import check_plugins
    from hmbuild.errors import HmbuildError
    fake = tmp_path / "qemu-aarch64"
    fake.write_text("#!/bin/sh\necho 'usage: qemu-aarch64 [options] program [arguments...]'\n")
    fake.chmod(0o755)
    with pytest.raises(HmbuildError) as err:
        check_plugins(str(fake))
    assert "cannot load TCG plugins" in str(err.value) and "apt-get install" in str(err.value)


def test_the_guard_fails_past_two_percent_and_names_what_moved():
    from hmbuild.build.insn_count import FunctionCounts
    from hmbuild.model.insn_bench import CountReport, EngineCount, Phase, baseline_json, compare_baseline
    def report(q5):
        fns = {"dot4_q5_0": FunctionCounts(q5, 0, 0), "dot4_q8_0": FunctionCounts(80_000_000, 0, 0)}
        h = EngineCount("hmllm", Phase(63, {k: FunctionCounts(v.instructions * 63, 0, 0) for k, v in fns.items()}),
                        Phase(16, {k: FunctionCounts(v.instructions * 16, 0, 0) for k, v in fns.items()}))
        return CountReport("linux-arm64", "cortex-a76", Path("m.gguf"), 64, 16, h)
    base = baseline_json(report(60_000_000))
    ok, lines = compare_baseline(report(61_000_000), base)  # +1M of 140M: within 2%
    assert ok and len(lines) == 2
    ok, lines = compare_baseline(report(64_000_000), base)  # +4M: 2.9% over
    assert not ok
    assert any("OVER" in l for l in lines) and any("dot4_q5_0" in l and "+4.000" in l for l in lines)


def test_count_refuses_a_native_target_and_stray_flags(demo_project):
    proc = run_hmbuild("-C", str(demo_project), "bench", "--baseline", "x.json")
    assert proc.returncode == 2 and "go with --count" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_hmbuild("-C", str(demo_project), "bench", "--count", "--baseline", str(demo_project / "none.json"))
    assert proc.returncode != 0 and "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_hmbuild("-C", str(demo_project), "bench", "--llama-cpp-model", "x.gguf")
    assert proc.returncode == 2 and "goes with --vs-llama-cpp" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.qemu
@needs_arm64
def test_vs_llama_cpp_on_an_int4_file_asks_for_its_source_before_counting(arm64_project, tmp_path):
    """llama.cpp cannot read hmbuild's INT4 types: one sentence naming --llama-cpp-model, at once."""
    from tiny_models import HM_Q4_G32, family_config, write_tiny_model
    model = tmp_path / "tiny-int4.gguf"
    write_tiny_model(model, family_config("llama", HM_Q4_G32))
    proc = run_hmbuild("-C", str(arm64_project), "bench", "--target", "linux-arm64", "--count", "--vs-llama-cpp",
                       "--model", str(model))
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("hmbuild: error: ") and "--llama-cpp-model" in lines[-1], proc.stderr
    assert "counting run" not in proc.stderr  # refused before any counting
    proc = run_hmbuild("-C", str(arm64_project), "bench", "--target", "linux-arm64", "--count", "--vs-llama-cpp",
                       "--model", str(model), "--llama-cpp-model", str(tmp_path / "missing.gguf"))
    assert proc.returncode != 0 and "missing.gguf does not exist" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.qemu
@needs_arm64
def test_ci_guard_instructions_per_token_stay_within_two_percent_of_the_baseline(arm64_project, model):
    """The recorded counts of the test model on cortex-a76: a change that makes a kernel do more work fails
    here with the functions that moved. Re-record (intended changes) with BASELINE_COMMAND."""
    proc = run_hmbuild("-C", str(arm64_project), "bench", "--target", "linux-arm64", "--count",
                       "--baseline", str(BASELINE), "--json")
    out = json.loads(proc.stdout)
    assert proc.returncode == 0, "\n".join(out.get("baseline", {}).get("lines", [])) + "\n" + proc.stderr + \
        f"\nre-record with: {BASELINE_COMMAND}"
    assert out["baseline"]["within"] is True
    assert out["hmllm"]["kernels"] == "neon-dotprod"
