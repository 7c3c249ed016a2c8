"""`hmbuild new`: rendering, name validation, and nothing half-written on failure."""
import json
import re
import tomllib

import jinja2
import pytest

from hmbuild import generator
from hmbuild.errors import HmbuildError
from hmbuild.generator import new_project, render_tree, validate_name


def test_new_renders_a_deveco_har_module(tmp_path):
    result = new_project(tmp_path / "notes", name="notes_llm")
    root = result.root
    settings = tomllib.loads((root / "hmbuild.toml").read_text())
    assert settings["project"]["name"] == "notes_llm"
    for rel in ("oh-package.json5", "build-profile.json5", "hvigorfile.ts", "Index.ets", "src/main/module.json5",
                "src/main/cpp/CMakeLists.txt", "src/main/cpp/napi_init.cpp",
                "src/main/cpp/types/libnotes_llm/Index.d.ts", "src/main/cpp/types/libnotes_llm/oh-package.json5",
                "src/main/ets/LlmEngine.ets", "tests/napi/session.test.mjs", "src/main/cpp/hmllm/CMakeLists.txt"):
        assert (root / rel).is_file(), rel
    assert not [p for p in root.rglob("*.j2")], "template suffixes must not leak into the project"
    napi = (root / "src/main/cpp/napi_init.cpp").read_text()
    assert '"notes_llm"' in napi and "napi_module_register" in napi and "__attribute__((constructor" in napi
    dts = (root / "src/main/cpp/types/libnotes_llm/Index.d.ts").read_text()
    for fn in ("init", "inferAsync", "classifyAsync", "warmup", "cancel", "release", "stats"):
        assert re.search(rf"export (const|function) {fn}\b", dts), fn
    assert "import lib from 'libnotes_llm.so'" in (root / "src/main/ets/LlmEngine.ets").read_text()
    assert "libnotes_llm.so" in (root / "oh-package.json5").read_text()


def test_generated_cmake_presets_are_valid_and_per_target(tmp_path):
    root = new_project(tmp_path / "p", name="p1").root
    presets = json.loads((root / "src/main/cpp/CMakePresets.json").read_text())
    names = [p["name"] for p in presets["configurePresets"] if not p.get("hidden")]
    assert "linux-arm64-release" in names and "ohos-arm64-debug" in names
    arm = next(p for p in presets["configurePresets"] if p["name"] == "linux-arm64-release")
    assert arm["toolchainFile"].endswith("toolchains/aarch64-linux-gnu.cmake")
    assert (root / "src/main/cpp/toolchains/aarch64-linux-gnu.cmake").is_file()
    assert not (root / "src/main/cpp/CMakeUserPresets.json").exists()


def test_name_defaults_to_the_folder_name(tmp_path):
    assert new_project(tmp_path / "my-notes").name == "my_notes"


@pytest.mark.parametrize("bad", ["Notes", "1notes", "notes-llm", "notes llm", "", "n" * 49, "class", "näme", "a.b"])
def test_bad_names_are_refused_and_nothing_is_written(tmp_path, bad):
    with pytest.raises(HmbuildError) as err:
        new_project(tmp_path / "proj", name=bad)
    assert "name" in str(err.value) or "reserved" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_a_non_empty_folder_is_left_alone(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "keep.txt").write_text("mine")
    with pytest.raises(HmbuildError):
        new_project(tmp_path / "proj", name="proj")
    assert [p.name for p in (tmp_path / "proj").iterdir()] == ["keep.txt"]


def test_an_empty_existing_folder_is_used(tmp_path):
    (tmp_path / "proj").mkdir()
    assert (new_project(tmp_path / "proj").root / "hmbuild.toml").is_file()


def test_a_failure_halfway_leaves_no_partial_folder(tmp_path, monkeypatch):
    def broken_vendor(root):
        (root / "half-written").write_text("x")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(generator, "vendor_runtime", broken_vendor)
    with pytest.raises(HmbuildError) as err:
        new_project(tmp_path / "proj", name="proj")
    assert "No space left" in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_templates_use_strict_undefined(tmp_path, monkeypatch):
    tpl = tmp_path / "templates" / "broken"
    tpl.mkdir(parents=True)
    (tpl / "x.txt.j2").write_text("{{ not_given }}")
    monkeypatch.setattr(generator, "templates_dir", lambda: tmp_path / "templates")
    with pytest.raises(jinja2.UndefinedError):
        render_tree("broken", tmp_path / "out", {"name": "n"})


def test_validate_name_accepts_identifiers():
    assert validate_name("notes_llm2") == "notes_llm2"
