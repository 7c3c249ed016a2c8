"""`hmbuild bench`: end-to-end speed and memory of a model on a target, through the project's own
build. Each thread count runs the native `hmllm_bench` tool in its own process (under
qemu-aarch64 for linux-arm64), so its peak RSS (VmHWM) belongs to that configuration alone.

What the tool measures (medians over --repeat repeats; see native/tools/hmllm_bench.cpp):
prefill and decode tokens/s, time to first token cold (a fresh session: load + prefill + first
token) and warm (after warmup(), the same prompt as a full prefill), peak RSS next to the model
file size and the KV cache bytes, the memory read bandwidth measured in the tool with the same
thread count, and the fraction of it the decode uses (decode bytes per token x decode tok/s /
bandwidth). qemu timings are not device speed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from hmbuild.build.builder import BuildResult
from hmbuild.errors import HmbuildError
from hmbuild.config.project import Project
from hmbuild.build.runners import check_cpu, ensure_runnable, run_progress_tool
from hmbuild.targets.target import Target

MAX_THREADS = 256
# The project's target: peak RSS no more than the model file plus the KV cache plus this.
RSS_ALLOWANCE_BYTES = 64 << 20


@dataclass(frozen=True)
class BenchOptions:
    threads: list[int | None]  # one process per entry; None: the library's default (big cores)
    prompt_tokens: int = 128
    gen_tokens: int = 64
    repeat: int = 3
    kv: str = "f16"
    ctx: int = 2048
    kernels: str | None = None

    @property
    def sweep(self) -> bool:
        return len(self.threads) > 1


@dataclass
class BenchRun:
    """One thread count's figures, as hmllm_bench reports them."""
    threads: int
    kernels: str
    prefill_tps: float
    decode_tps: float
    ttft_ms: float
    ttft_warm_ms: float
    peak_rss_bytes: int
    bandwidth_fraction: float
    model_bytes: int
    kv_bytes: int
    bandwidth_bytes_per_s: float
    decode_bytes_per_token: float
    repeats: int
    extra: dict = field(default_factory=dict)  # everything else the tool printed (samples, ctx, ...)

    @property
    def rss_limit_bytes(self) -> int:
        return self.model_bytes + self.kv_bytes + RSS_ALLOWANCE_BYTES

    @classmethod
    def from_tool(cls, data: dict) -> "BenchRun":
        data = dict(data)
        data.pop("ok", None)
        names = [f for f in cls.__dataclass_fields__ if f != "extra"]
        try:
            values = {n: data.pop(n) for n in names}
        except KeyError as exc:
            raise HmbuildError(f"hmllm_bench printed no {exc.args[0]}; rebuild the project (its vendored runtime may "
                               "be older than this hmbuild: regenerate it with `hmbuild new`).") from None
        return cls(**values, extra=data)

    def to_json(self) -> dict:
        out = {n: getattr(self, n) for n in ("prefill_tps", "decode_tps", "ttft_ms", "ttft_warm_ms", "peak_rss_bytes",
                                             "bandwidth_fraction", "threads", "kernels", "model_bytes", "kv_bytes",
                                             "bandwidth_bytes_per_s", "decode_bytes_per_token", "repeats")}
        out.update(self.extra)
        return out


@dataclass
class BenchReport:
    target: str
    cpu: str | None
    model: Path
    options: BenchOptions
    runs: list[BenchRun]

    def to_json(self) -> dict:
        """One run: its keys at the top level. A sweep: {"runs": [one object per thread count]}."""
        head = {"target": self.target, "cpu": self.cpu, "model": str(self.model)}
        if self.options.sweep:
            return {**head, "runs": [r.to_json() for r in self.runs]}
        return {**self.runs[0].to_json(), **head}


def parse_threads_sweep(text: str) -> list[int]:
    """'1,2,4,8' -> [1, 2, 4, 8]; anything else is one sentence."""
    items = [s.strip() for s in text.split(",")]
    if not items or any(not re.fullmatch(r"[0-9]+", s) for s in items):
        raise HmbuildError(f"--threads-sweep takes comma-separated thread counts such as 1,2,4,8, not '{text}'.", 2)
    counts = [int(s) for s in items]
    if any(n < 1 or n > MAX_THREADS for n in counts):
        raise HmbuildError(f"--threads-sweep counts must be between 1 and {MAX_THREADS}; got '{text}'.", 2)
    if len(set(counts)) != len(counts):
        raise HmbuildError(f"--threads-sweep lists a thread count twice ('{text}'); give each count once.", 2)
    return counts


def bench_options(threads: int | None, threads_sweep: str | None, prompt_tokens: int, gen_tokens: int, repeat: int,
                  kv: str, ctx: int, kernels: str | None = None) -> BenchOptions:
    """Checks the command line's numbers and returns what to run; a bad one is a usage error (exit 2)."""
    if threads is not None and threads_sweep is not None:
        raise HmbuildError("Give either --threads N or --threads-sweep LIST, not both.", 2)
    if threads is not None and not 1 <= threads <= MAX_THREADS:
        raise HmbuildError(f"--threads must be between 1 and {MAX_THREADS}; got {threads}.", 2)
    counts: list[int | None] = parse_threads_sweep(threads_sweep) if threads_sweep is not None else [threads]
    if prompt_tokens < 1:
        raise HmbuildError(f"--prompt-tokens must be at least 1; got {prompt_tokens}.", 2)
    if gen_tokens < 2:
        raise HmbuildError(f"--gen-tokens must be at least 2 (the first token comes from the prefill); got {gen_tokens}.", 2)
    if repeat < 1:
        raise HmbuildError(f"--repeat must be at least 1; got {repeat}.", 2)
    if kv not in ("f16", "q8_0"):
        raise HmbuildError(f"--kv is f16 or q8_0, not '{kv}'.", 2)
    if prompt_tokens + gen_tokens > ctx:
        raise HmbuildError(f"--prompt-tokens + --gen-tokens ({prompt_tokens + gen_tokens}) do not fit the context "
                           f"size {ctx}; lower them or raise --ctx.", 2)
    return BenchOptions(counts, prompt_tokens, gen_tokens, repeat, kv, ctx, kernels)


def bench_tool(build: BuildResult, target: Target) -> Path:
    tool = build.build_dir / "hmllm" / "hmllm_bench"
    if not tool.is_file():
        raise HmbuildError(f"{tool} was not built; the project's runtime predates `hmbuild bench`: copy this hmbuild's "
                           f"native/ into src/main/cpp/hmllm (or regenerate the project) and rebuild with "
                           f"`hmbuild build --target {target.name}`.")
    return tool


def run_one(target: Target, build: BuildResult, model: Path, options: BenchOptions, threads: int | None,
            cpu: str | None, progress: Callable[[str], None]) -> BenchRun:
    """Runs hmllm_bench once (one thread count, one process) and returns its figures."""
    tool = bench_tool(build, target)
    args = ["--model", str(model), "--threads", str(threads or 0),
            "--prompt-tokens", str(options.prompt_tokens), "--gen-tokens", str(options.gen_tokens),
            "--repeat", str(options.repeat), "--kv", options.kv, "--ctx", str(options.ctx)]
    if options.kernels:
        args += ["--kernels", options.kernels]
    return BenchRun.from_tool(run_progress_tool(target, cpu, tool, args, info=progress,
                                                failure="The benchmark failed: "))


def run_bench(project: Project, target: Target, build: BuildResult, model: Path, options: BenchOptions,
              cpu: str | None = None, progress: Callable[[str], None] = lambda msg: None) -> BenchReport:
    """One hmllm_bench process per thread count, in order."""
    ensure_runnable(target)
    cpu = check_cpu(target, cpu)
    if not Path(model).is_file():
        raise HmbuildError(f"Model file {model} does not exist; pass an existing .gguf file or fetch the test model "
                           "with `hmbuild fetch-model`.")
    bench_tool(build, target)
    runs = []
    for i, threads in enumerate(options.threads):
        label = f"{threads} threads" if threads else "default threads"
        if options.sweep:
            label = f"[{i + 1}/{len(options.threads)}] {label}"
        progress(f"{label}: starting ({options.repeat} repeats of {options.prompt_tokens} prompt + "
                 f"{options.gen_tokens} generated tokens)")
        runs.append(run_one(target, build, Path(model), options, threads, cpu, lambda m, l=label: progress(f"{l}: {m}")))
    return BenchReport(target=target.name, cpu=cpu, model=Path(model), options=options, runs=runs)


def _mb(n: float) -> str:
    return f"{n / (1 << 20):.1f}"


def format_table(report: BenchReport) -> list[str]:
    """A readable table, one row per thread count, then the memory line(s)."""
    head = ["threads", "prefill tok/s", "decode tok/s", "TTFT cold ms", "TTFT warm ms", "peak RSS MB",
            "read GB/s", "of bandwidth"]
    rows = [[str(r.threads), f"{r.prefill_tps:.1f}", f"{r.decode_tps:.2f}", f"{r.ttft_ms:.1f}",
             f"{r.ttft_warm_ms:.1f}", _mb(r.peak_rss_bytes), f"{r.bandwidth_bytes_per_s / 1e9:.2f}",
             f"{r.bandwidth_fraction * 100:.0f}%"] for r in report.runs]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths)).rstrip()
    first = report.runs[0]
    where = report.target + (f" (qemu -cpu {report.cpu}; not device speed)" if report.cpu else
                             " (under qemu; not device speed)" if report.target == "linux-arm64" else "")
    o = report.options
    lines = [f"{report.model.name} on {where}, kernels {first.kernels}: {o.prompt_tokens} prompt tokens, "
             f"{o.gen_tokens} generated, KV {o.kv}, ctx {first.extra.get('ctx', o.ctx)}, median of {first.repeats}",
             fmt(head), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]
    lines.append(f"model file {_mb(first.model_bytes)} MB + KV cache {_mb(first.kv_bytes)} MB + 64 MB = "
                 f"{_mb(first.rss_limit_bytes)} MB allowed for peak RSS; decode reads "
                 f"{_mb(first.decode_bytes_per_token)} MB per token")
    if first.extra.get("interleaved_bytes"):
        lines.append(f"{_mb(first.extra['interleaved_bytes'])} MB of weights interleaved at load for the "
                     f"{first.kernels} kernels in {first.extra.get('interleave_ms', 0):.1f} ms (part of the cold "
                     "TTFT); their file pages are given back, so resident memory does not double")
    over = [r for r in report.runs if r.peak_rss_bytes > r.rss_limit_bytes]
    for r in over:
        lines.append(f"peak RSS at {r.threads} threads is over that by {_mb(r.peak_rss_bytes - r.rss_limit_bytes)} MB")
    return lines
