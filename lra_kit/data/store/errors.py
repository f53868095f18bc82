"""Errors raised when a dataset file is missing, corrupt or unreadable.

The issue asks that every such error name three things: the path that was expected, what
is wrong with it (missing / checksum mismatch / unreadable), and the command that fixes it.
The classes below build that message in one place so that every loader says it the same way.
"""
from __future__ import annotations

from pathlib import Path

from lra_kit.errors import LraKitError


class DataError(LraKitError, RuntimeError):
    """Base class of the data errors; ``path``, ``problem`` and ``fix`` are attributes."""

    problem = "unusable"

    def __init__(self, path: str | Path | list, detail: str = "", fix: str | None = None):
        paths = path if isinstance(path, (list, tuple)) else [path]
        self.paths = [Path(p) for p in paths]
        self.path = self.paths[0]
        self.detail = detail
        self.fix = fix
        where = " or ".join(str(p) for p in self.paths)
        message = f"{self.problem}: {where}"
        if detail:
            message += f"\n  {detail}"
        if fix:
            message += f"\n  fix: {fix}"
        super().__init__(message)


class DataMissingError(DataError, FileNotFoundError):
    """No file at any of the expected paths."""

    problem = "missing"


class ChecksumMismatchError(DataError):
    """The file exists but its sha256 is not the pinned one (truncated or altered)."""

    problem = "checksum mismatch"


class DataUnreadableError(DataError):
    """The file exists (and may verify) but cannot be parsed in the expected format."""

    problem = "unreadable"
