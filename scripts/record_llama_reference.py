"""Record llama.cpp's outputs on the Gemma 3 270M test model as small JSON fixtures.

The native runtime (native/) is checked against these files: its tokenizer must give the same
ids as llama.cpp, and its forward pass the same greedy tokens and close logits. CI never builds
llama.cpp; it only reads the committed fixtures in tests/fixtures/llama_cpp/. Re-run this script
(and commit the changed fixtures) when the model or the llama.cpp reference version changes.

Set up the reference environment once, outside the repository (compiling llama.cpp takes
about 10-15 minutes on 2 cores):

    python3 -m venv /root/.cache/hmbuild/llama-ref-venv
    CMAKE_ARGS="-DGGML_NATIVE=ON" MAKEFLAGS=-j2 \\
        /root/.cache/hmbuild/llama-ref-venv/bin/pip install llama-cpp-python==0.3.36

then, from the repository root:

    /root/.cache/hmbuild/llama-ref-venv/bin/python scripts/record_llama_reference.py

The model path comes from --model, else $HMLLM_TEST_MODEL, else the hmbuild model cache
(`hmbuild fetch-model` puts it there). Output goes to --out (default tests/fixtures/llama_cpp).

Files written (every file has a "generator" object naming llama-cpp-python, ggml and the
llama.cpp commit, and a "model" object with the file name and its SHA-256):
  gemma3_tokenize.json  tokenizer ids for ~50 strings, with and without BOS, special tokens
                        parsed; per-token pieces (hex bytes) for a few id sequences.
  gemma3_greedy.json    greedy continuations (32 tokens), top-10 logits, label log-probs.
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

import llama_cpp

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "tests" / "fixtures" / "llama_cpp"
DEFAULT_MODEL = Path("/root/.cache/hmbuild/models/gemma-3-270m-q4_k_m.gguf")

N_CTX = 512
N_THREADS = 2
N_GENERATE = 32
TOP_K = 10

# Strings chosen to hit each path of an SPM tokenizer with Gemma's vocabulary: whitespace runs
# (Gemma has user-defined tokens for runs of spaces and newlines), byte fallback for rare
# characters, control tokens written in the text, and invalid UTF-8 (given as bytes).
TOKENIZE_TEXTS: list[str | bytes] = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    " leading space",
    "trailing space ",
    "multiple   spaces   between words",
    "   leading three spaces and trailing three   ",
    " ",
    "    ",
    "line one\nline two\n\nline four\n",
    "\n\n\n",
    "tab\tseparated\tvalues\t\t",
    "mixed \t \n whitespace \r\n end",
    "\r\nWindows line endings\r\n",
    "1234567890 3.14159 -42 1,000,000 2024-01-15T10:30:00Z",
    "Hello, world! How's it going? (Fine.) [ok] {yes} <no> a;b:c",
    "def add(a, b):\n    return a + b\n",
    "for (int i = 0; i < n; ++i) { sum += x[i]; }",
    "https://example.com/path/to/page?query=1&b=two#frag",
    "user.name+tag@example.co.uk",
    "ALL CAPS TEXT AND CamelCaseWords and snake_case_words",
    "今天天气很好，我们去公园散步吧。",
    "请帮我总结这段文字的主要内容。",
    "東京は日本の首都です。ひらがなとカタカナ。",
    "안녕하세요, 만나서 반갑습니다.",
    "Hello你好こんにちは안녕",
    "I love pizza 🍕🍕!",
    "Family: 👨‍👩‍👧‍👦 and 🏳️‍🌈 done",
    "🇫🇷🇯🇵🇺🇸",
    "👍🏽 thumbs up with skin tone",
    "Café naïve résumé façade Ångström",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "สวัสดีครับ",
    "",
    "a",
    "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n",
    "<bos>text with bos inside",
    "<unused0> and <mask> and <start_of_image>",
    "<table><tr><td>cell</td></tr></table>",
    "<end_of_turn",
    "<0x41> literal byte token text",
    "𓀀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ᚠᛇᚻ",
    "\u0007 bell and \u001b[31m escape",
    "non\u00a0breaking\u2003em space\u200bzero width",
    'Text: "Set an alarm for 7 am tomorrow"\nIntent (one of: alarm, weather, music):',
    b"invalid \xff\xfe bytes \xc3 end",
    b"truncated emoji \xf0\x9f\x98",
    b"\x80\x80 lone continuations",
]

# id sequences whose pieces are recorded: a byte-fallback emoji, a ZWJ sequence, CJK text,
# control tokens, whitespace tokens and single byte tokens (which are not valid UTF-8 alone).
DETOKENIZE_FROM_TEXT = [
    "I love pizza 🍕🍕!",
    "Family: 👨‍👩‍👧‍👦 and 🏳️‍🌈 done",
    "今天天气很好，我们去公园散步吧。",
    "<start_of_turn>user\nHello<end_of_turn>\n",
    "𓀀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
]

GREEDY_PROMPTS = [
    "In 1969, the first human to walk on the moon was",
    "The capital of France is",
    "中国的首都是",
    "Summarize in one sentence: The city council met on Tuesday to discuss the new park. "
    "After two hours of debate, they voted to approve the budget and start construction "
    "in the spring.\nSummary:",
    'Text: "Set an alarm for 7 am tomorrow"\nIntent (one of: alarm, weather, music):',
    "def fibonacci(n):",
]

INTENT_PROMPT = 'Text: "Set an alarm for 7 am tomorrow"\nIntent (one of: alarm, weather, music):'
INTENT_LABELS = [" alarm", " weather", " music"]


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def generator_info() -> dict:
    lib_dir = Path(llama_cpp.__file__).parent / "lib"
    info = {"llama_cpp_python": llama_cpp.__version__}
    try:
        ggml = ctypes.CDLL(str(lib_dir / "libggml-base.so"))
        # ggml is built from the llama.cpp tree it ships in, so its commit is llama.cpp's.
        for symbol, key in (("ggml_version", "ggml_version"), ("ggml_commit", "llama_cpp_commit")):
            fn = getattr(ggml, symbol)
            fn.restype = ctypes.c_char_p
            info[key] = fn().decode()
    except (OSError, AttributeError):
        pass  # older builds lack these symbols; the package version still pins the source
    info["system_info"] = llama_cpp.llama_print_system_info().decode().strip()
    return info


def piece(model, token: int, special: bool) -> bytes:
    buf = ctypes.create_string_buffer(256)
    n = llama_cpp.llama_token_to_piece(model.vocab, token, buf, len(buf), 0, special)
    if n < 0:
        raise RuntimeError(f"piece of token {token} longer than {len(buf)} bytes")
    return buf.raw[:n]


def as_bytes(text: str | bytes) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8")


def text_field(text: str | bytes) -> str | None:
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError:
            return None  # not representable as a JSON string; text_hex has the bytes
    return text


def top_logits(logits: np.ndarray, k: int = TOP_K) -> list[list]:
    idx = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), round(float(logits[i]), 4)] for i in idx]


def log_softmax_at(logits: np.ndarray, token: int) -> float:
    m = float(np.max(logits))
    lse = m + math.log(float(np.sum(np.exp(logits.astype(np.float64) - m))))
    return float(logits[token]) - lse


def record_tokenize(llm, model_info: dict, gen: dict) -> dict:
    model = llm._model
    cases = []
    for text in TOKENIZE_TEXTS:
        raw = as_bytes(text)
        cases.append(
            {
                "text": text_field(text),
                "text_hex": raw.hex(),
                "ids_bos": model.tokenize(raw, True, True),
                "ids_no_bos": model.tokenize(raw, False, True),
            }
        )
    sequences = [model.tokenize(t.encode(), False, True) for t in DETOKENIZE_FROM_TEXT]
    sequences.append([2, 1, 105, 106, 107, 108, 138, 139, 3, 0])  # control / whitespace tokens
    sequences.append([238 + 0xF0, 238 + 0x9F, 238 + 0x8D, 238 + 0x95])  # U+1F355 as byte tokens
    detok = []
    for ids in sequences:
        detok.append(
            {
                "ids": ids,
                "pieces_hex": [piece(model, i, True).hex() for i in ids],
                "pieces_plain_hex": [piece(model, i, False).hex() for i in ids],
            }
        )
    return {
        "generator": gen,
        "model": model_info,
        "settings": {"parse_special": True, "ids_bos": "add_special=True", "ids_no_bos": "add_special=False"},
        "vocab": {
            "n_vocab": model.n_vocab(),
            "bos": model.token_bos(),
            "eos": model.token_eos(),
            "eot": model.token_eot(),
            "add_bos": bool(model.add_bos_token()),
        },
        "cases": cases,
        "detokenize": detok,
    }


def eval_fresh(llm, tokens: list[int]) -> None:
    llm.reset()
    llm.eval(tokens)


def record_greedy(llm, model_info: dict, gen: dict) -> dict:
    model = llm._model
    runs = []
    for prompt in GREEDY_PROMPTS:
        prompt_ids = model.tokenize(prompt.encode(), True, True)
        eval_fresh(llm, prompt_ids)
        last_prompt_logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        generated, chosen_logits = [], []
        logits = last_prompt_logits
        after_first = None
        for step in range(N_GENERATE):
            tok = int(np.argmax(logits))  # greedy: no sampler, no penalties, nothing filtered
            generated.append(tok)
            chosen_logits.append(round(float(logits[tok]), 4))
            llm.eval([tok])
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
            if step == 0:
                after_first = logits.copy()
        text = b"".join(piece(model, t, False) for t in generated)
        runs.append(
            {
                "prompt": prompt,
                "prompt_ids": prompt_ids,
                "generated_ids": generated,
                "generated_logits": chosen_logits,
                "generated_text": text.decode("utf-8", errors="replace"),
                "generated_text_hex": text.hex(),
                "top10_last_prompt_position": top_logits(last_prompt_logits),
                "top10_first_generated_position": top_logits(after_first),
            }
        )

    prompt_ids = model.tokenize(INTENT_PROMPT.encode(), True, True)
    labels = []
    for label in INTENT_LABELS:
        label_ids = model.tokenize(label.encode(), False, True)
        eval_fresh(llm, prompt_ids + label_ids)
        token_logprobs = []
        for j, tok in enumerate(label_ids):
            pos = len(prompt_ids) - 1 + j  # the position whose logits predict label token j
            token_logprobs.append(log_softmax_at(np.array(llm.scores[pos], dtype=np.float32), tok))
        labels.append(
            {
                "label": label,
                "label_ids": label_ids,
                "token_logprobs": [round(x, 5) for x in token_logprobs],
                "logprob": round(sum(token_logprobs), 5),
            }
        )
    return {
        "generator": gen,
        "model": model_info,
        "settings": {
            "n_ctx": N_CTX,
            "n_threads": N_THREADS,
            "n_batch": N_CTX,
            "sampling": "argmax of the logits (temperature 0 / top_k 1), repeat_penalty 1.0",
            "n_generate": N_GENERATE,
            "prompt_ids": "BOS + prompt, special tokens parsed",
            "generated_text": "pieces with special=False (control tokens render as nothing)",
            "top10": "[token id, logit] sorted by logit, descending",
            "top10_last_prompt_position": "logits that choose generated_ids[0]",
            "top10_first_generated_position": "logits after feeding generated_ids[0]",
        },
        "runs": runs,
        "intent": {"prompt": INTENT_PROMPT, "prompt_ids": prompt_ids, "labels": labels},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    model_path = args.model or Path(os.environ.get("HMLLM_TEST_MODEL", DEFAULT_MODEL))
    if not model_path.is_file():
        print(f"error: model {model_path} not found; run `hmbuild fetch-model` or pass --model",
              file=sys.stderr)
        return 1

    model_info = {"file": model_path.name, "sha256": sha256_of(model_path)}
    gen = generator_info()
    llm = llama_cpp.Llama(
        model_path=str(model_path),
        n_ctx=N_CTX,
        n_batch=N_CTX,
        n_threads=N_THREADS,
        n_threads_batch=N_THREADS,
        logits_all=True,
        seed=0,
        verbose=False,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    outputs = {
        "gemma3_tokenize.json": record_tokenize(llm, model_info, gen),
        "gemma3_greedy.json": record_greedy(llm, model_info, gen),
    }
    for name, data in outputs.items():
        path = args.out / name
        path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path} ({path.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
