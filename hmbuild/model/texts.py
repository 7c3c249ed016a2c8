"""The English texts hmbuild ships (inside the package, so wheels carry them) and the one check every
text a user names goes through (`eval --text`, `quantize --calibrate`)."""

from __future__ import annotations

from pathlib import Path

from hmbuild.errors import HmbuildError

DATA = Path(__file__).resolve().parent / "data"


def shipped_text(name: str, what: str, option: str) -> Path:
    """hmbuild/model/data/NAME, or one sentence if the installation lost it."""
    path = DATA / name
    if not path.is_file():
        raise HmbuildError(f"hmbuild's default {what} text {path} is missing; reinstall hmbuild or pass {option} FILE.")
    return path


def check_text(text: Path, option: str, purpose: str) -> Path:
    """A readable, non-empty UTF-8 text file (resolved), or one sentence naming `option`."""
    if not text.is_file():
        raise HmbuildError(f"Text file {text} does not exist; pass an existing UTF-8 text file or omit {option}.")
    try:
        content = text.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HmbuildError(f"Text file {text} is not valid UTF-8 (byte {exc.start}); save it as UTF-8.") from None
    except OSError as exc:
        raise HmbuildError(f"Text file {text} cannot be read ({exc.strerror}); check its permissions.") from None
    if not content.strip():
        raise HmbuildError(f"Text file {text} is empty; give a text {purpose} or omit {option}.")
    return text.resolve()
