"""Record llama.cpp's tokens for chat prompts: the published chat templates rendered by jinja2 the
way transformers does, tokenized by llama.cpp with special tokens parsed. The C++ runtime must
build exactly these prompt ids from the compiled chat format (tests/test_chat_tokens.py).

Uses the reference environment of scripts/record_llama_reference.py (llama-cpp-python 0.3.36 in
/root/.cache/hmbuild/llama-ref-venv, and llama.cpp's test vocabularies unpacked from the same
release's source package into /root/.cache/hmbuild/llama-sdist; that script's header says how),
plus jinja2 in that venv. From the repository root:

    PYTHONPATH=. /root/.cache/hmbuild/llama-ref-venv/bin/python scripts/record_chat_reference.py

Writes tests/fixtures/llama_cpp/chat_tokenize.json:
  cases   per (template, conversation): the template file, the vocabulary it is tokenized with
          (the real Gemma 3 270M for Gemma 3's template; llama.cpp's ggml-vocab-qwen2.gguf for
          Qwen2.5's and for SmolLM2's ChatML, whose own vocabulary is not in llama.cpp's test
          set but whose special tokens <|im_start|> / <|im_end|> Qwen2's has; ggml-vocab-llama-bpe.gguf,
          Llama 3's tokenizer, for Llama 3.2's), the messages, the rendered text (with the
          generation prompt) and llama.cpp's ids (add_special=False: the template writes BOS).
  greedy  the real Gemma 3 270M on Gemma 3's template, for the multi-turn conversation with a
          system turn and Chinese text: llama.cpp's 32 greedy tokens after the prompt, and at each
          step the gap between its best two logits (where that is small, 8-bit activation noise
          may make another engine choose the other).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record_llama_reference import (DEFAULT_MODEL, DEFAULT_VOCAB_DIR, N_GENERATE, REPO, eval_fresh,  # noqa: E402
                                    generator_info, piece, sha256_of, vocab_only)

from hmbuild.model.chat_template import render_reference  # noqa: E402

TEMPLATES = REPO / "tests" / "fixtures" / "chat_templates"
OUT = REPO / "tests" / "fixtures" / "llama_cpp" / "chat_tokenize.json"

# template -> (vocabulary: "model" or a ggml-vocab name, bos text, eos text, date_string)
# bos/eos are the published models' tokens (tokenizer_config.json), as tests/test_chat_template.py has them.
TEMPLATE_VOCABS = {
    "gemma-3-it": ("model", "<bos>", "<eos>", None),
    "qwen2.5-instruct": ("qwen2", "<|endoftext|>", "<|im_end|>", None),
    "llama-3.2-instruct": ("llama-bpe", "<|begin_of_text|>", "<|eot_id|>", "26 Jul 2024"),
    "smollm2-instruct": ("qwen2", "<|im_start|>", "<|im_end|>", None),
}

U = lambda c: {"role": "user", "content": c}  # noqa: E731
A = lambda c: {"role": "assistant", "content": c}  # noqa: E731
S = lambda c: {"role": "system", "content": c}  # noqa: E731

# The five kinds of conversation issue 22 names.
CONVERSATIONS = {
    "user alone": [U("What is the capital of France?")],
    "system and user": [S("Answer in one word."), U("Capital of Japan?")],
    "multi-turn": [U("Hi there"), A("Hello, how can I help?"), U("Summarise this note."), A("Done."),
                   U("Thanks")],
    "chinese and emoji": [S("请用中文回答。"), U("把这句话翻译成英文：我爱北京天安门 ❤️🏯"), A("I love Tiananmen 🙂"),
                          U("再来一次 👍🏽🇨🇳")],
    "spaces": [U("   leading and trailing   \n"), A("\n\tanswer  "), U(" next\u3000")],
}
GREEDY_CASE = "chinese and emoji"  # multi-turn, a system turn, Chinese text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--vocab-dir", type=Path, default=DEFAULT_VOCAB_DIR)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    import llama_cpp

    gen = generator_info()
    llm = llama_cpp.Llama(model_path=str(args.model), n_ctx=512, n_batch=512, n_threads=2, logits_all=True,
                          verbose=False)
    vocabs = {"model": llm._model}
    files = {"model": {"file": args.model.name, "sha256": sha256_of(args.model)}}
    for name in sorted({v[0] for v in TEMPLATE_VOCABS.values()} - {"model"}):
        path = args.vocab_dir / f"ggml-vocab-{name}.gguf"
        vocabs[name] = vocab_only(path)
        files[name] = {"file": path.name, "sha256": sha256_of(path)}
    cases = []
    greedy = None
    for template, (vocab, bos, eos, date) in TEMPLATE_VOCABS.items():
        source = (TEMPLATES / f"{template}.jinja").read_text(encoding="utf-8")
        for kind, messages in CONVERSATIONS.items():
            text = render_reference(source, messages, bos_token=bos, eos_token=eos, add_generation_prompt=True,
                                    variables={"date_string": date} if date else None)
            ids = vocabs[vocab].tokenize(text.encode(), False, True)
            cases.append({"template": template, "vocab": files[vocab], "bos_token": bos, "eos_token": eos,
                          "date_string": date, "kind": kind, "messages": messages, "text": text, "ids": ids})
            if template == "gemma-3-it" and kind == GREEDY_CASE:
                eval_fresh(llm, ids)
                logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
                out, margins = [], []
                for _ in range(N_GENERATE):
                    tok = int(np.argmax(logits))
                    out.append(tok)
                    top2 = np.sort(logits)[-2:]
                    margins.append(round(float(top2[1] - top2[0]), 4))  # how close llama.cpp's own choice was
                    llm.eval([tok])
                    logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
                text_out = b"".join(piece(llm._model, t, False) for t in out)
                greedy = {"template": template, "kind": kind, "prompt_ids": ids, "generated_ids": out,
                          "generated_margins": margins,
                          "generated_text": text_out.decode("utf-8", errors="replace")}
    data = {
        "generator": gen,
        "settings": {"parse_special": True, "ids": "llama.cpp tokenize(text, add_special=False, parse_special=True)",
                     "text": "render_reference (transformers' apply_chat_template) with add_generation_prompt=True",
                     "greedy": f"argmax of the logits, {N_GENERATE} tokens after the prompt, n_ctx 512"},
        "cases": cases,
        "greedy": greedy,
    }
    args.out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(cases)} cases; greedy: {greedy['generated_text']!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
