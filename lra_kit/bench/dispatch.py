"""What a call launches outside its Triton kernels: the PyTorch kernels, and the bytes they allocate.

On a GPU the cost of a short op is its launches and the bytes it moves. A ``TorchDispatchMode`` sees every ATen
operator a call runs, on any device, so these counts are checkable on a CPU: under Triton's interpreter the
kernels themselves are not ATen calls, and the operators the interpreter runs to move their arguments (in
Triton's own frames) are left out here. Each operator is one of

- a **view** (``func.is_view``: it only aliases an input; no kernel, no bytes),
- an **allocation** (``empty``, ``empty_like``, …: memory, no kernel),
- a **kernel** (everything else: on a GPU, a launch).

``allocated_bytes`` counts the fresh outputs of allocations and kernels (an in-place or ``out=`` operator
allocates nothing). The causal op's budget test (``tests/test_triton_budget.py``) holds linear and momentum
attention to it.
"""
from __future__ import annotations

import collections
import functools
import importlib.util
import os
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

ALLOCATIONS = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})


@functools.lru_cache(maxsize=1)
def _triton_dir() -> str | None:
    """The folder of the installed ``triton`` package, with a trailing separator (None without Triton)."""
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(next(iter(spec.submodule_search_locations)), "")


def _inside_triton() -> bool:
    """Whether the operator was called from Triton's own code (its interpreter moving a kernel's arguments): a
    frame from a file in the installed ``triton`` package. (A path test such as "/triton/ in it" also matched the
    package's own ``lra_kit/attention/causal/triton/``, and excluding "/lra_kit/" then excluded the whole
    virtual environment of a clone named ``lra_kit``.)"""
    root = _triton_dir()
    if root is None:
        return False
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(root):
            return True
        frame = frame.f_back
    return False


class KernelCounter(TorchDispatchMode):
    """Counts, by name, the views, allocations and kernels that reach it (module docstring), and the bytes
    allocated, leaving out what Triton's interpreter runs."""

    def __init__(self):
        super().__init__()
        self.kernels, self.allocations, self.views = (collections.Counter() for _ in range(3))
        self.allocated_bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if _inside_triton():
            return out
        name = str(func.overloadpacket).removeprefix("aten.")
        if func.is_view:
            self.views[name] += 1
            return out
        (self.allocations if name in ALLOCATIONS else self.kernels)[name] += 1
        mutable = func._schema.is_mutable or any(a.alias_info is not None for a in func._schema.returns)
        if not mutable:
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor):
                    self.allocated_bytes += t.untyped_storage().nbytes()
        return out

    @property
    def ops(self) -> collections.Counter:
        """Every operator by name: kernels, allocations and views together (the generation benchmark's count)."""
        return self.kernels + self.allocations + self.views

    def summary(self) -> str:
        kernels = ", ".join(f"{k} ×{n}" for k, n in sorted(self.kernels.items())) or "none"
        return (f"{sum(self.kernels.values())} kernels ({kernels}); {sum(self.allocations.values())} allocations, "
                f"{self.allocated_bytes} bytes; {sum(self.views.values())} views")
