"""hmbuild eval (the native hmllm_eval tool): tiny random-weight models against themselves, against
other quantizations of the same weights and against other weights, checked with a NumPy
computation of the same metrics over the same windows; the --max-kl gate; one-sentence refusals."""
import json
import os
import sys
import subprocess

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from conftest import REPO, have_arm64_tools, run_hmbuild
from tiny_models import TinyConfig, reference_logits, write_tiny_model

ENV = {"CMAKE_BUILD_PARALLEL_LEVEL": "2"}
TEXT = ("the moon was in a tent. The cat sat on the mat, and then the moon was an eel in the sea. "
        "A train left at ten; it was late again, and nobody minded at all.\n")


@pytest.fixture(scope="module")
def project(host_project):
    return host_project


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("evmodels")
    out = {}
    for name, cfg in {
        "f32": TinyConfig(weight_type=Q.F32, ctx=256),
        "q4_0": TinyConfig(weight_type=Q.Q4_0, ctx=256),          # the same weights, 4-bit
        "other": TinyConfig(weight_type=Q.F32, ctx=256, seed=1),  # different weights, same vocabulary
        "vocab320": TinyConfig(weight_type=Q.F32, ctx=256, n_vocab=320),
    }.items():
        path = d / f"{name}.gguf"
        out[name] = (cfg, write_tiny_model(path, cfg), path)
    text = d / "text.txt"
    text.write_text(TEXT, encoding="utf-8")
    out["text"] = text
    return out


def evaluate(project, model, reference, *args, check=True):
    proc = run_hmbuild("-C", str(project), "eval", "--model", str(model), "--reference", str(reference),
                       "--threads", "1", "--json", *args, env=ENV)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc, json.loads(proc.stdout)


def error_line(proc):
    lines = [l for l in proc.stderr.splitlines() if l.startswith("hmbuild: error: ")]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def prompt_ids(project, model, text):
    proc = run_hmbuild("-C", str(project), "run", "--json", "--model", str(model), "--prompt", text, "--max-tokens",
                       "1", "--ctx", "256")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["prompt_tokens"]


def numpy_metrics(m, r, ids, ctx):
    """The same windows and metrics in float64: [BOS] + the next ctx-1 text tokens per window."""
    (cm, wm, _), (cr, wr, _) = m, r
    assert ids[0] == 2
    content = ids[1:]
    kl, agree, nll, nll_r = [], 0, 0.0, 0.0
    confident, agree_confident = 0, 0
    windows = 0
    for s in range(0, len(content), ctx - 1):
        w = [2] + content[s:s + ctx - 1]
        windows += 1
        lm = reference_logits(cm, wm, w)[:-1]
        lr = reference_logits(cr, wr, w)[:-1]
        lm = lm - np.log(np.exp(lm - lm.max(1, keepdims=True)).sum(1, keepdims=True)) - lm.max(1, keepdims=True)
        lr = lr - np.log(np.exp(lr - lr.max(1, keepdims=True)).sum(1, keepdims=True)) - lr.max(1, keepdims=True)
        kl += list((np.exp(lr) * (lr - lm)).sum(1))
        agree += int((lm.argmax(1) == lr.argmax(1)).sum())
        sure = np.exp(lr.max(1)) >= 0.5
        confident += int(sure.sum())
        agree_confident += int((lm.argmax(1) == lr.argmax(1))[sure].sum())
        tgt = np.array(w[1:])
        nll -= lm[np.arange(len(tgt)), tgt].sum()
        nll_r -= lr[np.arange(len(tgt)), tgt].sum()
    n = len(content)
    return {"tokens": n, "windows": windows, "kl_mean": float(np.mean(kl)), "kl_max": float(np.max(kl)),
            "top1_agreement": agree / n, "ppl": float(np.exp(nll / n)), "ppl_reference": float(np.exp(nll_r / n)),
            "confident_share": confident / n, "top1_agreement_confident": agree_confident / confident if confident else None}


def test_a_model_against_itself_agrees_exactly(project, models):
    path = models["f32"][2]
    _, out = evaluate(project, path, path, "--text", str(models["text"]))
    assert out["ok"] is True
    assert out["top1_agreement"] == 1.0
    assert out["top1_agreement_confident"] == 1.0 and 0 < out["confident_share"] < 1
    assert out["kl_mean"] == pytest.approx(0.0, abs=1e-12) and out["kl_max"] == pytest.approx(0.0, abs=1e-12)
    assert out["ppl"] == out["ppl_reference"] and out["ppl"] > 1.0
    assert out["ctx"] == 256  # the default 512 is bounded by the tiny model's training context
    assert out["tokens"] == out["text_tokens"] > 100 and out["windows"] == 1
    _, out = evaluate(project, path, path, "--text", str(models["text"]), "--ctx", "8")
    assert out["windows"] == -(-out["tokens"] // 7) and out["top1_agreement"] == 1.0 and out["kl_max"] == 0.0
    for key in ("top1_agreement", "kl_mean", "ppl", "ppl_reference", "tokens", "windows", "ctx", "kl_max"):
        assert key in out


def test_a_4bit_copy_drifts_and_the_figures_match_numpy(project, models):
    m, r = models["q4_0"], models["f32"]
    proc, out = evaluate(project, m[2], r[2], "--text", str(models["text"]), "--ctx", "16")
    assert out["kl_mean"] > 0 and out["kl_max"] >= out["kl_mean"]
    assert out["top1_agreement"] < 1.0
    assert out["ppl"] != out["ppl_reference"]
    # Progress is shown while it runs.
    assert "hmbuild: eval " in proc.stderr and f"{out['tokens']}/{out['tokens']} tokens" in proc.stderr
    ids = prompt_ids(project, m[2], TEXT)
    ref = numpy_metrics(m, r, ids, 16)
    assert out["tokens"] == ref["tokens"] and out["windows"] == ref["windows"] > 5
    # The engine runs 4-bit weights with 8-bit activations, the NumPy reference in float64.
    assert out["kl_mean"] == pytest.approx(ref["kl_mean"], rel=0.25)
    assert out["ppl"] == pytest.approx(ref["ppl"], rel=0.02)
    assert out["ppl_reference"] == pytest.approx(ref["ppl_reference"], rel=1e-3)
    assert abs(out["top1_agreement"] - ref["top1_agreement"]) <= 0.05
    # The same split into confident positions (the reference's top token p >= 0.5) as NumPy's.
    assert 0 < ref["confident_share"] < 1, ref
    assert out["confident_share"] == pytest.approx(ref["confident_share"], abs=0.01)
    assert abs(out["top1_agreement_confident"] - ref["top1_agreement_confident"]) <= 0.05


def test_other_weights_match_numpy_closely(project, models):
    m, r = models["other"], models["f32"]
    _, out = evaluate(project, m[2], r[2], "--text", str(models["text"]), "--ctx", "40")
    ref = numpy_metrics(m, r, prompt_ids(project, m[2], TEXT), 40)
    assert out["windows"] == ref["windows"] and out["tokens"] == ref["tokens"]
    for key in ("kl_mean", "kl_max", "ppl", "ppl_reference"):
        assert out[key] == pytest.approx(ref[key], rel=1e-3), key
    assert out["top1_agreement"] == pytest.approx(ref["top1_agreement"], abs=0.02)


def test_the_max_kl_gate(project, models):
    m, r = models["q4_0"][2], models["f32"][2]
    _, base = evaluate(project, m, r, "--text", str(models["text"]))
    kl = base["kl_mean"]
    proc, out = evaluate(project, m, r, "--text", str(models["text"]), "--max-kl", str(kl * 2))
    assert out["ok"] is True and out["kl_mean"] == kl
    proc, out = evaluate(project, m, r, "--text", str(models["text"]), "--max-kl", str(kl / 2), check=False)
    assert proc.returncode != 0
    assert out["ok"] is False and out["kl_mean"] == kl  # the report is still printed
    assert "above --max-kl" in error_line(proc)
    # Without --json: the report on stdout, the sentence on stderr.
    proc = run_hmbuild("-C", str(project), "eval", "--model", str(m), "--reference", str(r), "--text",
                       str(models["text"]), "--threads", "1", "--max-kl", str(kl / 2))
    assert proc.returncode != 0 and "top-1 agreement" in proc.stdout and "perplexity" in proc.stdout
    assert "above --max-kl" in error_line(proc)


def test_different_vocabularies_are_refused(project, models):
    proc, out = evaluate(project, models["vocab320"][2], models["f32"][2], "--text", str(models["text"]), check=False)
    assert proc.returncode != 0 and out["ok"] is False
    assert "vocabulary" in error_line(proc) and "same tokenizer" in out["error"]


def test_bad_input_is_one_sentence(project, models, tmp_path):
    good, text = models["f32"][2], models["text"]
    cases = []
    cases.append((["--model", str(tmp_path / "none.gguf"), "--reference", str(good), "--text", str(text)],
                  "does not exist"))
    cases.append((["--model", str(good), "--reference", str(tmp_path / "none.gguf"), "--text", str(text)],
                  "does not exist"))
    cases.append((["--model", str(good), "--text", str(text)], "--reference"))
    cases.append((["--model", str(good), "--reference", str(good), "--text", str(tmp_path / "none.txt")],
                  "does not exist"))
    empty = tmp_path / "empty.txt"
    empty.write_text(" \n\n", encoding="utf-8")
    cases.append((["--model", str(good), "--reference", str(good), "--text", str(empty)], "is empty"))
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\u00e9 au lait".encode("latin-1"))
    cases.append((["--model", str(good), "--reference", str(good), "--text", str(latin1)], "not valid UTF-8"))
    one = tmp_path / "one.txt"
    one.write_text("<eos>", encoding="utf-8")  # a control token written in the text: one token
    cases.append((["--model", str(good), "--reference", str(good), "--text", str(one)], "at least 2 tokens"))
    cases.append((["--model", str(good), "--reference", str(good), "--text", str(text), "--ctx", "1"],
                  "at least 2 tokens"))
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"GGUF" + b"\x00" * 20)
    cases.append((["--model", str(bogus), "--reference", str(good), "--text", str(text)], "cannot be loaded"))
    for args, needle in cases:
        proc = run_hmbuild("-C", str(project), "eval", "--threads", "1", *args, env=ENV)
        assert proc.returncode != 0, args
        line = error_line(proc)
        assert needle in line, (args, line)
        assert line.endswith("."), line


def test_the_default_text_is_shipped_and_used(project, models):
    from hmbuild.model.evaluate import default_text

    words = default_text().read_text(encoding="utf-8").split()
    assert 600 <= len(words) <= 900
    path = models["f32"][2]
    _, out = evaluate(project, path, path, "--ctx", "64")
    assert out["text"] == str(default_text()) and out["tokens"] > 1000 and out["top1_agreement"] == 1.0


def test_the_wheel_carries_the_default_text(tmp_path):
    pytest.importorskip("hatchling")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path),
                    str(REPO)], check=True, capture_output=True)
    import zipfile

    (wheel,) = tmp_path.glob("hmbuild-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "hmbuild/model/data/eval_en.txt" in names and "hmbuild/model/data/calib_en.txt" in names


@pytest.mark.qemu
@pytest.mark.skipif(not have_arm64_tools(), reason="needs g++-aarch64-linux-gnu and qemu-user")
def test_under_qemu_the_figures_are_the_hosts(project, models, tmp_path):
    run_hmbuild("-C", str(project), "build", "--target", "linux-arm64", check=True, env=ENV)
    r = models["f32"][2]
    # A Q4_0 file, and hmbuild quantize's own output (HM_Q4 with rotated inputs, turned back on the device).
    rotated = tmp_path / "g128.gguf"
    run_hmbuild("quantize", str(r), str(rotated), check=True)
    for m in (models["q4_0"][2], rotated):
        _, host = evaluate(project, m, r, "--text", str(models["text"]), "--ctx", "32")
        _, arm = evaluate(project, m, r, "--text", str(models["text"]), "--ctx", "32", "--target", "linux-arm64",
                          "--cpu", "cortex-a53")
        assert arm["target"] == "linux-arm64" and arm["kernels"] == "neon"
        assert (arm["tokens"], arm["windows"]) == (host["tokens"], host["windows"])
        for key in ("kl_mean", "ppl", "ppl_reference"):
            assert arm[key] == pytest.approx(host[key], rel=1e-3), (m.name, key)
        assert arm["top1_agreement"] == pytest.approx(host["top1_agreement"], abs=0.02)
        # Near the source (~0.5 nats for 4 bits of these random weights; a model with other weights is
        # ~8): the rotation is undone on the device as on the host.
        assert arm["kl_mean"] < 2.0, (m.name, arm)
    m = models["q4_0"][2]
    _, same = evaluate(project, m, m, "--text", str(models["text"]), "--target", "linux-arm64")
    assert same["top1_agreement"] == 1.0 and same["kl_mean"] == 0.0 and same["ppl"] == same["ppl_reference"]
