"""Triton kernels of the chunked weighted causal product (imported only when Triton is used).

Two kernels serve the forward and the three gradients of
:func:`lra_kit.attention.causal.triton.triton_causal_product`:

``chunk_states_kernel``
    walks the chunks of one (batch·head) in order — forward in time for the states Σ u k vᵀ,
    backward in time for the adjoint states Σ q gᵀ — and stores s (and d, only where β > 0) at
    every chunk boundary. One program per (batch·head, row block, column block) of the state.
``chunk_output_kernel``
    one program per (batch·head, chunk, output column block): the masked intra-chunk product
    plus the boundary states, all chunks in parallel. The feature dimension is walked in blocks
    of at most 64, so that a wide feature map (Performer: 267 features at dim 64) needs no wider
    tile than a narrow one (a 512-wide tile would need ~288 KB of shared memory; sm_90 has ~227 KB).

The lag weights come from two small tables computed in float64 on the host (``u_ptr[x+1] = u(x)``
for x = −1 … C, ``p_ptr[x] = βˣ`` for x = 0 … C), so that u(x) = (1 − β^{x+1})/(1 − β) near β = 1
is exactly the value of :func:`~lra_kit.attention.lag_weights.momentum_lag_weights`, not
1 − βˣ⁺¹ rounded in float32.

Precision. Every product accumulates in float32. Operands: ``IN_DOT`` is the operand type of the
products of two input tiles (x·yᵀ, xᵀy): the inputs' own type (bf16/fp16 run on tensor cores; an
input already fits its type, and the float32 accumulator cannot overflow). ``ACC_DOT`` is the type
of the products whose operand is itself a float32 sum (a boundary state, the weighted scores):
float32 read as TF32 for 16-bit inputs (a state of a few thousand positions exceeds float16's
65504; bf16's 8-bit mantissa doubled the gradients' error). Float32 inputs use ``PRECISION = "tf32x3"`` (three TF32
products: about float32's accuracy on tensor cores, without the per-thread stack of "ieee").
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def loop_bound_probe_kernel(out_ptr, n):
    """Stores ``n`` by counting to it: a loop to a run-time bound, as ``chunk_states_kernel`` has. Run once under
    the interpreter (:func:`lra_kit.attention.causal.triton.switch.interpreter_problem`), before any real kernel."""
    total = 0
    for _ in range(n):
        total += 1
    tl.store(out_ptr, total)


@triton.jit
def _load_rows(ptr, bh, N, rows, inside, cols, width):
    """Rows ``rows`` (C,) of one (batch·head)'s (N, width) matrix, columns ``cols``, zero outside; as float32."""
    return tl.load(ptr + (bh * N + rows[:, None]) * width + cols[None, :],
                   mask=inside[:, None] & (cols[None, :] < width), other=0.0).to(tl.float32)


@triton.jit
def _dot(a, b, T: tl.constexpr, PRECISION: tl.constexpr, ROUND_ONLY: tl.constexpr):
    """a @ b with both operands of type T, accumulated in float32. ROUND_ONLY (Triton's interpreter, bf16 only):
    round the operands to T but multiply in float32 — the interpreter (Triton 3.x ``create_dot``) multiplies
    bf16 operands as their raw uint16 storage, which gives garbage, while the rounding is what T does."""
    if ROUND_ONLY:
        return tl.dot(a.to(T).to(tl.float32), b.to(T).to(tl.float32), input_precision="ieee")
    return tl.dot(a.to(T), b.to(T), input_precision=PRECISION)


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
    IN_DOT: tl.constexpr, PRECISION: tl.constexpr, ROUND_ONLY: tl.constexpr,
):
    """Forward (REVERSE=False), x = k, y = v, over a chunk of L positions b = 0 … L−1:
        s ← s + β·u(L−1)·d + Σ_b u(L−1−b) x_bᵀ y_b,      d ← β^L·d + Σ_b β^{L−1−b} x_bᵀ y_b.
    Adjoint (REVERSE=True), x = q, y = g, from the last chunk to the first:
        ŝ ← ŝ + Σ_a x_aᵀ y_a,                              d̂ ← β^L·d̂ + β·u(L−1)·ŝ + Σ_a β·u(a) x_aᵀ y_a.
    The second is the transpose of the first, as an adjoint must be; every coefficient is ≥ 0.
    USE_D = False (β = 0): d is neither carried nor stored, s ← s + Σ x_bᵀ y_b.
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
            sigma = _dot(tl.trans(x_s), y, IN_DOT, PRECISION, ROUND_ONLY)
            delta = _dot(tl.trans(x_d), y, IN_DOT, PRECISION, ROUND_ONLY)
            if REVERSE:
                d = decay * d + cross * s + delta
                s = s + sigma
            else:
                s = s + cross * d + sigma
                d = decay * d + delta
        else:  # β = 0: u ≡ 1, the plain causal product (Katharopoulos eq. 10)
            s = s + _dot(tl.trans(x), y, IN_DOT, PRECISION, ROUND_ONLY)
    if STORE_LAST:
        tl.store(s_last_ptr + bh * DX * DY + state_off, s, mask=state_mask)
        if USE_D:
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
    REVERSE: tl.constexpr, USE_D: tl.constexpr,
    IN_DOT: tl.constexpr, ACC_DOT: tl.constexpr, PRECISION: tl.constexpr, ROUND_ONLY: tl.constexpr,
):
    """Forward in time (REVERSE=False), row a of the chunk:
        out_a = Σ_{b≤a} u(a−b)(x_a·y_b) z_b + x_a S + β·u(a)·x_a D           (S, D at the chunk start)
    backward in time (REVERSE=True), row b:
        out_b = Σ_{i≥b} u(i−b)(x_b·y_i) z_i + u(L−1−b)·x_b Ŝ + β^{L−1−b}·x_b D̂   (Ŝ, D̂ at the chunk end).
    x·yᵀ and x·S are sums over the feature dimension DX, taken BX features at a time.
    """
    bh, chunk, iz = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    pos = tl.arange(0, C)
    rz = iz * BZ + tl.arange(0, BZ)
    start = chunk * C
    L = tl.minimum(C, N - start)
    inside = pos < L
    rows = start + pos
    z = _load_rows(z_ptr, bh, N, rows, inside, rz, DZ)
    to_end = tl.where(inside, L - 1 - pos, 0)
    # The per-row weights of the state reads (module docstring of causal_product): s and d at the chunk boundary.
    if REVERSE:
        w_s = tl.load(u_ptr + to_end + 1, mask=inside, other=0.0)  # u(L−1−b)
        w_d = tl.load(p_ptr + to_end, mask=inside, other=0.0)  # β^{L−1−b}
    else:
        w_s = tl.full((C,), 1.0, tl.float32)
        w_d = beta * tl.load(u_ptr + pos + 1)  # β·u(a)
    scores = tl.full((C, C), 0.0, tl.float32)
    out = tl.full((C, BZ), 0.0, tl.float32)
    for kx in range(0, DX, BX):
        rx = kx + tl.arange(0, BX)
        x = _load_rows(x_ptr, bh, N, rows, inside, rx, DX)
        y = _load_rows(y_ptr, bh, N, rows, inside, rx, DX)
        scores += _dot(x, tl.trans(y), IN_DOT, PRECISION, ROUND_ONLY)
        state_mask = (rx[:, None] < DX) & (rz[None, :] < DZ)
        state_off = bh * stride_bh + chunk * stride_chunk + rx[:, None] * stride_x + rz[None, :] * stride_z
        s = tl.load(s_ptr + state_off, mask=state_mask, other=0.0)
        out += _dot(x * w_s[:, None], s, ACC_DOT, PRECISION, ROUND_ONLY)
        if USE_D:
            d = tl.load(d_ptr + state_off, mask=state_mask, other=0.0)
            out += _dot(x * w_d[:, None], d, ACC_DOT, PRECISION, ROUND_ONLY)
    if REVERSE:
        lag = pos[None, :] - pos[:, None]  # i − b, row b, column i
    else:
        lag = pos[:, None] - pos[None, :]  # a − b, row a, column b
    weights = tl.load(u_ptr + tl.where(lag >= 0, lag, -1) + 1)  # u(lag), and u(−1) = 0 above the diagonal
    out += _dot(scores * weights, z, ACC_DOT, PRECISION, ROUND_ONLY)
    tl.store(out_ptr + (bh * N + rows[:, None]) * DZ + rz[None, :], out.to(out_ptr.dtype.element_ty),
             mask=inside[:, None] & (rz[None, :] < DZ))
