"""The causal product, chunked, with the constant-memory gradient of Katharopoulos et al. §3.3.1.

The numerator of causal linear attention (eq. 9) and of causal momentum attention
(Nguyen et al. eq. 13) is one operation, a *weighted causal product*

    out_i = Σ_{j ≤ i} u(i − j) (q_i · k_j) v_j,      u(x) = Σ_{m=0}^{x} βᵐ = (1 − β^{x+1}) / (1 − β),

with β = 0 giving u ≡ 1, the plain causal product S_i = Σ_{j≤i} φ(k_j)v_jᵀ of eq. 10.

Forward (chunks of C positions). Inside a chunk the product is a small masked matrix
product. Across chunks it needs the two recurrent states of eq. 12 at each chunk start —
s (the momentum-weighted sum) and d = Σ β^{t−j} k_j v_jᵀ (the decayed sum, d = −m):

    Σ_{j ≤ t} u(i − j) k_j v_jᵀ = s_t + β · u(i − t − 1) · d_t        for i > t,

which follows from u(a + r) = u(a) + β^{a+1} u(r − 1). Every coefficient is positive, so
unlike the split "γ/(1−β)·(S − βD)" nothing cancels: float32 stays accurate at β = 0.999.

Backward (eqs. 13–15). The weights depend only on the lag i − j, so each gradient is again
a weighted causal product, run forward in time for ∇q and backward in time (on the
reversed sequence) for ∇k and ∇v:

    ∇q_i = Σ_{j≤i} u(i−j) (g_i·v_j) k_j,   ∇k_j = Σ_{i≥j} u(i−j) (v_j·g_i) q_i,   ∇v_j = Σ_{i≥j} u(i−j) (q_i·k_j) g_i.

Only q, k, v are saved for backward: no (length × dim × dim) tensor of states.
Derived in the book, chapter "Causal masking and the RNN form" (``sec-constant-memory-gradient``).
"""
from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable

DEFAULT_CHUNK_SIZE = 64


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    # Low-precision inputs accumulate their states in float32.
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def momentum_lag_weights(lag: torch.Tensor, beta: float) -> torch.Tensor:
    """u(x) = (1 − β^{x+1}) / (1 − β) = Σ_{m=0}^{x} βᵐ for integer lags x ≥ −1 (u(−1) = 0).

    Evaluated as −expm1((x+1) log β) / (1 − β), accurate for β near 1.
    """
    if beta == 0.0:
        return (lag >= 0).to(lag.dtype)
    return -torch.expm1((lag + 1) * math.log(beta)) / (1.0 - beta)


def _chunked_causal_product(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: float, chunk_size: int
) -> torch.Tensor:
    """Forward pass of the weighted causal product; shapes (B, H, N, D), (B, H, N, D), (B, H, N, M)."""
    out_dtype = v.dtype
    dtype = _compute_dtype(q.dtype)
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    B, H, N, D = q.shape
    M = v.shape[-1]
    C = max(1, min(chunk_size, N))
    n_chunks = -(-N // C)
    pad = n_chunks * C - N
    if pad:
        # Zero keys at the end add nothing to earlier positions (causality).
        q, k, v = (torch.nn.functional.pad(t, (0, 0, 0, pad)) for t in (q, k, v))
    q = q.reshape(B, H, n_chunks, C, D)
    k = k.reshape(B, H, n_chunks, C, D)
    v = v.reshape(B, H, n_chunks, C, M)

    pos = torch.arange(C, device=q.device, dtype=dtype)
    lag = pos[:, None] - pos[None, :]
    causal = lag >= 0
    intra_weights = torch.where(causal, momentum_lag_weights(lag, beta), torch.zeros((), dtype=dtype, device=q.device))
    out = ((q @ k.transpose(-1, -2)) * intra_weights) @ v

    if n_chunks == 1:
        return out.reshape(B, H, C, M)[:, :, :N].to(out_dtype)

    if beta == 0.0:
        # s at each chunk start is the exclusive prefix sum of the chunks' k_jᵀv_j.
        kv = k.transpose(-1, -2) @ v
        s_start = torch.cumsum(kv, dim=2) - kv
        out = out + q @ s_start
    else:
        to_end = (C - 1) - pos  # distance of each position to the end of its chunk
        sigma = (k * momentum_lag_weights(to_end, beta)[:, None]).transpose(-1, -2) @ v
        delta = (k * (beta ** to_end)[:, None]).transpose(-1, -2) @ v
        # Chunk c' < c reaches the start of chunk c across a gap of G = C(c − c' − 1) positions.
        c = torch.arange(n_chunks, device=q.device, dtype=dtype)
        gap = C * (c[:, None] - c[None, :] - 1)
        earlier = gap >= 0
        zero = torch.zeros((), dtype=dtype, device=q.device)
        gap = gap.clamp(min=0)
        ones = torch.where(earlier, torch.ones((), dtype=dtype, device=q.device), zero)
        to_s = torch.where(earlier, beta * momentum_lag_weights(gap - 1, beta), zero)
        to_d = torch.where(earlier, torch.pow(torch.tensor(beta, dtype=dtype, device=q.device), gap), zero)
        s_start = torch.einsum("xy,bhydm->bhxdm", ones, sigma) + torch.einsum("xy,bhydm->bhxdm", to_s, delta)
        d_start = torch.einsum("xy,bhydm->bhxdm", to_d, delta)
        carry = beta * momentum_lag_weights(pos, beta)  # β·u(a) for local position a
        out = out + q @ s_start + carry[:, None] * (q @ d_start)

    return out.reshape(B, H, n_chunks * C, M)[:, :, :N].to(out_dtype)


class CausalProduct(torch.autograd.Function):
    """Weighted causal product with the constant-memory backward of eqs. 13–15."""

    @staticmethod
    def forward(ctx, q, k, v, beta, chunk_size):  # noqa: D102 (documented above)
        ctx.save_for_backward(q, k, v)
        ctx.beta = beta
        ctx.chunk_size = chunk_size
        return _chunked_causal_product(q, k, v, beta, chunk_size)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):  # noqa: D102
        q, k, v = ctx.saved_tensors
        beta, C = ctx.beta, ctx.chunk_size

        def rev(t):
            return t.flip(2)

        grad = grad.contiguous()
        dq = dk = dv = None
        if ctx.needs_input_grad[0]:
            dq = _chunked_causal_product(grad, v, k, beta, C)  # eq. 13
        if ctx.needs_input_grad[1]:
            dk = rev(_chunked_causal_product(rev(v), rev(grad), rev(q), beta, C))  # eq. 14
        if ctx.needs_input_grad[2]:
            dv = rev(_chunked_causal_product(rev(k), rev(q), rev(grad), beta, C))  # eq. 15
        return dq, dk, dv, None, None


def causal_product(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    beta: float = 0.0,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> torch.Tensor:
    """out_i = Σ_{j≤i} u(i−j)(q_i·k_j) v_j with u(x) = Σ_{m≤x} βᵐ; β = 0 is the plain causal product.

    ``q, k`` are already feature-mapped, shapes (batch, heads, length, dim); ``v`` is
    (batch, heads, length, dim_v). O(length) memory in forward and backward.
    """
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be in [0, 1), got {beta}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        return CausalProduct.apply(q, k, v, float(beta), chunk_size)
    return _chunked_causal_product(q, k, v, float(beta), chunk_size)
