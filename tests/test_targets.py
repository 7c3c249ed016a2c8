"""Target resolution: the one place target knowledge lives."""
import platform
from pathlib import Path

import pytest

from hmbuild.build.builder import render_host_profile
from hmbuild.errors import HmbuildError
from hmbuild.targets.target import TARGET_NAMES, find_ohos_sdk, plain_cmake_presets, resolve_target


def test_unknown_target_is_refused_with_the_list_of_targets():
    with pytest.raises(HmbuildError) as err:
        resolve_target("android-arm64")
    msg = str(err.value)
    assert "android-arm64" in msg
    for name in TARGET_NAMES:
        assert name in msg


def test_host_target_matches_this_machine():
    t = resolve_target("host")
    assert t.triple.startswith(platform.machine().replace("amd64", "x86_64"))
    assert t.runner == () and t.can_run_tests and not t.emulated


def test_linux_arm64_runs_under_qemu_with_the_gnu_sysroot():
    t = resolve_target("linux-arm64")
    assert t.triple == "aarch64-linux-gnu"
    assert t.conan_arch == "armv8"
    assert Path(t.runner[0]).name == "qemu-aarch64"
    assert t.runner[1:] == ("-L", "/usr/aarch64-linux-gnu")
    assert {"cortex-a53", "cortex-a76", "max"} <= set(t.cpus)


def test_missing_cross_tools_name_the_apt_command(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH
    monkeypatch.setenv("HMBUILD_ARM64_TOOLCHAIN", "gcc")  # not zig, the fallback (tests/test_zig.py)
    t = resolve_target("linux-arm64")
    whats = " ".join(m.what for m in t.missing)
    assert "aarch64-linux-gnu-g++" in whats and "qemu-aarch64" in whats
    with pytest.raises(HmbuildError) as err:
        t.require_buildable()
    assert "apt-get install -y qemu-user g++-aarch64-linux-gnu" in str(err.value)


def _fake_sdk(root: Path) -> Path:
    native = root / "native"
    (native / "build" / "cmake").mkdir(parents=True)
    (native / "build" / "cmake" / "ohos.toolchain.cmake").write_text("# fake\n")
    return native


@pytest.fixture
def no_default_sdk(monkeypatch, tmp_path):
    monkeypatch.delenv("OHOS_NDK_HOME", raising=False)
    monkeypatch.delenv("OHOS_SDK_NATIVE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_ohos_sdk_is_found_through_ohos_ndk_home(monkeypatch, tmp_path, no_default_sdk):
    native = _fake_sdk(tmp_path / "sdk")
    monkeypatch.setenv("OHOS_NDK_HOME", str(tmp_path / "sdk"))
    found, _ = find_ohos_sdk()
    assert found == native
    t = resolve_target("ohos-arm64")
    assert t.triple == "aarch64-linux-ohos"
    assert t.cmake_toolchain_file == native / "build/cmake/ohos.toolchain.cmake"
    assert t.cmake_cache["OHOS_ARCH"] == "arm64-v8a" and t.cmake_cache["OHOS_STL"] == "c++_shared"
    assert not t.can_run_tests


def test_ohos_sdk_is_found_through_ohos_sdk_native(monkeypatch, tmp_path, no_default_sdk):
    native = _fake_sdk(tmp_path / "other")
    monkeypatch.setenv("OHOS_SDK_NATIVE", str(native))
    t = resolve_target("ohos-x86_64")
    assert t.cmake_toolchain_file == native / "build/cmake/ohos.toolchain.cmake"
    assert t.cmake_cache["OHOS_ARCH"] == "x86_64"
    assert t.triple == "x86_64-linux-ohos"


def test_ohos_sdk_in_the_deveco_default_location(tmp_path, no_default_sdk):
    native = _fake_sdk(tmp_path / "home" / "Huawei/Sdk/openharmony/12")
    assert find_ohos_sdk()[0] == native


def test_missing_ohos_sdk_names_both_variables(no_default_sdk):
    t = resolve_target("ohos-arm64")
    with pytest.raises(HmbuildError) as err:
        t.require_buildable()
    assert "OHOS_NDK_HOME" in str(err.value) and "OHOS_SDK_NATIVE" in str(err.value)


def test_linux_arm64_conan_profile_cross_compiles_and_emulates():
    t = resolve_target("linux-arm64")
    text = render_host_profile(t, "Release")
    assert "arch=armv8" in text and "os=Linux" in text and "build_type=Release" in text
    assert "aarch64-linux-gnu-g++" in text
    assert '"CMAKE_CROSSCOMPILING_EMULATOR": "' + ";".join(t.runner) + '"' in text


def test_ohos_conan_profile_uses_the_sdk_toolchain(monkeypatch, tmp_path, no_default_sdk):
    native = _fake_sdk(tmp_path / "sdk")
    monkeypatch.setenv("OHOS_NDK_HOME", str(tmp_path / "sdk"))
    text = render_host_profile(resolve_target("ohos-arm64"), "Debug")
    assert "os=OHOS" in text and "compiler.libcxx=libc++" in text
    assert str(native / "build/cmake/ohos.toolchain.cmake") in text


def test_plain_cmake_presets_cover_every_target_and_build_type():
    names = {p["name"] for p in plain_cmake_presets()}
    assert names == {f"{t}-{bt}" for t in TARGET_NAMES for bt in ("release", "debug")}


def test_the_ohos_stl_comes_from_hmbuild_toml_and_the_environment_wins(monkeypatch, tmp_path, no_default_sdk):
    from hmbuild.config.project import load_project, resolve_ohos_stl

    monkeypatch.delenv("HMBUILD_OHOS_STL", raising=False)
    (tmp_path / "hmbuild.toml").write_text('[project]\nname = "p"\n[build]\nohos_stl = "c++_static"\n')
    project = load_project(tmp_path)
    assert resolve_target("ohos-arm64", resolve_ohos_stl(project)).cmake_cache["OHOS_STL"] == "c++_static"
    assert resolve_target("ohos-arm64").cmake_cache["OHOS_STL"] == "c++_shared"  # the default, as DevEco's template
    monkeypatch.setenv("HMBUILD_OHOS_STL", "c++_shared")
    assert resolve_target("ohos-x86_64", resolve_ohos_stl(project)).cmake_cache["OHOS_STL"] == "c++_shared"
    (tmp_path / "hmbuild.toml").write_text('[project]\nname = "p"\n[build]\nohos_stl = "gnustl"\n')
    with pytest.raises(HmbuildError, match=r"\[build\] ohos_stl 'gnustl' is not an OHOS STL; use c\+\+_shared or c\+\+_static\.$"):
        load_project(tmp_path)
