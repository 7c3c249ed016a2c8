"""linux-arm64 with zig (the PyPI ziglang package) instead of Debian's cross GCC: how the toolchain
is chosen, and a project built with it whose kernels, model and NAPI library run under qemu."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import elf_machine, run_hmbuild
from hmbuild.build.builder import render_host_profile, tool_path
from hmbuild.errors import HmbuildError
from hmbuild.model.catalog import model_path
from hmbuild.targets.node import arm64_node
from hmbuild.targets.target import find_zig, resolve_target

needs_zig = pytest.mark.skipif(find_zig() is None, reason="zig is not installed (pip install ziglang)")
ZIG = {"HMBUILD_ARM64_TOOLCHAIN": "zig"}
MOON = "In 1969, the first human to walk on the moon was"


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("HMBUILD_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@needs_zig
def test_zig_is_asked_for_by_name_and_gets_clang_settings_and_wrappers(monkeypatch, cache):
    monkeypatch.setenv("HMBUILD_ARM64_TOOLCHAIN", "zig")
    t = resolve_target("linux-arm64")
    assert (t.compiler, t.libcxx) == ("clang", "libc++") and int(t.compiler_version) >= 18
    assert t.missing == () and t.cmake_cache["HMLLM_ZIG"] == "ON"
    for tool in (t.cc, t.cxx, t.cmake_cache["CMAKE_AR"], t.cmake_cache["CMAKE_RANLIB"]):
        assert Path(tool).is_file() and os.access(tool, os.X_OK) and Path(tool).is_relative_to(cache)
    out = subprocess.run([t.cxx, "--version"], capture_output=True, text=True).stdout
    assert "clang" in out
    profile = render_host_profile(t, "Release")
    assert "compiler=clang" in profile and "compiler.libcxx=libc++" in profile and '"HMLLM_ZIG": "ON"' in profile
    assert "--strip-debug" in profile and "--strip-debug" not in render_host_profile(t, "Debug")


@needs_zig
def test_without_debians_cross_gcc_zig_is_the_fallback(monkeypatch, cache, tmp_path):
    monkeypatch.delenv("HMBUILD_ARM64_TOOLCHAIN", raising=False)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))  # no aarch64-linux-gnu-g++, no qemu
    t = resolve_target("linux-arm64")
    assert t.compiler == "clang" and t.missing == ()
    t.require_buildable()
    assert not t.can_run_tests  # built here, but nothing here runs it
    monkeypatch.setenv("HMBUILD_ARM64_TOOLCHAIN", "gcc")
    t = resolve_target("linux-arm64")
    with pytest.raises(HmbuildError) as err:
        t.require_buildable()
    assert "apt-get install -y qemu-user g++-aarch64-linux-gnu" in str(err.value) and "ziglang" in str(err.value)


def test_an_unknown_toolchain_is_one_sentence(tmp_path):
    root = tmp_path / "p"
    run_hmbuild("new", str(root), "--name", "p", check=True)
    proc = run_hmbuild("-C", str(root), "build", "--target", "linux-arm64", env={"HMBUILD_ARM64_TOOLCHAIN": "clang"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "HMBUILD_ARM64_TOOLCHAIN='clang' is not a toolchain; use gcc, zig or auto" in proc.stderr
    assert not (root / "build").exists()


@pytest.fixture(scope="module")
def zig_project(tmp_path_factory):
    if find_zig() is None or not shutil.which("qemu-aarch64") or not Path("/usr/aarch64-linux-gnu/lib").is_dir():
        pytest.skip("needs zig, qemu-user and the aarch64 glibc sysroot")
    root = tmp_path_factory.mktemp("zig") / "demo"
    run_hmbuild("new", str(root), "--name", "demo", check=True)
    proc = run_hmbuild("-C", str(root), "build", "--target", "linux-arm64", "--json", env=ZIG)
    assert proc.returncode == 0, proc.stderr
    return root, json.loads(proc.stdout)


@pytest.mark.qemu
def test_the_zig_build_is_aarch64_with_libcxx_linked_in_and_no_debug_info(zig_project):
    _, data = zig_project
    lib = Path(data["library"])
    assert elf_machine(lib) == 183 and data["build_dir"].endswith("build/linux-arm64-release")
    dynamic = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True).stdout
    assert "libc.so.6" in dynamic and "libstdc++" not in dynamic and "libc++" not in dynamic
    sections = subprocess.run(["readelf", "-S", str(lib)], capture_output=True, text=True).stdout
    assert ".debug_info" not in sections and lib.stat().st_size < 2_000_000


@pytest.mark.qemu
def test_the_zig_built_kernels_and_session_pass_under_qemu_max(zig_project):
    """Every NEON kernel set (dotprod and i8mm on -cpu max) against the scalar reference, and the
    session on the real model, as zig compiled them."""
    _, data = zig_project
    env = {**os.environ, "QEMU_CPU": "max", "QEMU_LD_PREFIX": "/usr/aarch64-linux-gnu",
           "HMLLM_TEST_MODEL": str(model_path())}
    proc = subprocess.run([tool_path("ctest"), "--output-on-failure", "-R", "hmllm[.](kernels|session)$"],
                          cwd=data["build_dir"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "100% tests passed out of 2" in proc.stdout


@pytest.mark.qemu
def test_the_zig_built_model_runner_answers_as_the_gcc_build_does(zig_project):
    root, _ = zig_project
    proc = run_hmbuild("-C", str(root), "run", "--target", "linux-arm64", "--cpu", "cortex-a76", "--prompt", MOON,
                       "--max-tokens", "4", "--json", env=ZIG)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["text"].startswith(" Neil Armstrong") and data["kernels"] == "neon-dotprod"


@pytest.mark.qemu
def test_the_zig_built_library_loads_into_the_aarch64_node_and_routes_an_intent(zig_project, tmp_path):
    root, data = zig_project
    script = tmp_path / "smoke.mjs"
    script.write_text(f"""
import assert from 'node:assert/strict';
import {{ loadLibrary }} from {json.dumps((root / 'tests/napi/load_library.mjs').as_uri())};
const lib = loadLibrary();
const id = lib.init(process.env.HMBUILD_TEST_MODEL, {{ contextSize: 256, threads: 2 }});
const out = new TextDecoder().decode(await lib.inferAsync(id, new TextEncoder().encode({json.dumps(MOON)}).buffer,
                                                          {{ maxTokens: 3 }}));
assert.match(out, /Neil Armstrong/);
const examples = [{{ text: 'Wake me up at half past six', label: 'alarm' }},
                  {{ text: 'Will it rain in Shanghai this afternoon?', label: 'weather' }},
                  {{ text: 'Play something relaxing by Debussy', label: 'music' }},
                  {{ text: 'Remember to buy milk and eggs', label: 'note' }}];
const r = await lib.classifyAsync(id, new TextEncoder().encode('Set an alarm for 7 am tomorrow').buffer,
                                  ['alarm', 'weather', 'music', 'note'], {{ examples, calibrate: true }});
assert.equal(r.label, 'alarm');
lib.release(id);
console.log('ok');
""")
    env = {**os.environ, "QEMU_CPU": "cortex-a76", "QEMU_LD_PREFIX": "/usr/aarch64-linux-gnu",
           "HMBUILD_LIBRARY": data["library"], "HMBUILD_TEST_MODEL": str(model_path())}
    proc = subprocess.run(["qemu-aarch64", str(arm64_node()), str(script)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
