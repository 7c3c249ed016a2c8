"""The exported API, described once (a project's api.toml), rendered twice: the NAPI property
table in src/main/cpp/napi_init.cpp and the declarations in src/main/cpp/types/lib<name>/Index.d.ts.

The C++ functions stay hand-written in the runtime's napi/ folder; the description only says
which JS name binds to which `hmllm_napi::` symbol and what TypeScript sees. The known symbols are
parsed from the runtime's napi/*.h rather than listed here: those headers are already the contract
the C++ side compiles against, so a list in Python would be a third copy to drift (and a
project's vendored runtime, not hmbuild's, is what its napi_init.cpp is compiled with).
"""

from __future__ import annotations

import re
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path


from hmbuild.errors import HmbuildError
from hmbuild.resources import native_dir, templates_dir
from hmbuild.templating import code_environment

DEFAULT_API_FILE = "api.toml"
NAPI_INIT = "src/main/cpp/napi_init.cpp"
NAPI_HEADERS = Path("src/main/cpp/hmllm/napi")  # the vendored runtime's NAPI headers
WIDTH = 120  # declarations longer than this wrap their parameters
COMMENT_WIDTH = 100

PRIMITIVES = ("number", "string", "boolean", "ArrayBuffer", "void")
# Interfaces may extend only these built-ins.
EXTENDABLE = ("Error",)
IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
CPP_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ERROR_CODE = re.compile(r"^[A-Z][A-Z0-9_]*$")
# `napi_value Name(napi_env env, napi_callback_info info);` in a napi/*.h header.
# `extern const OptionLimit kInitOptionsThreads, ...;` in a napi/*.h header: the limits the C++ checks.
LIMIT_DECL = re.compile(r"\bextern\s+const\s+OptionLimit\s+([^;]+);")
SYMBOL_DECL = re.compile(r"\bnapi_value\s+([A-Za-z_]\w*)\s*\(\s*napi_env\b[^,()]*,\s*napi_callback_info\b[^()]*\)\s*;")


def index_dts_path(name: str) -> str:
    return f"src/main/cpp/types/lib{name}/Index.d.ts"


# ---- the description

@dataclass(frozen=True)
class Limit:
    """The range a number option of the exported API accepts (its `min`, `max` and `integer` in
    api.toml); the NAPI glue, Index.d.ts and the CLI's click ranges are all made from it."""
    lo: float
    hi: float
    integer: bool

    def text(self) -> str:
        """The range as Index.d.ts states it, e.g. "Range 16..131072." (whole numbers) or "Range 0..1 (any number)"."""
        def num(v: float) -> str:
            return str(int(v)) if float(v).is_integer() else repr(float(v))
        return f"Range {num(self.lo)}..{num(self.hi)}{'' if self.integer else ' (any number)'}."

    def cpp(self) -> str:
        """The C++ initializer of an OptionLimit (doubles print exactly; integers up to 2^53 included)."""
        return f"{{{float(self.lo)!r}, {float(self.hi)!r}, {'true' if self.integer else 'false'}}}"


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    optional: bool
    doc: str
    limit: Limit | None = None


def limit_constant(interface: str, field: str) -> str:
    """The C++ name (namespace hmllm_napi) of a field's limits: InitOptions.contextSize -> kInitOptionsContextSize."""
    return f"k{interface}{field[:1].upper()}{field[1:]}"


@dataclass(frozen=True)
class Interface:
    name: str
    extends: str | None
    fields: tuple[Field, ...]
    doc: str


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    optional: bool


@dataclass(frozen=True)
class Form:
    params: tuple[Param, ...]
    returns: str
    doc: str


@dataclass(frozen=True)
class Function:
    name: str
    symbol: str
    forms: tuple[Form, ...]


@dataclass(frozen=True)
class ErrorCode:
    code: str
    doc: str


@dataclass(frozen=True)
class Api:
    source: Path
    doc: str
    errors: tuple[ErrorCode, ...]
    interfaces: tuple[Interface, ...]
    functions: tuple[Function, ...]


class _Invalid(Exception):
    """One problem with the description; load_api() turns it into an HmbuildError naming the file."""


# ---- TypeScript types: a closed grammar
#   type    := union
#   union   := postfix ('|' postfix)*            (only string literals may be joined)
#   postfix := primary ('[]')*
#   primary := PRIMITIVE | INTERFACE | 'literal' | Promise '<' type '>' | '(' params? ')' '=>' type

_TOKEN = re.compile(r"\s*(=>|\[\]|'[^'\\]*'|[A-Za-z_$][A-Za-z0-9_$]*|[<>()|:?,])")


class _TypeParser:
    def __init__(self, text: str, interfaces: set[str]):
        self.text = text
        self.interfaces = interfaces
        self.tokens = self._tokenize(text)
        self.i = 0

    def _tokenize(self, text: str) -> list[str]:
        tokens, pos = [], 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m:
                raise _Invalid(f"type '{text}' has an unexpected character at '{text[pos:].strip()[:10]}'")
            tokens.append(m.group(1))
            pos = m.end()
        return tokens

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            want = f"'{expected}'" if expected else "more"
            raise _Invalid(f"type '{self.text}' is malformed (expected {want} at '{tok or 'the end'}')")
        self.i += 1
        return tok

    def parse(self, allow_void: bool) -> str:
        out = self.type(allow_void)
        if self.peek() is not None:
            raise _Invalid(f"type '{self.text}' is malformed (unexpected '{self.peek()}')")
        return out

    def type(self, allow_void: bool) -> str:
        parts = [self.postfix(allow_void)]
        while self.peek() == "|":
            self.take("|")
            parts.append(self.postfix(allow_void))
        if len(parts) > 1:
            if not all(p.startswith("'") for p in parts):
                raise _Invalid(f"type '{self.text}' joins non-literal types with '|'; only unions of string literals "
                               "like 'f16' | 'q8_0' are supported")
            if len(set(parts)) != len(parts):
                raise _Invalid(f"type '{self.text}' repeats a literal")
        return " | ".join(parts)

    def postfix(self, allow_void: bool) -> str:
        base = self.primary(allow_void)
        while self.peek() == "[]":
            self.take("[]")
            if base == "void":
                raise _Invalid(f"type '{self.text}' has an array of void")
            base = f"({base})[]" if base.startswith("(") else base + "[]"
        return base

    def primary(self, allow_void: bool) -> str:
        tok = self.take()
        if tok.startswith("'"):
            return tok
        if tok == "(":
            return self.function_type()
        if tok == "Promise":
            self.take("<")
            inner = self.type(allow_void=True)
            self.take(">")
            return f"Promise<{inner}>"
        if tok == "void":
            if not allow_void:
                raise _Invalid(f"type '{self.text}' uses void where a value is needed; void is for return types only")
            return tok
        if tok in PRIMITIVES or tok in self.interfaces:
            return tok
        if IDENT.match(tok):
            known = ", ".join(list(PRIMITIVES) + ["Promise<T>", "T[]"] + sorted(self.interfaces))
            raise _Invalid(f"type '{self.text}' names '{tok}', which is neither a supported type nor a declared "
                           f"interface (known: {known})")
        raise _Invalid(f"type '{self.text}' is malformed (unexpected '{tok}')")

    def function_type(self) -> str:
        params, seen, optional_seen = [], set(), False
        while self.peek() != ")":
            if params:
                self.take(",")
            name = self.take()
            if not IDENT.match(name):
                raise _Invalid(f"type '{self.text}' has a bad parameter name '{name}'")
            if name in seen:
                raise _Invalid(f"type '{self.text}' has two parameters named '{name}'")
            seen.add(name)
            optional = self.peek() == "?"
            if optional:
                self.take("?")
                optional_seen = True
            elif optional_seen:
                raise _Invalid(f"type '{self.text}' has a required parameter after an optional one")
            self.take(":")
            params.append(f"{name}{'?' if optional else ''}: {self.type(allow_void=False)}")
        self.take(")")
        self.take("=>")
        return f"({', '.join(params)}) => {self.type(allow_void=True)}"


def parse_type(text: str, interfaces: set[str], allow_void: bool = False) -> str:
    """The canonical spelling of a supported TypeScript type; _Invalid for anything else."""
    if not isinstance(text, str) or not text.strip():
        raise _Invalid("a type is missing or not a string")
    return _TypeParser(text, interfaces).parse(allow_void)


# ---- loading and validation

def _table(value, what: str) -> dict:
    if not isinstance(value, dict):
        raise _Invalid(f"{what} must be a table")
    return value


def _keys(table: dict, what: str, required: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    for key in required:
        if key not in table:
            raise _Invalid(f"{what} has no `{key}`")
    unknown = sorted(set(table) - set(required) - set(allowed))
    if unknown:
        raise _Invalid(f"{what} has an unknown key `{unknown[0]}` (allowed: {', '.join(required + allowed)})")


def _text(table: dict, key: str, what: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise _Invalid(f"{what}'s `{key}` must be a string")
    return value


def _doc(table: dict, what: str) -> str:
    doc = " ".join(_text(table, "doc", what, "").split())
    if "*/" in doc:
        raise _Invalid(f"{what}'s doc contains '*/', which would end the comment early")
    return doc


def _list(table: dict, key: str, what: str) -> list:
    value = table.get(key, [])
    if not isinstance(value, list):
        raise _Invalid(f"{what}'s `{key}` must be an array")
    return value


def _ident(name, what: str) -> str:
    if not isinstance(name, str) or not IDENT.match(name):
        raise _Invalid(f"{what} has the name {name!r}, which is not a TypeScript identifier")
    return name


def _unique(names: list[str], what: str) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise _Invalid(f"{what} '{n}' is declared twice")
        seen.add(n)


def _params(items: list, what: str, interfaces: set[str]) -> tuple[Param, ...]:
    params, optional_seen = [], False
    for item in items:
        p = _table(item, f"a parameter of {what}")
        name = _ident(p.get("name"), f"a parameter of {what}")
        _keys(p, f"parameter '{name}' of {what}", ("name", "type"), ("optional",))
        optional = p.get("optional", False)
        if not isinstance(optional, bool):
            raise _Invalid(f"parameter '{name}' of {what} has a non-boolean `optional`")
        if optional_seen and not optional:
            raise _Invalid(f"parameter '{name}' of {what} is required but follows an optional one")
        optional_seen |= optional
        try:
            ptype = parse_type(p["type"], interfaces)
        except _Invalid as exc:
            raise _Invalid(f"parameter '{name}' of {what}: {exc}") from None
        params.append(Param(name, ptype, optional))
    _unique([p.name for p in params], f"in {what}, the parameter")
    return tuple(params)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")


def _limit(table: dict, what: str, ftype: str) -> Limit | None:
    present = [k for k in ("min", "max", "integer") if k in table]
    if not present:
        return None
    if ftype != "number":
        raise _Invalid(f"{what} has `{present[0]}`, but limits belong only on number fields (it is {ftype})")
    if "min" not in table or "max" not in table:
        raise _Invalid(f"{what} needs both `min` and `max` (it has only `{present[0]}`)")
    lo, hi, integer = table["min"], table["max"], table.get("integer", False)
    for key, v in (("min", lo), ("max", hi)):
        if not _number(v):
            raise _Invalid(f"{what}'s `{key}` must be a finite number, not {v!r}")
    if not isinstance(integer, bool):
        raise _Invalid(f"{what} has a non-boolean `integer`")
    if lo > hi:
        raise _Invalid(f"{what}'s `min` ({lo}) is greater than its `max` ({hi})")
    if integer and not (float(lo).is_integer() and float(hi).is_integer()):
        raise _Invalid(f"{what} is `integer` but its `min` or `max` is not a whole number")
    return Limit(lo, hi, integer)


def _form(table: dict, what: str, interfaces: set[str]) -> Form:
    try:
        returns = parse_type(table["returns"], interfaces, allow_void=True)
    except _Invalid as exc:
        raise _Invalid(f"the return type of {what}: {exc}") from None
    return Form(_params(_list(table, "params", what), what, interfaces), returns, _doc(table, what))


def parse_api(data: dict, source: Path, symbols: set[str], limits: set[str] | None = None) -> Api:
    """Validate a loaded description; raises _Invalid with the first problem. With `limits` (the
    OptionLimit constants the runtime's headers declare), each must be a field's limits and back."""
    _keys(data, "the description", (), ("module", "error", "interface", "function"))
    module = _table(data.get("module", {}), "[module]")
    _keys(module, "[module]", (), ("doc",))

    errors = []
    for item in _list(data, "error", "the description"):
        e = _table(item, "an [[error]]")
        _keys(e, "an [[error]]", ("code",), ("doc",))
        code = e["code"]
        if not isinstance(code, str) or not ERROR_CODE.match(code):
            raise _Invalid(f"the error code {code!r} is not UPPER_SNAKE_CASE")
        errors.append(ErrorCode(code, _doc(e, f"error {code}")))
    _unique([e.code for e in errors], "the error code")

    raw_interfaces = [_table(i, "an [[interface]]") for i in _list(data, "interface", "the description")]
    names = [_ident(i.get("name"), "an [[interface]]") for i in raw_interfaces]
    _unique(names, "the interface")
    for n in names:
        if n in PRIMITIVES or n in ("Promise", *EXTENDABLE):
            raise _Invalid(f"the interface '{n}' has the name of a built-in type")
    known = set(names)
    interfaces = []
    for name, table in zip(names, raw_interfaces):
        what = f"interface {name}"
        _keys(table, what, ("name",), ("extends", "field", "doc"))
        extends = table.get("extends")
        if extends is not None and extends not in EXTENDABLE:
            raise _Invalid(f"{what} extends '{extends}'; only {', '.join(EXTENDABLE)} can be extended")
        fields = []
        for item in _list(table, "field", what):
            f = _table(item, f"a field of {what}")
            fname = _ident(f.get("name"), f"a field of {what}")
            _keys(f, f"field {name}.{fname}", ("name", "type"), ("optional", "min", "max", "integer", "doc"))
            optional = f.get("optional", False)
            if not isinstance(optional, bool):
                raise _Invalid(f"field {name}.{fname} has a non-boolean `optional`")
            try:
                ftype = parse_type(f["type"], known)
            except _Invalid as exc:
                raise _Invalid(f"field {name}.{fname}: {exc}") from None
            fields.append(Field(fname, ftype, optional, _doc(f, f"field {name}.{fname}"),
                                _limit(f, f"field {name}.{fname}", ftype)))
        _unique([f.name for f in fields], f"in {what}, the field")
        interfaces.append(Interface(name, extends, tuple(fields), _doc(table, what)))

    functions = []
    for item in _list(data, "function", "the description"):
        t = _table(item, "a [[function]]")
        name = _ident(t.get("name"), "a [[function]]")
        what = f"function {name}"
        symbol = t.get("symbol")
        if not isinstance(symbol, str) or not CPP_IDENT.match(symbol):
            raise _Invalid(f"{what} has no C++ `symbol` (the function in namespace hmllm_napi it binds to)")
        if symbol not in symbols:
            raise _Invalid(f"{what} binds to hmllm_napi::{symbol}, which no runtime NAPI header declares "
                           f"(known: {', '.join(sorted(symbols))})")
        if "form" in t:
            _keys(t, what, ("name", "symbol", "form"), ())
            raw_forms = [_table(f, f"a form of {what}") for f in _list(t, "form", what)]
            if not raw_forms:
                raise _Invalid(f"{what} has an empty `form` list")
            for i, f in enumerate(raw_forms, 1):
                _keys(f, f"form {i} of {what}", ("returns",), ("params", "doc"))
            forms = tuple(_form(f, f"form {i} of {what}", known) for i, f in enumerate(raw_forms, 1))
        else:
            _keys(t, what, ("name", "symbol", "returns"), ("params", "doc"))
            forms = (_form(t, what, known),)
        functions.append(Function(name, symbol, forms))
    _unique([f.name for f in functions], "the function")
    clash = set(known) & {f.name for f in functions}
    if clash:
        raise _Invalid(f"'{sorted(clash)[0]}' is both an interface and a function")
    if limits is not None:
        given = {limit_constant(i.name, f.name): f"{i.name}.{f.name}" for i in interfaces for f in i.fields if f.limit}
        for const in sorted(limits - set(given)):
            raise _Invalid(f"the runtime checks an option against hmllm_napi::{const}, but no field has `min` and "
                           f"`max` for it (restore them on that field)")
        for const in sorted(set(given) - limits):
            raise _Invalid(f"field {given[const]} has limits, but no runtime NAPI header declares "
                           f"hmllm_napi::{const} to check them")
    return Api(source, _doc(module, "[module]"), tuple(errors), tuple(interfaces), tuple(functions))


def load_api(path: Path, symbols: dict[str, str], limits: dict[str, str] | None = None) -> Api:
    """Read and validate a description; any problem is one HmbuildError sentence naming the file.
    `limits` (from known_limits) checks the fields' limits against what the C++ reads."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HmbuildError(f"The API description {path} does not exist; restore it (every project ships one) or "
                           "fix `api` under [project] in hmbuild.toml.") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise HmbuildError(f"The API description {path} is not valid TOML ({exc}); fix the file.") from None
    try:
        return parse_api(data, path, set(symbols), None if limits is None else set(limits))
    except _Invalid as exc:
        raise HmbuildError(f"The API description {path} is invalid: {exc}; fix it and run `hmbuild api` again.") from None


def _namespace_bodies(napi_dir: Path):
    """(header file name, its text from `namespace hmllm_napi {` on, comments removed) for each
    header of napi_dir that opens the namespace."""
    for header in sorted(napi_dir.glob("*.h")):
        text = header.read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        text = re.sub(r"//[^\n]*", "", text)
        m = re.search(r"\bnamespace\s+hmllm_napi\s*\{", text)
        if m:
            yield header.name, text[m.end():]


def known_symbols(napi_dir: Path) -> dict[str, str]:
    """Every `napi_value F(napi_env, napi_callback_info)` declared in namespace hmllm_napi by a
    header of napi_dir, mapped to that header's file name."""
    found: dict[str, str] = {}
    for name, body in _namespace_bodies(napi_dir):
        for sym in SYMBOL_DECL.findall(body):
            found.setdefault(sym, name)
    if not found:
        raise HmbuildError(f"No NAPI functions are declared in {napi_dir}/*.h; restore the runtime's napi/ folder "
                           "(it is a copy of hmbuild's native/napi).")
    return found


def known_limits(napi_dir: Path) -> dict[str, str]:
    """Every `extern const OptionLimit k...;` declared in namespace hmllm_napi by a header of
    napi_dir, mapped to that header's file name (none in a runtime older than api.toml's limits)."""
    found: dict[str, str] = {}
    for name, body in _namespace_bodies(napi_dir):
        for names in LIMIT_DECL.findall(body):
            for n in names.split(","):
                found.setdefault(n.strip(), name)
    return found


# ---- rendering

def _wrap(text: str, width: int = COMMENT_WIDTH) -> list[str]:
    return textwrap.wrap(text, width - 3, break_long_words=False, break_on_hyphens=False)


def _param_list(params: tuple[Param, ...]) -> list[str]:
    return [f"{p.name}{'?' if p.optional else ''}: {p.type}" for p in params]


def _signature(head: str, params: list[str], tail: str) -> list[str]:
    """`head(p1, p2): tail` on one line, or with the parameters wrapped under the opening parenthesis."""
    one = f"{head}({', '.join(params)}){tail}"
    if len(one) <= WIDTH or len(params) < 2:
        return [one]
    indent = " " * (len(head) + 1)
    lines, current = [], head + "("
    for i, p in enumerate(params):
        piece = p + (", " if i + 1 < len(params) else ")" + tail)
        if current.strip() not in ("", head + "(") and len(current + piece.rstrip()) > WIDTH:
            lines.append(current.rstrip())
            current = indent
        current += piece
    lines.append(current)
    return lines


def _doc_lines(doc: str, indent: str = "") -> list[str]:
    if not doc:
        return []
    one = f"{indent}/** {doc} */"
    if len(one) <= WIDTH:
        return [one]
    return [f"{indent}/**", *(f"{indent} * {line}" for line in _wrap(doc, COMMENT_WIDTH - len(indent))), f"{indent} */"]


def declarations(fn: Function) -> list[str]:
    """The Index.d.ts lines of one function: a const for one form, overloads for several."""
    lines = []
    if len(fn.forms) == 1:
        form = fn.forms[0]
        lines += _doc_lines(form.doc)
        lines += _signature(f"export const {fn.name}: ", _param_list(form.params), f" => {form.returns};")
        return lines
    for form in fn.forms:
        lines += _doc_lines(form.doc)
        lines += _signature(f"export function {fn.name}", _param_list(form.params), f": {form.returns};")
    return lines


def _field_doc(f: Field) -> str:
    return " ".join(p for p in (f.doc, f.limit.text() if f.limit else "") if p)


def render_index_dts(api: Api, name: str) -> str:
    intro = f"Declarations of lib{name}.so's NAPI exports: {api.doc}".strip()
    errors = ""
    if api.errors:
        errors = "Errors are Error objects with a `code`: " + ", ".join(
            f"{e.code} ({e.doc})" if e.doc else e.code for e in api.errors) + "."
    return code_environment().get_template("api/Index.d.ts.j2").render(
        name=name, api_file=api.source.name, intro=_wrap(intro), errors=_wrap(errors),
        interfaces=[{"name": i.name, "extends": i.extends, "doc": _doc_lines(i.doc),
                     "fields": [{"doc": _doc_lines(_field_doc(f), "  "), "decl": f"  {f.name}{'?' if f.optional else ''}: {f.type};"}
                                for f in i.fields]}
                    for i in api.interfaces],
        functions=[declarations(f) for f in api.functions],
    )


def render_napi_init(api: Api, name: str, symbols: dict[str, str]) -> str:
    limits = [{"name": limit_constant(i.name, f.name), "field": f"{i.name}.{f.name}", "value": f.limit.cpp()}
              for i in api.interfaces for f in i.fields if f.limit]
    headers = {symbols[f.symbol] for f in api.functions} | ({"hmllm_napi.h"} if limits else set())
    headers = sorted(headers, key=lambda h: (h != "hmllm_napi.h", h))
    return code_environment().get_template("api/napi_init.cpp.j2").render(
        name=name, api_file=api.source.name, headers=headers, functions=api.functions, limits=limits)


# ---- a project's generated files

@dataclass(frozen=True)
class ApiFile:
    path: str  # relative to the project root
    state: str  # "written", "unchanged", or (with check) "stale"

    def to_json(self) -> dict:
        return {"path": self.path, "state": self.state}


def render_project_api(root: Path, name: str, api_file: str = DEFAULT_API_FILE,
                       napi_dir: Path | None = None) -> dict[str, str]:
    """The generated files of a project (relative path -> text), from its description and the
    NAPI headers of its vendored runtime (or napi_dir)."""
    symbols = known_symbols(napi_dir or root / NAPI_HEADERS)
    api = load_api(root / api_file, symbols, known_limits(napi_dir or root / NAPI_HEADERS))
    return {NAPI_INIT: render_napi_init(api, name, symbols), index_dts_path(name): render_index_dts(api, name)}


def write_project_api(root: Path, name: str, api_file: str = DEFAULT_API_FILE, check: bool = False,
                      only: set[str] | None = None) -> list[ApiFile]:
    """Regenerate the two files (only those whose text changes are written; with `only`, just those
    paths). With check, nothing is written and out-of-date files are reported as "stale"."""
    outputs = render_project_api(root, name, api_file)  # everything validated before anything is written
    results = []
    for rel, text in outputs.items():
        if only is not None and rel not in only:
            continue
        dest = root / rel
        current = dest.read_text(encoding="utf-8") if dest.is_file() else None
        if current == text:
            results.append(ApiFile(rel, "unchanged"))
        elif check:
            results.append(ApiFile(rel, "stale"))
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
            results.append(ApiFile(rel, "written"))
    return results


def api_file_of(project) -> str:
    value = project.settings.get("project", {}).get("api", DEFAULT_API_FILE)
    if not isinstance(value, str) or not value:
        raise HmbuildError(f"{project.root / 'hmbuild.toml'} has a bad [project] api; set it to \"api.toml\".")
    return value


def project_api(project, check: bool = False) -> list[ApiFile]:
    """`hmbuild api [--check]` for a loaded Project; with check, stale files are one HmbuildError."""
    results = write_project_api(project.root, project.name, api_file_of(project), check=check)
    stale = [r.path for r in results if r.state == "stale"]
    if stale:
        raise HmbuildError(f"{' and '.join(stale)} {'is' if len(stale) == 1 else 'are'} out of date with "
                           f"{api_file_of(project)}; run `hmbuild api` to regenerate (hand edits belong in the description).")
    return results


def regenerate_if_stale(project) -> list[ApiFile]:
    """For builds: regenerate each generated file older than the description (a hand edit made
    after the description is left alone, for `hmbuild api --check` to report)."""
    api_path = project.root / api_file_of(project)
    if not api_path.is_file():
        return []
    mtime = api_path.stat().st_mtime
    stale = {rel for rel in (NAPI_INIT, index_dts_path(project.name))
             if not (project.root / rel).is_file() or (project.root / rel).stat().st_mtime < mtime}
    if not stale:
        return []
    return write_project_api(project.root, project.name, api_file_of(project), only=stale)


# ---- argument limits, for the CLI and hmbuild.toml's checks

_LIMITS_CACHE: dict[Path, dict[str, Limit]] = {}


def _template_limits() -> dict[str, dict[str, Limit]]:
    path = templates_dir() / "project" / DEFAULT_API_FILE
    if path not in _LIMITS_CACHE:
        napi = native_dir() / "napi"
        api = load_api(path, known_symbols(napi), known_limits(napi))
        _LIMITS_CACHE[path] = {f"{i.name}.{f.name}": f.limit for i in api.interfaces for f in i.fields if f.limit}
    by_field: dict[str, dict[str, Limit]] = {}
    for qualified, lim in _LIMITS_CACHE[path].items():
        by_field.setdefault(qualified.split(".")[1], {})[qualified] = lim
    return by_field


def limit(field: str) -> Limit:
    """The limits of one option field of the exported API (e.g. "contextSize", or
    "InferOptions.timeoutMs"), as hmbuild's own template api.toml declares them."""
    by_field = _template_limits()
    name = field.split(".")[-1]
    found = {q: lim for q, lim in by_field.get(name, {}).items() if "." not in field or q == field}
    if not found:
        raise HmbuildError(f"The exported API has no option field {field} with limits (api.toml gives min and max "
                           f"to {', '.join(sorted(by_field))}).")
    if len(set(found.values())) > 1:
        raise HmbuildError(f"The option {field} has different limits in {' and '.join(sorted(found))}; "
                           "name one of them, like InferOptions.timeoutMs.")
    return next(iter(found.values()))
