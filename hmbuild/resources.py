"""Where hmbuild's data (templates, toolchains, native runtime) and its cache live."""

from __future__ import annotations

import os
from pathlib import Path

_PKG = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    # A wheel carries the folders as hmbuild/_data/<name>; a source checkout (or an editable
    # install) has them at the top of the repository, next to the package.
    for candidate in (_PKG / "_data" / name, _PKG.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"hmbuild's {name}/ folder is missing from this installation; reinstall hmbuild.")


def templates_dir() -> Path:
    return _data_dir("templates")


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
