"""Softmax attention (Katharopoulos et al. eq. 2; Vaswani et al. 2017), through PyTorch's SDPA.

Derived in the book, chapter "Attention as a kernel smoother" (``sec-softmax-attention``).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from lra_kit.attention.checks import (
    check_causal_lengths,
    check_key_padding_mask,
    check_qkv,
)


def softmax_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    key_padding_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """V' = softmax(QKᵀ/√D) V with optional causal and key-padding masks (eq. 2 / eq. 8).

    Shapes (batch, heads, length, dim); ``key_padding_mask`` is bool (batch, length), True = padding.
    A query that may see no key at all (a fully padded sequence) gets a zero output, not NaN.
    """
    check_qkv(q, k, v)
    check_key_padding_mask(key_padding_mask, k)
    if not (isinstance(dropout_p, (int, float)) and 0.0 <= dropout_p < 1.0):
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p!r}")
    if causal:
        check_causal_lengths(q, k)
    if key_padding_mask is not None and key_padding_mask.device.type == "cpu" and not key_padding_mask.any():
        # No padding (every MNIST/CIFAR batch, a batch of equal lengths): an explicit boolean mask would send
        # SDPA to its masked CPU kernel, measured 5-6x slower at L = 784 than is_causal. (Not on CUDA, where
        # the check would cost a host sync.)
        key_padding_mask = None
    if key_padding_mask is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=dropout_p)

    Lq, Lk = q.shape[2], k.shape[2]
    allowed = ~key_padding_mask[:, None, None, :]  # SDPA: True = may attend
    if causal:
        allowed = allowed & torch.ones(Lq, Lk, dtype=torch.bool, device=q.device).tril()
    empty = ~allowed.any(dim=-1, keepdim=True)  # rows with nothing to attend to
    allowed = allowed | empty
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=dropout_p)
    return out.masked_fill(empty, 0.0)
