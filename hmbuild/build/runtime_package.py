"""The hmllm runtime as a Conan package, shared per profile through a team's Conan remote
(`hmbuild build --remote NAME`, HMBUILD_REMOTE, or hmbuild.toml `[build] remote`).

hmbuild exports the project's vendored recipe (src/main/cpp/hmllm/conanfile.py), so what a team
shares is its own vendored runtime: an edited copy is a new recipe revision, and a binary is reused
only for the same sources and the same profile (the package id covers os, arch, compiler and build
type). `conan install` then downloads the binary when the remote has it and builds it otherwise; a
binary that is here but not on the remote is uploaded, so the next machine downloads it.
The remote is configured in hmbuild's own Conan home (see conan_home()), with Conan's own
`conan remote add` / `conan remote login`.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hmbuild.build.tools import conan_home, run_step, tool_env, tool_path
from hmbuild.errors import HmbuildError
from hmbuild.config.project import Project

# Conan's JSON output, kept in the build folder's conan/ next to the toolchain.
_EXPORT, _GRAPH, _UPLOAD = "hmllm-export.json", "hmllm-graph.json", "hmllm-upload.json"
# conan install's graph status of a binary -> what hmbuild reports.
_BINARY_STATUS = {"Download": "downloaded", "Build": "built", "Cache": "cached"}


@dataclass(frozen=True)
class RuntimePackage:
    reference: str  # hmllm/<version>#<recipe revision>:<package id>
    status: str  # downloaded | built | cached
    uploaded: bool


def resolve_remote(project: Project, flag: str | None) -> str | None:
    """--remote > HMBUILD_REMOTE > hmbuild.toml [build] remote; none (or --remote "") is no remote."""
    remote = project.setting("build", "remote", flag, "HMBUILD_REMOTE", None)
    return str(remote) if remote else None


def _conan_command(*args: str) -> str:
    return f"`CONAN_HOME={shlex.quote(str(conan_home()))} conan {' '.join(args)}`"


def configured_remotes() -> list[str]:
    """The remotes of hmbuild's Conan home, by name."""
    proc = subprocess.run([tool_path("conan"), "remote", "list", "--format=json"], env=tool_env(),
                          capture_output=True, text=True)
    return [r["name"] for r in json.loads(proc.stdout)] if proc.returncode == 0 else []


def check_usable(project: Project, remote: str) -> None:
    """The project can take its runtime from a package, and `remote` is configured."""
    refresh = f"bring the project up to date with `hmbuild -C {project.root} update`, or build without --remote"
    recipe = project.cpp_dir / "hmllm" / "conanfile.py"
    if not recipe.is_file():
        raise HmbuildError(f"{recipe} is missing, so the runtime cannot be shared through a Conan remote; {refresh}.")
    if "runtime_package" not in (project.root / "conanfile.py").read_text(encoding="utf-8"):
        raise HmbuildError(f"{project.root / 'conanfile.py'} predates --remote; {refresh}.")
    names = configured_remotes()
    if remote not in names:
        raise HmbuildError(f"Conan remote '{remote}' is not configured in hmbuild's Conan home {conan_home()} "
                           f"(configured: {', '.join(names) or 'none'}); add it with "
                           f"{_conan_command('remote', 'add', remote, 'URL')} and "
                           f"{_conan_command('remote', 'login', remote, 'USER', '-p', 'PASSWORD')}.")


def describe(status: str, remote: str, uploaded: bool) -> str:
    """What happened to the runtime binary, in words: 'downloaded from 'team'' etc."""
    if status == "downloaded":
        return f"downloaded from '{remote}'"
    where = "built here" if status == "built" else "from the local Conan cache"
    return where + (f", uploaded to '{remote}'" if uploaded else "")


def announce(package: RuntimePackage, remote: str) -> None:
    print(f"hmbuild: runtime {package.reference} {describe(package.status, remote, package.uploaded)}",
          file=sys.stderr)


def export_recipe(project: Project, conan_dir: Path, log: Path) -> str:
    """Exports the vendored recipe to the local Conan cache; returns hmllm/<version>#<revision>."""
    out = conan_dir / _EXPORT
    run_step([tool_path("conan"), "export", str(project.cpp_dir / "hmllm"), "--format=json", "--out-file", str(out)],
             log, "Exporting the runtime's Conan recipe")
    return json.loads(out.read_text(encoding="utf-8"))["reference"]


def install_args(reference: str, remote: str, conan_dir: Path) -> list[str]:
    """conan install arguments that take the runtime from its package, downloaded from `remote` or
    built here (only hmllm may be built), with the dependency graph kept for share()."""
    return ["-o", f"&:runtime_package={reference}", "-r", remote, "--build=missing:hmllm/*",
            "-cc", "core:non_interactive=True", "--format=json", "--out-file", str(conan_dir / _GRAPH)]


def _runtime_node(conan_dir: Path) -> dict:
    """The runtime's node in `conan install --format=json`'s graph (its ref, package_id, binary)."""
    nodes = json.loads((conan_dir / _GRAPH).read_text(encoding="utf-8"))["graph"]["nodes"].values()
    return next(n for n in nodes if str(n.get("ref", "")).startswith("hmllm/"))


def cached(conan_dir: Path) -> RuntimePackage:
    """The runtime of a build whose Conan install is still current: its binary is in the local cache."""
    node = _runtime_node(conan_dir)
    return RuntimePackage(reference=f"{node['ref']}:{node['package_id']}", status="cached", uploaded=False)


def share(conan_dir: Path, remote: str, log: Path) -> RuntimePackage:
    """Reads what conan install did with the runtime and uploads a binary the remote lacks."""
    node = _runtime_node(conan_dir)
    reference = f"{node['ref']}:{node['package_id']}"
    status = _BINARY_STATUS.get(node["binary"], node["binary"].lower())
    uploaded = False
    if status != "downloaded":
        # Conan skips what the remote already has, so this costs one query when nothing is new.
        out = conan_dir / _UPLOAD
        try:
            run_step([tool_path("conan"), "upload", reference, "-r", remote, "-c", "-cc", "core:non_interactive=True",
                      "--format=json", "--out-file", str(out)], log, f"Uploading the runtime to remote '{remote}'")
        except HmbuildError as exc:
            raise HmbuildError(f"{str(exc).removesuffix('.')}; the binary stays in the local Conan cache: log in "
                               f"with {_conan_command('remote', 'login', remote, 'USER', '-p', 'PASSWORD')} and "
                               "build again, or build without --remote.") from None
        uploaded = _package_uploaded(json.loads(out.read_text(encoding="utf-8"))[remote], node)
    return RuntimePackage(reference=reference, status=status, uploaded=uploaded)


def _package_uploaded(results: dict, node: dict) -> bool:
    """Whether conan upload sent the binary (False: the remote already had it)."""
    name, rrev = node["ref"].split("#")
    package = results[name]["revisions"][rrev]["packages"][node["package_id"]]
    return any(rev.get("upload") for rev in package["revisions"].values())
