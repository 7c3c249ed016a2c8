"""The soak tier (`pytest -m soak`; not in CI, which cannot afford it): what the reliability goals
ask for over hours of use, in minutes.

- 10,000 requests through one session's NAPI queue (the project's stress test, 200 rounds of 50
  mixed calls: infer, timeouts, classify, warm-up, cancel, bad arguments; release and re-init
  every 5 rounds) with RSS sampled each round: every promise settles, BUSY only past the bound,
  and RSS after warm-up stays on its plateau. HMBUILD_SOAK_ROUNDS changes the rounds.
- Each libFuzzer target for HMBUILD_SOAK_FUZZ_SECONDS seconds (default 600): no crash, hang,
  sanitizer report or broken property; a crashing input is saved and named.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

pytestmark = pytest.mark.soak

ROUNDS = int(os.environ.get("HMBUILD_SOAK_ROUNDS", "200"))  # 50 calls a round
FUZZ_SECONDS = int(os.environ.get("HMBUILD_SOAK_FUZZ_SECONDS", "600"))


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_ten_thousand_requests_through_the_napi_queue_keep_rss_flat(host_project):
    from hmbuild.model.catalog import fetch_model

    env = dict(os.environ, HMBUILD_LIBRARY=str(host_project / "build/host-release/libdemo.so"),
               HMBUILD_TEST_MODEL=str(fetch_model()), HMBUILD_TARGET="host", HMBUILD_STRESS_ROUNDS=str(ROUNDS))
    proc = subprocess.run(["node", "--test-reporter=tap", "tests/napi/stress.test.mjs"], cwd=host_project, env=env,
                          capture_output=True, text=True, timeout=6 * 3600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert re.search(r"^# pass 1$", proc.stdout, re.M), proc.stdout[-2000:]
    rss = re.search(r"rss MB ([\d ]+)", proc.stdout)
    assert rss and len(rss.group(1).split()) == ROUNDS, proc.stdout[-2000:]  # one sample a round
    print(f"{ROUNDS * 50} calls; RSS MB per round: {rss.group(1)}")


def test_each_fuzz_target_runs_for_the_soak_time_without_a_crash(tmp_path):
    script = REPO / "scripts" / "fuzz.py"
    proc = subprocess.run([sys.executable, str(script), "--seconds", str(FUZZ_SECONDS), "--json", "--jobs", "2"],
                          capture_output=True, text=True, timeout=FUZZ_SECONDS * 10 + 1800)
    report = json.loads(proc.stdout)
    if report.get("error") and "libFuzzer" in str(report["error"]):
        pytest.skip(report["error"])
    crashed = [f"{t['target']}: {t['crash']} (input: {t['crash_input']})" for t in report["targets"] if not t["ok"]]
    assert not crashed and proc.returncode == 0, "\n".join(crashed) + proc.stderr[-4000:]
