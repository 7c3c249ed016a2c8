"""The chat-template compiler on real published templates: the compiled rules (the algorithm the
C++ runtime applies) give exactly what transformers' apply_chat_template gives, and what the rules
cannot express is refused in one sentence."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import gguf
import jinja2
import pytest
from click.testing import CliRunner

from hmbuild.cli import cli
from hmbuild.config.settings import CHAT_TEMPLATES, validate_chat
from hmbuild.errors import HmbuildError
from hmbuild.model.chat_template import (WHITESPACE, ChatFormat, ChatTemplateError, compile_template, load_format,
                                         read_gguf_chat, render_reference)

FIXTURES = Path(__file__).parent / "fixtures" / "chat_templates"

# name -> (bos, eos, eot from the GGUF, date_string, the end-of-turn marker the stops must hold)
REAL = {
    "gemma-3-it": ("<bos>", "<eos>", "<end_of_turn>", None, "<end_of_turn>"),
    "qwen2.5-instruct": ("<|endoftext|>", "<|im_end|>", None, None, "<|im_end|>"),
    "llama-3.2-instruct": ("<|begin_of_text|>", "<|eot_id|>", "<|eot_id|>", "26 Jul 2024", "<|eot_id|>"),
    "smollm2-instruct": ("<|im_start|>", "<|im_end|>", None, None, "<|im_end|>"),
}

U = lambda c: {"role": "user", "content": c}  # noqa: E731
A = lambda c: {"role": "assistant", "content": c}  # noqa: E731
S = lambda c: {"role": "system", "content": c}  # noqa: E731

# The five kinds of conversation, none of them the compiler's own probes: the ones
# scripts/record_chat_reference.py defines and recorded llama.cpp's tokens for (one list for both).
CONVERSATIONS = {c["kind"]: c["messages"] for c in json.loads(
    (Path(__file__).parent / "fixtures" / "llama_cpp" / "chat_tokenize.json").read_text(encoding="utf-8"))["cases"]}


def source(name: str) -> str:
    return (FIXTURES / f"{name}.jinja").read_text(encoding="utf-8")


@pytest.fixture(scope="module", params=sorted(REAL))
def compiled(request):
    name = request.param
    bos, eos, eot, date, _ = REAL[name]
    fmt = compile_template(source(name), bos_token=bos, eos_token=eos, eot_token=eot, date_string=date)
    return name, fmt


@pytest.mark.parametrize("kind", sorted(CONVERSATIONS))
def test_compiled_rules_render_as_transformers_does(compiled, kind):
    name, fmt = compiled
    bos, eos, _, date, _ = REAL[name]
    messages = CONVERSATIONS[kind]
    if fmt.system.mode == "none":
        messages = [m for m in messages if m["role"] != "system"]
    for gen in (True, False):
        want = render_reference(source(name), messages, bos_token=bos, eos_token=eos, add_generation_prompt=gen,
                                variables={"date_string": date} if date else None)
        assert fmt.render(messages, add_generation_prompt=gen) == want


def test_stop_strings_hold_the_end_of_turn_marker_and_json_round_trips(compiled):
    name, fmt = compiled
    assert REAL[name][4] in fmt.stop
    assert REAL[name][1] in fmt.stop
    data = json.loads(json.dumps(fmt.to_json()))
    assert data["format"] == "hmbuild-chat" and data["version"] == 1
    assert ChatFormat.from_json(data) == fmt


def test_what_each_real_template_compiles_to():
    gemma = compile_template(source("gemma-3-it"), bos_token="<bos>", eos_token="<eos>")
    assert (gemma.prefix, gemma.system.mode, gemma.system.suffix) == ("<bos>", "fold", "\n\n")
    assert gemma.user.trim and gemma.assistant.trim and not gemma.system.trim and gemma.alternate
    assert gemma.generation_prompt == "<start_of_turn>model\n"
    assert gemma.stop == ("<eos>", "<end_of_turn>")  # no eot id given: the assistant suffix's marker
    assert gemma.render([S("Be brief."), U(" Hi ")]) == (
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\n")

    qwen = compile_template(source("qwen2.5-instruct"), bos_token="<|endoftext|>", eos_token="<|im_end|>")
    assert qwen.system.default == "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
    assert qwen.prefix == "" and not qwen.user.trim and not qwen.alternate

    smol = compile_template(source("smollm2-instruct"), bos_token="<|im_start|>", eos_token="<|im_end|>")
    assert smol.prefix == "" and smol.system.prefix == "<|im_start|>system\n"  # its bos is not written first
    assert smol.system.default == "You are a helpful AI assistant named SmolLM, trained by Hugging Face"

    llama = compile_template(source("llama-3.2-instruct"), bos_token="<|begin_of_text|>", eos_token="<|eot_id|>",
                             date_string="26 Jul 2024")
    assert llama.prefix == "<|begin_of_text|>" and llama.system.default == "" and llama.system.trim
    assert "Today Date: 26 Jul 2024" in llama.system.prefix


def test_llama_32_without_a_date_is_refused_in_one_sentence():
    with pytest.raises(ChatTemplateError) as e:
        compile_template(source("llama-3.2-instruct"), bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
    assert "strftime_now" in str(e.value) and "date_string" in str(e.value)
    assert str(e.value).endswith(".") and "\n" not in str(e.value)


def test_reference_matches_transformers_environment():
    # tojson without HTML escaping or ASCII escapes; raise_exception is a TemplateError; loop controls.
    out = render_reference("{{ messages[0] | tojson }}{% for m in messages %}{% break %}{% endfor %}",
                           [U("<a> 中")], bos_token="", eos_token="", add_generation_prompt=False)
    assert out == '{"role": "user", "content": "<a> 中"}'
    with pytest.raises(jinja2.TemplateError, match="nope"):
        render_reference("{{ raise_exception('nope') }}", [U("x")], bos_token="", eos_token="",
                         add_generation_prompt=False)
    assert render_reference("{% generation %}{{ bos_token }}{% endgeneration %}", [], bos_token="B", eos_token="",
                            add_generation_prompt=False) == "B"


def test_trim_characters_are_pythons_whitespace():
    assert set(WHITESPACE) == {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}


def test_a_template_that_does_not_parse_is_one_sentence():
    with pytest.raises(ChatTemplateError, match=r"^The chat template does not parse \(line 1: .*\)\.$"):
        compile_template("{% for m in messages %}{{ m.content }", bos_token="", eos_token="")


def test_per_turn_behaviour_is_refused_naming_it():
    # Caught by the probes: every turn is numbered.
    numbered = "{% for m in messages %}[{{ loop.index }}] {{ m.role }}: {{ m.content }}\n{% endfor %}"
    with pytest.raises(ChatTemplateError, match="first user turn differently"):
        compile_template(numbered, bos_token="", eos_token="")
    # Caught by the verification: only turns after the fourth change, which no probe reaches.
    late = ("{% for m in messages %}{% if loop.index0 > 3 %}(late) {% endif %}"
            "<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}")
    with pytest.raises(ChatTemplateError, match=r"on the conversation 'three turns' cannot be reproduced") as e:
        compile_template(late, bos_token="", eos_token="")
    assert "(late)" in str(e.value) and "\n" not in str(e.value)


def test_a_content_change_other_than_trim_is_refused():
    upper = "{% for m in messages %}<{{ m.role }}>{{ m.content | upper }}</{{ m.role }}>{% endfor %}"
    with pytest.raises(ChatTemplateError):
        compile_template(upper, bos_token="", eos_token="")


@pytest.fixture(scope="module")
def gemma():
    return compile_template(source("gemma-3-it"), bos_token="<bos>", eos_token="<eos>", eot_token="<end_of_turn>")


@pytest.mark.parametrize("messages, words", [
    ([U("a"), U("b")], "roles must alternate"),
    ([A("a")], "needs a user"),
    ([U("a"), {"role": "tool", "content": "x"}], "unknown role 'tool'"),
    ([U(["a", "b"])], "list content"),
    ([U("a"), S("late")], "may only come first"),
    ([], "non-empty"),
    ([{"role": "user"}], "role and a content"),
])
def test_bad_messages_are_refused_in_one_sentence(gemma, messages, words):
    with pytest.raises(ChatTemplateError, match=words) as e:
        gemma.render(messages)
    assert str(e.value).endswith(".") and "\n" not in str(e.value)


def test_gemma_reference_refuses_user_user_too(gemma):
    with pytest.raises(jinja2.TemplateError, match="alternate"):
        render_reference(source("gemma-3-it"), [U("a"), U("b")], bos_token="<bos>", eos_token="<eos>",
                         add_generation_prompt=True)


def test_a_template_without_system_support_refuses_system_messages():
    gemma2 = ("{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
              "{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
              "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
              "{% if (message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}"
              "{% endif %}{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}"
              "{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n'}}{% endif %}")
    fmt = compile_template(gemma2, bos_token="<bos>", eos_token="<eos>")
    assert fmt.system.mode == "none"
    with pytest.raises(ChatTemplateError, match="does not support"):
        fmt.render([S("x"), U("y")])


def test_from_json_refuses_other_versions(gemma):
    data = gemma.to_json()
    with pytest.raises(ChatTemplateError, match="version"):
        ChatFormat.from_json({**data, "version": 99})
    with pytest.raises(ChatTemplateError, match="malformed"):
        ChatFormat.from_json({**data, "system": {"mode": "sideways"}})


@pytest.mark.parametrize("name", CHAT_TEMPLATES)
def test_builtin_formats_compile_through_the_same_path(name):
    fmt = load_format(name=name)
    assert fmt.source == f"builtin:{name}"
    msgs = [S("sys"), U("hello"), A("hi"), U("bye")]
    if name == "none":
        assert fmt.render(msgs) == "syshellohibye"  # today's raw prompt: the contents, concatenated
    else:
        assert "hello" in fmt.render(msgs) and fmt.generation_prompt


def _write_gguf(path: Path, template: str | None, eot: bool = True):
    w = gguf.GGUFWriter(str(path), "gemma3")
    w.add_tokenizer_model("llama")
    w.add_token_list(["<pad>", "<eos>", "<bos>", "<unk>", "▁hi", "<start_of_turn>", "<end_of_turn>"])
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    if eot:
        w.add_eot_token_id(6)
    if template is not None:
        w.add_chat_template(template)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_load_format_reads_the_gguf_template_and_token_texts(tmp_path):
    model = _write_gguf(tmp_path / "it.gguf", source("gemma-3-it"))
    info = read_gguf_chat(model)
    assert (info.bos, info.eos, info.eot) == ("<bos>", "<eos>", "<end_of_turn>")
    fmt = load_format(model)
    assert fmt.source == "gguf" and fmt.prefix == "<bos>" and fmt.stop == ("<eos>", "<end_of_turn>")
    # An explicit name wins over the file's own template; a base model without one gives None.
    assert load_format(model, name="chatml").source == "builtin:chatml"
    base = _write_gguf(tmp_path / "base.gguf", None, eot=False)
    assert load_format(base) is None
    assert load_format(base, name="gemma").stop == ("<eos>", "<end_of_turn>")
    jinja = tmp_path / "t.jinja"
    jinja.write_text(source("smollm2-instruct"), encoding="utf-8")
    assert load_format(base, jinja_file=jinja).source == "file:t.jinja"


def test_chat_config_is_validated():
    assert validate_chat(None, "hmbuild.toml") == {}
    assert validate_chat({"template": "gemma"}, "hmbuild.toml") == {"template": "gemma"}
    with pytest.raises(HmbuildError, match="gemma, chatml, llama3, none"):
        validate_chat({"template": "vicuna"}, "hmbuild.toml")
    with pytest.raises(HmbuildError, match="both"):
        validate_chat({"template": "gemma", "template_file": "x.jinja"}, "hmbuild.toml")
    with pytest.raises(HmbuildError, match="unknown key"):
        validate_chat({"templat": "gemma"}, "hmbuild.toml")


def test_cli_prints_the_format_or_one_line_refusal(tmp_path):
    model = _write_gguf(tmp_path / "it.gguf", source("gemma-3-it"))
    r = CliRunner().invoke(cli, ["chat-template", str(model), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["system"]["mode"] == "fold"
    r = CliRunner().invoke(cli, ["chat-template", str(model)])
    assert r.exit_code == 0 and "folded into the first turn" in r.stdout
    base = _write_gguf(tmp_path / "base.gguf", None, eot=False)
    r = CliRunner().invoke(cli, ["chat-template", str(base)])
    assert r.exit_code == 1 and r.stderr.startswith("hmbuild: error: ") and r.stderr.count("\n") == 1
    assert "--template" in r.stderr
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% if %}", encoding="utf-8")
    r = CliRunner().invoke(cli, ["chat-template", str(base), "--template-file", str(bad)])
    assert r.exit_code == 1 and "does not parse" in r.stderr and "Traceback" not in r.stderr


def test_embed_writes_a_copy_carrying_the_format_and_the_same_tensors(tmp_path):
    """`chat-template --embed`: the runtime's source of the format when init() gets no chatFormat."""
    from tiny_models import TinyConfig, write_tiny_model

    from hmbuild.model.chat_template import EMBED_KEY, embedded_format

    src = tmp_path / "tiny.gguf"
    write_tiny_model(src, TinyConfig(arch="gemma3"))
    out = tmp_path / "tiny-chat.gguf"
    r = CliRunner().invoke(cli, ["chat-template", str(src), "--template", "gemma", "--embed", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["embedded_in"] == str(out)
    fmt = embedded_format(out)
    assert fmt is not None and fmt.generation_prompt == "<start_of_turn>model\n" and embedded_format(src) is None
    a, b = gguf.GGUFReader(src), gguf.GGUFReader(out)
    assert [(t.name, t.tensor_type, bytes(t.data)) for t in a.tensors] == [(t.name, t.tensor_type, bytes(t.data))
                                                                           for t in b.tensors]
    assert EMBED_KEY in b.fields and EMBED_KEY not in a.fields
    # Embedding again replaces the format; the model file itself is never the target.
    r = CliRunner().invoke(cli, ["chat-template", str(out), "--template", "chatml", "--embed", str(out)])
    assert r.exit_code == 1 and "is the model file itself" in r.output
    again = tmp_path / "again.gguf"
    assert CliRunner().invoke(cli, ["chat-template", str(out), "--template", "chatml", "--embed", str(again)]).exit_code == 0
    assert embedded_format(again).source == "builtin:chatml"
    assert list(gguf.GGUFReader(again).fields).count(EMBED_KEY) == 1
    assert not list(tmp_path.glob("*.part"))
