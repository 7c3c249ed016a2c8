"""Where hmbuild's data (templates, toolchains, native runtime) and its cache live."""

from __future__ import annotations

import os
from pathlib import Path

from hmbuild.errors import HmbuildError

_PKG = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    # A wheel carries the folders as hmbuild/_data/<name>; a source checkout (or an editable
    # install) has them at the top of the repository, next to the package.
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"hmbuild's {name}/ folder is missing from this installation; reinstall hmbuild.")


def templates_dir() -> Path:
    """hmbuild's templates, or a team's own copy of them named by HMBUILD_TEMPLATES_DIR (a folder
    holding project/ and api/ laid out like hmbuild's); `new`, `update` and `check` all render from it."""
    override = os.environ.get("HMBUILD_TEMPLATES_DIR")
    if not override:
        return _data_dir("templates")
    path = Path(override).expanduser().resolve()
    if not (path / "project").is_dir() or not (path / "api").is_dir():
        raise HmbuildError(f"HMBUILD_TEMPLATES_DIR={override} is not a templates folder (it needs project/ and api/ "
                           "like hmbuild's own templates/); fix the path or unset it.")
    return path


def toolchains_dir() -> Path:
    return _data_dir("toolchains")


def native_dir() -> Path:
    return _data_dir("native")


def cache_dir() -> Path:
    """Downloads and tool state shared by all projects (aarch64 Node, Node-API headers, Conan home,
    test models). HMBUILD_CACHE overrides; it is never inside a project."""
    override = os.environ.get("HMBUILD_CACHE")
    if override:
        return Path(override).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hmbuild"
