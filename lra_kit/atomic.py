"""Atomic file writes: a crash or Ctrl-C never leaves a half-written file under its final name.

Used for datasets and caches (``lra_kit.data``), checkpoints and logs (``lra_kit.train``) and
results files (``lra_kit.results``).
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_write(path, mode: str = "wb"):
    """Open a temporary file next to ``path``; on success flush it to disk and move it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
