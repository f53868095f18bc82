"""Safe file writes: a crash, Ctrl-C or full disk never leaves a half-written file under its final name.

Used for datasets and caches (``lra_kit.data``), checkpoints and logs (``lra_kit.train``) and
results files (``lra_kit.results``). Three helpers:

* :func:`atomic_write` writes to a temporary file beside the target, fsyncs it and renames it
  over the target (``os.replace`` is atomic on POSIX and Windows). The file gets the mode a plain
  ``open()`` would give it (``0o666`` less the umask), not ``mkstemp``'s private ``0o600``.
* :func:`check_writable` finds an unwritable output path *before* a long run, not after it.
* :func:`remove_orphans` deletes the temporary files of writes killed mid-way (SIGKILL, power loss).

A file-system failure is raised as :class:`lra_kit.errors.OutputPathError` naming the path and the
problem (it is also an ``OSError``).
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from lra_kit.errors import OutputPathError

TEMP_SUFFIX = ".tmp"


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


def _problem(err: OSError) -> str:
    return err.strerror or str(err) or type(err).__name__


def _umask() -> int:
    """The process umask, read without changing it where Linux allows (``os.umask`` must set it to read it)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_write(path, mode: str = "wb"):
    """Open a temporary file next to ``path``; on success flush it to disk and move it into place.

    On any exception the temporary file is removed and ``path`` is left as it was. An ``OSError``
    about the target (its directory, the temporary file, the disk) becomes an ``OutputPathError``;
    one about another file, raised by the caller's code inside the block, passes through unchanged.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=_temp_prefix(path), suffix=TEMP_SUFFIX)
    except OSError as err:
        raise OutputPathError(path, _problem(err)) from err
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        ours = getattr(err, "filename", None) in (None, tmp, str(path))
        if isinstance(err, OSError) and not isinstance(err, OutputPathError) and ours:
            raise OutputPathError(path, _problem(err)) from err
        raise


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_writable(path, *, directory: bool = False) -> Path:
    """Raise ``OutputPathError`` now if ``path`` could not be written later; return it as a ``Path``.

    ``directory=True``: ``path`` is a directory to create or write into (``lra-kit train --out``);
    else ``path`` is a file to create or replace (``--json FILE``). Nothing is created: a probe file
    is made and removed in the deepest directory that exists on the way to ``path``.
    """
    path = Path(path)
    if directory and path.exists() and not path.is_dir():
        raise OutputPathError(path, "it exists and is not a directory")
    if not directory and path.is_dir():
        raise OutputPathError(path, "it is a directory, not a file")
    folder = path if directory else path.parent
    existing = _nearest_existing(folder.absolute())
    if not existing.is_dir():
        raise OutputPathError(path, f"{existing} is a file, not a directory")
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".lra-kit-probe.", suffix=TEMP_SUFFIX)
        os.close(fd)
    except OSError as err:
        raise OutputPathError(path, f"{existing} is not writable ({_problem(err)})") from err
    try:
        os.unlink(probe)
    except FileNotFoundError:  # removed meanwhile by remove_orphans of a run in that directory
        pass
    return path


def remove_orphans(directory) -> list[Path]:
    """Delete the temporary files left in ``directory`` by writes that were killed; return their paths.

    Only safe while no other process writes there (the trainer holds the run directory's lock).
    """
    directory = Path(directory)
    if not directory.is_dir():
        return []
    removed = []
    for entry in directory.iterdir():
        if entry.name.startswith(".") and entry.name.endswith(TEMP_SUFFIX) and entry.is_file():
            try:
                entry.unlink()
            except FileNotFoundError:
                continue
            removed.append(entry)
    return removed


__all__ = ["atomic_write", "check_writable", "remove_orphans"]
