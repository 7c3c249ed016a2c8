"""The command line as a user meets it: one sentence per error, non-zero exit, no traceback."""
import json

import pytest

from conftest import run_hmbuild


def assert_clean_error(proc, *needles):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = [l for l in proc.stderr.splitlines() if l.startswith("hmbuild: error:")]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_version():
    proc = run_hmbuild("--version")
    assert proc.returncode == 0 and "0.1.0" in proc.stdout


def test_new_with_a_bad_name(tmp_path):
    proc = run_hmbuild("new", str(tmp_path / "x"), "--name", "Bad-Name")
    assert_clean_error(proc, "Bad-Name", "lowercase")
    assert not (tmp_path / "x").exists()


def test_build_outside_a_project(tmp_path):
    assert_clean_error(run_hmbuild("-C", str(tmp_path), "build"), "not an hmbuild project", "hmbuild new")


def test_unknown_target(tmp_path):
    run_hmbuild("new", str(tmp_path / "p"), check=True)
    assert_clean_error(run_hmbuild("-C", str(tmp_path / "p"), "build", "--target", "win64"), "win64", "linux-arm64")


def test_unknown_target_in_json_mode_still_prints_one_json_object(tmp_path):
    run_hmbuild("new", str(tmp_path / "p"), check=True)
    proc = run_hmbuild("-C", str(tmp_path / "p"), "build", "--target", "win64", "--json")
    assert_clean_error(proc, "win64")
    assert json.loads(proc.stdout) == {"ok": False, "error": json.loads(proc.stdout)["error"]}


def test_target_from_environment_beats_hmbuild_toml(tmp_path):
    run_hmbuild("new", str(tmp_path / "p"), check=True)
    proc = run_hmbuild("-C", str(tmp_path / "p"), "build", env={"HMBUILD_TARGET": "bogus-env"})
    assert_clean_error(proc, "bogus-env")
    # and the flag beats the environment
    proc = run_hmbuild("-C", str(tmp_path / "p"), "build", "--target", "bogus-flag", env={"HMBUILD_TARGET": "bogus-env"})
    assert_clean_error(proc, "bogus-flag")


def test_ohos_build_without_sdk_stops_before_doing_anything(tmp_path):
    run_hmbuild("new", str(tmp_path / "p"), check=True)
    env = {"OHOS_NDK_HOME": "", "OHOS_SDK_NATIVE": "", "HOME": str(tmp_path / "home")}
    for target in ("ohos-arm64", "ohos-x86_64"):
        proc = run_hmbuild("-C", str(tmp_path / "p"), "build", "--target", target, env=env)
        assert_clean_error(proc, "OHOS_NDK_HOME", "OHOS_SDK_NATIVE")
    assert not (tmp_path / "p" / "build").exists()


def test_missing_cross_compiler_is_one_sentence_with_the_fix(tmp_path):
    run_hmbuild("new", str(tmp_path / "p"), check=True)
    import os, sys
    # Only the Python environment on PATH: no cross compiler, no qemu; and GCC asked for by name,
    # since zig (installed with the dev extras) is otherwise the fallback (tests/test_zig.py).
    proc = run_hmbuild("-C", str(tmp_path / "p"), "build", "--target", "linux-arm64",
                       env={"PATH": os.path.dirname(sys.executable), "HMBUILD_ARM64_TOOLCHAIN": "gcc"})
    assert_clean_error(proc, "apt-get install -y qemu-user g++-aarch64-linux-gnu")
    assert not (tmp_path / "p" / "build").exists()


def test_ohos_tests_cannot_run_here(tmp_path, monkeypatch):
    run_hmbuild("new", str(tmp_path / "p"), check=True)
    sdk = tmp_path / "sdk" / "native" / "build" / "cmake"
    sdk.mkdir(parents=True)
    (sdk / "ohos.toolchain.cmake").write_text("message(FATAL_ERROR fake)\n")
    proc = run_hmbuild("-C", str(tmp_path / "p"), "test", "--target", "ohos-arm64",
                       env={"OHOS_NDK_HOME": str(tmp_path / "sdk")})
    assert_clean_error(proc, "device")
    assert not (tmp_path / "p" / "build").exists()


def test_targets_lists_every_target_with_its_triple():
    proc = run_hmbuild("targets", "--json")
    data = json.loads(proc.stdout)
    assert {t["name"]: t["triple"] for t in data["targets"]} == {
        "host": data["targets"][0]["triple"], "linux-arm64": "aarch64-linux-gnu",
        "ohos-arm64": "aarch64-linux-ohos", "ohos-x86_64": "x86_64-linux-ohos"}


def test_doctor_json_reports_what_is_found_and_how_to_fix_the_rest(tmp_path):
    proc = run_hmbuild("doctor", "--json", env={"OHOS_NDK_HOME": "", "OHOS_SDK_NATIVE": "", "HOME": str(tmp_path)})
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    ohos = next(t for t in data["targets"] if t["name"] == "ohos-arm64")
    assert not ohos["ready"] and "OHOS_NDK_HOME" in ohos["missing"][0]["fix"]
    tools = {t["name"]: t for t in data["tools"]}
    assert {"conan", "cmake", "ninja", "aarch64 Node.js"} <= set(tools)
    for t in tools.values():
        assert t["found"] or t["fix"]


def test_a_hand_edited_module_name_is_checked_again(tmp_path):
    """hmbuild.toml's name becomes a C++ identifier and a file name: an edit to 'my-lib' is refused
    with one sentence naming the file, before anything is built."""
    root = tmp_path / "p"
    assert run_hmbuild("new", str(root)).returncode == 0
    toml = root / "hmbuild.toml"
    toml.write_text(toml.read_text().replace('name = "p"', 'name = "my-lib"', 1))
    proc = run_hmbuild("-C", str(root), "build", "--target", "host")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "hmbuild.toml, [project] name:" in proc.stderr and "'my-lib' is not a valid module name" in proc.stderr
    assert not (root / "build").exists()
