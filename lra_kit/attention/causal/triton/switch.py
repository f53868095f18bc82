"""Whether the causal op takes the Triton path, and which kernels it runs: the switches of the GPU path.

``LRA_KIT_TRITON`` = ``auto`` (CUDA tensors, Triton installed), ``interpret`` (also CPU tensors, under Triton's
interpreter; tests) or ``0``; :func:`disabled` turns the path off inside a block, :func:`interpreted` on.
Imported by the causal op (:mod:`lra_kit.attention.causal.op`) and the Triton host code; it imports neither.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import threading

import torch

ENV = "LRA_KIT_TRITON"
SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


_local = threading.local()


@contextlib.contextmanager
def _flag(name: str):
    """This thread's switch ``name`` on inside the block, restored after."""
    before = getattr(_local, name, False)
    setattr(_local, name, True)
    try:
        yield
    finally:
        setattr(_local, name, before)


def disabled():
    """Inside this block the PyTorch path runs whatever ``LRA_KIT_TRITON`` says: the reference the Triton
    path is tested against, and the benchmark's "PyTorch path" rows on a GPU."""
    return _flag("off")


def interpreted():
    """Inside this block CPU tensors take the Triton path under Triton's interpreter, as ``LRA_KIT_TRITON=interpret``
    has it (CUDA tensors run compiled): how the book counts, on a CPU, what the GPU path launches. :func:`disabled`
    wins where both are on."""
    return _flag("interpret")


def _mode() -> str:
    if getattr(_local, "off", False):
        return "0"
    if getattr(_local, "interpret", False):
        return "interpret"
    mode = os.environ.get(ENV, "auto").strip().lower()
    if mode not in ("auto", "interpret", "0", "off"):
        raise ValueError(f"{ENV} must be 'auto', 'interpret' or '0', got {mode!r}")
    return mode


def triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def available(tensor: torch.Tensor) -> bool:
    """Whether :func:`triton_causal_product` can run on ``tensor``: a float32/bf16/fp16 CUDA tensor with
    Triton installed, or such a tensor on any device when ``LRA_KIT_TRITON=interpret`` (the interpreter; tests)."""
    mode = _mode()
    if mode in ("0", "off") or tensor.dtype not in SUPPORTED_DTYPES or not triton_installed():
        return False
    return mode == "interpret" or tensor.is_cuda


@contextlib.contextmanager
def _interpret_flag(value: str):
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = before


KERNEL_MODULES = ("kernels", "decode_kernels")  # the causal op's kernels; one generated position's (decode step)


@functools.cache
def _kernels(interpret: bool, name: str = "kernels"):
    """The kernels module ``name`` (one of :data:`KERNEL_MODULES`), its ``@triton.jit`` functions bound compiled or
    interpreted (Triton reads ``TRITON_INTERPRET`` when a function is decorated). Triton itself is imported with the
    flag off, so that its own library functions stay compilable when an interpreted copy is loaded first."""
    if name not in KERNEL_MODULES:
        raise ValueError(f"name must be one of {KERNEL_MODULES}, got {name!r}")
    with _interpret_flag("0"):
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    spec = importlib.util.find_spec(f"lra_kit.attention.causal.triton.{name}")
    copy = f"lra_kit.attention.causal.triton._{name}_{'interpreted' if interpret else 'compiled'}"
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(copy, spec.origin))
    with _interpret_flag("1" if interpret else "0"):
        module.__spec__.loader.exec_module(module)
    return module


class InterpreterUnsupported(RuntimeError):
    """Triton's interpreter, as installed, cannot run this package's kernels (:func:`interpreter_problem`)."""


@functools.cache
def interpreter_problem() -> str | None:
    """None where Triton's interpreter runs this package's kernels, else why it cannot.

    Every state kernel loops to a run-time bound (the number of chunks). The interpreter passes such an
    argument as a one-element NumPy array, and Triton 3.6's interpreter turns it into a loop bound with
    ``int()``, which NumPy refuses ("only 0-dimensional arrays can be converted to Python scalars"; seen with
    Triton 3.6.0 and NumPy 2.4.6 on a CPU, and 2.5.2 on the H200). Triton 3.9's interpreter squeezes the array
    first. The probe asks the interpreter itself rather than comparing version numbers."""
    import numpy as np
    import triton

    out = torch.zeros(1, dtype=torch.int32)
    try:
        _kernels(True).loop_bound_probe_kernel[(1,)](out, 3)
    except Exception as e:  # noqa: BLE001 - any failure of the interpreter is the answer
        return (f"Triton {triton.__version__}'s interpreter cannot loop to a run-time bound with NumPy "
                f"{np.__version__} ({e!r}); the interpreted kernels need a Triton whose interpreter can "
                "(3.9 can) or a NumPy that still converts a one-element array (before 2.4); "
                "or set LRA_KIT_TRITON=0 for the PyTorch path")
    if int(out) != 3:
        return f"Triton {triton.__version__}'s interpreter counted to {int(out)}, not 3, in a loop to a run-time bound"
    return None


def kernels_for(tensor: torch.Tensor, name: str = "kernels"):
    """The kernels module ``name`` for ``tensor``: compiled for a CUDA tensor, interpreted for any other
    (LRA_KIT_TRITON=interpret); :class:`InterpreterUnsupported` where the interpreter cannot run this package's
    kernels (:func:`interpreter_problem`)."""
    if not tensor.is_cuda and (problem := interpreter_problem()) is not None:
        raise InterpreterUnsupported(problem)
    return _kernels(not tensor.is_cuda, name)
