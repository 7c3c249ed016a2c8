"""Generate a project, build it for host and linux-arm64, run its tests (aarch64 under qemu). The
sanitizer runs are tests/test_sanitizers.py and tests/test_sanitizer_thread.py."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import elf_machine, have_arm64_tools, run_hmbuild

arm64 = pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user (see README)")


@pytest.fixture(scope="module")
def project(demo_project):
    return demo_project


def build_json(project, *args):
    proc = run_hmbuild("-C", str(project), "build", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # stdout is exactly one JSON object


def summary(proc):
    m = re.search(r"^(\d+) passed, (\d+) failed$", proc.stdout, re.M)
    assert m, f"no summary line in:\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.rstrip().splitlines()[-1] == m.group(0), "the summary must be the last line"
    return int(m.group(1)), int(m.group(2))


def native_cases(report):
    """The native (ctest) suite of a JSON test report."""
    return next(s for s in report["suites"] if s["name"] == "native (ctest)")


def test_host_build_names_an_x86_64_library_and_rebuilds_nothing_the_second_time(project):
    first = build_json(project, "--target", "host")
    assert first["target"] == "host"
    lib = first["library"]
    assert os.path.isabs(lib) and lib.endswith("/libdemo.so")
    assert first["build_dir"] == str(project / "build" / "host-release")
    assert elf_machine(lib) == 62
    mtime = os.stat(lib).st_mtime_ns
    second = build_json(project, "--target", "host")
    assert second["up_to_date"] is True
    assert os.stat(lib).st_mtime_ns == mtime


def test_host_tests_pass(project):
    proc = run_hmbuild("-C", str(project), "test", "--target", "host")
    passed, failed = summary(proc)
    assert proc.returncode == 0, proc.stderr
    assert failed == 0 and passed >= 100


@pytest.mark.skipif(shutil.which("ccache") is None or os.environ.get("HMBUILD_CCACHE") == "0",
                    reason="ccache is not installed (apt-get install -y ccache) or is turned off")
def test_ccache_serves_the_same_sources_in_another_folder(host_project, tmp_path):
    """CCACHE_BASEDIR is the project: a fresh project in another folder (another CI runner's
    checkout) gets the runtime's objects from the cache the shared project filled, and its tests
    still find their data."""
    other = tmp_path / "other"
    run_hmbuild("new", str(other), "--name", "other", check=True)
    log = tmp_path / "ccache-stats.log"  # this build's compiles only
    proc = run_hmbuild("-C", str(other), "build", "--target", "host", env={"CCACHE_STATSLOG": str(log)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [line for line in log.read_text().splitlines() if line and not line.startswith("#")]
    hits = results.count("direct_cache_hit") + results.count("preprocessed_cache_hit")
    # Only the files that name the project (napi_init.cpp, the module's glue) compile again.
    assert hits >= 30 and results.count("cache_miss") <= 4, (hits, results.count("cache_miss"))
    proc = run_hmbuild("-C", str(other), "test", "--target", "host", "--only", "cpu_topology,tokenizer")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.qemu
@arm64
def test_linux_arm64_build_is_aarch64(project):
    data = build_json(project, "--target", "linux-arm64")
    assert data["triple"] == "aarch64-linux-gnu"
    assert elf_machine(data["library"]) == 183
    assert data["build_dir"].endswith("build/linux-arm64-release")


OHOS_PUBLIC = Path(__file__).resolve().parents[2] / "shared" / "ohos-public"
if not OHOS_PUBLIC.is_dir():
    OHOS_PUBLIC = Path("/work/shared/ohos-public")
needs_public = pytest.mark.skipif(not OHOS_PUBLIC.is_dir(), reason="needs ../shared/ohos-public (OpenHarmony's public files)")


@pytest.mark.qemu
@arm64
@needs_public
def test_the_linux_arm64_build_fails_the_ndk_check_naming_why(project):
    """The glibc build (built once above) is no OHOS module: glibc's NEEDED and symbol versions,
    lazy binding, no OHOS note, libstdc++ imports. Its registration is already the ArkTS way."""
    from hmbuild.build.ndk_check import NdkExports, check_module

    lib = build_json(project, "--target", "linux-arm64")["library"]  # up to date: no rebuild
    report = check_module(Path(lib), arch="aarch64", exports=NdkExports.from_public(OHOS_PUBLIC))
    failed = {c.name: c.detail for c in report.failed()}
    assert set(failed) == {"needed", "glibc", "bind-now", "ohos-note", "imports"}, "\n".join(report.lines())
    assert "libstdc++.so.6" in failed["needed"] and "libc.so.6" in failed["needed"]
    assert "GLIBC" in failed["glibc"]
    assert report.kind == "ArkTS module"
    proc = run_hmbuild("ndk-check", lib, "--ohos-public", str(OHOS_PUBLIC))
    assert proc.returncode == 1 and "fails the NDK-module check" in proc.stdout


@needs_public
@pytest.mark.skipif(shutil.which("clang-19") is None, reason="needs clang-19")
def test_the_host_build_registers_its_name_and_api_functions_with_the_arkts_double(host_project, tmp_path):
    """The registration loader (a test double of the ArkTS runtime) dlopens the host build: its
    constructor calls napi_module_register, and nm_register_func defines what api.toml declares."""
    from hmbuild.build.ndk_check import NdkExports
    from hmbuild.build.registration import build_loader, registration
    from hmbuild.config.api_schema import NAPI_HEADERS, known_limits, known_symbols, load_api

    napi = host_project / NAPI_HEADERS
    api = load_api(host_project / "api.toml", known_symbols(napi), known_limits(napi))
    loader = build_loader(["clang-19"], tmp_path / "loader",
                          napi_names=NdkExports.from_public(OHOS_PUBLIC).names["libace_napi.z.so"])
    reg = registration(host_project / "build" / "host-release" / "libdemo.so", loader.parent)
    assert reg.modname == "demo" and reg.registrations == 1
    assert list(reg.functions) == [f.name for f in api.functions]


@pytest.mark.qemu
@arm64
@needs_public
def test_the_linux_arm64_build_registers_under_qemu_with_the_arkts_double(project, tmp_path):
    """The same loader, cross-built and run through a runner prefix, as the ohos targets will use it."""
    from hmbuild.build.ndk_check import NdkExports
    from hmbuild.build.registration import build_loader, registration

    lib = build_json(project, "--target", "linux-arm64")["library"]  # up to date: no rebuild
    loader = build_loader(["aarch64-linux-gnu-gcc"], tmp_path / "loader",
                          napi_names=NdkExports.from_public(OHOS_PUBLIC).names["libace_napi.z.so"])
    reg = registration(Path(lib), loader.parent, runner=["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu"])
    assert reg.modname == "demo" and "init" in reg.functions and "inferAsync" in reg.functions


# The generated CI files' commands (test_ci checks that every one is run here): the whole suite runs
# under qemu once, on cortex-a76, in bootstrap.sh (CI's main job); the CPUs of the other NEON kernel
# sets, cortex-a53 (no dotprod) and max (dotprod and i8mm: the kernel suite compares every set with
# the scalar reference), run the native tests whose paths depend on the CPU.
@arm64
@pytest.mark.qemu
@pytest.mark.parametrize("cpu", ["cortex-a53", "max"])
def test_linux_arm64_kernel_dispatch_passes_under_qemu(project, cpu):
    proc = run_hmbuild("-C", str(project), "test", "--target", "linux-arm64", "--cpu", cpu, "--only", "kernels,session",
                       "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["cpu"] == cpu and report["failed"] == 0
    native = native_cases(report)
    assert [s["name"] for s in report["suites"]] == ["native (ctest)"] and native["passed"] >= 2
    assert [s["suite"] for s in report["skipped"]] == ["napi"]


def test_only_names_the_native_tests_it_knows(project):
    proc = run_hmbuild("-C", str(project), "test", "--target", "host", "--only", "kernels,nosuch")
    assert proc.returncode != 0 and "'nosuch' is not a native test" in proc.stderr and "kernels" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.qemu
@arm64
def test_an_unknown_qemu_cpu_is_refused(project):
    proc = run_hmbuild("-C", str(project), "test", "--target", "linux-arm64", "--cpu", "pentium4")
    assert proc.returncode != 0 and "pentium4" in proc.stderr and "Traceback" not in proc.stderr


def test_a_failing_napi_test_fails_the_run_despite_stderr_noise(project):
    """A NAPI test file added to the project's built host tree (no rebuild needed), removed after."""
    broken = project / "tests/napi/broken.test.mjs"
    broken.write_text(
        "import { test } from 'node:test';\n"
        "import assert from 'node:assert/strict';\n"
        "process.stderr.write('qemu: uncaught target signal 6 (Aborted) - core dumped\\nok 99 - fake\\n');\n"
        "test('this one passes', () => {});\n"
        "test('this one fails', () => { assert.equal(1, 2); });\n")
    try:
        proc = run_hmbuild("-C", str(project), "test", "--target", "host")
    finally:
        broken.unlink()
    assert proc.returncode == 1
    passed, failed = summary(proc)
    assert failed == 1
    assert "this one fails" in proc.stderr


def test_plain_cmake_builds_and_tests_the_project_without_hmbuild(project, tmp_path):
    """A DevEco or CI user with only CMake: the generated presets work on their own."""
    cpp = project / "src/main/cpp"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HMBUILD")}
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env["PATH"]])
    from hmbuild.targets.node import napi_headers_dir
    headers = napi_headers_dir()
    run = lambda *cmd: subprocess.run(cmd, cwd=cpp, env=env, capture_output=True, text=True)
    # ccache as a CMake user would add it (the same objects hmbuild's host build made are hits).
    launcher = [f"-DCMAKE_{lang}_COMPILER_LAUNCHER={shutil.which('ccache')}" for lang in ("C", "CXX")
                if shutil.which("ccache")]
    env["CCACHE_BASEDIR"] = str(project)
    conf = run("cmake", "--preset", "host-release", f"-DNODE_API_HEADERS_DIR={headers}", *launcher)
    assert conf.returncode == 0, conf.stdout + conf.stderr
    assert run("cmake", "--build", "--preset", "host-release").returncode == 0
    test = run("ctest", "--preset", "host-release")
    assert test.returncode == 0 and "tests passed" in test.stdout
    assert (project / "build/host-release-plain/libdemo.so").is_file()
