"""Shared helpers for the attention tests: random inputs and tolerances."""
from __future__ import annotations

import torch


def rand_qkv(B=2, H=3, N=17, D=5, M=None, *, dtype=torch.float64, seed=0, device="cpu", requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    M = D if M is None else M
    q = torch.randn(B, H, N, D, generator=g, dtype=dtype)
    k = torch.randn(B, H, N, D, generator=g, dtype=dtype)
    v = torch.randn(B, H, N, M, generator=g, dtype=dtype)
    out = [t.to(device).requires_grad_(requires_grad) for t in (q, k, v)]
    return tuple(out)


def right_padding_mask(lengths, N, device="cpu"):
    """bool (B, N), True on positions at or after each length (padding at the end)."""
    lengths = torch.as_tensor(lengths, device=device)
    return torch.arange(N, device=device)[None, :] >= lengths[:, None]


def assert_close(actual, expected, *, rtol=1e-10, atol=1e-10, msg=""):
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, msg=lambda m: f"{msg}\n{m}")
