"""A stand-in for the OpenHarmony SDK's native/ folder, assembled from public parts.

`build_standin(public_dir)` lays out an SDK-shaped native/ in hmbuild's cache from:
the SDK's own toolchain file and headers (../shared/ohos-public, unmodified), Debian's LLVM 19
(thin wrappers), Debian's musl and compiler builtins, libc++ built from LLVM 19.1 sources (the
PyPI wheel ziglang==0.14.1), OpenHarmony's crt files and NDK link stubs generated from the
.ndk.json lists. It gives the OHOS ABI from public parts, not the phone's libraries.

What it relies on, and what only a device or a real SDK can confirm, is in docs/targets.md.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Callable

from hmbuild.errors import HmbuildError

STANDIN_MARKER = "hmbuild-standin.json"
STANDIN_WHAT = "OHOS ABI from public parts, not the phone's libraries"
LLVM = Path("/usr/lib/llvm-19")
CLANG_MAJOR = "19"
ZIG_WHEEL = "ziglang==0.14.1"  # LLVM 19.1 libc++; zig 0.17's libc++ 22 is too new for clang-19
PUBLIC_ENV = "HMBUILD_OHOS_PUBLIC"
LAYOUT_VERSION = "1"  # bump when the layout below changes, so old stand-ins are rebuilt

# OHOS triple → (Debian arch, musl triple, Debian GNU triple, builtins suffix)
TRIPLES = {
    "aarch64-linux-ohos": ("arm64", "aarch64-linux-musl", "aarch64-linux-gnu", "aarch64"),
    "x86_64-linux-ohos": ("amd64", "x86_64-linux-musl", "x86_64-linux-gnu", "x86_64"),
}
DEB_PACKAGES = ("musl", "musl-dev", "linux-libc-dev")

# The files of ../shared/ohos-public this needs (README.md there says what each is in the SDK).
PUBLIC_FILES = (
    "build/cmake/ohos.toolchain.cmake",
    "build/cmake/sdk_native_platforms.cmake",
    "interface_sdk_c/arkui/napi/native_api.h",
    "interface_sdk_c/arkui/napi/common.h",
    "interface_sdk_c/arkui/napi/libnapi.ndk.json",
    "interface_sdk_c/third_party/node/src/js_native_api.h",
    "interface_sdk_c/third_party/node/src/js_native_api_types.h",
    "interface_sdk_c/third_party/node/src/node_api.h",
    "interface_sdk_c/third_party/node/src/node_api_types.h",
    "interface_sdk_c/hiviewdfx/hilog/include/hilog/log.h",
    "interface_sdk_c/hiviewdfx/hilog/libhilog.ndk.json",
    "third_party_musl/libc.map.txt",
    "third_party_musl/crt/aarch64/crti.s",
    "third_party_musl/crt/aarch64/crtn.s",
    "third_party_musl/crt/x86_64/crti.s",
    "third_party_musl/crt/x86_64/crtn.s",
    "third_party_musl/arch/generic/crtbrand.s",
)
# NDK list → stub library (BUILD.gn output_name), as the SDK builds them.
STUBS = {
    "interface_sdk_c/arkui/napi/libnapi.ndk.json": "libace_napi.z.so",
    "interface_sdk_c/hiviewdfx/hilog/libhilog.ndk.json": "libhilog_ndk.z.so",
}

# libc++ for musl with the pthread API; the rest of LLVM 19's __config_site defaults.
CONFIG_SITE = """\
#ifndef _LIBCPP___CONFIG_SITE
#define _LIBCPP___CONFIG_SITE
/* Written by hmbuild's OHOS stand-in: libc++ 19 on musl (OpenHarmony's libc is a musl fork). */
#define _LIBCPP_ABI_VERSION 1
#define _LIBCPP_ABI_NAMESPACE __1
#define _LIBCPP_HAS_MUSL_LIBC
#define _LIBCPP_HAS_THREAD_API_PTHREAD
#define _LIBCPP_HAS_NO_VENDOR_AVAILABILITY_ANNOTATIONS
#define _LIBCPP_HAS_NO_TIME_ZONE_DATABASE
#define _LIBCPP_PSTL_BACKEND_SERIAL
#define _LIBCPP_HARDENING_MODE_DEFAULT 2 /* _LIBCPP_HARDENING_MODE_NONE */
#endif
"""

Progress = Callable[[str], None]


def default_public_dir(repo: Path | None = None) -> Path | None:
    """HMBUILD_OHOS_PUBLIC, else ../shared/ohos-public next to the repository, else
    /work/shared/ohos-public; None when none of them exists."""
    env = os.environ.get(PUBLIC_ENV)
    if env:
        return Path(env).expanduser()
    candidates = []
    if repo is not None:
        candidates.append(repo.parent / "shared" / "ohos-public")
    candidates.append(Path("/work/shared/ohos-public"))
    for c in candidates:
        if (c / "build" / "cmake" / "ohos.toolchain.cmake").is_file():
            return c
    return None


def check_public_dir(public: Path) -> None:
    if not public.is_dir():
        raise HmbuildError(f"--ohos-public {public} is not a folder; pass the folder that holds the public "
                           "OpenHarmony files (like /work/shared/ohos-public).")
    absent = [f for f in PUBLIC_FILES if not (public / f).is_file()]
    if absent:
        raise HmbuildError(f"--ohos-public {public} lacks {absent[0]} ({len(absent)} of {len(PUBLIC_FILES)} "
                           "files missing); pass the folder that holds the public OpenHarmony files "
                           "(build/, interface_sdk_c/, third_party_musl/).")


def _tool(name: str) -> Path:
    path = LLVM / "bin" / name
    if not path.exists():
        raise HmbuildError(f"{path} is missing; fix: apt-get install -y clang-{CLANG_MAJOR} lld-{CLANG_MAJOR} "
                           f"llvm-{CLANG_MAJOR} libclang-rt-{CLANG_MAJOR}-dev")
    return path


def _run(cmd: list[str], what: str, cwd: Path | None = None) -> str:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        err = [line for line in (r.stderr or r.stdout).splitlines() if "error" in line] or (r.stderr or r.stdout).splitlines()
        tail = err[:2]
        raise HmbuildError(f"{what} failed ({' | '.join(tail)}); the command was: {' '.join(map(str, cmd[:6]))} …")
    return r.stdout


def standin_key(public: Path) -> str:
    """Key of a stand-in: the public files, the LLVM it wraps, the libc++ wheel, the layout."""
    h = hashlib.sha256()
    for f in PUBLIC_FILES:
        h.update(f.encode())
        h.update((public / f).read_bytes())
    clang_version = _run([_tool("clang"), "--version"], "clang --version").splitlines()[0]
    h.update(f"{clang_version}|{ZIG_WHEEL}|{LAYOUT_VERSION}".encode())
    return h.hexdigest()[:16]


def standin_root() -> Path:
    from hmbuild.resources import cache_dir

    return cache_dir() / "ohos-standin"


def find_standin() -> Path | None:
    """native/ of the newest complete stand-in in the cache (complete ones only: they appear by rename)."""
    root = standin_root()
    if not root.is_dir():
        return None
    hits = [p / "native" for p in root.iterdir() if (p / "native" / STANDIN_MARKER).is_file()]
    hits.sort(key=lambda p: (p / STANDIN_MARKER).stat().st_mtime, reverse=True)
    return hits[0] if hits else None


def standin_info(native: Path) -> dict | None:
    """The marker of a stand-in native/ folder, or None when `native` is not one (a real SDK)."""
    marker = native / STANDIN_MARKER
    if not marker.is_file():
        return None
    try:
        return json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# --- downloads (cached) ----------------------------------------------------------------------

def _debs(downloads: Path, progress: Progress) -> dict[str, Path]:
    """The .debs, by `<package>:<arch>`, fetched once with apt-get download."""
    need = [f"{p}:{TRIPLES[t][0]}" for t in TRIPLES for p in DEB_PACKAGES] + [f"libclang-rt-{CLANG_MAJOR}-dev:arm64"]
    downloads.mkdir(parents=True, exist_ok=True)

    def have(spec: str) -> Path | None:
        pkg, arch = spec.split(":")
        hits = sorted(downloads.glob(f"{pkg}_*_{arch}.deb"))
        return hits[-1] if hits else None

    todo = [s for s in need if have(s) is None]
    if todo:
        progress(f"apt-get download {' '.join(todo)}")
        if "arm64" not in subprocess.run(["dpkg", "--print-foreign-architectures"], capture_output=True,
                                         text=True).stdout.split():
            raise HmbuildError("Debian's arm64 packages are not available; fix: dpkg --add-architecture arm64 "
                               "&& apt-get update")
        r = subprocess.run(["apt-get", "download", *todo], cwd=downloads, capture_output=True, text=True)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["?"])[-1]
            raise HmbuildError(f"apt-get download {' '.join(todo)} failed ({last}); fix: dpkg --add-architecture "
                               "arm64 && apt-get update, then run setup again.")
    return {s: have(s) for s in need}


def _zig_wheel(downloads: Path, progress: Progress) -> Path:
    hits = sorted(downloads.glob("ziglang-0.14.1-*.whl"))
    if not hits:
        progress(f"pip download {ZIG_WHEEL} (LLVM 19.1 libc++ sources)")
        import sys

        r = subprocess.run([sys.executable, "-m", "pip", "download", ZIG_WHEEL, "--no-deps", "-q", "-d",
                            str(downloads)], capture_output=True, text=True)
        hits = sorted(downloads.glob("ziglang-0.14.1-*.whl"))
        if r.returncode != 0 or not hits:
            raise HmbuildError(f"pip download {ZIG_WHEEL} failed; fix: make PyPI reachable and run setup again.")
    return hits[-1]


# --- assembly ---------------------------------------------------------------------------------

def _wrapper(path: Path, body: str) -> None:
    path.write_text(f"#!/bin/sh\n# Written by hmbuild's OHOS stand-in.\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def _write_llvm_bin(native: Path) -> None:
    bindir = native / "llvm" / "bin"
    bindir.mkdir(parents=True)
    here = 'here="$(cd "$(dirname "$0")" && pwd)"'
    # -ccc-install-dir makes the driver treat llvm/bin as its own folder, as in the SDK: the sysroot
    # (../../sysroot), libc++ (../lib/<triple>, ../include/c++/v1) and ld.lld are found from there.
    for name in ("clang", "clang++"):
        _wrapper(bindir / name, f'{here}\nexec {_tool(name)} -ccc-install-dir "$here" '
                                f'-resource-dir "$here/../lib/clang/{CLANG_MAJOR}" "$@"')
    # Debian ships ld.lld-19 only as /usr/lib/llvm-19/bin/ld.lld; -fuse-ld=lld looks next to clang.
    for name in ("ld.lld", "llvm-ar", "llvm-ranlib", "llvm-strip", "llvm-nm", "llvm-objcopy", "llvm-objdump",
                 "llvm-readelf", "llvm-readobj", "llvm-symbolizer"):
        real = LLVM / "bin" / name
        if real.exists():
            _wrapper(bindir / name, f'exec {real} "$@"')
    for name in ("ld.lld", "llvm-ar", "llvm-ranlib"):
        if not (bindir / name).exists():
            _tool(name)  # raises with the install command
    (native / "oh-uni-package.json").write_text(json.dumps({
        "apiVersion": "12", "displayName": "Native (hmbuild stand-in)", "meta": {"metaVersion": "3.0.0"},
        "path": "native", "releaseType": "Release", "version": "5.0.0.0-standin"}, indent=2) + "\n")


def _resource_dir(native: Path, extracted: dict[str, Path]) -> None:
    res = native / "llvm" / "lib" / "clang" / CLANG_MAJOR
    res.mkdir(parents=True)
    # The compiler's own headers (arm_neon.h, …) are the same for every target.
    (res / "include").symlink_to(LLVM / "lib" / "clang" / CLANG_MAJOR / "include")
    for triple, (_, _, _, suffix) in TRIPLES.items():
        src_root = extracted["libclang-rt:arm64"] if suffix == "aarch64" else Path("/")
        src = src_root / "usr/lib/llvm-19/lib/clang/19/lib/linux"
        out = res / "lib" / triple
        out.mkdir(parents=True)
        for have, want in ((f"libclang_rt.builtins-{suffix}.a", "libclang_rt.builtins.a"),
                           (f"clang_rt.crtbegin-{suffix}.o", "clang_rt.crtbegin.o"),
                           (f"clang_rt.crtend-{suffix}.o", "clang_rt.crtend.o")):
            if not (src / have).is_file():
                raise HmbuildError(f"{src / have} is missing; fix: apt-get install -y libclang-rt-19-dev")
            shutil.copy2(src / have, out / want)


def _copy_resolved(src: Path, dst: Path, root: Path) -> None:
    """Copy a file out of an extracted .deb, following symlinks inside that tree (Debian's are absolute)."""
    seen = 0
    while src.is_symlink() and seen < 10:
        target = os.readlink(src)
        src = (root / target.lstrip("/")) if target.startswith("/") else (src.parent / target)
        seen += 1
    if src.is_file():
        shutil.copy2(src, dst)


def _sysroot(native: Path, public: Path, extracted: dict[str, Path]) -> None:
    sysroot = native / "sysroot"
    inc = sysroot / "usr" / "include"
    (inc / "napi").mkdir(parents=True)
    napi = public / "interface_sdk_c/arkui/napi"
    node = public / "interface_sdk_c/third_party/node/src"
    shutil.copy2(napi / "native_api.h", inc / "napi")
    shutil.copy2(napi / "common.h", inc / "napi")
    for h in ("js_native_api.h", "js_native_api_types.h", "node_api.h", "node_api_types.h"):
        shutil.copy2(node / h, inc / h)
    shutil.copytree(public / "interface_sdk_c/hiviewdfx/hilog/include/hilog", inc / "hilog")
    for triple, (arch, musl, gnu, _) in TRIPLES.items():
        root = extracted[f"{arch}"]
        # musl's headers differ per arch (bits/), so each triple gets its own include folder,
        # which the driver searches before usr/include; the kernel headers go with them.
        tinc = inc / triple
        shutil.copytree(root / "usr/include" / musl, tinc, symlinks=False)
        for sub in ("linux", "asm-generic", "mtd", "rdma", "sound", "video", "xen", "misc", "drm"):
            if (root / "usr/include" / sub).is_dir() and not (tinc / sub).exists():
                shutil.copytree(root / "usr/include" / sub, tinc / sub)
        if (root / "usr/include" / gnu / "asm").is_dir():
            shutil.copytree(root / "usr/include" / gnu / "asm", tinc / "asm")
        lib = sysroot / "usr" / "lib" / triple
        lib.mkdir(parents=True)
        for f in (root / "usr/lib" / musl).iterdir():
            _copy_resolved(f, lib / f.name, root)
        _copy_resolved(root / "lib" / musl / "libc.so", lib / "libc.so", root)
        # The loader name clang links into executables; qemu -L <sysroot> finds it here.
        (sysroot / "lib").mkdir(exist_ok=True)
        loader = sysroot / "lib" / f"ld-musl-{'aarch64' if arch == 'arm64' else 'x86_64'}.so.1"
        loader.symlink_to(f"../usr/lib/{triple}/libc.so")
        # OpenHarmony's crti/crtn include crtbrand.s, which writes the .note.ohos.ident note.
        cpu = "aarch64" if arch == "arm64" else "x86_64"
        for crt in ("crti", "crtn"):
            _run([_tool("clang"), f"--target={triple}", "-c", "-I", public / "third_party_musl/arch/generic",
                  "-o", lib / f"{crt}.o", public / f"third_party_musl/crt/{cpu}/{crt}.s"], f"assembling {crt}.s")


def _stubs(native: Path, public: Path) -> None:
    """NDK link stubs, built the SDK's way: one empty function per name, `int NAME = 0;` per
    variable, -shared with the SONAME, and no version script (it would version every reference)."""
    lists = native / "hmbuild-standin" / "lists"
    lists.mkdir(parents=True)
    shutil.copy2(public / "third_party_musl/libc.map.txt", lists / "libc.map.txt")
    work = native / "hmbuild-standin" / "stub-src"
    work.mkdir(parents=True)
    for rel, soname in STUBS.items():
        shutil.copy2(public / rel, lists / Path(rel).name)
        entries = json.loads((public / rel).read_text(encoding="utf-8"))
        lines = [f"int {e['name']} = 0;" if e.get("type") == "variable" else f"void {e['name']}(void) {{}}"
                 for e in entries]
        src = work / (soname.removesuffix(".so") + ".c")
        src.write_text("/* Generated by hmbuild from " + Path(rel).name + " */\n" + "\n".join(lines) + "\n")
        for triple in TRIPLES:
            out = native / "sysroot" / "usr" / "lib" / triple / soname
            _run([native / "llvm/bin/clang", f"--target={triple}", "-fPIC", "-shared", "-nostdlib",
                  "-fuse-ld=lld", f"-Wl,-soname,{soname}", "-o", out, src], f"building the stub {soname}")


def _libcxx_sources(src: Path) -> dict[str, list[Path]]:
    skip_dirs = ("support/ibm", "support/win32", "pstl", "experimental")
    cxx = [p for p in sorted((src / "libcxx/src").rglob("*.cpp"))
           if not any(d in p.as_posix() for d in skip_dirs)]
    abi = [p for p in sorted((src / "libcxxabi/src").glob("*.cpp")) if p.name != "cxa_noexception.cpp"]
    unw = [src / "libunwind/src" / n for n in ("libunwind.cpp", "UnwindLevel1.c", "UnwindLevel1-gcc-ext.c",
                                                "UnwindRegistersSave.S", "UnwindRegistersRestore.S",
                                                "gcc_personality_v0.c")]
    return {"c++": cxx, "c++abi": abi, "unwind": unw}


def _libcxx(native: Path, src: Path, progress: Progress) -> None:
    """libc++, libc++abi, libunwind for both triples.

    - llvm/lib/<triple>/libc++_shared.so (libc++ + libc++abi, SONAME libc++_shared.so), with the
      builtins and libunwind kept inside (--exclude-libs): else modules import __emutls_get_address;
    - libc++.so, a linker script naming it, so the driver's -lc++ links c++_shared;
    - libc++.a / libc++abi.a / libunwind.a compiled without visibility annotations and with hidden
      visibility, so c++_static (-static-libstdc++) does not export libc++ from the module.
    """
    inc = native / "llvm" / "include" / "c++" / "v1"
    shutil.copytree(src / "libcxx/include", inc)
    (inc / "__config_site").write_text(CONFIG_SITE, encoding="utf-8")
    # zig's copy replaces upstream's `#include <__config_site>` with -D flags of its own; put it back.
    config = (inc / "__config").read_text(encoding="utf-8")
    zig_patch = "/* zig patch: instead of including __config_site, zig adds -D flags when compiling */"
    if zig_patch in config:
        (inc / "__config").write_text(config.replace(zig_patch, "#include <__config_site>"), encoding="utf-8")
    shutil.copytree(src / "libcxxabi/include", inc, dirs_exist_ok=True)
    # The OHOS driver adds llvm/include/c++/v1 only when llvm/include/<triple>/c++/v1 exists (the
    # SDK's per-target __config_site folder); ours is shared by both triples, so these stay empty.
    for triple in TRIPLES:
        (native / "llvm" / "include" / triple / "c++" / "v1").mkdir(parents=True)
    clang = native / "llvm/bin/clang"
    sources = _libcxx_sources(src)
    common = ["-O2", "-fPIC", "-DNDEBUG", "-funwind-tables", "-Wno-everything"]
    flags = {
        "c++": ["-std=c++23", "-D_LIBCPP_BUILDING_LIBRARY", "-DLIBCXX_BUILDING_LIBCXXABI",
                "-D_LIBCPP_REMOVE_TRANSITIVE_INCLUDES", "-I", src / "libcxx/src", "-fvisibility-inlines-hidden"],
        "c++abi": ["-std=c++23", "-D_LIBCXXABI_BUILDING_LIBRARY", "-D_LIBCPP_BUILDING_LIBRARY",
                   "-DLIBCXXABI_USE_LLVM_UNWINDER", "-I", src / "libcxx/src", "-I", src / "libcxxabi/include"],
        "unwind": ["-D_LIBUNWIND_HIDE_SYMBOLS", "-fvisibility=hidden", "-I", src / "libunwind/include",
                   "-fno-exceptions", "-fno-rtti"],
    }
    hidden = ["-fvisibility=hidden", "-D_LIBCPP_DISABLE_VISIBILITY_ANNOTATIONS",
              "-D_LIBCXXABI_DISABLE_VISIBILITY_ANNOTATIONS"]
    jobs = []
    objroot = native / "hmbuild-standin" / "obj"
    for triple in TRIPLES:
        for lib, files in sources.items():
            for variant in (("shared", "static") if lib != "unwind" else ("static",)):
                for f in files:
                    out = objroot / triple / variant / lib / (f.relative_to(src).as_posix().replace("/", "_") + ".o")
                    lang = ["-x", "c++"] if f.suffix == ".cpp" else []
                    cmd = [clang if f.suffix != ".cpp" else native / "llvm/bin/clang++", f"--target={triple}",
                           *common, *flags[lib], *(hidden if variant == "static" and lib != "unwind" else []),
                           *lang, "-c", f, "-o", out]
                    if f.suffix == ".cpp" and lib != "unwind":
                        cmd.insert(2, "-nostdinc++")
                        cmd[3:3] = ["-isystem", inc]
                    jobs.append((out, cmd))
    progress(f"compiling libc++, libc++abi, libunwind for {len(TRIPLES)} triples ({len(jobs)} files)")
    for out, _ in jobs:
        out.parent.mkdir(parents=True, exist_ok=True)
    done = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for fut in concurrent.futures.as_completed([pool.submit(_run, cmd, f"compiling {cmd[-3].name}")
                                                    for _, cmd in jobs]):
            fut.result()
            done += 1
            if done % 50 == 0 or done == len(jobs):
                progress(f"  {done}/{len(jobs)} compiled")
    ar = native / "llvm/bin/llvm-ar"
    for triple in TRIPLES:
        lib = native / "llvm" / "lib" / triple
        lib.mkdir(parents=True, exist_ok=True)
        for name in ("c++", "c++abi", "unwind"):
            objs = sorted((objroot / triple / "static" / name).glob("*.o"))
            _run([ar, "rcs", lib / f"lib{name}.a", *objs], f"archiving lib{name}.a")
        builtins = native / f"llvm/lib/clang/{CLANG_MAJOR}/lib/{triple}/libclang_rt.builtins.a"
        objs = sorted((objroot / triple / "shared" / "c++").glob("*.o")) + \
            sorted((objroot / triple / "shared" / "c++abi").glob("*.o"))
        _run([native / "llvm/bin/clang++", f"--target={triple}", "-shared", "-nostdlib++", "-fuse-ld=lld",
              "--rtlib=compiler-rt", "-Wl,-soname,libc++_shared.so", "-Wl,-z,now", "-o", lib / "libc++_shared.so",
              *objs, lib / "libunwind.a", "-Wl,--exclude-libs,libclang_rt.builtins.a",
              "-Wl,--exclude-libs,libunwind.a", "-lc", builtins], f"linking libc++_shared.so for {triple}")
        (lib / "libc++.so").write_text("/* hmbuild stand-in: -lc++ means libc++_shared.so */\n"
                                       "INPUT(libc++_shared.so)\n")
    shutil.rmtree(objroot)


def build_standin(public: Path, progress: Progress = lambda s: None) -> tuple[Path, bool]:
    """(native/ of the stand-in for these public files, whether it was built now)."""
    public = Path(public).expanduser().resolve()
    check_public_dir(public)
    key = standin_key(public)
    root = standin_root()
    final = root / key
    if (final / "native" / STANDIN_MARKER).is_file():
        return final / "native", False
    downloads = root / "downloads"
    debs = _debs(downloads, progress)
    wheel = _zig_wheel(downloads, progress)
    root.mkdir(parents=True, exist_ok=True)
    # Assembled in a temporary folder and renamed, so a half-built stand-in is never found.
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
    try:
        native = tmp / "native"
        native.mkdir()
        progress("extracting the .debs (musl, kernel headers, aarch64 builtins)")
        extracted: dict[str, Path] = {}
        for spec, deb in debs.items():
            pkg, arch = spec.split(":")
            dest = tmp / "debs" / ("libclang-rt:arm64" if pkg.startswith("libclang-rt") else arch)
            dest.mkdir(parents=True, exist_ok=True)
            _run(["dpkg-deb", "-x", deb, dest], f"dpkg-deb -x {deb.name}")
            extracted["libclang-rt:arm64" if pkg.startswith("libclang-rt") else arch] = dest
        progress("laying out native/ (toolchain file, LLVM wrappers, builtins, sysroot, crt, NDK stubs)")
        (native / "build" / "cmake").mkdir(parents=True)
        for f in ("ohos.toolchain.cmake", "sdk_native_platforms.cmake"):
            shutil.copy2(public / "build/cmake" / f, native / "build/cmake" / f)
        _write_llvm_bin(native)
        _resource_dir(native, extracted)
        _sysroot(native, public, extracted)
        _stubs(native, public)
        progress("unpacking the LLVM 19.1 libc++ sources from " + wheel.name)
        src = tmp / "llvm-src"
        with zipfile.ZipFile(wheel) as z:
            for n in z.namelist():
                if n.startswith(("ziglang/lib/libcxx/", "ziglang/lib/libcxxabi/", "ziglang/lib/libunwind/")):
                    z.extract(n, src)
        _libcxx(native, src / "ziglang" / "lib", progress)
        shutil.rmtree(tmp / "debs")
        shutil.rmtree(src)
        clang_version = _run([_tool("clang"), "--version"], "clang --version").splitlines()[0]
        (native / STANDIN_MARKER).write_text(json.dumps({
            "what": f"hmbuild's OpenHarmony SDK stand-in: {STANDIN_WHAT}",
            "key": key, "ohos_public": str(public), "clang": clang_version, "libcxx_sources": ZIG_WHEEL,
            "debs": sorted(d.name for d in debs.values()), "triples": sorted(TRIPLES),
            "layout_version": LAYOUT_VERSION}, indent=2) + "\n")
        os.replace(native, tmp / "ready")  # keep rename atomic: tmp/<key>/native appears in one step
        (tmp / "final").mkdir()
        os.replace(tmp / "ready", tmp / "final" / "native")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp / "final", final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final / "native", True
