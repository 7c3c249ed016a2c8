"""What an OpenHarmony build adds to building and testing: the NDK-module check of the built
module (ndk_check), the libc++_shared.so that travels with it in the HAR, and the registration
suite that loads it the ArkTS way through the loader double (registration). The Node suites
cannot run against an OHOS module (it links the ArkTS runtime's libace_napi.z.so, and no Node.js
exists for OHOS musl); NAPI behaviour is covered by the same sources' Node suites on host and
linux-arm64."""
from __future__ import annotations

from pathlib import Path

from hmbuild.build.ndk_check import NdkExports, NdkReport, check_module
from hmbuild.errors import HmbuildError
from hmbuild.targets.target import Target

ARCH = {"aarch64-linux-ohos": "aarch64", "x86_64-linux-ohos": "x86_64"}
NAPI_SKIP_REASON = ("the OHOS module links the ArkTS runtime's libace_napi.z.so and no Node.js runs on OHOS musl "
                    "here; NAPI behaviour is covered by the Node suites of the same sources (host, linux-arm64), "
                    "and the registration suite checks how ArkTS loads it")


def native_dir(target: Target) -> Path:
    """The SDK's (or the stand-in's) native/ folder of an ohos target."""
    if target.cmake_toolchain_file is None:
        raise HmbuildError(f"{target.name} has no OpenHarmony SDK here; run `hmbuild setup --ohos-public DIR`.")
    return target.cmake_toolchain_file.parent.parent.parent


def ndk_exports(target: Target) -> NdkExports:
    """What the device exports: the stand-in keeps the NDK lists and libc.map.txt; a real SDK's
    sysroot has the stub libraries built from them."""
    lists = native_dir(target) / "hmbuild-standin" / "lists"
    if lists.is_dir():
        return NdkExports.from_files(lists / "libnapi.ndk.json", lists / "libhilog.ndk.json", lists / "libc.map.txt")
    return NdkExports.from_sysroot(native_dir(target) / "sysroot", target.triple)


def shipped_libraries(target: Target) -> list[Path]:
    """Libraries the HAR carries next to lib<name>.so: libc++_shared.so under OHOS_STL=c++_shared
    (it is not on the system allow-list, so the app ships it)."""
    if target.cmake_cache.get("OHOS_STL") != "c++_shared" or target.cmake_toolchain_file is None:
        return []  # c++_static, or no SDK here to take it from (a library built elsewhere is packed as is)
    lib = native_dir(target) / "llvm" / "lib" / target.triple / "libc++_shared.so"
    if not lib.is_file():
        raise HmbuildError(f"{lib} is missing from the SDK; OHOS_STL=c++_shared needs it (reinstall the SDK, or "
                           "rebuild the stand-in with `hmbuild setup --ohos-public DIR`).")
    return [lib]


def check_built_module(target: Target, library: Path) -> NdkReport:
    """The NDK-module check of a built ohos module; a failure is an error that names every failed check."""
    report = check_module(library, arch=ARCH[target.triple], exports=ndk_exports(target),
                          shipped=shipped_libraries(target))
    if not report.ok:
        why = "; ".join(f"{c.name}: {c.detail}" for c in report.failed())
        raise HmbuildError(f"{library} is not a valid OpenHarmony NDK module ({why}).")
    return report


def registration_loader(target: Target, build_dir: Path) -> Path:
    """The loader double built with the target's own compiler, in the build folder (kept: cheap to reuse)."""
    from hmbuild.build.registration import LOADER, build_loader

    out = build_dir / "hmbuild-registration"
    if (out / LOADER).is_file():
        return out
    native = native_dir(target)
    build_loader([target.cc or str(native / "llvm" / "bin" / "clang"), f"--target={target.triple}",
                  f"--sysroot={native / 'sysroot'}"], out,
                 napi_names=ndk_exports(target).names["libace_napi.z.so"],
                 include_dir=native / "sysroot" / "usr" / "include")
    return out


def runner_with_library_first(runner: tuple[str, ...], directory: Path) -> tuple[str, ...]:
    """The target's runner with `directory` searched first (before the sysroot's stub
    libace_napi.z.so): the loader double's library must be the one the module binds to."""
    out = list(runner)
    for i, arg in enumerate(out):
        if arg.startswith("LD_LIBRARY_PATH="):
            out[i] = f"LD_LIBRARY_PATH={directory}:{arg.split('=', 1)[1]}"
        elif i > 0 and out[i - 1] == "--library-path":
            out[i] = f"{directory}:{arg}"
    return tuple(out)
