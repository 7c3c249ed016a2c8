"""The ndk-check command: is a built module one a HarmonyOS NEXT device will load?"""

from __future__ import annotations

from pathlib import Path

import click

from hmbuild.build.ndk_check import ARCH_MACHINES, NdkExports, check_module
from hmbuild.cli.common import JSON_HELP, emit_json
from hmbuild.errors import HmbuildError


@click.command("ndk-check")
@click.argument("modules", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--arch", type=click.Choice(sorted(ARCH_MACHINES)), default="aarch64", show_default=True,
              help="The module's architecture.")
@click.option("--ohos-public", type=click.Path(path_type=Path), envvar="HMBUILD_OHOS_PUBLIC",
              help="Folder of OpenHarmony's public files (the NDK export lists and libc.map.txt).")
@click.option("--sysroot", type=click.Path(path_type=Path),
              help="A real SDK's native/sysroot: read the exports from its NDK libraries instead.")
@click.option("--shipped", "shipped", multiple=True, type=click.Path(path_type=Path),
              help="A library shipped next to the module (libc++_shared.so); repeatable.")
@click.option("--node-addon", is_flag=True,
              help="Accept a Node-API addon (napi_register_module_v1) instead of requiring ArkTS registration.")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
def ndk_check_cmd(modules, arch, ohos_public, sysroot, shipped, node_addon, as_json):
    """Check built modules against what an OpenHarmony device provides (ELF machine, no PT_INTERP,
    NDK-only NEEDED, BIND_NOW, .note.ohos.ident, imports in the NDK lists, registration)."""
    if sysroot is not None:
        exports = NdkExports.from_sysroot(sysroot, f"{arch}-linux-ohos")
    elif ohos_public is not None:
        exports = NdkExports.from_public(ohos_public)
    else:
        raise HmbuildError("ndk-check needs the NDK export lists: pass --ohos-public DIR (OpenHarmony's public "
                           "files) or --sysroot DIR (a real SDK's native/sysroot).")
    reports = [check_module(m, arch=arch, exports=exports, shipped=shipped,
                            require_arkts_registration=not node_addon) for m in modules]
    ok = all(r.ok for r in reports)
    if as_json:
        emit_json({"ok": ok, "modules": [r.to_json() for r in reports]})
    else:
        for r in reports:
            click.echo("\n".join(r.lines()))
    if not ok:
        raise click.exceptions.Exit(1)


COMMANDS = (ndk_check_cmd,)
