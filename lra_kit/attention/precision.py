"""The number types of the causal attention passes: sums in float32 for 16-bit inputs, autocast kept out."""
from __future__ import annotations

import contextlib
import functools

import torch


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Low-precision inputs accumulate every sum and state in float32 (float16 overflows at 65504)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def without_autocast(method):
    """Run an autograd Function's forward or backward with autocast off. These passes choose their own
    types (``compute_dtype``: float32 sums for 16-bit inputs); under autocast each product inside would be
    recast on its own, and the in-place accumulations (``baddbmm_``, ``addcmul_``) would then meet
    operands of two types and fail."""
    @functools.wraps(method)
    def run(ctx, *args):
        device = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
        off = torch.autocast(device, enabled=False) if device in ("cpu", "cuda") else contextlib.nullcontext()
        with off:
            return method(ctx, *args)

    return run
