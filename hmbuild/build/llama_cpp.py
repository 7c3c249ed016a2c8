"""llama.cpp cross-built for aarch64 Linux with a small driver, hm_llama_count, that runs under
qemu-aarch64 next to hmllm for instruction counts (same token ids, 1 thread, prompt as one batch,
greedy). The source is vendor/llama.cpp of the pinned llama-cpp-python sdist from PyPI (fetched with
pip into the cache, as scripts/mca_int4.py does); each -march gets its own cached build."""

from __future__ import annotations

import hashlib
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Callable

from hmbuild.build.tools import ccache_launcher, run_step, tool_env, tool_path
from hmbuild.errors import HmbuildError
from hmbuild.resources import cache_dir

LLAMA_CPP_PYTHON = "0.3.36"
DRIVER_DIR = Path(__file__).resolve().parent / "llama_cpp_driver"
EXE = "hm_llama_count"

# The cross toolchain: Debian's g++-aarch64-linux-gnu.
CC, CXX = "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-g++"

# Configure flags; GGML_CPU_ARM_ARCH (the -march of ggml's CPU backend) is added per build. The
# LLAMA_BUILD_* options of this llama.cpp default to OFF under add_subdirectory() already; they are
# spelled out so the build stays this small if that changes. LLAMA_CURL is gone in this version
# (setting it only prints a deprecation warning), so it is not passed. GGML_CPU_REPACK is ON by default
# and kept so: the counts are of llama.cpp as it runs out of the box.
CMAKE_FLAGS = {
    "CMAKE_SYSTEM_NAME": "Linux",
    "CMAKE_SYSTEM_PROCESSOR": "aarch64",
    "CMAKE_C_COMPILER": CC,
    "CMAKE_CXX_COMPILER": CXX,
    "CMAKE_BUILD_TYPE": "Release",
    "CMAKE_EXE_LINKER_FLAGS": "-static",
    "BUILD_SHARED_LIBS": "OFF",
    "GGML_NATIVE": "OFF",
    "GGML_OPENMP": "OFF",
    "GGML_CPU_REPACK": "ON",
    "LLAMA_BUILD_COMMON": "OFF",
    "LLAMA_BUILD_TESTS": "OFF",
    "LLAMA_BUILD_EXAMPLES": "OFF",
    "LLAMA_BUILD_TOOLS": "OFF",
    "LLAMA_BUILD_SERVER": "OFF",
    "LLAMA_BUILD_APP": "OFF",
}

# -mcpu names (as qemu's -cpu and hmbuild's --cpu use them) by the -march their build gets. The
# Cortex-A55 is an Armv8.2-A core with dotprod and fp16 (scripts/mca_int4.py counts it so too); the
# qemu 7.2 of Debian 12 has no model of it.
_NO_DOTPROD = {"cortex-a35", "cortex-a53", "cortex-a57", "cortex-a72", "cortex-a73"}
_DOTPROD = {"cortex-a55", "cortex-a65", "cortex-a75", "cortex-a76", "cortex-a77", "cortex-a78", "cortex-x1",
            "neoverse-n1"}


def arm_arch_for_cpu(cpu: str) -> str:
    """The GGML_CPU_ARM_ARCH for a qemu -cpu name: armv8-a for cores without dotprod (cortex-a53,
    a72), armv8.2-a+dotprod+fp16 for dotprod cores (cortex-a76, neoverse-n1, cortex-a55, ...), and
    armv8.6-a+dotprod+i8mm+fp16 for qemu's `max`."""
    name = cpu.strip().lower()
    if name == "max":
        return "armv8.6-a+dotprod+i8mm+fp16"
    if name in _NO_DOTPROD:
        return "armv8-a"
    if name in _DOTPROD:
        return "armv8.2-a+dotprod+fp16"
    raise HmbuildError(f"No llama.cpp -march is known for CPU {cpu!r}; use one of "
                       f"{', '.join(sorted(_NO_DOTPROD | _DOTPROD | {'max'}))}.")


def _sdist(progress: Callable[[str], None]) -> Path:
    """The pinned llama-cpp-python sdist in the cache, downloaded with pip when missing."""
    folder = cache_dir() / "llama-sdist"
    sdist = folder / f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"
    if sdist.is_file():
        return sdist
    folder.mkdir(parents=True, exist_ok=True)
    progress(f"downloading the llama-cpp-python {LLAMA_CPP_PYTHON} sdist into {folder} (pip)")
    log = folder / "pip-download.log"
    log.write_text("", encoding="utf-8")
    run_step([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
              f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "-d", str(folder)], log,
             f"Downloading llama-cpp-python {LLAMA_CPP_PYTHON} with pip (check that PyPI is reachable)")
    if not sdist.is_file():
        raise HmbuildError(f"pip saved no {sdist.name} in {folder}; see {log} and retry.")
    return sdist


def _llama_source(sdist: Path, progress: Callable[[str], None]) -> Path:
    """vendor/llama.cpp of the sdist, extracted once beside it (into a temporary folder first, so a
    half-extracted tree is never taken for a whole one)."""
    dest = sdist.parent / f"llama.cpp-{LLAMA_CPP_PYTHON}"
    if (dest / "include" / "llama.h").is_file():
        return dest
    progress(f"extracting vendor/llama.cpp from {sdist.name}")
    prefix = f"llama_cpp_python-{LLAMA_CPP_PYTHON}/vendor/llama.cpp/"
    tmp = Path(tempfile.mkdtemp(prefix=f"{dest.name}.tmp-", dir=sdist.parent))
    try:
        with tarfile.open(sdist) as tf:
            members = [m for m in tf.getmembers() if m.name.startswith(prefix)]
            tf.extractall(tmp, members=members, filter="data")
        tree = tmp / prefix.rstrip("/")
        if not (tree / "include" / "llama.h").is_file():
            raise HmbuildError(f"{sdist} has no vendor/llama.cpp/include/llama.h; delete it and retry.")
        if not dest.exists():
            tree.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _stamp(arch: str) -> str:
    """What a cached build was made from: the driver's files and the flags."""
    h = hashlib.sha256(LLAMA_CPP_PYTHON.encode())
    for f in sorted(DRIVER_DIR.iterdir()):
        if f.is_file():
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    h.update(repr(sorted(CMAKE_FLAGS.items())).encode() + arch.encode())
    return h.hexdigest()


def build_llama_count(arch: str, progress: Callable[[str], None] = lambda msg: None) -> Path:
    """hm_llama_count for aarch64 Linux with ggml's CPU backend built for -march=`arch` (static,
    runs under qemu-aarch64); built once per arch and driver version, then taken from the cache.
    Returns the executable's path."""
    out = cache_dir() / "llama-cpp" / f"aarch64-{arch}-{LLAMA_CPP_PYTHON}"
    exe = out / EXE
    stamp = _stamp(arch)
    stamp_file = out / f"{EXE}.stamp"
    if exe.is_file() and stamp_file.is_file() and stamp_file.read_text().strip() == stamp:
        return exe

    for tool in (CC, CXX):
        if shutil.which(tool) is None:
            raise HmbuildError(f"{tool} was not found; install the aarch64 cross compiler with "
                               "`apt-get install -y g++-aarch64-linux-gnu`.")
    source = _llama_source(_sdist(progress), progress)

    out.parent.mkdir(parents=True, exist_ok=True)
    log = out.with_name(out.name + ".log")  # beside the build, so a failed one's log stays
    log.write_text("", encoding="utf-8")
    tmp = Path(tempfile.mkdtemp(prefix=f"{out.name}.tmp-", dir=out.parent))
    try:
        build = tmp / "build"
        ccache = ccache_launcher()
        flags = {**CMAKE_FLAGS, "GGML_CPU_ARM_ARCH": arch, "LLAMA_CPP_DIR": str(source),
                 "CMAKE_MAKE_PROGRAM": tool_path("ninja")}
        if ccache:
            flags.update(CMAKE_C_COMPILER_LAUNCHER=ccache, CMAKE_CXX_COMPILER_LAUNCHER=ccache)
        else:
            flags["GGML_CCACHE"] = "OFF"  # else ggml picks ccache up by itself
        env = tool_env()
        # Paths under the cache are hashed relative to the build folder, so a rebuild in another
        # temporary folder (or for another -march: the llama and ggml-base objects) hits the cache.
        env.setdefault("CCACHE_BASEDIR", str(cache_dir()))
        progress(f"configuring llama.cpp for aarch64 -march={arch}")
        run_step([tool_path("cmake"), "-S", str(DRIVER_DIR), "-B", str(build), "-G", "Ninja",
                  *(f"-D{k}={v}" for k, v in flags.items())], log,
                 f"Configuring llama.cpp for -march={arch}", env=env)
        progress(f"building llama.cpp and {EXE} for -march={arch} (minutes; ccache {'on' if ccache else 'off'})")
        run_step([tool_path("cmake"), "--build", str(build), "--target", EXE], log,
                 f"Building {EXE} for -march={arch}", env=env)
        if not (build / EXE).is_file():
            raise HmbuildError(f"The llama.cpp build finished without {build / EXE}; see {log}.")
        (build / EXE).rename(tmp / EXE)
        shutil.rmtree(build)
        (tmp / f"{EXE}.stamp").write_text(stamp + "\n")
        if out.exists():  # a build of an older driver, or one a concurrent run finished first
            old = out.with_name(out.name + ".old")
            shutil.rmtree(old, ignore_errors=True)
            out.rename(old)
            shutil.rmtree(old, ignore_errors=True)
        tmp.chmod(0o755)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone after the rename; a failed build's files go
    return exe
