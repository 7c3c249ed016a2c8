"""The host suites under ASan and UBSan (one build), a planted overflow that must fail the run, and
the refusals of --sanitize. ThreadSanitizer is tests/test_sanitizer_thread.py: a file of its own, so
the two instrumented builds run in parallel workers."""
import json

import pytest

from conftest import run_hmbuild


@pytest.fixture(scope="module")
def project(demo_project):
    return demo_project


@pytest.mark.sanitizer
@pytest.mark.parametrize("sanitizer", ["address,undefined"])
def test_host_suites_pass_under_a_sanitizer(project, sanitizer):
    """The same native and NAPI suites with ASan and UBSan in one build (the runtime preloaded into
    Node), in its own build folder; any report fails the run. (address and undefined alone are the
    same flags apart; one instrumented build instead of two keeps CI in budget.)"""
    proc = run_hmbuild("-C", str(project), "test", "--target", "host", "--sanitize", sanitizer, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["sanitize"] == sanitizer and report["skipped"] == []
    assert report["failed"] == 0 and report["passed"] >= 100
    assert any(s["name"].startswith("napi") and s["passed"] > 0 for s in report["suites"])
    assert (project / "build" / f"host-release-{sanitizer.replace(',', '-')}" / "libdemo.so").is_file()


@pytest.mark.sanitizer
def test_a_sanitizer_report_fails_the_run(project):
    """A native test with a heap overflow passes without ASan (the read lands in the allocator's
    padding) but fails under it; the project's address,undefined build is reused, the file removed after.
    Only it and one clean test run: the whole suite under ASan is the test above."""
    bad = project / "src/main/cpp/hmllm/tests/test_overflow.cpp"
    bad.write_text(
        '#include <vector>\n#include "test_main.h"\n'
        "TEST_CASE(reads_one_past_the_end) {\n"
        "    auto* v = new std::vector<int>(4, 1);\n"
        "    volatile int* p = v->data();\n"
        "    CHECK(p[4] != 12345);\n"
        "    delete v;\n}\n")
    try:
        proc = run_hmbuild("-C", str(project), "test", "--target", "host", "--sanitize", "address,undefined",
                           "--json", "--only", "overflow,cpu_topology")
    finally:
        bad.unlink()
    assert proc.returncode == 1, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["ok"] is False
    failures = [f for s in report["suites"] for f in s["failures"]]
    assert any("hmllm.overflow" in f for f in failures) and not any("cpu_topology" in f for f in failures)
    assert "heap-buffer-overflow" in proc.stderr


def test_sanitize_needs_one_of_the_known_sanitizers(project):
    proc = run_hmbuild("-C", str(project), "test", "--target", "host", "--sanitize", "memory")
    assert proc.returncode != 0 and "memory" in proc.stderr and "Traceback" not in proc.stderr


def test_sanitize_is_refused_for_cross_targets(project):
    proc = run_hmbuild("-C", str(project), "test", "--target", "linux-arm64", "--sanitize", "address")
    assert proc.returncode != 0 and "host target only" in proc.stderr and "Traceback" not in proc.stderr
