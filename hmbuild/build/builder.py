"""Build driver: Target + Project -> Conan profile -> conan install -> CMake/Ninja build.

Each target and build type has its own folder, build/<target>-<type>/ (CMake binary dir) with
conan/ inside it (Conan's generated toolchain). Conan and CMake configure only run again when
their inputs changed; after that Ninja decides, so a second build with no change does no work.
With a Conan remote (hmbuild.build.runtime_package) the runtime comes from its shared Conan package
instead of being compiled here; with ccache on PATH every compile goes through it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hmbuild import __version__
from hmbuild.config.api_schema import regenerate_if_stale
from hmbuild.errors import HmbuildError
from hmbuild.targets.node import napi_headers_dir
from hmbuild.config.project import Project
from hmbuild.build.tools import (ccache_launcher, conan_home, ensure_conan_home, run_step, tool_env,  # noqa: F401
                                  tool_path)
from hmbuild.resources import cache_dir
from hmbuild.templating import environment
from hmbuild.targets.target import Target


@dataclass(frozen=True)
class BuildResult:
    target: str
    triple: str
    build_type: str
    library: Path
    build_dir: Path
    up_to_date: bool  # nothing was rebuilt
    sanitize: str | None = None  # address | undefined | thread, or None
    runtime: str = "vendored"  # compiled from src/main/cpp/hmllm, or its package: downloaded | built | cached
    runtime_package: str | None = None  # hmllm/<version>#<revision>:<package id>
    remote: str | None = None
    uploaded: bool = False  # the runtime binary was uploaded to the remote by this build
    ccache: bool = False

    def to_json(self) -> dict:
        return {
            "target": self.target,
            "triple": self.triple,
            "build_type": self.build_type,
            "library": str(self.library),
            "build_dir": str(self.build_dir),
            "up_to_date": self.up_to_date,
            "sanitize": self.sanitize,
            "runtime": self.runtime,
            "runtime_package": self.runtime_package,
            "remote": self.remote,
            "uploaded": self.uploaded,
            "ccache": self.ccache,
        }


def render_host_profile(target: Target, build_type: str) -> str:
    name = {"host": "host", "linux-arm64": "linux-arm64"}.get(target.name, "ohos")
    return environment().get_template(f"profiles/{name}.profile.j2").render(target=target, build_type=build_type)


def _write_if_changed(path: Path, text: str) -> bool:
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def _forget_old_profile(build_dir: Path, profile_text: str) -> None:
    """CMake picks the compiler and its initial flags once per build folder and keeps them when the
    Conan profile changes (Debian's GCC and zig share build/linux-arm64-*): when the profile
    changed, the CMake cache goes, so the next configure starts over and every object is rebuilt
    (ccache keeps that quick)."""
    record = build_dir / "hmbuild-profile"
    before = record.read_text(encoding="utf-8") if record.exists() else None
    if before != profile_text and (build_dir / "CMakeCache.txt").exists():
        (build_dir / "CMakeCache.txt").unlink()
        shutil.rmtree(build_dir / "CMakeFiles", ignore_errors=True)
    record.write_text(profile_text, encoding="utf-8")


# One build per choice: ASan and TSan cannot share a process; ASan and UBSan can, and together
# they cost one instrumented build instead of two (the usual pairing, and what CI runs). UBSan
# alone keeps its run fast. -fno-sanitize-recover makes any undefined behaviour fail the test
# that hit it.
_UBSAN = "-fno-sanitize-recover=undefined"
SANITIZE_FLAGS = {
    "address,undefined": f"-fsanitize=address,undefined {_UBSAN} -fno-omit-frame-pointer",
    "address": "-fsanitize=address -fno-omit-frame-pointer",
    "undefined": f"-fsanitize=undefined {_UBSAN} -fno-omit-frame-pointer",
    "thread": "-fsanitize=thread -fno-omit-frame-pointer",
}
SANITIZERS = tuple(SANITIZE_FLAGS)


def build(project: Project, target: Target, build_type: str, verbose: bool = False,
          sanitize: str | None = None, remote: str | None = None) -> BuildResult:
    """Builds lib<name>.so. `remote` (default: HMBUILD_REMOTE, then hmbuild.toml [build] remote) is
    the Conan remote the runtime's binary is shared through; without one the runtime is compiled
    from the vendored sources, as plain CMake and DevEco Studio do."""
    from hmbuild.build import runtime_package

    regenerate_if_stale(project)  # an edited api.toml reaches napi_init.cpp and Index.d.ts before compiling
    target.require_buildable()
    if sanitize is not None and sanitize not in SANITIZE_FLAGS:
        raise HmbuildError(f"Unknown sanitizer '{sanitize}'; use one of: {', '.join(SANITIZERS)}.")
    if sanitize and target.name != "host":
        raise HmbuildError("--sanitize works for the host target only (the sanitizer runtimes must load into the "
                           "host Node.js); use --target host.")
    remote = runtime_package.resolve_remote(project, remote)
    if remote and sanitize:
        # The runtime must be instrumented too, and a shared binary is not.
        print(f"hmbuild: --sanitize compiles the runtime from its vendored sources (remote '{remote}' not used)",
              file=sys.stderr)
        remote = None
    if remote:
        ensure_conan_home()
        runtime_package.check_usable(project, remote)  # before anything is written
    build_dir = project.build_dir(target.name, build_type, sanitize)
    conan_dir = build_dir / "conan"
    conan_dir.mkdir(parents=True, exist_ok=True)
    log = build_dir / "hmbuild-build.log"
    log.write_text("", encoding="utf-8")

    profile_text = render_host_profile(target, build_type)
    profile = conan_dir / "host.profile"
    _write_if_changed(profile, profile_text)

    headers = None
    if target.conan_os != "OHOS":
        headers = napi_headers_dir(install=True)
    ccache = ccache_launcher()
    cmake_args = [
        f"-DCMAKE_TOOLCHAIN_FILE={conan_dir / 'conan_toolchain.cmake'}",
        f"-DCMAKE_BUILD_TYPE={build_type}",
        f"-D{project.name.upper()}_BUILD_TESTS=ON",
        # Always given, so switching between the vendored and the packaged runtime (or turning
        # ccache off) leaves nothing behind in the CMake cache.
        f"-DHMLLM_FROM_PACKAGE={'ON' if remote else 'OFF'}",
        *((f"-DCMAKE_{lang}_COMPILER_LAUNCHER={ccache}" if ccache else f"-UCMAKE_{lang}_COMPILER_LAUNCHER")
          for lang in ("C", "CXX")),
        *(f"-D{k}={v}" for k, v in sorted(target.cmake_cache.items())),
    ]
    if headers:
        cmake_args.append(f"-DNODE_API_HEADERS_DIR={headers}")
    if sanitize:
        flags = SANITIZE_FLAGS[sanitize]
        cmake_args += [f"-DCMAKE_CXX_FLAGS={flags}", f"-DCMAKE_EXE_LINKER_FLAGS={flags}",
                       f"-DCMAKE_SHARED_LINKER_FLAGS={flags}"]
    conanfile_text = (project.root / "conanfile.py").read_text(encoding="utf-8")
    conan_args = ["-pr:h", str(profile), "-pr:b", "default", "--output-folder", str(conan_dir)]
    if remote:
        # Exported on every build (a fraction of a second): an edit to the vendored runtime is a new
        # recipe revision, which changes the stamp below and so installs (builds) the new binary.
        reference = runtime_package.export_recipe(project, conan_dir, log)
        conan_args += runtime_package.install_args(reference, remote, conan_dir)
        if ccache:
            launchers = {f"CMAKE_{lang}_COMPILER_LAUNCHER": ccache for lang in ("C", "CXX")}
            conan_args += ["-c", f"hmllm/*:tools.cmake.cmaketoolchain:extra_variables*={json.dumps(launchers)}"]
    else:
        conan_args.append("-nr")
    stamp_text = "\n".join([__version__, profile_text, conanfile_text, *conan_args, *cmake_args])
    stamp_hash = hashlib.sha256(stamp_text.encode()).hexdigest()
    stamp = build_dir / "hmbuild-configure.stamp"
    configured = (stamp.exists() and stamp.read_text().strip() == stamp_hash
                  and (conan_dir / "conan_toolchain.cmake").exists() and (build_dir / "build.ninja").exists())

    package = None
    if not configured:
        ensure_conan_home()
        install = f"conan install for {target.name}" + (f" with remote '{remote}'" if remote else "")
        print(f"hmbuild: {install} ({target.triple}, {build_type})", file=sys.stderr)
        run_step([tool_path("conan"), "install", str(project.root), *conan_args], log, install, verbose=verbose)
        if remote:
            package = runtime_package.share(conan_dir, remote, log)
            runtime_package.announce(package, remote)
        print(f"hmbuild: configuring {build_dir}", file=sys.stderr)
        _forget_old_profile(build_dir, profile_text)
        run_step([tool_path("cmake"), "-S", str(project.cpp_dir), "-B", str(build_dir), "-G", "Ninja",
                  f"-DCMAKE_MAKE_PROGRAM={tool_path('ninja')}", *cmake_args], log,
                 f"CMake configure for {target.name}", verbose=verbose)
        stamp.write_text(stamp_hash + "\n")
    elif remote:
        package = runtime_package.cached(conan_dir)
        runtime_package.announce(package, remote)

    print(f"hmbuild: building lib{project.name}.so for {target.name}", file=sys.stderr)
    build_env = tool_env()
    if ccache:
        # Paths under the project are hashed relative to it, so the same sources compiled in another
        # folder (another CI runner's checkout, a fresh project, a test's temporary project) are
        # cache hits. __FILE__ then is relative to the build folder: nothing locates files by it (the
        # native tests get their data folders as absolute paths from CMake).
        build_env.setdefault("CCACHE_BASEDIR", str(project.root))
    out = run_step([tool_path("cmake"), "--build", str(build_dir)], log, f"The {target.name} build",
                   env=build_env, verbose=verbose)
    library = build_dir / project.library_name
    if not library.is_file():
        raise HmbuildError(f"The build finished but {library} is missing; see {log}.")
    if target.conan_os == "OHOS":
        from hmbuild.build.ohos import check_built_module

        check_built_module(target, library)  # what the device provides: NDK imports only, registration, BIND_NOW
        print(f"hmbuild: {library.name} passes the NDK-module check", file=sys.stderr)
    return BuildResult(
        target=target.name,
        triple=target.triple,
        build_type=build_type,
        library=library,
        build_dir=build_dir,
        up_to_date=configured and "no work to do" in out,
        sanitize=sanitize,
        runtime=package.status if package else "vendored",
        runtime_package=package.reference if package else None,
        remote=remote,
        uploaded=bool(package and package.uploaded),
        ccache=ccache is not None,
    )
