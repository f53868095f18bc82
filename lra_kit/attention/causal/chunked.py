"""The chunked PyTorch path of the causal op, with the constant-memory gradient of Katharopoulos et al. §3.3.1.

The reference and the CPU path of :mod:`lra_kit.attention.causal.op` (which chooses between it and the
Triton path); it computes what :mod:`lra_kit.attention.causal.state` describes.

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
product; across chunks it needs the state at each chunk start, which the recurrence above
carries from one chunk boundary to the next, inside a *segment* of at most ``SEGMENT_CHUNKS``
chunks; segments are visited in order, each starting from the state its predecessor ended
with. (So the temporaries of one pass are the size of a segment, not of the sequence.)

Backward (eqs. 13–15). The weights depend only on the lag i − j, so each gradient is again
a weighted causal product, forward in time for ∇q and backward in time for ∇k and ∇v:

    ∇q_i = Σ_{j≤i} u(i−j) (g_i·v_j) k_j,   ∇k_j = Σ_{i≥j} u(i−j) (v_j·g_i) q_i,   ∇v_j = Σ_{i≥j} u(i−j) (q_i·k_j) g_i.

∇q reuses the forward states Σ k vᵀ; ∇k and ∇v share the backward-in-time states Σ g qᵀ
(eqs. 14 and 15 are the same cumulative sum, transposed). Segments are visited last to first;
the gradient of a segment's starting state is the gradient of the state its predecessor ended with.
Derived in the book, chapter "Causal masking and the RNN form" (``sec-constant-memory-gradient``).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch

from lra_kit.attention.causal.state import CausalState, Normaliser
from lra_kit.attention.lag_weights import decay_weights, momentum_lag_weights, scalar_u
from lra_kit.attention.mapped import phi_backward, phi_forward
from lra_kit.attention.precision import compute_dtype

SEGMENT_CHUNKS = 8


class _Pair(NamedTuple):
    """(s, d) of Σ u(lag) x yᵀ at one boundary, forward in time or (the adjoints) reverse in time; ``d`` is None
    where β = 0 and nobody asked for it."""

    s: torch.Tensor
    d: torch.Tensor | None


class Workspace:
    """The segment-sized buffers of one call, by name, each allocated once (by the first, longest segment) and
    reused by every later segment.

    Why: a segment allocates about twenty temporaries of the segment's size. Freed and asked for again segment
    after segment, they leave holes in glibc's heap that the next request cannot use (PyTorch asks for 64-byte
    aligned blocks, and glibc's per-thread cache of small freed objects pins the holes' edges), so the process's
    memory grew to about twice what the op needs (docs/gpu.md, "CPU memory"). A name is one temporary: two
    tensors alive at once never share a name."""

    def __init__(self, dtype: torch.dtype, device: torch.device):
        self.dtype, self.device = dtype, device
        self._buffers: dict[str, torch.Tensor] = {}

    def __call__(self, name: str, shape: tuple) -> torch.Tensor:
        """A contiguous tensor of ``shape`` (contents undefined) in the buffer called ``name``."""
        n = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.numel() < n:
            buf = self._buffers[name] = torch.empty(n, dtype=self.dtype, device=self.device)
        return buf[:n].view(shape)


def _bmm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """out = a @ b over any leading dimensions, written into ``out`` (one batched product, no temporary)."""
    torch.bmm(a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:]), out=out.view(-1, *out.shape[-2:]))
    return out


def segments(n: int, chunk_size: int) -> list[slice]:
    """Consecutive slices covering range(n): whole chunks, and a last one shorter than a chunk for the remainder —
    so that no segment ends inside a padded chunk. Long sequences (≥ 4·SEGMENT_CHUNKS chunks) get segments of
    SEGMENT_CHUNKS chunks: the temporaries of a pass are those of one segment, at most a quarter of the output's
    size. Shorter ones are one segment: there the whole problem is small (a few MB), and splitting it costs time
    (a pass copying each segment's result, and the per-segment overhead)."""
    C = max(1, chunk_size)
    if n < 4 * SEGMENT_CHUNKS * C:
        size = max(n, 1)
    else:
        size = C * SEGMENT_CHUNKS
    parts = []
    for a in range(0, n, size):
        b = min(a + size, n)
        whole = a + (b - a) // C * C
        parts += [slice(a, whole)] if whole > a else []
        parts += [slice(whole, b)] if b > whole else []
    return parts


class _Chunking:
    """Chunk geometry of one segment and every weight the forward and backward passes share (cached)."""

    def __init__(self, n: int, chunk_size: int, beta: float, dtype: torch.dtype, device: torch.device):
        self.n, self.beta = n, beta
        self.C = C = max(1, min(chunk_size, n))
        self.n_chunks = nc = -(-n // C)
        self.pad = nc * C - n
        pos = torch.arange(C, device=device, dtype=dtype)
        lag = pos[:, None] - pos[None, :]
        self.intra = torch.where(lag >= 0, momentum_lag_weights(lag.clamp(min=-1), beta), 0.0)  # u(a − b), b ≤ a
        from_start, to_end = pos[:, None], (C - 1) - pos[:, None]
        self.forward = {"w_sigma": momentum_lag_weights(to_end, beta).T, "w_delta": decay_weights(to_end, beta).T,
                        "read": beta * momentum_lag_weights(from_start, beta)}
        self.reverse = {"w_sigma": momentum_lag_weights(from_start, beta).T,
                        "w_delta": decay_weights(from_start, beta).T,
                        "read": beta * momentum_lag_weights(to_end, beta)}
        # Forward, a chunk's totals are taken at its end: σ = Σ_a u(C−1−a) x_a y_aᵀ, δ = Σ_a β^{C−1−a} x_a y_aᵀ,
        # and position a reads the state at the chunk's start as s + β·u(a)·d. Reverse in time, mirrored.
        self.mask = (lag >= 0).to(dtype)  # the normaliser's weights, 1 for b ≤ a (the same as intra at β = 0)

    def chunks(self, ws: Workspace, name: str, batch: tuple, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The buffer ``name`` as (B, H, n_chunks, C, dim) chunks, zero in the padding past n, and its first n
        positions as a (B, H, n, dim) view to write the segment into."""
        buf = ws(name, (*batch, self.n_chunks, self.C, dim))
        flat = buf.view(*batch, self.n_chunks * self.C, dim)
        if self.pad:
            flat[:, :, self.n:].zero_()
        return buf, flat[:, :, : self.n]

    def split(self, ws: Workspace, name: str, x: torch.Tensor) -> torch.Tensor:
        """(B, H, N, D) → (B, H, n_chunks, C, D) in the buffer ``name``, zero-padded at the end."""
        buf, positions = self.chunks(ws, name, x.shape[:2], x.shape[-1])
        positions.copy_(x)
        return buf

    def join(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(*x.shape[:2], self.n_chunks * self.C, x.shape[-1])[:, :, : self.n]

    def states(self, ws: Workspace, x: torch.Tensor, y: torch.Tensor, start: _Pair | None, reverse: bool):
        """(s, d) of Σ u(lag) x yᵀ at each chunk's boundary, (B, H, n_chunks, Dx, Dy) each (d None at β = 0), and
        the state at the segment's far end. Written into the buffers "s", "d" (and "x_weighted", which
        :meth:`read` uses too: the two never run at once).

        Forward: at each chunk's start; ``start`` = the state before the segment; far end = after it.
        Reverse in time: at each chunk's end; ``start`` = the state after the segment; far end = before it.
        """
        beta = self.beta
        xt = x.transpose(-1, -2)
        shape = (*x.shape[:3], x.shape[-1], y.shape[-1])
        w = self.reverse if reverse else self.forward
        # Each chunk's own totals first, in the buffers the boundary states then replace chunk by chunk:
        # σ = Σ_a u(C−1−a) x_a y_aᵀ in s, δ = Σ_a β^{C−1−a} x_a y_aᵀ in d.
        if beta == 0.0:
            s, d = _bmm(xt, y, ws("s", shape)), None
        else:
            xw = ws("x_weighted", xt.shape)
            s = _bmm(torch.mul(xt, w["w_sigma"], out=xw), y, ws("s", shape))
            d = _bmm(torch.mul(xt, w["w_delta"], out=xw), y, ws("d", shape))
        # The heavy-ball recurrence of eq. 12 from one chunk boundary to the next, C positions on:
        #   s ← s + σ + β·u(C−1)·d,   d ← β^C·d + δ        (every coefficient positive),
        # carried in (dim × dim_v) running states; each chunk's slot takes the state at its boundary.
        step_s, step_d = beta * scalar_u(self.C - 1, beta), beta**self.C
        run_s = s.new_zeros(shape[:2] + shape[3:]) if start is None else start.s.clone()
        run_d = None if d is None else (d.new_zeros(run_s.shape) if start is None or start.d is None
                                        else start.d.clone())
        total = torch.empty_like(run_s)
        for c in (range(self.n_chunks - 1, -1, -1) if reverse else range(self.n_chunks)):
            total.copy_(s[:, :, c])
            s[:, :, c].copy_(run_s)
            run_s.add_(total)
            if d is not None:
                run_s.add_(run_d, alpha=step_s)
                total.copy_(d[:, :, c])
                d[:, :, c].copy_(run_d)
                run_d.mul_(step_d).add_(total)
        return s, d, _Pair(run_s, run_d)

    def running_sums(self, x: torch.Tensor, start: torch.Tensor | None, reverse: bool):
        """Σ x over the positions before each chunk (forward; after it, reverse in time) plus ``start``,
        (B, H, n_chunks, D), and the total with ``start`` (the far end). The normaliser's z of eq. 9 and its adjoint."""
        totals = x.sum(-2)  # (B, H, n_chunks, D): a few thousand numbers, so a cumulative sum is cheap here
        if reverse:
            totals = totals.flip(2)
        inclusive = torch.cumsum(totals, 2)
        if start is not None:
            inclusive += start[:, :, None]
        exclusive = inclusive - totals
        return (exclusive.flip(2) if reverse else exclusive), inclusive[:, :, -1]

    @staticmethod
    def add_product(acc: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """acc += a @ b chunk by chunk, in the matrix product itself (no separate pass over acc); returns acc."""
        acc.view(-1, *acc.shape[-2:]).baddbmm_(a.reshape(-1, *a.shape[-2:]), b.reshape(-1, *b.shape[-2:]))
        return acc

    def read(self, ws: Workspace, name: str, x: torch.Tensor, s: torch.Tensor, d: torch.Tensor | None,
             reverse: bool) -> torch.Tensor:
        """x_a · (s + β·u(near_a)·d) for every position a of every chunk (s, d: the chunk's boundary states), in
        the buffer ``name``."""
        out = _bmm(x, s, ws(name, (*x.shape[:-1], s.shape[-1])))
        if d is not None:  # + (β·u(near)·x) @ d, accumulated in the product
            xr = torch.mul(x, (self.reverse if reverse else self.forward)["read"], out=ws("x_weighted", x.shape))
            self.add_product(out, xr, d)
        return out


@functools.lru_cache(maxsize=64)
def _chunking(n: int, chunk_size: int, beta: float, dtype: torch.dtype, device: torch.device) -> _Chunking:
    return _Chunking(n, chunk_size, beta, dtype, device)


def _forward(ch: _Chunking, ws: Workspace, qc, kc, vc, state=None, keep_d=False, norm: Normaliser | None = None):
    """One segment, its inputs already in chunks (q, k feature-mapped, padding masked): out_i = Σ_{j≤i}
    u(i−j)(q_i·k_j) v_j + what ``state`` carries, the state after the segment (its d also at β = 0 if ``keep_d``),
    and z after it (None without ``norm``). The output is in the buffer "out".

    With ``norm`` the output is γ·out_i / den_i, the denominator read off the same chunk products: its
    in-chunk part Σ_{j≤i} q_i·k_j is a row sum of the masked score matrix the numerator multiplies by V,
    its earlier part q_i·z at the chunk start — no separate prefix sum over the positions."""
    scores = _scores(ch, ws, qc, kc)
    den = z_end = None
    if norm is not None:
        den, _, z_end = _denominator(ch, qc, kc, scores, norm)
    s, d, final = ch.states(ws, kc, vc, state, reverse=False)
    out = ch.add_product(ch.read(ws, "out", qc, s, d, reverse=False), _weighted(ch, scores, norm), vc)
    if den is not None:
        out.mul_(den.reciprocal_().mul_(norm.gamma))
    if keep_d and d is None:  # β = 0: d is the newest k vᵀ alone
        last_k, last_v = (ch.join(t)[:, :, -1] for t in (kc, vc))
        final = _Pair(final.s, last_k[..., :, None] * last_v[..., None, :])
    return ch.join(out), final, z_end


def _scores(ch, ws, qc, kc):
    """q_a·k_b for every pair of positions of every chunk, in the buffer "scores"."""
    return _bmm(qc, kc.transpose(-1, -2), ws("scores", (*qc.shape[:-1], ch.C)))


def _weighted(ch, scores, norm):
    """The score matrix times the in-chunk weights u(a − b), in place. With a normaliser, :func:`_denominator`
    has already masked it in place, which at β = 0 is all the weighting there is (u ≡ 1 below the diagonal)."""
    return scores if norm is not None and not ch.beta else scores.mul_(ch.intra)


def _denominator(ch, qc, kc, scores, norm: Normaliser):
    """den = Σ_{b≤a} q_a·k_b (in the chunk) + q_a·z (chunk start) + ε for every chunked position; z at every chunk
    start and after the segment."""
    z_start, z_end = ch.running_sums(kc, norm.z0, reverse=False)
    # Masked in place: the weights u(a − b) that :func:`_weighted` applies next are 0 above the diagonal too.
    in_chunk = scores.mul_(ch.mask).sum(-1, keepdim=True)
    return in_chunk.add_(qc @ z_start[..., None]).add_(norm.eps), z_start, z_end


def _backward(ch: _Chunking, ws: Workspace, qc, kc, vc, gc, needs, state=None, later=None,
              norm: Normaliser | None = None, out_c=None):
    """∇q, ∇k, ∇v of eqs. 13–15 on one segment, its inputs in chunks as :func:`_forward` takes them and ``gc`` the
    output's gradient in chunks (overwritten).

    ``state``: the forward state before the segment. ``later``: the backward-in-time state Σ_{i later}
    u g_i q_iᵀ of the positions after the segment; returned for the positions from the segment on.
    With ``norm`` (``out_c``: the segment's output, in chunks), ``g`` is the gradient of the normalised
    output: the numerator's gradient is g·γ/den and the denominator's h = −(g·out)/den; h enters the same
    chunk products as the numerator's (the masked score matrix gains h_a on row a), plus h_a·z at each
    chunk start for ∇q and Σ_{later} h q for ∇k. Also returns z's gradient before the segment (else None).
    """
    scores = h = gz = None
    if needs[2] or norm is not None:
        scores = _scores(ch, ws, qc, kc)
    if norm is not None:
        den, z_start, _ = _denominator(ch, qc, kc, scores, norm)
        h = torch.mul(gc, out_c, out=out_c).sum(-1, keepdim=True).div_(den).neg_()  # ∂/∂den
        gc.mul_(den.reciprocal_().mul_(norm.gamma))  # ∂/∂numerator
    gv = _bmm(gc, vc.transpose(-1, -2), ws("gv", (*gc.shape[:-1], ch.C))).mul_(ch.intra)  # u(a−b)(g_a·v_b)
    if h is not None:
        gv.addcmul_(h, ch.mask)  # + h_a for b ≤ a: the denominator's Σ_{b≤a} q_a·k_b
    dq = dk = dv = None
    if needs[0]:
        s, d, _ = ch.states(ws, kc, vc, state, reverse=False)  # Σ u k vᵀ, as in the forward pass
        dq = ch.read(ws, "dq", gc, s.transpose(-1, -2), None if d is None else d.transpose(-1, -2), reverse=False)
        ch.add_product(dq, gv, kc)
        if h is not None:
            dq.addcmul_(h, z_start[:, :, :, None])
        del s, d  # their buffers hold the reverse-time states next
    s, d, before = ch.states(ws, gc, qc, later, reverse=True)  # Σ_{i later} u g_i q_iᵀ: shared by eqs. 14 and 15
    if h is not None:  # Σ_{i later} h_i q_i: the denominator's share of ∇k, and z's gradient before the segment
        hq = torch.mul(h, qc, out=ws("dk", qc.shape))  # ∇k's buffer: out_c, which it held, is used up
        hq_later, gz = ch.running_sums(hq, norm.gz, reverse=True)
    if needs[1]:
        dk = ch.add_product(ch.read(ws, "dk", vc, s, d, reverse=True), gv.transpose(-1, -2), qc)
        if h is not None:
            dk += hq_later[:, :, :, None]
    del gv  # its buffer holds ∇v next (one segment-sized buffer fewer: docs/gpu.md)
    if needs[2]:
        dv = ch.read(ws, "gv", kc, s.transpose(-1, -2), None if d is None else d.transpose(-1, -2), reverse=True)
        ch.add_product(dv, _weighted(ch, scores, norm).transpose(-1, -2), gc)
    return (*(None if t is None else ch.join(t) for t in (dq, dk, dv)), before, gz)


def _final_state_gradient(dk, dv, k, v, beta, grad_final: _Pair, to_end: torch.Tensor) -> None:
    """Key j enters the final state as u(n−1−j)·k_j v_jᵀ in s and β^{n−1−j}·k_j v_jᵀ in d (``to_end`` = n−1−j)."""
    terms = [(momentum_lag_weights(to_end, beta), grad_final.s)]
    if grad_final.d is not None:
        terms.append((decay_weights(to_end, beta), grad_final.d))
    for w, G in terms:
        if dk is not None:
            dk += w * (v @ G.transpose(-1, -2))
        if dv is not None:
            dv += w * (k @ G)


def _initial_state_gradient(later: _Pair, beta: float, n: int, grad_final: _Pair | None) -> _Pair:
    """Output i reads the initial state as s_0 + β·u(i)·d_0; the final state holds it as s_0 + β·u(n−1)·d_0 and
    β^n·d_0. ``later`` = (Σ_i u(i) g_i q_iᵀ, Σ_i β^i g_i q_iᵀ);
    Σ_i g_i q_iᵀ = (1 − β)·Σ u(i)… + β·Σ β^i… (no cancellation)."""
    s_rev, d_rev = later.s.transpose(-1, -2), None if later.d is None else later.d.transpose(-1, -2)
    gs = s_rev if d_rev is None else (1.0 - beta) * s_rev + beta * d_rev
    gd = beta * s_rev
    if grad_final is not None:
        gs = gs + grad_final.s
        gd = gd + (beta * scalar_u(n - 1, beta)) * grad_final.s
        if grad_final.d is not None:
            gd = gd + (beta**n) * grad_final.d
    return _Pair(gs, gd)


def _keep_of(mask, dtype):
    """key_padding_mask (B, N), True at padding, as 1.0 for real keys in the sums' type; None stays None."""
    return None if mask is None else (~mask).to(dtype)


def _keep(keep, sl):
    return None if keep is None else keep[:, None, sl, None]


def _fused_phi(phi, x: torch.Tensor, dtype: torch.dtype):
    """φ itself when it can write into a buffer and differentiate from its output (elu + 1, ...) for inputs of the
    sums' type; else None (then φ runs as a module, and autograd differentiates it)."""
    into = getattr(phi, "into", None)
    return phi if into is not None and x.dtype == dtype else None


def _inputs(ch: _Chunking, ws: Workspace, phi, q, k, v, keep, dtype):
    """φ(q), φ(k)·keep and v·keep of one segment, in chunks, in the sums' type (the buffers "q", "k", "v")."""
    out = []
    for name, x, side in (("q", q, "queries"), ("k", k, "keys"), ("v", v, None)):
        if side is None or phi is None:
            buf = ch.split(ws, name, x)
        elif _fused_phi(phi, x, dtype) is not None:
            buf, positions = ch.chunks(ws, name, x.shape[:2], x.shape[-1])
            phi.into(x, positions)
        else:
            buf = ch.split(ws, name, getattr(phi, side)(x))  # φ may change the width (random features)
        if keep is not None and name != "q":
            ch.join(buf).mul_(keep)
        out.append(buf)
    return out


def forward(spec, q, k, v, mask, state: CausalState | None, needs_grad=True):
    """The causal op's forward on this path (:mod:`lra_kit.attention.causal.op` calls it inside its one
    autograd Function), segment by segment in one :class:`Workspace`: φ and the mask applied to one segment at a
    time, its output (normalised when ``spec.eps`` is set) written into place. Returns the output, the final
    :class:`CausalState` (when ``spec.final``) and the state at each segment start (what backward needs; kept
    whether or not ``needs_grad``: a few small matrices)."""
    dtype = compute_dtype(q.dtype)
    keep = _keep_of(mask, dtype)
    B, H, N, _ = q.shape
    ws = Workspace(dtype, q.device)
    out = torch.empty(B, H, N, v.shape[-1], dtype=spec.out_dtype, device=v.device)
    pair = None if state is None else _Pair(state.s, state.d)
    z = None if state is None else state.z
    starts = []
    for sl in segments(N, spec.chunk_size):
        starts.append((pair, z))
        ch = _chunking(sl.stop - sl.start, spec.chunk_size, spec.beta, dtype, q.device)
        qc, kc, vc = _inputs(ch, ws, spec.phi, q[:, :, sl], k[:, :, sl], v[:, :, sl], _keep(keep, sl), dtype)
        norm = None if spec.eps is None else Normaliser(z, spec.eps, spec.gamma)
        part, pair, z = _forward(ch, ws, qc, kc, vc, pair, spec.keep_d, norm)
        out[:, :, sl] = part
        del qc, kc, vc, part
    final = CausalState(pair.s, pair.d, z) if spec.final else None
    return out, final, starts


def backward(spec, q, k, v, mask, out, starts, grad, grad_final: CausalState | None, needs):
    """The gradients of :func:`forward` (eqs. 13–15 and the normaliser's share), segments last to first in one
    :class:`Workspace`, φ recomputed per segment. ``needs``: q, k, v, s0, d0, z0. Returns dq, dk, dv and the
    gradient of the starting state as a :class:`CausalState`."""
    dtype, beta, C = compute_dtype(q.dtype), spec.beta, spec.chunk_size
    keep = _keep_of(mask, dtype)
    final, gz = None, None
    if grad_final is not None:
        gs, gd, gz = grad_final
        if gs is not None or gd is not None:
            final = _Pair(torch.zeros_like(gd) if gs is None else gs, gd)
    n = q.shape[2]
    parts, later = segments(n, C), None
    ws = Workspace(dtype, q.device)
    grads = [torch.empty_like(t) if need else None for t, need in zip((q, k, v), needs[:3], strict=False)]
    fused = _fused_phi(spec.phi, q, dtype)
    for i in range(len(parts) - 1, -1, -1):
        sl, (start, z0) = parts[i], starts[i]
        ch = _chunking(sl.stop - sl.start, C, beta, dtype, q.device)
        ks = _keep(keep, sl)
        if spec.phi is None or fused is not None:  # φ into the buffers; its derivative later from φ itself
            qc, kc, vc = _inputs(ch, ws, spec.phi, q[:, :, sl], k[:, :, sl], v[:, :, sl], ks, dtype)
        else:  # φ as a module, joined to fresh leaves for autograd's chain rule
            phi_q, phi_k, qs, kk = phi_forward(spec.phi, q[:, :, sl], k[:, :, sl], needs[:2])
            qc, kc, vc = _inputs(ch, ws, None, phi_q.detach(), phi_k.detach(), v[:, :, sl], ks, dtype)
        if grad is None:  # the loss does not use the output: only the final state's gradient flows
            gc = ch.chunks(ws, "g", q.shape[:2], v.shape[-1])[0].zero_()
        else:
            gc = ch.split(ws, "g", grad[:, :, sl])
        norm = out_c = None
        if spec.eps is not None:
            # in ∇k's buffer, which _backward fills only after its last use of the output
            norm, out_c = Normaliser(z0, spec.eps, spec.gamma, None, gz), ch.split(ws, "dk", out[:, :, sl])
        dfq, dfk, dvs, later, gz = _backward(ch, ws, qc, kc, vc, gc, needs[:3], start, later, norm, out_c)
        if final is not None:
            to_end = torch.arange(n - 1 - sl.start, n - 1 - sl.stop, -1, device=q.device, dtype=dtype)[:, None]
            _final_state_gradient(dfk, dvs, ch.join(kc), ch.join(vc), beta, final, to_end)
        if dfk is not None and ks is not None:
            dfk *= ks
        if dvs is not None and ks is not None:
            dvs *= ks
        if spec.phi is None:
            parts_grads = (dfq, dfk, dvs)
        elif fused is not None:  # chain rule through φ: φ'(x) from φ(x), in φ's own buffer
            parts_grads = (None if dfq is None else dfq.mul_(fused.derivative_(ch.join(qc))),
                           None if dfk is None else dfk.mul_(fused.derivative_(ch.join(kc))), dvs)
        else:
            parts_grads = (*phi_backward(spec.phi, phi_q, phi_k, qs, kk, dfq, dfk), dvs)
        for i_grad, part in enumerate(parts_grads):
            if part is not None and needs[i_grad]:
                grads[i_grad][:, :, sl] = part
        del dfq, dfk, dvs, parts_grads, qc, kc, vc, gc
    initial = _initial_state_gradient(later, beta, n, final) if any(needs[3:5]) else _Pair(None, None)
    return (*grads, CausalState(initial.s, initial.d, gz))
