"""A plain install, as a new user makes it: `pip install <wheel>` with no extras, in a fresh venv,
gives every command (numpy and gguf are runtime dependencies, not the dev extra's)."""

from __future__ import annotations

import json
import subprocess
import sys
import venv

import pytest

from conftest import REPO


@pytest.fixture(scope="session")
def plain_venv(tmp_path_factory):
    wheels = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(wheels), str(REPO)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = wheels.glob("hmbuild-*.whl")
    env_dir = tmp_path_factory.mktemp("plain") / "venv"
    venv.create(env_dir, with_pip=True)
    proc = subprocess.run([str(env_dir / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           str(wheel)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return env_dir


def test_a_plain_install_plans_a_3b_model(plain_venv, tmp_path):
    proc = subprocess.run([str(plain_venv / "bin/hmbuild"), "plan", "--params", "3B", "--layers", "36", "--kv-heads", "8",
                           "--head-dim", "128", "--vocab", "151936", "--json"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True and data["total_bytes"] > 1_000_000_000


@pytest.mark.parametrize("command", ["quantize", "eval", "bench", "build", "test", "package", "new", "run", "ndk-check"])
def test_a_plain_install_has_every_command(plain_venv, tmp_path, command):
    proc = subprocess.run([str(plain_venv / "bin/hmbuild"), command, "--help"], cwd=tmp_path, capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "Usage: hmbuild" in proc.stdout, proc.stderr


def test_a_plain_install_generates_a_project(plain_venv, tmp_path):
    proc = subprocess.run([str(plain_venv / "bin/hmbuild"), "new", str(tmp_path / "p")], capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "p/hmbuild.toml").is_file() and (tmp_path / "p/src/main/cpp/hmllm/src/engine.cpp").is_file()


def test_a_plain_install_has_the_ndk_check_and_the_loader_sources(plain_venv, tmp_path):
    """pyelftools is a runtime dependency, and the registration loader's C sources ship in the wheel."""
    code = ("import elftools, hmbuild.build.ndk_check, hmbuild.build.registration as r; "
            "print(sorted(p.name for p in r.SOURCES.iterdir()))")
    proc = subprocess.run([str(plain_venv / "bin/python"), "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['ace_napi_double.c', 'loader.c']"
