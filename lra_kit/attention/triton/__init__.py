"""The GPU path: Triton kernels of the chunked weighted causal product (linear and momentum attention).

Chosen automatically for CUDA tensors when Triton is installed (``pip install -e .[gpu]``); the
chunked PyTorch code of :mod:`lra_kit.attention.causal_product` stays the reference and the CPU
path. ``LRA_KIT_TRITON=interpret`` makes :func:`available` say yes for CPU tensors too and runs
the kernels under Triton's interpreter (``TRITON_INTERPRET=1``): slow, for tests only.
``LRA_KIT_TRITON=0`` turns the GPU path off.

Non-causal linear attention (Katharopoulos eq. 6) is two matrix products, φ(K)ᵀV and then
φ(Q)(φ(K)ᵀV), plus a column sum for the normaliser: cuBLAS already runs those at the rate of the
hardware, so they stay in PyTorch.
"""
from __future__ import annotations

import importlib.util
import os

import torch

ENV = "LRA_KIT_TRITON"
SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _mode() -> str:
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
    if mode == "interpret":
        # Triton reads this when a kernel is decorated, i.e. when the kernels module is first imported.
        os.environ["TRITON_INTERPRET"] = "1"
        return True
    return tensor.is_cuda


def triton_causal_product(*args, **kwargs):
    """:func:`lra_kit.attention.triton.causal_product.triton_causal_product`, imported lazily (Triton is optional)."""
    if _mode() == "interpret":
        os.environ["TRITON_INTERPRET"] = "1"
    from lra_kit.attention.triton.causal_product import triton_causal_product as run

    return run(*args, **kwargs)


__all__ = ["ENV", "SUPPORTED_DTYPES", "available", "triton_causal_product", "triton_installed"]
