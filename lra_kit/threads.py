"""How many intra-op threads PyTorch uses in the notebooks and the command line (docs/running.md, Threads).

The package chooses, so that a book built by hand (``jupyter-book build .``) or a run started from a shell
behaves as ``make book`` does::

    --threads N            on the command line (``lra-kit --threads 2 train ...``), else
    LRA_KIT_THREADS=N      in the environment, else
    OMP_NUM_THREADS=N      (the standard variable, when set), else
    1                      :data:`DEFAULT`, what was measured best.

Why one. The book's models are small (d 64, a few thousand positions): on two cores a second thread gains
nothing when the machine is idle (copy task at book scale, 100 steps: 7.1 s with two threads, 7.4 s with one),
and beside any other busy process the two OpenMP threads wait on each other at every small op (205 s against
6 s; ``jupyter-book build`` by hand 735 s against 234 s). Training is the same: one ``lra-kit train`` fell from
55 to 1.6 it/s beside another job, and two runs of one thread each finish sooner than one run of two
(docs/budget.md), which is how every run of record was made. A larger model on an idle many-core machine may
gain from more: ``LRA_KIT_THREADS`` says so.

:func:`use_threads` sets :func:`torch.set_num_threads` in this process (the command line calls it);
:func:`kernel_environment` exports the choice to the Jupyter kernels a book build starts, which read it when
torch starts (:mod:`lra_kit.viz.notebooks` calls it).
"""
from __future__ import annotations

import os

from lra_kit.errors import ConfigError

ENV_VAR = "LRA_KIT_THREADS"
DEFAULT = 1


def _parse(value, source: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(f"{source} must be a whole number of threads >= 1, got {value!r}")
    return n


def get_threads(threads: int | None = None, environ=None) -> int:
    """The number of intra-op threads: ``threads`` if given, else ``$LRA_KIT_THREADS``, else
    ``$OMP_NUM_THREADS``, else :data:`DEFAULT` (1)."""
    environ = os.environ if environ is None else environ
    if threads is not None:
        return _parse(threads, "threads")
    for name in (ENV_VAR, "OMP_NUM_THREADS"):
        if environ.get(name, "").strip():
            return _parse(environ[name], f"${name}")
    return DEFAULT


def use_threads(threads: int | None = None) -> int:
    """:func:`torch.set_num_threads` to :func:`get_threads` (``threads``); returns the number set."""
    import torch

    n = get_threads(threads)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def kernel_environment(environ=None) -> int:
    """Export the choice to processes started from here (a book build's Jupyter kernels): ``OMP_NUM_THREADS``
    and ``MKL_NUM_THREADS`` are set to :func:`get_threads`, which torch reads when a kernel imports it."""
    environ = os.environ if environ is None else environ
    n = get_threads(environ=environ)
    environ["OMP_NUM_THREADS"] = environ["MKL_NUM_THREADS"] = str(n)
    return n


__all__ = ["DEFAULT", "ENV_VAR", "get_threads", "kernel_environment", "use_threads"]
