"""Linear attention (Katharopoulos et al. 2020, §3.2–3.4).

Non-causal (eqs. 5–6):  V'_i = φ(Q_i)ᵀ Σ_j φ(K_j)V_jᵀ / (φ(Q_i)ᵀ Σ_j φ(K_j) + ε)
Causal (eq. 9):          the sums run over j ≤ i, i.e. the states S_i, Z_i of eqs. 10–12
RNN form (eqs. 16–20):   s_i = s_{i−1} + φ(k_i)v_iᵀ,  z_i = z_{i−1} + φ(k_i)

Derived in the book, chapters "The kernel trick" (``sec-kernel-trick``) and
"Causal masking and the RNN form" (``sec-rnn-form``).
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional, Union

import torch

from lra_kit.attention.causal_product import DEFAULT_CHUNK_SIZE, causal_product
from lra_kit.attention.checks import (
    check_causal_lengths,
    check_eps,
    check_key_padding_mask,
    check_qkv,
    check_step,
)
from lra_kit.attention.feature_maps import FeatureMap, get_feature_map


def mapped_keys_values(k, v, feature_map, key_padding_mask):
    """φ(K) and V with padded positions zeroed, so padding adds nothing to any sum."""
    phi_k = feature_map.keys(k)
    if key_padding_mask is not None:
        keep = (~key_padding_mask)[:, None, :, None].to(phi_k.dtype)
        phi_k, v = phi_k * keep, v * keep
    return phi_k, v


def normalise(numerator: torch.Tensor, phi_q: torch.Tensor, z: torch.Tensor, eps: float) -> torch.Tensor:
    """numerator / (φ(q)ᵀz + ε), the denominator of eqs. 5, 9 and 12; z is (…, dim) or (…, length, dim)."""
    denominator = (phi_q * z).sum(-1, keepdim=True) + eps
    return numerator / denominator


def unnormalised_lra_attention(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The "linear attention" of Nyströmformer's LRA code, which the Momentum paper's LRA runs used
    (notes §4): φ(Q)(φ(K)ᵀV)/√n with n the *padded* length and **no** normaliser — not eq. 5.
    ``phi_k`` and ``v`` arrive with padded positions already zeroed."""
    return (phi_q @ (phi_k.transpose(-1, -2) @ v)) / math.sqrt(phi_q.shape[2])


COMPAT_MODES = (None, "nystromformer")


def linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    feature_map: Union[str, FeatureMap] = "elu",
    key_padding_mask: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    compat: Optional[str] = None,
) -> torch.Tensor:
    """Linear attention: eq. 5/6 (non-causal) or eq. 9 (causal) of Katharopoulos et al.

    ``q, k`` are raw; φ (``feature_map``, default elu+1 of eq. 7) is applied inside.
    The causal path is a chunked computation with the constant-memory gradient of
    eqs. 13–15 (:func:`~lra_kit.attention.causal_product.causal_product`): O(length) memory.

    ``compat="nystromformer"`` (non-causal only) reproduces the LRA code the Momentum paper used,
    :func:`unnormalised_lra_attention` — **not** the paper's formula (book, ``sec-authors-lra``).
    """
    check_qkv(q, k, v)
    check_key_padding_mask(key_padding_mask, k)
    check_eps(eps)
    if compat not in COMPAT_MODES:
        raise ValueError(f"compat must be one of {COMPAT_MODES}, got {compat!r}")
    if compat is not None and causal:
        raise ValueError(f"compat={compat!r} is the non-causal LRA attention; use causal=False")
    phi = get_feature_map(feature_map)
    phi_q = phi.queries(q)
    phi_k, v = mapped_keys_values(k, v, phi, key_padding_mask)
    if compat == "nystromformer":
        return unnormalised_lra_attention(phi_q, phi_k, v)
    if causal:
        check_causal_lengths(q, k)
        # The denominator φ(Q_i)ᵀZ_i is the numerator of eq. 9 with every value V_j = 1, so one
        # causal product on [V, 1] yields both (and one constant-memory backward serves both).
        ones = torch.ones_like(v[..., :1])
        both = causal_product(phi_q, phi_k, torch.cat([v, ones], dim=-1), chunk_size=chunk_size)
        return both[..., :-1] / (both[..., -1:] + eps)
    else:
        kv = phi_k.transpose(-1, -2) @ v  # Σ_j φ(K_j) V_jᵀ, computed once (eq. 6)
        numerator = phi_q @ kv
        z = phi_k.sum(dim=2, keepdim=True)
    return normalise(numerator, phi_q, z, eps)


class LinearState(NamedTuple):
    """RNN state of eqs. 16–19: attention memory s (B, H, D, M) and normaliser memory z (B, H, D)."""

    s: torch.Tensor
    z: torch.Tensor


def linear_attention_step(
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    state: Optional[LinearState] = None,
    *,
    feature_map: Union[str, FeatureMap] = "elu",
    eps: float = 1e-6,
) -> tuple[torch.Tensor, LinearState]:
    """One step of the RNN form, eqs. 16–20: tensors (batch, heads, dim) → (out_t, state).

    ``state=None`` starts from s_0 = 0, z_0 = 0; the state's size does not grow with t.
    """
    check_step(q_t, k_t, v_t)
    check_eps(eps)
    phi = get_feature_map(feature_map)
    phi_q, phi_k = phi.queries(q_t), phi.keys(k_t)
    if state is None:
        s = phi_k.new_zeros(*phi_k.shape, v_t.shape[-1])
        z = phi_k.new_zeros(phi_k.shape)
    else:
        s, z = state
    s = s + phi_k[..., :, None] * v_t[..., None, :]  # eq. 18
    z = z + phi_k  # eq. 19
    out = normalise((phi_q[..., None, :] @ s).squeeze(-2), phi_q, z, eps)  # eq. 20 (inside f_l)
    return out, LinearState(s, z)
