"""The readable oracle of the causal op: its formula written out as one quadratic sum, no chunks, no recurrence.

    out_i = γ · [Σ_{j≤i} u(i−j) (φ(q_i)·φ(k_j)) v_j + φ(q_i)ᵀ(s_0 + β·u(i)·d_0)] / (φ(q_i)·z_i + ε),
    z_i = z_0 + Σ_{j≤i} φ(k_j),      u(x) = (1 − β^{x+1}) / (1 − β),

Katharopoulos et al. eq. 9 at β = 0, γ = 1 and Nguyen et al. eq. 13 at β > 0 (the lag weights u of the module
docstring of :mod:`lra_kit.attention.causal.op`). Padded keys (``key_padding_mask`` True) have φ(k_j) = 0. Both paths of
the op, the chunked PyTorch code and the Triton kernels, are tested against it (``tests/test_causal_oracle.py``).
It keeps the (N × N) weight matrix: for tests only.
"""
from __future__ import annotations

import torch

from lra_kit.attention.causal.state import CausalState
from lra_kit.attention.lag_weights import momentum_lag_weights


def naive_causal_op(q, k, v, *, phi=None, beta=0.0, gamma=1.0, eps=1e-6, key_padding_mask=None,
                    initial_state: CausalState | None = None):
    """The module docstring's formula, in the inputs' dtype. ``phi=None``: q, k are already mapped; ``eps=None``:
    the bare numerator (no normaliser, no γ, no z). Returns ``(out, CausalState)``: the state after the last
    position, s_N = s_0 + β·u(N−1)·d_0 + Σ_j u(N−1−j) φ(k_j)v_jᵀ, d_N = β^N·d_0 + Σ_j β^{N−1−j} φ(k_j)v_jᵀ,
    z_N = z_0 + Σ_j φ(k_j)."""
    fq, fk = (q, k) if phi is None else (phi.queries(q), phi.keys(k))
    if key_padding_mask is not None:
        fk = fk * (~key_padding_mask)[:, None, :, None].to(fk.dtype)
    n = q.shape[2]
    pos = torch.arange(n, device=q.device)
    lag = pos[:, None] - pos[None, :]  # i − j
    u = torch.where(lag >= 0, momentum_lag_weights(lag.clamp(min=0).to(torch.float64), beta), 0.0).to(q.dtype)
    out = (u * (fq @ fk.transpose(-1, -2))) @ v
    z = torch.cumsum(fk, dim=2)
    s_end = torch.einsum("j,bhjd,bhjm->bhdm", u[-1], fk, v)
    d_end = torch.einsum("j,bhjd,bhjm->bhdm", (beta ** (n - 1 - pos).to(torch.float64)).to(q.dtype), fk, v)
    if initial_state is not None:
        s0, d0, z0 = initial_state
        read = s0[:, :, None] if d0 is None else (
            s0[:, :, None] + beta * momentum_lag_weights(pos.to(torch.float64), beta).to(q.dtype)[:, None, None]
            * d0[:, :, None])
        out = out + (fq[..., None, :] @ read).squeeze(-2)
        if d0 is not None:
            s_end = s_end + beta * float(momentum_lag_weights(torch.tensor(n - 1.0, dtype=torch.float64), beta)) * d0
            d_end = d_end + beta**n * d0
        s_end = s_end + s0
        if z0 is not None:
            z = z + z0[:, :, None]
    if eps is not None:
        out = gamma * out / ((fq * z).sum(-1, keepdim=True) + eps)
    return out, CausalState(s_end, d_end, None if eps is None else z[:, :, -1])
