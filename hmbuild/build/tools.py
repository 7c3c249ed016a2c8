"""The build tools hmbuild drives (Conan, CMake, Ninja, ctest, ccache): the environment they run
in, where they are, hmbuild's own Conan home, and one step runner that keeps each step's output
in a log and turns a failure into one sentence. builder and runtime_package both run through it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from hmbuild.errors import HmbuildError
from hmbuild.resources import cache_dir, toolchains_dir


def tool_env() -> dict[str, str]:
    """Environment for Conan/CMake/Ninja: the Python environment's bin first (the pinned cmake
    and ninja wheels live there even when the venv is not activated) and hmbuild's Conan home."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["CONAN_HOME"] = str(conan_home())
    return env


def conan_home() -> Path:
    # hmbuild's own Conan home, so the user's ~/.conan2 settings and profiles are left alone.
    return Path(os.environ.get("HMBUILD_CONAN_HOME") or cache_dir() / "conan")


def tool_path(name: str) -> str:
    """The path of a build tool (conan, cmake, ninja, ctest) on tool_env()'s PATH, the pinned one first."""
    path = shutil.which(name, path=tool_env()["PATH"])
    if path is None:
        raise HmbuildError(f"{name} was not found; reinstall hmbuild (`pip install hmbuild`) to get the pinned {name}.")
    return path


def ccache_launcher() -> str | None:
    """ccache's path when it is on PATH and HMBUILD_CCACHE is not 0: every compile then goes through it."""
    if os.environ.get("HMBUILD_CCACHE") == "0":
        return None
    return shutil.which("ccache")


def run_step(cmd: list[str], log: Path, what: str, cwd: Path | None = None, env: dict | None = None,
             verbose: bool = False) -> str:
    """Run one build step, its output kept in `log`; a failure gives Conan's own error sentence when
    there is one, else shows the tail and says where the rest is."""
    env = env or tool_env()
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace")
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(proc.stdout)
    if verbose:
        sys.stderr.write(proc.stdout)
    if proc.returncode != 0:
        conan_errors = [line.removeprefix("ERROR: ") for line in proc.stdout.splitlines() if line.startswith("ERROR: ")]
        if conan_errors:
            raise HmbuildError(f"{what} failed: {conan_errors[-1].rstrip('.')} (the full log is {log}).")
        tail = "\n".join(proc.stdout.rstrip().splitlines()[-25:])
        sys.stderr.write(tail + "\n")
        raise HmbuildError(f"{what} failed (exit {proc.returncode}); the full log is {log}.")
    return proc.stdout


def ensure_conan_home() -> Path:
    home = conan_home()
    home.mkdir(parents=True, exist_ok=True)
    src = toolchains_dir() / "settings_user.yml"
    dst = home / "settings_user.yml"
    if not dst.exists() or dst.read_bytes() != src.read_bytes():
        shutil.copyfile(src, dst)
    if not (home / "profiles" / "default").exists():
        log = home / "hmbuild-detect.log"
        run_step([tool_path("conan"), "profile", "detect", "--exist-ok"], log,
                 "Detecting the build machine's Conan profile")
    return home
