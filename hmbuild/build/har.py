"""`hmbuild package`: pack a built project into a HAR (build/<name>-<version>.har).

A HAR is a gzip'd tar whose entries all sit under package/, like an npm tarball (DevEco's
hvigor writes it that way and `ohpm install ./x.har` reads it): the module's oh-package.json5,
Index.ets, src/main/ets/**, src/main/module.json5, the .so's type declarations under
src/main/cpp/types/lib<name>/, and the compiled library as libs/<abi>/lib<name>.so (arm64-v8a for
phones, x86_64 for the emulator), and build-profile.json5 with abiFilters naming the ABIs packed.
The C++ sources are not shipped.

The archive is deterministic: entries sorted, one fixed mtime, uid/gid 0, modes 0644 (0755 for
the .so), gzip header without name or time, so the same inputs give the same bytes. It is
written to a temporary file in build/ and renamed into place at the end; a failure leaves
neither a .har nor the temporary file.

linux-arm64 may be packed for layout checks (CI without the OpenHarmony SDK): its aarch64 glibc
library goes under libs/arm64-v8a, the result says not_ohos_binary, and the archive carries a
note, package/NOT_AN_OHOS_BINARY.txt, so nobody mistakes it for something a phone can load.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hmbuild.archive import archive_bytes
from hmbuild.config.project import Project, resolve_ohos_stl
from hmbuild.errors import HmbuildError
from hmbuild.targets.target import TARGET_NAMES, resolve_target

# Target -> the ABI folder a HAR uses (DevEco: libs/arm64-v8a, libs/x86_64).
OHOS_ABIS = {"ohos-arm64": "arm64-v8a", "ohos-x86_64": "x86_64"}
LAYOUT_CHECK_ABIS = {"linux-arm64": "arm64-v8a"}  # not an OHOS binary: for layout checks only
ELF_MACHINE = {"arm64-v8a": 183, "x86_64": 62}
# npm pack's fixed timestamp (1985-10-26 08:15 UTC): stable, and later than 1980 for zip tools.
NOTE_NAME = "NOT_AN_OHOS_BINARY.txt"
BUILD_HINT = "`hmbuild build --target ohos-arm64` (or `--target linux-arm64` for a layout check)"


@dataclass(frozen=True)
class HarResult:
    har: Path
    abis: list[str]
    targets: list[str]
    files: list[str]  # archive member names, in archive order
    not_ohos_binary: bool
    size_bytes: int
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"har": str(self.har), "abis": self.abis, "targets": self.targets, "files": self.files,
                "not_ohos_binary": self.not_ohos_binary, "size_bytes": self.size_bytes}


def read_json5(path: Path) -> dict:
    """The JSON subset of JSON5 that DevEco files use: JSON plus // and /* */ comments and
    trailing commas. Anything else (single quotes, bare keys) is refused with a sentence."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HmbuildError(f"Could not read {path} ({exc.strerror}); check that the file exists.") from None
    out, i, n, quote = [], 0, len(text), None
    while i < n:
        c = text[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == quote:
                quote = None
        elif c == '"':
            quote = c
            out.append(c)
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    cleaned = re.sub(r",(\s*[}\]])", r"\1", "".join(out))
    try:
        data = json.loads(cleaned)
    except json.JSONDecodeError as exc:
        raise HmbuildError(f"{path} could not be read as JSON5 ({exc.msg} at line {exc.lineno}); hmbuild reads "
                           "JSON with comments and trailing commas, so use double-quoted keys and strings.") from None
    if not isinstance(data, dict):
        raise HmbuildError(f"{path} must hold one object; fix the file or regenerate the project.")
    return data


def har_path(project: Project) -> Path:
    version = _package_meta(project)["version"]
    return project.root / "build" / f"{project.name}-{version}.har"


def _package_meta(project: Project) -> dict:
    path = project.root / "oh-package.json5"
    if not path.is_file():
        raise HmbuildError(f"{path} is missing; a HAR module needs it (regenerate the project with `hmbuild new`).")
    meta = read_json5(path)
    version = meta.get("version")
    if not isinstance(version, str) or not re.fullmatch(r"[0-9A-Za-z.+-]+", version):
        raise HmbuildError(f"{path} has no usable \"version\" (got {version!r}); set it to e.g. \"0.1.0\".")
    return meta


def _elf_machine(data: bytes) -> int | None:
    if len(data) < 20 or data[:4] != b"\x7fELF":
        return None
    return int.from_bytes(data[18:20], "little" if data[5] == 1 else "big")


def _choose_targets(project: Project, targets: list[str] | None, build_type: str) -> list[str]:
    lib = project.library_name
    if targets:
        chosen: list[str] = []
        for name in targets:
            if name not in TARGET_NAMES:
                raise HmbuildError(f"Unknown target '{name}'; package takes ohos-arm64, ohos-x86_64 or linux-arm64 "
                                   "(layout check).")
            if name == "host":
                raise HmbuildError("The host target is not an ABI a phone runs, so it cannot go into a HAR; pack "
                                   "ohos-arm64 / ohos-x86_64, or linux-arm64 for a layout check.")
            if name not in chosen:
                chosen.append(name)
        abis = [(OHOS_ABIS | LAYOUT_CHECK_ABIS)[t] for t in chosen]
        for abi in set(abis):
            both = [t for t in chosen if (OHOS_ABIS | LAYOUT_CHECK_ABIS)[t] == abi]
            if len(both) > 1:
                raise HmbuildError(f"{' and '.join(both)} both go to libs/{abi}; pack one of them.")
        return chosen
    built = [t for t in OHOS_ABIS if (project.build_dir(t, build_type) / lib).is_file()]
    if built:
        return built
    if (project.build_dir("linux-arm64", build_type) / lib).is_file():
        raise HmbuildError(f"No OpenHarmony build of {lib} ({build_type}) exists to pack; build one with `hmbuild build "
                           "--target ohos-arm64`, or pack the linux-arm64 build for a layout check with `hmbuild package "
                           "--target linux-arm64`.")
    raise HmbuildError(f"No {lib} for a phone ABI has been built in {project.root} yet ({build_type}); run {BUILD_HINT} "
                       "first.")


def _library(project: Project, target: str, abi: str, build_type: str) -> bytes:
    lib = project.build_dir(target, build_type) / project.library_name
    if not lib.is_file():
        build_cmd = f"`hmbuild -C {project.root} build --target {target}`"
        missing = resolve_target(target, resolve_ohos_stl(project)).missing if target in OHOS_ABIS else ()
        if missing:
            raise HmbuildError(f"{project.library_name} for {abi} ({target}, {build_type}) was not built, and this "
                               f"machine cannot build it: {target} needs {missing[0].what}; {missing[0].fix}, then "
                               f"run {build_cmd}.")
        raise HmbuildError(f"{project.library_name} for {abi} ({target}, {build_type}) was not built; run {build_cmd} "
                           "first.")
    data = lib.read_bytes()
    machine = _elf_machine(data)
    if machine != ELF_MACHINE[abi]:
        raise HmbuildError(f"{lib} is not an ELF library for {abi} (e_machine {machine}, expected "
                           f"{ELF_MACHINE[abi]}); rebuild it with `hmbuild build --target {target}`.")
    return data


def _project_files(project: Project) -> list[tuple[str, Path]]:
    """(path inside package/, source file) of the module's own files, checked to exist."""
    root, name = project.root, project.name
    types_dir = root / "src/main/cpp/types" / f"lib{name}"
    required = [root / "Index.ets", root / "src/main/module.json5", types_dir / "Index.d.ts",
                types_dir / "oh-package.json5"]
    for path in required:
        if not path.is_file():
            raise HmbuildError(f"{path} is missing; a HAR needs it (restore it, or regenerate the project with "
                               "`hmbuild new`).")
    ets = sorted(p for p in (root / "src/main/ets").rglob("*.ets") if p.is_file())
    if not ets:
        raise HmbuildError(f"{root / 'src/main/ets'} holds no .ets file; the HAR's ArkTS wrapper is missing.")
    files = [*required, *ets]
    files += sorted(p for p in types_dir.iterdir() if p.is_file() and p not in required)
    resources = root / "src/main/resources"
    if resources.is_dir():
        files += sorted(p for p in resources.rglob("*") if p.is_file())
    files += [root / f for f in ("README.md", "CHANGELOG.md", "LICENSE") if (root / f).is_file()]
    return [(p.relative_to(root).as_posix(), p) for p in files]


def _manifest(project: Project, meta: dict) -> bytes:
    """package/oh-package.json5: the module's own fields, with types naming the .d.ts inside."""
    name = project.name
    types = f"src/main/cpp/types/lib{name}/Index.d.ts"
    out = {
        "name": meta.get("name", name),
        "version": meta["version"],
        "description": meta.get("description", ""),
        "main": meta.get("main", "Index.ets"),
        "types": types,
        "author": meta.get("author", ""),
        "license": meta.get("license", ""),
        "dependencies": meta.get("dependencies", {f"lib{name}.so": f"file:./src/main/cpp/types/lib{name}"}),
    }
    return (json.dumps(out, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _build_profile(project: Project, abis: list[str]) -> bytes:
    """package/build-profile.json5: the project's own, with abiFilters naming the ABIs this HAR
    carries, so an app's build (hvigor) never asks for a libs/<abi>/ that is not inside."""
    path = project.root / "build-profile.json5"
    profile = read_json5(path) if path.is_file() else {"apiType": "stageMode"}
    build_option = profile.get("buildOption")
    if not isinstance(build_option, dict):
        build_option = profile["buildOption"] = {}
    native = build_option.get("externalNativeOptions")
    if not isinstance(native, dict):
        native = build_option["externalNativeOptions"] = {}
    native["abiFilters"] = abis
    return (json.dumps(profile, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _note(project: Project, targets: list[str]) -> bytes:
    return (f"This HAR was packed by hmbuild for a layout check only.\n\n"
            f"libs/arm64-v8a/{project.library_name} is not an OHOS binary: it was built for {', '.join(targets)}\n"
            f"(aarch64 Linux, glibc), not for OpenHarmony (aarch64-linux-ohos, musl), and a HarmonyOS device\n"
            f"cannot load it.\n"
            f"Build with the OpenHarmony SDK (`hmbuild build --target ohos-arm64`) and pack again for a real HAR.\n"
            ).encode("utf-8")


def package_har(project: Project, targets: list[str] | None, build_type: str) -> HarResult:
    """Pack the project's built libraries (see the module docstring) into build/<name>-<version>.har."""
    meta = _package_meta(project)
    chosen = _choose_targets(project, targets, build_type)
    abi_of = OHOS_ABIS | LAYOUT_CHECK_ABIS
    libs = {t: _library(project, t, abi_of[t], build_type) for t in chosen}
    layout_only = [t for t in chosen if t in LAYOUT_CHECK_ABIS]

    entries: dict[str, tuple[bytes, int]] = {}
    for rel, src in _project_files(project):
        entries[f"package/{rel}"] = (src.read_bytes(), 0o644)
    entries["package/oh-package.json5"] = (_manifest(project, meta), 0o644)
    entries["package/build-profile.json5"] = (_build_profile(project, sorted({abi_of[t] for t in chosen})), 0o644)
    for t, data in libs.items():
        entries[f"package/libs/{abi_of[t]}/{project.library_name}"] = (data, 0o755)
        if t in OHOS_ABIS:
            # c++_shared: libc++_shared.so is not on the device's allow-list, so the HAR carries it.
            from hmbuild.build.ohos import shipped_libraries

            for extra in shipped_libraries(resolve_target(t, resolve_ohos_stl(project))):
                entries[f"package/libs/{abi_of[t]}/{extra.name}"] = (extra.read_bytes(), 0o755)
    warnings = []
    if layout_only:
        entries[f"package/{NOTE_NAME}"] = (_note(project, layout_only), 0o644)
        warnings.append(f"{project.library_name} in libs/arm64-v8a comes from {', '.join(layout_only)}: it is an "
                        "aarch64 Linux (glibc) library, not an OHOS binary, packed for layout checks only; a "
                        "HarmonyOS device cannot load it.")
    blob = archive_bytes(entries)

    out = har_path(project)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    except OSError as exc:
        raise HmbuildError(f"Could not write to {out.parent} ({exc.strerror}); check permissions and free space.") from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except OSError as exc:
        raise HmbuildError(f"Could not write {out} ({exc.strerror}); check permissions and free space.") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return HarResult(har=out, abis=[abi_of[t] for t in chosen], targets=chosen, files=sorted(entries),
                     not_ohos_binary=bool(layout_only), size_bytes=len(blob), warnings=warnings)
