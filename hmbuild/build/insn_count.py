"""Instruction and byte counts of an aarch64 program under qemu-user, per function.

qemu's TCG plugin interface lets a shared object watch translation; hmbuild's plugin
(qemu_plugin/insn_count.c, built here with the host C compiler into the cache) adds one inline
counter per translated block and knows each block's instructions and the bytes its loads and
stores move. `counted_run` runs a command under it and returns a `Counts`: the blocks, mapped to
the ELF symbol that holds them. With one guest thread the counts are exact and repeat from run to
run, unlike timings, so they can guard performance in CI.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hmbuild.errors import HmbuildError, exit_reason
from hmbuild.resources import cache_dir

PLUGIN_SOURCE = Path(__file__).parent / "qemu_plugin" / "insn_count.c"
QEMU_FIX = "apt-get install -y qemu-user (Debian 12's qemu-user 7.2 loads TCG plugins)"


def plugin_path(build: bool = True) -> Path:
    """The plugin built for this qemu's host, keyed by its source, compiled once into the cache."""
    source = PLUGIN_SOURCE.read_bytes()
    out = cache_dir() / "qemu-plugins" / f"insn_count-{hashlib.sha256(source).hexdigest()[:12]}.so"
    if out.is_file() or not build:
        return out
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise HmbuildError("No host C compiler was found to build the qemu counting plugin; install one with "
                           "`apt-get install -y gcc`.")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        part = Path(tmp) / out.name
        proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-o", str(part),
                               str(PLUGIN_SOURCE), "-lpthread"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise HmbuildError(f"Building the qemu counting plugin with {cc} failed: "
                               f"{(proc.stderr.strip().splitlines() or ['no output'])[-1]}.")
        part.replace(out)
    return out


def check_plugins(qemu: str) -> None:
    """One sentence when this qemu cannot load TCG plugins (built without them, or too old)."""
    try:
        help_text = subprocess.run([qemu, "-h"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        raise HmbuildError(f"{qemu} does not run; install it with `{QEMU_FIX}`.") from None
    if "-plugin" not in help_text:
        raise HmbuildError(f"{qemu} cannot load TCG plugins (it was built without them), so it cannot count "
                           f"instructions; install one that can: `{QEMU_FIX}`.")


@dataclass(frozen=True)
class FunctionCounts:
    instructions: int = 0
    loaded: int = 0
    stored: int = 0

    def __add__(self, o: "FunctionCounts") -> "FunctionCounts":
        return FunctionCounts(self.instructions + o.instructions, self.loaded + o.loaded, self.stored + o.stored)

    def __sub__(self, o: "FunctionCounts") -> "FunctionCounts":
        return FunctionCounts(self.instructions - o.instructions, self.loaded - o.loaded, self.stored - o.stored)


@dataclass
class Counts:
    """One counted run: totals, and the same split by function (demangled, without parameters)."""
    functions: dict[str, FunctionCounts] = field(default_factory=dict)
    exact_loaded: int | None = None  # with exact=True: the bytes every access moved, from callbacks
    exact_stored: int | None = None

    @property
    def total(self) -> FunctionCounts:
        t = FunctionCounts()
        for c in self.functions.values():
            t = t + c
        return t


def counted_run(runner: tuple[str, ...], argv: list[str], env: dict[str, str] | None = None, exact: bool = False,
                what: str = "The counted run") -> tuple[Counts, str]:
    """Runs `runner + argv` (runner: qemu-aarch64 and its options) with the counting plugin and returns
    the counts and the program's stdout. A failing program is one sentence with its last stderr line."""
    check_plugins(runner[0])
    plugin = plugin_path()
    with tempfile.TemporaryDirectory(prefix="hmbuild-count-") as tmp:
        out = Path(tmp) / "counts.txt"
        arg = f"{plugin},out={out}" + (",exact=1" if exact else "")
        cmd = [runner[0], "-plugin", arg, *runner[1:], *argv]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, errors="replace")
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or [exit_reason(proc.returncode)])[-1]
            raise HmbuildError(f"{what} failed under qemu: {last.strip().rstrip('.')}.")
        if not out.is_file():
            raise HmbuildError(f"{what} left no counts: qemu did not run the plugin's exit hook; run it again, and "
                               f"check that `{runner[0]} -plugin {plugin},out=FILE` works on this machine.")
        return parse_counts(out.read_text(encoding="utf-8", errors="replace")), proc.stdout


@dataclass(frozen=True)
class _Mapping:
    start: int
    end: int
    offset: int
    path: str


def parse_counts(text: str) -> Counts:
    """The plugin's file -> Counts: each block's host address is looked up in the host's maps (guest
    memory sits at a fixed offset in qemu-user), giving a file and offset, then an ELF symbol."""
    blocks, maps, counts = [], [], Counts()
    in_maps = False
    for line in text.splitlines():
        if in_maps:
            if line == "end":
                break
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                maps.append(_Mapping(lo, hi, int(parts[2], 16), parts[5].strip()))
        elif line.startswith("tb "):
            _, vaddr, haddr, insns, ld, st, execs, cb_ld, cb_st = line.split()
            n = int(execs)
            blocks.append((int(haddr, 16), FunctionCounts(int(insns) * n, int(ld) * n + int(cb_ld),
                                                          int(st) * n + int(cb_st))))
        elif line.startswith("exact "):
            counts.exact_loaded, counts.exact_stored = (int(x) for x in line.split()[1:3])
        elif line == "maps":
            in_maps = True
    maps.sort(key=lambda m: m.start)
    starts = [m.start for m in maps]
    raw: dict[tuple[str, str], FunctionCounts] = {}
    for haddr, c in blocks:
        k = bisect.bisect_right(starts, haddr) - 1
        key = ("", "[unknown]")
        if k >= 0 and haddr < maps[k].end:
            m = maps[k]
            key = (m.path, _symbols(m.path).lookup(haddr - m.start + m.offset))
        raw[key] = raw.get(key, FunctionCounts()) + c
    names = _demangle([name for _, name in raw])
    for (path, name), c in raw.items():
        shown = names.get(name, name)
        if name.startswith("["):
            shown = f"[{Path(path).name or 'unknown'}]"
        counts.functions[shown] = counts.functions.get(shown, FunctionCounts()) + c
    return counts


class _SymbolTable:
    """An ELF file's function symbols by file offset (PT_LOAD maps file offsets to addresses)."""

    def __init__(self, path: str):
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.names: list[str] = []
        self.segments: list[tuple[int, int, int]] = []  # (file offset, size, vaddr)
        try:
            from elftools.elf.elffile import ELFFile

            with open(path, "rb") as fh:
                elf = ELFFile(fh)
                self.segments = [(s["p_offset"], s["p_filesz"], s["p_vaddr"]) for s in elf.iter_segments()
                                 if s["p_type"] == "PT_LOAD"]
                syms = {}
                for name in (".symtab", ".dynsym"):
                    sec = elf.get_section_by_name(name)
                    if sec is None:
                        continue
                    for s in sec.iter_symbols():
                        if s["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC") and s["st_value"] and s.name:
                            syms.setdefault(s["st_value"], (s["st_size"], s.name))
                    if syms:
                        break  # .symtab holds .dynsym's functions too
        except (OSError, Exception):  # not an ELF file, or unreadable: its blocks stay [file]
            syms = {}
        for addr in sorted(syms):
            size, name = syms[addr]
            self.starts.append(addr)
            self.ends.append(addr + max(size, 1))
            self.names.append(name)

    def lookup(self, file_offset: int) -> str:
        for off, size, vaddr in self.segments:
            if off <= file_offset < off + size:
                addr = file_offset - off + vaddr
                k = bisect.bisect_right(self.starts, addr) - 1
                # Past the symbol's end: code with no symbol of its own (a stripped library's locals).
                if k >= 0 and addr < self.ends[k]:
                    return self.names[k]
        return "[?]"


@lru_cache(maxsize=64)
def _symbols(path: str) -> _SymbolTable:
    return _SymbolTable(path)


def _demangle(names: list[str]) -> dict[str, str]:
    """C++ names as people read them, without parameter lists (c++filt -p), anonymous namespaces dropped."""
    mangled = sorted({n for n in names if n.startswith("_Z")})
    out = {}
    if mangled and shutil.which("c++filt"):
        proc = subprocess.run(["c++filt", "-p"], input="\n".join(mangled) + "\n", capture_output=True, text=True)
        if proc.returncode == 0:
            out = dict(zip(mangled, proc.stdout.splitlines()))
    return {n: out.get(n, n).replace("(anonymous namespace)::", "") for n in names}
