"""Triton kernels of the chunked weighted causal product (imported only when Triton is used).

Two kernels serve the forward and the three gradients of
:func:`lra_kit.attention.triton.triton_causal_product`:

``chunk_states_kernel``
    walks the chunks of one (batch·head) in order — forward in time for the states Σ u k vᵀ,
    backward in time for the adjoint states Σ q gᵀ — and stores the pair (s, d) at every chunk
    boundary. One program per (batch·head, row block, column block) of the state.
``chunk_output_kernel``
    one program per (batch·head, chunk, output column block): the masked intra-chunk product
    plus the boundary states, all chunks in parallel.

The lag weights come from two small tables computed in float64 on the host (``u_ptr[x+1] = u(x)``
for x = −1 … C, ``p_ptr[x] = βˣ`` for x = 0 … C), so that u(x) = (1 − β^{x+1})/(1 − β) near β = 1
is exactly the value of :func:`~lra_kit.attention.causal_product.momentum_lag_weights`, not
1 − βˣ⁺¹ rounded in float32. All products accumulate in float32.
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _load_rows(ptr, bh, N, rows, inside, cols, width):
    """Rows ``rows`` (C,) of one (batch·head)'s (N, width) matrix, columns ``cols``, zero outside; as float32."""
    return tl.load(ptr + (bh * N + rows[:, None]) * width + cols[None, :],
                   mask=inside[:, None] & (cols[None, :] < width), other=0.0).to(tl.float32)


@triton.jit
def chunk_states_kernel(
    x_ptr, y_ptr,  # (BH, N, DX), (BH, N, DY), contiguous
    s_ptr, d_ptr,  # (BH, NC, DX, DY) float32: the state at each chunk's boundary
    s_init_ptr, d_init_ptr,  # (BH, DX, DY) float32: the state before the first chunk visited
    s_last_ptr, d_last_ptr,  # (BH, DX, DY) float32: the state after the last chunk visited
    u_ptr, p_ptr, beta,
    N, DX, DY, NC,
    C: tl.constexpr, BX: tl.constexpr, BY: tl.constexpr,
    REVERSE: tl.constexpr, HAS_INIT: tl.constexpr, STORE_LAST: tl.constexpr, USE_D: tl.constexpr,
    PRECISION: tl.constexpr,
):
    """Forward (REVERSE=False), x = k, y = v, over a chunk of L positions b = 0 … L−1:
        s ← s + β·u(L−1)·d + Σ_b u(L−1−b) x_bᵀ y_b,      d ← β^L·d + Σ_b β^{L−1−b} x_bᵀ y_b.
    Adjoint (REVERSE=True), x = q, y = g, from the last chunk to the first:
        ŝ ← ŝ + Σ_a x_aᵀ y_a,                              d̂ ← β^L·d̂ + β·u(L−1)·ŝ + Σ_a β·u(a) x_aᵀ y_a.
    The second is the transpose of the first, as an adjoint must be; every coefficient is ≥ 0.
    """
    bh, ix, iy = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    rx = ix * BX + tl.arange(0, BX)
    ry = iy * BY + tl.arange(0, BY)
    pos = tl.arange(0, C)
    state_mask = (rx[:, None] < DX) & (ry[None, :] < DY)
    state_off = rx[:, None] * DY + ry[None, :]
    s = tl.full((BX, BY), 0.0, tl.float32)
    d = tl.full((BX, BY), 0.0, tl.float32)
    if HAS_INIT:
        s += tl.load(s_init_ptr + bh * DX * DY + state_off, mask=state_mask, other=0.0)
        if USE_D:
            d += tl.load(d_init_ptr + bh * DX * DY + state_off, mask=state_mask, other=0.0)
    for c in range(NC):
        if REVERSE:
            chunk = NC - 1 - c
        else:
            chunk = c
        start = chunk * C
        L = tl.minimum(C, N - start)
        inside = pos < L
        rows = start + pos
        x = _load_rows(x_ptr, bh, N, rows, inside, rx, DX)
        y = _load_rows(y_ptr, bh, N, rows, inside, ry, DY)
        boundary = ((bh * NC + chunk) * DX) * DY
        tl.store(s_ptr + boundary + state_off, s, mask=state_mask)
        if USE_D:
            tl.store(d_ptr + boundary + state_off, d, mask=state_mask)
        decay = tl.load(p_ptr + L)  # β^L
        cross = beta * tl.load(u_ptr + L)  # β·u(L−1)
        if REVERSE:
            x_s = x
            x_d = x * (beta * tl.load(u_ptr + pos + 1, mask=inside, other=0.0))[:, None]  # β·u(a)
        else:
            to_end = tl.where(inside, L - 1 - pos, 0)
            x_s = x * tl.load(u_ptr + to_end + 1, mask=inside, other=0.0)[:, None]  # u(L−1−b)
            x_d = x * tl.load(p_ptr + to_end, mask=inside, other=0.0)[:, None]  # β^{L−1−b}
        sigma = tl.dot(tl.trans(x_s), y, input_precision=PRECISION)
        if USE_D:
            delta = tl.dot(tl.trans(x_d), y, input_precision=PRECISION)
            if REVERSE:
                d = decay * d + cross * s + delta
                s = s + sigma
            else:
                s = s + cross * d + sigma
                d = decay * d + delta
        else:
            s = s + sigma
    if STORE_LAST:
        tl.store(s_last_ptr + bh * DX * DY + state_off, s, mask=state_mask)
        tl.store(d_last_ptr + bh * DX * DY + state_off, d, mask=state_mask)


@triton.jit
def chunk_output_kernel(
    x_ptr, y_ptr, z_ptr,  # (BH, N, DX), (BH, N, DX), (BH, N, DZ), contiguous
    s_ptr, d_ptr,  # boundary states of chunk_states_kernel, addressed by the four strides below
    out_ptr,  # (BH, N, DZ)
    u_ptr, p_ptr, beta,
    N, DX, DZ, NC,
    stride_bh, stride_chunk, stride_x, stride_z,
    C: tl.constexpr, BX: tl.constexpr, BZ: tl.constexpr,
    REVERSE: tl.constexpr, USE_D: tl.constexpr, PRECISION: tl.constexpr,
):
    """Forward in time (REVERSE=False), row a of the chunk:
        out_a = Σ_{b≤a} u(a−b)(x_a·y_b) z_b + x_a S + β·u(a)·x_a D           (S, D at the chunk start)
    backward in time (REVERSE=True), row b:
        out_b = Σ_{i≥b} u(i−b)(x_b·y_i) z_i + u(L−1−b)·x_b Ŝ + β^{L−1−b}·x_b D̂   (Ŝ, D̂ at the chunk end).
    """
    bh, chunk, iz = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    pos = tl.arange(0, C)
    rx = tl.arange(0, BX)
    rz = iz * BZ + tl.arange(0, BZ)
    start = chunk * C
    L = tl.minimum(C, N - start)
    inside = pos < L
    rows = start + pos
    x = _load_rows(x_ptr, bh, N, rows, inside, rx, DX)
    y = _load_rows(y_ptr, bh, N, rows, inside, rx, DX)
    z = _load_rows(z_ptr, bh, N, rows, inside, rz, DZ)
    if REVERSE:
        lag = pos[None, :] - pos[:, None]  # i − b, row b, column i
    else:
        lag = pos[:, None] - pos[None, :]  # a − b, row a, column b
    seen = lag >= 0
    weights = tl.load(u_ptr + tl.where(seen, lag, -1) + 1)  # u(lag), and u(−1) = 0 above the diagonal
    scores = tl.dot(x, tl.trans(y), input_precision=PRECISION) * weights
    out = tl.dot(scores, z, input_precision=PRECISION)

    state_mask = (rx[:, None] < DX) & (rz[None, :] < DZ)
    state_off = bh * stride_bh + chunk * stride_chunk + rx[:, None] * stride_x + rz[None, :] * stride_z
    s = tl.load(s_ptr + state_off, mask=state_mask, other=0.0)
    if REVERSE:
        to_end = tl.where(inside, L - 1 - pos, 0)
        x_s = x * tl.load(u_ptr + to_end + 1, mask=inside, other=0.0)[:, None]
    else:
        x_s = x
    out += tl.dot(x_s, s, input_precision=PRECISION)
    if USE_D:
        d = tl.load(d_ptr + state_off, mask=state_mask, other=0.0)
        if REVERSE:
            x_d = x * tl.load(p_ptr + to_end, mask=inside, other=0.0)[:, None]
        else:
            x_d = x * (beta * tl.load(u_ptr + pos + 1))[:, None]
        out += tl.dot(x_d, d, input_precision=PRECISION)
    tl.store(out_ptr + (bh * N + rows[:, None]) * DZ + rz[None, :], out.to(out_ptr.dtype.element_ty),
             mask=inside[:, None] & (rz[None, :] < DZ))
