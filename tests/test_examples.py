"""examples/notes-assistant: `hmbuild new --config` takes its settings; the generated project builds
for host and linux-arm64, passes its tests, summarises with the real model and routes an intent."""
import json
import re
import tomllib

import pytest

from conftest import REPO, elf_machine, have_arm64_tools, run_hmbuild

EXAMPLE = REPO / "examples" / "notes-assistant"
CONFIG = EXAMPLE / "hmbuild.toml"
ENV = {"CMAKE_BUILD_PARALLEL_LEVEL": "2"}
arm64 = pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user (see README)")
LABELS = "alarm,weather,music,note"


def example_settings() -> dict:
    return tomllib.loads(CONFIG.read_text())


def test_the_example_describes_the_notes_assistant():
    s = example_settings()
    assert s["project"]["name"] == "notes_assistant"
    assert s["intent"]["labels"] == ["alarm", "weather", "music", "note"]
    assert {e["label"] for e in s["intent"]["example"]} == set(s["intent"]["labels"])  # one example or more per label
    assert "{note}" in s["summarize"]["template"]
    rows = s["device_class"]
    assert [r["name"] for r in rows] == ["large", "medium", "small"]
    assert [r["min_total_ram_gb"] for r in rows] == sorted((r["min_total_ram_gb"] for r in rows), reverse=True)
    for r in rows:
        assert set(r) == {"name", "min_total_ram_gb", "model_file", "context_size", "kv_cache_type", "min_available_mb"}
        assert r["kv_cache_type"] in ("f16", "q8_0") and r["model_file"] == s["model"]["file"]
    assert re.fullmatch(r"[0-9a-f]{64}", s["model"]["sha256"])
    assert (EXAMPLE / "README.md").is_file()
    from hmbuild.model.catalog import KNOWN_MODELS
    chat = KNOWN_MODELS[s["chat_model"]["id"]]  # the chat's model is one hmbuild can fetch
    assert (s["chat_model"]["file"], s["chat_model"]["sha256"]) == (chat.file_name, chat.sha256)
    assert "chat" not in s  # its own template


def test_new_with_config_copies_the_settings_and_keeps_the_comments(tmp_path):
    root = tmp_path / "notes"
    proc = run_hmbuild("new", str(root), "--config", str(CONFIG))
    assert proc.returncode == 0, proc.stderr
    text = (root / "hmbuild.toml").read_text()
    got = tomllib.loads(text)
    want = example_settings()
    assert got["project"]["name"] == "notes_assistant"
    got["project"].pop("hmbuild_version"), want["project"].pop("hmbuild_version")
    assert got["project"].pop("ci") == "github"  # the answer `new` records (no --ci: GitHub Actions)
    want["project"].pop("ci", None)
    assert got == want
    assert "# examples/notes-assistant" in text
    assert (root / "src/main/cpp/types/libnotes_assistant/Index.d.ts").is_file()


def test_new_with_config_and_name_renames_the_module(tmp_path):
    root = tmp_path / "x"
    proc = run_hmbuild("new", str(root), "--config", str(CONFIG), "--name", "memo")
    assert proc.returncode == 0, proc.stderr
    got = tomllib.loads((root / "hmbuild.toml").read_text())
    assert got["project"]["name"] == "memo" and got["intent"] == example_settings()["intent"]
    assert (root / "src/main/cpp/types/libmemo/Index.d.ts").is_file()


@pytest.mark.parametrize("content, needle", [(None, "does not exist"), ("[project\nname=", "not valid TOML")])
def test_a_bad_config_is_one_sentence_and_creates_nothing(tmp_path, content, needle):
    config = tmp_path / "cfg.toml"
    if content is not None:
        config.write_text(content)
    root = tmp_path / "p"
    proc = run_hmbuild("new", str(root), "--config", str(config))
    assert proc.returncode != 0 and needle in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not root.exists()
    assert [p.name for p in tmp_path.iterdir()] == (["cfg.toml"] if content is not None else [])


# --- end to end: generate, build, test, run ------------------------------------------------------

@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("example") / "notes"
    run_hmbuild("new", str(root), "--config", str(CONFIG), check=True)
    return root


def hm(project, *args):
    return run_hmbuild("-C", str(project), *args, env=ENV)


def json_of(proc):
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def counts(proc):
    m = re.search(r"^(\d+) passed, (\d+) failed$", proc.stdout, re.M)
    assert m, f"no summary line in:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return int(m.group(1)), int(m.group(2))


def test_host_build_and_tests(project):
    data = json_of(hm(project, "build", "--target", "host", "--json"))
    assert data["library"].endswith("/libnotes_assistant.so") and elf_machine(data["library"]) == 62
    proc = hm(project, "test", "--target", "host")
    passed, failed = counts(proc)
    assert proc.returncode == 0 and failed == 0 and passed > 0, proc.stderr[-3000:]


# The example's library under qemu: built for aarch64 here, run by test_intent_routing_under_qemu.
# Its test suites are the generated project's, which test_e2e runs whole under qemu.
@pytest.mark.qemu
@arm64
def test_linux_arm64_build_is_aarch64(project):
    data = json_of(hm(project, "build", "--target", "linux-arm64", "--json"))
    assert elf_machine(data["library"]) == 183


def test_summarising_a_note_with_the_real_model(project):
    template = example_settings()["summarize"]["template"]
    note = "Team sync moved to Friday 10:00. Bring the Q3 numbers; Li will present the new design."
    data = json_of(hm(project, "run", "--prompt", template.format(note=note), "--max-tokens", "8", "--json"))
    assert data["ok"] is True and data["target"] == "host"
    assert 1 <= len(data["tokens"]) <= 8 and data["text"].strip()
    assert data["n_prompt_tokens"] > 20 and data["ttft_ms"] > 0


def test_the_chat_model_ends_its_answer_by_itself(project, tmp_path):
    from hmbuild.model.catalog import fetch_model

    model = fetch_model(example_settings()["chat_model"]["id"])
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "Hi!"}]}))
    data = json_of(hm(project, "run", "--model", str(model), "--chat", str(chat), "--max-tokens",
                      str(example_settings()["chat_model"]["max_tokens"]), "--json"))
    assert data["stop"] == "<|im_end|>" and data["chat_format"] == "gguf"
    assert 0 < len(data["tokens"]) < 32 and data["text"].strip() and "<|im_" not in data["text"]


@pytest.mark.parametrize("text, label", [
    ("Set an alarm for 7 am tomorrow", "alarm"),
    ("Is it going to snow tomorrow?", "weather"),
    ("Play the new Taylor Swift album", "music"),
    ("Note that the dentist is on Tuesday", "note"),
])
def test_intent_routing_on_host(project, text, label):
    data = json_of(hm(project, "run", "--classify", LABELS, "--prompt", text, "--json"))
    assert data["labels"] == LABELS.split(",") and data["examples"] == 4 and data["calibrated"] is True
    assert data["label"] == label, data["scores"]
    assert len(data["scores"]) == len(data["raw_scores"]) == 4


@pytest.mark.qemu
@arm64
def test_intent_routing_under_qemu(project):
    data = json_of(hm(project, "run", "--target", "linux-arm64", "--cpu", "cortex-a76", "--classify", LABELS,
                      "--prompt", "Set an alarm for 7 am tomorrow", "--json"))
    assert data["label"] == "alarm", data["scores"]
    assert data["target"] == "linux-arm64" and data["cpu"] == "cortex-a76"


def test_classify_refusals(project):
    proc = hm(project, "run", "--classify", LABELS, "--tokens", "2,3", "--json")
    assert proc.returncode != 0 and "--classify needs the text" in proc.stderr
    proc = hm(project, "run", "--classify", "alarm,,note", "--prompt", "x")
    assert proc.returncode != 0 and "non-empty labels" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.qemu
@arm64
def test_the_example_packs_into_a_har_for_a_layout_check(project):
    hm(project, "build", "--target", "linux-arm64")
    data = json_of(hm(project, "package", "--target", "linux-arm64", "--json"))
    assert data["har"].endswith("/build/notes_assistant-0.1.0.har") and data["not_ohos_binary"] is True
    assert "package/libs/arm64-v8a/libnotes_assistant.so" in data["files"]


def _ets_rows(root) -> list[tuple]:
    """(name, minTotalRamGb, modelFile, contextSize, kvCacheType, minAvailableMb) of DeviceClasses.ets."""
    text = (root / "src/main/ets/DeviceClasses.ets").read_text()
    pattern = (r"name: '([^']*)',\s*minTotalRamGb: ([0-9.]+),\s*modelFile: '([^']*)',\s*contextSize: (\d+),\s*"
               r"kvCacheType: '([^']*)',\s*minAvailableMb: (\d+)")
    return re.findall(pattern, text)


def test_config_device_classes_reach_the_arkts_table_and_update_follows_edits(tmp_path):
    """The [[device_class]] rows of a --config file are what InferenceService gets; later edits to
    hmbuild.toml's rows reach DeviceClasses.ets through `hmbuild update`."""
    text = CONFIG.read_text().replace('name = "small"', 'name = "tiny"').replace("context_size = 1024", "context_size = 768")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(text)
    root = tmp_path / "notes"
    assert run_hmbuild("new", str(root), "--config", str(cfg)).returncode == 0
    want = [(r["name"], str(r["min_total_ram_gb"]), r["model_file"], str(r["context_size"]), r["kv_cache_type"],
             str(r["min_available_mb"])) for r in tomllib.loads(text)["device_class"]]
    assert _ets_rows(root) == want and want[2][0] == "tiny" and want[1][3] == "768"
    assert run_hmbuild("-C", str(root), "check").returncode == 0
    toml = root / "hmbuild.toml"
    toml.write_text(toml.read_text().replace("min_available_mb = 1024", "min_available_mb = 1536"))
    proc = run_hmbuild("-C", str(root), "update")
    assert proc.returncode == 0, proc.stderr
    assert _ets_rows(root)[0][5] == "1536"
    assert run_hmbuild("-C", str(root), "check").returncode == 0


@pytest.mark.parametrize("edit, needle", [
    (("kv_cache_type = \"f16\"", "kv_cache_type = \"f8\""), "row 1 kv_cache_type = 'f8' must be f16 or q8_0"),
    (("model_file = \"gemma-3-270m-q4_k_m.gguf\"\ncontext_size = 2048",
      "model_file = \"../x'.gguf\"\ncontext_size = 2048"), "row 1 model_file"),
    (("min_total_ram_gb = 10", "min_total_ram_gb = 1"), "from the largest min_total_ram_gb"),
    (('label = "music"', 'label = "song"'), "[[intent.example]] row 3 label = 'song' is not one of [intent] labels"),
    (('fallback = "note"', 'fallback = "other"'), "[intent] fallback = 'other' must be one of the labels"),
    (("min_margin = 0.1", "min_margin = -1"), "[intent] min_margin must be a number from 0 to 100"),
    (("calibrate = true", "calibrate = \"yes\""), "[intent] calibrate must be true or false"),
    (('labels = ["alarm"', 'labels = ["note"'), "[intent] labels must be a list of 1 to 64 different labels"),
])
def test_a_bad_device_class_row_or_intent_table_is_one_sentence_and_creates_nothing(tmp_path, edit, needle):
    text = CONFIG.read_text()
    assert edit[0] in text
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(text.replace(edit[0], edit[1], 1))
    root = tmp_path / "p"
    proc = run_hmbuild("new", str(root), "--config", str(cfg))
    assert proc.returncode == 1 and needle in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not root.exists()


_JS_STR = r'"(?:[^"\\]|\\.)*"'


def _ets_intent(root) -> dict:
    """INTENT of Intents.ets, read back: its strings are JSON string literals."""
    text = (root / "src/main/ets/Intents.ets").read_text()
    labels = json.loads(re.search(r"labels: (\[.*\]),", text).group(1))
    examples = [{"text": json.loads(t), "label": json.loads(l)}
                for t, l in re.findall(rf"\{{ text: ({_JS_STR}), label: ({_JS_STR}) \}}", text)]
    return {"labels": labels, "examples": examples, "calibrate": re.search(r"calibrate: (true|false),", text).group(1) == "true",
            "fallback": json.loads(re.search(rf"fallback: ({_JS_STR})", text).group(1)),
            "min_margin": float(re.search(r"minMargin: ([0-9.]+)", text).group(1))}


def test_config_intent_reaches_the_arkts_and_update_follows_edits(tmp_path):
    """[intent] of a --config file is what InferenceService.route uses (Intents.ets), free text
    included (a Chinese label, quotes and a backslash in an example); edits reach it through
    `hmbuild update`, and the ArkTS linter accepts the file."""
    text = (CONFIG.read_text().replace('"alarm", "weather"', '"闹钟", "weather"')
            .replace('label = "alarm"', 'label = "闹钟"').replace('fallback = "note"', 'fallback = "闹钟"')
            .replace('text = "Wake me up at half past six"', 'text = "Wake me \\"at\\" 6:30 \\\\ 早上"'))
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(text)
    root = tmp_path / "notes"
    proc = run_hmbuild("new", str(root), "--config", str(cfg))
    assert proc.returncode == 0, proc.stderr
    want = tomllib.loads(text)["intent"]
    got = _ets_intent(root)
    assert got["labels"] == want["labels"] and got["labels"][0] == "闹钟"
    assert got["examples"] == want["example"] and got["examples"][0]["text"] == 'Wake me "at" 6:30 \\ 早上'
    assert (got["calibrate"], got["fallback"], got["min_margin"]) == (True, "闹钟", 0.1)
    proc = run_hmbuild("-C", str(root), "lint", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["problems"] == [], proc.stdout
    toml = root / "hmbuild.toml"
    toml.write_text(toml.read_text().replace("min_margin = 0.1", "min_margin = 0.25")
                    + '\n[[intent.example]]\ntext = "Is it sunny?"\nlabel = "weather"\n')
    proc = run_hmbuild("-C", str(root), "update")
    assert proc.returncode == 0, proc.stderr
    got = _ets_intent(root)
    assert got["min_margin"] == 0.25 and got["examples"][-1] == {"text": "Is it sunny?", "label": "weather"}
    assert run_hmbuild("-C", str(root), "check").returncode == 0
