"""A non-editable install must carry templates/, toolchains/ and native/ as package data."""
import subprocess
import sys
import zipfile

from conftest import REPO


def test_wheel_ships_templates_toolchains_and_native(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(REPO)], capture_output=True, text=True)
    if proc.returncode != 0 and "hatchling" in proc.stderr:
        proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path),
                               str(REPO)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("hmbuild-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("hmbuild/cli/__init__.py",
                   "hmbuild/_data/templates/project/hmbuild.toml.j2",
                   "hmbuild/_data/templates/project/src/main/cpp/CMakeLists.txt.j2",
                   "hmbuild/_data/toolchains/settings_user.yml",
                   "hmbuild/_data/toolchains/profiles/linux-arm64.profile.j2",
                   "hmbuild/_data/native/src/gguf_reader.cpp",
                   "hmbuild/_data/native/napi/hmllm_napi.cpp"):
        assert needed in names, needed
