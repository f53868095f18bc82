"""The GPU path: Triton kernels of the chunked weighted causal product (linear and momentum attention).

Chosen automatically for CUDA tensors when Triton is installed (``pip install -e .[gpu]``); the
chunked PyTorch code of :mod:`lra_kit.attention.causal.chunked` stays the reference and the CPU path; the
causal op (:mod:`lra_kit.attention.causal.op`) chooses between the two. ``LRA_KIT_TRITON=interpret``
makes :func:`available` say yes for CPU tensors too and runs the kernels on them under Triton's
interpreter: slow, for tests only. ``LRA_KIT_TRITON=0`` (or ``with disabled():``) turns the GPU path off.
The switches live in :mod:`lra_kit.attention.causal.triton.switch`, the host side of the kernels in
:mod:`lra_kit.attention.causal.triton.host`.

Compiled or interpreted is decided per call by the tensor's device (:func:`kernels_for`), never by
what was imported first: the kernels module is loaded twice, once with Triton's interpreter flag
off (CUDA tensors) and once with it on (CPU tensors), so a process can run both.

Non-causal linear attention (Katharopoulos eq. 6) is two matrix products, φ(K)ᵀV and then
φ(Q)(φ(K)ᵀV), plus a column sum for the normaliser: cuBLAS already runs those at the rate of the
hardware, so they stay in PyTorch.
"""
from __future__ import annotations

from lra_kit.attention.causal.triton.switch import (
    ENV,
    SUPPORTED_DTYPES,
    available,
    disabled,
    interpreted,
    kernels_for,
    triton_installed,
)


__all__ = ["ENV", "SUPPORTED_DTYPES", "available", "disabled", "interpreted", "kernels_for", "triton_installed"]
