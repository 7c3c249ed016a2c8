"""The generated ArkTS through OpenHarmony's own linter (ohos-typescript's ArkTSLinter_1_1)."""
import json
import shutil

import pytest

from conftest import run_hmbuild
from hmbuild.build.arkts_lint import lint_files, lint_project, project_ets_files
from hmbuild.scaffold.generator import new_project

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")

EXPECTED_ETS = {"Index.ets", "src/main/ets/InferenceService.ets", "src/main/ets/ModelManager.ets",
                "src/main/ets/DeviceClasses.ets", "src/main/ets/Intents.ets", "src/main/ets/LlmEngine.ets", "src/main/ets/pages/Index.ets",
                "src/main/ets/platform/Platform.ets", "src/main/ets/platform/OhosPlatform.ets"}


def test_only_the_platform_implementation_imports_system_kits(tmp_path):
    root = new_project(tmp_path / "p", name="notes_llm").root
    files = {f.relative_to(root).as_posix(): f.read_text() for f in project_ets_files(root)}
    assert EXPECTED_ETS <= set(files)
    importers = {rel for rel, text in files.items() if "@kit." in text or "@ohos." in text}
    assert importers == {"src/main/ets/platform/OhosPlatform.ets", "src/main/ets/LlmEngine.ets"}
    assert "import lib from 'libnotes_llm.so'" in files["src/main/ets/InferenceService.ets"]
    assert "minTotalRamGb: 10" in files["src/main/ets/DeviceClasses.ets"]


def test_generated_project_lints_clean(tmp_path):
    root = new_project(tmp_path / "p", name="notes_llm").root
    report = lint_project(root)
    assert set(report.files) == {f.relative_to(root).as_posix() for f in project_ets_files(root)}
    assert report.problems == [], "\n".join(f"{p.file}:{p.line} {p.rule} {p.message}" for p in report.problems)


def test_bad_arkts_is_reported_with_the_rule_names(tmp_path):
    root = new_project(tmp_path / "p", name="notes_llm").root
    bad = root / "src/main/ets/Bad.ets"
    bad.write_text("import lib from 'libnotes_llm.so';\n"
                   "export function f(x: any): number {\n"
                   "  const o = { a: 1 };\n"
                   "  lib.notExported();\n"
                   "  return o.a;\n"
                   "}\n")
    report = lint_files(root, [bad])
    found = {(p.file, p.line, p.rule) for p in report.problems}
    assert ("src/main/ets/Bad.ets", 2, "arkts-no-any-unknown") in found
    assert ("src/main/ets/Bad.ets", 3, "arkts-no-untyped-obj-literals") in found
    # The .so import is checked against Index.d.ts (not left untyped).
    assert ("src/main/ets/Bad.ets", 4, "TS2339") in found
    assert all(p.severity == "error" for p in report.problems)


def test_lint_json_shape_and_exit_status(tmp_path):
    root = new_project(tmp_path / "p", name="notes_llm").root
    proc = run_hmbuild("-C", str(root), "lint", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["ok"] is True and data["errors"] == 0 and data["problems"] == []
    assert set(data["files"]) >= EXPECTED_ETS
    (root / "src/main/ets/Bad.ets").write_text("export const v: any = 1;\n")
    proc = run_hmbuild("-C", str(root), "lint", "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["ok"] is False and data["errors"] == 1
    (problem,) = data["problems"]
    assert set(problem) == {"file", "line", "column", "rule", "severity", "message"}
    assert problem["file"] == "src/main/ets/Bad.ets" and problem["rule"] == "arkts-no-any-unknown"
    text = run_hmbuild("-C", str(root), "lint")
    assert "src/main/ets/Bad.ets:1:" in text.stdout and "(arkts-no-any-unknown)" in text.stdout


def test_lint_outside_a_project_is_one_sentence(tmp_path):
    proc = run_hmbuild("-C", str(tmp_path), "lint")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("hmbuild: error:")
