"""Malformed models are refused with one sentence naming the problem, by `hmbuild run` and by the
NAPI library inside one live Node process, which then keeps serving a valid model. The corpus is
tests/malformed_models.py: one valid tiny llama, changed one thing at a time."""
import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import REPO, run_hmbuild
from hmbuild.targets.node import node_for
from hmbuild.targets.target import resolve_target
from malformed_models import FORGED, write_corpus

# Each metadata-entry truncation only repeats what the named cuts check through `hmbuild run`;
# Node, where a load costs microseconds, gets all of them.
NODE_ONLY = "truncated_after_kv"


@pytest.fixture(scope="module")
def project(host_project):
    return host_project


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"))


def test_the_corpus_covers_every_kind_of_damage(corpus):
    valid, variants = corpus
    names = {v.name for v in variants}
    for kind in ("empty", "truncated_after_header", "truncated_inside_tensor_data", "bad_magic", "version_99",
                 "kv_count_2e62", "tensor_count_2e62", "array_count_2e62", "string_length_past_end",
                 "tensor_offset_past_end", "tensor_size_past_end", "tensor_offset_misaligned", "tensor_type_unknown",
                 "tensor_shape_mismatch", "duplicate_key", "missing_block_count", "missing_embedding_length",
                 "unknown_architecture", "wrong_architecture_qwen2", "missing_tensor_output_norm", "matrix_type_q8_1",
                 "vocab_larger_than_embedding", "tokenizer_model_unknown", "rotated_inputs_not_strings",
                 "rotated_inputs_unknown_tensor", "rotated_inputs_partial_block"):
        assert kind in names
    assert len({v.path.read_bytes() for v in variants}) == len(variants), "two variants are the same file"
    assert all(v.path.read_bytes() != valid.read_bytes() for v in variants)


def test_hmbuild_run_refuses_every_malformed_model_in_one_line(project, corpus):
    valid, variants = corpus
    ok = run_hmbuild("-C", str(project), "run", "--model", str(valid), "--prompt", "the moon", "--max-tokens", "2",
                     "--threads", "1")
    assert ok.returncode == 0, ok.stderr

    def run(v):
        return v, run_hmbuild("-C", str(project), "run", "--model", str(v.path), "--prompt", "the moon",
                              "--max-tokens", "2", "--threads", "1")

    wrong = []
    # The build is up to date, so concurrent runs only read the build folder.
    with ThreadPoolExecutor(3) as pool:
        for v, proc in pool.map(run, [v for v in variants if not v.name.startswith(NODE_ONLY)]):
            errors = [l for l in proc.stderr.splitlines() if l.startswith("hmbuild: error: ")]
            others = [l for l in proc.stderr.splitlines() if not l.startswith("hmbuild: ")]
            if proc.returncode != 1 or len(errors) != 1 or others or v.expect not in errors[0] \
                    or str(v.path) not in errors[0]:
                wrong.append(f"{v.name}: exit {proc.returncode}, stderr {proc.stderr!r}, expected {v.expect!r}")
    assert not wrong, "\n".join(wrong)


def test_one_node_process_refuses_every_malformed_model_and_keeps_serving(project, corpus, tmp_path):
    valid, variants = corpus
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"valid": str(valid), "passes": 3,
                                    "variants": [{"name": v.name, "path": str(v.path)} for v in variants]}))
    library = project / "build" / "host-release" / "libdemo.so"
    proc = subprocess.run([str(node_for(resolve_target("host"))), str(REPO / "tests" / "malformed_models.mjs"),
                           str(manifest)], env={**os.environ, "HMBUILD_LIBRARY": str(library)},
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"node died ({proc.returncode}):\n{proc.stderr[-3000:]}"
    out = json.loads(proc.stdout)
    wrong = []
    for v in variants:
        r = out["results"][v.name]
        if r["loaded"] or not r["isError"] or r["code"] != "MODEL_LOAD_FAILED" or v.expect not in r["message"] \
                or "\n" in r["message"]:
            wrong.append(f"{v.name}: {r}, expected MODEL_LOAD_FAILED with {v.expect!r}")
    assert not wrong, "\n".join(wrong)
    # Forged counts of 2^62 allocate nothing for them, and refused files leave nothing behind:
    # three passes over the corpus (~60 MB of file data to map) move neither the resident size nor
    # its peak by more than 16 MB.
    grown = (out["rssAfter"] - out["rssBefore"]) / 1e6
    peak = (out["peakAfter"] - out["peakBefore"]) / 1e6
    assert grown < 16 and peak < 16, f"RSS grew by {grown:.1f} MB, its peak by {peak:.1f} MB, over three passes"
    # The session opened before the corpus, and one opened after it, still answer.
    for when in ("warm", "survivor", "after"):
        assert out[when]["isArrayBuffer"] and out[when]["outputTokens"] >= 1, (when, out[when])
    assert str(FORGED) in out["results"]["kv_count_2e62"]["message"]
