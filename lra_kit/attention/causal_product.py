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


def segments(n: int, chunk_size: int) -> list[slice]:
    """Consecutive slices covering range(n): SEGMENT_CHUNKS whole chunks each, and a last one shorter than a
    chunk for the remainder — so that no segment ends inside a padded chunk."""
    C = max(1, chunk_size)
    parts = []
    for a in range(0, n, SEGMENT_CHUNKS * C):
        b = min(a + SEGMENT_CHUNKS * C, n)
        whole = a + (b - a) // C * C
        parts += [slice(a, whole)] if whole > a else []
        parts += [slice(whole, b)] if b > whole else []
    return parts


class _Chunking:
    """Chunk geometry of one segment and the weights shared by the forward and backward passes."""

    def __init__(self, n: int, chunk_size: int, beta: float, dtype: torch.dtype, device: torch.device):
        self.n, self.beta, self.dtype, self.device = n, beta, dtype, device
        self.C = C = max(1, min(chunk_size, n))
        self.n_chunks = -(-n // C)
        self.pad = self.n_chunks * C - n
        pos = torch.arange(C, device=device, dtype=dtype)
        lag = pos[:, None] - pos[None, :]
        self.intra = torch.where(lag >= 0, momentum_lag_weights(lag.clamp(min=-1), beta), 0.0)  # u(a − b), b ≤ a
        self.from_start, self.to_end = pos[:, None], (C - 1) - pos[:, None]  # (C, 1) columns

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, N, D) → (B, H, n_chunks, C, D), zero-padded at the end."""
        if self.pad:
            x = F.pad(x, (0, 0, 0, self.pad))
        return x.reshape(*x.shape[:2], self.n_chunks, self.C, x.shape[-1])

    def join(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(*x.shape[:2], self.n_chunks * self.C, x.shape[-1])[:, :, : self.n]

    def u(self, lag: torch.Tensor) -> torch.Tensor:
        return momentum_lag_weights(lag, self.beta)

    def decay(self, lag: torch.Tensor) -> torch.Tensor:
        return decay_weights(lag, self.beta)

    def forward_states(self, k: torch.Tensor, v: torch.Tensor, start: ProductState | None):
        """(s, d) of Σ u(lag) k vᵀ at the start of chunks 0 … n_chunks (the last = after the segment), each
        (B, H, n_chunks + 1, D, M); d is None when β = 0. ``start`` is the state before the segment."""
        beta, C, nc, M = self.beta, self.C, self.n_chunks, v.shape[-1]
        kt = k.transpose(-1, -2)
        # Chunk totals seen from the chunk's end: σ = Σ_a u(C−1−a) k_a v_aᵀ, δ = Σ_a β^{C−1−a} k_a v_aᵀ.
        if beta == 0.0:
            sigma, delta = kt @ v, None
        else:
            sigma, delta = (kt @ torch.cat([v * self.u(self.to_end), v * self.decay(self.to_end)], -1)).split(M, -1)
        # From chunk c' to the start of chunk r, L = (r − c' − 1)·C positions later: s ← σ + β·u(L−1)·δ, d ← β^L·δ.
        r = torch.arange(nc + 1, device=self.device, dtype=self.dtype)[:, None]
        gap = (r - torch.arange(nc, device=self.device, dtype=self.dtype) - 1) * C
        earlier = gap >= 0
        s = _chunk_matmul(earlier.to(self.dtype), sigma)
        d = None
        if delta is not None:
            s = s + _chunk_matmul(torch.where(earlier, beta * self.u(gap.clamp(min=0) - 1), 0.0), delta)
            d = _chunk_matmul(torch.where(earlier, self.decay(gap.clamp(min=0)), 0.0), delta)
        if start is not None:  # the state before the segment, carried r·C positions on
            at = r[:, :, None] * C
            s = s + start.s[:, :, None]
            if start.d is not None and beta > 0.0:
                s = s + (beta * self.u(at - 1)) * start.d[:, :, None]
                d = d + self.decay(at) * start.d[:, :, None]
        return s, d

    def reverse_states(self, g: torch.Tensor, q: torch.Tensor, terminal: ProductState | None):
        """(A, Y) of Σ_{i later} u(i − j) g_i q_iᵀ at the end of chunks 0 … n_chunks − 1 and, last, before the
        segment, each (B, H, n_chunks + 1, M, D): position j, b places before a chunk's end, receives
        u(b)·A + β^b·Y (u(b + r) = u(b) + β^{b+1}·u(r − 1)). ``terminal`` is the gradient of the state after
        the segment, which enters key j as u(n−1−j)·Gs + β^{n−1−j}·Gd."""
        beta, C, nc, D = self.beta, self.C, self.n_chunks, q.shape[-1]
        gt = g.transpose(-1, -2)
        # Chunk totals seen from the chunk's start: T = Σ_a g_a q_aᵀ, σ' = Σ_a u(a)·…, δ' = Σ_a β^a·….
        if beta == 0.0:
            total, sigma, delta = gt @ q, None, None
        else:
            both = torch.cat([q, q * self.u(self.from_start), q * self.decay(self.from_start)], -1)
            total, sigma, delta = (gt @ both).split(D, -1)
        r = torch.arange(nc + 1, device=self.device, dtype=self.dtype)
        r = torch.where(r == nc, -1.0, r)[:, None]  # the last row: a virtual chunk −1, ending before the segment
        gap = (torch.arange(nc, device=self.device, dtype=self.dtype) - r - 1) * C
        later = gap >= 0
        A = _chunk_matmul(later.to(self.dtype), total)
        Y = None
        if beta > 0.0:
            Y = beta * (_chunk_matmul(later.to(self.dtype), sigma)
                        + _chunk_matmul(torch.where(later, beta * self.u(gap.clamp(min=0) - 1), 0.0), delta))
        if terminal is not None:
            to_end = ((nc - 1 - r) * C)[:, :, None]  # from each row's chunk end to the segment's last position
            A = A + terminal.s.transpose(-1, -2)[:, :, None]
            if beta > 0.0:
                Y = Y + (beta * self.u(to_end - 1)) * terminal.s.transpose(-1, -2)[:, :, None]
            if terminal.d is not None:
                Gd = self.decay(to_end) * terminal.d.transpose(-1, -2)[:, :, None]
                Y = Gd if Y is None else Y + Gd
        return A, Y


def _chunk_matmul(matrix: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Σ_c' matrix[r, c'] x_c' over the chunk axis of x (B, H, n_chunks, Dx, Dy) → (B, H, rows, Dx, Dy)."""
    B, H, nc, Dx, Dy = x.shape
    return (matrix @ x.reshape(B, H, nc, Dx * Dy)).reshape(B, H, matrix.shape[0], Dx, Dy)


def _forward(q, k, v, beta, chunk_size, state=None, keep_d=False):
    """One segment (length a multiple of its chunk size): out_i = Σ_{j≤i} u(i−j)(q_i·k_j) v_j + what ``state``
    carries, and the state after the segment (its d also at β = 0 if ``keep_d``)."""
    ch = _Chunking(q.shape[2], chunk_size, beta, q.dtype, q.device)
    qc, kc, vc = ch.split(q), ch.split(k), ch.split(v)
    out = (qc @ kc.transpose(-1, -2)).mul_(ch.intra) @ vc
    s, d = ch.forward_states(kc, vc, state)
    out += qc @ s[:, :, :-1]
    if d is not None:  # a position a places into its chunk reads the chunk-start state as s + β·u(a)·d
        out += (beta * ch.u(ch.from_start)) * (qc @ d[:, :, :-1])
    final = ProductState(s[:, :, -1], None if d is None else d[:, :, -1])
    if keep_d and d is None:  # β = 0: d is the newest k vᵀ alone
        final = ProductState(final.s, k[:, :, -1, :, None] * v[:, :, -1, None, :])
    return ch.join(out), final


def _backward(q, k, v, g, beta, chunk_size, needs, state=None, grad_final=None):
    """∇q, ∇k, ∇v of eqs. 13–15 on one segment, and the gradient of its starting ``state``.

    ``grad_final`` is the gradient of the state after the segment (from later segments, or from a
    caller that used the final state).
    """
    ch = _Chunking(q.shape[2], chunk_size, beta, q.dtype, q.device)
    qc, kc, vc, gc = (ch.split(t) for t in (q, k, v, g))
    gv = (gc @ vc.transpose(-1, -2)).mul_(ch.intra)  # u(a−b)(g_a·v_b)
    dq = dk = dv = None
    if needs[0]:
        s, d = ch.forward_states(kc, vc, state)  # Σ u k vᵀ, as in the forward pass
        dq = gv @ kc + gc @ s[:, :, :-1].transpose(-1, -2)
        if d is not None:
            dq += (beta * ch.u(ch.from_start)) * (gc @ d[:, :, :-1].transpose(-1, -2))
        del s, d
    A, Y = ch.reverse_states(gc, qc, grad_final)  # Σ_{i later} u g_i q_iᵀ: shared by eqs. 14 and 15
    u_b, decay_b = ch.u(ch.to_end), ch.decay(ch.to_end)
    if needs[1]:
        dk = gv.transpose(-1, -2) @ qc + u_b * (vc @ A[:, :, :-1])
        if Y is not None:
            dk += decay_b * (vc @ Y[:, :, :-1])
    del gv
    if needs[2]:
        dv = (qc @ kc.transpose(-1, -2)).mul_(ch.intra).transpose(-1, -2) @ gc
        dv += u_b * (kc @ A[:, :, :-1].transpose(-1, -2))
        if Y is not None:
            dv += decay_b * (kc @ Y[:, :, :-1].transpose(-1, -2))
    start = A[:, :, -1].transpose(-1, -2)
    grad_state = ProductState(start, torch.zeros_like(start) if Y is None else Y[:, :, -1].transpose(-1, -2))
    return (*(None if t is None else ch.join(t) for t in (dq, dk, dv)), grad_state if needs[3] else None)


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


def _forward_segments(q, k, v, beta, chunk_size, state):
    """Segments in order; returns the output, the state at each segment start, and the final state."""
    out = torch.empty(*q.shape[:3], v.shape[-1], dtype=q.dtype, device=q.device)
    starts, parts = [], segments(q.shape[2], chunk_size)
    keep_d = beta > 0.0 or (state is not None and state.d is not None)
    for sl in parts:
        starts.append(state)
        out[:, :, sl], state = _forward(q[:, :, sl], k[:, :, sl], v[:, :, sl], beta, chunk_size, state, keep_d)
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
        out, starts, last = _forward_segments(q.to(dtype), k.to(dtype), v.to(dtype), beta, chunk_size, state)
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
