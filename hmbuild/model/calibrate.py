"""`hmbuild quantize --calibrate`: what each weight matrix's inputs look like on a text, measured by
the project's native hmllm_calibrate tool on the host (the same engine the model will run on), so
quantize can round each matrix for the inputs it really sees (gptq.py). The tool writes a folder
of input second moments (manifest.json + one .npy per input site); a folder from an earlier run
can be given instead of a text, which skips the measurement."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from hmbuild.build.builder import BuildResult
from hmbuild.errors import HmbuildError
from hmbuild.config.project import Project
from hmbuild.build.runners import built_tool, ensure_runnable, run_progress_tool
from hmbuild.targets.target import Target
from hmbuild.model.texts import check_text, shipped_text

TOOL = "hmllm_calibrate"
DEFAULT_TOKENS = 4096  # text positions measured; more costs time (the whole model runs on each)
DEFAULT = "default"    # --calibrate default: hmbuild's own English calibration text


def default_text() -> Path:
    """The English calibration text shipped with hmbuild; deliberately not the evaluation text, so
    `hmbuild eval` judges a calibrated model on text it was not tuned on."""
    return shipped_text("calib_en.txt", "calibration", "--calibrate")


def is_folder(path: Path) -> bool:
    """A folder of input moments written by hmllm_calibrate (it has the tool's manifest)."""
    return path.is_dir() and (path / "manifest.json").is_file()


def check_source(source: str | Path, max_tokens: int) -> Path:
    """The text (or earlier calibration folder) --calibrate names, checked before anything is built."""
    if max_tokens < 16:
        raise HmbuildError(f"--calibration-tokens {max_tokens} is too few to measure a model's inputs; use at least "
                           f"16 (default {DEFAULT_TOKENS}).")
    path = default_text() if str(source) == DEFAULT else Path(source).expanduser()
    if is_folder(path):
        return path.resolve()
    if path.is_dir():
        raise HmbuildError(f"{path} is a folder but not one hmllm_calibrate wrote (no manifest.json); pass a UTF-8 "
                           "text file, an earlier calibration folder, or 'default'.")
    return check_text(path, "--calibrate", "to calibrate on")


@dataclass
class CalibrationRun:
    folder: Path
    tokens: int        # positions measured (BOS included)
    text_tokens: int
    windows: int
    ctx: int
    sites: int         # input sites written (four per layer and the output projection's)
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"folder": str(self.folder), "tokens": self.tokens, "text_tokens": self.text_tokens,
                "windows": self.windows, "ctx": self.ctx, "sites": self.sites, "seconds": round(self.seconds, 3)}


def measure(project: Project, target: Target, build: BuildResult, model: Path, text: Path, out: Path,
            max_tokens: int = DEFAULT_TOKENS, ctx: int = 512, threads: int = 0,
            progress: Callable[[int, int], None] | None = None,
            info: Callable[[str], None] | None = None) -> CalibrationRun:
    """Runs hmllm_calibrate over text; out (which must not exist yet) receives the folder."""
    import time

    ensure_runnable(target)
    tool = built_tool(project, target, build, TOOL, "hmbuild quantize --calibrate")
    t0 = time.monotonic()
    data = run_progress_tool(target, None, tool, ["--model", str(model), "--text-file", str(text), "--out", str(out),
                                                  "--max-tokens", str(max_tokens), "--ctx", str(ctx),
                                                  "--threads", str(threads)], progress, info)
    return CalibrationRun(folder=out, tokens=int(data["tokens"]), text_tokens=int(data["text_tokens"]),
                          windows=int(data["windows"]), ctx=int(data["ctx"]), sites=int(data["sites"]),
                          seconds=time.monotonic() - t0)

