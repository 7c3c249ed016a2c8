"""Commands on a project's sources: new, ci, update, check, api, lint."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from hmbuild.build.arkts_lint import lint_project
from hmbuild.cli.common import JSON_HELP, emit_json
from hmbuild.config.api_schema import project_api
from hmbuild.config.project import load_project
from hmbuild.scaffold.ci_switch import write_ci
from hmbuild.scaffold.generator import new_project
from hmbuild.scaffold.update import check_project, format_update, update_project


@click.command()
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
    result = new_project(directory, name, config=config, description=description, force=force, ci=ci)
    click.echo(f"Created {result.name} in {result.root} ({len(result.files)} files).")
    where = shlex.quote(str(directory))  # the user pastes this line into a shell
    click.echo(f"Next: hmbuild -C {where} build --target linux-arm64 && hmbuild -C {where} test --target linux-arm64")


@click.command("ci")
@click.option("--provider", help="github (.github/workflows/ci.yml), gitlab (.gitlab-ci.yml) or none; "
                                 "default: hmbuild.toml's [project] ci.")
@click.option("--force", is_flag=True, help="Replace a CI file that was edited since hmbuild wrote it.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def ci_cmd(ctx, provider, force, as_json):
    """Write the project's CI definition and record the provider in hmbuild.toml."""
    result = write_ci(ctx.obj["dir"], provider, force=force)
    if as_json:
        emit_json(result.to_json())
        return
    for rel in result.written:
        click.echo(f"Wrote {rel} ({result.provider}).")
    for rel in result.removed:
        click.echo(f"Removed {rel} (hmbuild wrote it for another provider; unchanged since).")
    for rel in result.kept:
        click.echo(f"Left {rel} alone: it was edited since hmbuild wrote it; delete it if it is no longer used.")
    click.echo(f'hmbuild.toml: [project] ci = "{result.provider}"')


@click.command("update")
@click.option("--dry-run", is_flag=True, help="Print the diff of what would change and which files would conflict; "
                                              "write nothing.")
@click.option("--adopt", is_flag=True, help="For a project generated before hmbuild recorded its output: take the "
                                            "generated files you have not changed as the base.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def update_cmd(ctx, dry_run, adopt, as_json):
    """Re-render the project with this hmbuild's templates and merge your changes in (git merge-file)."""
    result = update_project(ctx.obj["dir"], dry_run=dry_run, adopt=adopt)
    if as_json:
        emit_json({"ok": result.ok, **result.to_json()})
    else:
        for line in format_update(result):
            click.echo(line)
    if not result.ok:
        click.echo(f"hmbuild: error: {result.problem()}", err=True)
        ctx.exit(1)


@click.command("check")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def check_cmd(ctx, as_json):
    """Fail when the project is behind this hmbuild's templates or holds unresolved update conflicts (for CI)."""
    result = check_project(ctx.obj["dir"])
    if as_json:
        emit_json({"ok": result.ok, "behind": result.behind, "conflicts": result.conflicts,
                   "hmbuild_version": result.version})
    else:
        for rel in result.behind:
            click.echo(f"behind    {rel}")
        if result.ok:
            click.echo(f"Up to date with hmbuild {result.version}'s templates.")
    if not result.ok:
        click.echo(f"hmbuild: error: {result.problem()}", err=True)
        ctx.exit(1)


@click.command("api")
@click.option("--check", is_flag=True, help="Write nothing; fail, naming the file, if a generated file is out of date.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def api_cmd(ctx, check, as_json):
    """Regenerate napi_init.cpp and Index.d.ts from the project's API description (api.toml)."""
    results = project_api(load_project(ctx.obj["dir"]), check=check)
    if as_json:
        emit_json({"ok": True, "files": [r.to_json() for r in results]})
    else:
        for r in results:
            click.echo(f"{r.path}: {'up to date' if r.state == 'unchanged' else r.state}")


@click.command("lint")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def lint_cmd(ctx, as_json):
    """Check the project's .ets files with OpenHarmony's ArkTS linter (ohos-typescript)."""
    report = lint_project(load_project(ctx.obj["dir"]).root)
    if as_json:
        emit_json({"ok": report.errors == 0, **report.to_json()})
    else:
        for p in report.problems:
            click.echo(f"{p.file}:{p.line}:{p.column}: {p.severity}: {p.message} ({p.rule})")
        click.echo(f"{len(report.files)} files, {report.errors} errors, {len(report.problems) - report.errors} warnings")
    if report.errors:
        ctx.exit(1)


COMMANDS = (new, ci_cmd, update_cmd, check_cmd, api_cmd, lint_cmd)
