"""The authors' code where it is not the papers' formulas: named compatibility modes, never defaults.

Written from the descriptions in ``docs/reference-implementations.md`` (§4 Nyströmformer's LRA code,
§5 the Momentum authors' code) and ``docs/design.md`` §6.6; shown against the papers in the book,
chapter "What the authors' code computes" (``sec-authors-batched``, ``sec-authors-lra``).

- ``nystromformer_linear_attention``: the LRA code's "linear attention", φ(Q)(φ(K)ᵀV)/√n with n the
  padded length and no normaliser (not Katharopoulos eq. 5).
- ``authors_batched_momentum_attention``: the authors' batched momentum module, which weights key j by
  γ(1 − β^{L−j+1})/(1 − β) with L the padded length in place of the query index i (agrees with
  Nguyen eq. 13 only at i = L).
- ``authors_lra_momentum_attention``: those weights inside the unnormalised LRA attention.

``linear_attention(..., compat=...)`` and ``momentum_attention(..., compat=...)`` dispatch here (and return
``(out, None)``: these modes have no state). This module imports neither of them.
"""
from __future__ import annotations

import math

import torch

from lra_kit.attention.causal.op import causal_product
from lra_kit.attention.checks import (
    check_causal_lengths,
    check_key_padding_mask,
    check_momentum,
    check_qkv,
)
from lra_kit.attention.causal.op import DEFAULT_CHUNK_SIZE, prefix_sum
from lra_kit.attention.feature_maps import FeatureMap, get_feature_map
from lra_kit.attention.lag_weights import key_weights_from_end
from lra_kit.attention.mapped import mapped_keys_values
from lra_kit.attention.normaliser import normalise

LINEAR_COMPAT_MODES = ("nystromformer",)
MOMENTUM_COMPAT_MODES = ("authors_batched", "authors_lra")


def unnormalised_lra_attention(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The "linear attention" of Nyströmformer's LRA code, which the Momentum paper's LRA runs used
    (``docs/reference-implementations.md`` §4): φ(Q)(φ(K)ᵀV)/√n with n the *padded* length and **no**
    normaliser — not eq. 5. ``phi_k`` and ``v`` arrive with padded positions already zeroed."""
    return (phi_q @ (phi_k.transpose(-1, -2) @ v)) / math.sqrt(phi_q.shape[2])


def nystromformer_linear_attention(q, k, v, *, feature_map: str | FeatureMap = "elu", key_padding_mask=None):
    """:func:`unnormalised_lra_attention` for raw q, k, v (non-causal; padded keys and values zeroed)."""
    check_qkv(q, k, v)
    check_key_padding_mask(key_padding_mask, k)
    phi = get_feature_map(feature_map)
    phi_k, v = mapped_keys_values(k, v, phi, key_padding_mask)
    return unnormalised_lra_attention(phi.queries(q), phi_k, v)


def authors_batched_momentum_attention(q, k, v, *, beta, gamma=1.0, causal=False, feature_map="elu",
                                       key_padding_mask=None, eps=1e-6, chunk_size=DEFAULT_CHUNK_SIZE):
    """Normalised attention with key j weighted by γ(1 − β^{L−j+1})/(1 − β), L the padded length, for every
    query (the authors' batched code); the normaliser is unweighted, as in eq. 13."""
    check_qkv(q, k, v)
    check_key_padding_mask(key_padding_mask, k)
    check_momentum(beta, gamma)
    if causal:
        check_causal_lengths(q, k)
    phi = get_feature_map(feature_map)
    phi_q = phi.queries(q)
    phi_k, v = mapped_keys_values(k, v, phi, key_padding_mask)
    w = key_weights_from_end(None, k.shape[2], float(beta), float(gamma), k.device, phi_k.dtype, k.shape[0])
    if causal:
        numerator, _ = causal_product(phi_q, phi_k * w, v, chunk_size=chunk_size)
        return normalise(numerator, phi_q, prefix_sum(phi_k, chunk_size), eps)
    numerator = phi_q @ ((phi_k * w).transpose(-1, -2) @ v)
    return normalise(numerator, phi_q, phi_k.sum(dim=2, keepdim=True), eps)


def authors_lra_momentum_attention(q, k, v, *, beta, gamma=1.0, feature_map="elu", key_padding_mask=None):
    """The authors' LRA momentum attention: the weights γ(1 − β^{n−j+1})/(1 − β) over the padded length n,
    inside :func:`unnormalised_lra_attention` (non-causal)."""
    check_qkv(q, k, v)
    check_key_padding_mask(key_padding_mask, k)
    check_momentum(beta, gamma)
    phi = get_feature_map(feature_map)
    phi_k, v = mapped_keys_values(k, v, phi, key_padding_mask)
    w = key_weights_from_end(None, k.shape[2], float(beta), float(gamma), k.device, phi_k.dtype, k.shape[0])
    return unnormalised_lra_attention(phi.queries(q), phi_k * w, v)


def linear_compat(compat, q, k, v, *, causal, feature_map, key_padding_mask):
    """``linear_attention(..., compat=...)``. Called after the caller's checks."""
    if compat not in LINEAR_COMPAT_MODES:
        raise ValueError(f"compat must be None or one of {LINEAR_COMPAT_MODES} for linear attention, got {compat!r}")
    if causal:
        raise ValueError(f"compat={compat!r} is the non-causal LRA attention; use causal=False")
    return nystromformer_linear_attention(q, k, v, feature_map=feature_map, key_padding_mask=key_padding_mask)


def momentum_compat(compat, q, k, v, *, beta, gamma, causal, feature_map, key_padding_mask, eps, chunk_size):
    """``momentum_attention(..., compat=...)``. Called after the caller's checks."""
    if compat not in MOMENTUM_COMPAT_MODES:
        raise ValueError(
            f"compat must be None or one of {MOMENTUM_COMPAT_MODES} for momentum attention, got {compat!r}")
    if compat == "authors_lra":
        if causal:
            raise ValueError("compat='authors_lra' is the non-causal LRA attention; use causal=False")
        return authors_lra_momentum_attention(q, k, v, beta=beta, gamma=gamma, feature_map=feature_map,
                                              key_padding_mask=key_padding_mask)
    return authors_batched_momentum_attention(q, k, v, beta=beta, gamma=gamma, causal=causal, feature_map=feature_map,
                                              key_padding_mask=key_padding_mask, eps=eps, chunk_size=chunk_size)
