#!/usr/bin/env python3
"""Static cycle estimates (llvm-mca-19) of the INT4 GEMV inner loops on aarch64 cores we do not have.

For each kernel this script compiles the source to assembly with clang-19 (--target=aarch64-linux-gnu
-O3), cuts out the hot inner loop, runs `llvm-mca-19 -mtriple=aarch64 -mcpu=CPU -iterations=N` on it
and converts llvm-mca's total cycles / iterations into **cycles per 256 weights**:

    cycles_per_256 = (total_cycles / iterations) * 256 / weights_per_iteration

weights_per_iteration is counted from the loop's own instructions, so it stays right if the compiler
unrolls: every `sdot` (by element) of a 4-row kernel covers 4 rows x 4 columns = 16 weights, a plain
`sdot` (ggml's one-row dot) 16 weights of one row, every `smull`/`smlal` (8 int8 lanes, baseline
NEON) 8 weights, every `smmla` 2 rows x 8 columns = 16 weights (times 2 activation rows, see below).
E.g. ggml's repacked gemv loop does 8 sdot per iteration = 4 rows x 32 columns = 128 weights, so its
cycles per 256 weights are twice its cycles per iteration; the project's G128 loop does 32 sdot =
4 rows x 128 columns = 512 weights per iteration, so it is halved.

The i8mm prefill kernel (hm_tile_4x2) multiplies every weight by 2 activation rows; its figure is
given per 256 weights *per activation row* (cycles per iteration * 256 / (weights * 2)), i.e. the
same amount of multiply-add work as one 256-weight GEMV. On one activation row (decode) the i8mm
kernel set runs the dotprod loop (dot4_hm), compiled again with +i8mm: that is the "i8mm-b1" row.

Decode kernels of the dotprod set (the engine's one-activation-row path on dotprod / i8mm cores):
tile_x4<X4Q8, 4, 1> and tile_x4<X4Q5, 4, 1> (interleaved Q8_0 / Q5_0 row groups, 4 groups = 16 rows
per block of 32 columns: 32 sdot by element = 512 weights per iteration), rows hm-x4-q8_0 / -q5_0,
and tiles_hm_row<G, 4> (HM_Q4, four 4-row tiles against one activation row, 128 columns per step =
2048 weights), rows hm-row4-gG. clang-19 keeps tiles_hm_row's tile loop as a loop inside the step
and hoists the 32 activation lane broadcasts out of it (dup, spilled, then plain sdot); the step
is measured as the step loop with the tile loop's body written out 4 times (labels dropped), so the
broadcasts are counted once per step as they run (marked `^`). Their ratios are taken against the
ggml kernel llama.cpp runs for the same type: ggml_gemv_q8_0_4x4_q8_0 (Q8_0 repacked at load, 4 rows
x 4 columns) for X4Q8, ggml_vec_dot_q5_0_q8_0 (Q5_0 has no repacked layout in ggml) for X4Q5, the
repacked Q4_0 gemv for HM_Q4 (whose targets below apply to hm-row4 too); ggml_vec_dot_q8_0_q8_0 is
listed for reference.

Compared with: ggml's ggml_vec_dot_q4_0_q8_0 (plain Q4_0, one row, 2 blocks = 64 weights per
iteration) and ggml_gemv_q4_0_4x4_q8_0 (Q4_0 repacked 4 rows x 4 columns, 128 weights per
iteration), from the llama.cpp copy inside the llama-cpp-python sdist, compiled with clang-19 -O3
-march=armv8.2-a+dotprod (and ggml_vec_dot_q4_0_q8_0 once more with -march=armv8-a, ggml's own
non-dotprod fallback, the peer of the baseline NEON set). Targets (issue 6): HM_Q4 G32 <= 1.0x and G128 <= 0.9x ggml's repacked
figure on every CPU of the default list.

Project kernels are reached through a temporary harness file that #includes the unchanged kernel
.cpp file and adds extern "C" noinline wrappers around dot4_hm<G> / hm_tile_4x2<G> /
tiles_hm_row<G, 4> / tile_x4<X4Q8|X4Q5, 4, 1> (they live in an anonymous namespace); when the
compiler turns a wrapper into a tail call (`b dot4_hm<G>`, not inlined), the loop is taken from the
callee. Each file gets the flags native/src/kernels/kernels.cmake
gives it (baseline NEON: the target's default -march=armv8-a; dotprod: armv8.2-a+dotprod; i8mm:
armv8.2-a+dotprod+i8mm; all -ffp-contract=off).

Why the loop is found by its backward branch instead of LLVM-MCA-BEGIN/END markers: a marker is an
`asm volatile` statement inside the loop body, which is a scheduling barrier and would change the
code the compiler emits (instruction order across the marker, unrolling, register allocation) -
exactly what we want to measure. The backward branch needs no change to the source: the loop is the
innermost range [label .. branch back to that label] that contains the kernel's signature
instruction (sdot / smull / smmla), the one with the most of them if several (ggml's vec_dot also
has an auto-vectorised remainder loop, which has none or fewer).

Caveats: llvm-mca assumes every load hits L1 and models no front-end stalls; the figures are
core-bound throughput, not memory-bound GEMV speed. Cortex-A76, Neoverse-N1 and Cortex-A55 have no
i8mm: llvm-mca is run with -mattr=+i8mm there so that it accepts smmla, and its scheduling of
smmla on those cores is hypothetical (marked `*`); use --cpus neoverse-n2,cortex-a510 for cores that
have it.

Usage:  python3 scripts/mca_int4.py [--json] [--cpus cortex-a76,neoverse-n1,cortex-a55]
                                    [--iterations 100] [--sdist FILE] [--keep DIR]
Needs clang-19 and llvm-19 (apt-get install -y clang-19 llvm-19 lld-19) and pip for the sdist.
stdlib only; Python 3.11.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KDIR = REPO / "native" / "src" / "kernels"
NATIVE_INC = REPO / "native" / "include"
SDIST_DIR = Path(os.environ.get("HMBUILD_CACHE", Path.home() / ".cache" / "hmbuild")) / "llama-sdist"
DEFAULT_CPUS = ["cortex-a76", "neoverse-n1", "cortex-a55"]
GROUPS = (32, 64, 128)
# -mcpu names whose cores have FEAT_I8MM (smmla); on any other core an smmla figure is hypothetical.
I8MM_CPUS = {"cortex-a510", "cortex-a520", "cortex-a710", "cortex-a715", "cortex-a720", "cortex-x2",
             "cortex-x3", "cortex-x4", "neoverse-n2", "neoverse-n3", "neoverse-v1", "neoverse-v2",
             "neoverse-v3", "neoverse-512tvb"}
TARGETS = {32: 1.0, 128: 0.9}  # max ratio to ggml's repacked gemv, per group
REPACKED = "ggml-gemv-q4_0-4x4"
X4_LAYOUTS = ("X4Q8", "X4Q5")  # tile_x4's interleaved Q8_0 / Q5_0 row groups (kernels_neon_body.h)

TRIPLE = "--target=aarch64-linux-gnu"
GGML_FLAGS = [TRIPLE, "-O3", "-march=armv8.2-a+dotprod"]
GGML_V80_FLAGS = [TRIPLE, "-O3", "-march=armv8-a"]  # ggml's own NEON fallback, the peer of baseline NEON
SET_FLAGS = {  # as native/src/kernels/kernels.cmake
    "neon": [TRIPLE, "-O3", "-march=armv8-a", "-ffp-contract=off"],
    "dotprod": [TRIPLE, "-O3", "-march=armv8.2-a+dotprod", "-ffp-contract=off"],
    "i8mm": [TRIPLE, "-O3", "-march=armv8.2-a+dotprod+i8mm", "-ffp-contract=off"],
}
SET_FILE = {"neon": "kernels_neon.cpp", "dotprod": "kernels_neon_dotprod.cpp", "i8mm": "kernels_neon_i8mm.cpp"}

# Signature instructions: regex on "mnemonic operands" -> weights per instruction.
SIG_SDOT_LANE = (r"^sdot\s+v\d+\.4s,\s*v\d+\.16b,\s*v\d+\.4b\[\d\]", 16)  # 4 rows x 4 columns
SIG_SDOT_VEC = (r"^sdot\s+v\d+\.4s,\s*v\d+\.16b,\s*v\d+\.16b", 16)        # 16 columns of one row
SIG_SMULL = (r"^(smull2?|smlal2?)\s+v\d+\.8h,", 8)                        # 8 int8 products
SIG_SMMLA = (r"^smmla\s", 16)                                            # 2 rows x 8 columns
# tiles_hm_row: clang hoists the activations' lane broadcasts out of the tile loop (dup, then plain
# sdot), so its sdots are either form; each still covers 4 rows x 4 columns.
SIG_SDOT_4ROW = (r"^sdot\s+v\d+\.4s,\s*v\d+\.16b,\s*v\d+\.(?:4b\[\d\]|16b)", 16)


class Fail(Exception):
    pass


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise Fail(f"`{' '.join(cmd[:3])} ...` failed: {(p.stderr or p.stdout).strip()[:2000]}")
    return p


def need_tools() -> None:
    for t in ("clang-19", "clang++-19", "llvm-mca-19"):
        if not shutil.which(t):
            raise Fail(f"{t} not found; install it with `apt-get install -y clang-19 llvm-19 lld-19`.")


def find_sdist(explicit: str | None) -> Path:
    if explicit:
        p = Path(explicit)
        if not p.is_file():
            raise Fail(f"sdist {p} does not exist; omit --sdist to download it with pip.")
        return p
    found = sorted(SDIST_DIR.glob("llama_cpp_python-*.tar.gz"))
    if not found:
        SDIST_DIR.mkdir(parents=True, exist_ok=True)
        log(f"downloading the llama-cpp-python sdist into {SDIST_DIR} ...")
        run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "llama-cpp-python", "-d", str(SDIST_DIR)])
        found = sorted(SDIST_DIR.glob("llama_cpp_python-*.tar.gz"))
        if not found:
            raise Fail(f"pip saved no llama_cpp_python-*.tar.gz in {SDIST_DIR}; pass --sdist FILE.")
    return found[-1]


def extract_ggml(sdist: Path) -> Path:
    """Extract only vendor/llama.cpp/ggml of the sdist next to it (once); return that ggml dir."""
    root = sdist.name[: -len(".tar.gz")]
    dest = sdist.parent / root
    ggml = dest / "vendor" / "llama.cpp" / "ggml"
    if (ggml / "src" / "ggml-cpu" / "arch" / "arm" / "quants.c").is_file():
        return ggml
    log(f"extracting ggml from {sdist.name} ...")
    prefix = f"{root}/vendor/llama.cpp/ggml/"
    with tarfile.open(sdist) as tf:
        members = [m for m in tf.getmembers() if m.name.startswith(prefix)]
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: refuse unsafe member paths
            tf.extractall(sdist.parent, members=members, filter="data")
        else:
            tf.extractall(sdist.parent, members=members)
    if not ggml.is_dir():
        raise Fail(f"{sdist.name} has no vendor/llama.cpp/ggml; pass another --sdist.")
    return ggml


def ggml_source_of(ggml: Path, func: str) -> Path:
    """The arm source file that defines func (its place moved between llama.cpp versions)."""
    pat = re.compile(rf"^\s*void\s+{re.escape(func)}\s*\(", re.M)
    cands = sorted((ggml / "src").rglob("*.c")) + sorted((ggml / "src").rglob("*.cpp"))
    arm = [c for c in cands if "arm" in c.parts] + [c for c in cands if "arm" not in c.parts]
    for c in arm:
        if pat.search(c.read_text(errors="replace")):
            return c
    raise Fail(f"no ggml source in this sdist defines {func}; try another llama-cpp-python version.")


def llama_version(ggml: Path) -> str:
    m = re.match(r"llama_cpp_python-(.+)", ggml.parents[2].name)
    return m.group(1) if m else "?"


# ---------------------------------------------------------------- assembly and loop extraction

BRANCH = re.compile(r"^(b(?:\.\w+)?|cbn?z|tbn?z)\s+(?:.*,\s*)?(\.L\w+)\s*$")


def function_body(asm: str, symbol: str) -> list[str]:
    lines = asm.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith(symbol + ":")), None)
    if start is None:
        raise Fail(f"symbol {symbol} not found in the assembly.")
    body = []
    for l in lines[start + 1:]:
        c = clean(l)
        if c.startswith(".Lfunc_end") or (c and not l[0].isspace() and not c.startswith(".L") and c.endswith(":")):
            break  # the function's end, or the next function's label
        body.append(l)
    # A wrapper the compiler reduced to a tail call (`b kernel`, the kernel not inlined into it):
    # the loop is in the callee.
    insns = [c for c in map(clean, body) if c and not c.startswith(".")]
    tail = re.match(r"^b\s+([A-Za-z_][\w$]*)$", insns[-1]) if insns else None
    if tail and len(insns) <= 4 and tail.group(1) != symbol:
        return function_body(asm, tail.group(1))
    return body


def clean(line: str) -> str:
    return line.split("//")[0].strip()


def hot_loop(body: list[str], sig: str, step_sigs: int = 0) -> tuple[list[str], int, int]:
    """Innermost loop (label .. backward branch to it) with the most signature instructions.

    step_sigs > 0: the kernel's step has that many signature instructions; when the innermost loop
    holds only a 1/k share of them (the compiler kept a per-tile loop inside the step, e.g. the
    tile loop of tiles_hm_row), the step is rebuilt as the enclosing loop's body with the inner
    body written out k times, so the work the step does once for all tiles is counted too.
    Returns (loop text, signature instructions, times the inner body was written out)."""
    items = []  # (kind, text) kind: "label" | "insn"
    for l in body:
        c = clean(l)
        if not c or (c.startswith(".") and not c.endswith(":")):
            continue  # directives
        items.append(("label", c[:-1]) if c.endswith(":") else ("insn", c))
    where = {t: i for i, (k, t) in enumerate(items) if k == "label"}
    loops = []
    for j, (k, t) in enumerate(items):
        if k != "insn":
            continue
        m = BRANCH.match(t)
        if m and m.group(2) in where and where[m.group(2)] <= j:
            loops.append((where[m.group(2)], j))
    inner = [(i, j) for (i, j) in loops
             if not any((i2, j2) != (i, j) and i <= i2 and j2 <= j for (i2, j2) in loops)]
    sre = re.compile(sig)
    best = None
    for i, j in inner:
        text = [t if k == "insn" else t + ":" for k, t in items[i:j + 1]]
        n = sum(1 for k, t in items[i:j + 1] if k == "insn" and sre.match(t))
        if n and (best is None or n > best[1]):
            best = (text, n, (i, j))
    if best is None:
        raise Fail("no inner loop with the kernel's signature instruction was found.")
    text, n, (i, j) = best
    if not step_sigs or n >= step_sigs:
        return text, n, 1
    if step_sigs % n:
        raise Fail(f"the innermost loop has {n} signature instructions, no share of the step's {step_sigs}.")
    k = step_sigs // n
    outer = [(i2, j2) for (i2, j2) in loops if i2 <= i and j <= j2 and (i2, j2) != (i, j)]
    if not outer:
        raise Fail(f"the innermost loop has {n} of the step's {step_sigs} signature instructions and no "
                   "enclosing loop.")
    i2, j2 = min(outer, key=lambda r: r[1] - r[0])
    if sum(1 for kk, t in items[i2:j2 + 1] if kk == "insn" and sre.match(t)) != n:
        raise Fail("the loop enclosing the innermost one has signature instructions of its own.")
    # Labels dropped (the copies would define them k times); llvm-mca takes a branch as an instruction.
    insns = lambda a, b: [t for kk, t in items[a:b] if kk == "insn"]
    return insns(i2, i) + insns(i, j + 1) * k + insns(j + 1, j2 + 1), n * k, k


MCA_ITER = re.compile(r"^Iterations:\s+(\d+)", re.M)
MCA_CYC = re.compile(r"^Total Cycles:\s+(\d+)", re.M)
MCA_RTP = re.compile(r"^Block RThroughput:\s+([\d.]+)", re.M)


def mca(loop_file: Path, cpu: str, iterations: int, i8mm: bool) -> dict:
    cmd = ["llvm-mca-19", "-mtriple=aarch64", f"-mcpu={cpu}", f"-iterations={iterations}"]
    if i8mm:
        cmd.append("-mattr=+i8mm")
    out = run(cmd + [str(loop_file)]).stdout
    it, cyc = MCA_ITER.search(out), MCA_CYC.search(out)
    if not it or not cyc:
        raise Fail(f"could not read llvm-mca's summary for {loop_file.name} on {cpu}.")
    rtp = MCA_RTP.search(out)
    return {"iterations": int(it.group(1)), "total_cycles": int(cyc.group(1)),
            "block_rthroughput": float(rtp.group(1)) if rtp else None}


# ---------------------------------------------------------------- kernels

def harness(kset: str) -> str:
    src = KDIR / SET_FILE[kset]
    out = [f'#include "{src}"', "namespace hmllm { namespace kern {"]
    for g in GROUPS:
        out.append(f'extern "C" __attribute__((noinline, used)) void mca_{kset}_g{g}('
                   f"const uint8_t* t, const ActRow& a, int64_t n, float* o) {{ dot4_hm<{g}>(t, a, n, o); }}")
        if kset == "i8mm":
            out.append(f'extern "C" __attribute__((noinline, used)) void mca_i8mm_b2_g{g}('
                       "const uint8_t* t, const ActRow& a0, const ActRow& a1, int64_t n, "
                       f"float32x4_t* o01, float32x4_t* o23) {{ hm_tile_4x2<{g}>(t, a0, a1, n, o01, o23); }}")
        if kset == "dotprod":  # HM_Q4 decode: four 4-row tiles against one activation row
            out.append(f'extern "C" __attribute__((noinline, used)) void mca_dotprod_row4_g{g}('
                       "const uint8_t* t, size_t tb, const ActRow& a, int64_t n, float32x4_t* o) "
                       f"{{ tiles_hm_row<{g}, 4>(t, tb, a, n, o); }}")
    if kset == "dotprod":  # interleaved Q8_0 / Q5_0 decode: 4 row groups (16 rows), one activation row
        for x in X4_LAYOUTS:
            out.append(f'extern "C" __attribute__((noinline, used)) void mca_dotprod_{x.lower()}('
                       "const uint8_t* g, size_t gb, int64_t nb, const ActRow* const* a, float32x4_t* o) "
                       f"{{ tile_x4<{x}, 4, 1>(g, gb, nb, a, o); }}")
    out.append("}}")
    return "\n".join(out) + "\n"


def kernel_specs() -> list[dict]:
    """name, asm unit, symbol, signature, weights per signature, activation rows, group, set, and
    ref: the ggml kernel the row's ratio is taken against (ggml's repacked Q4_0 gemv unless named).
    A ggml unit is "ggml:" + the function whose source file is compiled (+ ":v80" for -march=armv8-a)."""
    ggml = dict(rows=1, group=None, set="ggml", i8mm=False)
    specs = [
        dict(name="ggml-vec_dot-q4_0", unit="ggml:ggml_vec_dot_q4_0_q8_0", symbol="ggml_vec_dot_q4_0_q8_0",
             sig=SIG_SDOT_VEC, **ggml),
        dict(name=REPACKED, unit="ggml:ggml_gemv_q4_0_4x4_q8_0", symbol="ggml_gemv_q4_0_4x4_q8_0",
             sig=SIG_SDOT_LANE, **ggml),
        dict(name="ggml-vec_dot-q4_0-v80", unit="ggml:ggml_vec_dot_q4_0_q8_0:v80", symbol="ggml_vec_dot_q4_0_q8_0",
             sig=SIG_SMULL, **ggml),
        # The peers of the interleaved Q8_0 / Q5_0 decode kernels: llama.cpp repacks Q8_0 to 4x4 at
        # load; its Q5_0 has no repacked layout, so the one-row vec_dot is what it runs.
        dict(name="ggml-gemv-q8_0-4x4", unit="ggml:ggml_gemv_q8_0_4x4_q8_0", symbol="ggml_gemv_q8_0_4x4_q8_0",
             sig=SIG_SDOT_LANE, **ggml),
        dict(name="ggml-vec_dot-q8_0", unit="ggml:ggml_vec_dot_q8_0_q8_0", symbol="ggml_vec_dot_q8_0_q8_0",
             sig=SIG_SDOT_VEC, **ggml),
        dict(name="ggml-vec_dot-q5_0", unit="ggml:ggml_vec_dot_q5_0_q8_0", symbol="ggml_vec_dot_q5_0_q8_0",
             sig=SIG_SDOT_VEC, **ggml),
    ]
    for g in GROUPS:
        specs += [
            dict(name=f"hm-neon-g{g}", unit="neon", symbol=f"mca_neon_g{g}", sig=SIG_SMULL,
                 rows=1, group=g, set="neon", i8mm=False),
            dict(name=f"hm-dotprod-g{g}", unit="dotprod", symbol=f"mca_dotprod_g{g}", sig=SIG_SDOT_LANE,
                 rows=1, group=g, set="dotprod", i8mm=False),
            dict(name=f"hm-i8mm-b1-g{g}", unit="i8mm", symbol=f"mca_i8mm_g{g}", sig=SIG_SDOT_LANE,
                 rows=1, group=g, set="i8mm", i8mm=True),
            dict(name=f"hm-i8mm-b2-g{g}", unit="i8mm", symbol=f"mca_i8mm_b2_g{g}", sig=SIG_SMMLA,
                 rows=2, group=g, set="i8mm", i8mm=True),
        ]
    # Decode kernels of the dotprod set (one activation row, 16 rows per step).
    specs += [
        dict(name="hm-x4-q8_0", unit="dotprod", symbol="mca_dotprod_x4q8", sig=SIG_SDOT_LANE,
             rows=1, group=None, set="dotprod", i8mm=False, ref="ggml-gemv-q8_0-4x4"),
        dict(name="hm-x4-q5_0", unit="dotprod", symbol="mca_dotprod_x4q5", sig=SIG_SDOT_LANE,
             rows=1, group=None, set="dotprod", i8mm=False, ref="ggml-vec_dot-q5_0"),
    ]
    for g in GROUPS:
        # A step: 4 tiles x 4 chunks x 8 sdot = 128 sdot = 16 rows x 128 columns.
        specs.append(dict(name=f"hm-row4-g{g}", unit="dotprod", symbol=f"mca_dotprod_row4_g{g}",
                          sig=SIG_SDOT_4ROW, rows=1, group=g, set="dotprod", i8mm=False, step_sigs=128))
    return specs


def compile_units(ggml: Path, work: Path) -> dict[str, str]:
    inc = [f"-I{ggml / 'include'}", f"-I{ggml / 'src'}", f"-I{ggml / 'src' / 'ggml-cpu'}"]
    units = {}
    done = {}  # (source file, v80) -> assembly: each ggml file is compiled once per -march
    for unit in dict.fromkeys(s["unit"] for s in kernel_specs() if s["unit"].startswith("ggml:")):
        func, v80 = unit.split(":")[1], unit.endswith(":v80")
        src = ggml_source_of(ggml, func)
        if (src, v80) not in done:
            flags = GGML_V80_FLAGS if v80 else GGML_FLAGS
            cc = "clang-19" if src.suffix == ".c" else "clang++-19"
            std = "-std=gnu11" if src.suffix == ".c" else "-std=gnu++17"
            out = work / f"ggml-{src.stem}{'-v80' if v80 else ''}.s"
            log(f"compiling {src.relative_to(ggml.parent)} ({' '.join(flags[1:])}) ...")
            run([cc, *flags, std, *inc, "-S", str(src), "-o", str(out)])
            done[(src, v80)] = out.read_text()
        units[unit] = done[(src, v80)]
    for kset in ("neon", "dotprod", "i8mm"):
        src = work / f"harness_{kset}.cpp"
        src.write_text(harness(kset))
        out = work / f"harness_{kset}.s"
        log(f"compiling native/src/kernels/{SET_FILE[kset]} ({' '.join(SET_FLAGS[kset][1:])}) ...")
        run(["clang++-19", *SET_FLAGS[kset], "-std=c++17", f"-I{NATIVE_INC}", f"-I{KDIR}",
             "-S", str(src), "-o", str(out)])
        units[kset] = out.read_text()
    return units


def measure(cpus: list[str], iterations: int, sdist_arg: str | None, work: Path) -> dict:
    need_tools()
    sdist = find_sdist(sdist_arg)
    ggml = extract_ggml(sdist)
    units = compile_units(ggml, work)
    kernels = {}
    for s in kernel_specs():
        try:
            loop, nsig, copies = hot_loop(function_body(units[s["unit"]], s["symbol"]), s["sig"][0],
                                          s.get("step_sigs", 0))
        except Fail as e:
            raise Fail(f"{s['name']} ({s['symbol']}): {e}") from None
        weights = nsig * s["sig"][1]
        lf = work / f"loop_{s['name']}.s"
        lf.write_text("\n".join(loop) + "\n")
        # A kernel whose chunk loop (c) was not unrolled has its innermost loop inside the group
        # loop: per-group work (fp16 scales, loop control) lies outside it and is not counted.
        partial = s["group"] is not None and weights < 4 * s["group"]
        k = {"set": s["set"], "group": s["group"], "symbol": s["symbol"], "activation_rows": s["rows"],
             "reference": s.get("ref", REPACKED), "inner_loop_copies": copies,
             "weights_per_iteration": weights, "loop_is_chunk_only": partial, "loop_instructions": sum(1 for l in loop if not l.endswith(":")),
             "cpus": {}}
        for cpu in cpus:
            hypothetical = s["sig"] is SIG_SMMLA and cpu not in I8MM_CPUS
            try:
                m = mca(lf, cpu, iterations, s["i8mm"])
            except Fail as e:
                req = re.search(r"instruction requires: ([\w-]+)", str(e))
                if not req:
                    raise
                # e.g. sdot on cortex-a53: the kernel cannot run on that core at all.
                k["cpus"][cpu] = {"cycles_per_256": None, "unsupported": f"core lacks {req.group(1)}"}
                continue
            cpi = m["total_cycles"] / m["iterations"]
            m.update(cycles_per_iteration=cpi,
                     cycles_per_256=cpi * 256 / (weights * s["rows"]),
                     hypothetical=hypothetical)
            k["cpus"][cpu] = m
        kernels[s["name"]] = k
        log(f"  {s['name']:<20} {weights:4d} weights/iter  " +
            "  ".join(f"{c}={fmt(k['cpus'][c]['cycles_per_256'])}" for c in cpus))
    for name, k in kernels.items():
        if k["set"] == "ggml":
            continue
        for cpu, m in k["cpus"].items():
            rep = kernels[REPACKED]["cpus"][cpu]["cycles_per_256"]
            ref = kernels[k["reference"]]["cpus"][cpu]["cycles_per_256"]
            m["ratio_to_repacked"] = None if m["cycles_per_256"] is None or rep is None else m["cycles_per_256"] / rep
            m["ratio_to_reference"] = None if m["cycles_per_256"] is None or ref is None else m["cycles_per_256"] / ref
            if m["ratio_to_repacked"] is None:
                m.update(target=None, **{"pass": None})
                continue
            # The targets are set for HM_Q4 GEMV (one activation row) on the three default cores.
            lim = TARGETS.get(k["group"]) if k["activation_rows"] == 1 and cpu in DEFAULT_CPUS else None
            m["target"] = lim
            m["pass"] = None if lim is None else m["ratio_to_repacked"] <= lim
    checked = [(n, c, m) for n, k in kernels.items() for c, m in k["cpus"].items() if m.get("target")]
    summary = {
        "targets_checked": len(checked),
        "met": [f"{n}@{c}" for n, c, m in checked if m["pass"]],
        "missed": [{"kernel": n, "cpu": c, "ratio": round(m["ratio_to_repacked"], 4), "target": m["target"],
                    "over_by_percent": round(100 * (m["ratio_to_repacked"] / m["target"] - 1), 1)}
                   for n, c, m in checked if not m["pass"]],
        # cortex-a76, neoverse-n1 and cortex-a55 all report dotprod and none i8mm, so hmllm's
        # dispatch runs the dotprod set there; the baseline NEON set only runs on v8.0 cores.
        "dotprod_set_all_met": all(m["pass"] for n, c, m in checked if n.startswith("hm-dotprod-")),
        # tiles_hm_row<G, 4>: what the dotprod set runs for HM_Q4 decode (one activation row).
        "hm_q4_decode_all_met": all(m["pass"] for n, c, m in checked if n.startswith("hm-row4-")),
    }
    return {"llama_cpp_python": llama_version(ggml), "sdist": str(sdist), "summary": summary,
            "ggml_flags": " ".join(GGML_FLAGS), "ggml_v80_flags": " ".join(GGML_V80_FLAGS), "set_flags": {k: " ".join(v) for k, v in SET_FLAGS.items()},
            "iterations": iterations, "cpus": cpus, "targets": {f"G{g}": v for g, v in TARGETS.items()},
            "normalisation": "cycles_per_256 = total_cycles / iterations * 256 / (weights_per_iteration * "
                             "activation_rows); weights_per_iteration counted from the loop's sdot/smull/smmla",
            "kernels": kernels}


def fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}"


def table(res: dict) -> str:
    cpus = res["cpus"]
    w = max([22] + [len(n) + len(k["reference"]) for n, k in res["kernels"].items() if k["reference"] != REPACKED])
    head = f"{'kernel':<{w}} {'w/iter':>6} " + " ".join(f"{c:>25}" for c in cpus)
    out = [f"cycles per 256 weights (llvm-mca-19, -iterations={res['iterations']}); "
           f"(ratio to {REPACKED}, or to the ggml kernel named in [ ]; target)", head, "-" * len(head)]
    for name, k in res["kernels"].items():
        cells = []
        for c in cpus:
            m = k["cpus"][c]
            if m["cycles_per_256"] is None:
                cells.append(f"{'n/a (' + m['unsupported'] + ')':>25}")
                continue
            cell = f"{m['cycles_per_256']:.1f}" + ("*" if m["hypothetical"] else "")
            if m.get("ratio_to_reference") is not None:
                cell += f" ({m['ratio_to_reference']:.3f}x"
                if m["pass"] is not None:
                    cell += f" {'ok' if m['pass'] else 'MISS'}<={m['target']}"
                cell += ")"
            cells.append(f"{cell:>25}")
        wpi = k["weights_per_iteration"] * k["activation_rows"]
        mark = "+" if k.get("loop_is_chunk_only") else ""
        mark += "^" if k["inner_loop_copies"] > 1 else ""
        if k["set"] != "ggml" and k["reference"] != REPACKED:
            mark += f" [{k['reference'].removeprefix('ggml-')}]"
        out.append(f"{name + mark:<{w}} {wpi:>6} " + " ".join(cells))
    out.append("w/iter: weights x activation rows per loop iteration; * = core without i8mm, "
               "smmla scheduled by llvm-mca with -mattr=+i8mm (hypothetical);")
    out.append("+ = innermost loop is the 32-column chunk loop, per-group work (scales) outside it is not "
               "counted;")
    out.append("^ = step loop with its inner tile loop's body written out 4 times; targets (ok/MISS) only for "
               "1-row HM_Q4 GEMV on " + ", ".join(DEFAULT_CPUS))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    ap.add_argument("--cpus", default=",".join(DEFAULT_CPUS), help="comma-separated -mcpu names")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--sdist", help="llama-cpp-python sdist (default: ~/.cache/hmbuild/llama-sdist, "
                                    "downloaded with pip if absent)")
    ap.add_argument("--keep", metavar="DIR", help="keep the assembly and loop files in DIR")
    a = ap.parse_args(argv)
    cpus = [c.strip() for c in a.cpus.split(",") if c.strip()]
    try:
        if a.keep:
            work = Path(a.keep)
            work.mkdir(parents=True, exist_ok=True)
            res = measure(cpus, a.iterations, a.sdist, work)
        else:
            with tempfile.TemporaryDirectory(prefix="mca_int4_") as d:
                res = measure(cpus, a.iterations, a.sdist, Path(d))
    except Fail as e:
        print(f"mca_int4: {e}", file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
