"""`hmbuild build --remote NAME` against a real conan_server on 127.0.0.1: the first machine builds
the runtime's Conan package and uploads it, a second machine with a clean Conan cache downloads it
instead of compiling it, and its library passes the tests. Plus the refusals, and ccache."""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_hmbuild
from test_cli import assert_clean_error

from hmbuild.resources import cache_dir

REMOTE = "testremote"
# conan-server 2.33's wheel carries its own copy of Conan's `conan` package, which would replace
# hmbuild's pinned Conan 2.34 in the same environment, so the server gets a virtualenv of its own.
SERVER_VENV = cache_dir() / "conan-server-venv"
SERVER_PIN = "conan-server==2.33.0"
# The `conan_server` script listens on 0.0.0.0; the same launcher, bound to the loopback only.
SERVE = ("import sys; from conans.server.launcher import ServerLauncher; "
         "ServerLauncher(server_dir=sys.argv[1]).server.run(host='127.0.0.1')")


def _server_python() -> Path:
    python = SERVER_VENV / "bin" / "python"
    if not (SERVER_VENV / "bin" / "conan_server").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(SERVER_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", SERVER_PIN],
                       check=True)
    return python


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real conan_server (user demo/demo, who may upload) in a temporary CONAN_SERVER_HOME; its URL."""
    home = tmp_path_factory.mktemp("conan-server")
    python = _server_python()
    subprocess.run([str(python.parent / "conan_server"), "--migrate", "-d", str(home)], check=True,
                   capture_output=True)
    port = _free_port()
    conf = home / "server.conf"
    text = conf.read_text()
    text = re.sub(r"^port: \d+$", f"port: {port}", text, flags=re.M)
    text = re.sub(r"^host_name: .*$", "host_name: 127.0.0.1", text, flags=re.M)
    text = text.replace("[write_permissions]\n", "[write_permissions]\n*/*@*/*: demo\n")
    conf.write_text(text)
    proc = subprocess.Popen([str(python), "-c", SERVE, str(home)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "conan_server did not start"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def conan(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CONAN_HOME": str(home)}
    return subprocess.run([str(Path(sys.executable).parent / "conan"), *args], env=env, capture_output=True,
                          text=True, check=True)


def machine(tmp_path_factory, name: str, url: str, login: bool) -> dict:
    """A developer machine: its own hmbuild Conan home with the team's remote, and a fresh project."""
    root = tmp_path_factory.mktemp(name)
    home = root / "conan-home"
    conan(home, "remote", "add", REMOTE, url)
    if login:
        conan(home, "remote", "login", REMOTE, "demo", "-p", "demo")
    project = root / "demo"
    run_hmbuild("new", str(project), "--name", "demo", check=True)
    return {"env": {"HMBUILD_CONAN_HOME": str(home)}, "home": home, "project": project}


def build(m: dict, *args: str) -> dict:
    proc = run_hmbuild("-C", str(m["project"]), "build", "--target", "host", "--json", *args, env=m["env"])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def compiled_runtime(build_dir: Path) -> bool:
    """Whether this build folder compiled the runtime library itself (CMake's object folder for hmllm)."""
    return (Path(build_dir) / "hmllm" / "CMakeFiles" / "hmllm.dir").is_dir()


@pytest.fixture(scope="module")
def first(tmp_path_factory, server):
    """The machine that builds the runtime first (logged in, so it may upload)."""
    m = machine(tmp_path_factory, "first", server, login=True)
    m["result"] = build(m, "--remote", REMOTE)
    return m


def test_the_first_build_compiles_the_runtime_package_and_uploads_it(first):
    result = first["result"]
    assert (result["runtime"], result["remote"], result["uploaded"]) == ("built", REMOTE, True)
    ref, package_id = result["runtime_package"].split(":")
    assert re.fullmatch(r"hmllm/[\d.]+#[0-9a-f]{32}", ref) and re.fullmatch(r"[0-9a-f]{40}", package_id)
    # The server now holds that very binary.
    listing = json.loads(conan(first["home"], "list", f"{ref}:*", "-r", REMOTE, "--format=json").stdout)
    assert package_id in listing[REMOTE][ref.split("#")[0]]["revisions"][ref.split("#")[1]]["packages"]
    # The project linked the package: it compiled the runtime's tools and tests, not the runtime.
    assert not compiled_runtime(result["build_dir"])
    assert (Path(result["build_dir"]) / "hmllm" / "hmllm_run").is_file()


@pytest.fixture(scope="module")
def second(tmp_path_factory, server, first):
    """Another machine with a clean Conan cache, after `first` has shared its binary; not logged in."""
    m = machine(tmp_path_factory, "second", server, login=False)
    m["result"] = build(m, "--remote", REMOTE)
    return m


def test_a_second_machine_with_a_clean_cache_downloads_the_runtime_and_its_tests_pass(first, second):
    result = second["result"]
    assert (result["runtime"], result["uploaded"]) == ("downloaded", False)  # Conan's graph: "Download"
    assert result["runtime_package"] == first["result"]["runtime_package"]
    assert not compiled_runtime(result["build_dir"])
    # The native tests (compiled from the vendored sources, linked to the downloaded library) and
    # the NAPI session suite with the real model, as `hmbuild test` runs them (its other suites
    # would add a minute and test nothing more of the package).
    model = run_hmbuild("fetch-model", check=True).stdout.strip()
    env = {**os.environ, "HMLLM_TEST_MODEL": model, "HMBUILD_TEST_MODEL": model, "HMBUILD_LIBRARY": result["library"]}
    ctest = subprocess.run([str(Path(sys.executable).parent / "ctest"), "--test-dir", result["build_dir"]], env=env,
                           capture_output=True, text=True)
    assert ctest.returncode == 0 and "100% tests passed" in ctest.stdout, ctest.stdout[-3000:]
    node = subprocess.run(["node", "--test-reporter=tap", "tests/napi/session.test.mjs"], cwd=second["project"],
                          env=env, capture_output=True, text=True)
    assert node.returncode == 0 and "# fail 0" in node.stdout and "# pass 0" not in node.stdout, node.stdout[-3000:]


@pytest.mark.skipif(shutil.which("ccache") is None, reason="ccache is not installed (apt-get install -y ccache)")
def test_ccache_is_the_compiler_launcher_and_doctor_says_so(first):
    launcher = shutil.which("ccache")
    assert first["result"]["ccache"] is True
    cache = (Path(first["result"]["build_dir"]) / "CMakeCache.txt").read_text()
    assert re.search(rf"^CMAKE_CXX_COMPILER_LAUNCHER:\w+={re.escape(launcher)}$", cache, re.M)
    for env, used in (({}, True), ({"HMBUILD_CCACHE": "0"}, False)):
        report = json.loads(run_hmbuild("doctor", "--json", env={**first["env"], **env}).stdout)
        assert (report["ccache"]["found"], report["ccache"]["used"], report["ccache"]["fix"]) == (launcher, used, None)
        assert report["conan"] == {"home": str(first["home"]), "remotes": ["conancenter", REMOTE]}
        text = run_hmbuild("doctor", env={**first["env"], **env}).stdout
        assert f"ccache: {launcher} (" + ("builds use it" if used else "not used: HMBUILD_CCACHE=0") in text


def test_switching_back_to_the_vendored_runtime_leaves_no_package_behind(first):
    again = build(first, "--remote", REMOTE)
    assert (again["runtime"], again["up_to_date"], again["uploaded"]) == ("cached", True, False)
    plain = build(first)
    assert (plain["runtime"], plain["remote"], plain["runtime_package"]) == ("vendored", None, None)
    assert compiled_runtime(plain["build_dir"])
    cache = (Path(plain["build_dir"]) / "CMakeCache.txt").read_text()
    assert "HMLLM_FROM_PACKAGE:BOOL=OFF" in cache


def test_an_unknown_remote_is_one_sentence_naming_the_configured_ones(first, tmp_path):
    project = tmp_path / "demo"
    run_hmbuild("new", str(project), check=True)
    proc = run_hmbuild("-C", str(project), "build", "--target", "host", "--remote", "nosuch", env=first["env"])
    assert_clean_error(proc, "nosuch")
    assert f"configured: conancenter, {REMOTE}" in proc.stderr and "conan remote add nosuch URL" in proc.stderr
    assert not (project / "build").exists()


def test_a_binary_the_remote_lacks_without_a_login_is_built_then_refused_in_one_sentence(second):
    project = second["project"]
    proc = run_hmbuild("-C", str(project), "build", "--target", "host", "--build-type", "Debug", "--remote", REMOTE,
                       env=second["env"])
    assert_clean_error(proc, f"Uploading the runtime to remote '{REMOTE}' failed", "conan remote login")
    build_dir = project / "build" / "host-debug"
    assert not (build_dir / "hmbuild-configure.stamp").exists() and not (build_dir / "libdemo.so").exists()


def test_a_remote_that_does_not_answer_is_one_sentence(first):
    port = _free_port()  # nothing listens there
    conan(first["home"], "remote", "add", "down", f"http://127.0.0.1:{port}")
    project = first["project"]
    proc = run_hmbuild("-C", str(project), "build", "--target", "host", "--build-type", "Debug", "--remote", "down",
                       env=first["env"])
    assert_clean_error(proc, "down")
    assert not (project / "build" / "host-debug" / "libdemo.so").exists()

