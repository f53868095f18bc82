"""Keys and folders for generated and processed files under ``cache_dir()``, and reading them back safely.

A cache entry's folder name is a hash of everything its content depends on (parameters,
the identity of the source files, a format version), so a change of any of them gives a
new entry instead of a stale one.

Files are written with :func:`lra_kit.atomic.atomic_write`: a temporary ``.<name>.<random>.tmp``
renamed into place, so a killed write never leaves a half file under the real name. What a killed
write does leave — the temporary file — is removed the next time its folder is opened
(:func:`remove_orphans`). A cache file that is there but cannot be read (truncated or damaged by
something else) is deleted with a warning and rebuilt (:func:`load_npz`) instead of stopping a run.
"""
from __future__ import annotations

import hashlib
import json
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np

from lra_kit.data.store.paths import cache_dir

FORMAT_VERSION = 1
# A temporary file untouched for this long belongs to a killed write, not to one in progress
# (another process, e.g. a DDP rank, may be writing the same entry right now).
ORPHAN_AGE_S = 600.0


class CacheRebuildWarning(UserWarning):
    """A cache file could not be read and is rebuilt from its sources."""


def fingerprint(path: Path) -> dict:
    """Identity of a source file: resolved path, size and modification time."""
    stat = Path(path).stat()
    return {"path": str(Path(path).resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def remove_orphans(folder: Path, *, min_age_s: float = ORPHAN_AGE_S) -> list[Path]:
    """Delete the temporary files of killed atomic writes in ``folder`` (not older than ``min_age_s``: kept)."""
    if min_age_s < 0:
        raise ValueError(f"min_age_s must be >= 0, got {min_age_s!r}")
    removed = []
    now = time.time()
    for tmp in Path(folder).glob(".*.tmp"):
        try:
            if now - tmp.stat().st_mtime >= min_age_s:
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:  # its writer finished or another process cleaned it first
            continue
    return removed


def entry_dir(namespace: str, **key) -> Path:
    """``cache_dir()/namespace/<hash of key>``, with the key written next to the data as ``key.json``."""
    key = dict(key, format_version=FORMAT_VERSION)
    text = json.dumps(key, sort_keys=True, default=str)
    folder = cache_dir() / namespace / hashlib.sha256(text.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    remove_orphans(folder)
    meta = folder / "key.json"
    if not meta.exists():
        meta.write_text(json.dumps(key, sort_keys=True, indent=1, default=str))
    return folder


def discard(path: Path, problem: str) -> None:
    """Delete an unusable cache file, saying so: it is rebuilt by the caller."""
    warnings.warn(f"cache file {path} is unusable ({problem}); rebuilding it", CacheRebuildWarning, stacklevel=3)
    Path(path).unlink(missing_ok=True)


def load_npz(path: Path, keys: tuple[str, ...] = ()) -> dict[str, np.ndarray] | None:
    """The arrays of the cache file ``path``, or None when it must be (re)built.

    None when the file is absent, and also — after a :class:`CacheRebuildWarning` and deleting it —
    when it is truncated, damaged or lacks one of ``keys``.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as err:
        discard(path, f"{type(err).__name__}: {err}")
        return None
    missing = [k for k in keys if k not in arrays]
    if missing:
        discard(path, f"no array named {', '.join(missing)}")
        return None
    return arrays
