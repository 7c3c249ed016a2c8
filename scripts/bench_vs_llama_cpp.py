"""Prefill and decode speed of hmllm side by side with llama.cpp: same GGUF file, same prompt
tokens, same thread count, run alternately in one process tree so both see the same machine.

Run it with a Python that has llama-cpp-python (its build takes ~10 minutes on 2 cores; see
scripts/record_llama_reference.py for the venv), pointing it at a built hmllm_run, e.g.

    hmbuild -C DEMO build --target host
    ~/.cache/hmbuild/llama-ref-venv/bin/python scripts/bench_vs_llama_cpp.py \\
        --hmllm-run DEMO/build/host-release/hmllm/hmllm_run [--threads 2] [--prompt-tokens 128] \\
        [--gen-tokens 64] [--repeat 3] [--json]

It prints medians and the ratio hmllm / llama.cpp (above 1.0: hmllm is faster). Both engines compute
logits for the last prompt token only (llama.cpp with logits_all=False). Timings on a shared or
emulated machine are noisy; the ratio from one run is the figure to quote.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _llama_ref import argument_parser, import_llama_cpp

TEXT = ("The city council met on Tuesday to discuss the new budget for parks, libraries and road repairs. "
        "After a long debate the members agreed to raise spending on public transport next year. ")


def last_logits(llm):
    """The logits of the last token evaluated. With logits_all=False llama.cpp computes only those
    (as hmllm does: the output matrix runs once per prompt, not once per prompt token), and
    llama-cpp-python keeps no copy, so they are read from the context."""
    import numpy as np

    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),))


def llama_cpp_run(llm, prompt: list[int], gen: int) -> tuple[float, float]:
    """(prefill tokens/s, decode tokens/s) for one greedy run."""
    import numpy as np

    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt)
    tok = int(np.argmax(last_logits(llm)))
    t1 = time.perf_counter()
    for _ in range(gen - 1):
        llm.eval([tok])
        tok = int(np.argmax(last_logits(llm)))
    t2 = time.perf_counter()
    return len(prompt) / (t1 - t0), (gen - 1) / (t2 - t1)


def hmllm_run(exe: Path, model: Path, prompt: list[int], gen: int, threads: int) -> tuple[float, float]:
    out = subprocess.run([str(exe), "--model", str(model), "--tokens", ",".join(map(str, prompt)),
                          "--max-tokens", str(gen), "--threads", str(threads), "--ctx", "512", "--json"],
                         capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    if len(data["tokens"]) != gen:
        raise SystemExit(f"hmllm stopped after {len(data['tokens'])} tokens ({data['stop']}); use another prompt")
    return data["prefill_tps"], data["decode_tps"]


def main() -> int:
    ap = argument_parser(__doc__)
    ap.add_argument("--hmllm-run", type=Path, required=True)
    ap.add_argument("--hmllm-model", type=Path, default=None,
                    help="the file hmllm runs (e.g. an `hmbuild quantize` output); llama.cpp always runs --model")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--gen-tokens", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    llama_cpp = import_llama_cpp()
    if llama_cpp is None:
        return 1
    llm = llama_cpp.Llama(model_path=str(args.model), n_ctx=512, n_batch=512, n_threads=args.threads,
                          n_threads_batch=args.threads, logits_all=False, verbose=False)
    hm_model = args.hmllm_model or args.model
    ids = llm.tokenize(TEXT.encode() * 8, add_bos=True)[: args.prompt_tokens]
    rows = {"llama.cpp": [], "hmllm": []}
    for i in range(args.repeat):
        print(f"run {i + 1}/{args.repeat}", file=sys.stderr)
        rows["llama.cpp"].append(llama_cpp_run(llm, ids, args.gen_tokens))
        rows["hmllm"].append(hmllm_run(args.hmllm_run, hm_model, ids, args.gen_tokens, args.threads))
    med = {k: (statistics.median(p for p, _ in v), statistics.median(d for _, d in v)) for k, v in rows.items()}
    result = {
        "model": args.model.name, "hmllm_model": hm_model.name, "threads": args.threads, "prompt_tokens": len(ids), "gen_tokens": args.gen_tokens,
        "llama_cpp_version": llama_cpp.__version__,
        "prefill_tps": {"hmllm": med["hmllm"][0], "llama.cpp": med["llama.cpp"][0],
                        "ratio": med["hmllm"][0] / med["llama.cpp"][0]},
        "decode_tps": {"hmllm": med["hmllm"][1], "llama.cpp": med["llama.cpp"][1],
                       "ratio": med["hmllm"][1] / med["llama.cpp"][1]},
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        runs = args.model.name if hm_model == args.model else f"hmllm {hm_model.name} vs llama.cpp {args.model.name}"
        print(f"{runs}, {args.threads} threads, prompt {len(ids)} / generate {args.gen_tokens}, "
              f"median of {args.repeat} (llama-cpp-python {llama_cpp.__version__})")
        print(f"{'':10} {'hmllm':>10} {'llama.cpp':>10} {'ratio':>7}")
        for key in ("prefill_tps", "decode_tps"):
            r = result[key]
            print(f"{key:10} {r['hmllm']:10.1f} {r['llama.cpp']:10.1f} {r['ratio']:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
