"""What the commands share: JSON output, the resolve → ensure-runnable → choose-CPU step of every
command that runs code on a target, the model-path rule, and the one progress display."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import click

from hmbuild.build.runners import check_cpu, ensure_runnable
from hmbuild.config.api_schema import limit
from hmbuild.config.project import Project, load_project, resolve_build_type, resolve_ohos_stl, resolve_target_name
from hmbuild.errors import HmbuildError
from hmbuild.model.catalog import fetch_model
from hmbuild.model.plan import check_file_runnable
from hmbuild.targets.target import Target, resolve_target

JSON_HELP = "Print one JSON object on stdout."


def emit_json(obj: dict) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False))


@dataclass(frozen=True)
class Resolved:
    project: Project
    target: Target
    build_type: str
    cpu: str | None = None  # the qemu CPU, for an emulated target


def resolve(ctx: click.Context, target_flag: str | None, build_type_flag: str | None) -> Resolved:
    """The project of -C, its target (flag > HMBUILD_TARGET > hmbuild.toml) and build type."""
    project = load_project(ctx.obj["dir"])
    target = resolve_target(resolve_target_name(project, target_flag), resolve_ohos_stl(project))
    return Resolved(project, target, resolve_build_type(project, build_type_flag))


def resolve_runnable(ctx: click.Context, target_flag: str | None, build_type_flag: str | None,
                     cpu_flag: str | None) -> Resolved:
    """resolve(), then refuse a target this machine cannot run, and pick the qemu CPU (flag >
    HMBUILD_CPU > hmbuild.toml [test] cpu for an emulated target; --cpu elsewhere is refused)."""
    r = resolve(ctx, target_flag, build_type_flag)
    ensure_runnable(r.target)
    cpu = r.project.setting("test", "cpu", cpu_flag, "HMBUILD_CPU", None) if r.target.emulated else cpu_flag
    return Resolved(r.project, r.target, r.build_type, check_cpu(r.target, cpu))


def model_path(flag: Path | None) -> Path:
    """--model, else HMBUILD_MODEL, else the cached Gemma 3 270M (fetched on first use)."""
    if flag is None:
        env = os.environ.get("HMBUILD_MODEL")
        flag = Path(env) if env else None
    if flag is None:
        return fetch_model()
    if not flag.is_file():
        raise HmbuildError(f"Model file {flag} does not exist; pass an existing .gguf file or omit --model.")
    check_file_runnable(flag)  # one sentence before anything is built
    return flag.resolve()


def info(line: str) -> None:
    click.echo(f"hmbuild: {line}", err=True)


class Progress:
    """The progress of one long piece of work, on stderr: click's progress bar on a terminal, and a
    line per tenth of the work elsewhere (a CI log has no use for a redrawn bar). Use as a context
    manager; `update(done, total)` sets the position, `advance(n)` moves it on."""

    def __init__(self, label: str, unit: str = "", total: int | None = None):
        self.label, self.unit, self.total = label, unit, total
        self.done, self._bar, self._shown = 0, None, -1
        self._tty = sys.stderr.isatty()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)

    def update(self, done: int, total: int | None = None) -> None:
        if total is not None:
            self.total = total
        self.done = done
        if not self.total:
            return
        if self._tty:
            if self._bar is None:
                self._bar = click.progressbar(length=self.total, label=self.label, file=sys.stderr, show_eta=True,
                                              show_pos=True)
                self._bar.__enter__()
            self._bar.update(done - self._bar.pos)
        elif done * 10 // self.total > self._shown or done == self.total:
            self._shown = done * 10 // self.total
            unit = f" {self.unit}" if self.unit else ""
            info(f"{self.label.lower()} {done}/{self.total}{unit}")

    def advance(self, n: int) -> None:
        self.update(self.done + n)


# The CLI's names of the exported API's options; their ranges come from its description.
API_FIELD = {"threads": "threads", "ctx": "contextSize", "max_tokens": "maxTokens", "temperature": "temperature",
             "top_k": "topK", "top_p": "topP", "timeout": "timeoutMs", "queue_depth": "maxPending", "seed": "seed"}


def cli_range(option: str) -> click.ParamType:
    """The click range of a CLI option that is also an option of the exported API (api.toml)."""
    lim = limit(API_FIELD[option])
    if lim.integer:
        return click.IntRange(int(lim.lo), int(lim.hi))
    return click.FloatRange(lim.lo, lim.hi)
