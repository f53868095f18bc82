"""The causal product, chunked, with the constant-memory gradient of Katharopoulos et al. §3.3.1.

The numerator of causal linear attention (eq. 9) and of causal momentum attention
(Nguyen et al. eq. 13) is one operation, a *weighted causal product*

    out_i = Σ_{j ≤ i} u(i − j) (q_i · k_j) v_j,      u(x) = Σ_{m=0}^{x} βᵐ = (1 − β^{x+1}) / (1 − β),

with β = 0 giving u ≡ 1, the plain causal product S_i = Σ_{j≤i} φ(k_j)v_jᵀ of eq. 10.

State. After position t the product is summarised by two (dim × dim_v) matrices, the
heavy-ball states of eq. 12 (s, and d = −m):

    s_t = Σ_{j≤t} u(t − j) k_j v_jᵀ,       d_t = Σ_{j≤t} β^{t−j} k_j v_jᵀ,
    Σ_{j ≤ t} u(i − j) k_j v_jᵀ = s_t + β · u(i − t − 1) · d_t        for every later i > t,

which follows from u(a + r) = u(a) + β^{a+1} u(r − 1). Advancing a state over a block of L
positions is therefore s ← s + β·u(L−1)·d + Σ_a u(L−1−a) k_a v_aᵀ, d ← β^L·d + Σ_a β^{L−1−a} k_a v_aᵀ.
Every coefficient is positive, so unlike the split "γ/(1−β)·(S − βD)" nothing cancels:
float32 stays accurate at β = 0.999.

Forward (chunks of C positions). Inside a chunk the product is a small masked matrix
product; across chunks it needs the state at each chunk start. Those come from the chunk
totals through small (chunks × chunks) matrices of the same positive coefficients, inside a
*segment* of at most ``SEGMENT_CHUNKS`` chunks; segments are visited in order, each starting
from the state its predecessor ended with. (So the temporaries of one pass are the size of a
segment, not of the sequence.)

Backward (eqs. 13–15). The weights depend only on the lag i − j, so each gradient is again
a weighted causal product, forward in time for ∇q and backward in time for ∇k and ∇v:

    ∇q_i = Σ_{j≤i} u(i−j) (g_i·v_j) k_j,   ∇k_j = Σ_{i≥j} u(i−j) (v_j·g_i) q_i,   ∇v_j = Σ_{i≥j} u(i−j) (q_i·k_j) g_i.

∇q reuses the forward states Σ k vᵀ; ∇k and ∇v share the backward-in-time states Σ g qᵀ
(eqs. 14 and 15 are the same cumulative sum, transposed). Segments are visited last to first;
the gradient of a segment's starting state is the gradient of the state its predecessor ended with.
Derived in the book, chapter "Causal masking and the RNN form" (``sec-constant-memory-gradient``).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

DEFAULT_CHUNK_SIZE = 64
SEGMENT_CHUNKS = 16


class ProductState(NamedTuple):
    """(s_t, d_t) of the module docstring; ``d`` is None where β = 0 and nobody asked for it (it never
    reaches an output then)."""

    s: torch.Tensor
    d: torch.Tensor | None


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """Low-precision inputs accumulate every sum and state in float32 (float16 overflows at 65504)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def momentum_lag_weights(lag: torch.Tensor, beta: float) -> torch.Tensor:
    """u(x) = (1 − β^{x+1}) / (1 − β) = Σ_{m=0}^{x} βᵐ for integer lags x ≥ −1 (u(−1) = 0).

    Evaluated as −expm1((x+1) log β) / (1 − β), accurate for β near 1.
    """
    if beta == 0.0:
        return (lag >= 0).to(lag.dtype)
    return -torch.expm1((lag + 1) * math.log(beta)) / (1.0 - beta)


def decay_weights(lag: torch.Tensor, beta: float) -> torch.Tensor:
    """β^x for integer lags x ≥ 0, with 0⁰ = 1 (at β = 0 only the newest term survives)."""
    return (lag == 0).to(lag.dtype) if beta == 0.0 else torch.exp(lag * math.log(beta))


def _scalar_u(x: int, beta: float) -> float:
    return float(x + 1 > 0) if beta == 0.0 else (1.0 - beta ** (x + 1)) / (1.0 - beta)


def segments(n: int, chunk_size: int) -> list[slice]:
    """Consecutive slices of at most SEGMENT_CHUNKS chunks covering range(n)."""
    size = SEGMENT_CHUNKS * max(1, chunk_size)
    return [slice(a, min(a + size, n)) for a in range(0, n, size)]


class _Chunking:
    """Chunk geometry of one segment and the weights shared by the forward and backward passes."""

    def __init__(self, n: int, chunk_size: int, beta: float, dtype: torch.dtype, device: torch.device):
        self.n, self.beta = n, beta
        self.C = C = max(1, min(chunk_size, n))
        self.n_chunks = nc = -(-n // C)
        self.pad = nc * C - n
        pos = torch.arange(C, device=device, dtype=dtype)
        lag = pos[:, None] - pos[None, :]
        self.intra = torch.where(lag >= 0, momentum_lag_weights(lag.clamp(min=-1), beta), 0.0)  # u(a − b), b ≤ a
        self.from_start, self.to_end = pos, (C - 1) - pos
        # State at the start of chunk c from chunk c' < c (module docstring, with L = (c − c' − 1)·C):
        #   s ← σ_c' + β·u(L − 1)·δ_c',   d ← β^L·δ_c'.
        c = torch.arange(nc, device=device, dtype=dtype)
        gap = (c[:, None] - c[None, :] - 1) * C
        earlier = gap >= 0
        self.sum_matrix = earlier.to(dtype)
        self.decay_matrix = torch.where(earlier, decay_weights(gap.clamp(min=0), beta), 0.0)
        self.carry_matrix = torch.where(earlier, beta * momentum_lag_weights(gap.clamp(min=0) - 1, beta), 0.0)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, N, D) → (B, H, n_chunks, C, D), zero-padded at the end."""
        if self.pad:
            x = F.pad(x, (0, 0, 0, self.pad))
        return x.reshape(*x.shape[:2], self.n_chunks, self.C, x.shape[-1])

    def join(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(*x.shape[:2], self.n_chunks * self.C, x.shape[-1])[:, :, : self.n]

    def carry(self, reverse: bool) -> torch.Tensor:
        """β·u(distance to the chunk boundary the state sits at), per position: (C, 1)."""
        near = self.to_end if reverse else self.from_start
        return (self.beta * momentum_lag_weights(near, self.beta))[:, None]

    def states(self, x: torch.Tensor, y: torch.Tensor, reverse: bool, start: ProductState | None = None):
        """States of Σ u(lag) x yᵀ at each chunk's start (or, reverse in time, its end): (s, d), each
        (B, H, n_chunks, Dx, Dy); d is None when β = 0. ``start`` is the state before the segment."""
        xy = x.transpose(-1, -2)
        far = self.from_start if reverse else self.to_end  # distance to the boundary a chunk's total is taken at
        if self.beta == 0.0:
            sigma, delta = xy @ y, None
        else:
            sigma = (xy * momentum_lag_weights(far, self.beta)) @ y
            delta = (xy * decay_weights(far, self.beta)) @ y
        s = _chunk_matmul(self.sum_matrix, sigma, reverse)
        d = None
        if delta is not None:
            s = s + _chunk_matmul(self.carry_matrix, delta, reverse)
            d = _chunk_matmul(self.decay_matrix, delta, reverse)
        if start is not None:  # the state before the segment, carried to each chunk start
            chunk_start = torch.arange(self.n_chunks, device=x.device, dtype=x.dtype)[:, None, None] * self.C
            s = s + start.s[:, :, None]
            if start.d is not None and self.beta > 0.0:
                s = s + (self.beta * momentum_lag_weights(chunk_start - 1, self.beta)) * start.d[:, :, None]
                d = d + decay_weights(chunk_start, self.beta) * start.d[:, :, None]
        return s, d


def _chunk_matmul(matrix: torch.Tensor, x: torch.Tensor, reverse: bool) -> torch.Tensor:
    """Σ_c' matrix[c, c'] x_c' over the chunk axis of (B, H, n_chunks, Dx, Dy); ``reverse`` uses matrixᵀ."""
    B, H, nc, Dx, Dy = x.shape
    m = matrix.T if reverse else matrix
    return (m @ x.reshape(B, H, nc, Dx * Dy)).reshape(B, H, nc, Dx, Dy)


def advance(state: ProductState | None, k: torch.Tensor, v: torch.Tensor, beta: float, keep_d: bool) -> ProductState:
    """The state after the L positions of k (B, H, L, D), v (B, H, L, M), starting from ``state`` (module docstring)."""
    L = k.shape[2]
    to_end = torch.arange(L - 1, -1, -1, device=k.device, dtype=k.dtype)[:, None]
    kt = k.transpose(-1, -2)
    s = (kt * momentum_lag_weights(to_end, beta).T) @ v if beta > 0.0 else kt @ v
    d = (kt * decay_weights(to_end, beta).T) @ v if keep_d else None
    if state is not None:
        s = s + state.s
        if state.d is not None and beta > 0.0:
            s = s + (beta * _scalar_u(L - 1, beta)) * state.d
        if keep_d and state.d is not None:
            d = d + (beta**L) * state.d
    return ProductState(s, d)


def _forward(q, k, v, beta, chunk_size, state=None, final=False, keep_d=False):
    """One segment: out_i = Σ_{j≤i} u(i−j)(q_i·k_j) v_j + (what ``state`` carries), and the state after it."""
    ch = _Chunking(q.shape[2], chunk_size, beta, q.dtype, q.device)
    qc, kc, vc = ch.split(q), ch.split(k), ch.split(v)
    scores = qc @ kc.transpose(-1, -2)
    out = scores.mul_(ch.intra) @ vc
    del scores
    if ch.n_chunks > 1 or state is not None:
        s, d = ch.states(kc, vc, reverse=False, start=state)
        out += qc @ s
        if d is not None:
            out += ch.carry(reverse=False) * (qc @ d)
    out = ch.join(out)
    return out, (advance(state, k, v, beta, keep_d) if final else None)


def _backward(q, k, v, g, beta, chunk_size, needs, state=None, grad_final=None):
    """∇q, ∇k, ∇v of eqs. 13–15 on one segment, and the gradient of its starting ``state``.

    ``grad_final`` is the gradient of the state after the segment (from later segments, or from a
    caller that used the final state); it reaches key j through the weights u(n−1−j) and β^{n−1−j}.
    """
    n = q.shape[2]
    ch = _Chunking(n, chunk_size, beta, q.dtype, q.device)
    qc, kc, vc, gc = (ch.split(t) for t in (q, k, v, g))
    gv = (gc @ vc.transpose(-1, -2)).mul_(ch.intra)  # u(a−b)(g_a·v_b)
    dq = dk = dv = None
    if needs[0]:
        dq = gv @ kc
        if ch.n_chunks > 1 or state is not None:
            s, d = ch.states(kc, vc, reverse=False, start=state)  # Σ u k vᵀ, as in the forward pass
            dq += gc @ s.transpose(-1, -2)
            if d is not None:
                dq += ch.carry(reverse=False) * (gc @ d.transpose(-1, -2))
            del s, d
        dq = ch.join(dq)
    if needs[1] or needs[2]:
        if ch.n_chunks > 1:
            s, d = ch.states(gc, qc, reverse=True)  # Σ_{i later} u g_i q_iᵀ: shared by eqs. 14 and 15
        if needs[1]:
            dk = gv.transpose(-1, -2) @ qc
            if ch.n_chunks > 1:
                dk += vc @ s
                if d is not None:
                    dk += ch.carry(reverse=True) * (vc @ d)
            dk = ch.join(dk)
        del gv
        if needs[2]:
            qk = (qc @ kc.transpose(-1, -2)).mul_(ch.intra)
            dv = qk.transpose(-1, -2) @ gc
            del qk
            if ch.n_chunks > 1:
                dv += kc @ s.transpose(-1, -2)
                if d is not None:
                    dv += ch.carry(reverse=True) * (kc @ d.transpose(-1, -2))
            dv = ch.join(dv)
    if grad_final is not None:
        _add_final_state_gradient(dk, dv, k, v, beta, grad_final)
    grad_state = _initial_state_gradient(q, g, beta, grad_final) if needs[3] else None
    return dq, dk, dv, grad_state


def _add_final_state_gradient(dk, dv, k, v, beta, grad_final: ProductState) -> None:
    """Key j enters the final state as u(n−1−j)·k_j v_jᵀ in s and β^{n−1−j}·k_j v_jᵀ in d."""
    to_end = torch.arange(k.shape[2] - 1, -1, -1, device=k.device, dtype=k.dtype)[:, None]
    terms = [(momentum_lag_weights(to_end, beta), grad_final.s)]
    if grad_final.d is not None:
        terms.append((decay_weights(to_end, beta), grad_final.d))
    for w, G in terms:
        if dk is not None:
            dk.add_(w * (v @ G.transpose(-1, -2)))
        if dv is not None:
            dv.add_(w * (k @ G))


def _initial_state_gradient(q, g, beta, grad_final: ProductState | None) -> ProductState:
    """Output i reads the starting state as s + β·u(i)·d; the final state holds it as s + β·u(n−1)·d, β^n·d."""
    n = q.shape[2]
    qt = q.transpose(-1, -2)
    gs = qt @ g
    pos = torch.arange(n, device=q.device, dtype=q.dtype)[None, :]
    gd = (qt * (beta * momentum_lag_weights(pos, beta))) @ g if beta > 0.0 else torch.zeros_like(gs)
    if grad_final is not None:
        gs = gs + grad_final.s
        gd = gd + (beta * _scalar_u(n - 1, beta)) * grad_final.s
        if grad_final.d is not None:
            gd = gd + (beta**n) * grad_final.d
    return ProductState(gs, gd)


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


def _forward_segments(q, k, v, beta, chunk_size, state, final):
    """Segments in order; returns the output, the state at each segment start, and the final state."""
    out = torch.empty(*q.shape[:3], v.shape[-1], dtype=q.dtype, device=q.device)
    starts, parts = [], segments(q.shape[2], chunk_size)
    keep_d = beta > 0.0 or (state is not None and state.d is not None)
    for i, sl in enumerate(parts):
        starts.append(state)
        last = i == len(parts) - 1
        out[:, :, sl], state = _forward(q[:, :, sl], k[:, :, sl], v[:, :, sl], beta, chunk_size, state,
                                        final=final or not last, keep_d=keep_d)
    return out, starts, state


class CausalProduct(torch.autograd.Function):
    """Weighted causal product with the constant-memory backward of eqs. 13–15.

    Saved for backward: q, k, v (and the starting state, if any), plus the state at each segment
    start — one (dim × dim_v) matrix pair per SEGMENT_CHUNKS·chunk_size positions, none for a
    single segment. No per-position or per-chunk state is kept.
    """

    @staticmethod
    def forward(ctx, q, k, v, beta, chunk_size, s0=None, d0=None, final=False):  # noqa: D102 (documented above)
        dtype = compute_dtype(q.dtype)
        state = None if s0 is None else ProductState(s0, d0)
        out, starts, last = _forward_segments(q.to(dtype), k.to(dtype), v.to(dtype), beta, chunk_size, state, final)
        ctx.save_for_backward(q, k, v)
        ctx.beta, ctx.chunk_size, ctx.starts, ctx.has_d = beta, chunk_size, starts, d0 is not None
        if not final:
            return out.to(v.dtype)
        ctx.final_has_d = last.d is not None
        return out.to(v.dtype), last.s, last.d

    @staticmethod
    @once_differentiable
    def backward(ctx, grad, *grad_final):  # noqa: D102
        q, k, v = ctx.saved_tensors
        dtype = compute_dtype(q.dtype)
        q, k, v, grad = (t.to(dtype) for t in (q, k, v, grad))
        needs = (*ctx.needs_input_grad, False, False, False)[:8]  # s0, d0, final may have been left out
        carry = None
        if grad_final and grad_final[0] is not None:
            carry = ProductState(grad_final[0], grad_final[1] if ctx.final_has_d else None)
        dq, dk, dv = (torch.empty_like(t) if need else None for t, need in zip((q, k, v), needs[:3]))
        parts = segments(q.shape[2], ctx.chunk_size)
        for i in range(len(parts) - 1, -1, -1):
            sl, start = parts[i], ctx.starts[i]
            need_start = i > 0 or any(needs[5:7])
            dqs, dks, dvs, carry = _backward(q[:, :, sl], k[:, :, sl], v[:, :, sl], grad[:, :, sl], ctx.beta,
                                             ctx.chunk_size, (*needs[:3], need_start), start, carry)
            for full, part in ((dq, dqs), (dk, dks), (dv, dvs)):
                if full is not None:
                    full[:, :, sl] = part
        cast = lambda t, like: None if t is None else t.to(like.dtype)  # noqa: E731
        ds0 = carry.s if needs[5] else None
        dd0 = carry.d if (needs[6] and ctx.has_d) else None
        grads = (cast(dq, q), cast(dk, k), cast(dv, v), None, None, ds0, dd0, None)
        return grads[: len(ctx.needs_input_grad)]


def causal_product(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    beta: float = 0.0,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    initial_state: ProductState | tuple | None = None,
    output_final_state: bool = False,
):
    """out_i = Σ_{j≤i} u(i−j)(q_i·k_j) v_j with u(x) = Σ_{m≤x} βᵐ; β = 0 is the plain causal product.

    ``q, k`` are already feature-mapped, shapes (batch, heads, length, dim); ``v`` is
    (batch, heads, length, dim_v). O(length) memory in forward and backward.
    ``initial_state`` = (s, d) of the module docstring, (batch, heads, dim, dim_v) each (d may be
    None), continues an earlier product; ``output_final_state=True`` returns ``(out, (s, d))``.
    States are float32 for float16/bfloat16 inputs.
    """
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be in [0, 1), got {beta}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    s0 = d0 = None
    if initial_state is not None:
        s0, d0 = initial_state
        want = (*q.shape[:2], q.shape[-1], v.shape[-1])
        for name, t in (("s", s0), ("d", d0)):
            if t is not None and (not isinstance(t, torch.Tensor) or tuple(t.shape) != want):
                raise ValueError(f"initial_state.{name} must be a tensor of shape {want}")
    final = bool(output_final_state)
    result = CausalProduct.apply(q, k, v, float(beta), chunk_size, s0, d0, final)
    if final:
        out, s, d = result
        return out, ProductState(s, d)
    return result
