"""sha256 checks of the original files, remembered so that a large archive is hashed once.

A verified file is recorded in ``cache_dir()/verified.json`` under its absolute path, size
and modification time; any change to the file (truncation, a new download) re-triggers the
hash. The record lives in the cache, never in ``data_dir()``, which may be read-only.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from lra_kit.data.store.errors import ChecksumMismatchError, DataMissingError
from lra_kit.atomic import atomic_write
from lra_kit.data.store.cache import remove_orphans
from lra_kit.data.store.paths import cache_dir
from lra_kit.data.store.sources import DataFile

_CHUNK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _stamp_key(path: Path) -> str:
    stat = path.stat()
    return f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"


def _load_stamps() -> dict:
    try:
        return json.loads((cache_dir() / "verified.json").read_text())
    except (OSError, ValueError):
        return {}


def _save_stamp(key: str, sha256: str) -> None:
    remove_orphans(cache_dir())  # temporary files of killed writes of this record
    stamps = _load_stamps()
    stamps[key] = sha256
    try:
        with atomic_write(cache_dir() / "verified.json", "w") as handle:
            json.dump(stamps, handle, indent=0, sort_keys=True)
    except OSError:
        pass  # an unwritable cache only costs a re-hash next time


def remember(path: str | Path, sha256: str) -> None:
    """Record that ``path``, at its current size and time, has hash ``sha256`` (just computed by the caller)."""
    _save_stamp(_stamp_key(Path(path)), sha256)


def verify(path: str | Path, sha256: str | None, *, fix: str, recheck: bool = False) -> Path:
    """Return ``path`` if it exists and matches ``sha256`` (None: existence only); raise otherwise.

    A file already verified with the same path, size and modification time is not hashed again,
    unless ``recheck``: only a full hash finds a file altered in place without a change of size
    or time (``lra-kit data fetch --verify``).
    """
    path = Path(path)
    if not path.is_file():
        raise DataMissingError(path, fix=fix)
    if sha256 is None:
        return path
    key = _stamp_key(path)
    if not recheck and _load_stamps().get(key) == sha256:
        return path
    actual = sha256_file(path)
    if actual != sha256:
        raise ChecksumMismatchError(
            path,
            f"expected sha256 {sha256}, found {actual} ({path.stat().st_size:,} bytes): "
            "a truncated, altered or different file",
            fix=f"delete it, then {fix}",
        )
    _save_stamp(key, sha256)
    return path


def locate(
    candidates: list[DataFile] | tuple[DataFile, ...], *, fix: str, root: Path | None = None
) -> tuple[Path, DataFile]:
    """The first candidate file present under ``root`` (default ``data_dir()``), verified.

    A present but corrupt file raises ``ChecksumMismatchError`` rather than falling through
    to the next candidate: a silently ignored bad download would be a surprise later.
    """
    from lra_kit.data.store.paths import data_dir

    root = data_dir() if root is None else Path(root)
    for entry in candidates:
        path = root / entry.relpath
        if path.is_file():
            return verify(path, entry.sha256, fix=fix), entry
    raise DataMissingError([root / c.relpath for c in candidates], fix=fix)
