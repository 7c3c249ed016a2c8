"""The hmbuild command line. Commands only parse arguments and call library functions that return
values; errors become one sentence on stderr and a non-zero exit. One module per group of commands:
project (new, ci, update, check, api, lint), build (build, test, run, package), machine (targets,
doctor, setup, fetch-model), model (quantize, plan, eval, bench), ndk (ndk-check)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from hmbuild import __version__
from hmbuild.cli import build, machine, model, ndk, project
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


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="hmbuild")
@click.option("-C", "directory", type=click.Path(file_okay=False, path_type=Path), default=".",
              help="Run as if started in this project folder.")
@click.pass_context
def cli(ctx: click.Context, directory: Path):
    """Generate, cross-build, test and package an on-device LLM library for HarmonyOS NEXT."""
    ctx.obj = {"dir": directory}


# Every command of every group (`hmbuild --help` lists them by name).
for _group in (project, build, machine, model, ndk):
    for _command in _group.COMMANDS:
        cli.add_command(_command)


def main():
    cli(prog_name="hmbuild")


if __name__ == "__main__":
    main()
