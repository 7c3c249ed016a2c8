"""Deterministic tar.gz archives: the HAR, and the record of a project's last render
(.hmbuild/base.tar.gz). Fixed times, owners and order, and a gzip header without name or time,
so the same inputs give the same bytes."""

from __future__ import annotations

import gzip
import io
import tarfile

FIXED_MTIME = 499162500


def _tar_member(name: str, size: int, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, mode, FIXED_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info


def archive_bytes(entries: dict[str, tuple[bytes, int]]) -> bytes:
    """A deterministic tar.gz of {member name: (data, mode)}, members sorted by name."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(entries):
            data, mode = entries[name]
            tar.addfile(_tar_member(name, len(data), mode), io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()
