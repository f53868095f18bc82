"""The GPU path: Triton kernels of the chunked weighted causal product (linear and momentum attention).

Chosen automatically for CUDA tensors when Triton is installed (``pip install -e .[gpu]``); the
chunked PyTorch code of :mod:`lra_kit.attention.causal_product` stays the reference and the CPU
path. ``LRA_KIT_TRITON=interpret`` makes :func:`available` say yes for CPU tensors too and runs
the kernels on them under Triton's interpreter: slow, for tests only. ``LRA_KIT_TRITON=0`` (or
``with disabled():``) turns the GPU path off.

Compiled or interpreted is decided per call by the tensor's device (:func:`kernels_for`), never by
what was imported first: the kernels module is loaded twice, once with Triton's interpreter flag
off (CUDA tensors) and once with it on (CPU tensors), so a process can run both.

Non-causal linear attention (Katharopoulos eq. 6) is two matrix products, φ(K)ᵀV and then
φ(Q)(φ(K)ᵀV), plus a column sum for the normaliser: cuBLAS already runs those at the rate of the
hardware, so they stay in PyTorch.
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
def disabled():
    """Inside this block the PyTorch path runs whatever ``LRA_KIT_TRITON`` says: the reference the Triton
    path is tested against, and the benchmark's "PyTorch path" rows on a GPU."""
    before = getattr(_local, "off", False)
    _local.off = True
    try:
        yield
    finally:
        _local.off = before


def _mode() -> str:
    if getattr(_local, "off", False):
        return "0"
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


@functools.cache
def _kernels(interpret: bool):
    """The kernels module, its ``@triton.jit`` functions bound compiled or interpreted (Triton reads
    ``TRITON_INTERPRET`` when a function is decorated). Triton itself is imported with the flag off, so
    that its own library functions stay compilable when an interpreted copy is loaded first."""
    with _interpret_flag("0"):
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    spec = importlib.util.find_spec("lra_kit.attention.triton.kernels")
    name = f"lra_kit.attention.triton._kernels_{'interpreted' if interpret else 'compiled'}"
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, spec.origin))
    with _interpret_flag("1" if interpret else "0"):
        module.__spec__.loader.exec_module(module)
    return module


def kernels_for(tensor: torch.Tensor):
    """The kernels for ``tensor``: compiled for a CUDA tensor, interpreted for any other (LRA_KIT_TRITON=interpret)."""
    return _kernels(not tensor.is_cuda)


def triton_causal_product(*args, **kwargs):
    """:func:`lra_kit.attention.triton.causal_product.triton_causal_product`, imported lazily (Triton is optional)."""
    from lra_kit.attention.triton.causal_product import triton_causal_product as run

    return run(*args, **kwargs)


__all__ = ["ENV", "SUPPORTED_DTYPES", "available", "disabled", "kernels_for", "triton_causal_product",
           "triton_installed"]
