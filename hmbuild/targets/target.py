"""Targets: the one place that knows what a target is and what this machine has for it.

`resolve_target(name)` probes the machine once and returns a frozen `Target` holding everything
the rest of hmbuild needs (triple, compilers, sysroot, runner, CPU list, Conan settings, what is
missing and the command that installs it). Nothing else in hmbuild looks up a compiler or a path.
"""

from __future__ import annotations

import glob
import hashlib
import os
import platform
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from hmbuild.config.settings import OHOS_STLS
from hmbuild.errors import HmbuildError, shown as _shown

TARGET_NAMES = ("host", "linux-arm64", "ohos-arm64", "ohos-x86_64")

APT_CROSS = "apt-get update && apt-get install -y qemu-user g++-aarch64-linux-gnu"
GNU_AARCH64_SYSROOT = Path("/usr/aarch64-linux-gnu")

# linux-arm64's compiler: Debian's cross GCC, or zig (the PyPI package ziglang: one pip install, no
# system packages) when GCC is absent or HMBUILD_ARM64_TOOLCHAIN=zig asks for it. zig links its own
# libc++ statically and targets the glibc of the aarch64 Node.js builds (2.28), so the library
# loads wherever that Node runs; running the tests still needs qemu and the aarch64 glibc sysroot.
ARM64_TOOLCHAIN_ENV = "HMBUILD_ARM64_TOOLCHAIN"
ARM64_TOOLCHAINS = ("gcc", "zig")
ZIG_TARGET = "aarch64-linux-gnu.2.28"
PIP_ZIG = "pip install 'ziglang==0.17.1'"

# CPUs worth testing the runtime's CPU-feature dispatch on: no dotprod, dotprod, i8mm+.
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
        # Under qemu-aarch64 (linux-arm64, ohos-arm64); ohos-x86_64's runner is the musl loader, native.
        return bool(self.runner) and Path(self.runner[0]).name.startswith("qemu")

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


def find_zig() -> str | None:
    """The zig of the ziglang package in hmbuild's own environment, else one on PATH."""
    import importlib.util

    spec = importlib.util.find_spec("ziglang")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            exe = Path(folder) / "zig"
            if exe.is_file() and os.access(exe, os.X_OK):
                return str(exe)
    return _which("zig")


def zig_wrappers(zig: str) -> dict[str, str]:
    """Executables for `zig cc` / `zig c++` / `zig ar` / `zig ranlib` (CMake and Conan want one
    program per tool, not a program and a subcommand), written once into hmbuild's cache and
    named by the zig they call."""
    from hmbuild.resources import cache_dir

    folder = cache_dir() / "zig" / hashlib.sha256(zig.encode()).hexdigest()[:16]
    tools = {"cc": ("cc", True), "cxx": ("c++", True), "ar": ("ar", False), "ranlib": ("ranlib", False)}
    paths = {}
    for key, (sub, targeted) in tools.items():
        path = folder / f"zig-{sub}"
        # Conan's libc++ setting adds -stdlib=libc++, which zig (libc++ always) reports as unused.
        target = f" -target {ZIG_TARGET} -Wno-unused-command-line-argument" if targeted else ""
        text = f'#!/bin/sh\n# Written by hmbuild: {sub} of {zig}\nexec {shlex.quote(zig)} {sub}{target} "$@"\n'
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.chmod(0o755)
            tmp.replace(path)
        paths[key] = str(path)
    return paths


def _arm64_toolchain_choice() -> str:
    choice = os.environ.get(ARM64_TOOLCHAIN_ENV, "").strip().lower()
    if choice not in ("", "auto", *ARM64_TOOLCHAINS):
        raise HmbuildError(f"{ARM64_TOOLCHAIN_ENV}={_shown(choice)} is not a toolchain; use gcc, zig or auto "
                           "(Debian's cross GCC when installed, else zig).")
    return choice or "auto"


def _linux_arm64_target() -> Target:
    gxx = _which("aarch64-linux-gnu-g++")
    gcc = _which("aarch64-linux-gnu-gcc")
    qemu = _which("qemu-aarch64")
    sysroot = GNU_AARCH64_SYSROOT
    choice = _arm64_toolchain_choice()
    zig = find_zig() if choice == "zig" or (choice == "auto" and not (gxx and gcc)) else None
    # auto without GCC and without zig stays on GCC, whose missing entry names both fixes.
    use_zig = choice == "zig" or zig is not None
    missing = []
    found = {}
    cmake_cache = {}
    if use_zig and zig:
        tools = zig_wrappers(zig)
        cc, cxx = tools["cc"], tools["cxx"]
        found["compiler"] = f"{zig} c++ -target {ZIG_TARGET}"
        # HMLLM_ZIG: kernels.cmake spells the dotprod/i8mm flags zig's way.
        cmake_cache = {"CMAKE_AR": tools["ar"], "CMAKE_RANLIB": tools["ranlib"], "HMLLM_ZIG": "ON"}
        kind, version, libcxx = "clang", _compiler_identity(cxx)[1], "libc++"
    elif use_zig:
        cc = cxx = None
        missing.append(Missing(f"zig ({ARM64_TOOLCHAIN_ENV}=zig)", PIP_ZIG))
        kind, version, libcxx = "clang", "0", "libc++"
    else:
        cc, cxx = gcc, gxx
        if gxx and gcc:
            found["compiler"] = gxx
        else:
            missing.append(Missing("the aarch64 cross compiler (aarch64-linux-gnu-g++, or zig)",
                                   f"{APT_CROSS}, or {PIP_ZIG}"))
        kind, version = _compiler_identity(gxx) if gxx else ("gcc", "12")
        libcxx = "libstdc++11"
    has_sysroot = (sysroot / "lib" / "ld-linux-aarch64.so.1").exists()
    if has_sysroot:
        found["sysroot"] = str(sysroot)
    elif not use_zig:  # GCC links against it; zig brings its own glibc stubs and needs it only to run
        missing.append(Missing(f"the aarch64 glibc sysroot ({sysroot})", APT_CROSS))
    if qemu:
        found["qemu"] = qemu
    elif not use_zig:
        missing.append(Missing("qemu-aarch64 (runs the aarch64 tests)", APT_CROSS))
    # Without qemu or the sysroot a zig build still builds; its binaries cannot run here.
    runnable = not use_zig or (qemu is not None and has_sysroot)
    return Target(
        name="linux-arm64",
        triple="aarch64-linux-gnu",
        description=("generic aarch64 Linux (zig, libc++ linked in)" if use_zig else
                     "generic aarch64 Linux (Debian's cross GCC)") + "; tests run under qemu-aarch64",
        conan_os="Linux",
        conan_arch="armv8",
        compiler=kind,
        compiler_version=version,
        libcxx=libcxx,
        cc=cc,
        cxx=cxx,
        sysroot=sysroot,
        cmake_toolchain_file=None,
        cmake_cache=cmake_cache,
        runner=(qemu or "qemu-aarch64", "-L", str(sysroot)) if runnable else None,
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
    """(native/ folder of the first valid SDK, the places looked at). A real SDK (OHOS_SDK_NATIVE,
    OHOS_NDK_HOME, DevEco's default places) always wins; hmbuild's stand-in from public parts
    (`hmbuild setup --ohos-public DIR`) is used only when there is none."""
    from hmbuild.targets.ohos_standin import find_standin

    looked = []
    for source, native in ohos_sdk_candidates():
        looked.append(f"{native} ({source})")
        if (native / "build" / "cmake" / "ohos.toolchain.cmake").is_file():
            return native, looked
    standin = find_standin()
    looked.append(f"{standin or 'hmbuild cache'} (stand-in from `hmbuild setup --ohos-public`)")
    if standin is not None:
        return standin, looked
    return None, looked


OHOS_STL_ENV = "HMBUILD_OHOS_STL"


def ohos_stl(asked: str | None = None) -> str:
    """OHOS_STL for the ohos targets: c++_shared (DevEco's template default; the HAR then ships
    libc++_shared.so) unless c++_static is asked for (a project's `[build] ohos_stl`, resolved by
    config.project.resolve_ohos_stl) or, without a project, HMBUILD_OHOS_STL."""
    stl = (asked or os.environ.get(OHOS_STL_ENV, "")).strip() or "c++_shared"
    if stl not in OHOS_STLS:
        where = f"{OHOS_STL_ENV}={_shown(stl)}" if not asked else f"OHOS STL {_shown(stl)}"
        raise HmbuildError(f"{where} is not an OHOS STL; use {' or '.join(OHOS_STLS)}.")
    return stl


def _ohos_runner(native: Path, arm: bool) -> tuple[str, ...] | None:
    """How the stand-in's binaries run here, on its musl and libc++: aarch64 under
    `qemu-aarch64 -L sysroot`, x86_64 natively through the sysroot's musl loader. A real SDK's
    sysroot has no loader (the device has it), so its binaries run on a device only."""
    triple = "aarch64-linux-ohos" if arm else "x86_64-linux-ohos"
    sysroot = native / "sysroot"
    libs = f"{native / 'llvm' / 'lib' / triple}:{sysroot / 'usr' / 'lib' / triple}"
    if arm:
        qemu = shutil.which("qemu-aarch64")
        return (qemu, "-L", str(sysroot), "-E", f"LD_LIBRARY_PATH={libs}") if qemu else None
    loader = sysroot / "lib" / "ld-musl-x86_64.so.1"
    return (str(loader), "--library-path", libs) if loader.exists() else None


def _ohos_target(name: str, stl: str | None) -> Target:
    arm = name == "ohos-arm64"
    native, looked = find_ohos_sdk()
    missing = []
    found = {}
    toolchain_file = cc = cxx = None
    version = "15"
    standin = None
    if native is None:
        missing.append(Missing("the OpenHarmony SDK (not found: OHOS_NDK_HOME and OHOS_SDK_NATIVE are unset or wrong)",
                               OHOS_SDK_HINT + "; or build the stand-in: hmbuild setup --ohos-public DIR"))
    else:
        from hmbuild.targets.ohos_standin import STANDIN_WHAT, standin_info

        standin = standin_info(native)
        found["ohos_sdk"] = str(native) + (f" (stand-in: {STANDIN_WHAT})" if standin else "")
        found["ohos_sdk_kind"] = "stand-in" if standin else "OpenHarmony SDK"
        found["ohos_stl"] = ohos_stl(stl)
        toolchain_file = native / "build" / "cmake" / "ohos.toolchain.cmake"
        clangxx = native / "llvm" / "bin" / "clang++"
        if clangxx.exists():
            cxx, cc = str(clangxx), str(native / "llvm" / "bin" / "clang")
            version = _compiler_identity(cxx)[1]
            found["compiler"] = cxx
    runner = _ohos_runner(native, arm) if standin else None
    return Target(
        name=name,
        triple="aarch64-linux-ohos" if arm else "x86_64-linux-ohos",
        description=("HarmonyOS NEXT / OpenHarmony phones (arm64-v8a)" if arm
                     else "the DevEco emulator ABI (x86_64)") + (
            f"; hmbuild's SDK stand-in ({STANDIN_WHAT})" if standin else "; needs the OpenHarmony SDK; tests run on a device"),
        conan_os="OHOS",
        conan_arch="armv8" if arm else "x86_64",
        compiler="clang",
        compiler_version=version,
        libcxx="libc++",
        cc=cc,
        cxx=cxx,
        sysroot=(native / "sysroot") if native else None,
        cmake_toolchain_file=toolchain_file,
        cmake_cache={"OHOS_ARCH": "arm64-v8a" if arm else "x86_64", "OHOS_STL": ohos_stl(stl), "OHOS_PLATFORM": "OHOS",
                     # ctest runs the native tests through the runner (the toolchain file sets none).
                     **({"CMAKE_CROSSCOMPILING_EMULATOR": ";".join(runner)} if runner else {})},
        runner=runner,
        cpus=ARM64_TEST_CPUS if (arm and standin) else (),
        node_arch=None,
        missing=tuple(missing),
        found=found | {"looked_in": "; ".join(looked) or "nowhere"},
    )


def resolve_target(name: str, stl: str | None = None) -> Target:
    """The Target called `name`, probed on this machine. Unknown names are refused. `stl`
    (c++_shared or c++_static) is the project's choice for the ohos targets (None: the default)."""
    if name == "host":
        return _host_target()
    if name == "linux-arm64":
        return _linux_arm64_target()
    if name in ("ohos-arm64", "ohos-x86_64"):
        return _ohos_target(name, stl)
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
