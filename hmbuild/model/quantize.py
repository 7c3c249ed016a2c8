"""hmbuild quantize: re-quantize a GGUF model into the engine's INT4 formats (docs/int4-format.md).

Default mixed precision (the field report's choice): the attention Q/K/V projections stay 8-bit
(Q8_0), norms and every 1-D tensor stay F32, every other matrix (token embedding, which Gemma
also uses as its output, attn_output, the FFN, output) becomes HM_Q4_G<G>. A matrix whose shape
the INT4 format cannot hold (n_rows % 4, n_cols % G) falls back to Q8_0, or to a float type when
n_cols % 32 != 0 too; the result names each fallback. A source tensor already narrower than its
default type (a Q5_0 Q/K/V of a Q4_K_M file) is copied as it is, never widened. `--keep TYPE:PATTERN` rules (fnmatch on
tensor names, the last matching rule wins) override the default per tensor; TYPE `source` keeps a
tensor as it is.

Sources are dequantized with the gguf package (gguf.quants.dequantize; HM_Q4 through
hmbuild.model.int4_format) and written with gguf.GGUFWriter to a temporary file next to the output,
renamed into place at the end: a failure or Ctrl-C leaves nothing half-written.
"""

from __future__ import annotations

import fnmatch
import os
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from hmbuild import __version__

from hmbuild.model import gptq
from hmbuild.errors import HmbuildError
from hmbuild.model import ggml_types as T
from hmbuild.model.ggml_types import F16, F32, HM_GROUP, HM_Q4, Q8_0, bits_per_weight, register_with_gguf, type_name
from hmbuild.model.int4_format import (ROTATED_KEY, ROTATION_BLOCK, dequantize_hm_q4, pack_hm_q4, quantize_hm_q4_codes,
                                       rotate_columns, rotate_moments, rotated_tensors)

SCHEMES = {"int4-g128": 128, "int4-g64": 64, "int4-g32": 32}
# --keep TYPE names -> GGML type ids
# `source` copies the tensor bit for bit in the type it has (re-quantizing an already-quantized
# tensor only adds error: this is how a tensor is left alone).
SOURCE = -1
KEEP_TYPES = {"f32": F32, "f16": F16, "q8_0": Q8_0, "int4-g32": HM_Q4[32], "int4-g64": HM_Q4[64],
              "int4-g128": HM_Q4[128], "source": SOURCE}
QKV_SUFFIXES = ("attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_qkv.weight")
QUANTIZE_KEYS = ("hmbuild.model.quantize.scheme", "hmbuild.model.quantize.keep", "hmbuild.model.quantize.source_file_type",
                 "hmbuild.model.quantize.calibration_tokens")  # describe the file being written, never copied
CHUNK_ELEMENTS = 1 << 20  # elements converted at a time (bounds the float32 temporaries)


def keeps_source(source_type: int, wanted: int) -> bool:
    """Whether a matrix stored as source_type stays as it is when the default asks for `wanted`:
    a quantized type the engine runs that is already narrower (never widened)."""
    return (source_type in T.ENGINE_TYPES and source_type not in T.FLOAT_TYPES
            and bits_per_weight(source_type) < bits_per_weight(wanted))


@dataclass
class KeepRule:
    type_id: int
    pattern: str
    text: str  # as the user wrote it, for messages


@dataclass
class TensorPlan:
    """What happens to one tensor. shape is GGUF's ne order (ne[0] = n_cols)."""

    name: str
    shape: tuple[int, ...]
    source_type: int
    source_bytes: int
    type: int = F32
    wanted: int = F32
    rule: str = "default"  # "default" or the --keep rule that chose the type
    reason: str | None = None  # why `type` differs from `wanted` (a fallback)
    nbytes: int = 0
    source_rotated: bool = False  # the source stores it as W·R (int4_format.ROTATED_KEY)
    rotated: bool = False         # the output does

    @property
    def n_cols(self) -> int:
        return self.shape[0]

    @property
    def n_rows(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64)) if len(self.shape) > 1 else 1

    @property
    def n_elements(self) -> int:
        return self.n_cols * self.n_rows

    def to_json(self) -> dict:
        d = {"name": self.name, "shape": list(self.shape), "source_type": type_name(self.source_type),
             "type": type_name(self.type), "bytes": self.nbytes, "rule": self.rule}
        if self.rotated:
            d["rotated"] = True
        if self.reason:
            d["wanted"] = type_name(self.wanted)
            d["fallback"] = self.reason
        return d


@dataclass
class QuantizeResult:
    input: Path
    output: Path
    scheme: str
    keep: list[str]
    input_bytes: int
    output_bytes: int
    tensors: list[TensorPlan]
    seconds: float
    metadata_keys: int = 0
    added_keys: dict = field(default_factory=dict)
    dropped_keys: list[str] = field(default_factory=list)
    calibrated: list[str] = field(default_factory=list)  # tensors rounded with error compensation
    calibration: dict | None = None  # the measurement they used (calibrate.CalibrationRun.to_json)

    def counts(self, source: bool = False) -> dict[str, int]:
        c = Counter(type_name(t.source_type if source else t.type) for t in self.tensors)
        return dict(sorted(c.items()))

    def bytes_by_type(self, source: bool = False) -> dict[str, int]:
        c: Counter = Counter()
        for t in self.tensors:
            c[type_name(t.source_type if source else t.type)] += t.source_bytes if source else t.nbytes
        return dict(sorted(c.items()))

    @property
    def fallbacks(self) -> list[TensorPlan]:
        return [t for t in self.tensors if t.reason]

    def to_json(self) -> dict:
        return {
            "ok": True,
            "input": str(self.input),
            "output": str(self.output),
            "scheme": self.scheme,
            "keep": self.keep,
            "input_bytes": self.input_bytes,
            "output_bytes": self.output_bytes,
            "ratio": round(self.output_bytes / self.input_bytes, 4) if self.input_bytes else None,
            "tensors": self.counts(),
            "bytes_by_type": self.bytes_by_type(),
            "input_tensors": self.counts(source=True),
            "input_bytes_by_type": self.bytes_by_type(source=True),
            "fallbacks": [{"name": t.name, "wanted": type_name(t.wanted), "type": type_name(t.type),
                           "reason": t.reason} for t in self.fallbacks],
            "metadata_keys": self.metadata_keys,
            "added_keys": self.added_keys,
            "dropped_keys": self.dropped_keys,
            "rotated_tensors": sum(t.rotated for t in self.tensors),
            "calibrated_tensors": len(self.calibrated),
            "calibration": self.calibration,
            "seconds": round(self.seconds, 2),
            "per_tensor": [t.to_json() for t in self.tensors],
        }


# ---------------------------------------------------------------------------------------------
# Planning


def parse_keep(specs: list[str] | tuple[str, ...] | None) -> list[KeepRule]:
    """--keep values (each TYPE:PATTERN[,TYPE:PATTERN...]) -> rules in the order given."""
    rules = []
    names = ", ".join(KEEP_TYPES)
    for spec in specs or ():
        for item in spec.split(","):
            text = item.strip()
            type_text, sep, pattern = text.partition(":")
            type_text, pattern = type_text.strip().lower(), pattern.strip()
            if not sep or not pattern or type_text not in KEEP_TYPES:
                raise HmbuildError(f"--keep takes TYPE:PATTERN[,TYPE:PATTERN...] with TYPE one of {names} and a "
                                   f"tensor-name pattern such as blk.*.ffn_down.weight, not {text!r}.")
            rules.append(KeepRule(KEEP_TYPES[type_text], pattern, text))
    return rules


def _default_type(name: str, shape: tuple[int, ...], group: int) -> int:
    if len(shape) == 1 or "norm" in name:
        return F32
    if name.endswith(QKV_SUFFIXES):
        return Q8_0
    return HM_Q4[group]


def _fit(t: TensorPlan, wanted: int) -> tuple[int, str | None]:
    """The type t gets when `wanted` is asked for, and the reason when that is a fallback."""
    float_fallback = F32 if t.source_type == F32 else F16
    if wanted == SOURCE:
        return t.source_type, None
    if len(t.shape) == 1:
        if wanted in (F32, F16):
            return wanted, None
        return F32, "1-D tensors stay float"
    if wanted in HM_GROUP:
        group = HM_GROUP[wanted]
        why = None
        if len(t.shape) != 2:
            why = f"INT4 holds 2-D matrices, this one has {len(t.shape)} dimensions"
        elif t.n_rows % 4:
            why = f"n_rows {t.n_rows} is not a multiple of 4"
        elif t.n_cols % group:
            why = f"n_cols {t.n_cols} is not a multiple of the group size {group}"
        if why is None:
            return wanted, None
        if t.n_cols % 32 == 0:
            return Q8_0, why
        return float_fallback, f"{why}, and not of 32 either"
    if wanted == Q8_0 and t.n_cols % 32:
        return float_fallback, f"n_cols {t.n_cols} is not a multiple of Q8_0's block of 32"
    return wanted, None


def plan_tensors(reader, group: int, rules: list[KeepRule], rotate: bool = True) -> list[TensorPlan]:
    """One TensorPlan per tensor of the reader, in file order; raises HmbuildError for a source
    type that cannot be read or a --keep pattern that matches no tensor. With rotate, every matrix
    rounded into HM_Q4 whose width is whole 128-blocks is stored rotated (int4_format.ROTATED_KEY);
    a tensor copied as it is keeps the source's rotation."""
    try:
        source_rotated = rotated_tensors(reader)
    except ValueError as exc:
        raise HmbuildError(f"The source's {ROTATED_KEY} is damaged ({exc}); it was not written by hmbuild quantize.") \
            from None
    plans = []
    for rt in reader.tensors:
        source = int(rt.tensor_type)
        if source not in T.READABLE:
            raise HmbuildError(f"Tensor {rt.name} has type {type_name(source)}, which hmbuild quantize cannot read "
                               f"(it reads {', '.join(sorted(map(type_name, T.READABLE)))}).")
        shape = tuple(int(x) for x in rt.shape)
        plans.append(TensorPlan(name=rt.name, shape=shape, source_type=source, source_bytes=int(rt.n_bytes)))
    used = [False] * len(rules)
    for t in plans:
        t.wanted = _default_type(t.name, t.shape, group)
        for i, r in enumerate(rules):
            if fnmatch.fnmatchcase(t.name, r.pattern):
                used[i] = True
                t.wanted, t.rule = r.type_id, f"--keep {r.text}"
        if t.rule == "default" and len(t.shape) > 1 and keeps_source(t.source_type, t.wanted):
            # Never widen: a Q5_0 Q/K/V matrix made Q8_0 is larger and holds the same values.
            t.wanted, t.rule = SOURCE, f"default (already {bits_per_weight(t.source_type):g} bits per weight)"
        t.type, t.reason = _fit(t, t.wanted)
        if t.wanted == SOURCE:
            t.wanted = t.type
        t.nbytes = T.nbytes(t.type, t.n_rows, t.n_cols)
        t.source_rotated = t.name in source_rotated
        if t.type == t.source_type:
            t.rotated = t.source_rotated
        else:
            t.rotated = rotate and t.type in HM_GROUP and len(t.shape) == 2 and t.n_cols % ROTATION_BLOCK == 0
    unused = [r.text for r, u in zip(rules, used) if not u]
    if unused:
        raise HmbuildError(f"--keep {', '.join(unused)} matches no tensor of the model; check the pattern against the "
                           f"tensor names (e.g. {plans[0].name if plans else 'blk.0.attn_q.weight'}).")
    return plans


# ---------------------------------------------------------------------------------------------
# Conversion


def _rows_per_chunk(t: TensorPlan) -> int:
    rows = max(4, CHUNK_ELEMENTS // max(1, t.n_cols))
    return rows - rows % 4


def _dequantize_rows(raw: np.ndarray, t: TensorPlan) -> np.ndarray:
    """float32 [rows, n_cols] of a chunk of source rows (raw as the reader gives it, rows first)."""
    from gguf import GGMLQuantizationType, quants

    if t.source_type in HM_GROUP:
        return dequantize_hm_q4(np.ascontiguousarray(raw).tobytes(), raw.shape[0], t.n_cols, HM_GROUP[t.source_type])
    out = quants.dequantize(np.ascontiguousarray(raw), GGMLQuantizationType(t.source_type))
    return np.asarray(out, dtype=np.float32).reshape(raw.shape[0], t.n_cols)


def _convert_rows(w: np.ndarray, t: TensorPlan, factor: gptq.Factor | None = None) -> np.ndarray:
    from gguf import GGMLQuantizationType, quants

    if t.type == F32:
        return np.ascontiguousarray(w, dtype=np.float32)
    if t.type == F16:
        return w.astype(np.float16)
    if t.type in HM_GROUP:
        group = HM_GROUP[t.type]
        q, d = quantize_hm_q4_codes(w, group) if factor is None else gptq.quantize_codes(w, group, factor)
        return np.frombuffer(pack_hm_q4(q, d, group), dtype=np.uint8)
    return quants.quantize(w, GGMLQuantizationType(t.type))


def _tensor_bytes(rt, t: TensorPlan, progress: Callable[[int], None] | None,
                 factor: gptq.Factor | None = None) -> np.ndarray:
    """The output bytes of one tensor (a flat array of t.nbytes bytes)."""
    data = np.asarray(rt.data)
    raw = data.reshape(t.n_rows, -1)
    if t.type == t.source_type:  # already in the wanted type: copied bit for bit
        if progress:
            progress(t.n_elements)
        return raw.reshape(-1).view(np.uint8)
    out = np.empty(t.nbytes, dtype=np.uint8)
    step, pos = _rows_per_chunk(t), 0
    for r0 in range(0, t.n_rows, step):
        rows = raw[r0:r0 + step]
        w = _dequantize_rows(rows, t)
        if not np.all(np.isfinite(w)):
            raise HmbuildError(f"Tensor {t.name} holds NaN or infinite values; the source model is damaged.")
        if t.source_rotated != t.rotated:  # R is its own inverse: one multiplication undoes or applies it
            w = rotate_columns(w)
        b = np.ascontiguousarray(_convert_rows(w, t, factor)).reshape(-1).view(np.uint8)
        out[pos:pos + b.size] = b
        pos += b.size
        if progress:
            progress(rows.shape[0] * t.n_cols)
    assert pos == t.nbytes, (t.name, pos, t.nbytes)
    return out


class Calibration:
    """The input second moments hmllm_calibrate wrote (manifest.json naming a .npy per tensor), turned
    into a gptq.Factor (gptq.prepare) once per file (Q/K/V, and gate/up, share theirs)."""

    CACHED = 2  # factors kept: tensors come in file order, where one other input (attn_output) can sit
                # between the Q/K/V that share theirs; each is up to d_ff² float64 (~32 MB for 2048)

    def __init__(self, folder: Path):
        import json

        self.folder = Path(folder)
        try:
            manifest = json.loads((self.folder / "manifest.json").read_text(encoding="utf-8"))
            self.files = {str(k): str(v) for k, v in manifest["tensors"].items()}
            self.tokens = int(manifest["tokens"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise HmbuildError(f"{self.folder} is not a calibration folder written by hmllm_calibrate (no readable "
                               "manifest.json); run `hmbuild quantize --calibrate TEXT` instead.") from None
        self._cache: dict[tuple[str, bool], gptq.Factor] = {}  # insertion order = least recently prepared first

    def factor(self, tensor: str, n_cols: int, rotated: bool = False) -> gptq.Factor | None:
        """The factor of the tensor's input moments (of R·x when the tensor is stored rotated)."""
        name = self.files.get(tensor)
        if name is None:
            return None
        key = (name, rotated)
        if key not in self._cache:
            try:
                h = np.load(self.folder / name, allow_pickle=False)
                if h.shape != (n_cols, n_cols):
                    raise HmbuildError(f"The calibration in {self.folder} was measured on another model: {tensor} "
                                       f"has {n_cols} inputs here but {h.shape[0] if h.ndim else 0} there; calibrate with "
                                       "this model.")
                factor = gptq.prepare(rotate_moments(h) if rotated else h)
            except (OSError, ValueError, np.linalg.LinAlgError) as exc:
                raise HmbuildError(f"The calibration file {self.folder / name} cannot be used ({exc}); run the "
                                   "calibration again.") from None
            while len(self._cache) >= self.CACHED:
                del self._cache[next(iter(self._cache))]
            self._cache[key] = factor
        return self._cache[key]


def _file_type(plans: list[TensorPlan]) -> int | None:
    """general.file_type when every matrix is one standard type llama.cpp has a name for, else None
    (the key is dropped: no llama_ftype describes HM_Q4 or a mixture)."""
    matrix_types = {t.type for t in plans if len(t.shape) > 1}
    return {frozenset({F32}): 0, frozenset({F16}): 1, frozenset({Q8_0}): 7}.get(frozenset(matrix_types))


def _open_reader(path: Path):
    import gguf

    register_with_gguf()
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as exc:
        raise HmbuildError(f"Cannot read {path}: {exc.strerror}.") from None
    if magic != b"GGUF":
        raise HmbuildError(f"{path} is not a GGUF file (it does not start with the GGUF magic); pass a .gguf model.")
    try:
        reader = gguf.GGUFReader(str(path), "r")
    except Exception as exc:  # noqa: BLE001 - a damaged file, whatever the reader trips over
        raise HmbuildError(f"{path} is not a readable GGUF file ({exc}); check that it was downloaded completely.") \
            from None
    T.check_runnable(path, ((t.name, t.tensor_type) for t in reader.tensors))  # what the engine cannot run, it cannot requantize from
    return reader


def check_paths(input_path: Path, output_path: Path) -> tuple[Path, Path]:
    src = Path(input_path).expanduser()
    dst = Path(output_path).expanduser()
    if not src.exists():
        raise HmbuildError(f"Input model {src} does not exist; pass an existing .gguf file.")
    if not src.is_file():
        raise HmbuildError(f"Input model {src} is not a file; pass a .gguf file.")
    if dst.resolve() == src.resolve() or (dst.exists() and os.path.samefile(dst, src)):
        raise HmbuildError(f"The output {dst} is the input model; write the quantized model to another file.")
    if dst.is_dir():
        raise HmbuildError(f"The output {dst} is a folder; give a file name such as {dst / 'model-int4.gguf'}.")
    folder = dst.parent if str(dst.parent) else Path(".")
    if not folder.is_dir():
        raise HmbuildError(f"The output folder {folder} does not exist; create it first or write elsewhere.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise HmbuildError(f"The output folder {folder} is not writable; choose a folder you can write to.")
    return src, dst


def quantize_model(input_path: Path, output_path: Path, scheme: str = "int4-g128",
                   keep: list[str] | tuple[str, ...] | None = None,
                   progress: Callable[[int], None] | None = None,
                   on_plan: Callable[[list[TensorPlan]], None] | None = None,
                   calibration: Path | None = None, rotate: bool = True) -> QuantizeResult:
    """Re-quantizes input_path into output_path. `progress(n)` is called with the number of source
    elements just converted; `on_plan(plans)` once before any conversion (e.g. to size a bar).
    calibration: a folder written by hmllm_calibrate (calibrate.py); the HM_Q4 tensors it covers are
    rounded with error compensation (gptq.py) instead of plainly. rotate: store the HM_Q4 matrices
    rotated (plan_tensors), which rounds them with less error at the same size and speed."""
    import gguf

    t0 = time.monotonic()
    if scheme not in SCHEMES:
        raise HmbuildError(f"Unknown scheme {scheme!r}; use one of {', '.join(SCHEMES)}.")
    keep = list(keep or ())
    rules = parse_keep(keep)
    src, dst = check_paths(input_path, output_path)
    reader = _open_reader(src)
    plans = plan_tensors(reader, SCHEMES[scheme], rules, rotate=rotate)
    if on_plan:
        on_plan(plans)

    arch_field = reader.fields.get("general.architecture")
    arch = arch_field.contents() if arch_field is not None else None
    if not isinstance(arch, str) or not arch:
        raise HmbuildError(f"{src} has no general.architecture; it is not a model file hmbuild can quantize.")

    try:
        fd, tmp_name = tempfile.mkstemp(dir=dst.parent, prefix=f".{dst.name}.", suffix=".part")
    except OSError as exc:
        raise HmbuildError(f"Cannot create a file in {dst.parent}: {exc.strerror}; choose a folder you can write to.") \
            from None
    os.close(fd)
    tmp = Path(tmp_name)
    writer = None
    try:
        writer = gguf.GGUFWriter(str(tmp), arch)
        dropped, n_keys = [], 0
        file_type = _file_type(plans)
        source_file_type = None
        for f in reader.fields.values():
            if f.name.startswith("GGUF.") or f.name == "general.architecture" or f.name in QUANTIZE_KEYS \
                    or f.name in ("general.quantized_by", ROTATED_KEY):
                continue
            if f.name == "general.file_type":
                source_file_type = f.contents()
                if file_type is None:
                    dropped.append(f.name)
                    continue
                writer.add_key_value(f.name, file_type, gguf.GGUFValueType.UINT32)
                n_keys += 1
                continue
            vtype = f.types[0]
            sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(f.name, f.contents(), vtype, sub_type=sub)
            n_keys += 1
        if file_type is not None and "general.file_type" not in reader.fields:
            writer.add_key_value("general.file_type", file_type, gguf.GGUFValueType.UINT32)
            n_keys += 1
        if f_align := reader.fields.get("general.alignment"):
            writer.data_alignment = int(f_align.contents())
        added = {"general.quantized_by": f"hmbuild {__version__}", "hmbuild.model.quantize.scheme": scheme}
        if keep:
            added["hmbuild.model.quantize.keep"] = ",".join(r.text for r in rules)
        if source_file_type is not None:
            added["hmbuild.model.quantize.source_file_type"] = int(source_file_type)
        factors = Calibration(calibration) if calibration is not None else None
        if factors is not None:
            added["hmbuild.model.quantize.calibration_tokens"] = factors.tokens
        for k, v in added.items():
            if isinstance(v, int):
                writer.add_key_value(k, v, gguf.GGUFValueType.UINT32)
            else:
                writer.add_string(k, v)
        if rotated := [t.name for t in plans if t.rotated]:
            writer.add_array(ROTATED_KEY, rotated)

        for t in plans:
            np_shape = tuple(reversed(t.shape))
            if t.type in (F32, F16):
                writer.add_tensor_info(t.name, np_shape, np.dtype(np.float32 if t.type == F32 else np.float16),
                                       t.nbytes)
            else:
                writer.add_tensor_info(t.name, np_shape, np.dtype(np.float32), t.nbytes,
                                       raw_dtype=gguf.GGMLQuantizationType(t.type))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        calibrated = []
        for rt, t in zip(reader.tensors, plans):
            factor = None
            if factors is not None and t.type in HM_GROUP and t.type != t.source_type:
                factor = factors.factor(t.name, t.n_cols, rotated=t.rotated)
                if factor is not None:
                    calibrated.append(t.name)
            writer.write_tensor_data(_tensor_bytes(rt, t, progress, factor))
        writer.flush()
        os.fsync(writer.fout[0].fileno())
        writer.close()
        writer = None
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, dst)
    except OSError as exc:
        raise HmbuildError(f"Writing {dst} failed: {exc.strerror or exc}; check the free space and permissions of "
                           f"{dst.parent}.") from None
    finally:
        if writer is not None:
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - already failing; the temp file goes below
                pass
        if tmp.exists():
            tmp.unlink()
    return QuantizeResult(input=src, output=dst, scheme=scheme, keep=[r.text for r in rules],
                          input_bytes=src.stat().st_size, output_bytes=dst.stat().st_size, tensors=plans,
                          seconds=time.monotonic() - t0, metadata_keys=n_keys, added_keys=added,
                          dropped_keys=dropped, calibrated=calibrated)


def format_report(r: QuantizeResult) -> list[str]:
    """Human-readable lines: sizes before/after, per type, and the fallbacks."""
    def mib(n):
        return f"{n / (1 << 20):9.1f} MiB"

    lines = [f"{r.input} -> {r.output} ({r.scheme}) in {r.seconds:.1f} s",
             f"  file size   {mib(r.input_bytes)} -> {mib(r.output_bytes)}  ({100.0 * r.output_bytes / r.input_bytes:.1f} %)",
             f"  {'type':<11} {'before':>24}   {'after':>24}"]
    cb, bb = r.counts(source=True), r.bytes_by_type(source=True)
    ca, ba = r.counts(), r.bytes_by_type()
    for name in sorted(set(cb) | set(ca)):
        before = f"{cb.get(name, 0):4d} {mib(bb.get(name, 0))}" if name in cb else ""
        after = f"{ca.get(name, 0):4d} {mib(ba.get(name, 0))}" if name in ca else ""
        lines.append(f"  {name:<11} {before:>24}   {after:>24}")
    if n_rotated := sum(t.rotated for t in r.tensors):
        lines.append(f"  rotated     {n_rotated} tensors stored as W·R (Hadamard-rotated inputs)")
    if r.calibration is not None or r.calibrated:
        c = r.calibration or {}
        lines.append(f"  calibrated  {len(r.calibrated)} tensors rounded for their inputs"
                     + (f" over {c['tokens']} tokens ({c['seconds']:.1f} s to measure)" if c.get("seconds") else ""))
    for t in r.fallbacks:
        lines.append(f"  fallback: {t.name} is {type_name(t.type)}, not {type_name(t.wanted)}: {t.reason}")
    return lines
