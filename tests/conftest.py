import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_hmbuild(*args, cwd=None, env=None, check=False):
    """Runs the installed CLI as a user would, in a subprocess; returns CompletedProcess (text)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "hmbuild", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"hmbuild {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def elf_machine(path: Path) -> int:
    """e_machine of an ELF file: 62 = x86_64, 183 = aarch64."""
    data = Path(path).read_bytes()[:20]
    assert data[:4] == b"\x7fELF", f"{path} is not an ELF file"
    return int.from_bytes(data[18:20], "little")


def have_arm64_tools() -> bool:
    return bool(shutil.which("aarch64-linux-gnu-g++") and shutil.which("qemu-aarch64"))


@pytest.fixture
def hmbuild():
    return run_hmbuild


# Parallel compiles on the 2-core CI machine; each build folder is compiled once per session.
BUILD_ENV = {"CMAKE_BUILD_PARALLEL_LEVEL": "2"}


@pytest.fixture(scope="session")
def demo_project(tmp_path_factory):
    """One generated project ("demo") that every suite which builds and runs a plain project shares,
    so each target and build type is compiled once a session. A test that adds a file to it removes
    it again; a test that needs its own changes makes its own project."""
    root = tmp_path_factory.mktemp("shared") / "demo"
    run_hmbuild("new", str(root), "--name", "demo", check=True)
    return root


@pytest.fixture(scope="session")
def host_project(demo_project):
    """demo_project, built for host (Release)."""
    run_hmbuild("-C", str(demo_project), "build", "--target", "host", check=True, env=BUILD_ENV)
    return demo_project
