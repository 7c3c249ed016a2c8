"""Record what llama.cpp makes of chat prompts on the Gemma 3 270M test model, as the fixture
tests/test_chat_runtime.py compares `hmbuild run --chat --template gemma` to
(tests/fixtures/llama_cpp/gemma3_chat.json).

For each conversation: the prompt hmbuild's reference renderer writes with the built-in gemma format
(token texts from the model's vocabulary), llama.cpp's ids for it with
tokenize(text, add_special=False, parse_special=True) -- the format writes <bos> itself -- and, for
some, llama.cpp's greedy continuation. Run it with the llama-cpp-python venv, from the repository
root (scripts/record_llama_reference.py says how to make the venv):

    /root/.cache/hmbuild/llama-ref-venv/bin/python scripts/record_llama_chat_reference.py
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from _llama_ref import argument_parser, import_llama_cpp  # noqa: E402
from hmbuild.model.chat_template import VERIFY, load_format  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "llama_cpp" / "gemma3_chat.json"
N_GENERATE = 16
GREEDY = ("Chinese and emoji", "two turns with an assistant reply")


def main() -> int:
    args = argument_parser(__doc__).parse_args()
    llama_cpp = import_llama_cpp()
    if llama_cpp is None:
        return 1
    import record_llama_reference as ref

    fmt = load_format(args.model, name="gemma")
    llm = llama_cpp.Llama(model_path=str(args.model), n_ctx=512, n_batch=512, n_threads=2, n_threads_batch=2,
                          logits_all=True, seed=0, verbose=False)
    model = llm._model
    cases = []
    for name, messages in VERIFY.items():
        prompt = fmt.render(messages, add_generation_prompt=True)
        ids = model.tokenize(prompt.encode(), False, True)
        case = {"name": name, "messages": messages, "prompt": prompt, "prompt_ids": ids}
        if name in GREEDY:
            ref.eval_fresh(llm, ids)
            generated, margins = [], []
            for _ in range(N_GENERATE):
                logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
                tok = int(np.argmax(logits))
                generated.append(tok)
                # How far the choice was from a tie: where it is within the 8-bit activation noise
                # (~0.3), another engine may rightly pick the runner-up and the paths part.
                top2 = np.partition(logits, -2)[-2:]
                margins.append(round(float(top2[1] - top2[0]), 4))
                llm.eval([tok])
            case["greedy_ids"] = generated
            case["greedy_margins"] = margins
        cases.append(case)
    data = {"generator": ref.generator_info(), "model": {"file": args.model.name, "sha256": ref.sha256_of(args.model)},
            "format": fmt.to_json(), "n_generate": N_GENERATE, "cases": cases}
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
