"""`hmbuild update` and `hmbuild check`: bring a project to this hmbuild's templates, keeping the
user's changes.

Each generated path has three versions: the base (what the last `new` or `update` rendered,
recorded in .hmbuild/base.tar.gz), the new render (the answers in hmbuild.toml through this
hmbuild's templates and runtime) and the user's file. Where only one side changed that side wins;
where both changed, `git merge-file --diff3` merges them and leaves git's own conflict markers
(`<<<<<<< yours` / `||||||| hmbuild 0.1.0` / `=======` / `>>>>>>> hmbuild 0.2.0`) where they
overlap, so resolving is what the user already does after a `git merge`. Files outside base and
new render are the user's and never read or written. Everything is decided before anything is
written; the writes go through generator.move_into, which puts everything back if one fails.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hmbuild.scaffold import generator
from hmbuild.errors import HmbuildError
from hmbuild.scaffold.generator import BASE
from hmbuild.config.project import Project, load_project

YOURS = "yours"
# The lines git merge-file writes around a conflict with our labels; any left means unresolved.
MARKER_RE = re.compile(rb"^(<{7} yours|>{7} hmbuild )", re.M)
# A generated path whose base is unknown (`--adopt`: the user changed or deleted it before hmbuild
# recorded its output); it is never merged from.
UNKNOWN = object()


@dataclass
class Change:
    path: str
    state: str  # updated | merged | conflict | removed | kept
    content: bytes | None = None  # what is written; None: nothing (removed, or yours kept)
    reason: str = ""


@dataclass
class UpdateResult:
    root: Path
    version_from: str
    version_to: str
    dry_run: bool
    changes: list[Change] = field(default_factory=list)
    diff: str = ""

    def paths(self, state: str) -> list[str]:
        return [c.path for c in self.changes if c.state == state]

    @property
    def ok(self) -> bool:
        return not self.paths("conflict")

    def marked(self) -> list[str]:
        """The conflicts written with markers (the others keep the user's file as it is)."""
        return [c.path for c in self.changes if c.state == "conflict" and c.content is not None]

    def problem(self) -> str:
        """One sentence on the conflicts: what is in the files and what to do."""
        marked = self.marked()
        unmerged = [rel for rel in self.paths("conflict") if rel not in marked]
        parts = []
        if marked and self.dry_run:
            parts.append(f"`hmbuild update` would leave conflict markers in {_names(marked)}, where you and hmbuild "
                         f"{self.version_to} changed the same lines")
        elif marked:
            parts.append(f"{_names(marked, 'now')} conflict markers where you and hmbuild {self.version_to} changed "
                         "the same lines; resolve them, and `hmbuild update` and `hmbuild check` fail until no marker "
                         "is left")
        if unmerged:
            parts.append(f"hmbuild {self.version_to}'s version of {_names(unmerged)} cannot be merged into yours, "
                         f"which {'would be' if self.dry_run else 'is'} kept (hmbuild's: `tar -xzOf {BASE} "
                         f"{unmerged[0]}`{' after the update' if self.dry_run else ''})")
        return "; ".join(parts) + (" (dry run: nothing was written)." if self.dry_run else ".")

    def to_json(self) -> dict:
        out = {"dry_run": self.dry_run, **{key: self.paths(state) for key, state in (
                   ("updated", "updated"), ("merged", "merged"), ("conflicts", "conflict"), ("removed", "removed"),
                   ("kept", "kept"))},
               "reasons": {c.path: c.reason for c in self.changes if c.reason},
               "hmbuild_version_from": self.version_from, "hmbuild_version_to": self.version_to}
        if self.dry_run:
            out["diff"] = self.diff
        return out


@dataclass
class CheckResult:
    version: str
    behind: list[str]
    conflicts: list[str]

    @property
    def ok(self) -> bool:
        return not self.behind and not self.conflicts

    def problem(self) -> str:
        parts = []
        if self.behind:
            n = len(self.behind)
            parts.append(f"{n} generated file{'s are' if n != 1 else ' is'} behind hmbuild {self.version}'s "
                         "templates; run `hmbuild update`")
        if self.conflicts:
            parts.append(f"{_names(self.conflicts, 'still')} conflict markers from `hmbuild update`; resolve them")
        return "; ".join(parts) + "."


def _names(paths: list[str], have: str | None = None) -> str:
    """'a, b, c and 2 more'; with `have`: '... still has' / '... still have'."""
    names = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return names if have is None else f"{names} {have} {'has' if len(paths) == 1 else 'have'}"


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    if shutil.which("git") is None:
        raise HmbuildError("`hmbuild update` merges with git, which is not installed; install it (apt-get install git).")
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True)


def merge_file(yours: bytes, base: bytes, new: bytes, labels: tuple[str, str]) -> tuple[bytes | None, bool]:
    """(merged bytes, whether conflict markers were left) from `git merge-file --diff3`, or
    (None, True) for binary files, which git refuses to merge."""
    with tempfile.TemporaryDirectory(prefix="hmbuild-merge-") as tmp:
        for name, data in (("yours", yours), ("base", base), ("new", new)):
            (Path(tmp) / name).write_bytes(data)
        proc = _git(["merge-file", "-p", "--diff3", "-L", YOURS, "-L", labels[0], "-L", labels[1],
                     "yours", "base", "new"], Path(tmp))
    # Exit status: the number of conflicts (0..127); 255 (-1) when git cannot merge.
    if proc.returncode >= 128 or proc.returncode < 0:
        if b"binary" in proc.stderr.lower():
            return None, True
        raise HmbuildError(f"git merge-file failed ({proc.stderr.decode(errors='replace').strip()}); "
                           "check that git works (`git --version`).")
    return proc.stdout, proc.returncode > 0


def _with_version(data, version: str):
    """hmbuild.toml with [project] hmbuild_version, when it has one, set to `version` (tomlkit keeps
    everything else as written). The three versions of hmbuild.toml get this before they are
    merged: the answer is hmbuild's to bump, and a bump merged as a text change would conflict with
    any edit to the lines next to it (e.g. the description)."""
    if not isinstance(data, bytes):
        return data
    try:
        return generator.set_project_values(data, {"hmbuild_version": version}, add=False)
    except HmbuildError:
        return data  # not TOML hmbuild can edit: merged as the text it is


def _decide(rel: str, base, yours: bytes | None, new: bytes | None, labels: tuple[str, str]) -> Change | None:
    if yours == new or base == new:
        return None  # already there, or hmbuild has nothing new for it: whatever you did stands
    if yours == base:
        return Change(rel, "removed") if new is None else Change(rel, "updated", new)
    if yours is None:
        return Change(rel, "kept", reason="you deleted it; it stays deleted")
    if new is None:
        return Change(rel, "kept", reason=f"you changed it and {labels[1]} no longer generates it; yours stays")
    if base is None or base is UNKNOWN:
        # A file of yours where hmbuild now generates one (or one whose original is unknown): it is
        # yours, so it is not rewritten, not even with markers; the conflict is reported instead.
        return Change(rel, "conflict", reason=f"{labels[1]} generates this path and your file differs; yours is kept")
    merged, conflicted = merge_file(yours, base, new, labels)
    if merged is None:
        return Change(rel, "conflict", reason=f"a binary file you and {labels[1]} both changed; yours is kept")
    if conflicted:
        return Change(rel, "conflict", merged, f"you and {labels[1]} changed the same lines; resolve the markers")
    return Change(rel, "merged", merged)


def plan(root: Path, base: dict, new: dict[str, bytes], labels: tuple[str, str]) -> list[Change]:
    """What update does to each path of base ∪ new, decided before anything is written."""
    version = generator.TEMPLATES_VERSION
    changes = []
    for rel in sorted(set(base) | set(new)):
        b, n = base.get(rel), new.get(rel)
        if generator.blocked_path(root, rel):
            if b != n:
                changes.append(Change(rel, "kept", reason="a symlink or folder of yours is in the way; left alone"))
            continue
        yours = (root / rel).read_bytes() if (root / rel).is_file() else None
        if rel == "hmbuild.toml" and n is not None:
            b, normalised = _with_version(b, version), _with_version(yours, version)
        else:
            normalised = yours
        change = _decide(rel, b, normalised, n, labels)
        if change is None and normalised != yours:
            change = Change(rel, "updated", normalised)  # only hmbuild_version moved on
        if change is not None:
            changes.append(change)
    return changes


def derive_api_files(project: Project, changes: list[Change], new: dict[str, bytes]) -> list[Change]:
    """napi_init.cpp and Index.d.ts are outputs of api.toml, not text to merge: they are rendered
    again from the api.toml the update leaves (yours, merged, or hmbuild's) and the new runtime's
    NAPI headers, as `hmbuild api` would. While api.toml itself conflicts, or does not load, the
    plan is kept as it is and the build's own check (`hmbuild api --check`) speaks later."""
    from hmbuild.config.api_schema import NAPI_HEADERS, api_file_of, render_project_api

    root = project.root
    api_rel = api_file_of(project)
    by_path = {c.path: c for c in changes}
    api_change = by_path.get(api_rel)
    if api_change is not None and (api_change.state == "conflict" or api_change.content is None):
        return changes
    if api_change is not None:
        api_text = api_change.content
    elif (root / api_rel).is_file():
        api_text = (root / api_rel).read_bytes()
    else:
        return changes
    headers = NAPI_HEADERS.as_posix() + "/"
    with tempfile.TemporaryDirectory(prefix="hmbuild-api-") as tmp:
        generator.write_files(Path(tmp), {api_rel: api_text, **{rel: data for rel, data in new.items()
                                                                   if rel.startswith(headers)}})
        try:
            derived = render_project_api(Path(tmp), project.name, api_rel)
        except HmbuildError:
            return changes
    for rel, text in derived.items():
        data = text.encode("utf-8")
        yours = (root / rel).read_bytes() if (root / rel).is_file() else None
        by_path.pop(rel, None)
        if yours != data and not generator.blocked_path(root, rel):
            by_path[rel] = Change(rel, "updated", data, reason=f"generated from {api_rel}")
    return [by_path[rel] for rel in sorted(by_path)]


def pending_conflicts(root: Path, record: dict) -> list[str]:
    """The files the last update left conflict markers in that still hold them."""
    return [rel for rel in record.get("conflicts", [])
            if (root / rel).is_file() and not generator.blocked_path(root, rel)
            and MARKER_RE.search((root / rel).read_bytes())]


@dataclass
class _Project:
    root: Path
    loaded: Project  # hmbuild.toml, as load_project read it
    record: dict  # generator.MANIFEST
    base: dict  # {path: bytes or UNKNOWN}
    new: dict[str, bytes]  # this hmbuild's render of the answers
    source: str  # where hmbuild.toml comes from: "template" or "config"
    version_from: str  # the hmbuild that rendered the base


def _load(directory, adopt: bool = False) -> _Project:
    loaded = load_project(directory)
    root = loaded.root
    answers = generator.read_answers(loaded)
    record = generator.read_record(root)
    base = generator.read_base(root, record.get("files", {}))
    if base is None and not adopt:
        raise HmbuildError(f"{root} has no {BASE}, the output it was generated with (hmbuild before this version "
                           "did not record it), so there is nothing to merge from; run `hmbuild update --adopt` to "
                           "take the generated files you have not changed as the base (changed ones are kept and "
                           "reported), then commit .hmbuild/.")
    if base is not None and adopt:
        raise HmbuildError(f"{root} already records its base ({BASE}); run `hmbuild update` without --adopt.")
    if base is None:
        base = {}
        for rel, digest in record.get("files", {}).items():
            data = (root / rel).read_bytes() if (root / rel).is_file() and not generator.blocked_path(root, rel) else None
            base[rel] = data if data is not None and generator.sha256(data) == digest else UNKNOWN
    new = generator.render_project(answers)
    source = "template" if record.get("hmbuild_toml") == "template" else "config"
    if source == "config":
        # Made from a --config (or by an hmbuild too old to say): its settings are that config's and
        # its answers are the ones rendered, so the only news for it is hmbuild_version.
        src = base.get("hmbuild.toml")
        new["hmbuild.toml"] = _with_version(src if isinstance(src, bytes) else (root / "hmbuild.toml").read_bytes(),
                                            generator.TEMPLATES_VERSION)
    return _Project(root, loaded, record, base, new, source,
                    str(record.get("hmbuild_version") or answers["hmbuild_version"]))


def update_project(directory, dry_run: bool = False, adopt: bool = False) -> UpdateResult:
    project = _load(directory, adopt)
    root = project.root
    pending = pending_conflicts(root, project.record)
    if pending:
        raise HmbuildError(f"{_names(pending, 'still')} conflict markers from the last `hmbuild update` "
                           "(<<<<<<< yours ... >>>>>>> hmbuild); resolve them, then run it again.")
    result = UpdateResult(root, project.version_from, generator.TEMPLATES_VERSION, dry_run)
    labels = (f"hmbuild {result.version_from}", f"hmbuild {result.version_to}")
    result.changes = derive_api_files(project.loaded, plan(root, project.base, project.new, labels), project.new)
    if dry_run:
        result.diff = unified_diff(root, result.changes)
        return result
    writes = {c.path: c.content for c in result.changes if c.content is not None}
    for rel, data in generator.records(project.new, project.source, result.marked()).items():
        if not (root / rel).is_file() or (root / rel).read_bytes() != data:
            writes[rel] = data
    apply_writes(root, writes, result.paths("removed"))
    return result


def apply_writes(root: Path, writes: dict[str, bytes], removes: list[str]) -> None:
    """Writes `writes` and removes `removes` under root all or nothing (staged, then generator.move_into);
    folders left empty by the removals go too. Also `hmbuild ci`'s writer."""
    if not writes and not removes:
        return
    staging = Path(tempfile.mkdtemp(prefix=".hmbuild-update-", dir=root))
    try:
        tree = staging / "tree"
        files = generator.write_files(tree, writes)
        for rel in files:
            if (root / rel).is_file():
                shutil.copymode(root / rel, tree / rel)
        generator.move_into(tree, root, files, staging / "replaced", removes)
    except OSError as exc:
        raise HmbuildError(f"Nothing was changed: could not write the update into {root} ({exc.strerror}); check "
                           "permissions and free space.") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for rel in removes:  # folders that held only removed files go too (e.g. types/lib<old name>/)
        folder = (root / rel).parent
        while folder != root and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


def unified_diff(root: Path, changes: list[Change]) -> str:
    """The unified diff of what update would write, from `git diff --no-index` over the current
    and updated versions of the changed files (a/ is yours now, b/ after the update)."""
    with tempfile.TemporaryDirectory(prefix="hmbuild-diff-") as tmp:
        tmp = Path(tmp)
        (tmp / "a").mkdir()
        (tmp / "b").mkdir()
        for c in changes:
            if c.content is None and c.state != "removed":
                continue
            if (root / c.path).is_file():
                generator.write_files(tmp / "a", {c.path: (root / c.path).read_bytes()})
            if c.content is not None:
                generator.write_files(tmp / "b", {c.path: c.content})
        proc = _git(["diff", "--no-index", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
                     "--src-prefix=", "--dst-prefix=", "a", "b"], tmp)
    if proc.returncode > 1:
        raise HmbuildError(f"git diff failed ({proc.stderr.decode(errors='replace').strip()}); check that git works.")
    return proc.stdout.decode("utf-8", errors="replace")


def check_project(directory) -> CheckResult:
    """Whether rendering the recorded answers with this hmbuild gives the recorded base, and no
    conflict markers from an update are left."""
    project = _load(directory)
    base, new = project.base, project.new
    behind = sorted(rel for rel in set(base) | set(new) if base.get(rel) != new.get(rel))
    return CheckResult(generator.TEMPLATES_VERSION, behind, pending_conflicts(project.root, project.record))


def format_update(result: UpdateResult) -> list[str]:
    lines = [result.diff.rstrip("\n")] if result.diff else []
    for c in result.changes:
        lines.append(f"{'CONFLICT' if c.state == 'conflict' else c.state:<9} {c.path}" + (f" ({c.reason})" if c.reason else ""))
    counts = {state: len(result.paths(state)) for state in ("updated", "merged", "conflict", "removed", "kept")}
    lines.append(f"hmbuild {result.version_from} -> {result.version_to}: updated {counts['updated']}, merged "
                 f"{counts['merged']}, conflicts {counts['conflict']}, removed {counts['removed']}, kept "
                 f"{counts['kept']} (deleted or changed by you)" + (" (dry run: nothing written)" if result.dry_run else ""))
    return lines
