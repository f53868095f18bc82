"""Helpers of the data tests (imported by tests/test_data_*.py; no conftest needed).

Tests that read the offline datasets call ``require_shared_data(folder)``: in CI
(``CI=true``) a missing folder fails the test, elsewhere it skips with the reason.
``make test`` points ``LRA_KIT_DATA`` at a folder of offline copies when it finds one
(docs/data-provenance.md lists them).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from lra_kit.data import data_dir

FIXTURES = Path(__file__).parent / "data"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_reason(name: str) -> str:
    """Why a test needing the folder ``name`` of the data directory cannot run, and what puts it there. No path of
    this machine (the data directory is named by its variable); a dataset ``lra-kit data fetch`` downloads is
    named with that command, any other as an offline copy it cannot get."""
    from lra_kit.data.store.sources import fetch_names

    where = ("$LRA_KIT_DATA" if os.environ.get("LRA_KIT_DATA")
             else "the data directory (~/.cache/lra_kit; $LRA_KIT_DATA)")
    if name in fetch_names():
        return f"dataset {name!r} is not in {where}: `lra-kit data fetch {name}` downloads it"
    return (f"offline copy {name!r} is not in {where}; `lra-kit data fetch` cannot download it: point LRA_KIT_DATA "
            f"at a folder holding it (docs/data-provenance.md)")


def require_shared_data(name: str) -> Path:
    """``data_dir()/name``, or fail (CI) / skip (elsewhere) with a reason naming what is missing."""
    path = data_dir() / name
    if path.exists():
        return path
    reason = missing_reason(name)
    if in_ci():
        pytest.fail(reason)
    pytest.skip(reason)
