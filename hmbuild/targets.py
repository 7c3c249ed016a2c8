"""Targets: the one place that knows what a target is and what this machine has for it.

`resolve_target(name)` probes the machine once and returns a frozen `Target` holding everything
the rest of hmbuild needs (triple, compilers, sysroot, runner, CPU list, Conan settings, what is
missing and the command that installs it). Nothing else in hmbuild looks up a compiler or a path.
"""

from __future__ import annotations

import glob
import os
import platform
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from hmbuild.errors import HmbuildError

TARGET_NAMES = ("host", "linux-arm64", "ohos-arm64", "ohos-x86_64")

APT_CROSS = "apt-get update && apt-get install -y qemu-user g++-aarch64-linux-gnu"
GNU_AARCH64_SYSROOT = Path("/usr/aarch64-linux-gnu")

# CPUs worth testing the runtime's CPU-feature dispatch on (DESIGN.md): no dotprod, dotprod, i8mm+.
ARM64_TEST_CPUS = ("cortex-a53", "cortex-a76", "neoverse-n1", "max")


@dataclass(frozen=True)
class Missing:
    """Something a target needs that this machine lacks, and the exact command that fixes it."""

    what: str
    fix: str


@dataclass(frozen=True)
class Target:
    name: str
    triple: str
    description: str
    conan_os: str
    conan_arch: str
    compiler: str  # Conan compiler name: gcc | clang
    compiler_version: str  # major version, as Conan settings want it
    libcxx: str  # Conan compiler.libcxx
    cc: str | None
    cxx: str | None
    sysroot: Path | None
    cmake_toolchain_file: Path | None  # a vendor toolchain file (the OpenHarmony SDK's)
    cmake_cache: dict[str, str] = field(default_factory=dict)
    # Command prefix that runs this target's binaries here: () natively, ("qemu-aarch64", "-L", …)
    # under emulation, None when they cannot run on this machine at all.
    runner: tuple[str, ...] | None = ()
    cpus: tuple[str, ...] = ()
    node_arch: str | None = None  # npm cpu name of the Node.js that loads the NAPI library here
    missing: tuple[Missing, ...] = ()
    found: dict[str, str] = field(default_factory=dict)  # what was found, for doctor

    @property
    def emulated(self) -> bool:
        return bool(self.runner)

    @property
    def can_run_tests(self) -> bool:
        return self.runner is not None

    def require_buildable(self) -> None:
        """Raise the first missing piece as one sentence with its fix."""
        if self.missing:
            m = self.missing[0]
            raise HmbuildError(f"Target {self.name} needs {m.what}, which was not found; fix: {m.fix}")


def _which(name: str) -> str | None:
    return shutil.which(name)


def _compiler_identity(cxx: str) -> tuple[str, str]:
    """(conan compiler name, major version) of a C++ compiler, by asking it."""
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ("gcc", "0")
    kind = "clang" if "clang" in out.lower() else "gcc"
    m = re.search(r"(\d+)\.\d+(?:\.\d+)?", out)
    return (kind, m.group(1) if m else "0")


def _host_target() -> Target:
    machine = platform.machine()
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "armv8", "arm64": "armv8"}.get(machine.lower())
    if arch is None:
        raise HmbuildError(f"This machine's architecture ({machine}) is not supported as a host; use x86_64 or aarch64 Linux.")
    cpu = "x86_64" if arch == "x86_64" else "aarch64"
    cc = os.environ.get("CC") or _which("gcc") or _which("cc") or _which("clang")
    cxx = os.environ.get("CXX") or _which("g++") or _which("c++") or _which("clang++")
    missing = []
    found = {}
    if cxx:
        cxx = shutil.which(cxx) or cxx
        found["compiler"] = cxx
    else:
        missing.append(Missing("a C++ compiler", "apt-get install -y g++"))
    node = _which("node")
    if node:
        found["node"] = node
    else:
        missing.append(Missing("Node.js (for the NAPI tests)", "apt-get install -y nodejs npm"))
    kind, version = _compiler_identity(cxx) if cxx else ("gcc", "0")
    return Target(
        name="host",
        triple=f"{cpu}-linux-gnu",
        description="this machine, with the system compiler; NAPI tests in the system Node.js",
        conan_os="Linux",
        conan_arch=arch,
        compiler=kind,
        compiler_version=version,
        libcxx="libstdc++11" if kind == "gcc" else "libstdc++11",
        cc=cc and (shutil.which(cc) or cc),
        cxx=cxx,
        sysroot=None,
        cmake_toolchain_file=None,
        runner=(),
        cpus=(),
        node_arch="x64" if cpu == "x86_64" else "arm64",
        missing=tuple(missing),
        found=found,
    )


def _linux_arm64_target() -> Target:
    cxx = _which("aarch64-linux-gnu-g++")
    cc = _which("aarch64-linux-gnu-gcc")
    qemu = _which("qemu-aarch64")
    sysroot = GNU_AARCH64_SYSROOT
    missing = []
    found = {}
    if cxx and cc:
        found["compiler"] = cxx
    else:
        missing.append(Missing("the aarch64 cross compiler (aarch64-linux-gnu-g++)", APT_CROSS))
    if (sysroot / "lib" / "ld-linux-aarch64.so.1").exists():
        found["sysroot"] = str(sysroot)
    else:
        missing.append(Missing(f"the aarch64 glibc sysroot ({sysroot})", APT_CROSS))
    if qemu:
        found["qemu"] = qemu
    else:
        missing.append(Missing("qemu-aarch64 (runs the aarch64 tests)", APT_CROSS))
    kind, version = _compiler_identity(cxx) if cxx else ("gcc", "12")
    return Target(
        name="linux-arm64",
        triple="aarch64-linux-gnu",
        description="generic aarch64 Linux (Debian's cross GCC); tests run under qemu-aarch64",
        conan_os="Linux",
        conan_arch="armv8",
        compiler=kind,
        compiler_version=version,
        libcxx="libstdc++11",
        cc=cc,
        cxx=cxx,
        sysroot=sysroot,
        cmake_toolchain_file=None,
        runner=(qemu or "qemu-aarch64", "-L", str(sysroot)),
        cpus=ARM64_TEST_CPUS,
        node_arch="arm64",
        missing=tuple(missing),
        found=found,
    )


OHOS_SDK_HINT = (
    "install the OpenHarmony SDK (DevEco Studio or command-line-tools) and set OHOS_NDK_HOME to the SDK "
    "folder that contains native/, or OHOS_SDK_NATIVE to that native/ folder itself"
)


def ohos_sdk_candidates() -> list[tuple[str, Path]]:
    """Where an OpenHarmony SDK's native/ folder may be, in the order they are tried."""
    out: list[tuple[str, Path]] = []
    if os.environ.get("OHOS_SDK_NATIVE"):
        out.append(("OHOS_SDK_NATIVE", Path(os.environ["OHOS_SDK_NATIVE"]).expanduser()))
    if os.environ.get("OHOS_NDK_HOME"):
        home = Path(os.environ["OHOS_NDK_HOME"]).expanduser()
        # People point OHOS_NDK_HOME at the SDK root or at native/ itself; accept both.
        out += [("OHOS_NDK_HOME", home / "native"), ("OHOS_NDK_HOME", home)]
    home = Path.home()
    patterns = [
        home / "Huawei/Sdk/openharmony/*/native",
        home / "Huawei/Sdk/default/openharmony/native",
        home / "command-line-tools/sdk/default/openharmony/native",
        Path("/opt/command-line-tools/sdk/default/openharmony/native"),
        Path("/opt/ohos-sdk/linux/native"),
    ]
    for pattern in patterns:
        for hit in sorted(glob.glob(str(pattern)), reverse=True):  # newest API level first
            out.append(("DevEco default location", Path(hit)))
    return out


def find_ohos_sdk() -> tuple[Path | None, list[str]]:
    """(native/ folder of the first valid SDK, the places looked at)."""
    looked = []
    for source, native in ohos_sdk_candidates():
        looked.append(f"{native} ({source})")
        if (native / "build" / "cmake" / "ohos.toolchain.cmake").is_file():
            return native, looked
    return None, looked


def _ohos_target(name: str) -> Target:
    arm = name == "ohos-arm64"
    native, looked = find_ohos_sdk()
    missing = []
    found = {}
    toolchain_file = cc = cxx = None
    version = "15"
    if native is None:
        missing.append(Missing("the OpenHarmony SDK (not found: OHOS_NDK_HOME and OHOS_SDK_NATIVE are unset or wrong)", OHOS_SDK_HINT))
    else:
        found["ohos_sdk"] = str(native)
        toolchain_file = native / "build" / "cmake" / "ohos.toolchain.cmake"
        clangxx = native / "llvm" / "bin" / "clang++"
        if clangxx.exists():
            cxx, cc = str(clangxx), str(native / "llvm" / "bin" / "clang")
            version = _compiler_identity(cxx)[1]
            found["compiler"] = cxx
    return Target(
        name=name,
        triple="aarch64-linux-ohos" if arm else "x86_64-linux-ohos",
        description=("HarmonyOS NEXT / OpenHarmony phones (arm64-v8a)" if arm
                     else "the DevEco emulator ABI (x86_64)") + "; needs the OpenHarmony SDK; tests run on a device",
        conan_os="OHOS",
        conan_arch="armv8" if arm else "x86_64",
        compiler="clang",
        compiler_version=version,
        libcxx="libc++",
        cc=cc,
        cxx=cxx,
        sysroot=(native / "sysroot") if native else None,
        cmake_toolchain_file=toolchain_file,
        cmake_cache={"OHOS_ARCH": "arm64-v8a" if arm else "x86_64", "OHOS_STL": "c++_shared", "OHOS_PLATFORM": "OHOS"},
        runner=None,
        cpus=(),
        node_arch=None,
        missing=tuple(missing),
        found=found | {"looked_in": "; ".join(looked) or "nowhere"},
    )


def resolve_target(name: str) -> Target:
    """The Target called `name`, probed on this machine. Unknown names are refused."""
    if name == "host":
        return _host_target()
    if name == "linux-arm64":
        return _linux_arm64_target()
    if name in ("ohos-arm64", "ohos-x86_64"):
        return _ohos_target(name)
    raise HmbuildError(f"Unknown target '{name}'; choose one of: {', '.join(TARGET_NAMES)} (see `hmbuild targets`).")


def plain_cmake_presets() -> list[dict]:
    """Configure presets of a generated project's CMakePresets.json: the same targets, for
    building with plain CMake where hmbuild (and Conan) are not installed."""
    ohos_tc = "$env{OHOS_NDK_HOME}/native/build/cmake/ohos.toolchain.cmake"
    rows = [
        ("host", "this machine", None, {}, True),
        ("linux-arm64", "aarch64 Linux, Debian cross GCC, tests under qemu", "${sourceDir}/toolchains/aarch64-linux-gnu.cmake", {}, True),
        ("ohos-arm64", "OpenHarmony arm64-v8a (OHOS_NDK_HOME)", ohos_tc, {"OHOS_ARCH": "arm64-v8a", "OHOS_STL": "c++_shared"}, False),
        ("ohos-x86_64", "OpenHarmony x86_64 emulator (OHOS_NDK_HOME)", ohos_tc, {"OHOS_ARCH": "x86_64", "OHOS_STL": "c++_shared"}, False),
    ]
    presets = []
    for name, display, toolchain, cache, testable in rows:
        for bt in ("Release", "Debug"):
            presets.append({"name": f"{name}-{bt.lower()}", "display": f"{display} ({bt})", "toolchain": toolchain,
                            "cache": {"CMAKE_BUILD_TYPE": bt, **cache}, "testable": testable})
    return presets
