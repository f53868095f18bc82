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
a weighted causal product, forward in time for ∇q and backward in time for ∇k and ∇v:

    ∇q_i = Σ_{j≤i} u(i−j) (g_i·v_j) k_j,   ∇k_j = Σ_{i≥j} u(i−j) (v_j·g_i) q_i,   ∇v_j = Σ_{i≥j} u(i−j) (q_i·k_j) g_i.

∇q reuses the forward states Σ k vᵀ; ∇k and ∇v share the backward-in-time states Σ g qᵀ
(eqs. 14 and 15 are the same cumulative sum, transposed). Only q, k, v are saved for
backward: no (length × dim × dim) tensor of states.
Derived in the book, chapter "Causal masking and the RNN form" (``sec-constant-memory-gradient``).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
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


class _Chunking:
    """Chunk geometry and the lag weights shared by the forward and backward passes."""

    def __init__(self, n: int, chunk_size: int, beta: float, dtype: torch.dtype, device: torch.device):
        self.n, self.beta = n, beta
        self.C = C = max(1, min(chunk_size, n))
        self.n_chunks = -(-n // C)
        self.pad = self.n_chunks * C - n
        pos = torch.arange(C, device=device, dtype=dtype)
        lag = pos[:, None] - pos[None, :]
        zero = torch.zeros((), dtype=dtype, device=device)
        self.intra = torch.where(lag >= 0, momentum_lag_weights(lag, beta), zero)  # W_ab = u(a − b), b ≤ a
        if beta > 0.0 and self.n_chunks > 1:
            self.from_start = pos  # distance of a position from the start of its chunk
            self.to_end = (C - 1) - pos  # ... and to its end

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, N, D) → (B, H, n_chunks, C, D), zero-padded at the end."""
        if self.pad:
            x = F.pad(x, (0, 0, 0, self.pad))
        return x.reshape(*x.shape[:2], self.n_chunks, self.C, x.shape[-1])

    def join(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(*x.shape[:2], self.n_chunks * self.C, x.shape[-1])[:, :, : self.n]

    def states(self, x: torch.Tensor, y: torch.Tensor, reverse: bool):
        """Inter-chunk states of Σ u(lag) x yᵀ, at each chunk's start (forward) or end (reverse in time).

        Returns (s, d, carry): the contribution to local position a is s + carry[a]·d
        (carry = β·u(distance to the chunk boundary), d = None when β = 0).
        """
        xy = x.transpose(-1, -2)
        if self.beta == 0.0:
            total = xy @ y  # (B, H, n_chunks, Dx, Dy)
            inclusive = torch.cumsum(total, 2)
            if reverse:  # Σ over later chunks = everything − Σ up to and including this one
                return inclusive[:, :, -1:] - inclusive, None, None
            return inclusive.sub_(total), None, None
        beta, C = self.beta, self.C
        # Each chunk's own contribution, seen from the boundary it shares with the chunks it reaches.
        far = self.from_start if reverse else self.to_end
        sigma = (xy * momentum_lag_weights(far, beta)) @ y
        delta = (xy * beta**far) @ y
        # The heavy-ball recurrence of eq. 12, one chunk at a time (all coefficients positive):
        #   s ← s + σ + β·u(C−1)·d,    d ← β^C·d + δ.
        s, d = torch.empty_like(sigma), torch.empty_like(delta)
        first = self.n_chunks - 1 if reverse else 0
        s[:, :, first].zero_()
        d[:, :, first].zero_()
        step_s, step_d = beta * ((1.0 - beta**C) / (1.0 - beta)), beta**C
        order = range(self.n_chunks - 2, -1, -1) if reverse else range(1, self.n_chunks)
        for c in order:
            prev = c + 1 if reverse else c - 1
            torch.add(s[:, :, prev], sigma[:, :, prev], out=s[:, :, c])
            s[:, :, c].add_(d[:, :, prev], alpha=step_s)
            torch.add(delta[:, :, prev], d[:, :, prev], alpha=step_d, out=d[:, :, c])
        near = self.to_end if reverse else self.from_start
        carry = (beta * momentum_lag_weights(near, beta))[:, None]
        return s, d, carry


def _forward(q, k, v, beta, chunk_size):
    """out_i = Σ_{j≤i} u(i−j)(q_i·k_j) v_j for (B, H, N, D), (B, H, N, D), (B, H, N, M)."""
    out_dtype, dtype = v.dtype, _compute_dtype(q.dtype)
    ch = _Chunking(q.shape[2], chunk_size, beta, dtype, q.device)
    q, k, v = (ch.split(t.to(dtype)) for t in (q, k, v))
    scores = q @ k.transpose(-1, -2)
    out = scores.mul_(ch.intra) @ v
    if ch.n_chunks > 1:
        s, d, carry = ch.states(k, v, reverse=False)
        out += q @ s
        if d is not None:
            out += carry * (q @ d)
    return ch.join(out).to(out_dtype)


def _backward(q, k, v, g, beta, chunk_size, needs):
    """∇q, ∇k, ∇v of eqs. 13–15, sharing the intra-chunk score matrices and the inter-chunk states."""
    dtype = _compute_dtype(q.dtype)
    ch = _Chunking(q.shape[2], chunk_size, beta, dtype, q.device)
    q, k, v, g = (ch.split(t.to(dtype)) for t in (q, k, v, g))
    gv = (g @ v.transpose(-1, -2)).mul_(ch.intra)  # u(a−b)(g_a·v_b)
    dq = dk = dv = None
    if needs[0]:
        dq = gv @ k
        if ch.n_chunks > 1:
            s, d, carry = ch.states(k, v, reverse=False)  # Σ u k vᵀ, as in the forward pass
            dq += g @ s.transpose(-1, -2)
            if d is not None:
                dq += carry * (g @ d.transpose(-1, -2))
    if needs[1] or needs[2]:
        if ch.n_chunks > 1:
            s, d, carry = ch.states(g, q, reverse=True)  # Σ_{i later} u g_i q_iᵀ: shared by eqs. 14 and 15
        if needs[1]:
            dk = gv.transpose(-1, -2) @ q
            if ch.n_chunks > 1:
                dk += v @ s
                if d is not None:
                    dk += carry * (v @ d)
        if needs[2]:
            qk = (q @ k.transpose(-1, -2)).mul_(ch.intra)
            dv = qk.transpose(-1, -2) @ g
            if ch.n_chunks > 1:
                dv += k @ s.transpose(-1, -2)
                if d is not None:
                    dv += carry * (k @ d.transpose(-1, -2))
    return tuple(None if t is None else ch.join(t) for t in (dq, dk, dv))


def prefix_sum(x: torch.Tensor, chunk_size: int = DEFAULT_CHUNK_SIZE) -> torch.Tensor:
    """Z_i = Σ_{j≤i} x_j along the length of a (batch, heads, length, dim) tensor (Katharopoulos eq. 11).

    The same value as ``torch.cumsum(x, dim=2)``, computed as a lower-triangular matrix product
    inside chunks plus the chunks' running totals: on a CPU, cumsum along a dimension that is
    not the last one is several times slower.
    """
    ch = _Chunking(x.shape[2], chunk_size, 0.0, x.dtype, x.device)
    local = ch.intra @ ch.split(x)  # intra = the lower-triangular ones when β = 0
    if ch.n_chunks > 1:
        totals = local[:, :, :, -1:]
        local = local + (torch.cumsum(totals, 2) - totals)
    return ch.join(local)


class CausalProduct(torch.autograd.Function):
    """Weighted causal product with the constant-memory backward of eqs. 13–15 (saves only q, k, v)."""

    @staticmethod
    def forward(ctx, q, k, v, beta, chunk_size):  # noqa: D102 (documented above)
        ctx.save_for_backward(q, k, v)
        ctx.beta, ctx.chunk_size = beta, chunk_size
        return _forward(q, k, v, beta, chunk_size)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):  # noqa: D102
        q, k, v = ctx.saved_tensors
        dq, dk, dv = _backward(q, k, v, grad, ctx.beta, ctx.chunk_size, ctx.needs_input_grad[:3])
        cast = lambda t, like: None if t is None else t.to(like.dtype)  # noqa: E731
        return cast(dq, q), cast(dk, k), cast(dv, v), None, None


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
    return _forward(q, k, v, float(beta), chunk_size)
