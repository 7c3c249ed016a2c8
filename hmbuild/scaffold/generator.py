"""`hmbuild new`: render templates/project into a new project folder.

The template tree mirrors the output tree. Files ending in .j2 are rendered with StrictUndefined
(a missing variable is an error, never an empty string) and lose the suffix; path segments may
hold {{ name }}. Everything is rendered into a staging folder first and moved into place at the
end, so a failed `new` leaves nothing behind.

Everything a user types is checked before anything is rendered: the module name and the folder
must pass `validate_name` / `validate_folder`; the one free-text value (the description) reaches
JSON5, TOML, CMake and Python only through the per-language filters of hmbuild.templating.
`new --force` adds the project to a non-empty folder: .hmbuild/generated.json records the SHA-256
of every file `new` wrote, a file whose content still matches is hmbuild's to refresh, and any
other file in the way stops `new` before it writes anything.

The generated output itself is recorded too, as .hmbuild/base.tar.gz: after hmbuild is upgraded
the old templates are gone, and `hmbuild update` needs that output as the base of its three-way
merge (hmbuild/update.py). It is a deterministic tar.gz rather than a plain folder: ~10x smaller
than the vendored runtime it holds, the same bytes for the same render (so git sees no change
until the templates change), and no second copy of the sources for IDEs, grep, CMake globs or
the ArkTS linter to find. Nothing ignores it, so it travels with a `git clone` to CI.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath


from hmbuild.config.api_schema import write_project_api
from hmbuild.scaffold.ci import ci_files
from hmbuild.errors import HmbuildError, shown as _shown
from hmbuild.archive import archive_bytes
from hmbuild.config.project import Project
from hmbuild.config.settings import (CONTROL_RE, PROVIDERS, read_config, set_project_values, validate_ci,  # noqa: F401
                                     validate_description, validate_device_classes, validate_intent, validate_name)
from hmbuild.resources import native_dir, templates_dir
from hmbuild.templating import TEMPLATES_VERSION, TemplateError, environment
from hmbuild.targets.target import plain_cmake_presets

# hmbuild's record of the files `new` wrote and their SHA-256, which `new --force` trusts.
MANIFEST = ".hmbuild/generated.json"
# The files of the last render themselves (what MANIFEST hashes): the base `hmbuild update` merges from.
BASE = ".hmbuild/base.tar.gz"
# Where the runtime is vendored inside a generated project.
RUNTIME_SUBDIR = Path("src/main/cpp/hmllm")


@dataclass(frozen=True)
class NewResult:
    root: Path
    name: str
    files: list[str]


def validate_folder(root: Path) -> Path:
    """The folder is echoed in commands the user copies into a shell and names the staging folder."""
    text = str(root)
    if CONTROL_RE.search(text):
        raise HmbuildError(f"The folder {_shown(text)} has a line break or control character in its path; "
                           "pick a plain folder name.")
    if root.name.startswith("-"):
        raise HmbuildError(f"The folder name {_shown(root.name)} starts with '-', which command lines read as an "
                           "option; pick a name that starts with a letter or digit.")
    return root


def default_name(directory: Path) -> str:
    return directory.name.lower().replace("-", "_")


def render_tree(template_root: str, out: Path, context: dict) -> list[str]:
    """Render templates/<template_root> into `out`; returns the relative paths written."""
    env = environment()
    src_root = templates_dir() / template_root
    written = []
    for src in sorted(src_root.rglob("*")):
        if src.is_dir():
            continue
        rel = src.relative_to(src_root).as_posix()
        rel_out = env.from_string(rel).render(context)
        if rel_out.endswith(".j2"):
            rel_out = rel_out[:-3]
            text = env.get_template(f"{template_root}/{rel}").render(context)
            dest = out / rel_out
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
        else:
            dest = out / rel_out
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
        written.append(rel_out)
    return written


def vendor_runtime(project_root: Path) -> list[str]:
    """Copy native/ (the C++ runtime) into the project, so it builds with plain CMake too."""
    dest = project_root / RUNTIME_SUBDIR
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(native_dir(), dest, ignore=shutil.ignore_patterns("build", "*.o", "__pycache__", "fuzz"))
    return [p.relative_to(project_root).as_posix() for p in sorted(dest.rglob("*")) if p.is_file()]


def config_text(text: str, name: str, description: str | None = None, ci: str | None = None) -> str:
    """The config's text (comments kept) with [project] name, hmbuild_version and (when given)
    description and ci set; the rest of the settings are copied as they are."""
    values = {"name": name, "hmbuild_version": TEMPLATES_VERSION}
    if description is not None:
        values["description"] = description
    if ci is not None:
        values["ci"] = ci
    # tomllib accepted the text (read_config); the sentence is kept for what tomlkit refuses anyway.
    return set_project_values(text, values, "The config file").decode("utf-8")


def default_description(name: str) -> str:
    return f"On-device LLM inference (lib{name}.so) with an ArkTS wrapper, generated by hmbuild {TEMPLATES_VERSION}"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_answers(project: Project, ci: str | None = None) -> dict:
    """The answers a project was generated with, read back from its hmbuild.toml [project] (as
    load_project read it) and held to the same rules as when they were typed: name, description
    (None: the generated default), ci, hmbuild_version (the hmbuild that last rendered it). `ci`:
    a provider already chosen (`hmbuild ci --provider`), used instead of [project] ci."""
    table = project.settings.get("project")
    where = project.root / "hmbuild.toml"
    if not isinstance(table, dict):
        raise HmbuildError(f"{where} has no [project] table; add one with name = \"...\".")
    description = table.get("description")
    return {"name": validate_name(table.get("name")),
            "description": validate_description(description) if description is not None else None,
            "ci": ci if ci is not None else validate_ci(table.get("ci", "github"), f" in {where} [project] ci"),
            "device_classes": validate_device_classes(project.settings.get("device_class"), str(where)),
            "intent": validate_intent(project.settings.get("intent"), str(where)),
            "hmbuild_version": str(table.get("hmbuild_version", "unknown"))}


def project_context(answers: dict) -> dict:
    name, description = answers["name"], answers.get("description")
    return {"name": name, "hmbuild_version": TEMPLATES_VERSION, "presets": plain_cmake_presets(),
            "description": description if description is not None else default_description(name),
            # hmbuild.toml from a --config keeps the config's own description, or none.
            "typed_description": description, "ci": answers["ci"]} | (
        # DeviceClasses.ets follows hmbuild.toml's [[device_class]] rows; without any, the template's.
        {"device_classes": answers["device_classes"]} if answers.get("device_classes") else {}) | (
        # Intents.ets follows hmbuild.toml's [intent]; without one, the template's.
        {"intent": answers["intent"]} if answers.get("intent") else {})


def _render_into(tree: Path, context: dict, config_src: str | None) -> list[str]:
    files = render_tree("project", tree, context)
    files += vendor_runtime(tree)
    for rel, text in ci_files(context).items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text, encoding="utf-8")
        files.append(rel)
    # napi_init.cpp and Index.d.ts come from the project's api.toml and its vendored NAPI headers.
    files += [f.path for f in write_project_api(tree, context["name"])]
    if config_src is not None:
        (tree / "hmbuild.toml").write_text(config_text(config_src, context["name"], context["typed_description"],
                                                       context["ci"]),
                                           encoding="utf-8")
    return sorted(set(files))


def render_project(answers: dict, config_src: str | None = None) -> dict[str, bytes]:
    """{relative path: content} of the project these answers give with this hmbuild's templates and
    runtime; writes nothing outside a temporary folder. `config_src`: the hmbuild.toml text the
    project's own hmbuild.toml is made from (`new --config`) instead of the template."""
    try:
        with tempfile.TemporaryDirectory(prefix="hmbuild-render-") as tmp:
            tree = Path(tmp) / "tree"
            return {rel: (tree / rel).read_bytes() for rel in _render_into(tree, project_context(answers), config_src)}
    except TemplateError as exc:
        raise HmbuildError(f"A project template failed to render ({exc}); this is a bug in hmbuild, or in the "
                           "templates HMBUILD_TEMPLATES_DIR points to.") from None
    except OSError as exc:
        raise HmbuildError(f"Could not render the project ({exc.strerror}); check free space in the temporary "
                           "folder (TMPDIR).") from None


def records(contents: dict[str, bytes], hmbuild_toml: str, conflicts: list[str] = ()) -> dict[str, bytes]:
    """MANIFEST and BASE for a render: the SHA-256 of each file, where hmbuild.toml comes from
    ("template", or "config" for `new --config`), the files an update left conflict markers in,
    and the rendered files themselves."""
    manifest = {"generator": "hmbuild", "hmbuild_version": TEMPLATES_VERSION, "hmbuild_toml": hmbuild_toml,
                "conflicts": sorted(conflicts), "files": {rel: sha256(contents[rel]) for rel in sorted(contents)}}
    return {MANIFEST: (json.dumps(manifest, indent=1) + "\n").encode("utf-8"),
            BASE: archive_bytes({rel: (data, 0o644) for rel, data in contents.items()})}


def write_files(tree: Path, files: dict[str, bytes]) -> list[str]:
    for rel, data in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    return sorted(files)


def read_record(root: Path) -> dict:
    """The whole of MANIFEST ({} if there is none): files, hmbuild_version, hmbuild_toml, conflicts."""
    path = root / MANIFEST
    if not path.exists() and not path.is_symlink():
        return {}
    refuse = HmbuildError(f"{path} is not hmbuild's record of generated files, so nothing in {root} can be "
                          "treated as hmbuild's; move it away or choose a new folder.")
    if path.is_symlink() or not path.is_file():
        raise refuse
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise refuse from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(_inside(k) and isinstance(v, str) for k, v in files.items()):
        raise refuse
    conflicts = data.get("conflicts", [])
    if not isinstance(conflicts, list) or not all(isinstance(c, str) and c in files for c in conflicts):
        raise refuse
    return data


def _inside(rel) -> bool:
    """A recorded path names a file inside the project: relative, normalised, no '..'."""
    return (isinstance(rel, str) and rel == PurePosixPath(rel).as_posix() and not PurePosixPath(rel).is_absolute()
            and ".." not in PurePosixPath(rel).parts and rel not in ("", "."))


def read_manifest(root: Path) -> dict[str, str]:
    """{relative path: SHA-256} of the files a previous `new` wrote into `root` ({} if none)."""
    return read_record(root).get("files", {})


def read_base(root: Path, manifest: dict[str, str]) -> dict[str, bytes] | None:
    """The recorded render (None for a project made before hmbuild recorded it), checked against
    MANIFEST's hashes, so a base edited by hand or half-restored is refused rather than merged from."""
    path = root / BASE
    if not path.exists():
        return None
    refuse = HmbuildError(f"{path} does not match {root / MANIFEST}, so it is not the output hmbuild recorded; "
                          "restore both from version control, or delete it and run `hmbuild update --adopt`.")
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            base = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    except (OSError, tarfile.TarError, EOFError):
        raise refuse from None
    if {rel: sha256(data) for rel, data in base.items()} != manifest:
        raise refuse
    return base


def blocked_path(root: Path, rel: str) -> bool:
    """True when writing `rel` under `root` would go through a symlink or replace a folder."""
    cur = root
    for part in Path(rel).parent.parts:
        cur = cur / part
        if cur.is_symlink() or (cur.exists() and not cur.is_dir()):
            return True
    return (root / rel).is_symlink() or (root / rel).is_dir()


def _not_ours(root: Path, rel: str, owned: dict[str, str], tree: Path) -> bool:
    """True when writing `rel` would replace or write through something hmbuild did not create.
    A file already holding exactly the bytes `new` would write is no loss to replace (e.g.
    napi_init.cpp after `hmbuild api` regenerated it from an unchanged api.toml)."""
    if blocked_path(root, rel):
        return True
    dest = root / rel
    if not dest.exists():
        return False
    if rel == MANIFEST:
        return False  # read_manifest has accepted it
    if rel == BASE:
        return not owned  # recorded together with the manifest
    return _sha256(dest) not in (owned.get(rel), _sha256(tree / rel))


def _sha256(path: Path) -> str:
    return sha256(path.read_bytes())


def move_into(tree: Path, root: Path, files: list[str], backups: Path, remove: list[str] = ()) -> None:
    """Move the staged files into an existing folder one os.replace at a time, and move the files
    in `remove` out to `backups`; if one step fails, put back what was replaced or removed and
    delete what was added, so the folder is as it was."""
    journal: list[tuple[Path, Path | None]] = []
    made_dirs: list[Path] = []
    backups.mkdir()
    try:
        for i, rel in enumerate([*files, *remove]):
            dest = root / rel
            cur = root
            for part in Path(rel).parent.parts:
                cur = cur / part
                if not cur.is_dir():
                    cur.mkdir()
                    made_dirs.append(cur)
            kept = None
            if dest.exists():
                kept = backups / str(i)
                os.replace(dest, kept)
            journal.append((dest, kept))
            if i < len(files):
                os.replace(tree / rel, dest)
    except OSError:
        for dest, kept in reversed(journal):
            try:
                if kept is not None:
                    os.replace(kept, dest)
                else:
                    dest.unlink(missing_ok=True)
            except OSError:
                pass
        for d in reversed(made_dirs):
            try:
                d.rmdir()
            except OSError:
                pass
        raise


def new_project(directory: str | Path, name: str | None = None, config: str | Path | None = None,
                description: str | None = None, force: bool = False, ci: str | None = None) -> NewResult:
    """`config`: an hmbuild.toml (an example's) whose settings the project's hmbuild.toml takes; its
    [project] name and description are the defaults. `force`: add the project to a non-empty
    folder, refreshing only files an earlier `new` wrote and nobody changed since."""
    root = validate_folder(Path(os.path.abspath(Path(directory).expanduser())))
    config_src, config_settings = read_config(config) if config is not None else (None, {})
    project_cfg = config_settings.get("project", {})
    if name is None and "name" in project_cfg:
        name = project_cfg["name"]
    name = validate_name(name if name is not None else default_name(root))
    if description is None and "description" in project_cfg:
        description = project_cfg["description"]
    description = validate_description(description) if description is not None else None
    ci = validate_ci(ci if ci is not None else project_cfg.get("ci", "github"))
    if root.exists() and not root.is_dir():
        raise HmbuildError(f"{root} exists and is not a folder; choose a new folder.")
    if not root.parent.is_dir():
        raise HmbuildError(f"The parent folder {root.parent} does not exist; create it first.")
    non_empty = root.is_dir() and any(root.iterdir())
    if non_empty and not force:
        raise HmbuildError(f"{root} is not empty; choose a new folder, or pass --force to add hmbuild's files next "
                           "to yours (files hmbuild did not write are never overwritten).")
    owned = read_manifest(root) if non_empty else {}
    device_classes = validate_device_classes(config_settings.get("device_class"), f"the config file {config}")
    intent = validate_intent(config_settings.get("intent"), f"the config file {config}")
    contents = render_project({"name": name, "description": description, "ci": ci, "device_classes": device_classes,
                               "intent": intent}, config_src)
    # Staged next to where the files go (same file system, so every move is a rename).
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.hmbuild-new-" if not non_empty else ".hmbuild-new-",
                                    dir=root if non_empty else root.parent))
    try:
        tree = staging / "tree"
        files = write_files(tree, {**contents, **records(contents, "config" if config_src is not None else "template")})
        if non_empty:
            conflicts = [rel for rel in files if _not_ours(root, rel, owned, tree)]
            if conflicts:
                shown = ", ".join(conflicts[:3]) + (f" and {len(conflicts) - 3} more" if len(conflicts) > 3 else "")
                raise HmbuildError(f"Nothing was written: {root} already has {shown}, which hmbuild did not write "
                                   "or which changed since; move them away, or choose a new folder.")
            move_into(tree, root, files, staging / "replaced")
        else:
            if root.exists():
                root.rmdir()  # empty, checked above
            tree.rename(root)
    except OSError as exc:
        raise HmbuildError(f"Could not write the project to {root} ({exc.strerror}); check permissions and free space.") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return NewResult(root=root, name=name, files=files)
