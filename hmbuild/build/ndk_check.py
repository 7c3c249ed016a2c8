"""The NDK-module check: is this shared library a module a HarmonyOS NEXT device will load?

`check_module` reads the ELF file (pyelftools) and returns an `NdkReport` of named checks:

- machine:       e_machine is the target's (aarch64 / x86_64), and the file is a shared object;
- interp:        no PT_INTERP (a module is loaded by the app's process, never executed);
- needed:        every DT_NEEDED is an NDK library (libc.so, libace_napi.z.so,
                 libhilog_ndk.z.so, or libc++_shared.so shipped next to the module);
- glibc:         no .gnu.version_r need for GLIBC_* / GLIBCXX_* / CXXABI_* (a glibc build);
- bind-now:      DT_FLAGS BIND_NOW or DT_FLAGS_1 NOW (OpenHarmony links everything -z now);
- ohos-note:     a `.note.ohos.ident` section or a PT_NOTE owned by "OHOS" (crtbrand.s);
- imports:       every undefined dynamic symbol is exported by an NDK list (libnapi.ndk.json,
                 libhilog.ndk.json, OpenHarmony musl's libc.map.txt) or by a shipped library.
                 Weak undefined symbols are allowed: the dynamic linker binds an absent weak
                 symbol to 0 (crtbegin's __register_frame_info, __cxa_finalize, ...). They are
                 named in the detail when the lists lack them, but do not fail the check;
- registration:  the module imports napi_module_register and has a non-empty DT_INIT_ARRAY, the
                 way ArkTS loads a module (a constructor registers it during dlopen). A Node-API
                 addon (napi_register_module_v1, as npm's OHOS builds are) fails this check when
                 `require_arkts_registration` is true and passes, named as such, when it is false.

Bad input (a missing file, not an ELF file, unreadable lists) raises HmbuildError.
"""

from __future__ import annotations

import fnmatch
import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from hmbuild.errors import HmbuildError

NDK_LIBRARIES = ("libc.so", "libace_napi.z.so", "libhilog_ndk.z.so", "libc++_shared.so")
# The NDK libraries a stand-in or real sysroot has under usr/lib/<triple>/.
SYSROOT_LIBRARIES = ("libc.so", "libace_napi.z.so", "libhilog_ndk.z.so")
ARCH_MACHINES = {"aarch64": "EM_AARCH64", "x86_64": "EM_X86_64"}
GLIBC_VERSION = re.compile(r"^(GLIBC|GLIBCXX|CXXABI)_")
SHOWN_NAMES = 8  # offending names listed in a detail; the count says how many there are

_DT_FLAGS_BIND_NOW = 0x8
_DT_FLAGS_1_NOW = 0x1


def _elf(path: Path):
    """An open ELFFile of `path`, or HmbuildError."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    path = Path(path)
    if not path.is_file():
        raise HmbuildError(f"{path} does not exist or is not a file; pass the path of a built lib<name>.so.")
    data = path.read_bytes()
    if data[:4] != b"\x7fELF":
        raise HmbuildError(f"{path} is not an ELF file; pass a shared library (lib<name>.so or a .node addon).")
    import io

    try:
        return ELFFile(io.BytesIO(data)), data
    except (ELFError, struct.error, ValueError) as exc:
        raise HmbuildError(f"{path} is not a readable ELF file ({exc}); rebuild it.") from None


def _dynsyms(elf):
    sec = elf.get_section_by_name(".dynsym")
    if sec is None:
        for s in elf.iter_sections():
            if s["sh_type"] == "SHT_DYNSYM":
                sec = s
                break
    return list(sec.iter_symbols()) if sec is not None else []


def defined_dynamic_symbols(path: Path) -> frozenset[str]:
    """The names a shared library exports: its defined, non-local dynamic symbols."""
    elf, _ = _elf(path)
    return frozenset(s.name for s in _dynsyms(elf)
                     if s.name and s["st_shndx"] != "SHN_UNDEF" and s["st_info"]["bind"] != "STB_LOCAL")


def parse_version_script(text: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """The exported names and wildcard patterns of a linker version script (libc.map.txt): what
    is under `global:`; `local:` entries and commented-out names (# or /* */) are not exported.
    `extern "C++" { ... }` blocks are read like the rest."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"#[^\n]*", " ", text)
    names: set[str] = set()
    patterns: list[str] = []
    scope = "global"  # a node with no label exports what it lists
    depth = 0  # outside braces are version node names and their parents, not symbols
    for token in re.findall(r'global:|local:|"[^"]*"|[{}]|[^\s;{}]+', text):
        if token in "{}":
            depth += 1 if token == "{" else -1
            if depth == 0:
                scope = "global"
            continue
        if depth == 0:
            continue
        if token in ("global:", "local:"):
            scope = token[:-1]
            continue
        if token == "extern" or token.startswith('"'):
            continue
        if scope != "global":
            continue
        if any(c in token for c in "*?["):
            patterns.append(token)
        else:
            names.add(token)
    return frozenset(names), tuple(patterns)


def _ndk_json(path: Path) -> frozenset[str]:
    try:
        entries = json.loads(Path(path).read_text())
        return frozenset(e["name"] for e in entries)
    except FileNotFoundError:
        raise HmbuildError(f"{path} does not exist; pass the folder that holds the OpenHarmony public files "
                           "(interface_sdk_c/, third_party_musl/).") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise HmbuildError(f"{path} is not an NDK export list (a JSON array of {{\"name\": ...}}): {exc}.") from None


@dataclass(frozen=True)
class NdkExports:
    """What the device's NDK libraries export: for each library, exact names and wildcard patterns."""

    names: dict[str, frozenset[str]]
    patterns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def from_files(cls, napi_json: Path, hilog_json: Path, libc_map: Path) -> "NdkExports":
        try:
            libc_text = Path(libc_map).read_text()
        except FileNotFoundError:
            raise HmbuildError(f"{libc_map} does not exist; pass OpenHarmony musl's libc.map.txt.") from None
        libc_names, libc_patterns = parse_version_script(libc_text)
        if not libc_names:
            raise HmbuildError(f"{libc_map} lists no exported names; pass OpenHarmony musl's libc.map.txt.")
        return cls(names={"libace_napi.z.so": _ndk_json(napi_json), "libhilog_ndk.z.so": _ndk_json(hilog_json),
                          "libc.so": libc_names},
                   patterns={"libc.so": libc_patterns} if libc_patterns else {},
                   source=f"{napi_json}, {hilog_json}, {libc_map}")

    @classmethod
    def from_public(cls, directory: Path) -> "NdkExports":
        """From a folder laid out like ../shared/ohos-public."""
        d = Path(directory)
        if not d.is_dir():
            raise HmbuildError(f"{d} is not a folder; pass the folder that holds the OpenHarmony public files.")
        return cls.from_files(d / "interface_sdk_c/arkui/napi/libnapi.ndk.json",
                              d / "interface_sdk_c/hiviewdfx/hilog/libhilog.ndk.json",
                              d / "third_party_musl/libc.map.txt")

    @classmethod
    def from_sysroot(cls, sysroot: Path, triple: str) -> "NdkExports":
        """From a real SDK's sysroot (no lists there): the defined dynamic symbols of
        usr/lib/<triple>/{libc.so, libace_napi.z.so, libhilog_ndk.z.so}."""
        libdir = Path(sysroot) / "usr" / "lib" / triple
        names = {}
        for lib in SYSROOT_LIBRARIES:
            if not (libdir / lib).is_file():
                raise HmbuildError(f"{libdir / lib} does not exist; pass the SDK's native/sysroot and the "
                                   "target triple (aarch64-linux-ohos or x86_64-linux-ohos).")
            names[lib] = defined_dynamic_symbols(libdir / lib)
        return cls(names=names, source=str(libdir))

    def provider(self, name: str) -> str | None:
        """The NDK library that exports `name`, or None."""
        for lib, names in self.names.items():
            if name in names:
                return lib
        for lib, pats in self.patterns.items():
            if any(fnmatch.fnmatchcase(name, p) for p in pats):
                return lib
        return None


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class NdkReport:
    module: Path
    arch: str
    checks: tuple[Check, ...]
    kind: str  # "ArkTS module", "Node-API addon" or "unregistered"

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def lines(self) -> list[str]:
        head = f"{self.module}: {'passes' if self.ok else 'fails'} the NDK-module check for {self.arch} ({self.kind})"
        return [head] + [f"  {'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}" for c in self.checks]

    def to_json(self) -> dict:
        return {"module": str(self.module), "arch": self.arch, "ok": self.ok, "kind": self.kind,
                "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks]}


def _names(names: Sequence[str]) -> str:
    names = sorted(names)
    shown = ", ".join(names[:SHOWN_NAMES])
    more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    return f"{len(names)}: {shown}{more}"


def _ohos_note(elf, data: bytes) -> bool:
    if elf.get_section_by_name(".note.ohos.ident") is not None:
        return True
    # Read PT_NOTE by hand: crtbrand's note is not padded the way pyelftools expects.
    little = elf.little_endian
    fmt = "<III" if little else ">III"
    for seg in elf.iter_segments():
        if seg["p_type"] != "PT_NOTE":
            continue
        blob = data[seg["p_offset"]:seg["p_offset"] + seg["p_filesz"]]
        pos = 0
        while pos + 12 <= len(blob):
            namesz, descsz, _ = struct.unpack_from(fmt, blob, pos)
            owner = blob[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if owner == b"OHOS":
                return True
            pos += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    return False


def check_module(path: Path, *, arch: str, exports: NdkExports, shipped: Sequence[Path] = (),
                 require_arkts_registration: bool = True) -> NdkReport:
    """Checks one module against what an OpenHarmony device provides. `shipped` are libraries
    that travel with it in the HAR (libc++_shared.so); their exports count as available."""
    if arch not in ARCH_MACHINES:
        raise HmbuildError(f"Unknown arch {arch!r}; use one of {', '.join(ARCH_MACHINES)}.")
    path = Path(path)
    elf, data = _elf(path)
    shipped_names: dict[str, frozenset[str]] = {Path(s).name: defined_dynamic_symbols(Path(s)) for s in shipped}
    checks: list[Check] = []

    machine = elf["e_machine"]
    etype = elf["e_type"]
    want = ARCH_MACHINES[arch]
    checks.append(Check("machine", machine == want and etype == "ET_DYN",
                        f"{machine}, {etype}" + ("" if machine == want and etype == "ET_DYN"
                                                 else f" (want {want}, ET_DYN)")))

    interp = next((s for s in elf.iter_segments() if s["p_type"] == "PT_INTERP"), None)
    checks.append(Check("interp", interp is None,
                        "no PT_INTERP" if interp is None else f"has PT_INTERP {interp.get_interp_name()} "
                        "(linked as an executable's or for another libc)"))

    dynamic = elf.get_section_by_name(".dynamic")
    tags = list(dynamic.iter_tags()) if dynamic is not None else []
    needed = [t.needed for t in tags if t.entry.d_tag == "DT_NEEDED"]
    allowed = set(NDK_LIBRARIES) | set(shipped_names)
    bad_needed = [n for n in needed if n not in allowed]
    checks.append(Check("needed", not bad_needed,
                        f"NEEDED {', '.join(needed) or 'nothing'}" if not bad_needed
                        else f"NEEDED libraries that are not NDK libraries: {', '.join(bad_needed)}"))

    glibc: set[str] = set()
    for sec in elf.iter_sections():
        if sec["sh_type"] == "SHT_GNU_verneed":
            for _verneed, auxes in sec.iter_versions():
                glibc.update(a.name for a in auxes if GLIBC_VERSION.match(a.name))
    checks.append(Check("glibc", not glibc,
                        "no glibc version needs" if not glibc
                        else f"needs glibc symbol versions {_names(glibc)}"))

    flags = next((t.entry.d_val for t in tags if t.entry.d_tag == "DT_FLAGS"), 0)
    flags_1 = next((t.entry.d_val for t in tags if t.entry.d_tag == "DT_FLAGS_1"), 0)
    bind_now = bool(flags & _DT_FLAGS_BIND_NOW) or bool(flags_1 & _DT_FLAGS_1_NOW)
    checks.append(Check("bind-now", bind_now, "BIND_NOW" if bind_now
                        else "no BIND_NOW (DT_FLAGS BIND_NOW / DT_FLAGS_1 NOW); link with -Wl,-z,now"))

    note = _ohos_note(elf, data)
    checks.append(Check("ohos-note", note, ".note.ohos.ident present" if note
                        else "no .note.ohos.ident (OHOS note); link with OpenHarmony's crti.o/crtn.o"))

    syms = _dynsyms(elf)
    undefined = [s for s in syms if s.name and s["st_shndx"] == "SHN_UNDEF"]
    defined = {s.name for s in syms if s.name and s["st_shndx"] != "SHN_UNDEF"}

    def available(name: str) -> bool:
        return exports.provider(name) is not None or any(name in n for n in shipped_names.values())

    strong_missing = sorted({s.name for s in undefined if s["st_info"]["bind"] != "STB_WEAK" and not available(s.name)})
    weak_missing = sorted({s.name for s in undefined if s["st_info"]["bind"] == "STB_WEAK" and not available(s.name)})
    detail = (f"all {len(undefined)} imports are NDK exports" if not strong_missing
              else f"imports no NDK library exports {_names(strong_missing)}")
    if weak_missing:
        detail += f"; weak, allowed to be absent {_names(weak_missing)}"
    checks.append(Check("imports", not strong_missing, detail))

    imports_register = any(s.name == "napi_module_register" for s in undefined)
    init_array = next((t.entry.d_val for t in tags if t.entry.d_tag == "DT_INIT_ARRAYSZ"), 0)
    node_way = "napi_register_module_v1" in defined
    if imports_register and init_array > 0:
        kind, ok = "ArkTS module", True
        detail = "registers through napi_module_register from a constructor (DT_INIT_ARRAY)"
    elif node_way:
        kind, ok = "Node-API addon", not require_arkts_registration
        detail = "registers the Node way (napi_register_module_v1), not through napi_module_register"
        if ok:
            detail += "; accepted as a Node-API addon"
    else:
        kind, ok = "unregistered", False
        detail = ("imports napi_module_register but has no DT_INIT_ARRAY constructor to call it" if imports_register
                  else "does not import napi_module_register (and defines no napi_register_module_v1)")
    checks.append(Check("registration", ok, detail))

    return NdkReport(module=path, arch=arch, checks=tuple(checks), kind=kind)
