"""Parsing test results from structured output only (TAP, JUnit), whatever qemu prints."""
import pytest

from hmbuild.build.runners import parse_junit, parse_tap

TAP = """TAP version 13
# Subtest: loads
ok 1 - loads
  ---
  duration_ms: 1.0
  ...
# Subtest: fails
not ok 2 - fails
  ---
  error: 'x'
  ...
# Subtest: parent
    # Subtest: child
    not ok 1 - child
ok 3 - parent
ok 4 - skipped one # SKIP not here
1..4
# pass 2
# fail 1
"""


def test_tap_counts_top_level_results_and_names_failures():
    r = parse_tap("napi x", TAP, 1)
    assert (r.passed, r.failed) == (2, 1)
    assert r.failures == ["fails"]


def test_a_crashed_node_process_counts_as_a_failure():
    r = parse_tap("napi x", "TAP version 13\nok 1 - first\n", -11)
    assert (r.passed, r.failed) == (1, 1)
    assert "crashed with SIGSEGV (signal 11)" in r.failures[0]


def test_a_crashed_hmllm_run_is_named_by_its_signal(tmp_path, monkeypatch):
    """`hmbuild run` on a tool that aborts says which signal ended it, not 'exit status -6'."""
    import types

    from hmbuild.build import runners
    from hmbuild.errors import HmbuildError

    tool = tmp_path / "hmllm" / "hmllm_run"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nkill -ABRT $$\n")
    tool.chmod(0o755)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    target = types.SimpleNamespace(name="host", runner=(), can_run_tests=True)
    monkeypatch.setattr(runners, "ensure_runnable", lambda t: None)
    monkeypatch.setattr(runners, "check_cpu", lambda t, c: None)
    monkeypatch.setattr(runners, "_test_env", lambda t, m, c: None)
    build = types.SimpleNamespace(build_dir=tmp_path)
    with pytest.raises(HmbuildError, match=r"crashed with SIGABRT \(signal 6\)"):
        runners.run_model(None, target, build, model, runners.RunOptions(prompt="x"), None, True)


def test_junit_from_ctest(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text("""<?xml version="1.0"?>
<testsuite name="x" tests="3" failures="1">
  <testcase name="a" status="run"/>
  <testcase name="b" status="fail"><failure message="boom"/></testcase>
  <testcase name="c" status="notrun"><skipped/></testcase>
</testsuite>""")
    r = parse_junit(xml)
    assert (r.passed, r.failed, r.failures) == (1, 1, ["b"])


def test_junit_counts_the_cases_inside_a_native_test_binary(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text("""<?xml version="1.0"?>
<testsuite name="x" tests="2" failures="1">
  <testcase name="hmllm.gguf_reader" status="run"><system-out>ok a
ok b
# 2 passed, 0 failed
</system-out></testcase>
  <testcase name="hmllm.session" status="fail"><failure message="Failed"/><system-out>ok c
FAIL d: test_session.cpp:10 x == y
# 1 passed, 1 failed
</system-out></testcase>
</testsuite>""")
    r = parse_junit(xml)
    assert (r.passed, r.failed) == (3, 1)
    assert r.failures == ["hmllm.session: d (test_session.cpp:10 x == y)"]
