"""Record llama.cpp's outputs on the Gemma 3 270M test model as small JSON fixtures.

The native runtime (native/) is checked against these files: its tokenizer must give the same
ids as llama.cpp, and its forward pass the same greedy tokens and close logits. CI never builds
llama.cpp; it only reads the committed fixtures in tests/fixtures/llama_cpp/. Re-run this script
(and commit the changed fixtures) when the model or the llama.cpp reference version changes.

Set up the reference environment once, outside the repository (compiling llama.cpp takes
about 10-15 minutes on 2 cores):

    python3 -m venv /root/.cache/hmbuild/llama-ref-venv
    CMAKE_ARGS="-DGGML_NATIVE=ON" MAKEFLAGS=-j2 \\
        /root/.cache/hmbuild/llama-ref-venv/bin/pip install llama-cpp-python==0.3.36 gguf==0.19.0

For the BPE fixtures, also unpack llama.cpp's test vocabularies (vocab-only GGUF files, no
weights) from the same release's source package:

    /root/.cache/hmbuild/llama-ref-venv/bin/pip download --no-deps --no-binary :all: \\
        llama-cpp-python==0.3.36 -d /root/.cache/hmbuild/llama-sdist
    tar xzf /root/.cache/hmbuild/llama-sdist/llama_cpp_python-0.3.36.tar.gz \\
        -C /root/.cache/hmbuild/llama-sdist --wildcards '*/vendor/llama.cpp/models/ggml-vocab-*'

then, from the repository root:

    /root/.cache/hmbuild/llama-ref-venv/bin/python scripts/record_llama_reference.py

The model path comes from --model, else $HMLLM_TEST_MODEL, else the hmbuild model cache
(`hmbuild fetch-model` puts it there). The vocabularies come from --vocab-dir (default: the
unpacked source package above; skipped with a note when absent). Output goes to --out
(default tests/fixtures/llama_cpp).

Files written (every file has a "generator" object naming llama-cpp-python, ggml and the
llama.cpp commit, and a "model" object with the file name and its SHA-256):
  gemma3_tokenize.json  tokenizer ids for ~50 strings, with and without BOS, special tokens
                        parsed; per-token pieces (hex bytes) for a few id sequences.
  gemma3_greedy.json    greedy continuations (32 tokens), top-10 logits, label log-probs.
  bpe_reduced_tokenize.json
                        a reduced Qwen2 byte-level BPE vocabulary (byte alphabet, the first
                        merges, control tokens: small enough to commit, Apache-2.0 like Qwen2)
                        and llama.cpp's ids for every string under four pre-tokenizers
                        (qwen2, llama-bpe, gpt-2, default), so CI tests BPE with no download.
  llama_vocab_tokenize.json
                        ids from llama.cpp's full test vocabularies (qwen2, llama-bpe, gpt-2,
                        llama-spm), each with its file's SHA-256; the native test compares when
                        HMLLM_VOCAB_DIR points at those files.
  tiny_families.json    for each family of tests/tiny_models.py FAMILIES (llama, qwen2, qwen3,
                        gemma3, gemma3 with Gemma 3 4B's linear RoPE scaling, llama with
                        Llama 3 rope_freqs), in F32 and Q4_0: the tiny
                        random-weight model's config, its file's SHA-256 (the test rebuilds the
                        file and checks it), llama.cpp's 32 greedy tokens and the top-10 logits
                        of every step. Needs no download; `--tiny-families-only` records just it.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import hashlib
import importlib.metadata
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

import llama_cpp

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]  # tiny_models and the hmbuild it imports

from gguf import GGMLQuantizationType  # noqa: E402
from tiny_models import FAMILIES, family_config, type_name, write_tiny_model  # noqa: E402
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


DEFAULT_VOCAB_DIR = Path(
    "/root/.cache/hmbuild/llama-sdist/llama_cpp_python-0.3.36/vendor/llama.cpp/models"
)
FULL_VOCABS = ["qwen2", "llama-bpe", "gpt-2", "llama-spm"]
REDUCED_SOURCE = "qwen2"
REDUCED_MERGES = 1500
REDUCED_PRES = ["qwen2", "llama-bpe", "gpt-2", "default"]


def vocab_test_strings(vocab_dir: Path) -> list[str | bytes]:
    """Our strings plus llama.cpp's own tokenizer test inputs (ggml-vocab-*.gguf.inp)."""
    texts = list(TOKENIZE_TEXTS)
    inp = vocab_dir / f"ggml-vocab-{REDUCED_SOURCE}.gguf.inp"
    if inp.is_file():
        raw = inp.read_text(encoding="utf-8")
        for t in raw.split("\n__ggml_vocab_test__\n"):
            if t not in texts:
                texts.append(t)
    return texts


class VocabOnly:
    """A vocabulary loaded through llama.cpp's C API alone (Llama(vocab_only=True) would still
    create a context, which crashes on a file without weights)."""

    def __init__(self, path: Path):
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self.model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
        if not self.model:
            raise RuntimeError(f"llama.cpp cannot load {path}")
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)

    def tokenize(self, text: bytes, add_special: bool, parse_special: bool) -> list[int]:
        n = len(text) + 8
        buf = (llama_cpp.llama_token * n)()
        got = llama_cpp.llama_tokenize(self.vocab, text, len(text), buf, n, add_special, parse_special)
        if got < 0:
            raise RuntimeError(f"tokenize needs {-got} tokens")
        return list(buf[:got])

    def add_bos_token(self) -> bool:
        return bool(llama_cpp.llama_vocab_get_add_bos(self.vocab))

    def token_bos(self) -> int:
        return int(llama_cpp.llama_vocab_bos(self.vocab))

    def close(self) -> None:
        llama_cpp.llama_model_free(self.model)


def vocab_only(path: Path) -> VocabOnly:
    return VocabOnly(path)


def record_full_vocabs(vocab_dir: Path, texts: list, gen: dict) -> dict:
    vocabs = []
    for name in FULL_VOCABS:
        path = vocab_dir / f"ggml-vocab-{name}.gguf"
        model = vocab_only(path)
        vocabs.append(
            {
                "file": path.name,
                "sha256": sha256_of(path),
                "add_bos": bool(model.add_bos_token()),
                "bos": model.token_bos(),
                "cases": [
                    {"text_hex": as_bytes(t).hex(), "ids_no_bos": model.tokenize(as_bytes(t), False, True)}
                    for t in texts
                ],
            }
        )
        model.close()
    return {
        "generator": gen,
        "settings": {"parse_special": True, "ids_no_bos": "add_special=False"},
        "vocabs": vocabs,
    }


def reduce_vocab(path: Path) -> dict:
    """The byte alphabet, the first REDUCED_MERGES applicable merges and the control tokens
    (plus three user-defined ones) of a byte-level BPE vocabulary, renumbered in file order."""
    import gguf

    r = gguf.GGUFReader(str(path))

    def strings(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    tokens = strings("tokenizer.ggml.tokens")
    tf = r.fields["tokenizer.ggml.token_type"]
    types = [int(tf.parts[i][0]) for i in tf.data]
    merges = strings("tokenizer.ggml.merges")
    index = {t: i for i, t in enumerate(tokens)}

    # GPT-2's byte alphabet, as in llama.cpp's unicode_byte_to_utf8_map.
    printable = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    alphabet, n = {}, 0
    for b in range(256):
        if b in printable:
            alphabet[b] = chr(b)
        else:
            alphabet[b] = chr(256 + n)
            n += 1
    keep = {index[c] for c in alphabet.values()}
    kept_merges = []
    for m in merges:
        left, _, right = m.partition(" ")
        merged = left + right
        if index.get(left) in keep and index.get(right) in keep and merged in index:
            keep.add(index[merged])
            kept_merges.append(m)
            if len(kept_merges) == REDUCED_MERGES:
                break
    user_defined = [i for i, t in enumerate(types) if t == 4][:3]
    keep.update(i for i, t in enumerate(types) if t == 3)
    keep.update(user_defined)
    order = sorted(keep)
    renumber = {old: new for new, old in enumerate(order)}

    def key_u32(key):
        f = r.fields.get(key)
        return int(f.parts[f.data[0]][0]) if f is not None else None

    bos, eos = key_u32("tokenizer.ggml.bos_token_id"), key_u32("tokenizer.ggml.eos_token_id")
    return {
        "source": path.name,
        "source_sha256": sha256_of(path),
        "tokens": [tokens[i] for i in order],
        "token_type": [types[i] for i in order],
        "merges": kept_merges,
        "bos": renumber.get(bos, -1) if bos is not None else -1,
        "eos": renumber.get(eos, -1) if eos is not None else -1,
    }


def write_reduced_gguf(vocab: dict, pre: str, path: Path) -> None:
    import gguf

    w = gguf.GGUFWriter(str(path), "qwen2")
    # Hyperparameters llama.cpp insists on before it will load even a vocabulary-only file.
    w.add_block_count(1)
    w.add_context_length(512)
    w.add_embedding_length(64)
    w.add_feed_forward_length(128)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(vocab["tokens"])
    w.add_token_types(vocab["token_type"])
    w.add_token_merges(vocab["merges"])
    if vocab["bos"] >= 0:
        w.add_bos_token_id(vocab["bos"])
    if vocab["eos"] >= 0:
        w.add_eos_token_id(vocab["eos"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def record_reduced_bpe(vocab_dir: Path, texts: list, gen: dict, tmp: Path) -> dict:
    vocab = reduce_vocab(vocab_dir / f"ggml-vocab-{REDUCED_SOURCE}.gguf")
    runs = []
    for pre in REDUCED_PRES:
        path = tmp / f"reduced-{pre}.gguf"
        write_reduced_gguf(vocab, pre, path)
        model = vocab_only(path)
        runs.append(
            {
                "pre": pre,
                "add_bos": bool(model.add_bos_token()),
                "cases": [model.tokenize(as_bytes(t), False, True) for t in texts],
            }
        )
        model.close()
        path.unlink()
    return {
        "generator": gen,
        "settings": {
            "parse_special": True,
            "cases": "ids with add_special=False, one list per entry of texts_hex",
            "gguf": "tokenizer.ggml.model gpt2, .pre from each run, .tokens, .token_type, "
                    ".merges, .bos_token_id/.eos_token_id from vocab (no add_bos_token key)",
        },
        "vocab": vocab,
        "texts_hex": [as_bytes(t).hex() for t in texts],
        "runs": runs,
    }


def dump_compact(data) -> str:
    """JSON with one top-level or list entry per line: readable diffs, no per-number lines."""

    def enc(v, depth):
        if isinstance(v, dict) and depth < 2:
            inner = ",\n".join(
                " " * (depth + 1) + json.dumps(k, ensure_ascii=False) + ": " + enc(x, depth + 1)
                for k, x in v.items()
            )
            return "{\n" + inner + "\n" + " " * depth + "}"
        if isinstance(v, list) and depth < 3 and v and isinstance(v[0], (dict, list)):
            inner = ",\n".join(" " * (depth + 1) + enc(x, depth + 1) for x in v)
            return "[\n" + inner + "\n" + " " * depth + "]"
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))

    return enc(data, 0) + "\n"


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


TINY_PROMPT = [2, 270, 265, 299, 280, 261, 262, 263, 290]  # BOS and 8 words of the tiny vocabulary
TINY_TYPES = [GGMLQuantizationType.F32, GGMLQuantizationType.Q4_0]
# A step whose best two logits are closer than this is decided by summation order, not by the
# model: the recorder takes the first seed whose greedy path has no such step, so the test's
# top-1 comparison checks the architecture rather than rounding.
TINY_MIN_MARGIN = 0.02
TINY_SEEDS = range(50)


def tiny_greedy(path: Path) -> tuple[list[int], list[list], float]:
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=128, n_batch=128, n_threads=N_THREADS,
                          n_threads_batch=N_THREADS, logits_all=True, seed=0, verbose=False)
    eval_fresh(llm, TINY_PROMPT)
    generated, steps, margin = [], [], math.inf
    for _ in range(N_GENERATE):
        logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        top = np.sort(logits)[::-1]
        margin = min(margin, float(top[0] - top[1]))
        tok = int(np.argmax(logits))
        generated.append(tok)
        steps.append(top_logits(logits))
        llm.eval([tok])
    llm.close()
    return generated, steps, margin


def record_tiny_families(gen: dict, tmp: Path) -> dict:
    models = []
    for family in FAMILIES:
        for qtype in TINY_TYPES:
            for seed in TINY_SEEDS:
                cfg = family_config(family, qtype, seed)
                path = tmp / f"tiny-{family}-{type_name(qtype)}-{seed}.gguf"
                write_tiny_model(path, cfg)
                generated, steps, margin = tiny_greedy(path)
                if margin >= TINY_MIN_MARGIN:
                    break
            else:
                raise SystemExit(f"no seed in {TINY_SEEDS} gives {family} {type_name(qtype)} a path without near-ties")
            config = dataclasses.asdict(cfg)
            config["weight_type"] = type_name(qtype)
            models.append({
                "family": family,
                "config": config,
                "file": path.name,
                "sha256": sha256_of(path),
                "min_top2_margin": round(margin, 4),
                "prompt_ids": TINY_PROMPT,
                "generated_ids": generated,
                "top10": steps,
            })
            print(f"{family} {type_name(qtype)}: seed {seed}, smallest top-2 margin {margin:.3f}", file=sys.stderr)
    return {
        "generator": gen,
        "settings": {
            "n_ctx": 128,
            "n_threads": N_THREADS,
            "kv_cache": "f16 (llama.cpp's default)",
            "sampling": "argmax of the logits, fed back one token at a time",
            "n_generate": N_GENERATE,
            "top10": "per step: [token id, logit] of the logits that chose generated_ids[step], descending",
            "seed": f"the first of {TINY_SEEDS.start}..{TINY_SEEDS.stop - 1} whose path has no top-2 margin "
                    f"under {TINY_MIN_MARGIN}",
            "models": "tests/tiny_models.py write_tiny_model(TinyConfig(**config)), gguf "
                      f"{importlib.metadata.version('gguf')}",
        },
        "models": models,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--vocab-dir", type=Path, default=DEFAULT_VOCAB_DIR)
    ap.add_argument("--tiny-families-only", action="store_true",
                    help="record only tiny_families.json (no Gemma model, no vocabularies)")
    args = ap.parse_args()
    gen = generator_info()
    if args.tiny_families_only:
        args.out.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            data = record_tiny_families(gen, Path(tmp))
        path = args.out / "tiny_families.json"
        path.write_text(dump_compact(data), encoding="utf-8")
        print(f"wrote {path} ({path.stat().st_size} bytes)", file=sys.stderr)
        return 0
    model_path = args.model or Path(os.environ.get("HMLLM_TEST_MODEL", DEFAULT_MODEL))
    if not model_path.is_file():
        print(f"error: model {model_path} not found; run `hmbuild fetch-model` or pass --model",
              file=sys.stderr)
        return 1

    model_info = {"file": model_path.name, "sha256": sha256_of(model_path)}
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
    if (args.vocab_dir / f"ggml-vocab-{REDUCED_SOURCE}.gguf").is_file():
        texts = vocab_test_strings(args.vocab_dir)
        outputs["bpe_reduced_tokenize.json"] = record_reduced_bpe(args.vocab_dir, texts, gen, args.out)
        outputs["llama_vocab_tokenize.json"] = record_full_vocabs(args.vocab_dir, texts, gen)
    else:
        print(f"note: no llama.cpp test vocabularies in {args.vocab_dir}; BPE fixtures not "
              "re-recorded (see the docstring)", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        outputs["tiny_families.json"] = record_tiny_families(gen, Path(tmp))
    for name, data in outputs.items():
        path = args.out / name
        path.write_text(dump_compact(data), encoding="utf-8")
        print(f"wrote {path} ({path.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
