"""Momentum attention (Nguyen et al., Momentum Transformer, §3).

Heavy ball in the RNN state (eq. 12):
    m_i = β m_{i−1} − φ(k_i)v_iᵀ,   s_i = s_{i−1} − γ m_i,   z_i = z_{i−1} + φ(k_i),
    v̂_i = φ(q_i)ᵀ s_i / φ(q_i)ᵀ z_i.
Unrolled (eq. 13):  s_i = γ Σ_{j≤i} (1 − β^{i−j+1})/(1 − β) φ(k_j)v_jᵀ — the weight of key j
depends on its lag i − j behind the *query*; the normaliser z_i is not reweighted.
Non-causal (eq. 14): the same weights with the lag N − j behind the sequence end.
Sums and states accumulate in float32 for float16/bfloat16 inputs; the authors' variants live in
:mod:`lra_kit.attention.compat`.

Derived in the book, chapter "Momentum in the RNN" (``sec-momentum-attention``). Adaptive momentum
(eq. 18) is a rule between layers and lives beside the momentum connection, in :mod:`lra_kit.models.layers`.
"""
from __future__ import annotations

from typing import NamedTuple

import torch

from lra_kit.attention.causal.op import causal_op
from lra_kit.attention.causal.state import CausalState
from lra_kit.attention.checks import (
    check_causal_lengths,
    check_chunk_size,
    check_eps,
    check_key_padding_mask,
    check_momentum,
    check_qkv,
    check_state,
    check_state_arguments,
    check_step,
)
from lra_kit.attention.causal.op import DEFAULT_CHUNK_SIZE
from lra_kit.attention.compat import momentum_compat
from lra_kit.attention.feature_maps import FeatureMap, get_feature_map
from lra_kit.attention.lag_weights import key_weights_from_end, momentum_lag_weights
from lra_kit.attention.mapped import mapped_keys_values
from lra_kit.attention.normaliser import normalise
from lra_kit.attention.precision import compute_dtype


class MomentumState(NamedTuple):
    """RNN state of eq. 12: s (B, H, D, M), momentum m (B, H, D, M), normaliser z (B, H, D).

    Unrolled: s_t = γ Σ_{j≤t} u(t−j) φ(k_j)v_jᵀ, m_t = −Σ_{j≤t} β^{t−j} φ(k_j)v_jᵀ, z_t = Σ_{j≤t} φ(k_j).
    """

    s: torch.Tensor
    m: torch.Tensor
    z: torch.Tensor

    def to_causal(self, gamma: float) -> CausalState:
        """The causal op's (s, d, z) = (s/γ, −m, z): the op's states carry no γ and positive coefficients."""
        return CausalState(self.s / gamma, -self.m, self.z)

    @classmethod
    def from_causal(cls, state: CausalState, gamma: float) -> MomentumState:
        return cls(gamma * state.s, -state.d, state.z)


def momentum_weights(lag: torch.Tensor, beta: float, gamma: float = 1.0) -> torch.Tensor:
    """γ(1 − β^{lag+1})/(1 − β): the weight eq. 13 gives a key ``lag`` positions behind the query."""
    check_momentum(beta, gamma)
    lag = torch.as_tensor(lag)
    lag = lag.to(torch.get_default_dtype()) if not lag.is_floating_point() else lag
    return gamma * momentum_lag_weights(lag, float(beta))


def momentum_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    beta: float,
    gamma: float = 1.0,
    causal: bool = False,
    feature_map: str | FeatureMap = "elu",
    key_padding_mask: torch.Tensor | None = None,
    eps: float = 1e-6,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    initial_state: MomentumState | None = None,
    output_final_state: bool = False,
    compat: str | None = None,
) -> tuple[torch.Tensor, MomentumState | None]:
    """Momentum attention: causal = Nguyen et al. eq. 13 (:func:`causal_momentum_attention`),
    non-causal = eq. 14 (:func:`noncausal_momentum_attention`). With β = 0, γ = 1 this is
    :func:`~lra_kit.attention.linear.linear_attention`.

    Returns ``(out, state)``, always two values: ``state`` is None unless ``output_final_state=True`` (causal
    only), and then the :class:`MomentumState` that :func:`momentum_attention_step` takes and returns;
    ``initial_state`` (causal only) continues from earlier positions. ``compat="authors_batched"`` /
    ``"authors_lra"`` are the authors' code, not eq. 13/14 (:mod:`lra_kit.attention.compat`).
    """
    check_qkv(q, k, v)
    check_key_padding_mask(key_padding_mask, k)
    check_momentum(beta, gamma)
    check_eps(eps)
    check_chunk_size(chunk_size)
    phi = get_feature_map(feature_map)
    check_state_arguments(causal, initial_state, output_final_state)
    if causal:
        check_causal_lengths(q, k)
    if initial_state is not None:
        check_state(initial_state, ("s", "m", "z"), q, v, "initial_state", phi.output_dim(q.shape[-1]))
    if compat is not None and (initial_state is not None or output_final_state):
        raise ValueError(f"compat={compat!r} has no recurrent state; initial_state/output_final_state need compat=None")
    beta, gamma = float(beta), float(gamma)
    if compat is not None:
        return momentum_compat(compat, q, k, v, beta=beta, gamma=gamma, causal=causal, feature_map=phi,
                               key_padding_mask=key_padding_mask, eps=eps, chunk_size=chunk_size), None
    if causal:
        return causal_momentum_attention(q, k, v, phi, beta, gamma, key_padding_mask, eps, chunk_size,
                                         initial_state, output_final_state)
    return noncausal_momentum_attention(q, k, v, phi, beta, gamma, key_padding_mask, eps), None


def causal_momentum_attention(q, k, v, phi, beta, gamma, key_padding_mask, eps, chunk_size, initial_state=None,
                              output_final_state=False):
    """Eq. 13: key j weighted by γ(1 − β^{i−j+1})/(1 − β) at query i; the normaliser is not reweighted.

    O(N): the causal op (:mod:`lra_kit.attention.causal.op`), whose chunk boundaries carry the heavy-ball
    states of eq. 12, with the constant-memory gradient. Returns ``(out, MomentumState or None)``.
    """
    state = None if initial_state is None else MomentumState(*initial_state).to_causal(gamma)
    out, final = causal_op(q, k, v, phi=phi, beta=beta, gamma=gamma, eps=eps, chunk_size=chunk_size,
                           key_padding_mask=key_padding_mask,
                           initial_state=state, output_final_state=output_final_state, keep_d=True)
    return out, (None if final is None else MomentumState.from_causal(final, gamma))


def noncausal_momentum_attention(q, k, v, phi, beta, gamma, key_padding_mask, eps):
    """Eq. 14: key j weighted by γ(1 − β^{N−j+1})/(1 − β), N each sequence's true length and j the rank
    of the key among the real (non-padding) keys."""
    dtype = compute_dtype(v.dtype)
    phi_q = phi.queries(q).to(dtype)
    phi_k, v_ = mapped_keys_values(k, v, phi, key_padding_mask, dtype)
    w = key_weights_from_end(key_padding_mask, k.shape[2], beta, gamma, k.device, dtype, k.shape[0])
    numerator = phi_q @ ((phi_k * w).transpose(-1, -2) @ v_)
    return normalise(numerator, phi_q, phi_k.sum(dim=2, keepdim=True), eps).to(v.dtype)


def momentum_attention_step(
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    state: MomentumState | None = None,
    *,
    beta: float,
    gamma: float = 1.0,
    feature_map: str | FeatureMap = "elu",
    eps: float = 1e-6,
) -> tuple[torch.Tensor, MomentumState]:
    """One heavy-ball step of causal momentum attention, eq. 12: (batch, heads, dim) → (out_t, state).

    States are float32 for float16/bfloat16 inputs."""
    check_step(q_t, k_t, v_t)
    check_momentum(beta, gamma)
    check_eps(eps)
    phi = get_feature_map(feature_map)
    if state is not None:
        check_state(state, ("s", "m", "z"), q_t, v_t, "state", phi.output_dim(q_t.shape[-1]))
    dtype = compute_dtype(q_t.dtype)
    phi_q, phi_k, v = phi.queries(q_t).to(dtype), phi.keys(k_t).to(dtype), v_t.to(dtype)
    if state is None:
        s = phi_k.new_zeros(*phi_k.shape, v.shape[-1])
        m = torch.zeros_like(s)
        z = torch.zeros_like(phi_k)
    else:
        s, m, z = state
    m = beta * m - phi_k[..., :, None] * v[..., None, :]
    s = s - gamma * m
    z = z + phi_k
    out = normalise((phi_q[..., None, :] @ s).squeeze(-2), phi_q, z, eps)
    return out.to(v_t.dtype), MomentumState(s, m, z)
