"""Record llama.cpp's greedy tokens on the Gemma 3 270M test model re-quantized by llama.cpp's own
quantizer to the file types phones download (Q5_K_M, Q3_K_M, IQ4_XS, Q2_K), as one small JSON
fixture (tests/fixtures/llama_cpp/gemma3_requant_greedy.json) that tests/test_requantized_gemma.py
holds the runtime to. CI never builds llama.cpp; the model files are made once per machine and
cached outside the repository (never committed).

Run it with the llama-cpp-python venv (scripts/record_llama_reference.py says how to make it):

    ~/.cache/hmbuild/llama-ref-venv/bin/python scripts/record_llama_requant_reference.py
    ~/.cache/hmbuild/llama-ref-venv/bin/python scripts/record_llama_requant_reference.py --make-only Q2_K

--make-only only writes the cached files (what the test asks for when one is missing). The files
are llama_model_quantize(allow_requantize) of the test model, in
~/.cache/hmbuild/models/requant/gemma-3-270m-<type>.gguf; the fixture names each file's SHA-256,
so the test knows it runs the file llama.cpp's tokens were recorded on.
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOURCE = Path.home() / ".cache" / "hmbuild" / "models" / "gemma-3-270m-q4_k_m.gguf"
CACHE = Path.home() / ".cache" / "hmbuild" / "models" / "requant"
OUT = REPO / "tests" / "fixtures" / "llama_cpp" / "gemma3_requant_greedy.json"
FILE_TYPES = ["Q5_K_M", "Q3_K_M", "IQ4_XS", "Q2_K"]
N_GENERATE = 16


def cached_path(ftype: str) -> Path:
    return CACHE / f"gemma-3-270m-{ftype.lower()}.gguf"


def make(ftype: str, source: Path = SOURCE) -> Path:
    """The cached re-quantization of the test model to llama.cpp's file type `ftype` (made once)."""
    import llama_cpp

    dst = cached_path(ftype)
    if dst.is_file():
        return dst
    dst.parent.mkdir(parents=True, exist_ok=True)
    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    p.allow_requantize = True
    p.nthread = 2
    fd, tmp = tempfile.mkstemp(prefix=dst.name + ".", dir=dst.parent)
    os.close(fd)
    try:
        if llama_cpp.llama_model_quantize(str(source).encode(), tmp.encode(), ctypes.byref(p)) != 0:
            raise SystemExit(f"llama_model_quantize failed for {ftype}")
        os.replace(tmp, dst)  # whole files only, also with two makers at once
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dst


def tensor_types(path: Path) -> dict[str, int]:
    import gguf

    counts = collections.Counter(t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors)
    return dict(sorted(counts.items()))


def record(ftype: str, gen: dict) -> dict:
    import llama_cpp
    import numpy as np

    import record_llama_reference as ref

    path = make(ftype)
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=ref.N_CTX, n_batch=ref.N_CTX, n_threads=ref.N_THREADS,
                          n_threads_batch=ref.N_THREADS, logits_all=True, seed=0, verbose=False)
    model = llm._model
    runs = []
    for prompt in ref.GREEDY_PROMPTS:
        prompt_ids = model.tokenize(prompt.encode(), True, True)
        ref.eval_fresh(llm, prompt_ids)
        generated, chosen, margins = [], [], []
        for _ in range(N_GENERATE):
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            top2 = np.sort(logits)[-2:]
            tok = int(np.argmax(logits))
            generated.append(tok)
            chosen.append(round(float(logits[tok]), 4))
            margins.append(round(float(top2[1] - top2[0]), 4))
            llm.eval([tok])
        runs.append({"prompt": prompt, "prompt_ids": prompt_ids, "generated_ids": generated,
                     "generated_logits": chosen, "top2_margins": margins,
                     "generated_text": b"".join(ref.piece(model, t, False) for t in generated).decode("utf-8", "replace")})
    del llm
    return {"file_type": ftype, "file": path.name, "sha256": ref.sha256_of(path), "bytes": path.stat().st_size,
            "tensor_types": tensor_types(path), "runs": runs}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--make-only", nargs="+", metavar="TYPE", help="only make these cached files")
    args = ap.parse_args()
    if not SOURCE.is_file():
        print(f"error: {SOURCE} not found; run `hmbuild fetch-model`", file=sys.stderr)
        return 1
    if args.make_only:
        for ftype in args.make_only:
            print(make(ftype))
        return 0
    sys.path.insert(0, str(REPO / "scripts"))
    import record_llama_reference as ref

    gen = ref.generator_info()
    data = {
        "generator": gen,
        "source_model": {"file": SOURCE.name, "sha256": ref.sha256_of(SOURCE)},
        "settings": {"quantize": "llama_model_quantize, allow_requantize, default params otherwise",
                     "n_ctx": ref.N_CTX, "n_threads": ref.N_THREADS, "n_generate": N_GENERATE,
                     "sampling": "argmax of the logits", "prompt_ids": "BOS + prompt, special tokens parsed",
                     "top2_margins": "logit of the chosen token minus the runner-up's, per step"},
        "files": [record(ftype, gen) for ftype in FILE_TYPES],
    }
    OUT.write_text(ref.dump_compact(data), encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
