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


def require_shared_data(name: str) -> Path:
    """``data_dir()/name``, or fail (CI) / skip (elsewhere) with a reason naming what is missing."""
    path = data_dir() / name
    if path.exists():
        return path
    reason = (f"offline dataset {name!r} not found at {path} (set LRA_KIT_DATA to a folder holding the offline "
              f"copies listed in docs/data-provenance.md)")
    if in_ci():
        pytest.fail(reason)
    pytest.skip(reason)
