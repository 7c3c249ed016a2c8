"""`hmbuild new`: render templates/project into a new project folder.

The template tree mirrors the output tree. Files ending in .j2 are rendered with StrictUndefined
(a missing variable is an error, never an empty string) and lose the suffix; path segments may
hold {{ name }}. Everything is rendered into a temporary sibling folder that is renamed into
place at the end, so a failed `new` leaves nothing behind.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

import jinja2

from hmbuild import __version__
from hmbuild.api_schema import write_project_api
from hmbuild.errors import HmbuildError
from hmbuild.resources import native_dir, templates_dir
from hmbuild.targets import plain_cmake_presets

NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_NAME = 48
# Words that would break the generated C++ or ArkTS when used as the module name.
RESERVED = {
    "auto", "break", "case", "char", "class", "const", "continue", "default", "delete", "do", "double",
    "else", "enum", "export", "extern", "false", "float", "for", "function", "goto", "if", "import",
    "int", "long", "namespace", "new", "null", "private", "public", "register", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "this", "true", "typedef", "union", "unsigned",
    "void", "volatile", "while", "napi", "hmllm", "std",
}
# Where the runtime is vendored inside a generated project.
RUNTIME_SUBDIR = Path("src/main/cpp/hmllm")


@dataclass(frozen=True)
class NewResult:
    root: Path
    name: str
    files: list[str]


def validate_name(name: str) -> str:
    if not NAME_RE.match(name) or len(name) > MAX_NAME:
        raise HmbuildError(
            f"'{name}' is not a valid module name; use lowercase letters, digits and '_', starting with a letter "
            f"(at most {MAX_NAME} characters), e.g. --name notes_llm."
        )
    if name in RESERVED:
        raise HmbuildError(f"'{name}' is a reserved word in C++, ArkTS or the runtime; pick another --name.")
    return name


def default_name(directory: Path) -> str:
    return directory.name.lower().replace("-", "_")


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def render_tree(template_root: str, out: Path, context: dict) -> list[str]:
    """Render templates/<template_root> into `out`; returns the relative paths written."""
    env = _environment()
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
    shutil.copytree(native_dir(), dest, ignore=shutil.ignore_patterns("build", "*.o", "__pycache__"))
    return [p.relative_to(project_root).as_posix() for p in sorted(dest.rglob("*")) if p.is_file()]


def read_config(path: str | Path) -> tuple[str, dict]:
    """(text, settings) of an hmbuild.toml given to `new --config` (e.g. an example's)."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except FileNotFoundError:
        raise HmbuildError(f"The config file {path} does not exist; pass an hmbuild.toml such as "
                           "examples/notes-assistant/hmbuild.toml.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HmbuildError(f"Could not read the config file {path} ({exc}); check the path.") from None
    except tomllib.TOMLDecodeError as exc:
        raise HmbuildError(f"The config file {path} is not valid TOML ({exc}); fix it and retry.") from None


def config_text(text: str, name: str) -> str:
    """The config's text (comments kept) with [project] name set to `name` and hmbuild_version to
    this hmbuild's; the rest of the settings are copied as they are."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, l in enumerate(lines) if re.match(r"\s*\[project\]\s*(#.*)?$", l)), None)
    if start is None:
        lines[:0] = ["[project]\n", f'name = "{name}"\n', f'hmbuild_version = "{__version__}"\n', "\n"]
        return "".join(lines)
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"\s*\[", lines[i])), len(lines))
    for key, value in (("name", name), ("hmbuild_version", __version__)):
        pattern = re.compile(rf'^(\s*{key}\s*=\s*)"[^"\n]*"')
        hit = next((i for i in range(start + 1, end) if pattern.match(lines[i])), None)
        if hit is None:
            lines.insert(start + 1, f'{key} = "{value}"\n')
            end += 1
        else:
            lines[hit] = pattern.sub(lambda m: f'{m.group(1)}"{value}"', lines[hit], count=1)
    return "".join(lines)


def new_project(directory: str | Path, name: str | None = None, config: str | Path | None = None) -> NewResult:
    """`config`: an hmbuild.toml (an example's) whose settings the project's hmbuild.toml takes; its
    [project] name is the default name."""
    root = Path(directory).expanduser().absolute()
    config_src, config_settings = read_config(config) if config is not None else (None, {})
    if name is None and isinstance(config_settings.get("project", {}).get("name"), str):
        name = config_settings["project"]["name"]
    name = validate_name(name if name is not None else default_name(root))
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise HmbuildError(f"{root} already exists and is not empty; choose a new folder.")
    if not root.parent.is_dir():
        raise HmbuildError(f"The parent folder {root.parent} does not exist; create it first.")
    context = {"name": name, "hmbuild_version": __version__, "presets": plain_cmake_presets()}
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.hmbuild-new-", dir=root.parent))
    try:
        files = render_tree("project", staging, context)
        files += vendor_runtime(staging)
        # napi_init.cpp and Index.d.ts come from the project's api.toml and its vendored NAPI headers.
        files += [f.path for f in write_project_api(staging, name)]
        if config_src is not None:
            (staging / "hmbuild.toml").write_text(config_text(config_src, name), encoding="utf-8")
        if root.exists():
            root.rmdir()  # empty, checked above
        staging.rename(root)
    except jinja2.TemplateError as exc:
        raise HmbuildError(f"A project template failed to render ({exc}); this is a bug in hmbuild, please report it.") from None
    except OSError as exc:
        raise HmbuildError(f"Could not write the project to {root} ({exc.strerror}); check permissions and free space.") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return NewResult(root=root, name=name, files=sorted(files))
