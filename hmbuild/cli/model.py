"""Commands for choosing and preparing a model for a phone: plan, quantize, eval, bench, chat-template."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from hmbuild.build.builder import build
from hmbuild.cli.common import JSON_HELP, Progress, cli_range, emit_json, info, model_path, resolve, resolve_runnable
from hmbuild.errors import HmbuildError
from hmbuild.model import calibrate
from hmbuild.model import chat_template
from hmbuild.model import insn_bench
from hmbuild.model.bench import bench_options, format_table, run_bench
from hmbuild.model.evaluate import check_inputs, evaluate
from hmbuild.model.evaluate import format_report as format_eval
from hmbuild.model.plan import family_table, plan, render_family_table, render_text
from hmbuild.model.quantize import check_paths, format_report, quantize_model


@click.command("quantize")
@click.argument("input_path", metavar="IN.gguf", type=click.Path(path_type=Path))
@click.argument("output_path", metavar="OUT.gguf", type=click.Path(path_type=Path))
@click.option("--scheme", type=click.Choice(["int4-g128", "int4-g64", "int4-g32"]), default="int4-g128",
              show_default=True, help="INT4 group size of the 4-bit tensors (Q/K/V stay Q8_0, norms F32).")
@click.option("--keep", "keep", multiple=True, metavar="TYPE:PATTERN,...",
              help="Per-tensor type override, TYPE one of f32, f16, q8_0, int4-g32, int4-g64, int4-g128, source (as it is), "
                   "PATTERN an fnmatch pattern on tensor names; the last matching rule wins.")
@click.option("--calibrate", "calibrate_source", metavar="TEXT|FOLDER|default",
              help="Round each 4-bit matrix for the inputs it sees on this UTF-8 text (your app's own texts are "
                   "best; 'default': hmbuild's English calibration text), measured by the project's host build "
                   "(run inside a project or with -C); or a folder from hmllm_calibrate.")
@click.option("--calibration-tokens", type=int, default=4096, show_default=True,
              help="With --calibrate TEXT: text tokens to measure (more takes longer).")
@click.option("--threads", type=cli_range("threads"), default=0, help="With --calibrate: 0 = the big cores.")
@click.option("--rotate/--no-rotate", default=True, show_default=True,
              help="Store the 4-bit matrices with Hadamard-rotated inputs (less rounding error, same size and "
                   "speed; the engine rotates each input to match).")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def quantize_cmd(ctx, input_path, output_path, scheme, keep, calibrate_source, calibration_tokens, threads, rotate,
                 as_json):
    """Re-quantize a GGUF model into the engine's INT4 formats (mixed precision), atomically."""
    if calibrate_source is None:
        for name in ("threads", "calibration_tokens"):
            if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
                flag = "--" + name.replace("_", "-")
                raise HmbuildError(f"{flag} acts only with --calibrate (rounding itself runs in this process); "
                                   f"add --calibrate TEXT or drop {flag}.")
    with tempfile.TemporaryDirectory(prefix="hmbuild-calibration-") as scratch:
        calibration, run = None, None
        if calibrate_source is not None:
            check_paths(input_path, output_path)
            source = calibrate.check_source(calibrate_source, calibration_tokens)
            if calibrate.is_folder(source):
                calibration = source  # measured earlier, by hmllm_calibrate
            else:
                # Always measured on the host: the engine gives every target the same values, and the host is fast.
                r = resolve(ctx, "host", None)
                built = build(r.project, r.target, r.build_type)
                with Progress("Calibrating", "tokens") as bar:
                    run = calibrate.measure(r.project, r.target, built, Path(input_path).resolve(), source,
                                            Path(scratch) / "moments", max_tokens=calibration_tokens, threads=threads,
                                            progress=bar.update, info=info)
                calibration = run.folder
        with Progress("Quantizing", "elements") as bar:
            result = quantize_model(input_path, output_path, scheme=scheme, keep=keep, progress=bar.advance,
                                    on_plan=lambda plans: bar.update(0, sum(t.n_elements for t in plans)),
                                    calibration=calibration, rotate=rotate)
    result.calibration = run.to_json() if run is not None else ({"folder": str(calibration)} if calibration else None)
    if as_json:
        emit_json(result.to_json())
        return
    for line in format_report(result):
        click.echo(line)


@click.command("plan")
@click.option("--model", "model_path", type=click.Path(path_type=Path), help="A GGUF model file to plan for.")
@click.option("--family", help="Or a known model's published shape: qwen3-1.7b, llama-3.2-3b, ... (see --families).")
@click.option("--families", "list_families", is_flag=True,
              help="List the known models: shape, weights under --quant and KV cache per 1k tokens.")
@click.option("--params", help="Or a hypothetical model's parameter count: 3B, 1.5B, 270M.")
@click.option("--layers", type=int, help="With --params: transformer layers.")
@click.option("--kv-heads", type=int, help="With --params: KV heads.")
@click.option("--head-dim", type=int, help="With --params: head size.")
@click.option("--vocab", type=int, help="With --params: vocabulary size.")
@click.option("--d-model", type=int, help="With --params: hidden size (default: estimated from --params).")
@click.option("--d-ff", type=int, help="With --params: FFN size (default: estimated from --params).")
@click.option("--quant", type=click.Choice(["int4-g128", "int4-g64", "int4-g32", "q4_k_m", "q8_0", "f16"]),
              help="Weight scheme (default: the file as it is; int4-g128 with --params).")
@click.option("--ctx", "ctx_size", type=int, default=2048, show_default=True, help="Context size in tokens.")
@click.option("--kv", type=click.Choice(["f16", "q8_0"]), default="f16", show_default=True, help="KV cache type.")
@click.option("--budget", help="Memory budget: 2.5GB (10^9 bytes), 800MB, 1.5GiB (2^30 bytes).")
@click.option("--threads", type=int, default=4, show_default=True,
              help="Inference threads (each keeps one attention row); the engine's default is the big cores.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def plan_cmd(model_path, family, list_families, params, layers, kv_heads, head_dim, vocab, d_model, d_ff, quant,
             ctx_size, kv, budget, threads, as_json):
    """Memory plan (weights + KV cache + scratch) of a model, its verdict against a budget, and fixes."""
    if list_families:
        if model_path is not None or family is not None or params is not None:
            raise HmbuildError("--families lists the known models; give it without --model, --family or --params.")
        rows = family_table(quant or "int4-g128")
        if as_json:
            emit_json({"ok": True, "families": rows})
        else:
            click.echo(render_family_table(rows))
        return
    result = plan(model_path, params, layers=layers, kv_heads=kv_heads, head_dim=head_dim, vocab=vocab,
                  d_model=d_model, d_ff=d_ff, quant=quant, ctx=ctx_size, kv=kv, budget=budget, threads=threads,
                  family=family)
    if as_json:
        emit_json({"ok": True, **result.to_json()})
    else:
        click.echo(render_text(result))


@click.command("eval")
@click.option("--model", "model_path", type=click.Path(dir_okay=False, path_type=Path), help="The GGUF model to judge.")
@click.option("--reference", "reference_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The GGUF model it is compared against (same tokenizer), e.g. the original before quantization.")
@click.option("--text", "text_path", type=click.Path(dir_okay=False, path_type=Path),
              help="UTF-8 text to evaluate on (default: hmbuild's English evaluation text).")
@click.option("--ctx", "ctx_size", type=int, default=512, show_default=True,
              help="Window size in tokens; each window is a fresh context.")
@click.option("--target", "target_flag", help="host | linux-arm64 (runs under qemu-aarch64).")
@click.option("--cpu", "cpu_flag", help="CPU qemu-aarch64 emulates (linux-arm64).")
@click.option("--threads", type=cli_range("threads"), default=0, help="0: the number of big cores.")
@click.option("--kv", type=click.Choice(["f16", "q8_0"]), default="f16", show_default=True, help="KV cache type.")
@click.option("--max-kl", "max_kl", type=click.FloatRange(0), help="Exit non-zero when the mean KL divergence is above this.")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def eval_cmd(ctx, model_path, reference_path, text_path, ctx_size, target_flag, cpu_flag, threads, kv, max_kl,
             build_type_flag, as_json):
    """Compare a model's next-token distributions with a reference's on a text (top-1, KL, perplexity)."""
    model, reference, text = check_inputs(model_path, reference_path, text_path, ctx_size)
    r = resolve_runnable(ctx, target_flag, build_type_flag, cpu_flag)
    built = build(r.project, r.target, r.build_type)
    with Progress("eval", "tokens") as bar:
        result = evaluate(r.project, r.target, built, model, reference, text, ctx=ctx_size, threads=threads,
                          cpu=r.cpu, kv=kv, progress=bar.update, info=info)
    failed = max_kl is not None and result.kl_mean > max_kl
    if as_json:
        emit_json({"ok": not failed, **result.to_json(), "max_kl": max_kl})
    else:
        for line in format_eval(result):
            click.echo(line)
    if failed:
        click.echo(f"hmbuild: error: The mean KL divergence {result.kl_mean:.6f} is above --max-kl {max_kl:g}, so the "
                   "model drifts too far from the reference.", err=True)
        ctx.exit(1)


@click.command("bench")
@click.option("--target", "target_flag", help="host | linux-arm64 (runs under qemu-aarch64: not device speed).")
@click.option("--model", "model_flag", type=click.Path(path_type=Path),
              help="GGUF model (default: HMBUILD_MODEL, else the cached Gemma 3 270M).")
@click.option("--threads", type=int, help="Inference threads (default: the number of big cores).")
@click.option("--threads-sweep", help="Comma-separated thread counts, e.g. 1,2,4,8: one process and one row each.")
@click.option("--prompt-tokens", type=int, help="Prompt length (BOS + a fixed English text) [default: 128; 64 with --count].")
@click.option("--gen-tokens", type=int,
              help="Tokens generated greedily, exactly (end-of-generation is ignored) [default: 64; 16 decode steps "
                   "with --count].")
@click.option("--repeat", type=int, default=3, show_default=True, help="Repeats; figures are their medians.")
@click.option("--kv", default="f16", show_default=True, help="KV cache type: f16 or q8_0.")
@click.option("--ctx", "ctx_size", type=int, default=2048, show_default=True, help="Context size (sizes the KV cache).")
@click.option("--kernels", help="Force a kernel set: scalar, avx2, neon, neon-dotprod, neon-i8mm.")
@click.option("--cpu", "cpu_flag", help="CPU qemu-aarch64 emulates (linux-arm64).")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--count", is_flag=True,
              help="Count aarch64 instructions and bytes per prefill and decode token under qemu (1 thread, "
                   "deterministic), with the top functions; linux-arm64 or ohos-arm64.")
@click.option("--vs-llama-cpp", is_flag=True,
              help="With --count: the same counts for llama.cpp built for the same CPU features, and the ratios.")
@click.option("--llama-cpp-model", "llama_cpp_model", type=click.Path(path_type=Path),
              help="With --vs-llama-cpp: the file llama.cpp runs (default: --model); for an INT4 file from "
                   "hmbuild quantize, the file it was quantized from.")
@click.option("--baseline", type=click.Path(path_type=Path),
              help="With --count: fail (exit 1) when instructions per token exceed this recorded baseline by over 2%.")
@click.option("--save-baseline", type=click.Path(path_type=Path), help="With --count: record the counts as a baseline.")
@click.option("--json", "as_json", is_flag=True,
              help='Print one JSON object on stdout ({"runs": [...]} with --threads-sweep).')
@click.pass_context
def bench_cmd(ctx, target_flag, model_flag, threads, threads_sweep, prompt_tokens, gen_tokens, repeat, kv, ctx_size,
              kernels, cpu_flag, build_type_flag, count, vs_llama_cpp, llama_cpp_model, baseline, save_baseline,
              as_json):
    """Prefill/decode tokens/s, TTFT cold and warm, peak RSS and memory-bandwidth use of a model on a target;
    with --count, instructions and bytes per token under qemu, side by side with llama.cpp."""
    if not count and (vs_llama_cpp or baseline or save_baseline):
        raise HmbuildError("--vs-llama-cpp, --baseline and --save-baseline go with --count.", 2)
    if llama_cpp_model and not vs_llama_cpp:
        raise HmbuildError("--llama-cpp-model goes with --vs-llama-cpp.", 2)
    if count:
        return _count(ctx, target_flag, model_flag, prompt_tokens, gen_tokens, cpu_flag, build_type_flag,
                      vs_llama_cpp, baseline, save_baseline, as_json, llama_cpp_model)
    options = bench_options(threads, threads_sweep, 128 if prompt_tokens is None else prompt_tokens,
                            64 if gen_tokens is None else gen_tokens, repeat, kv, ctx_size, kernels)
    r = resolve_runnable(ctx, target_flag, build_type_flag, cpu_flag)
    model = model_path(model_flag)
    built = build(r.project, r.target, r.build_type)
    report = run_bench(r.project, r.target, built, model, options, cpu=r.cpu,
                       progress=lambda line: info(f"bench {line}"))
    if as_json:
        emit_json({"ok": True, **report.to_json()})
    else:
        for line in format_table(report):
            click.echo(line)


def _count(ctx, target_flag, model_flag, prompt_tokens, gen_tokens, cpu_flag, build_type_flag, vs_llama_cpp, baseline,
           save_baseline, as_json, llama_cpp_model=None):
    base = insn_bench.read_baseline(baseline) if baseline else None
    if base is not None:  # the baseline's settings, unless given
        prompt_tokens = base["prompt_tokens"] if prompt_tokens is None else prompt_tokens
        gen_tokens = base["gen_tokens"] if gen_tokens is None else gen_tokens
        cpu_flag = base.get("cpu") if cpu_flag is None else cpu_flag
    r = resolve_runnable(ctx, target_flag, build_type_flag, cpu_flag)
    model = model_path(model_flag)
    built = build(r.project, r.target, r.build_type)
    report = insn_bench.run_count(r.target, built, model, r.cpu,
                                  insn_bench.COUNT_PROMPT_TOKENS if prompt_tokens is None else prompt_tokens,
                                  insn_bench.COUNT_GEN_TOKENS if gen_tokens is None else gen_tokens,
                                  vs_llama_cpp, progress=lambda line: info(f"bench --count: {line}"),
                                  llama_cpp_model=llama_cpp_model)
    if save_baseline:
        Path(save_baseline).write_text(json.dumps(insn_bench.baseline_json(report), indent=1) + "\n", encoding="utf-8")
        info(f"bench --count: wrote the baseline {save_baseline}")
    within, lines = insn_bench.compare_baseline(report, base) if base is not None else (True, [])
    if as_json:
        emit_json({"ok": within, **report.to_json(), **({"baseline": {"path": str(baseline), "within": within,
                                                                      "lines": lines}} if base else {})})
    else:
        for line in insn_bench.format_counts(report) + lines:
            click.echo(line)
    if not within:
        click.echo(f"hmbuild: error: Instructions per token are more than "
                   f"{insn_bench.BASELINE_TOLERANCE:.0%} above the baseline {baseline}; the functions that moved "
                   "are listed above (re-record with --save-baseline if the rise is intended).", err=True)
        ctx.exit(1)


@click.command("chat-template")
@click.argument("model", metavar="MODEL.gguf", type=click.Path(path_type=Path))
@click.option("--template", "name", type=click.Choice(chat_template.CHAT_TEMPLATES),
              help="A built-in format instead of the model's own tokenizer.chat_template.")
@click.option("--template-file", type=click.Path(path_type=Path), help="Or a Hugging Face Jinja chat template file.")
@click.option("--date-string", help='The date for templates that write today\'s date, e.g. "26 Jul 2024".')
@click.option("--embed", "embed", type=click.Path(path_type=Path), metavar="OUT.gguf",
              help="Also write a copy of the model carrying the compiled format (metadata hmbuild.chat_format), "
                   "which the runtime uses when init() is given no chatFormat.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def chat_template_cmd(model, name, template_file, date_string, embed, as_json):
    """Compile the model's chat template into the rules the runtime applies, verified, or refuse it."""
    try:
        fmt = chat_template.load_format(model, name=name, jinja_file=template_file, date_string=date_string)
        if fmt is None:
            raise HmbuildError(f"{model} has no tokenizer.chat_template (a base model); pass --template "
                               f"{'|'.join(chat_template.CHAT_TEMPLATES)} or --template-file FILE.")
        if embed is not None:
            chat_template.embed_format(model, embed, fmt)
    except chat_template.ChatTemplateError as exc:
        raise HmbuildError(str(exc)) from None
    if as_json:
        emit_json({"ok": True, **fmt.to_json(), **({"embedded_in": str(embed)} if embed else {})})
        return
    if embed is not None:
        click.echo(f"wrote {embed} with the compiled format ({chat_template.EMBED_KEY})", err=True)
    for line in chat_template.describe(fmt):
        click.echo(line)


COMMANDS = (quantize_cmd, plan_cmd, eval_cmd, bench_cmd, chat_template_cmd)
