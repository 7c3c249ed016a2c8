"""Record llama.cpp's outputs on SmolLM2-135M-Instruct (Q4_1) as the fixture the SmolLM2 tests compare
hmllm to (tests/fixtures/llama_cpp/smollm2.json).

SmolLM2 is the second test model: an instruct model (Q4_1 and Q8_0 tensors, GPT-2 BPE with the
`smollm` pre-tokenizer, a ChatML template) that ends its own turns with <|im_end|>. Recorded once,
with llama-cpp-python 0.3.36 (the venv scripts/record_llama_reference.py describes), from the
repository root:

    hmbuild fetch-model smollm2-135m-instruct
    /root/.cache/hmbuild/llama-ref-venv/bin/pip install tomlkit click gguf==0.19.0  # hmbuild's imports
    /root/.cache/hmbuild/llama-ref-venv/bin/python scripts/record_smollm_reference.py

(--model defaults to the cached file.)

What it writes:
  tokenize  llama.cpp's ids (add_special=True, parse_special=True) for texts with Chinese, emoji,
            code, numbers, whitespace runs and ChatML's own tokens written in the text.
  greedy    six plain prompts: their ids and llama.cpp's 24 greedy tokens, with each step's margin
            between the best two logits (where it is within the 8-bit activation noise, another
            engine may rightly take the runner-up and the paths part).
  chats     conversations rendered by hmbuild's compiled form of the model's own template
            (hmbuild/model/chat_template.py), their ids, and llama.cpp's greedy answer up to and
            including the token that ended it (<|im_end|>, id 2), with margins.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

from _llama_ref import argument_parser, import_llama_cpp  # noqa: E402
from hmbuild.model.chat_template import load_format  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "llama_cpp" / "smollm2.json"
N_GREEDY = 24
MAX_CHAT = 64

TOKENIZE_TEXTS = [
    "Hello world! 123",
    "The quick brown fox jumps over the lazy dog.",
    "  multiple   spaces   and trailing  ",
    "line one\nline two\n\n\tindented\r\n",
    "1234567890 3.14159 -42 1,000,000 2024-01-15T10:30:00Z v1.2.3 0x1F",
    "I've got 99 problems; you'll see 1st, 2nd and 3rd.",
    "def add(a, b):\n    return a + b  # sum\n",
    "for (int i = 0; i < n; ++i) { sum += x[i] * 2; }",
    "今天天气很好，我们去公园散步吧。",
    "東京は日本の首都です。안녕하세요 123个",
    "I love pizza 🍕🍕! Family: 👨‍👩‍👧‍👦 👍🏽",
    "Café naïve résumé façade Ångström ١٢٣ ४५६",
    "https://example.com/path?q=1&b=two#frag user.name+tag@example.co.uk",
    "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|> and <|im_end|> inside text",
]

GREEDY_PROMPTS = [
    "The capital of France is",
    "In 1969, the first human to walk on the moon was",
    "def fibonacci(n):",
    "Water boils at a temperature of",
    "The three primary colors are",
    "Once upon a time, in a small village,",
]

# Conversations whose greedy answers llama.cpp ends at <|im_end|> well inside MAX_CHAT tokens, with
# no near-tie on the way (the smallest margin is recorded and checked to be above 0.3).
CHATS = {
    "hi": [{"role": "user", "content": "Hi!"}],
    "arithmetic": [{"role": "user", "content": "What is 2+2?"}],
}


def greedy(llm, ids: list[int], n: int, stop: int | None = None) -> tuple[list[int], list[float]]:
    llm.reset()
    llm.eval(ids)
    out, margins = [], []
    for _ in range(n):
        logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        tok = int(np.argmax(logits))
        top2 = np.partition(logits, -2)[-2:]
        out.append(tok)
        margins.append(round(float(top2[1] - top2[0]), 4))
        if tok == stop:
            break
        llm.eval([tok])
    return out, margins


def main() -> int:
    ap = argument_parser(__doc__)
    ap.set_defaults(model=Path.home() / ".cache" / "hmbuild" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf")
    args = ap.parse_args()
    llama_cpp = import_llama_cpp()
    if llama_cpp is None:
        return 1
    import record_llama_reference as ref

    llm = llama_cpp.Llama(model_path=str(args.model), n_ctx=512, n_batch=512, n_threads=2, n_threads_batch=2,
                          logits_all=True, seed=0, verbose=False)
    model = llm._model
    end = model.token_eos()
    tokenize = [{"text": t, "ids": model.tokenize(t.encode(), True, True)} for t in TOKENIZE_TEXTS]
    runs = []
    for prompt in GREEDY_PROMPTS:
        ids = model.tokenize(prompt.encode(), True, True)
        out, margins = greedy(llm, ids, N_GREEDY)
        runs.append({"prompt": prompt, "prompt_ids": ids, "greedy_ids": out, "greedy_margins": margins})
    fmt = load_format(args.model)
    chats = []
    for name, messages in CHATS.items():
        prompt = fmt.render(messages, add_generation_prompt=True)
        ids = model.tokenize(prompt.encode(), False, True)
        out, margins = greedy(llm, ids, MAX_CHAT, stop=end)
        if out[-1] != end or min(margins) < 0.3:
            print(f"error: llama.cpp's answer to {name!r} does not end cleanly at <|im_end|>", file=sys.stderr)
            return 1
        answer = b"".join(ref.piece(model, t, False) for t in out[:-1]).decode("utf-8")
        chats.append({"name": name, "messages": messages, "prompt": prompt, "prompt_ids": ids,
                      "greedy_ids": out, "greedy_margins": margins, "answer": answer})
    data = {
        "generator": ref.generator_info(),
        "model": {"file": args.model.name, "sha256": ref.sha256_of(args.model)},
        "settings": {"n_ctx": 512, "sampling": "argmax of the logits", "tokenize": "add_special=True, parse_special=True",
                     "chat_prompt_ids": "add_special=False, parse_special=True", "end_of_turn": end},
        "tokenize": tokenize,
        "greedy": runs,
        "chats": chats,
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)} ({OUT.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
