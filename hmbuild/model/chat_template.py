"""A model's chat template (Hugging Face Jinja, `tokenizer.chat_template` in the GGUF) compiled at
build time into plain data the C++ runtime applies to messages without Jinja (docs/chat.md).

The compiler renders probe conversations whose contents are unique sentinels and cuts the output
around them: the text before the first message, each role's prefix and suffix, where the system
message goes (its own turn, folded into the first turn, or nowhere), a default system message,
whether content is trimmed, the generation prompt and the stop strings. It then applies the rules
(ChatFormat.render, the algorithm the C++ side implements) to further conversations and compares
each with the template's own render; any difference refuses the template. A template is never
approximated: what the rules cannot express is a ChatTemplateError of one sentence.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.sandbox

from hmbuild.config.settings import CHAT_TEMPLATES  # noqa: F401 - re-exported for the CLI

FORMAT_VERSION = 1
ROLES = ("system", "user", "assistant")
_DATA = Path(__file__).parent / "data" / "chat_templates"

# What jinja's `trim` (Python's str.strip()) removes: the characters str.isspace() accepts. Written
# out because the C++ runtime must strip exactly these; a test checks the list against Python.
WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
              "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")


class ChatTemplateError(ValueError):
    """A template the rules cannot express, or messages a format refuses: one sentence."""


# --- the reference: transformers' apply_chat_template -----------------------------------------

class _GenerationTag(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}` (transformers' AssistantTracker) renders its body;
    the masks transformers builds from it are for training, not for prompts."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def _raise_exception(message):
    raise jinja2.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' binding: unlike jinja's own tojson, no HTML escaping and ensure_ascii off.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _environment(now: datetime.datetime | None) -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    # Not hmbuild.templating's Environment, on purpose: a chat template is untrusted input from a
    # model file, so it runs sandboxed (no attribute tricks, no mutation of the messages), with
    # the settings and globals transformers gives it, which differ from ours (lenient undefined,
    # trim_blocks, no loader: a template cannot include another file).
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: (now or datetime.datetime.now()).strftime(fmt)
    return env


class _Reference:
    """One template parsed once, rendered many times (the probes and the verification)."""

    def __init__(self, source: str, bos_token: str, eos_token: str, variables: dict | None = None,
                 now: datetime.datetime | None = None):
        try:
            self.template = _environment(now).from_string(source)
        except jinja2.TemplateSyntaxError as exc:
            raise ChatTemplateError(f"The chat template does not parse (line {exc.lineno}: {exc.message}).") from None
        except jinja2.TemplateError as exc:
            raise ChatTemplateError(f"The chat template does not parse ({exc}).") from None
        self.base = {**(variables or {}), "bos_token": bos_token, "eos_token": eos_token}

    def render(self, messages, add_generation_prompt: bool) -> str:
        # transformers passes copies of plain dicts; the sandbox stops the template mutating them.
        return self.template.render(messages=[dict(m) for m in messages],
                                    add_generation_prompt=add_generation_prompt, **self.base)


def render_reference(source: str, messages: list[dict], *, bos_token: str, eos_token: str,
                     add_generation_prompt: bool, variables: dict | None = None,
                     now: datetime.datetime | None = None) -> str:
    """The template rendered as transformers' apply_chat_template(tokenize=False) renders it.
    `variables` are extra template variables (transformers' **kwargs, e.g. date_string); `now` is
    the clock strftime_now reads (the real one when None). A refusal inside the template
    (raise_exception) or a render error is a jinja2.TemplateError, as in transformers."""
    return _Reference(source, bos_token, eos_token, variables, now).render(messages, add_generation_prompt)


# --- the data -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Turn:
    """How one role's message is written: prefix + content (stripped when trim) + suffix."""
    prefix: str = ""
    suffix: str = ""
    trim: bool = False


@dataclass(frozen=True)
class SystemRule(Turn):
    """mode "turn": the system message is its own turn before the first message; "fold": it is
    written inside the first turn, right after that turn's prefix (Gemma); "none": the template
    has no system message and one is refused. default: the system content used when the
    conversation has none (None: nothing is written)."""
    mode: str = "turn"
    default: str | None = None


@dataclass(frozen=True)
class ChatFormat:
    prefix: str
    system: SystemRule
    user: Turn
    assistant: Turn
    generation_prompt: str
    stop: tuple[str, ...]
    alternate: bool = False
    source: str = ""
    date_string: str | None = None

    # The algorithm the C++ runtime implements, on the data alone.
    def render(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        self.validate(messages)
        rest = list(messages)
        system = None
        if rest and rest[0]["role"] == "system":
            system = rest.pop(0)["content"]
        elif self.system.default is not None:
            system = self.system.default
        if system is not None:
            system = _strip(system) if self.system.trim else system
        out = [self.prefix]
        if system is not None and self.system.mode == "turn":
            out += [self.system.prefix, system, self.system.suffix]
        for i, m in enumerate(rest):
            rule = self.user if m["role"] == "user" else self.assistant
            out.append(rule.prefix)
            if i == 0 and system is not None and self.system.mode == "fold":
                out += [self.system.prefix, system, self.system.suffix]
            out += [_strip(m["content"]) if rule.trim else m["content"], rule.suffix]
        if add_generation_prompt:
            out.append(self.generation_prompt)
        return "".join(out)

    def validate(self, messages) -> None:
        """Messages this format can write, or a one-sentence ChatTemplateError."""
        if not isinstance(messages, (list, tuple)) or not messages:
            raise ChatTemplateError("A conversation must be a non-empty list of messages.")
        expected = "user"
        for n, m in enumerate(messages, 1):
            if not isinstance(m, dict) or "role" not in m or "content" not in m:
                raise ChatTemplateError(f"Message {n} must be an object with a role and a content.")
            role, content = m["role"], m["content"]
            if role not in ROLES:
                raise ChatTemplateError(f"Message {n} has the unknown role {role!r}; use system, user or assistant.")
            if not isinstance(content, str):
                raise ChatTemplateError(f"Message {n} has {type(content).__name__} content; content must be text.")
            if role == "system":
                if self.system.mode == "none":
                    raise ChatTemplateError(f"Message {n} is a system message, which this model's template does "
                                            "not support; put the instructions in the first user message.")
                if n != 1:
                    raise ChatTemplateError(f"Message {n} is a system message; a system message may only come first.")
                continue
            if self.alternate:
                if role != expected:
                    raise ChatTemplateError(f"Message {n} is {_article(role)} {role} message where this template needs "
                                            f"{_article(expected)} {expected} one; roles must alternate user/assistant "
                                            "after an optional system message.")
                expected = "assistant" if role == "user" else "user"

    def to_json(self) -> dict:
        return {"format": "hmbuild-chat", "version": FORMAT_VERSION, "source": self.source,
                "prefix": self.prefix, "system": asdict(self.system), "user": asdict(self.user),
                "assistant": asdict(self.assistant), "alternate": self.alternate,
                "generation_prompt": self.generation_prompt, "stop": list(self.stop),
                "date_string": self.date_string}

    @classmethod
    def from_json(cls, data: dict) -> ChatFormat:
        if not isinstance(data, dict) or data.get("format") != "hmbuild-chat":
            raise ChatTemplateError("This is not an hmbuild chat format (no \"format\": \"hmbuild-chat\").")
        if data.get("version") != FORMAT_VERSION:
            raise ChatTemplateError(f"Chat format version {data.get('version')!r} is not {FORMAT_VERSION}; "
                                    "recompile it with this hmbuild.")
        try:
            system = SystemRule(**data["system"])
            if system.mode not in ("turn", "fold", "none"):
                raise ValueError(f"system mode {system.mode!r}")
            fmt = cls(prefix=data["prefix"], system=system, user=Turn(**data["user"]),
                      assistant=Turn(**data["assistant"]), generation_prompt=data["generation_prompt"],
                      stop=tuple(data["stop"]), alternate=bool(data["alternate"]), source=data.get("source", ""),
                      date_string=data.get("date_string"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ChatTemplateError(f"The chat format is incomplete or malformed ({type(exc).__name__}: {exc}).") from None
        return fmt


def _article(word: str) -> str:
    return "an" if word == "assistant" else "a"  # roles only: "a user", "an assistant"


def _strip(text: str) -> str:
    return text.strip(WHITESPACE)


# --- the compiler -------------------------------------------------------------------------------

# Sentinels: letters and digits only, so no filter a template might plausibly apply (trim, escaping,
# tojson) changes them, and never a substring of real template text.
def _s(name: str) -> str:
    return f"QzX{name}XzQ"


S0, U1, A1, U2 = _s("sys0"), _s("usr1"), _s("ast1"), _s("usr2")
_PAD = " \n\t "

# The conversations every compiled format is checked on: name -> messages (None: the same without a
# system message when the template has none).
VERIFY = {
    "a user message alone": [{"role": "user", "content": "Hello"}],
    "a system and a user message": [{"role": "system", "content": "You are terse."},
                                    {"role": "user", "content": "Summarise: the cat sat."}],
    "two turns with an assistant reply": [{"role": "user", "content": "Hi"},
                                          {"role": "assistant", "content": "Hello! How can I help?"},
                                          {"role": "user", "content": "Tell me a joke."}],
    "Chinese and emoji": [{"role": "system", "content": "你是一个乐于助人的助手。"},
                          {"role": "user", "content": "总结这段文字：今天天气很好 🌞👍🏽"},
                          {"role": "assistant", "content": "天气晴朗 ☀️"},
                          {"role": "user", "content": "谢谢 🙏"}],
    "content with leading and trailing spaces": [{"role": "system", "content": "  be brief \n"},
                                                 {"role": "user", "content": "\n  padded question  \t"},
                                                 {"role": "assistant", "content": " padded answer \n\n"},
                                                 {"role": "user", "content": "  again "}],
    "three turns": [{"role": "system", "content": "S"},
                    {"role": "user", "content": "one"}, {"role": "assistant", "content": "1"},
                    {"role": "user", "content": "two"}, {"role": "assistant", "content": "2"},
                    {"role": "user", "content": "three"}],
}


def _between(text: str, start: str | None, end: str | None, what: str) -> str:
    """The text between two sentinels (start None: from the beginning; end None: to the end)."""
    i = 0
    if start is not None:
        i = text.find(start)
        if i < 0 or text.count(start) != 1:
            raise ChatTemplateError(f"The chat template does not write {what} exactly once, as the rules need.")
        i += len(start)
    j = len(text)
    if end is not None:
        j = text.find(end, i)
        if j < 0:
            raise ChatTemplateError(f"The chat template does not write {what} in order, as the rules need.")
    return text[i:j]


def _cut_suffix(text: str, suffix: str, what: str) -> str:
    if not text.endswith(suffix):
        raise ChatTemplateError(f"The chat template writes {what} differently from the rules' single prefix "
                                "per role (the first turn or a later turn differs).")
    return text[: len(text) - len(suffix)]


def _cut_prefix(text: str, prefix: str, what: str) -> str:
    if not text.startswith(prefix):
        raise ChatTemplateError(f"The chat template writes {what} differently from the rules' single suffix per "
                                "role (what follows a turn depends on the next one).")
    return text[len(prefix):]


def _marker(suffix: str, eos: str) -> str:
    """The end-of-turn marker an assistant suffix holds: the suffix without its whitespace."""
    m = suffix.strip()
    return "" if m == eos else m


def compile_template(source: str, *, bos_token: str, eos_token: str, eot_token: str | None = None,
                     date_string: str | None = None, origin: str = "") -> ChatFormat:
    """The rules of a chat template, verified on the VERIFY conversations, or a ChatTemplateError."""
    variables = {"date_string": date_string} if date_string is not None else {}
    ref = _Reference(source, bos_token, eos_token, variables, now=datetime.datetime(2024, 7, 26))

    def render(messages, gen=False, what="a probe conversation"):
        try:
            return ref.render(messages, gen)
        except jinja2.TemplateError as exc:
            raise ChatTemplateError(f"The chat template fails on {what} ({type(exc).__name__}: {exc}).") from None

    def refuses(messages) -> bool:
        try:
            ref.render(messages, False)
            return False
        except jinja2.TemplateError:
            return True

    u = lambda c: {"role": "user", "content": c}  # noqa: E731
    a = lambda c: {"role": "assistant", "content": c}  # noqa: E731
    s = lambda c: {"role": "system", "content": c}  # noqa: E731

    # A date the template writes itself (strftime_now) would be frozen into the data: refuse it.
    other_day = _Reference(source, bos_token, eos_token, variables, now=datetime.datetime(2025, 2, 10))
    try:
        dated = other_day.render([u("x")], True) != ref.render([u("x")], True)
    except jinja2.TemplateError:
        dated = False
    if dated:
        raise ChatTemplateError("The chat template writes today's date into the prompt (strftime_now), which "
                                "compiled data cannot follow; give a fixed date_string (e.g. \"26 Jul 2024\") "
                                "to compile it with that date.")

    one = render([u(U1)])                     # prefix + [default system] + user turn
    two = render([u(U1), a(A1)])
    three = render([u(U1), a(A1), u(U2)])
    user_suffix = _between(one, U1, None, "a user message")
    assistant_suffix = _between(two, A1, None, "an assistant message")
    user_prefix = _cut_prefix(_between(three, A1, U2, "the second user message"), assistant_suffix,
                              "the turn after an assistant message")
    assistant_prefix = _cut_prefix(_between(three, U1, A1, "an assistant message"), user_suffix,
                                   "the turn after a user message")
    head = _cut_suffix(_between(one, None, U1, "a user message"), user_prefix, "the first user turn")
    if _between(three, None, U1, "a user message") != _between(one, None, U1, "a user message"):
        raise ChatTemplateError("The chat template writes the start of a conversation differently depending on "
                                "the messages that follow, which the rules cannot express.")

    with_gen = render([u(U1)], True)
    if not with_gen.startswith(one):
        raise ChatTemplateError("The chat template changes the conversation itself when asked for a generation "
                                "prompt, so the generation prompt cannot be appended as text.")
    generation_prompt = with_gen[len(one):]

    # The system message: its own turn, folded into the first turn, or not supported.
    prefix, system = head, SystemRule(mode="none")
    sys_out = None if refuses([s(S0), u(U1)]) else render([s(S0), u(U1)])
    if sys_out is not None and S0 in sys_out:
        before, after = _between(sys_out, None, S0, "a system message"), _between(sys_out, S0, U1, "a system message")
        first_turn = head + user_prefix
        if first_turn and before.startswith(first_turn):      # written inside the first turn (Gemma)
            system = SystemRule(prefix=before[len(first_turn):], suffix=after, mode="fold")
        else:                                                  # its own turn before the first one
            sys_suffix = _cut_suffix(after, user_prefix, "the user turn after a system message")
            default = None
            if before.startswith(head):          # nothing is written when the conversation has no system
                sys_prefix = before[len(head):]
            else:                                 # a system turn is always written: a default message
                prefix = bos_token if _writes_bos(source, eos_token, variables) and before.startswith(bos_token) else ""
                sys_prefix = before[len(prefix):]
                if not (head.startswith(before) and head.endswith(sys_suffix)
                        and len(head) >= len(before) + len(sys_suffix)):
                    raise ChatTemplateError("The chat template writes a different system turn when the "
                                            "conversation has no system message, which the rules cannot express.")
                default = head[len(before): len(head) - len(sys_suffix)]
            system = SystemRule(prefix=sys_prefix, suffix=sys_suffix, mode="turn", default=default)

    alternate = refuses([u(U1), u(U2)])
    fmt = ChatFormat(prefix=prefix, system=system, user=Turn(user_prefix, user_suffix),
                     assistant=Turn(assistant_prefix, assistant_suffix), generation_prompt=generation_prompt,
                     stop=(), alternate=alternate, source=origin, date_string=date_string)

    # Content transformations: each role's content padded with whitespace, kept or trimmed.
    pad = lambda c: _PAD + c + _PAD  # noqa: E731
    probes = {"user": [u(pad(U1))], "assistant": [u(U1), a(pad(A1))]}
    if system.mode != "none":
        probes["system"] = [s(pad(S0)), u(U1)]
    for role, messages in probes.items():
        got = render(messages, what=f"a padded {role} message")
        for trim in (False, True):
            rule = getattr(fmt, role)
            candidate = replace(fmt, **{role: replace(rule, trim=trim)})
            if candidate.render(messages, False) == got:
                fmt = candidate
                break
        else:
            raise ChatTemplateError(f"The chat template changes {role} content in a way other than trimming "
                                    "whitespace, which the rules cannot express.")

    stop = [eos_token] if eos_token else []
    marker = eot_token or _marker(fmt.assistant.suffix, eos_token)
    if marker and marker not in stop:
        stop.append(marker)
    fmt = replace(fmt, stop=tuple(stop))

    for name, messages in VERIFY.items():
        if fmt.system.mode == "none":
            messages = [m for m in messages if m["role"] != "system"]
        for gen in (True, False):
            want = render(messages, gen, what=f"the conversation '{name}'")
            got = fmt.render(messages, gen)
            if got != want:
                i = next((k for k, (x, y) in enumerate(zip(want, got)) if x != y), min(len(want), len(got)))
                raise ChatTemplateError(
                    f"The chat template's output on the conversation '{name}' cannot be reproduced by the rules "
                    f"(it writes {want[i:i + 40]!r} where the rules write {got[i:i + 40]!r}), so it is refused.")
    return fmt


def _writes_bos(source: str, eos_token: str, variables: dict) -> bool:
    """Whether the template opens with bos_token (so that text is the format's prefix rather than
    the start of a system turn that happens to begin with the same text, as SmolLM2's does)."""
    mark = _s("bos")
    try:
        out = _Reference(source, mark, eos_token, variables, datetime.datetime(2024, 7, 26)).render(
            [{"role": "user", "content": U1}], False)
    except jinja2.TemplateError:
        return False
    return out.startswith(mark)


# --- where a format comes from -------------------------------------------------------------------

# Tokens for the built-in formats when no GGUF says what its vocabulary holds.
_BUILTIN_TOKENS = {"gemma": ("<bos>", "<eos>"), "chatml": ("", "<|im_end|>"),
                   "llama3": ("<|begin_of_text|>", "<|eot_id|>"), "none": ("", "")}
assert set(_BUILTIN_TOKENS) == set(CHAT_TEMPLATES), "config's [chat] template names and the built-ins differ"


def builtin_source(name: str) -> str:
    if name not in CHAT_TEMPLATES:
        raise ChatTemplateError(f"Unknown chat template {name!r}; use one of: {', '.join(CHAT_TEMPLATES)}.")
    return (_DATA / f"{name}.jinja").read_text(encoding="utf-8")


@dataclass
class GgufChat:
    """What a GGUF says about chatting: its template and the text of its special tokens."""
    chat_template: str | None = None
    bos: str = ""
    eos: str = ""
    eot: str | None = None


def read_gguf_chat(path: str | Path) -> GgufChat:
    """tokenizer.chat_template and the bos/eos/eot token texts of a GGUF, read through plan's header
    reader (which steps over the vocabulary); only the few token strings needed are decoded."""
    from hmbuild.model.ggml_types import check_runnable
    from hmbuild.model.plan import field_value, open_gguf_header, string_array_items

    reader = open_gguf_header(Path(path))
    check_runnable(path, ((t.name, t.tensor_type) for t in reader.tensors))  # a file that cannot run gets no format
    ids = {k: field_value(reader, f"tokenizer.ggml.{k}_token_id") for k in ("bos", "eos", "eot")}
    texts = string_array_items(reader, "tokenizer.ggml.tokens", {v for v in ids.values() if isinstance(v, int)})
    template = field_value(reader, "tokenizer.chat_template")
    return GgufChat(chat_template=template if isinstance(template, str) and template else None,
                    bos=texts.get(ids["bos"], ""), eos=texts.get(ids["eos"], ""),
                    eot=texts.get(ids["eot"]) if ids["eot"] is not None else None)


def load_format(gguf_path: str | Path | None = None, name: str | None = None, jinja_file: str | Path | None = None,
                *, date_string: str | None = None) -> ChatFormat | None:
    """The compiled format: an explicit built-in name or Jinja file first, else the GGUF's own
    tokenizer.chat_template, else None (the model has none: the caller asks for a name). Token
    texts come from the GGUF's vocabulary when one is given."""
    if name is not None and jinja_file is not None:
        raise ChatTemplateError("Give a built-in chat template name or a template file, not both.")
    info = read_gguf_chat(gguf_path) if gguf_path is not None else None
    if name is not None:
        source, origin = builtin_source(name), f"builtin:{name}"
    elif jinja_file is not None:
        try:
            source = Path(jinja_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ChatTemplateError(f"Could not read the chat template file {jinja_file} ({exc}).") from None
        origin = f"file:{Path(jinja_file).name}"
    elif info is not None and info.chat_template:
        source, origin = info.chat_template, "gguf"
    else:
        return None
    if info is not None:
        bos, eos, eot = info.bos, info.eos, info.eot
    else:
        bos, eos = _BUILTIN_TOKENS.get(name, ("", ""))
        eot = None
    return compile_template(source, bos_token=bos, eos_token=eos, eot_token=eot, date_string=date_string,
                            origin=origin)


# The GGUF metadata key that carries a compiled format inside the model file, so the format travels
# (and is verified by SHA-256) with the model through ModelManager updates; the runtime reads it
# when init() is given no chatFormat.
EMBED_KEY = "hmbuild.chat_format"


def embed_format(src: str | Path, dst: str | Path, fmt: ChatFormat) -> Path:
    """Write a copy of the GGUF `src` to `dst` with the compiled format under EMBED_KEY (replacing
    one already there), through the gguf package's own gguf-new-metadata copier. The copy is
    written next to `dst` and renamed, so `dst` is never half-written."""
    import os
    import tempfile

    import gguf
    from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

    from hmbuild.model.plan import open_gguf_header

    src, dst = Path(src), Path(dst)
    open_gguf_header(src)  # one sentence for a missing or unreadable file; registers hmbuild's types
    if dst.exists() and dst.resolve() == src.resolve():
        raise ChatTemplateError(f"--embed {dst} is the model file itself; write the copy to a new file.")
    if not dst.parent.is_dir():
        raise ChatTemplateError(f"--embed {dst}: the folder {dst.parent} does not exist.")
    reader = gguf.GGUFReader(src)
    arch = field_text(reader, "general.architecture")
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".part", dir=dst.parent)
    os.close(fd)
    try:
        writer = gguf.GGUFWriter(tmp, arch=arch or "llama", endianess=reader.endianess)
        text = json.dumps(fmt.to_json(), ensure_ascii=False, separators=(",", ":"))
        copy_with_new_metadata(reader, writer, {EMBED_KEY: MetadataDetails(gguf.GGUFValueType.STRING, text)}, [])
        os.replace(tmp, dst)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return dst


def field_text(reader, key: str) -> str | None:
    from hmbuild.model.plan import field_value

    v = field_value(reader, key)
    return v if isinstance(v, str) else None


def embedded_format(path: str | Path) -> ChatFormat | None:
    """The format a GGUF carries under EMBED_KEY (hmbuild chat-template --embed), or None."""
    from hmbuild.model.plan import open_gguf_header

    text = field_text(open_gguf_header(Path(path)), EMBED_KEY)
    if text is None:
        return None
    try:
        return ChatFormat.from_json(json.loads(text))
    except (ValueError, TypeError, KeyError) as exc:
        raise ChatTemplateError(f"{path} carries an unreadable {EMBED_KEY} ({exc}); embed it again with "
                                "hmbuild chat-template --embed.") from None


def project_format(gguf_path: str | Path, chat: dict, root: Path, *, name: str | None = None,
                   jinja_file: str | Path | None = None, date_string: str | None = None) -> tuple[ChatFormat, bool]:
    """The format a project chats with: a name or Jinja file given here (a command-line override),
    else hmbuild.toml's [chat] (`chat`, already validated; template_file relative to `root`), else
    the GGUF's own template, else the format embedded in it (chat-template --embed); a model with none is
    refused naming both ways to give one. Returns (the format, whether it is the embedded one)."""
    if name is None and jinja_file is None:
        name = chat.get("template")
        jinja_file = root / chat["template_file"] if chat.get("template_file") else None
    date_string = date_string if date_string is not None else chat.get("date_string")
    fmt = load_format(gguf_path, name=name, jinja_file=jinja_file, date_string=date_string)
    if fmt is not None:
        return fmt, False
    fmt = embedded_format(gguf_path)  # a base model given its format by `hmbuild chat-template --embed`
    if fmt is None:
        raise ChatTemplateError(f"{Path(gguf_path).name} has no tokenizer.chat_template (a base model); pass "
                                f"--template {'|'.join(CHAT_TEMPLATES)} or --template-file FILE, or set [chat] "
                                "template in hmbuild.toml.")
    return fmt, True


def read_conversation(path: str | Path) -> list:
    """The messages of a conversation file ({"messages": [...]}), or a one-sentence ChatTemplateError
    (unreadable, not JSON, no messages list). The messages themselves are checked by validate()."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise ChatTemplateError(f"Could not read the conversation {path} ({reason}).") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ChatTemplateError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).") from None
    if not isinstance(data, dict) or "messages" not in data:
        raise ChatTemplateError(f'{path} must be a JSON object with a "messages" list, like '
                                '{"messages": [{"role": "user", "content": "Hello"}]}.')
    return data["messages"]


def describe(fmt: ChatFormat) -> list[str]:
    """The format as lines of text for the CLI."""
    sysline = {"turn": "its own turn", "fold": "folded into the first turn", "none": "not supported"}[fmt.system.mode]
    lines = [f"source            {fmt.source or '-'}",
             f"prefix            {fmt.prefix!r}",
             f"system            {sysline}" + (f": {fmt.system.prefix!r} + content + {fmt.system.suffix!r}"
                                               if fmt.system.mode != "none" else "")]
    if fmt.system.default is not None:
        lines.append(f"default system    {fmt.system.default!r}")
    for role in ("user", "assistant"):
        t = getattr(fmt, role)
        lines.append(f"{role:<18}{t.prefix!r} + content{' (trimmed)' if t.trim else ''} + {t.suffix!r}")
    lines += [f"roles             {'alternate user/assistant' if fmt.alternate else 'any order'}",
              f"generation prompt {fmt.generation_prompt!r}",
              f"stop              {', '.join(repr(s) for s in fmt.stop) or '-'}"]
    return lines
