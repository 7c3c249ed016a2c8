"""The one jinja2 Environment every template of hmbuild renders through: projects, CI files, the
generated NAPI glue and Index.d.ts, and the Conan profiles.

Templates are found by their path under templates/ (project/..., api/..., ci/...) or under
toolchains/ (profiles/...). A team's HMBUILD_TEMPLATES_DIR comes first; hmbuild's own templates
serve whatever it leaves out. StrictUndefined makes a missing variable an error, never an empty
string. The per-language filters are the only way free text reaches a generated file.
"""

from __future__ import annotations

import functools
import json

import jinja2
import tomlkit

from hmbuild.resources import _data_dir, templates_dir, toolchains_dir

TemplateError = jinja2.TemplateError

# The version of the templates' output, apart from the tool's own version: a generated project
# records it (hmbuild.toml [project] hmbuild_version) and `hmbuild check` compares renders, so it
# moves only when a template's output changes, and a release that changes no template leaves
# every project up to date. Set it to the hmbuild release that changes the output.
TEMPLATES_VERSION = "0.1.0"


def _cmake_bracket(value: str) -> str:
    """A CMake bracket argument ([=[...]=]): no escapes and no ${} expansion inside, so any text
    survives; the '=' count is chosen so the text cannot close it."""
    level = 0
    while f"]{'=' * level}]" in value:
        level += 1
    return f"[{'=' * level}[{value}]{'=' * level}]"


# One filter per output language, for values a user may type freely (hand-written only where no
# library serialises the language: CMake). Identifiers such as `name` are validated, not escaped.
FILTERS = {
    "json_str": lambda v: json.dumps(str(v), ensure_ascii=False),   # JSON and JSON5 strings
    "toml_str": lambda v: tomlkit.string(str(v)).as_string(),       # TOML basic strings
    "cmake_str": lambda v: _cmake_bracket(str(v)),
    "py_str": lambda v: repr(str(v)),                               # Python (conanfile.py) literals
}


def environment() -> jinja2.Environment:
    """The Environment (made once per templates folder, as HMBUILD_TEMPLATES_DIR may change)."""
    return _environment(str(templates_dir()))


@functools.cache
def _environment(templates: str) -> jinja2.Environment:
    loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(templates),
                                  jinja2.FileSystemLoader(str(_data_dir("templates"))),
                                  jinja2.FileSystemLoader(str(toolchains_dir()))])
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False)
    env.filters.update(FILTERS)
    return env


def code_environment() -> jinja2.Environment:
    """The same Environment (its loader, filters and undefined) as an overlay whose block tags
    eat their own line, which the line-per-item templates of the generated API code (api/) are
    written for."""
    return environment().overlay(trim_blocks=True, lstrip_blocks=True)
