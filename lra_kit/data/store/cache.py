"""Keys and folders for generated and processed files under ``cache_dir()``.

A cache entry's folder name is a hash of everything its content depends on (parameters,
the identity of the source files, a format version), so a change of any of them gives a
new entry instead of a stale one.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from lra_kit.data.store.paths import cache_dir

FORMAT_VERSION = 1


def fingerprint(path: Path) -> dict:
    """Identity of a source file: resolved path, size and modification time."""
    stat = Path(path).stat()
    return {"path": str(Path(path).resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def entry_dir(namespace: str, **key) -> Path:
    """``cache_dir()/namespace/<hash of key>``, with the key written next to the data as ``key.json``."""
    key = dict(key, format_version=FORMAT_VERSION)
    text = json.dumps(key, sort_keys=True, default=str)
    folder = cache_dir() / namespace / hashlib.sha256(text.encode()).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    meta = folder / "key.json"
    if not meta.exists():
        meta.write_text(json.dumps(key, sort_keys=True, indent=1, default=str))
    return folder
