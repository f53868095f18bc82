"""One trainer per run directory: an advisory lock on ``RUN_DIR/.lock``.

The lock is ``flock`` on an open file, so the kernel releases it when the process ends however it
ends (SIGKILL included): a killed run never leaves the directory stuck, and the file itself may stay.
Where ``fcntl`` does not exist (Windows) runs are not locked.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from lra_kit.errors import OutputPathError, RunDirectoryError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

LOCK_NAME = ".lock"


@contextmanager
def run_directory_lock(run_dir: str):
    """Hold the lock of ``run_dir`` for the duration of the block; refuse if another process holds it."""
    path = os.path.join(run_dir, LOCK_NAME)
    if fcntl is None:
        yield path
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as err:
        raise OutputPathError(path, err.strerror or str(err)) from err
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise RunDirectoryError(f"{run_dir} is in use by another trainer (pid {holder}); wait for it to "
                                    "finish, or give another --out") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the flock


__all__ = ["LOCK_NAME", "run_directory_lock"]
