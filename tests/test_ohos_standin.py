"""The OpenHarmony SDK stand-in (hmbuild setup --ohos-public) and the ohos targets built through
the SDK's unmodified toolchain file with it."""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import BUILD_ENV, elf_machine, run_hmbuild

PUBLIC = Path(os.environ.get("HMBUILD_OHOS_PUBLIC", "/work/shared/ohos-public"))
READELF = shutil.which("llvm-readelf-19") or "/usr/lib/llvm-19/bin/llvm-readelf"
TRIPLES = ("aarch64-linux-ohos", "x86_64-linux-ohos")


@pytest.fixture(scope="session")
def standin():
    """native/ of the stand-in, built once (minutes cold, cached after), or the test is skipped."""
    from hmbuild.targets.ohos_standin import find_standin

    if not (PUBLIC / "build" / "cmake" / "ohos.toolchain.cmake").is_file():
        native = find_standin()
        if native is None and not os.environ.get("OHOS_NDK_HOME"):
            pytest.skip(f"no OpenHarmony SDK, no stand-in and no public OpenHarmony files at {PUBLIC}")
        return native
    run_hmbuild("setup", "--ohos-public", str(PUBLIC), check=True)
    native = find_standin()
    assert native is not None
    return native


def test_standin_layout(standin):
    assert (standin / "build/cmake/ohos.toolchain.cmake").read_bytes() == \
        (PUBLIC / "build/cmake/ohos.toolchain.cmake").read_bytes()
    for tool in ("clang", "clang++", "llvm-ar", "llvm-ranlib", "ld.lld"):
        assert os.access(standin / "llvm/bin" / tool, os.X_OK), tool
    marker = json.loads((standin / "hmbuild-standin.json").read_text())
    assert "not the phone's libraries" in marker["what"]
    for triple in TRIPLES:
        assert (standin / f"llvm/lib/clang/19/lib/{triple}/libclang_rt.builtins.a").is_file()
        for lib in ("libc++_shared.so", "libc++.a", "libc++abi.a", "libunwind.a"):
            assert (standin / "llvm/lib" / triple / lib).is_file(), lib
        for lib in ("libc.so", "libace_napi.z.so", "libhilog_ndk.z.so", "crti.o", "crtn.o", "Scrt1.o"):
            assert (standin / "sysroot/usr/lib" / triple / lib).is_file(), lib
    assert (standin / "sysroot/usr/include/napi/native_api.h").is_file()
    assert (standin / "sysroot/usr/include/hilog/log.h").is_file()
    assert (standin / "sysroot/lib/ld-musl-aarch64.so.1").resolve().is_file()
    # The stub's SONAME is the phone library's name, and it has no symbol versions.
    dyn = subprocess.run([READELF, "-d", "--dyn-syms", str(standin / "sysroot/usr/lib/aarch64-linux-ohos/libace_napi.z.so")],
                         capture_output=True, text=True).stdout
    assert "libace_napi.z.so" in dyn and "napi_module_register" in dyn and "@" not in dyn.split("Symbol table")[1]
    # libc++_shared.so keeps the builtins and emulated TLS inside.
    shared = subprocess.run([READELF, "--dyn-syms", str(standin / "llvm/lib/aarch64-linux-ohos/libc++_shared.so")],
                            capture_output=True, text=True).stdout
    assert "__emutls_get_address" not in shared


def test_setup_is_cached(standin):
    start = time.monotonic()
    r = run_hmbuild("setup", "--ohos-public", str(PUBLIC), check=True)
    assert "(cached)" in r.stdout
    assert time.monotonic() - start < 60


def test_bad_ohos_public_is_one_sentence(tmp_path):
    r = run_hmbuild("setup", "--ohos-public", str(tmp_path / "nope"))
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and "is not a folder" in r.stderr
    (tmp_path / "empty").mkdir()
    r = run_hmbuild("setup", "--ohos-public", str(tmp_path / "empty"))
    assert r.returncode != 0 and "Traceback" not in r.stderr and "lacks" in r.stderr


def test_ohos_targets_ready(standin):
    r = run_hmbuild("targets", "--json", check=True)
    rows = {t["name"]: t for t in json.loads(r.stdout)["targets"]}
    for name in ("ohos-arm64", "ohos-x86_64"):
        assert rows[name]["ready"], rows[name]
        if not os.environ.get("OHOS_NDK_HOME"):
            assert "stand-in" in rows[name]["found"]["ohos_sdk"]


def _dyn(path):
    return subprocess.run([READELF, "-d", "--dyn-syms", "-W", str(path)], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="session")
def ohos_project(standin, demo_project):
    for target in ("ohos-arm64", "ohos-x86_64"):
        run_hmbuild("-C", str(demo_project), "build", "--target", target, check=True, env=BUILD_ENV)
    return demo_project


def _module(project, target):
    hits = [p for p in (project / "build").glob(f"{target}*/**/libdemo.so")]
    assert hits, f"no libdemo.so for {target} under {project / 'build'}"
    return hits[0]


@pytest.mark.parametrize("target,machine", [("ohos-arm64", 183), ("ohos-x86_64", 62)])
def test_module_shape(ohos_project, target, machine):
    module = _module(ohos_project, target)
    assert elf_machine(module) == machine
    dyn = _dyn(module)
    # Not imported (the builtins are linked into the module, so it may define it itself).
    undefined = subprocess.run([READELF.replace("readelf", "nm"), "-D", "--undefined-only", "-j", str(module)],
                               capture_output=True, text=True, check=True).stdout.split()
    assert "__emutls_get_address" not in undefined
    needed = {line.split("[")[1].split("]")[0] for line in dyn.splitlines() if "(NEEDED)" in line}
    assert needed <= {"libc.so", "libace_napi.z.so", "libhilog_ndk.z.so", "libc++_shared.so"}, needed


def test_cxx_static_exports_no_libcxx(standin, tmp_path):
    project = tmp_path / "st"
    run_hmbuild("new", str(project), "--name", "st", check=True)
    toml = project / "hmbuild.toml"  # the project's own setting (HMBUILD_OHOS_STL would override it)
    toml.write_text(toml.read_text().replace('# ohos_stl = "c++_shared"', 'ohos_stl = "c++_static"', 1))
    run_hmbuild("-C", str(project), "build", "--target", "ohos-arm64", check=True, env=BUILD_ENV)
    module = [p for p in (project / "build").glob("ohos-arm64*/**/libst.so")][0]
    dyn = _dyn(module)
    assert "libc++_shared.so" not in dyn
    exported = [line.split()[-1] for line in dyn.split("Symbol table")[1].splitlines()
                if " UND " not in line and ("GLOBAL" in line or "WEAK" in line)]
    # Template instantiations the module compiles from libc++'s headers are its own code; what
    # must not leak is what the static archives define (libc++, libc++abi, libunwind).
    archive_defs = set()
    for lib in ("libc++.a", "libc++abi.a", "libunwind.a"):
        out = subprocess.run([READELF.replace("readelf", "nm"), "--defined-only", "-g", "-j",
                              str(standin / "llvm/lib/aarch64-linux-ohos" / lib)], capture_output=True, text=True).stdout
        archive_defs |= {line.strip() for line in out.splitlines() if line.strip() and not line.endswith(":")}
    leaked = [s for s in exported if s in archive_defs or s.startswith(("__cxa_", "_Unwind_"))]
    assert not leaked, leaked[:10]


@pytest.mark.qemu
@pytest.mark.parametrize("target", ["ohos-arm64", "ohos-x86_64"])
def test_ohos_native_suites_and_arkts_registration_pass(ohos_project, target):
    """`hmbuild test` on the OHOS build: the native suites (kernels, session on the real model, …)
    on the stand-in's musl and libc++ (aarch64 under qemu, x86_64 through the musl loader), then the
    module loaded the ArkTS way by the registration loader double. The Node suites are skipped, and say why."""
    proc = run_hmbuild("-C", str(ohos_project), "test", "--target", target, "--json", env=BUILD_ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    suites = {s["name"]: s for s in report["suites"]}
    assert suites["native (ctest)"]["failed"] == 0 and suites["native (ctest)"]["passed"] >= 100
    assert suites["registration (ArkTS loader double)"] == {
        "name": "registration (ArkTS loader double)", "passed": 3, "failed": 0, "failures": []}
    assert [s["suite"] for s in report["skipped"]] == ["napi"]


def test_the_har_carries_both_abis_with_libcxx_shared(ohos_project):
    proc = run_hmbuild("-C", str(ohos_project), "package", "--target", "ohos-arm64", "--target", "ohos-x86_64",
                       "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["abis"] == ["arm64-v8a", "x86_64"] and data["not_ohos_binary"] is False
    for abi in ("arm64-v8a", "x86_64"):
        assert f"package/libs/{abi}/libdemo.so" in data["files"]
        assert f"package/libs/{abi}/libc++_shared.so" in data["files"]
