"""The native suites under ThreadSanitizer (the NAPI suite is skipped, and says why)."""
import json

import pytest

from conftest import run_hmbuild
from test_e2e import native_cases


@pytest.fixture(scope="module")
def project(demo_project):
    return demo_project


@pytest.mark.sanitizer
def test_thread_sanitizer_runs_the_native_suites_and_says_the_napi_suite_is_skipped(project):
    proc = run_hmbuild("-C", str(project), "test", "--target", "host", "--sanitize", "thread", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["failed"] == 0 and native_cases(report)["passed"] >= 100
    assert not any(s["name"].startswith("napi") for s in report["suites"])
    assert [s["suite"] for s in report["skipped"]] == ["napi"]
    assert "ThreadSanitizer" in report["skipped"][0]["reason"]
