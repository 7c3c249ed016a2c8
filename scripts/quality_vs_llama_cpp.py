"""Quality of 4-bit re-quantizations of one GGUF file, hmbuild's next to llama.cpp's, each measured
with `hmbuild eval` against the original file (top-1 agreement, overall and where the original is
confident, i.e. its top token has p >= 0.5; mean KL; perplexities).

The question it answers: is a quality bar for re-quantizing an already-quantized file within reach
at all? llama.cpp's own re-quantization (llama_model_quantize with allow_requantize, from
llama-cpp-python) is the yardstick. Run it with the llama-cpp-python venv (see
scripts/bench_vs_llama_cpp.py) and point it at hmbuild and a host-built project:

    ~/.cache/hmbuild/llama-ref-venv/bin/python scripts/quality_vs_llama_cpp.py \\
        --hmbuild .venv/bin/hmbuild --project DEMO [--model M.gguf] [--text FILE] [--json]

The re-quantized files go to a temporary folder and are deleted afterwards.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from _llama_ref import argument_parser, import_llama_cpp

GGML_TYPE_Q4_0 = 2
LLAMA_FTYPE_MOSTLY_Q4_0 = 2

# (label, how it is made): hmbuild's quantize options (--calibrate default is hmbuild's calibration
# text, not the evaluation text; the 4-bit matrices are stored rotated unless --no-rotate), or a
# llama.cpp ftype with an optional type for the token embedding / output matrix.
CAL = ["--calibrate", "default"]
VARIANTS = [
    ("hmbuild int4-g128", ("hmbuild", ["--scheme", "int4-g128"])),
    ("hmbuild int4-g128 --calibrate default", ("hmbuild", ["--scheme", "int4-g128", *CAL])),
    ("hmbuild int4-g128 --no-rotate", ("hmbuild", ["--scheme", "int4-g128", "--no-rotate"])),
    ("hmbuild int4-g128 --no-rotate, calibrated", ("hmbuild", ["--scheme", "int4-g128", "--no-rotate", *CAL])),
    ("hmbuild int4-g32", ("hmbuild", ["--scheme", "int4-g32"])),
    ("hmbuild int4-g32 --calibrate default", ("hmbuild", ["--scheme", "int4-g32", *CAL])),
    ("hmbuild int4-g32 --no-rotate, calibrated", ("hmbuild", ["--scheme", "int4-g32", "--no-rotate", *CAL])),
    ("hmbuild int4-g128, token_embd Q8_0, calibrated",
     ("hmbuild", ["--scheme", "int4-g128", "--keep", "q8_0:token_embd.weight", *CAL])),
    # The blocks copied as they are: only the 8-bit embedding / output matrix re-quantized.
    ("hmbuild int4-g128 of the embedding only", ("hmbuild", ["--scheme", "int4-g128", "--keep", "source:blk.*"])),
    ("the same, --no-rotate", ("hmbuild", ["--scheme", "int4-g128", "--keep", "source:blk.*", "--no-rotate"])),
    # Everything 8-bit: a check of the pipeline, and the near-ties any re-rounding flips.
    ("hmbuild, everything Q8_0", ("hmbuild", ["--keep", "q8_0:*"])),
    ("llama.cpp Q4_0, token_embd Q4_0", ("llama", (LLAMA_FTYPE_MOSTLY_Q4_0, GGML_TYPE_Q4_0))),
    ("llama.cpp Q4_0 (token_embd stays Q8_0)", ("llama", (LLAMA_FTYPE_MOSTLY_Q4_0, None))),
]


def llama_quantize(src: Path, dst: Path, ftype: int, embd_type: int | None) -> None:
    import llama_cpp

    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = ftype
    p.allow_requantize = True
    if embd_type is not None:
        p.token_embedding_type = embd_type
        p.output_tensor_type = embd_type
    if llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(p)) != 0:
        raise SystemExit(f"llama_model_quantize failed for {dst.name}")


def main() -> int:
    ap = argument_parser(__doc__)
    ap.add_argument("--hmbuild", type=Path, required=True, help="the hmbuild executable")
    ap.add_argument("--project", type=Path, required=True, help="a generated project built for the host")
    ap.add_argument("--text", type=Path, default=None, help="evaluation text (default: hmbuild's English text)")
    args = ap.parse_args()
    if import_llama_cpp() is None:
        return 1
    rows = []
    with tempfile.TemporaryDirectory(prefix="hmbuild-quality-") as tmp:
        for i, (label, (tool, how)) in enumerate(VARIANTS):
            out = Path(tmp) / f"v{i}.gguf"
            print(f"{label}: quantizing", file=sys.stderr)
            if tool == "hmbuild":
                subprocess.run([str(args.hmbuild), "-C", str(args.project), "quantize", str(args.model), str(out), *how,
                                "--json"], check=True, capture_output=True)
            else:
                llama_quantize(args.model, out, *how)
            print(f"{label}: evaluating", file=sys.stderr)
            cmd = [str(args.hmbuild), "-C", str(args.project), "eval", "--model", str(out), "--reference",
                   str(args.model), "--json"]
            if args.text:
                cmd += ["--text", str(args.text)]
            res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            rows.append({"variant": label, "mib": out.stat().st_size / 2**20, "top1_agreement": res["top1_agreement"],
                         "top1_agreement_confident": res["top1_agreement_confident"],
                         "confident_share": res["confident_share"], "kl_mean": res["kl_mean"], "ppl": res["ppl"],
                         "ppl_reference": res["ppl_reference"], "tokens": res["tokens"]})
    if args.json:
        print(json.dumps({"model": args.model.name, "rows": rows}, indent=2))
    else:
        print(f"re-quantizations of {args.model.name}, each against the original ({rows[0]['tokens']} tokens; "
              f"'sure': top-1 at the {rows[0]['confident_share']:.0%} of them where the original's top token has "
              "p >= 0.5)")
        print(f"{'':48} {'MiB':>7} {'top-1':>6} {'sure':>6} {'KL':>6} {'ppl':>6} {'ref':>6}")
        for r in rows:
            sure = r["top1_agreement_confident"]
            print(f"{r['variant']:48} {r['mib']:7.1f} {r['top1_agreement']:6.3f} "
                  f"{'-' if sure is None else format(sure, '.3f'):>6} {r['kl_mean']:6.3f} {r['ppl']:6.1f} "
                  f"{r['ppl_reference']:6.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
