#!/usr/bin/env python3
"""Builds and runs the libFuzzer targets of the native runtime (native/fuzz/).

    scripts/fuzz.py                      every target for 60 s, then every regression input
    scripts/fuzz.py --seconds 600 gguf   one target, longer
    scripts/fuzz.py --seconds 0          only replay the seeds and regression inputs
    scripts/fuzz.py --json               one JSON object on stdout (progress goes to stderr)
    scripts/fuzz.py --write-seeds        regenerate native/fuzz/corpus/ (needs the venv's gguf)

Targets: gguf (GgufFile::open_memory on arbitrary bytes, then metadata, tokenizer and load_model
on what parses), tokenizer (encode arbitrary bytes, decode arbitrary ids) and text_input
(clean_input_text). Each is compiled with clang++-19 -fsanitize=fuzzer,address,undefined
-fno-sanitize-recover=undefined straight from the runtime sources it needs, into
~/.cache/hmbuild/fuzz (objects are cached by the hash of source, headers and flags). The build is a
few compiler calls rather than a CMake project: a fuzz build needs its own compiler and flags for
every file, which a second CMake configuration of native/ would only restate.

The fuzzer writes new inputs to a working corpus in the cache, reading the repository's seeds
(native/fuzz/corpus/<target>/) without changing them. A crash, a hang (> 10 s per input) or an
out-of-memory input fails the run (exit status 1); the input is saved under
~/.cache/hmbuild/fuzz/crashes/<target>/ and should be fixed and then kept as a regression input in
native/fuzz/regressions/<target>/, which every run replays.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NATIVE = REPO / "native"
FUZZ_DIR = NATIVE / "fuzz"
CORPUS_DIR = FUZZ_DIR / "corpus"
REGRESSIONS_DIR = FUZZ_DIR / "regressions"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hmbuild" / "fuzz"
CXX = os.environ.get("HMBUILD_FUZZ_CXX", "clang++-19")

SANITIZERS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"]
COMMON_FLAGS = ["-std=c++17", "-O1", "-g", "-fno-omit-frame-pointer", "-ffp-contract=off",
                "-pthread", f"-I{NATIVE / 'include'}"]
KERNEL_SOURCES = ["src/kernels/cpu_features.cpp", "src/kernels/dispatch.cpp",
                  "src/kernels/kernels_scalar.cpp"]
if platform.machine() in ("x86_64", "AMD64", "amd64"):
    KERNEL_SOURCES.append("src/kernels/kernels_avx2.cpp")
# The GGUF reader looks types up in the one GGUF type table, whose entries point into the kernels.
READER_SOURCES = ["src/gguf_reader.cpp", "src/mapped_file.cpp", "src/ggml_types.cpp",
                  *KERNEL_SOURCES]
# Per-file flags as in native/src/kernels/kernels.cmake.
FILE_FLAGS = {"src/kernels/kernels_avx2.cpp": ["-mavx2", "-mfma", "-mf16c"]}


@dataclass
class Target:
    name: str
    sources: list[str]  # runtime sources, relative to native/
    max_len: int        # libFuzzer -max_len: large enough for the seeds, small enough to run fast


TARGETS = {
    "gguf": Target("gguf", [*READER_SOURCES, "src/tokenizer.cpp", "src/model.cpp"],
                   32768),
    "tokenizer": Target("tokenizer", [*READER_SOURCES, "src/tokenizer.cpp"], 2048),
    "text_input": Target("text_input", ["src/text_input.cpp"], 4096),
    "chat_format": Target("chat_format", [*READER_SOURCES, "src/tokenizer.cpp", "src/json.cpp", "src/chat_format.cpp"],
                          4096),
}


class FuzzError(Exception):
    """A problem the user must fix first (missing compiler, failed build); one sentence."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---- toolchain and build ------------------------------------------------------------------------

def toolchain_problem(cache: Path = DEFAULT_CACHE) -> str | None:
    """None when CXX can build and link a libFuzzer binary here, else why not (one sentence)."""
    if shutil.which(CXX) is None:
        return (f"{CXX} is not installed (Debian: apt-get install clang-19 libclang-rt-19-dev, "
                "or run bootstrap.sh)")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        src = Path(tmp) / "probe.cpp"
        src.write_text('#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput'
                       '(const uint8_t*, size_t) { return 0; }\n')
        r = subprocess.run([CXX, "-fsanitize=fuzzer,address,undefined", str(src), "-o",
                            str(Path(tmp) / "probe")], capture_output=True, text=True)
        if r.returncode != 0:
            return (f"{CXX} cannot link a libFuzzer binary (is libclang-rt-19-dev installed?): "
                    + (r.stderr.strip().splitlines() or ["no output"])[-1])
    return None


def _headers_digest() -> str:
    h = hashlib.sha256()
    for p in sorted([*(NATIVE / "include").rglob("*.h"), *(NATIVE / "src").rglob("*.h"),
                     *FUZZ_DIR.glob("*.h"), *(NATIVE / "tests" / "support").glob("*.h")]):
        h.update(p.relative_to(NATIVE).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def _compile(src: Path, flags: list[str], obj_dir: Path, headers: str) -> Path:
    key = hashlib.sha256(src.read_bytes() + headers.encode() + " ".join(flags).encode()).hexdigest()
    obj = obj_dir / f"{src.stem}-{key[:16]}.o"
    if obj.exists():
        return obj
    tmp = obj.with_suffix(f".tmp{os.getpid()}")
    r = subprocess.run([CXX, *flags, "-c", str(src), "-o", str(tmp)], capture_output=True, text=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise FuzzError(f"compiling {src.relative_to(REPO)} failed:\n{r.stderr.strip()}")
    tmp.replace(obj)
    return obj


def build(targets: list[Target], cache: Path, jobs: int) -> dict[str, Path]:
    """Compiles (cached) and links each target; returns target name -> binary."""
    problem = toolchain_problem(cache)
    if problem:
        raise FuzzError(problem)
    obj_dir = cache / "obj"
    bin_dir = cache / "bin"
    obj_dir.mkdir(parents=True, exist_ok=True)
    bin_dir.mkdir(parents=True, exist_ok=True)
    headers = _headers_digest()
    # Runtime files get coverage instrumentation without libFuzzer's main(); the harness gets both.
    lib_flags = {s: [*COMMON_FLAGS, *SANITIZERS, "-fsanitize=fuzzer-no-link", *FILE_FLAGS.get(s, [])]
                 for t in targets for s in t.sources}
    # The harnesses share the GGUF-writing and metadata-reading headers of the unit tests
    # (native/tests/support/).
    harness_flags = [*COMMON_FLAGS, f"-I{NATIVE / 'tests'}", *SANITIZERS, "-fsanitize=fuzzer"]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        lib_objs = {s: pool.submit(_compile, NATIVE / s, f, obj_dir, headers)
                    for s, f in lib_flags.items()}
        harness_objs = {t.name: pool.submit(_compile, FUZZ_DIR / f"fuzz_{t.name}.cpp", harness_flags,
                                            obj_dir, headers) for t in targets}
        objs = {s: f.result() for s, f in lib_objs.items()}
        harness = {n: f.result() for n, f in harness_objs.items()}
    binaries = {}
    for t in targets:
        out = bin_dir / f"fuzz_{t.name}"
        cmd = [CXX, *SANITIZERS, "-fsanitize=fuzzer", "-pthread", str(harness[t.name]),
               *(str(objs[s]) for s in t.sources), "-o", str(out)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise FuzzError(f"linking fuzz_{t.name} failed:\n{r.stderr.strip()}")
        binaries[t.name] = out
    log(f"fuzz: built {', '.join(binaries)} in {time.monotonic() - started:.1f} s ({bin_dir})")
    return binaries


# ---- running --------------------------------------------------------------------------------------

@dataclass
class Result:
    target: str
    seconds: float = 0.0
    executions: int = 0
    coverage: int = 0       # libFuzzer "cov": instrumented edges reached
    features: int = 0       # libFuzzer "ft"
    corpus_size: int = 0    # inputs in the working corpus at the end
    replayed: int = 0       # seed and regression inputs run once each
    crash: str | None = None        # what went wrong (sanitizer / property / timeout / oom)
    crash_input: str | None = None  # where the input that caused it was saved
    log_tail: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.crash is None


_STAT = re.compile(r"stat::(\w+):\s*(\d+)")
_PROGRESS = re.compile(r"cov: (\d+) ft: (\d+)(?: corp: (\d+))?")
_ARTIFACT = re.compile(r"Test unit written to (\S+)")
_SUMMARY = re.compile(r"^.*(?:ERROR: |runtime error: |fuzz property violated: |SUMMARY: ).*$",
                      re.MULTILINE)


def _describe_failure(output: str) -> str:
    found = _SUMMARY.findall(output)
    # Prefer the precise line (sanitizer report / property) over libFuzzer's generic one.
    for line in found:
        if "libFuzzer: deadly signal" not in line:
            return line.strip()
    return found[0].strip() if found else "the fuzzer exited with an error"


def _inputs(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))


def replay(binary: Path, target: Target, result: Result, cache: Path) -> None:
    """Runs every seed and regression input once (libFuzzer's file arguments)."""
    files = [*_inputs(CORPUS_DIR / target.name), *_inputs(REGRESSIONS_DIR / target.name)]
    if not files:
        return
    r = subprocess.run([str(binary), "-timeout=10", "-rss_limit_mb=2048", *map(str, files)],
                       capture_output=True, text=True, errors="replace")
    result.replayed = len(files)
    if r.returncode != 0:
        result.crash = _describe_failure(r.stderr)
        running = re.findall(r"Running: (\S+)", r.stderr)
        result.crash_input = running[-1] if running else None
        result.log_tail = r.stderr.strip().splitlines()[-30:]


def fuzz(binary: Path, target: Target, seconds: int, result: Result, cache: Path) -> None:
    work = cache / "work" / target.name
    crashes = cache / "crashes" / target.name
    work.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    seeds = [d for d in (CORPUS_DIR / target.name, REGRESSIONS_DIR / target.name) if d.is_dir()]
    # New inputs go to the first directory only: the repository's seeds are read, never written.
    cmd = [str(binary), f"-max_total_time={seconds}", f"-max_len={target.max_len}", "-timeout=10",
           "-rss_limit_mb=2048", "-print_final_stats=1", f"-artifact_prefix={crashes}/",
           str(work), *map(str, seeds)]
    started = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    result.seconds = round(time.monotonic() - started, 1)
    out = r.stderr
    stats = {k: int(v) for k, v in _STAT.findall(out)}
    result.executions = stats.get("number_of_executed_units", 0)
    progress = _PROGRESS.findall(out)
    if progress:
        cov, ft, corp = progress[-1]
        result.coverage, result.features = int(cov), int(ft)
        result.corpus_size = int(corp) if corp else 0
    if r.returncode != 0:
        result.crash = _describe_failure(out)
        artifact = _ARTIFACT.findall(out)
        result.crash_input = artifact[-1] if artifact else None
        result.log_tail = out.strip().splitlines()[-40:]


def run(names: list[str], seconds: int, cache: Path, jobs: int) -> list[Result]:
    targets = [TARGETS[n] for n in names]
    binaries = build(targets, cache, jobs)
    results = []
    for t in targets:
        res = Result(t.name)
        replay(binaries[t.name], t, res, cache)
        if res.ok and seconds > 0:
            log(f"fuzz: {t.name} for {seconds} s ...")
            fuzz(binaries[t.name], t, seconds, res, cache)
        status = "ok" if res.ok else f"CRASH: {res.crash}"
        log(f"fuzz: {t.name}: {res.executions} executions, cov {res.coverage}, ft {res.features}, "
            f"corpus {res.corpus_size}, {res.replayed} seed/regression inputs replayed; {status}")
        if not res.ok:
            for line in res.log_tail:
                log(f"    {line}")
            if res.crash_input:
                log(f"fuzz: the input is saved at {res.crash_input}; once fixed, keep it in "
                    f"{(REGRESSIONS_DIR / t.name).relative_to(REPO)}/")
        results.append(res)
    return results


# ---- seed corpus ----------------------------------------------------------------------------------

TEXT_SEEDS = {
    "ascii": b"Summarise this note: buy milk, call Anna at 5.\n",
    "cjk_emoji": "会议改到明天下午三点 🍕👨‍👩‍👧 naïve café".encode(),
    "combining": "e\u0301 a\u0308 \u0915\u094d\u0937 \U0001F44D\U0001F3FD".encode(),
    "controls": b"a\x00b\x01\x1b[31mred\x1b[0m\x7f\tc\r\n\xc2\x85\xc2\x9f",
    "invalid_utf8": b"\xff\xfe\xc0\xaf\xe0\x80\xaf\xed\xa0\x80\xf4\x90\x80\x80\xf0\x9f\x8d",
    "truncated": b"ok \xe4\xbd",
    "noncharacters": "\ufeff\ufffe\uffff\U0010ffff\u2028\u2029".encode(),
    "special_tokens": b"<start_of_turn>user\nhi<end_of_turn>\n<|im_start|><|im_end|><ctl><ud><s></s>",
}


def _bpe_seed_gguf(path: Path, pre: str) -> None:
    import gguf  # noqa: PLC0415 (only --write-seeds needs it)
    w = gguf.GGUFWriter(str(path), "qwen2")
    tokens = [chr(c) for c in range(33, 127)] + ["Ġ", "he", "ll", "hello", "Ġw", "Ġworld", "<|im_end|>"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types([1] * (len(tokens) - 1) + [3])
    w.add_token_merges(["h e", "l l", "he ll", "hell o", "Ġ w"])
    w.add_eos_token_id(len(tokens) - 1)
    w.add_uint8("test.u8", 200)
    w.add_int16("test.i16", -3)
    w.add_float64("test.f64", 0.5)
    w.add_array("test.bools", [True, False])
    w.add_key_value("test.i64s", [-1, 2**40], gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT64)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_seeds() -> None:
    """Writes the seed corpus: tiny valid models (tests/tiny_models.py) and text edge cases."""
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(REPO / "tests"))
    from gguf import GGMLQuantizationType as Q  # noqa: PLC0415
    from tiny_models import HM_Q4_G32, TinyConfig, write_tiny_model  # noqa: PLC0415

    # No .gguf suffix: .gitignore keeps model files out of the repository, these few-KB seeds
    # belong in it.
    gguf_dir = CORPUS_DIR / "gguf"
    gguf_dir.mkdir(parents=True, exist_ok=True)
    small = dict(n_layers=1, d_model=32, n_heads=2, n_kv_heads=1, head_dim=16, d_ff=32, n_vocab=264)
    for arch, qtype, name in [("llama", Q.Q4_0, "llama_q4_0"), ("qwen2", Q.Q8_0, "qwen2_q8_0"),
                              ("gemma3", HM_Q4_G32, "gemma3_hm_q4_g32")]:
        write_tiny_model(gguf_dir / name, TinyConfig(arch=arch, weight_type=qtype, **small))
    _bpe_seed_gguf(gguf_dir / "bpe_vocab_qwen2", "qwen2")

    text_dir = CORPUS_DIR / "text_input"
    tok_dir = CORPUS_DIR / "tokenizer"
    text_dir.mkdir(parents=True, exist_ok=True)
    tok_dir.mkdir(parents=True, exist_ok=True)
    for name, data in TEXT_SEEDS.items():
        (text_dir / name).write_bytes(data)
        # The tokenizer target's first byte picks the vocabulary (6 of them) and the BOS flag.
        for selector in range(12) if name in ("ascii", "special_tokens") else (0, 2, 4):
            (tok_dir / f"{name}_{selector}").write_bytes(bytes([selector]) + data)
    for p in sorted(CORPUS_DIR.rglob("*")):
        if p.is_file():
            log(f"fuzz: seed {p.relative_to(REPO)} ({p.stat().st_size} bytes)")


# ---- command line ---------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", choices=[[], *TARGETS], metavar="TARGET",
                    help=f"targets to run (default all: {', '.join(TARGETS)})")
    ap.add_argument("--seconds", type=int, default=60, help="fuzzing time per target (0: replay only)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="parallel compiler calls")
    ap.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ap.add_argument("--write-seeds", action="store_true", help="regenerate native/fuzz/corpus and exit")
    args = ap.parse_args(argv)
    if args.write_seeds:
        write_seeds()
        return 0
    names = [n for n in (args.targets or TARGETS) if n]
    try:
        results = run(names, args.seconds, args.cache_dir, args.jobs)
    except FuzzError as e:
        if args.json:
            print(json.dumps({"ok": False, "error": str(e), "targets": []}))
        log(f"fuzz: error: {e}")
        return 2
    ok = all(r.ok for r in results)
    if args.json:
        print(json.dumps({"ok": ok, "targets": [
            {k: v for k, v in vars(r).items() if k != "log_tail"} | {"ok": r.ok} for r in results]}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
