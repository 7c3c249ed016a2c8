"""What a user types into hmbuild.toml or on `new`'s command line, held to the rules of every file
it reaches (C++, CMake, JSON5, TOML, ArkTS), and hmbuild.toml edited with its comments kept.
`new`, `update`, `ci`, `run --classify` and load_project all check through here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import tomlkit
import tomlkit.exceptions

from hmbuild.config.api_schema import limit
from hmbuild.errors import HmbuildError, shown as _shown

# The CI providers `new --ci` and `hmbuild ci --provider` take.
PROVIDERS = ("github", "gitlab", "none")
# The built-in chat formats of [chat] template (hmbuild/model/chat_template.py holds their Jinja).
CHAT_TEMPLATES = ("gemma", "chatml", "llama3", "none")
# OHOS_STL of the ohos targets: c++_shared (DevEco's template default; the HAR then carries
# libc++_shared.so) or c++_static (libc++ linked into the module, its symbols not exported).
OHOS_STLS = ("c++_shared", "c++_static")
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_NAME = 48
MAX_DESCRIPTION = 200
# C0 and C1 controls, DEL, and the Unicode line/paragraph separators: none belongs in a one-line
# value, and each can end a line or a string literal in one of the languages the project is written in.
CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Words that would break the generated C++ or ArkTS when used as the module name.
RESERVED = {
    "auto", "break", "case", "char", "class", "const", "continue", "default", "delete", "do", "double",
    "else", "enum", "export", "extern", "false", "float", "for", "function", "goto", "if", "import",
    "int", "long", "namespace", "new", "null", "private", "public", "register", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "this", "true", "typedef", "union", "unsigned",
    "void", "volatile", "while", "napi", "hmllm", "std",
}

def validate_name(name) -> str:
    """The module name becomes a C++/CMake identifier, a file name (lib<name>.so) and a JSON5/TOML
    string, so it is held to the narrowest of those: a lowercase ASCII identifier."""
    if not isinstance(name, str):
        raise HmbuildError(f"The module name must be text, not {type(name).__name__}; set [project] name = \"notes_llm\".")
    if not name:
        raise HmbuildError("The module name is empty; pass one with --name, e.g. --name notes_llm.")
    rule = (f"use lowercase letters, digits and '_', starting with a letter (at most {MAX_NAME} characters), "
            f"e.g. --name notes_llm")
    if len(name) > MAX_NAME:
        raise HmbuildError(f"The module name {_shown(name)} is {len(name)} characters long; {rule}.")
    if not NAME_RE.match(name):
        raise HmbuildError(f"{_shown(name)} is not a valid module name; {rule}.")
    if name in RESERVED:
        raise HmbuildError(f"'{name}' is a reserved word in C++, ArkTS or the runtime; pick another --name.")
    return name


def validate_description(text) -> str:
    """Free text, escaped per language when rendered; only what no escaping can make safe, or
    what cannot be stored as UTF-8, is refused."""
    if not isinstance(text, str):
        raise HmbuildError(f"The description must be text, not {type(text).__name__}; quote it in the config file.")
    if len(text) > MAX_DESCRIPTION:
        raise HmbuildError(f"The description is {len(text)} characters long; keep it to one line of at most "
                           f"{MAX_DESCRIPTION} characters.")
    if CONTROL_RE.search(text):
        raise HmbuildError(f"The description {_shown(text)} holds a line break or control character; keep it to "
                           "one line of plain text.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise HmbuildError(f"The description {_shown(text)} is not valid UTF-8; retype it in a UTF-8 terminal.") from None
    return text


def validate_ci(ci, where: str = "") -> str:
    if ci not in PROVIDERS:
        raise HmbuildError(f"Unknown CI provider {_shown(str(ci))}{where}; use one of: {', '.join(PROVIDERS)}.")
    return ci


# The [[device_class]] rows of hmbuild.toml, which DeviceClasses.ets is written from: key -> (check, what it must be).
_DC_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
_DC_FILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_DC_FIELDS = {
    "name": (lambda v: isinstance(v, str) and bool(_DC_NAME_RE.match(v)), "a short name of letters, digits, _ or -"),
    "min_total_ram_gb": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1024,
                         "a number of GB from 0 to 1024"),
    "model_file": (lambda v: isinstance(v, str) and bool(_DC_FILE_RE.match(v)),
                   "a file name in the model folder (letters, digits, '.', '_', '-'; no folders)"),
    # init()'s contextSize, from api.toml: a row the library would refuse is refused here.
    "context_size": (lambda v: isinstance(v, int) and not isinstance(v, bool)
                     and limit("contextSize").lo <= v <= limit("contextSize").hi,
                     lambda: f"a whole number of tokens from {int(limit('contextSize').lo)} to "
                             f"{int(limit('contextSize').hi)}"),
    "kv_cache_type": (lambda v: v in ("f16", "q8_0"), "f16 or q8_0"),
    "min_available_mb": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 1 << 20,
                         "a whole number of MB from 0 to 1048576"),
}


def validate_device_classes(rows, where: str) -> list[dict] | None:
    """The [[device_class]] rows (None when there are none: the template's own rows are used),
    each with every field, the largest class first; values reach ArkTS source, so each is held to
    a narrow rule rather than escaped."""
    if rows is None:
        return None
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise HmbuildError(f"In {where}, device_class must be one or more [[device_class]] tables.")
    for i, row in enumerate(rows, 1):
        for key, (ok, rule) in _DC_FIELDS.items():
            rule = rule() if callable(rule) else rule
            if key not in row:
                raise HmbuildError(f"In {where}, [[device_class]] row {i} has no {key}; give it {rule}.")
            if not ok(row[key]):
                raise HmbuildError(f"In {where}, [[device_class]] row {i} {key} = {_shown(str(row[key]))} must be {rule}.")
        unknown = sorted(set(row) - set(_DC_FIELDS))
        if unknown:
            raise HmbuildError(f"In {where}, [[device_class]] row {i} has unknown key {unknown[0]}; the keys are "
                               f"{', '.join(_DC_FIELDS)}.")
    ram = [r["min_total_ram_gb"] for r in rows]
    if ram != sorted(ram, reverse=True):
        raise HmbuildError(f"In {where}, the [[device_class]] rows must go from the largest min_total_ram_gb to the "
                           "smallest (the first row a device reaches is used).")
    return [{k: r[k] for k in _DC_FIELDS} for r in rows]


# The [intent] table of hmbuild.toml, which Intents.ets is written from and `run --classify` reads.
# The limits are classifyAsync's (64 labels of at most 256 bytes; 32 examples of at most 4096 bytes).
_INTENT_KEYS = ("labels", "example", "calibrate", "fallback", "min_margin")


def _plain_text(v, most: int) -> bool:
    return isinstance(v, str) and 0 < len(v.encode()) <= most and not any(ord(c) < 0x20 for c in v)


def validate_intent(table, where: str) -> dict | None:
    """hmbuild.toml's [intent] (None when there is none: the template's is used) as
    {labels, examples: [{text, label}], calibrate, fallback, min_margin}. Labels and texts are free
    text (a Chinese app routes to Chinese labels): they reach ArkTS through the json_str filter."""
    if table is None:
        return None
    if not isinstance(table, dict):
        raise HmbuildError(f"In {where}, intent must be an [intent] table.")
    unknown = sorted(set(table) - set(_INTENT_KEYS))
    if unknown:
        raise HmbuildError(f"In {where}, [intent] has unknown key {unknown[0]}; the keys are {', '.join(_INTENT_KEYS)}.")
    labels = table.get("labels")
    if (not isinstance(labels, list) or not 1 <= len(labels) <= 64 or not all(_plain_text(l, 256) for l in labels)
            or len(set(labels)) != len(labels)):
        raise HmbuildError(f"In {where}, [intent] labels must be a list of 1 to 64 different labels, each 1 to 256 bytes "
                           "without control characters.")
    rows = table.get("example", [])
    if not isinstance(rows, list) or len(rows) > 32:
        raise HmbuildError(f"In {where}, [[intent.example]] must be at most 32 tables with text and label.")
    examples = []
    for i, row in enumerate(rows, 1):
        if not isinstance(row, dict) or set(row) != {"text", "label"} or not _plain_text(row["text"], 4096):
            raise HmbuildError(f"In {where}, [[intent.example]] row {i} must have exactly text = \"...\" (1 to 4096 "
                               "bytes, no control characters) and label = \"...\".")
        if row["label"] not in labels:
            raise HmbuildError(f"In {where}, [[intent.example]] row {i} label = {_shown(str(row['label']))} is not one "
                               "of [intent] labels.")
        examples.append({"text": row["text"], "label": row["label"]})
    calibrate = table.get("calibrate", False)
    if not isinstance(calibrate, bool):
        raise HmbuildError(f"In {where}, [intent] calibrate must be true or false.")
    fallback = table.get("fallback", "")
    if fallback != "" and fallback not in labels:
        raise HmbuildError(f"In {where}, [intent] fallback = {_shown(str(fallback))} must be one of the labels (or \"\" "
                           "for none).")
    margin = table.get("min_margin", 0)
    if not isinstance(margin, (int, float)) or isinstance(margin, bool) or not 0 <= margin <= 100:
        raise HmbuildError(f"In {where}, [intent] min_margin must be a number from 0 to 100.")
    return {"labels": list(labels), "examples": examples, "calibrate": calibrate, "fallback": fallback,
            "min_margin": float(margin)}


def validate_chat(table, where: str) -> dict:
    """[chat]: at most one of template (a built-in name) and template_file (a Jinja file, relative
    to the project), and date_string for templates that write the date. {} when absent: the
    model's own tokenizer.chat_template is used."""
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise HmbuildError(f"In {where}, chat must be a [chat] table.")
    unknown = sorted(set(table) - {"template", "template_file", "date_string"})
    if unknown:
        raise HmbuildError(f"In {where}, [chat] has the unknown key {unknown[0]!r}; use template, template_file "
                           "or date_string.")
    if "template" in table and "template_file" in table:
        raise HmbuildError(f"In {where}, [chat] sets both template and template_file; keep one.")
    name = table.get("template")
    if name is not None and name not in CHAT_TEMPLATES:
        raise HmbuildError(f"In {where}, [chat] template {_shown(str(name))} is not a built-in chat format; use one "
                           f"of: {', '.join(CHAT_TEMPLATES)} (or template_file = \"path.jinja\").")
    for key in ("template_file", "date_string"):
        v = table.get(key)
        if v is not None and (not isinstance(v, str) or not v or CONTROL_RE.search(v)):
            raise HmbuildError(f"In {where}, [chat] {key} must be a one-line text, e.g. "
                               + ('template_file = "chat.jinja".' if key == "template_file"
                                  else 'date_string = "26 Jul 2024".'))
    return dict(table)


def validate_ohos_stl(value, where: str) -> str | None:
    """[build] ohos_stl, when set: one of OHOS_STLS."""
    if value is None:
        return None
    if value not in OHOS_STLS:
        raise HmbuildError(f"In {where}, [build] ohos_stl {_shown(str(value))} is not an OHOS STL; use "
                           f"{' or '.join(OHOS_STLS)}.")
    return value


def read_config(path: str | Path) -> tuple[str, dict]:
    """(text, settings) of an hmbuild.toml given to `new --config` (e.g. an example's)."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
        settings = tomllib.loads(text)
    except FileNotFoundError:
        raise HmbuildError(f"The config file {path} does not exist; pass an hmbuild.toml such as "
                           "examples/notes-assistant/hmbuild.toml.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HmbuildError(f"Could not read the config file {path} ({exc}); check the path.") from None
    except tomllib.TOMLDecodeError as exc:
        raise HmbuildError(f"The config file {path} is not valid TOML ({exc}); fix it and retry.") from None
    if not isinstance(settings.get("project", {}), dict):
        raise HmbuildError(f"In the config file {path}, `project` must be a [project] table.")
    return text, settings


def set_project_values(toml: str | bytes, values: dict, where: str | Path = "hmbuild.toml",
                       add: bool = True) -> bytes:
    """An hmbuild.toml's text (or bytes) with the [project] `values` set: tomlkit (not tomllib) keeps
    the comments, the layout and every other value as written, and writes the values, so whatever
    they hold comes back as the same string. add=False sets only the keys [project] already has
    (and leaves a file without [project] as it is). Not TOML whose [project] is a table: an
    HmbuildError naming `where`."""
    try:
        doc = tomlkit.parse(toml.decode("utf-8") if isinstance(toml, bytes) else toml)
        if add and "project" not in doc:
            doc.add("project", tomlkit.table())
        project = doc.get("project", {})
        if not isinstance(project, dict):
            raise TypeError("[project] is not a table")
        for key, value in values.items():
            if add or key in project:
                project[key] = value
    except (UnicodeDecodeError, tomlkit.exceptions.TOMLKitError, TypeError) as exc:
        raise HmbuildError(f"{where} is not TOML hmbuild can edit ({exc}); fix it and retry.") from None
    return tomlkit.dumps(doc).encode("utf-8")
