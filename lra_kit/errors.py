"""The project's own error types: what ``lra-kit`` reports as a one-line message instead of a traceback.

Every error a user can fix (a bad config value, a missing dataset, an unwritable output path, a
corrupt checkpoint, a run directory in use) is an :class:`LraKitError`; the command line catches
exactly these. Anything else (an out-of-memory error, a shape bug) is a bug and keeps its traceback.
The subclasses also derive from the built-in type a caller would have caught before (``ValueError``
for a bad config, ``OSError`` for a file system problem), so ``except ValueError`` keeps working.
"""
from __future__ import annotations


class LraKitError(Exception):
    """Base class of every error ``lra-kit`` reports as a message rather than a traceback."""


class ConfigError(LraKitError, ValueError):
    """A configuration value (or command-line option) outside what is allowed; the message names the key."""


class CheckpointError(LraKitError):
    """A checkpoint that cannot be loaded (corrupt, truncated, not ours, or holding code); names the file."""

    def __init__(self, path, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"checkpoint {self.path}: {problem}")


class OutputPathError(LraKitError, OSError):
    """An output path that cannot be written (read-only, a file where a directory is needed, a full disk)."""

    def __init__(self, path, problem: str):
        self.path, self.problem = str(path), problem
        super().__init__(f"cannot write {self.path}: {problem}")


class RunDirectoryError(LraKitError):
    """A run directory that cannot be used as asked: not a run, in use by another trainer, another config."""


__all__ = ["CheckpointError", "ConfigError", "LraKitError", "OutputPathError", "RunDirectoryError"]
