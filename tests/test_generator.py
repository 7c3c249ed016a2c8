"""`hmbuild new`: rendering, name validation, and nothing half-written on failure."""
import json
import re
import tomllib

import jinja2
import pytest

from hmbuild.scaffold import generator
from hmbuild.errors import HmbuildError
from hmbuild.scaffold.generator import new_project, render_tree, validate_name


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
    for needed in ("project", "api"):  # what HMBUILD_TEMPLATES_DIR must hold
        (tmp_path / "templates" / needed).mkdir()
    monkeypatch.setenv("HMBUILD_TEMPLATES_DIR", str(tmp_path / "templates"))
    with pytest.raises(jinja2.UndefinedError):
        render_tree("broken", tmp_path / "out", {"name": "n"})


def test_validate_name_accepts_identifiers():
    assert validate_name("notes_llm2") == "notes_llm2"


# --- generator safety: hostile input, per-language escaping, `new --force` ---------------------

import ast
import shutil
import subprocess

import json5
from click.testing import CliRunner

from hmbuild.cli import cli
from hmbuild.scaffold.generator import BASE, MANIFEST

HOSTILE_NAMES = [
    'a"b', "a'b", "a\\b", "a\nb", "a\rb", "a\x1bb", "$(rm -rf ~)", "`id`", '"; system("x"); //', "x;y", "a b",
    "näme", "摘要", "n" * 300, "", "../x", "a/b", "-rf", "Notes", "1notes", "class",
]
# Free text: accepted, and written so that each language reads back exactly what was typed.
FREE_TEXTS = [
    'He said "hi"', "back\\slash\\", "$(rm -rf ~) `id` ${HOME} @VAR@", '"; system("x"); //', "'''\"\"\" # not a comment",
    "]] ]=] ]==] [[x]]", "// not a comment /* nor this */", "摘要 — résumé ✓ 🚀", "-rf",
]
BAD_TEXTS = ["line\nbreak", "tab\there", "nul\x00", "esc\x1b[31m", "sep\u2028", "x" * 201]


def _new(*args):
    """`hmbuild new ...` in process, as the CLI would answer it."""
    return CliRunner().invoke(cli, ["new", *args], prog_name="hmbuild")


def _one_line_error(result):
    assert result.exit_code != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hmbuild: error: "), result.stderr
    assert "Traceback" not in result.output + result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return lines[0]


def _snapshot(root):
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("bad", HOSTILE_NAMES, ids=repr)
def test_hostile_names_are_refused_in_one_sentence_and_nothing_is_created(tmp_path, bad):
    result = _new(str(tmp_path / "proj"), f"--name={bad}")
    line = _one_line_error(result)
    assert "name" in line or "reserved" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("bad", ["$(rm -rf ~)", 'x"; y', "a\nb", 5, "n" * 300])
def test_a_hostile_name_in_a_config_file_is_refused(tmp_path, bad):
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f"[project]\nname = {json.dumps(bad)}\n")
    line = _one_line_error(_new(str(tmp_path / "proj"), "--config", str(cfg)))
    assert "name" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg.toml"]


@pytest.mark.parametrize("folder", ["-rf", "bad\nname", "tab\there"], ids=repr)
def test_hostile_folder_names_are_refused(tmp_path, folder):
    line = _one_line_error(_new(str(tmp_path / folder), "--name", "ok"))
    assert "folder" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("text", FREE_TEXTS, ids=repr)
def test_a_free_text_description_reads_back_exactly_in_every_language(tmp_path, text):
    result = _new(str(tmp_path / "proj"), "--name", "notes_llm", f"--description={text}")
    assert result.exit_code == 0, result.output + result.stderr
    root = tmp_path / "proj"
    assert json5.loads((root / "oh-package.json5").read_text(encoding="utf-8"))["description"] == text
    settings = tomllib.loads((root / "hmbuild.toml").read_text(encoding="utf-8"))
    assert settings["project"]["description"] == text and settings["project"]["name"] == "notes_llm"
    conan = ast.parse((root / "conanfile.py").read_text(encoding="utf-8"))
    assigned = {t.id: n.value for n in ast.walk(conan) if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)}
    assert ast.literal_eval(assigned["description"]) == text
    # CMake reads the project() DESCRIPTION argument back through its own parser (script mode, no build).
    cmakelists = (root / "src/main/cpp/CMakeLists.txt").read_text(encoding="utf-8")
    arg = re.search(r"project\(notes_llm DESCRIPTION (.*) LANGUAGES C CXX\)", cmakelists).group(1)
    out = tmp_path / "desc.txt"
    (tmp_path / "read.cmake").write_text(f'set(D {arg})\nfile(WRITE "{out}" "${{D}}")\n', encoding="utf-8")
    subprocess.run([shutil.which("cmake"), "-P", str(tmp_path / "read.cmake")], check=True, capture_output=True)
    assert out.read_text(encoding="utf-8") == text


def test_a_description_from_a_config_file_reaches_the_project_and_keeps_its_comments(tmp_path):
    text = 'Notes "assistant" \\ $(x)'
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('# my comment\n[project]\nname = "notes"  # keep me\n'
                   f"description = {json.dumps(text)}\n[build]\ntarget = \"host\"\n")
    root = new_project(tmp_path / "proj", config=cfg).root
    written = (root / "hmbuild.toml").read_text()
    assert "# my comment" in written and "# keep me" in written
    assert tomllib.loads(written)["project"]["description"] == text
    assert json5.loads((root / "oh-package.json5").read_text())["description"] == text


@pytest.mark.parametrize("text", BAD_TEXTS, ids=repr)
def test_a_description_that_cannot_be_one_line_of_text_is_refused(tmp_path, text):
    line = _one_line_error(_new(str(tmp_path / "proj"), "--name", "ok", f"--description={text}"))
    assert "description" in line
    assert list(tmp_path.iterdir()) == []


def test_the_cli_refuses_hostile_input_without_a_traceback(tmp_path, hmbuild):
    proc = hmbuild("new", str(tmp_path / "proj"), '--name="; system("x"); //')
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_the_next_step_line_quotes_the_folder_for_a_shell(tmp_path):
    folder = tmp_path / "my notes $(id)"
    result = _new(str(folder), "--name", "notes")
    assert result.exit_code == 0, result.stderr
    assert f"-C '{folder}' build" in result.output


# --- new --force -------------------------------------------------------------------------------

def test_a_non_empty_folder_is_refused_without_force(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "keep.txt").write_text("mine")
    line = _one_line_error(_new(str(tmp_path / "proj"), "--name", "proj"))
    assert "--force" in line
    assert _snapshot(tmp_path) == {"proj": None, "proj/keep.txt": b"mine"}


def test_force_adds_the_project_next_to_user_files_and_keeps_them_byte_for_byte(tmp_path):
    root = tmp_path / "proj"
    (root / "src/main/ets").mkdir(parents=True)
    (root / "notes.txt").write_bytes(b"mine\r\n\x00\xff")
    (root / "src/main/ets/MyPage.ets").write_text("// my page\n")
    result = new_project(root, name="proj", force=True)
    assert (root / "notes.txt").read_bytes() == b"mine\r\n\x00\xff"
    assert (root / "src/main/ets/MyPage.ets").read_text() == "// my page\n"
    assert (root / "hmbuild.toml").is_file() and (root / "src/main/ets/LlmEngine.ets").is_file()
    recorded = json.loads((root / MANIFEST).read_text())["files"]
    assert "notes.txt" not in recorded and "src/main/ets/MyPage.ets" not in recorded
    assert set(recorded) | {MANIFEST, BASE} == set(result.files)
    assert not [p for p in root.iterdir() if p.name.startswith(".hmbuild-new-")], "staging folder left behind"


def test_force_refreshes_hmbuild_files_nobody_changed(tmp_path):
    root = new_project(tmp_path / "proj", name="proj", description="first").root
    (root / "mine.txt").write_text("user data")
    new_project(root, name="proj", description="second", force=True)
    assert json5.loads((root / "oh-package.json5").read_text())["description"] == "second"
    assert tomllib.loads((root / "hmbuild.toml").read_text())["project"]["description"] == "second"
    assert (root / "mine.txt").read_text() == "user data"


def test_force_never_overwrites_a_file_hmbuild_did_not_write(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "README.md").write_text("my own readme")
    (root / "other.txt").write_text("x")
    before = _snapshot(tmp_path)
    line = _one_line_error(_new(str(root), "--name", "proj", "--force"))
    assert "README.md" in line and "Nothing was written" in line
    assert _snapshot(tmp_path) == before


def test_force_accepts_a_file_that_already_holds_what_it_would_write(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "hvigorfile.ts").write_bytes((generator.templates_dir() / "project/hvigorfile.ts").read_bytes())
    (root / "mine.txt").write_text("x")
    new_project(root, name="proj", force=True)
    assert "hvigorfile.ts" in json.loads((root / MANIFEST).read_text())["files"]


def test_force_refuses_when_the_user_changed_a_generated_file(tmp_path):
    root = new_project(tmp_path / "proj", name="proj").root
    cmake = root / "src/main/cpp/CMakeLists.txt"
    cmake.write_text(cmake.read_text() + "# my change\n")
    before = _snapshot(tmp_path)
    line = _one_line_error(_new(str(root), "--name", "proj", "--force", "--description=new"))
    assert "src/main/cpp/CMakeLists.txt" in line
    assert _snapshot(tmp_path) == before


def test_force_refuses_to_write_through_a_symlink_out_of_the_project(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "proj"
    root.mkdir()
    (root / "src").symlink_to(outside, target_is_directory=True)
    _one_line_error(_new(str(root), "--name", "proj", "--force"))
    assert list(outside.iterdir()) == []


def test_force_refuses_a_record_of_generated_files_it_cannot_read(tmp_path):
    root = new_project(tmp_path / "proj", name="proj").root
    (root / MANIFEST).write_text("{not json")
    before = _snapshot(tmp_path)
    line = _one_line_error(_new(str(root), "--name", "proj", "--force"))
    assert "generated.json" in line
    assert _snapshot(tmp_path) == before


def fail_the_nth_move(monkeypatch, n):
    """Make the generator's n-th os.replace fail, as a full disk would (also used by test_update)."""
    real_replace, calls = generator.os.replace, []

    def failing_replace(src, dst):
        calls.append(dst)
        if len(calls) == n:
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(generator.os, "replace", failing_replace)


def test_a_failed_move_during_force_puts_everything_back(tmp_path, monkeypatch):
    root = new_project(tmp_path / "proj", name="proj", description="first").root
    (root / "mine.txt").write_text("user data")
    before = _snapshot(tmp_path)
    fail_the_nth_move(monkeypatch, 40)
    with pytest.raises(HmbuildError) as err:
        new_project(root, name="proj", description="second", force=True)
    assert "No space left" in str(err.value)
    monkeypatch.undo()
    assert _snapshot(tmp_path) == before
