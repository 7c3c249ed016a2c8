"""A generated project on disk and its settings (hmbuild.toml), with the documented precedence:
command-line flag > environment (HMBUILD_*) > hmbuild.toml > built-in default."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from hmbuild.config.settings import validate_chat, validate_name, validate_ohos_stl  # the rules `new` applied; a hand edit must keep them
from hmbuild.errors import HmbuildError

BUILD_TYPES = ("Release", "Debug")


@dataclass(frozen=True)
class Project:
    root: Path
    name: str
    settings: dict

    @property
    def library_name(self) -> str:
        return f"lib{self.name}.so"

    @property
    def cpp_dir(self) -> Path:
        return self.root / "src" / "main" / "cpp"

    def build_dir(self, target: str, build_type: str, sanitize: str | None = None) -> Path:
        # Each sanitizer choice has its own folder (host-debug-address, host-release-address-undefined),
        # so switching never rebuilds another's.
        suffix = "-" + sanitize.replace(",", "-") if sanitize else ""
        return self.root / "build" / f"{target}-{build_type.lower()}{suffix}"

    def setting(self, section: str, key: str, flag_value=None, env: str | None = None, default=None):
        """One setting, resolved flag > HMBUILD_<env> > hmbuild.toml [section] key > default."""
        if flag_value is not None:
            return flag_value
        if env and os.environ.get(env):
            return os.environ[env]
        value = self.settings.get(section, {}).get(key)
        return default if value is None else value


def load_project(directory: str | Path) -> Project:
    root = Path(directory).expanduser().resolve()
    toml_path = root / "hmbuild.toml"
    if not toml_path.is_file():
        raise HmbuildError(
            f"{root} is not an hmbuild project (no hmbuild.toml); create one with `hmbuild new DIR` or pass -C DIR."
        )
    try:
        settings = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HmbuildError(f"{toml_path} is not valid TOML ({exc}); fix the file or regenerate the project.") from None
    name = settings.get("project", {}).get("name")
    if not isinstance(name, str) or not name:
        raise HmbuildError(f"{toml_path} has no [project] name; add `name = \"...\"` under [project].")
    try:
        validate_name(name)
    except HmbuildError as exc:
        raise HmbuildError(f"In {toml_path}, [project] name: {exc}") from None
    validate_chat(settings.get("chat"), str(toml_path))
    validate_ohos_stl(settings.get("build", {}).get("ohos_stl"), str(toml_path))
    return Project(root=root, name=name, settings=settings)


def resolve_build_type(project: Project, flag: str | None) -> str:
    value = project.setting("build", "build_type", flag, "HMBUILD_BUILD_TYPE", "Release")
    for bt in BUILD_TYPES:
        if str(value).lower() == bt.lower():
            return bt
    raise HmbuildError(f"Unknown build type '{value}'; use Release or Debug.")


def resolve_ohos_stl(project: Project) -> str | None:
    """OHOS_STL asked for: HMBUILD_OHOS_STL > hmbuild.toml [build] ohos_stl; None: the default."""
    return project.setting("build", "ohos_stl", None, "HMBUILD_OHOS_STL", None)


def resolve_target_name(project: Project, flag: str | None) -> str:
    return str(project.setting("build", "target", flag, "HMBUILD_TARGET", "host"))
