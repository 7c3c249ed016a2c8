"""`hmbuild ci`: write the project's CI definition for a provider into an existing project, switch
providers, and keep hmbuild's record of its output (generator.MANIFEST / BASE) in step."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hmbuild.config.project import load_project
from hmbuild.config.settings import PROVIDERS, set_project_values
from hmbuild.errors import HmbuildError
from hmbuild.scaffold import generator
from hmbuild.scaffold.ci import CI_PATHS, ci_files
from hmbuild.scaffold.generator import blocked_path, project_context, read_answers, read_manifest, sha256
from hmbuild.scaffold.update import apply_writes


@dataclass(frozen=True)
class CiResult:
    provider: str
    written: list[str]   # the provider's CI files (written, or already holding what hmbuild writes)
    removed: list[str]   # another provider's file hmbuild wrote and nobody changed since
    kept: list[str]      # another provider's file someone edited: left alone, and now the user's

    def to_json(self) -> dict:
        return {"ok": True, "provider": self.provider, "files": self.written, "removed": self.removed,
                "kept": self.kept}


def _record(root: Path, ci: dict[str, bytes], dropped: list[str], provider: str) -> dict[str, bytes]:
    """hmbuild's record of what it generated (generator.MANIFEST, and BASE, the render `hmbuild
    update` merges from), now with the new CI files, without the dropped ones, and with the
    recorded hmbuild.toml naming the new provider: the project as `new` would have rendered it."""
    record = generator.read_record(root)
    base = generator.read_base(root, record.get("files", {}))
    if base is None:  # made before hmbuild recorded its render: only the hashes are kept
        files = {rel: h for rel, h in record.get("files", {}).items() if rel not in dropped}
        files.update({rel: generator.sha256(data) for rel, data in ci.items()})
        record = {**record, "files": dict(sorted(files.items()))} if record else {"generator": "hmbuild", "files": files}
        return {generator.MANIFEST: (json.dumps(record, indent=1) + "\n").encode("utf-8")}
    base = {rel: data for rel, data in base.items() if rel not in dropped} | ci
    if "hmbuild.toml" in base:
        base["hmbuild.toml"] = generator.set_project_values(base["hmbuild.toml"], {"ci": provider},
                                                            root / generator.BASE)
    conflicts = [rel for rel in record.get("conflicts", []) if rel in base]
    return generator.records(base, record.get("hmbuild_toml", "config"), conflicts)


def write_ci(directory: str | Path, provider: str | None = None, force: bool = False) -> CiResult:
    """Write the CI definition of `provider` (default: hmbuild.toml's [project] ci, else github)
    into the project, record the provider in hmbuild.toml, and remove the other provider's file if
    hmbuild wrote it and nobody changed it. A CI file someone edited is replaced only with `force`.
    Everything is decided before anything is written, and written all or nothing."""
    project = load_project(directory)
    root = project.root
    if provider is None:
        provider = project.settings["project"].get("ci", "github")
    if provider not in PROVIDERS:
        raise HmbuildError(f"Unknown CI provider {str(provider)[:40]!r}; use --provider with one of: "
                           f"{', '.join(PROVIDERS)}.")
    # The context `hmbuild new` renders with: the answers hmbuild.toml records, with this provider.
    context = project_context(read_answers(project, ci=provider))
    files = {rel: text.encode("utf-8") for rel, text in ci_files(context).items()}
    owned = read_manifest(root)

    def state(rel: str) -> str:
        if blocked_path(root, rel):
            return "foreign"
        if not (root / rel).exists():
            return "absent"
        digest = sha256((root / rel).read_bytes())
        if rel in files and digest == sha256(files[rel]):
            return "same"
        return "ours" if digest == owned.get(rel) else "edited"

    states = {rel: state(rel) for rel in CI_PATHS.values()}
    for rel in files:
        if states[rel] == "foreign":
            raise HmbuildError(f"Nothing was written: {rel} is a folder or a symbolic link, not a file hmbuild "
                               "wrote; move it away and retry.")
        if states[rel] == "edited" and not force:
            raise HmbuildError(f"Nothing was written: {rel} differs from what hmbuild would write (edited since "
                               "it was generated, or not hmbuild's); pass --force to replace it, or move it away.")
    others = [rel for rel in CI_PATHS.values() if rel not in files]
    removed = [rel for rel in others if states[rel] == "ours"]
    kept = [rel for rel in others if states[rel] in ("edited", "foreign")]
    writes = {**files, "hmbuild.toml": set_project_values((root / "hmbuild.toml").read_text(encoding="utf-8"),
                                                          {"ci": provider}, root / "hmbuild.toml"),
              **_record(root, files, removed + kept, provider)}
    # update's writer: staged, then moved in one rename at a time, put back if one fails.
    apply_writes(root, {rel: data for rel, data in writes.items()
                  if not (root / rel).is_file() or (root / rel).read_bytes() != data}, removed)
    return CiResult(provider=provider, written=sorted(files), removed=removed, kept=kept)
