"""Commands that build and run the project's library: build, test, run, package."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path

import click

from hmbuild.build.builder import build
from hmbuild.build.har import package_har
from hmbuild.build.runners import RunOptions, run_model, run_tests
from hmbuild.model.catalog import SMOLLM2_135M_INSTRUCT, cached_model
from hmbuild.build.runtime_package import describe
from hmbuild.cli.common import JSON_HELP, cli_range, emit_json, model_path, resolve, resolve_runnable
from hmbuild.config.project import load_project, resolve_build_type
from hmbuild.errors import HmbuildError
from hmbuild.model import chat_template

TARGET_HELP = "host | linux-arm64 | ohos-arm64 | ohos-x86_64 (default: hmbuild.toml)."


@click.command("build")
@click.option("--target", "target_flag", help=TARGET_HELP)
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--remote", "remote_flag", metavar="NAME",
              help="Conan remote (in hmbuild's Conan home) to share the runtime's binary through: downloaded "
                   "when it has one for this profile, else built here and uploaded (default: HMBUILD_REMOTE, "
                   "hmbuild.toml [build] remote; none: compile the vendored runtime).")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.option("-v", "--verbose", is_flag=True, help="Show Conan, CMake and compiler output.")
@click.pass_context
def build_cmd(ctx, target_flag, build_type_flag, remote_flag, as_json, verbose):
    """Build the project's native library for a target."""
    r = resolve(ctx, target_flag, build_type_flag)
    result = build(r.project, r.target, r.build_type, verbose=verbose, remote=remote_flag)
    if as_json:
        emit_json({"ok": True, **result.to_json()})
    else:
        state = "up to date" if result.up_to_date else "built"
        runtime = f"; runtime {describe(result.runtime, result.remote, result.uploaded)}" if result.remote else ""
        click.echo(f"{result.library} ({result.target}, {result.build_type}, {state}{runtime})")


@click.command("test")
@click.option("--target", "target_flag", help="host | linux-arm64 (ohos targets run on a device).")
@click.option("--cpu", "cpu_flag", help="CPU qemu-aarch64 emulates: cortex-a53 (no dotprod), cortex-a76, neoverse-n1, max (i8mm).")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--model", "model_flag", type=click.Path(dir_okay=False, path_type=Path),
              help="Model file for the tests that run a real model (default: the cached Gemma 3 270M, fetched on first use).")
@click.option("--sanitize", type=click.Choice(["address,undefined", "address", "undefined", "thread"]),
              help="Build the host library and tests with this sanitizer (address,undefined: both in one build) and "
                   "run the same suites (thread: native suites only, as the system Node.js is not built with TSan).")
@click.option("--only", "only", metavar="NAMES",
              help="Run just these comma-separated native tests (e.g. kernels,session: what differs between CPUs); "
                   "the NAPI suites are skipped.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.option("-v", "--verbose", is_flag=True, help="Show Conan, CMake and compiler output.")
@click.pass_context
def test_cmd(ctx, target_flag, cpu_flag, build_type_flag, model_flag, sanitize, only, as_json, verbose):
    """Build, then run the native (ctest) and NAPI (node:test) tests for a target."""
    r = resolve_runnable(ctx, target_flag, build_type_flag, cpu_flag)
    model = model_path(model_flag)
    result = build(r.project, r.target, r.build_type, verbose=verbose, sanitize=sanitize)
    names = tuple(n.strip() for n in only.split(",")) if only is not None else ()
    if only is not None and not all(names):
        raise HmbuildError("--only takes comma-separated native test names, e.g. --only kernels,session.")
    report = run_tests(r.project, r.target, result, r.cpu, verbose=verbose, model=model, only=names,
                       chat_model=cached_model(SMOLLM2_135M_INSTRUCT.key) if model else None)
    for suite in report.suites:
        for failure in suite.failures:
            click.echo(f"FAILED {suite.name}: {failure}", err=True)
    if as_json:
        emit_json({"ok": report.failed == 0, **report.to_json()})
    else:
        where = f" under qemu -cpu {report.cpu}" if report.cpu else ""
        for suite in report.suites:
            click.echo(f"{suite.name}: {suite.passed} passed, {suite.failed} failed")
        for skip in report.skipped:
            click.echo(f"{skip['suite']}: skipped ({skip['reason']})")
        click.echo(f"{r.target.name}{where}" + (f" with --sanitize {report.sanitize}" if report.sanitize else "") + ":")
        click.echo(f"{report.passed} passed, {report.failed} failed")
    if report.failed:
        ctx.exit(1)


@click.command("run")
@click.option("--target", "target_flag", help="host | linux-arm64 (runs under qemu-aarch64).")
@click.option("--model", "model_flag", type=click.Path(dir_okay=False, path_type=Path),
              help="GGUF model (default: HMBUILD_MODEL, else the cached Gemma 3 270M).")
@click.option("--prompt", help="Prompt text, fed as-is after BOS.")
@click.option("--tokens", help="Prompt as comma-separated token ids instead of text.")
@click.option("--max-tokens", type=cli_range("max_tokens"), default=32, show_default=True)
@click.option("--cpu", "cpu_flag", help="CPU qemu-aarch64 emulates (linux-arm64).")
@click.option("--threads", type=cli_range("threads"), default=0, help="0: the number of big cores.")
@click.option("--temperature", type=cli_range("temperature"), default=0.0, help="0: greedy.")
@click.option("--top-k", type=cli_range("top_k"), default=40, show_default=True)
@click.option("--top-p", type=cli_range("top_p"), default=0.95, show_default=True)
@click.option("--seed", type=cli_range("seed"), default=0, show_default=True)
@click.option("--ctx", "ctx_size", type=cli_range("ctx"), default=2048, show_default=True,
              help="Context size in tokens.")
@click.option("--kv", type=click.Choice(["f16", "q8_0"]), default="f16", show_default=True, help="KV cache type.")
@click.option("--kernels", help="Force a kernel set: scalar, avx2, neon, neon-dotprod, neon-i8mm.")
@click.option("--logits-out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the float32 logits each generated token was sampled from, one vocabulary-long row "
                   "per token.")
@click.option("--classify", "labels", metavar="LABELS",
              help="Route the --prompt text to one of these comma-separated labels (intent recognition by label "
                   "likelihood), with hmbuild.toml's [[intent.example]] rows as few-shot examples.")
@click.option("--calibrate/--no-calibrate", default=None,
              help="With --classify: subtract each label's score on an empty text (default: [intent] calibrate).")
@click.option("--chat", "chat_file", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE.json",
              help='Run a conversation, {"messages": [{"role": "user", "content": "..."}, ...]}, in the model\'s chat '
                   "format (hmbuild.toml [chat], else the model's own template); stops at end of turn.")
@click.option("--template", "template_name", type=click.Choice(chat_template.CHAT_TEMPLATES),
              help="With --chat: a built-in chat format instead of [chat] or the model's template.")
@click.option("--template-file", type=click.Path(dir_okay=False, path_type=Path),
              help="With --chat: a Hugging Face Jinja chat template file instead.")
@click.option("--date-string", help='With --chat: the date for templates that write today\'s date, e.g. "26 Jul 2024" '
                                     "(default: [chat] date_string).")
@click.option("--print-prompt", is_flag=True, help="With --chat: print the rendered prompt (and with --json its "
                                                   "token ids) instead of generating.")
@click.option("--timeout-ms", type=cli_range("timeout"), help="With --chat: stop generating after this long (stop "
                                                               "\"timeout\").")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def run_cmd(ctx, target_flag, model_flag, prompt, tokens, max_tokens, cpu_flag, threads, temperature, top_k, top_p, seed,
            ctx_size, kv, kernels, logits_out, labels, calibrate, chat_file, template_name, template_file, date_string,
            print_prompt, timeout_ms, build_type_flag, as_json):
    """Run a prompt (or a conversation) through the project's library on a target, building it first if needed."""
    chat_only = {"--template": template_name, "--template-file": template_file, "--print-prompt": print_prompt or None,
                 "--timeout-ms": timeout_ms, "--date-string": date_string}
    if chat_file is not None:
        if prompt is not None or tokens is not None or labels is not None or logits_out is not None:
            raise HmbuildError("--chat takes the whole conversation from its file; drop --prompt, --tokens, "
                               "--classify and --logits-out.")
    else:
        given = [flag for flag, value in chat_only.items() if value is not None]
        if given:
            raise HmbuildError(f"{given[0]} only goes with --chat FILE.json.")
        if (prompt is None) == (tokens is None):
            raise HmbuildError("Give exactly one of --prompt TEXT, --tokens IDS and --chat FILE.json.")
    if labels is not None and prompt is None:
        raise HmbuildError("--classify needs the text to route as --prompt TEXT.")
    r = resolve_runnable(ctx, target_flag, build_type_flag, cpu_flag)
    model = model_path(model_flag)
    with tempfile.TemporaryDirectory(prefix="hmbuild-chat-") as scratch:
        options = RunOptions(prompt=prompt, tokens=tokens, max_tokens=max_tokens, threads=threads,
                             temperature=temperature, top_k=top_k, top_p=top_p, seed=seed, ctx=ctx_size, kv=kv,
                             kernels=kernels, logits_out=logits_out, labels=labels, calibrate=calibrate)
        source = None
        if chat_file is not None:
            options, source = _chat_options(options, r.project, model, chat_file, template_name, template_file,
                                            date_string, print_prompt, timeout_ms, Path(scratch))
        result = build(r.project, r.target, r.build_type)
        _, out = run_model(r.project, r.target, result, model, options, r.cpu, as_json)
    if as_json:
        data = json.loads(out)
        data.update({"target": r.target.name, "cpu": r.cpu, "model": str(model)})
        if source is not None:
            data["chat_format"] = source
        emit_json(data)


def _chat_options(options: RunOptions, project, model: Path, chat_file: Path, name, template_file, date_string,
                  print_prompt, timeout_ms, scratch: Path) -> tuple[RunOptions, str]:
    """Checks the conversation against the chat format compiled here, then hands both to the tool as
    files (the tool validates again: the runtime never trusts its input)."""
    try:
        messages = chat_template.read_conversation(chat_file)
        fmt, embedded = chat_template.project_format(model, project.settings.get("chat") or {}, project.root, name=name,
                                           jinja_file=template_file, date_string=date_string)
        fmt.validate(messages)
    except chat_template.ChatTemplateError as exc:
        raise HmbuildError(str(exc)) from None
    format_file, messages_file = scratch / "format.json", scratch / "messages.json"
    format_file.write_text(json.dumps(fmt.to_json(), ensure_ascii=False), encoding="utf-8")
    if embedded:  # the runtime reads it from the model file, as an app's init() without chatFormat does
        format_file = None
    messages_file.write_text(json.dumps({"messages": messages}, ensure_ascii=False), encoding="utf-8")
    return replace(options, chat=messages_file, chat_format=format_file, print_prompt=print_prompt,
                   timeout_ms=timeout_ms), fmt.source


@click.command("package")
@click.option("--target", "target_flags", multiple=True,
              help="ohos-arm64 | ohos-x86_64 | linux-arm64 (layout check only); repeatable. Default: the ohos targets built.")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def package_cmd(ctx, target_flags, build_type_flag, as_json):
    """Pack the built libraries and the ArkTS wrapper into build/<name>-<version>.har."""
    project = load_project(ctx.obj["dir"])
    result = package_har(project, list(target_flags) or None, resolve_build_type(project, build_type_flag))
    for warning in result.warnings:
        click.echo(f"hmbuild: warning: {warning}", err=True)
    if as_json:
        emit_json({"ok": True, **result.to_json()})
    else:
        click.echo(f"{result.har} ({', '.join(result.abis)}; {len(result.files)} files, {result.size_bytes} bytes)")


COMMANDS = (build_cmd, test_cmd, run_cmd, package_cmd)
