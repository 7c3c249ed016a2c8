"""`hmbuild lint`: a project's .ets files through OpenHarmony's own ArkTS linter.

The linter is ArkTSLinter_1_1 in the npm package ohos-typescript (the TypeScript fork ets-loader
uses), installed into hmbuild's cache on first use. arkts_lint.mjs builds one program over the
project's .ets files, its lib<name>.so declarations and declaration-only stubs of the SDK modules
(hmbuild/arkts_stubs/: @kit.* kits, ArkUI components, runtime globals), then reports both the
ArkTS rule violations and ordinary type errors, as DevEco's build does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from hmbuild.errors import HmbuildError
from hmbuild.targets.node import _npm_install
from hmbuild.resources import cache_dir

OHOS_TYPESCRIPT = "ohos-typescript@4.9.5-r9"
_HERE = Path(__file__).resolve().parent
LINT_SCRIPT = _HERE / "arkts_lint.mjs"
STUBS_DIR = _HERE / "arkts_stubs"


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    column: int
    rule: str
    severity: str
    message: str


@dataclass
class LintReport:
    files: list[str]
    problems: list[Problem]

    @property
    def errors(self) -> int:
        return sum(1 for p in self.problems if p.severity == "error")

    def to_json(self) -> dict:
        return {"files": self.files, "errors": self.errors,
                "warnings": len(self.problems) - self.errors,
                "problems": [asdict(p) for p in self.problems]}


def ohos_typescript_dir(install: bool = True) -> Path | None:
    """The ohos-typescript package folder in the cache (also what the Node tests transpile with)."""
    pkg = cache_dir() / "npm" / "ohos-typescript" / "node_modules" / "ohos-typescript"
    if not (pkg / "lib" / "typescript.js").is_file() and install:
        _npm_install(pkg.parents[1], OHOS_TYPESCRIPT, [], "OpenHarmony's ArkTS linter")
    return pkg if (pkg / "lib" / "typescript.js").is_file() else None


def project_ets_files(root: Path) -> list[Path]:
    """Index.ets at the top of the module plus everything under src/main/ets."""
    files = [root / "Index.ets"] if (root / "Index.ets").is_file() else []
    files += sorted((root / "src" / "main" / "ets").rglob("*.ets"))
    return files


def _module_paths(root: Path) -> dict[str, list[str]]:
    paths = {"@kit.*": [str(STUBS_DIR / "@kit.*.d.ts")]}
    for dts in sorted((root / "src" / "main" / "cpp" / "types").glob("lib*/Index.d.ts")):
        paths[f"{dts.parent.name}.so"] = [str(dts)]
    return paths


def lint_files(root: Path, files: list[Path]) -> LintReport:
    node = shutil.which("node")
    if node is None:
        raise HmbuildError("Node.js is needed to run the ArkTS linter; install it with: apt-get install -y nodejs npm")
    root = root.resolve()
    if not files:
        raise HmbuildError(f"No .ets files under {root}; run `hmbuild lint` in a generated project.")
    config = {
        "typescript": str(ohos_typescript_dir()),
        "root": str(root),
        "files": [str(f.resolve()) for f in files],
        "extraFiles": [str(STUBS_DIR / "globals.d.ts"), str(STUBS_DIR / "arkui.d.ts")],
        "paths": _module_paths(root),
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="hmbuild-lint-", delete=False) as fh:
        json.dump(config, fh)
    try:
        proc = subprocess.run([node, str(LINT_SCRIPT), fh.name], capture_output=True, text=True, timeout=600)
    finally:
        os.unlink(fh.name)
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-2:])
        raise HmbuildError(f"The ArkTS linter did not run ({tail}); reinstall it by deleting "
                           f"{cache_dir() / 'npm' / 'ohos-typescript'} and retrying.")
    data = json.loads(proc.stdout)
    problems = [Problem(p["file"], p["line"], p["column"], p["rule"], p["severity"], p["message"])
                for p in data["problems"]]
    return LintReport(files=data["files"], problems=problems)


def lint_project(root: Path) -> LintReport:
    return lint_files(root, project_ets_files(root))
