"""`hmbuild eval`: how far a model's next-token distributions drift from a reference model's on a
text (e.g. a re-quantized model against the original). The computation is the project's native
hmllm_eval tool, run on the target (under qemu-aarch64 for linux-arm64) like `hmbuild run` runs
hmllm_run; this module checks the inputs, runs the tool, relays its progress and returns its
figures as an EvalResult."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from hmbuild.build.builder import BuildResult
from hmbuild.errors import HmbuildError
from hmbuild.config.project import Project
from hmbuild.build.runners import built_tool, check_cpu, ensure_runnable, run_progress_tool
from hmbuild.targets.target import Target
from hmbuild.model.plan import check_file_runnable
from hmbuild.model.texts import check_text, shipped_text

DEFAULT_CTX = 512
TOOL = "hmllm_eval"


def default_text() -> Path:
    """The English evaluation text shipped with hmbuild."""
    return shipped_text("eval_en.txt", "evaluation", "--text")


@dataclass
class EvalResult:
    top1_agreement: float  # share of positions where both models' argmax agree
    kl_mean: float         # mean KL(reference || model) of the next-token distributions, nats
    ppl: float             # perplexity of the model on the text
    ppl_reference: float   # perplexity of the reference on the text
    kl_max: float
    tokens: int            # predicted positions
    windows: int
    ctx: int               # the effective window size (bounded by the models' training context)
    text_tokens: int
    nll_mean: float
    nll_mean_reference: float
    accuracy: float            # the model's argmax is the text's next token
    accuracy_reference: float
    n_vocab: int
    threads: int
    kernels: str
    seconds: float
    # Over the positions where the reference's top token has p >= 0.5 (confident_share of them):
    # a flip there is a changed answer, not a near-tie. None when the reference is never that sure,
    # or when a project's vendored tool predates the figure.
    top1_agreement_confident: float | None = None
    confident_share: float | None = None
    target: str = ""
    cpu: str | None = None
    model: str = ""
    reference: str = ""
    text: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        d.update(d.pop("extra"))
        return d


def check_inputs(model: Path | None, reference: Path | None, text: Path | None, ctx: int) -> tuple[Path, Path, Path]:
    """One sentence for each kind of bad input, before anything is built."""
    if model is None or reference is None:
        raise HmbuildError("Give both --model M.gguf (the model to judge) and --reference R.gguf (the model it is "
                           "compared against).")
    for what, path in (("Model", model), ("Reference model", reference)):
        if not Path(path).is_file():
            raise HmbuildError(f"{what} file {path} does not exist; pass an existing .gguf file.")
    for path in (model, reference):
        check_file_runnable(Path(path))
    if ctx < 2:
        raise HmbuildError(f"--ctx {ctx} is too small; a window needs at least 2 tokens (e.g. --ctx {DEFAULT_CTX}).")
    text = check_text(default_text() if text is None else Path(text), "--text", "to evaluate on")
    return Path(model).resolve(), Path(reference).resolve(), text


def evaluate(project: Project, target: Target, build: BuildResult, model: Path, reference: Path, text: Path,
             ctx: int = DEFAULT_CTX, threads: int = 0, cpu: str | None = None, kv: str = "f16",
             progress: Callable[[int, int], None] | None = None,
             info: Callable[[str], None] | None = None) -> EvalResult:
    """Runs hmllm_eval on the target. progress(done, total) follows the predicted positions;
    info(line) gets the tool's other stderr lines (token and window counts)."""
    ensure_runnable(target)
    cpu = check_cpu(target, cpu)
    tool = built_tool(project, target, build, TOOL, "hmbuild eval")
    data = run_progress_tool(target, cpu, tool, ["--model", str(model), "--reference", str(reference), "--text-file",
                                                 str(text), "--ctx", str(ctx), "--threads", str(threads), "--kv", kv],
                             progress, info)
    known = {f for f in EvalResult.__dataclass_fields__ if f not in ("extra",)}
    fields = {k: v for k, v in data.items() if k in known}
    extra = {k: v for k, v in data.items() if k not in known}
    return EvalResult(**fields, extra=extra, target=target.name, cpu=cpu, model=str(model), reference=str(reference),
                      text=str(text))


def _confident(r: EvalResult) -> str:
    if r.confident_share is None:
        return ""
    if r.top1_agreement_confident is None:
        return " (the reference is never confident, p >= 0.5, on this text)"
    return (f" ({r.top1_agreement_confident:.4f} at the {r.confident_share:.0%} of positions where the reference "
            "is confident, p >= 0.5)")


def format_report(r: EvalResult) -> list[str]:
    return [
        f"{r.tokens} tokens in {r.windows} window(s) of up to {r.ctx} ({r.target}{', qemu -cpu ' + r.cpu if r.cpu else ''}, "
        f"{r.threads} threads, {r.kernels}, {r.seconds:.1f} s)",
        f"top-1 agreement  {r.top1_agreement:.4f}" + _confident(r),
        f"KL(ref || model) mean {r.kl_mean:.6f}, max {r.kl_max:.6f}",
        f"perplexity       {r.ppl:.4f} (reference {r.ppl_reference:.4f})",
    ]
