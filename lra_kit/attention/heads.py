"""Splitting the model dimension into heads and merging it back (Vaswani et al. 2017, §3.2.2).

One pair of functions for every module: the last dimension ``heads · head_dim`` becomes a heads axis
placed before the length, the layout of ``scaled_dot_product_attention``.
"""
from __future__ import annotations

import torch


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(batch, length, heads·head_dim) → (batch, heads, length, head_dim).

    A recurrent step's single position, (batch, heads·head_dim), becomes (batch, heads, head_dim).
    """
    if not isinstance(n_heads, int) or isinstance(n_heads, bool) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")
    if x.dim() not in (2, 3):
        raise ValueError(f"x must have shape (batch, length, features) or (batch, features), got {tuple(x.shape)}")
    if x.shape[-1] % n_heads:
        raise ValueError(f"the last dim of x ({x.shape[-1]}) must be divisible by n_heads={n_heads}")
    x = x.unflatten(-1, (n_heads, x.shape[-1] // n_heads))
    return x.transpose(1, 2) if x.dim() == 4 else x


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """The inverse of :func:`split_heads`: (batch, heads, length, head_dim) → (batch, length, heads·head_dim),
    (batch, heads, head_dim) → (batch, heads·head_dim)."""
    if x.dim() == 4:
        return x.transpose(1, 2).flatten(-2)
    if x.dim() == 3:
        return x.flatten(-2)
    raise ValueError(
        f"x must have shape (batch, heads, length, head_dim) or (batch, heads, head_dim), got {tuple(x.shape)}"
    )
