"""Where datasets are read from and where derived files are written (docs/design.md §4).

* ``data_dir()``: ``$LRA_KIT_DATA`` or ``~/.cache/lra_kit``. Holds the original files
  (downloaded by ``lra-kit data fetch``, or the offline copies described in docs/data-provenance.md).
  It may be read-only (CI points it at a shared read-only copy), so nothing is ever written
  there except by ``fetch``.
* ``cache_dir()``: ``$LRA_KIT_CACHE`` or ``~/.cache/lra_kit/cache``. Generated ListOps and
  Pathfinder sets and processed tensors go here, each written atomically.
"""
from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "LRA_KIT_DATA"
CACHE_ENV = "LRA_KIT_CACHE"


def data_dir() -> Path:
    """Root of the original dataset files: ``$LRA_KIT_DATA`` or ``~/.cache/lra_kit``."""
    value = os.environ.get(DATA_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "lra_kit"


def cache_dir() -> Path:
    """Root of generated and processed files: ``$LRA_KIT_CACHE`` or ``~/.cache/lra_kit/cache``."""
    value = os.environ.get(CACHE_ENV)
    return Path(value).expanduser() if value else Path.home() / ".cache" / "lra_kit" / "cache"


def lra_release_roots() -> list[Path]:
    """Folders that may hold the extracted LRA release (``listops-1000``, ``tsv_data``, ``pathfinder32``).

    The published ``lra_release.gz`` unpacks to ``lra_release/`` whose layout has varied
    (google-research/long-range-arena issues #12, #63), so both one and two levels are tried.
    """
    root = data_dir()
    return [root / "lra_release", root / "lra_release" / "lra_release", root]
