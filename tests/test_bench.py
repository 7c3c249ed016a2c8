"""`hmbuild bench` on the real Gemma 3 270M: the figures a user reads are all there and sane (no
timing thresholds: the CI machine is shared), peak RSS stays within the project's target of model
file + KV cache + 64 MB, a sweep gives one run per thread count, and bad input is one sentence."""
import json
import subprocess

import pytest

from conftest import have_arm64_tools, run_hmbuild

SMALL = ["--prompt-tokens", "16", "--gen-tokens", "8", "--repeat", "1"]
REQUIRED = ["prefill_tps", "decode_tps", "ttft_ms", "ttft_warm_ms", "peak_rss_bytes", "bandwidth_fraction"]
MB = 1 << 20


@pytest.fixture(scope="module")
def project(demo_project):
    return demo_project


@pytest.fixture(scope="module")
def model():
    from hmbuild.model.catalog import fetch_model
    return fetch_model()


def bench(project, *args):
    return run_hmbuild("-C", str(project), "bench", *args)


def bench_json(project, *args):
    proc = bench(project, "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # stdout is exactly one JSON object


def check_run(run, model, threads):
    for key in REQUIRED:
        assert key in run, key
    assert run["threads"] == threads
    assert run["repeats"] == 1 and run["prompt_tokens"] == 16 and run["gen_tokens"] == 8
    assert run["prefill_tps"] > 0 and run["decode_tps"] > 0
    assert run["ttft_ms"] > 0 and run["ttft_warm_ms"] > 0
    assert run["kernels"]
    assert run["model_bytes"] == model.stat().st_size
    # Gemma 3 270M, 1 KV head of 256, 18 layers, f16, 2048 positions: 2 x 18 x 256 x 2 x 2048.
    assert run["kv_bytes"] == 2 * 18 * 256 * 2 * 2048
    # A decode step reads every matrix, the tied 262144 x 640 output (the Q8_0 embedding) included.
    assert 0.9 * run["model_bytes"] < run["decode_bytes_per_token"] < run["model_bytes"] + run["kv_bytes"]
    assert run["bandwidth_bytes_per_s"] > 0 and run["bandwidth_fraction"] > 0
    assert run["peak_rss_bytes"] >= 8 * MB


def check_rss_target(run):
    """The project's memory target: peak RSS <= model file + KV cache + 64 MB."""
    limit = run["model_bytes"] + run["kv_bytes"] + 64 * MB
    assert run["peak_rss_bytes"] <= limit, (
        f"peak RSS {run['peak_rss_bytes'] / MB:.1f} MB is over model {run['model_bytes'] / MB:.1f} MB + KV "
        f"{run['kv_bytes'] / MB:.1f} MB + 64 MB")


def test_one_run_reports_speed_ttft_memory_and_bandwidth(project, model):
    out = bench_json(project, "--threads", "2", *SMALL)
    assert out["ok"] is True and out["target"] == "host" and "runs" not in out
    check_run(out, model, 2)
    check_rss_target(out)
    assert out["kv"] == "f16" and out["ctx"] == 2048


def test_q8_0_kv_cache_is_about_half_the_bytes(project, model):
    out = bench_json(project, "--threads", "1", "--kv", "q8_0", *SMALL)
    assert out["kv"] == "q8_0" and out["kv_bytes"] == 18 * 2048 * 2 * (256 // 32) * 34
    check_rss_target(out)


def test_a_sweep_gives_one_run_per_thread_count_each_in_its_own_process(project, model):
    out = bench_json(project, "--threads-sweep", "1,2", *SMALL)
    assert out["ok"] is True and [r["threads"] for r in out["runs"]] == [1, 2]
    for run in out["runs"]:
        check_run(run, model, run["threads"])
        check_rss_target(run)


def test_text_output_is_a_table_with_a_row_per_thread_count(project):
    proc = bench(project, "--threads-sweep", "2,1", *SMALL)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(i for i, l in enumerate(lines) if l.lstrip().startswith("threads"))
    assert "prefill tok/s" in lines[header] and "TTFT warm ms" in lines[header] and "peak RSS MB" in lines[header]
    rows = [l.split() for l in lines[header + 2:header + 4]]
    assert [r[0] for r in rows] == ["2", "1"]
    assert "64 MB" in proc.stdout
    assert "hmbuild: bench" in proc.stderr  # progress, a line per step, on stderr


@pytest.mark.parametrize("args, words", [
    (["--threads", "0"], "--threads"),
    (["--threads-sweep", "1,,4"], "--threads-sweep"),
    (["--threads-sweep", "1,x"], "--threads-sweep"),
    (["--threads-sweep", "0,2"], "--threads-sweep"),
    (["--threads-sweep", "2,2"], "twice"),
    (["--threads", "2", "--threads-sweep", "1,2"], "not both"),
    (["--gen-tokens", "1"], "--gen-tokens"),
    (["--prompt-tokens", "2000", "--gen-tokens", "100"], "context"),
    (["--kv", "q4"], "--kv"),
    (["--model", "/nonexistent/model.gguf"], "does not exist"),
    (["--cpu", "max"], "--cpu"),
])
def test_bad_input_is_one_sentence_and_a_non_zero_exit(project, args, words):
    proc = run_hmbuild("-C", str(project), "bench", *args, env={"OHOS_NDK_HOME": "", "OHOS_SDK_NATIVE": ""})
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hmbuild: error: ") and words in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_bench_on_an_ohos_target_without_any_sdk_is_one_sentence(project, tmp_path):
    # No real SDK and an empty cache, so no stand-in either (with one, ohos-arm64 benches under qemu).
    env = {"OHOS_NDK_HOME": "", "OHOS_SDK_NATIVE": "", "HMBUILD_CACHE": str(tmp_path / "cache")}
    proc = run_hmbuild("-C", str(project), "bench", "--target", "ohos-arm64", env=env)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hmbuild: error: ") and "ohos-arm64" in lines[0], proc.stderr


def test_bad_input_with_json_still_prints_one_json_object(project):
    proc = bench(project, "--json", "--threads-sweep", "1,,2")
    assert proc.returncode != 0
    assert json.loads(proc.stdout)["ok"] is False


def test_the_native_tool_exits_2_on_bad_arguments_and_1_on_a_bad_model(project, model, tmp_path):
    bench_json(project, "--threads", "1", *SMALL)  # builds the tool
    tool = project / "build" / "host-release" / "hmllm" / "hmllm_bench"
    for args in (["--model", str(model), "--gen-tokens", "1"], ["--model", str(model), "--bogus", "1"], []):
        proc = subprocess.run([str(tool), *args], capture_output=True, text=True)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 60)
    for path in (bad, tmp_path / "missing.gguf"):
        proc = subprocess.run([str(tool), "--model", str(path), "--json"], capture_output=True, text=True)
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert json.loads(proc.stdout)["ok"] is False


@pytest.mark.qemu
@pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user (see README)")
def test_linux_arm64_bench_runs_under_qemu(project, model):
    out = bench_json(project, "--target", "linux-arm64", "--cpu", "cortex-a76", "--threads", "2", *SMALL)
    assert out["target"] == "linux-arm64" and out["cpu"] == "cortex-a76"
    check_run(out, model, 2)
    assert out["kernels"] == "neon-dotprod"
