"""`hmbuild bench --count`: aarch64 instructions and bytes per prefill token and per decode token,
counted under qemu (hmbuild.build.insn_count), for hmllm and, side by side, for llama.cpp.

Each engine runs three times on the same token ids with one thread, greedy:
  A  the first prompt token alone, 1 token out     (load + a one-token step)
  B  the whole prompt (P tokens), 1 token out       (load + prefill)
  C  the whole prompt, 1 + G tokens out             (load + prefill + G decode steps)
prefill per token = (B - A) / (P - 1), decode per token = (C - B) / G, for the totals and for every
function, so loading, tokenizer set-up and the weight repack at load cancel out and both engines are
measured the same way. Counts are deterministic (one guest thread): the same binary, model, CPU and
tokens give the same figures, which is what lets CI guard them (`--baseline`).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hmbuild.build.builder import BuildResult
from hmbuild.build.insn_count import Counts, FunctionCounts, counted_run
from hmbuild.errors import HmbuildError
from hmbuild.targets.target import Target

COUNT_PROMPT_TOKENS = 64
COUNT_GEN_TOKENS = 16
TOP_FUNCTIONS = 15
BASELINE_TOLERANCE = 0.02  # a change may raise the counted instructions per token by at most 2%

# Any fixed English text; cycled after BOS up to the prompt length (as hmllm_bench builds its prompt).
PROMPT_TEXT = ("The old lighthouse keeper climbed the spiral stairs every evening, long after the ships had stopped "
               "needing his lamp. He polished the brass, wound the clockwork, and wrote in his log what the sea had "
               "done that day.")


@dataclass
class Phase:
    """One phase's counts over `tokens` tokens (already differenced)."""
    tokens: int
    functions: dict[str, FunctionCounts]

    def per_token(self) -> dict:
        t = FunctionCounts()
        for c in self.functions.values():
            t = t + c
        return {"instructions": t.instructions / self.tokens, "bytes_loaded": t.loaded / self.tokens,
                "bytes_stored": t.stored / self.tokens}

    def top(self, n: int = TOP_FUNCTIONS) -> list[dict]:
        total = sum(c.instructions for c in self.functions.values()) or 1
        rows = sorted(self.functions.items(), key=lambda kv: -kv[1].instructions)[:n]
        return [{"function": name, "instructions": c.instructions / self.tokens,
                 "bytes_loaded": c.loaded / self.tokens, "share": c.instructions / total} for name, c in rows]


@dataclass
class EngineCount:
    engine: str  # "hmllm" or "llama.cpp"
    prefill: Phase
    decode: Phase
    tokens: list[int] = field(default_factory=list)  # the C run's generated ids
    kernels: str | None = None

    def to_json(self) -> dict:
        return {"engine": self.engine, **({"kernels": self.kernels} if self.kernels else {}),
                "prefill": {"tokens": self.prefill.tokens, **self.prefill.per_token(), "top": self.prefill.top()},
                "decode": {"tokens": self.decode.tokens, **self.decode.per_token(), "top": self.decode.top()},
                "generated": self.tokens}


def _diff(b: Counts, a: Counts) -> dict[str, FunctionCounts]:
    out = {}
    for name in set(a.functions) | set(b.functions):
        d = b.functions.get(name, FunctionCounts()) - a.functions.get(name, FunctionCounts())
        if d.instructions or d.loaded or d.stored:
            out[name] = d
    return out


def _three_runs(run: Callable[[list[int], int], tuple[Counts, list[int]]], prompt: list[int], gen: int,
                progress: Callable[[str], None], engine: str) -> tuple[Phase, Phase, list[int]]:
    progress(f"{engine}: counting run 1/3 (1 prompt token)")
    a, _ = run(prompt[:1], 1)
    progress(f"{engine}: counting run 2/3 ({len(prompt)} prompt tokens)")
    b, _ = run(prompt, 1)
    progress(f"{engine}: counting run 3/3 ({len(prompt)} prompt tokens + {gen} decode steps)")
    c, out = run(prompt, 1 + gen)
    if len(out) != 1 + gen:
        raise HmbuildError(f"{engine} generated {len(out)} tokens instead of {1 + gen} (it ended its answer early), so "
                           "decode steps cannot be counted; pass another --model or fewer --gen-tokens.")
    return Phase(len(prompt) - 1, _diff(b, a)), Phase(gen, _diff(c, b)), out


def qemu_runner(target: Target, cpu: str | None) -> tuple[str, ...]:
    """The target's qemu command with the CPU model (-cpu), e.g. (qemu-aarch64, -cpu, cortex-a76, -L, sysroot)."""
    if not target.emulated:
        raise HmbuildError(f"--count runs aarch64 code under qemu-aarch64; {target.name} runs natively, so use "
                           "--target linux-arm64 or ohos-arm64.")
    return (target.runner[0], *(("-cpu", cpu) if cpu else ()), *target.runner[1:])


def hmllm_tool(build: BuildResult) -> Path:
    tool = build.build_dir / "hmllm" / "hmllm_run"
    if not tool.is_file():
        raise HmbuildError(f"{tool} was not built; rebuild the project with `hmbuild build`.")
    return tool


def prompt_ids(runner: tuple[str, ...], tool: Path, model: Path, n: int) -> list[int]:
    """BOS and the ids of PROMPT_TEXT, cycled to n tokens (tokenized by hmllm_run on the target)."""
    proc = subprocess.run([*runner, str(tool), "--model", str(model), "--prompt", PROMPT_TEXT, "--max-tokens", "1",
                           "--ctx", "512", "--json"], capture_output=True, text=True, errors="replace")
    try:
        ids = json.loads(proc.stdout.strip().splitlines()[-1])["prompt_tokens"]
    except (IndexError, KeyError, json.JSONDecodeError):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise HmbuildError(f"Tokenizing the counting prompt failed: {last.removeprefix('hmllm_run: ').rstrip('.')}.") from None
    bos, text = (ids[:1], ids[1:]) if len(ids) > 1 else ([], ids)
    out = list(bos)
    while len(out) < n:
        out.extend(text)
    return out[:n]


def count_hmllm(target: Target, build: BuildResult, model: Path, cpu: str | None, prompt: list[int], gen: int,
                progress: Callable[[str], None]) -> EngineCount:
    runner, tool = qemu_runner(target, cpu), hmllm_tool(build)
    kernels: list[str] = []

    def run(ids: list[int], n: int) -> tuple[Counts, list[int]]:
        argv = [str(tool), "--model", str(model), "--tokens", ",".join(map(str, ids)), "--max-tokens", str(n),
                "--threads", "1", "--ctx", str(len(ids) + n + 8), "--json"]
        counts, stdout = counted_run(runner, argv, what="hmllm_run")
        data = json.loads(stdout.strip().splitlines()[-1])
        kernels.append(data.get("kernels", ""))
        return counts, data["tokens"]

    prefill, decode, out = _three_runs(run, prompt, gen, progress, "hmllm")
    return EngineCount("hmllm", prefill, decode, out, kernels[-1] if kernels else None)


def count_llama_cpp(exe: Path, model: Path, runner: tuple[str, ...], prompt: list[int], gen: int,
                    progress: Callable[[str], None]) -> EngineCount:
    def run(ids: list[int], n: int) -> tuple[Counts, list[int]]:
        counts, stdout = counted_run(runner, [str(exe), str(model), ",".join(map(str, ids)), str(n)], what="llama.cpp")
        return counts, json.loads(stdout.strip().splitlines()[-1])["tokens"]

    prefill, decode, out = _three_runs(run, prompt, gen, progress, "llama.cpp")
    return EngineCount("llama.cpp", prefill, decode, out)


@dataclass
class CountReport:
    target: str
    cpu: str | None
    model: Path
    prompt_tokens: int
    gen_tokens: int
    hmllm: EngineCount
    llama_cpp: EngineCount | None = None
    llama_cpp_arch: str | None = None
    llama_cpp_model: Path | None = None  # the file llama.cpp ran (another one for hmbuild's INT4 files)

    def ratios(self) -> dict | None:
        if self.llama_cpp is None:
            return None
        out = {}
        for phase in ("prefill", "decode"):
            h, l = getattr(self.hmllm, phase).per_token(), getattr(self.llama_cpp, phase).per_token()
            out[phase] = {k: h[k] / l[k] if l[k] else None for k in ("instructions", "bytes_loaded")}
        return out

    def to_json(self) -> dict:
        out = {"target": self.target, "cpu": self.cpu, "model": str(self.model), "threads": 1,
               "prompt_tokens": self.prompt_tokens, "gen_tokens": self.gen_tokens, "hmllm": self.hmllm.to_json()}
        if self.llama_cpp is not None:
            out["llama_cpp"] = {**self.llama_cpp.to_json(), "arch": self.llama_cpp_arch,
                                 "model": str(self.llama_cpp_model or self.model)}
            out["ratio_hmllm_to_llama_cpp"] = self.ratios()
        return out


def _m(x: float) -> str:
    return f"{x / 1e6:.2f} M"


def format_counts(report: CountReport) -> list[str]:
    where = f"qemu-aarch64 -cpu {report.cpu or 'default'}"
    lines = [f"{report.model.name} on {report.target} ({where}), 1 thread, {report.prompt_tokens} prompt tokens, "
             f"{report.gen_tokens} decode steps; hmllm kernels {report.hmllm.kernels}: per token"]
    if report.llama_cpp_model and report.llama_cpp_model != report.model:
        lines.append(f"llama.cpp runs {report.llama_cpp_model.name}")
    engines = [report.hmllm] + ([report.llama_cpp] if report.llama_cpp else [])
    head = f"{'':<28}" + "".join(f"{e.engine:>14}" for e in engines) + ("  hmllm / llama.cpp" if report.llama_cpp else "")
    lines.append(head)
    for phase in ("prefill", "decode"):
        for key, label in (("instructions", "instructions"), ("bytes_loaded", "bytes loaded"), ("bytes_stored", "bytes stored")):
            vals = [getattr(e, phase).per_token()[key] for e in engines]
            row = f"{phase + ' ' + label:<28}" + "".join(f"{_m(v):>14}" for v in vals)
            if len(vals) == 2 and vals[1]:
                row += f"  {vals[0] / vals[1]:.2f}"
            lines.append(row)
    for e in engines:
        for phase in ("prefill", "decode"):
            lines.append(f"{e.engine} {phase}: top functions by instructions per token")
            for r in getattr(e, phase).top(10):
                lines.append(f"  {_m(r['instructions']):>10} {r['share'] * 100:5.1f}%  {r['function'][:100]}")
    return lines


def run_count(target: Target, build: BuildResult, model: Path, cpu: str | None, prompt_tokens: int, gen_tokens: int,
              vs_llama_cpp: bool = False, progress: Callable[[str], None] = lambda msg: None,
              llama_cpp_model: Path | None = None) -> CountReport:
    """Counts hmllm (and with vs_llama_cpp, llama.cpp built for the same CPU features) on the same ids."""
    if prompt_tokens < 2:
        raise HmbuildError(f"--prompt-tokens must be at least 2 with --count; got {prompt_tokens}.", 2)
    if gen_tokens < 1:
        raise HmbuildError(f"--gen-tokens must be at least 1 with --count; got {gen_tokens}.", 2)
    if not Path(model).is_file():
        raise HmbuildError(f"Model file {model} does not exist; pass an existing .gguf file or fetch the test model "
                           "with `hmbuild fetch-model`.")
    runner = qemu_runner(target, cpu)
    theirs = Path(llama_cpp_model) if llama_cpp_model else Path(model)
    if vs_llama_cpp:  # before any counting: a wrong file is known now
        if llama_cpp_model and not theirs.is_file():
            raise HmbuildError(f"--llama-cpp-model {theirs} does not exist; pass the GGUF file llama.cpp should run.")
        if not llama_cpp_model and _has_hm_types(theirs):
            raise HmbuildError(f"{Path(model).name} holds hmbuild's INT4 types, which llama.cpp cannot read; pass the "
                               "file it was quantized from with --llama-cpp-model.")
    prompt = prompt_ids(runner, hmllm_tool(build), Path(model), prompt_tokens)
    report = CountReport(target.name, cpu, Path(model), prompt_tokens, gen_tokens,
                         count_hmllm(target, build, Path(model), cpu, prompt, gen_tokens, progress))
    if vs_llama_cpp:
        from hmbuild.build.llama_cpp import arm_arch_for_cpu, build_llama_count

        if target.name != "linux-arm64":
            raise HmbuildError("--vs-llama-cpp builds llama.cpp for linux-arm64 only; count with --target linux-arm64.")
        arch = arm_arch_for_cpu(cpu or "max")
        exe = build_llama_count(arch, progress=progress)
        report.llama_cpp = count_llama_cpp(exe, theirs, (target.runner[0], *(("-cpu", cpu) if cpu else ())),
                                           prompt, gen_tokens, progress)
        report.llama_cpp_model = theirs
        report.llama_cpp_arch = arch
    return report


def _has_hm_types(model: Path) -> bool:
    """Whether a GGUF file holds hmbuild's INT4 tensor types (ids the gguf package does not know)."""
    from hmbuild.model import ggml_types

    ggml_types.register_with_gguf()
    import gguf

    try:
        return any(int(t.tensor_type) in ggml_types.HM_Q4.values() for t in gguf.GGUFReader(model).tensors)
    except (ValueError, OSError):
        return False  # not a file this check can read: llama.cpp's own message says why


# ---- The CI guard: a recorded baseline and the comparison with it.

def baseline_json(report: CountReport) -> dict:
    """What `--save-baseline` records: the run's settings and hmllm's per-token counts by function."""
    h = report.hmllm
    return {"what": "hmllm instructions per token under qemu (hmbuild bench --count); re-record with --save-baseline",
            "target": report.target, "cpu": report.cpu, "model": report.model.name,
            "prompt_tokens": report.prompt_tokens, "gen_tokens": report.gen_tokens, "kernels": h.kernels,
            **{phase: {"instructions": getattr(h, phase).per_token()["instructions"],
                       "functions": {name: c.instructions / getattr(h, phase).tokens
                                     for name, c in sorted(getattr(h, phase).functions.items())
                                     if c.instructions / getattr(h, phase).tokens >= 1000}}
               for phase in ("prefill", "decode")}}


def compare_baseline(report: CountReport, baseline: dict, tolerance: float = BASELINE_TOLERANCE) -> tuple[bool, list[str]]:
    """(within tolerance, lines): each phase's instructions per token against the baseline, and when a
    phase is over, the functions whose counts moved most."""
    for key, mine in (("cpu", report.cpu), ("prompt_tokens", report.prompt_tokens), ("gen_tokens", report.gen_tokens),
                      ("model", report.model.name)):
        if baseline.get(key) != mine:
            raise HmbuildError(f"The baseline was recorded with {key} {baseline.get(key)!r}, this run has {mine!r}; "
                               "run with the baseline's settings or re-record it with --save-baseline.")
    ok, lines = True, []
    for phase in ("prefill", "decode"):
        now = getattr(report.hmllm, phase)
        was = baseline[phase]["instructions"]
        cur = now.per_token()["instructions"]
        ratio = cur / was
        over = ratio > 1 + tolerance
        ok &= not over
        lines.append(f"{phase}: {_m(cur)} instructions per token, baseline {_m(was)}: {ratio:.4f}x"
                     f"{'  OVER the ' + format(tolerance, '.0%') + ' allowance' if over else ''}")
        if over:
            old = baseline[phase]["functions"]
            new = {name: c.instructions / now.tokens for name, c in now.functions.items()}
            moved = sorted(set(old) | set(new), key=lambda n: -abs(new.get(n, 0) - old.get(n, 0)))[:8]
            for name in moved:
                lines.append(f"    {(new.get(name, 0) - old.get(name, 0)) / 1e6:+9.3f} M  {name[:100]} "
                             f"({_m(old.get(name, 0))} -> {_m(new.get(name, 0))})")
    return ok, lines


def read_baseline(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        assert isinstance(data, dict) and all(isinstance(data.get(p, {}).get("instructions"), (int, float))
                                              for p in ("prefill", "decode"))
        return data
    except FileNotFoundError:
        raise HmbuildError(f"Baseline {path} does not exist; record one with --save-baseline {path}.") from None
    except (OSError, ValueError, AssertionError, AttributeError):
        raise HmbuildError(f"{path} is not a baseline written by `hmbuild bench --count --save-baseline`; "
                           "record it again.") from None


def decode_read_bytes(model: Path, mean_positions: float) -> dict:
    """What one decode step must read at least: every weight tensor once (the token embedding only as
    one row, unless it is also the output matrix, tied, as in Gemma), and K and V (f16) of the mean
    number of attended positions in every layer."""
    from gguf import GGUFReader

    reader = GGUFReader(str(model))
    names = {t.name: t for t in reader.tensors}
    weights = sum(int(t.n_bytes) for t in reader.tensors)
    emb = names.get("token_embd.weight")
    if emb is not None and "output.weight" in names:
        rows = int(emb.shape[-1]) if len(emb.shape) > 1 else 1
        weights -= int(emb.n_bytes) - int(emb.n_bytes) // max(rows, 1)

    def meta(key: str) -> int | None:
        f = reader.get_field(key)
        return int(f.parts[f.data[0]][0]) if f is not None and f.data else None

    arch_field = reader.get_field("general.architecture")
    arch = bytes(arch_field.parts[arch_field.data[0]]).decode() if arch_field else ""
    layers, kv_heads = meta(f"{arch}.block_count") or 0, meta(f"{arch}.attention.head_count_kv") or 0
    head_dim = meta(f"{arch}.attention.key_length") or (
        (meta(f"{arch}.embedding_length") or 0) // max(meta(f"{arch}.attention.head_count") or 1, 1))
    kv = 2 * layers * kv_heads * head_dim * 2 * mean_positions
    return {"weights": weights, "kv": kv, "total": weights + kv}
