"""Linear attention (Katharopoulos et al. 2020, §3.2–3.4).

Non-causal (eqs. 5–6):  V'_i = φ(Q_i)ᵀ Σ_j φ(K_j)V_jᵀ / (φ(Q_i)ᵀ Σ_j φ(K_j) + ε)
Causal (eq. 9):          the sums run over j ≤ i, i.e. the states S_i, Z_i of eqs. 10–12
RNN form (eqs. 16–20):   s_i = s_{i−1} + φ(k_i)v_iᵀ,  z_i = z_{i−1} + φ(k_i)

Sums and states accumulate in float32 for float16/bfloat16 inputs (outputs keep the input dtype).
The quirks of the authors' LRA code live in :mod:`lra_kit.attention.compat`.
Derived in the book, chapters "The kernel trick" (``sec-kernel-trick``) and
"Causal masking and the RNN form" (``sec-rnn-form``).
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
    check_qkv,
    check_state,
    check_state_arguments,
    check_step,
)
from lra_kit.attention.causal.op import DEFAULT_CHUNK_SIZE
from lra_kit.attention.compat import linear_compat
from lra_kit.attention.feature_maps import FeatureMap, get_feature_map
from lra_kit.attention.mapped import mapped_keys_values
from lra_kit.attention.normaliser import normalise
from lra_kit.attention.precision import compute_dtype


class LinearState(NamedTuple):
    """RNN state of eqs. 16–19: attention memory s = Σ φ(k_j)v_jᵀ (B, H, D, M) and normaliser memory
    z = Σ φ(k_j) (B, H, D)."""

    s: torch.Tensor
    z: torch.Tensor

    def to_causal(self) -> CausalState:
        """The causal op's (s, d, z): the same s and z; no decayed state at β = 0."""
        return CausalState(self.s, None, self.z)

    @classmethod
    def from_causal(cls, state: CausalState) -> LinearState:
        return cls(state.s, state.z)


def linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    feature_map: str | FeatureMap = "elu",
    key_padding_mask: torch.Tensor | None = None,
    eps: float = 1e-6,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    initial_state: LinearState | None = None,
    output_final_state: bool = False,
    compat: str | None = None,
) -> tuple[torch.Tensor, LinearState | None]:
    """Linear attention: eq. 5/6 (non-causal, :func:`noncausal_linear_attention`) or eq. 9 (causal,
    :func:`causal_linear_attention`) of Katharopoulos et al.

    ``q, k`` are raw; φ (``feature_map``, default elu+1 of eq. 7) is applied inside. Returns ``(out, state)``,
    always two values: ``state`` is None unless ``output_final_state=True`` (causal only), and then the
    :class:`LinearState` that :func:`linear_attention_step` takes and returns; ``initial_state`` (causal only)
    continues from earlier positions. ``compat="nystromformer"`` (non-causal) is the
    unnormalised attention of the authors' LRA code, :func:`lra_kit.attention.compat.nystromformer_linear_attention`.
    """
    check_qkv(q, k, v)
    check_key_padding_mask(key_padding_mask, k)
    check_eps(eps)
    check_chunk_size(chunk_size)
    phi = get_feature_map(feature_map)
    check_state_arguments(causal, initial_state, output_final_state)
    if causal:
        check_causal_lengths(q, k)
    if initial_state is not None:
        check_state(initial_state, ("s", "z"), q, v, "initial_state", phi.output_dim(q.shape[-1]))
    if compat is not None and (initial_state is not None or output_final_state):
        raise ValueError(f"compat={compat!r} has no recurrent state; initial_state/output_final_state need compat=None")
    if compat is not None:
        return linear_compat(compat, q, k, v, causal=causal, feature_map=phi, key_padding_mask=key_padding_mask), None
    if causal:
        return causal_linear_attention(q, k, v, phi, key_padding_mask, eps, chunk_size, initial_state,
                                       output_final_state)
    return noncausal_linear_attention(q, k, v, phi, key_padding_mask, eps), None


def noncausal_linear_attention(q, k, v, phi, key_padding_mask, eps):
    """Eq. 6: φ(Q)(Σ_j φ(K_j)V_jᵀ) / (φ(Q)·Σ_j φ(K_j) + ε), both sums computed once for all queries."""
    dtype = compute_dtype(v.dtype)
    phi_q = phi.queries(q).to(dtype)
    phi_k, v_ = mapped_keys_values(k, v, phi, key_padding_mask, dtype)
    kv = phi_k.transpose(-1, -2) @ v_  # Σ_j φ(K_j) V_jᵀ
    z = phi_k.sum(dim=2, keepdim=True)  # Σ_j φ(K_j)
    return normalise(phi_q @ kv, phi_q, z, eps).to(v.dtype)


def causal_linear_attention(q, k, v, phi, key_padding_mask, eps, chunk_size, initial_state=None,
                            output_final_state=False):
    """Eq. 9: φ(Q_i)ᵀS_i / (φ(Q_i)ᵀZ_i + ε) with S_i, Z_i the running sums of eqs. 10–11, through the causal op
    and its constant-memory gradient (:mod:`lra_kit.attention.causal.op`). Returns ``(out, LinearState or
    None)``."""
    state = None if initial_state is None else LinearState(*initial_state).to_causal()
    out, final = causal_op(q, k, v, phi=phi, beta=0.0, gamma=1.0, eps=eps, chunk_size=chunk_size,
                           key_padding_mask=key_padding_mask,
                           initial_state=state, output_final_state=output_final_state)
    return out, (None if final is None else LinearState.from_causal(final))


def linear_attention_step(
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    state: LinearState | None = None,
    *,
    feature_map: str | FeatureMap = "elu",
    eps: float = 1e-6,
) -> tuple[torch.Tensor, LinearState]:
    """One step of the RNN form, eqs. 16–20: tensors (batch, heads, dim) → (out_t, state).

    ``state=None`` starts from s_0 = 0, z_0 = 0; the state's size does not grow with t. States are
    float32 for float16/bfloat16 inputs.
    """
    check_step(q_t, k_t, v_t)
    check_eps(eps)
    phi = get_feature_map(feature_map)
    if state is not None:
        check_state(state, ("s", "z"), q_t, v_t, "state", phi.output_dim(q_t.shape[-1]))
    dtype = compute_dtype(q_t.dtype)
    phi_q, phi_k, v = phi.queries(q_t).to(dtype), phi.keys(k_t).to(dtype), v_t.to(dtype)
    if state is None:
        s = phi_k.new_zeros(*phi_k.shape, v.shape[-1])
        z = phi_k.new_zeros(phi_k.shape)
    else:
        s, z = state
    s = s + phi_k[..., :, None] * v[..., None, :]  # eq. 18
    z = z + phi_k  # eq. 19
    out = normalise((phi_q[..., None, :] @ s).squeeze(-2), phi_q, z, eps)  # eq. 20 (inside f_l)
    return out.to(v_t.dtype), LinearState(s, z)
