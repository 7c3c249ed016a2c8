"""What the scripts that measure hmllm against llama.cpp share (bench_vs_llama_cpp.py,
quality_vs_llama_cpp.py): the model they default to, the arguments every one of them takes, and
the check that they run under the llama-cpp-python venv (scripts/record_llama_reference.py says
how to make it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import ModuleType

DEFAULT_MODEL = Path.home() / ".cache" / "hmbuild" / "models" / "gemma-3-270m-q4_k_m.gguf"


def argument_parser(doc: str) -> argparse.ArgumentParser:
    """A parser described by the first line of the script's docstring, with --model and --json."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--json", action="store_true")
    return ap


def import_llama_cpp() -> ModuleType | None:
    """The llama_cpp module, or None after saying on stderr that this Python lacks it."""
    try:
        import llama_cpp
    except ImportError:
        print("error: llama_cpp is not importable; run this with the llama-cpp-python venv", file=sys.stderr)
        return None
    return llama_cpp
