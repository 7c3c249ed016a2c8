"""A model file holding a tensor type the engine cannot run (here one IQ2_XXS matrix in a tiny llama,
written with the gguf package) is refused when it is opened, in one sentence that names the tensor,
its type and the tensor types that do run (the type table's rows with a kernel, so a type that gains
one joins the list by itself): by plan (which never plans it), quantize, chat-template, run, bench
and eval, and by the NAPI init()."""
import json
import os
import subprocess

import pytest
from gguf import GGMLQuantizationType as Q

from conftest import REPO, run_hmbuild
from hmbuild.model import ggml_types as T
from tiny_models import TinyConfig, write_tiny_model

TENSOR = "blk.0.attn_q.weight"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("unrunnable")
    base = dict(n_layers=1, d_model=256, n_heads=4, n_kv_heads=2, head_dim=64, d_ff=512, weight_type=Q.Q8_0)
    good, bad = folder / "q8_0.gguf", folder / "iq2_xxs.gguf"
    write_tiny_model(good, TinyConfig(**base))
    write_tiny_model(bad, TinyConfig(**base, tensor_types={TENSOR: Q.IQ2_XXS}))
    return good, bad


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A generated project, never built: every refusal comes before the build."""
    root = tmp_path_factory.mktemp("unrunnable-project") / "demo"
    run_hmbuild("new", str(root), "--name", "demo", check=True)
    return root


def assert_refused(proc, path):
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("hmbuild: error: ")]
    assert len(errors) == 1, proc.stderr
    assert_the_sentence(errors[0].removeprefix("hmbuild: error: "), path)


def assert_the_sentence(msg, path):
    assert str(path) in msg and f"{TENSOR}" in msg and "has type iq2_xxs, which this runtime cannot run" in msg, msg
    assert msg.count(". ") == 0 and "\n" not in msg, msg  # one sentence
    listed = msg.split("it runs files whose tensors are ", 1)[1].rstrip(".").replace(" and ", ", ").split(", ")
    assert listed == [T.ggml_name(t) for t in sorted(T.ENGINE_TYPES)], listed
    assert {"f32", "f16", "q4_0", "q4_1", "q5_1", "q8_0", "q4_K", "q6_K"} <= set(listed) and "iq2_xxs" not in listed


def test_the_good_file_is_planned_and_the_bad_one_is_not(files):
    good, bad = files
    assert run_hmbuild("plan", "--model", str(good), "--json").returncode == 0
    proc = run_hmbuild("plan", "--model", str(bad), "--json")
    assert_refused(proc, bad)
    out = json.loads(proc.stdout)  # --json: the error, and no plan
    assert out["ok"] is False and set(out) == {"ok", "error"}


def test_quantize_refuses_it_and_writes_nothing(files, tmp_path):
    _, bad = files
    out = tmp_path / "out.gguf"
    assert_refused(run_hmbuild("quantize", str(bad), str(out)), bad)
    assert list(tmp_path.iterdir()) == []


def test_chat_template_refuses_it(files):
    _, bad = files
    assert_refused(run_hmbuild("chat-template", str(bad), "--template", "chatml"), bad)


def test_run_bench_and_eval_refuse_it_before_building(project, files):
    good, bad = files
    for args in (("run", "--model", str(bad), "--prompt", "hi"), ("bench", "--model", str(bad)),
                 ("eval", "--model", str(bad), "--reference", str(good)),
                 ("eval", "--model", str(good), "--reference", str(bad))):
        assert_refused(run_hmbuild("-C", str(project), *args), bad)
    assert not (project / "build").exists()


def test_napi_init_refuses_it_with_the_same_sentence(host_project, files, tmp_path):
    """The runtime's own check (init() and hmllm_run read the file themselves), through a real Node."""
    from hmbuild.targets.node import node_for
    from hmbuild.targets.target import resolve_target

    good, bad = files
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"valid": str(good), "passes": 1, "variants": [{"name": "iq2", "path": str(bad)}]}))
    proc = subprocess.run([str(node_for(resolve_target("host"))), str(REPO / "tests" / "malformed_models.mjs"),
                           str(manifest)], capture_output=True, text=True,
                          env={**os.environ, "HMBUILD_LIBRARY": str(host_project / "build" / "host-release" / "libdemo.so")})
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout)["results"]["iq2"]
    assert not r["loaded"] and r["isError"] and r["code"] == "MODEL_LOAD_FAILED", r
    assert_the_sentence(r["message"], bad)
