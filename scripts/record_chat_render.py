"""Record what hmbuild's reference ChatFormat.render writes for the built-in chat formats, as the
fixture the native chat-format test compares the C++ renderer to (native/tests/data/chat_render.json).

    python scripts/record_chat_render.py          # rewrite the fixture
    python scripts/record_chat_render.py --check  # exit 1 when the committed one is out of date

tests/test_chat_runtime.py runs the --check form, so a change to the Python algorithm or to a
built-in template that is not recorded here fails there, not silently on the C++ side.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import dataclasses  # noqa: E402

from hmbuild.model.chat_template import VERIFY, ChatTemplateError, compile_template, load_format  # noqa: E402

OUT = REPO / "native" / "tests" / "data" / "chat_render.json"
PUBLISHED = REPO / "tests" / "fixtures" / "chat_templates"


def formats():
    """The built-ins, two published templates with a default system message (Qwen2.5's, and Llama
    3.2's empty one with its date), and Gemma's rules with system messages refused (mode none)."""
    out = {name: load_format(None, name) for name in ("gemma", "chatml", "llama3", "none")}
    out["qwen2.5-instruct"] = compile_template((PUBLISHED / "qwen2.5-instruct.jinja").read_text(encoding="utf-8"),
                                               bos_token="<|endoftext|>", eos_token="<|im_end|>",
                                               origin="file:qwen2.5-instruct.jinja")
    out["llama-3.2-instruct"] = compile_template((PUBLISHED / "llama-3.2-instruct.jinja").read_text(encoding="utf-8"),
                                                 bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                                                 date_string="26 Jul 2024", origin="file:llama-3.2-instruct.jinja")
    gemma = out["gemma"]
    out["gemma-no-system"] = dataclasses.replace(gemma, system=dataclasses.replace(gemma.system, mode="none"))
    return out

# More than the compiler's own verification set: every whitespace character Python's str.strip()
# removes, at both ends, around text that keeps its inner whitespace; invalid-looking but valid
# UTF-8; an empty content.
EXTRA = {
    "Python whitespace trimmed at both ends": [
        {"role": "system", "content": "\u3000\u00a0\u2028 sys \u205f\u0085"},
        {"role": "user", "content": "\x1c\x1d\x1e\x1f\x0b\x0c\r inner  \u2002 space \u2009\u202f\u1680"},
    ],
    "characters that are not whitespace stay": [
        {"role": "user", "content": "\u200b zero width \u200b"},
        {"role": "assistant", "content": "\ufeffbom"},
        {"role": "user", "content": ""},
    ],
    "an assistant turn last (no generation prompt needed by the data)": [
        {"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"},
    ],
}

# Conversations every format refuses, or some formats refuse: the Python sentence is recorded.
REFUSED = {
    "empty": [],
    "unknown role": [{"role": "robot", "content": "beep"}],
    "system not first": [{"role": "user", "content": "a"}, {"role": "system", "content": "b"}],
    "two users in a row": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
    "assistant first": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}],
    "system then assistant": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}],
}


def record() -> dict:
    result = {}
    for name, fmt in formats().items():
        cases = []
        for title, messages in {**VERIFY, **EXTRA, **REFUSED}.items():
            for gen in (True, False):
                # The JSON texts the C++ side parses, beside the expected result.
                case = {"name": title, "add_generation_prompt": gen,
                        "messages_json": json.dumps({"messages": messages}, ensure_ascii=False)}
                try:
                    case["text"] = fmt.render(messages, add_generation_prompt=gen)
                except ChatTemplateError as exc:
                    case["error"] = str(exc)
                cases.append(case)
        result[name] = {"format_json": json.dumps(fmt.to_json(), ensure_ascii=False), "cases": cases}
    return {"made_by": "scripts/record_chat_render.py (hmbuild's ChatFormat.render)", "formats": result}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed fixture, write nothing")
    args = ap.parse_args()
    text = json.dumps(record(), ensure_ascii=False, indent=1) + "\n"
    if args.check:
        if not OUT.is_file() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT.relative_to(REPO)} is out of date; run python scripts/record_chat_render.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
