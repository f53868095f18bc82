"""Momentum attention and adaptive momentum (Nguyen et al., Momentum Transformer, §3).

Heavy ball in the RNN state (eq. 12):
    m_i = β m_{i−1} − φ(k_i)v_iᵀ,   s_i = s_{i−1} − γ m_i,   z_i = z_{i−1} + φ(k_i),
    v̂_i = φ(q_i)ᵀ s_i / φ(q_i)ᵀ z_i.
Unrolled (eq. 13):  s_i = γ Σ_{j≤i} (1 − β^{i−j+1})/(1 − β) φ(k_j)v_jᵀ — the weight of key j
depends on its lag i − j behind the *query*; the normaliser z_i is not reweighted.
Non-causal (eq. 14): the same weights with the lag N − j behind the sequence end.

Derived in the book, chapter "Momentum in the RNN" (``sec-momentum-attention``);
adaptive momentum (eq. 18) in "Momentum connection and adaptive momentum" (``sec-adaptive-momentum``).
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Union

import torch

from lra_kit.attention.causal_product import DEFAULT_CHUNK_SIZE, causal_product, momentum_lag_weights, prefix_sum
from lra_kit.attention.checks import (
    check_causal_lengths,
    check_eps,
    check_key_padding_mask,
    check_momentum,
    check_qkv,
    check_step,
)
from lra_kit.attention.feature_maps import FeatureMap, get_feature_map
from lra_kit.attention.linear import mapped_keys_values, normalise, unnormalised_lra_attention

COMPAT_MODES = (None, "authors_batched", "authors_lra")


def momentum_weights(lag: torch.Tensor, beta: float, gamma: float = 1.0) -> torch.Tensor:
    """γ(1 − β^{lag+1})/(1 − β): the weight eq. 13 gives a key ``lag`` positions behind the query."""
    check_momentum(beta, gamma)
    lag = torch.as_tensor(lag)
    lag = lag.to(torch.get_default_dtype()) if not lag.is_floating_point() else lag
    return gamma * momentum_lag_weights(lag, float(beta))


def _key_weights_from_end(key_padding_mask, length, beta, gamma, device, dtype, batch):
    """γ u(N − j) for each key: eq. 14's weights, N the true length and j the rank of a real key."""
    if key_padding_mask is None:
        rank = torch.arange(1, length + 1, device=device, dtype=dtype).expand(batch, length)
        n = torch.full((batch, 1), float(length), device=device, dtype=dtype)
    else:
        real = (~key_padding_mask).to(dtype)
        rank = torch.cumsum(real, dim=1)
        n = real.sum(dim=1, keepdim=True)
    lag = (n - rank).clamp(min=0)
    return (gamma * momentum_lag_weights(lag, beta))[:, None, :, None]  # (B, 1, L, 1)


def momentum_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    beta: float,
    gamma: float = 1.0,
    causal: bool = False,
    feature_map: Union[str, FeatureMap] = "elu",
    key_padding_mask: Optional[torch.Tensor] = None,
    eps: float = 1e-6,
    compat: Optional[str] = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> torch.Tensor:
    """Momentum attention: causal = Nguyen et al. eq. 13, non-causal = eq. 14.

    Causal, computed in O(N) as a chunked weighted causal product whose chunk boundaries carry
    the two heavy-ball states (s, m) of eq. 12 (see :mod:`lra_kit.attention.causal_product`),
    with the constant-memory gradient. Non-causal: each key j is weighted by
    γ(1 − β^{N−j+1})/(1 − β), with N each sequence's true length and j the rank of the key
    among the real (non-padding) keys. With β = 0, γ = 1 this is :func:`linear_attention`.

    ``compat="authors_batched"`` reproduces the authors' public batched code, which weights key j
    by γ(1 − β^{L−j+1})/(1 − β) with L the (padded) sequence length in place of the query index i.
    This is **not** the paper's formula: it agrees with eq. 13 only at the last position i = L.
    ``compat="authors_lra"`` (non-causal only) is the authors' LRA attention: those weights inside
    Nyströmformer's unnormalised φ(Q)(φ(K)ᵀV)/√n (:func:`~lra_kit.attention.linear.unnormalised_lra_attention`),
    also not the paper's formula (book, ``sec-authors-lra``).
    """
    check_qkv(q, k, v)
    check_key_padding_mask(key_padding_mask, k)
    check_momentum(beta, gamma)
    check_eps(eps)
    if compat not in COMPAT_MODES:
        raise ValueError(f"compat must be one of {COMPAT_MODES}, got {compat!r}")
    beta, gamma = float(beta), float(gamma)
    phi = get_feature_map(feature_map)
    phi_q = phi.queries(q)
    phi_k, v = mapped_keys_values(k, v, phi, key_padding_mask)
    B, _, L, _ = k.shape

    if causal and compat is None:
        check_causal_lengths(q, k)
        numerator = gamma * causal_product(phi_q, phi_k, v, beta=beta, chunk_size=chunk_size)
        return normalise(numerator, phi_q, prefix_sum(phi_k, chunk_size), eps)

    mask_for_weights = None if compat in ("authors_batched", "authors_lra") else key_padding_mask
    w = _key_weights_from_end(mask_for_weights, L, beta, gamma, k.device, phi_k.dtype, B)
    if compat == "authors_lra":
        if causal:
            raise ValueError("compat='authors_lra' is the non-causal LRA attention; use causal=False")
        return unnormalised_lra_attention(phi_q, phi_k * w, v)
    if causal:  # compat == "authors_batched"
        check_causal_lengths(q, k)
        numerator = causal_product(phi_q, phi_k * w, v, chunk_size=chunk_size)
        return normalise(numerator, phi_q, prefix_sum(phi_k, chunk_size), eps)
    numerator = phi_q @ ((phi_k * w).transpose(-1, -2) @ v)
    return normalise(numerator, phi_q, phi_k.sum(dim=2, keepdim=True), eps)


class MomentumState(NamedTuple):
    """RNN state of eq. 12: s (B, H, D, M), momentum m (B, H, D, M), normaliser z (B, H, D)."""

    s: torch.Tensor
    m: torch.Tensor
    z: torch.Tensor


def momentum_attention_step(
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    state: Optional[MomentumState] = None,
    *,
    beta: float,
    gamma: float = 1.0,
    feature_map: Union[str, FeatureMap] = "elu",
    eps: float = 1e-6,
) -> tuple[torch.Tensor, MomentumState]:
    """One heavy-ball step of causal momentum attention, eq. 12: (batch, heads, dim) → (out_t, state)."""
    check_step(q_t, k_t, v_t)
    check_momentum(beta, gamma)
    check_eps(eps)
    phi = get_feature_map(feature_map)
    phi_q, phi_k = phi.queries(q_t), phi.keys(k_t)
    if state is None:
        s = phi_k.new_zeros(*phi_k.shape, v_t.shape[-1])
        m = torch.zeros_like(s)
        z = torch.zeros_like(phi_k)
    else:
        s, m, z = state
    m = beta * m - phi_k[..., :, None] * v_t[..., None, :]
    s = s - gamma * m
    z = z + phi_k
    out = normalise((phi_q[..., None, :] @ s).squeeze(-2), phi_q, z, eps)
    return out, MomentumState(s, m, z)


def adaptive_momentum(
    grad: torch.Tensor,
    prev_grad: torch.Tensor,
    *,
    delta: float = 1e-3,
    dim: Optional[Union[int, tuple[int, ...]]] = None,
) -> torch.Tensor:
    """Adaptive heavy-ball momentum, Nguyen et al. eq. 18.

        β̃_k = proj_[0, 1−δ]( (1 − sqrt(‖g_k − g_{k−1}‖ / ‖g_{k−1}‖))² )

    Norms run over all elements when ``dim=None`` (a 0-d tensor comes back) and over ``dim``
    otherwise (kept as size-1 dims, so β̃ broadcasts against ``grad``; e.g. ``dim=(1, 2)`` for
    one β̃ per sample of a (batch, length, features) tensor). A zero ‖g_{k−1}‖ is treated as
    the smallest positive number, which sends β̃ to its bound instead of NaN.
    """
    if not isinstance(grad, torch.Tensor) or not isinstance(prev_grad, torch.Tensor):
        raise TypeError("grad and prev_grad must be tensors")
    if grad.shape != prev_grad.shape:
        raise ValueError(f"grad and prev_grad must have the same shape, got {tuple(grad.shape)} and {tuple(prev_grad.shape)}")
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    keepdim = dim is not None
    diff = torch.linalg.vector_norm(grad - prev_grad, dim=dim, keepdim=keepdim)
    prev = torch.linalg.vector_norm(prev_grad, dim=dim, keepdim=keepdim)
    ratio = diff / prev.clamp_min(torch.finfo(prev.dtype).tiny)
    return ((1.0 - torch.sqrt(ratio)) ** 2).clamp(0.0, 1.0 - delta)
