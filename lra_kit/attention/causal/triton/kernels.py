"""Triton kernels of the causal op: φ, the padding mask, the normaliser and momentum inside, no PyTorch around them.

The op (:mod:`lra_kit.attention.causal.op`) computes, for raw q, k and v (B, H, N, ·),

    out_i = γ · num_i / den_i,    num_i = Σ_{j≤i} u(i−j) (φ(q_i)·φ(k_j)) v_j + φ(q_i)ᵀ(s_0 + β·u(i)·d_0),
    den_i = φ(q_i)·z_i + ε,       z_i = z_0 + Σ_{j≤i} φ(k_j),       u(x) = (1 − β^{x+1}) / (1 − β)

(Katharopoulos et al. eq. 9 at β = 0, γ = 1; Nguyen et al. eq. 13 at β > 0), φ(k_j) = 0 at padded keys.
Six kernels, chunks of C positions, one program per (batch·head, chunk or state tile, column block); a forward
launches ``states_kernel`` and ``forward_kernel``, a backward ``states_kernel`` twice (the forward states
recomputed, the adjoint ones), ``dq_kernel`` and ``dkv_kernel`` (``dk_kernel`` or ``dv_kernel`` where only one of
the two gradients is asked for):

``states_kernel``
    walks the chunks of one (batch·head) in order and stores the state at every chunk boundary: forward in
    time s, d (Σ u φ(k) vᵀ, Σ β^· φ(k) vᵀ) and z (Σ φ(k)); backward in time the adjoints ŝ, d̂ of
    Σ φ(q) g̃ᵀ and ẑ = Σ h φ(q), with g̃_i = γ g_i / den_i and h_i = −(g_i·out_i)/den_i (∂L/∂den_i).
``forward_kernel``
    the output of one chunk: the masked score tile φ(Q)φ(K)ᵀ weighted by u, plus the boundary states; the
    denominator is the row sum of the same (unweighted) masked tile plus φ(q_i)·z at the chunk start. Stores
    out in the output's type and den (B·H, N) in float32 for backward: one number a row, as FlashAttention
    keeps its log-sum-exp.
``dq_kernel``
    ∇q_a = φ'(q_a) ⊙ [Σ_{b≤a} (u(a−b) (g̃_a·v_b) + h_a) φ(k_b) + g̃_aᵀ(S + β·u(a)·D)ᵀ + h_a z]   (z at the chunk
    start); it forms h_a from g and the saved output as it reads them, and stores it (one number a row).
``dk_kernel``
    ∇k_b = keep_b φ'(k_b) ⊙ [Σ_{i≥b} (u(i−b) (v_b·g̃_i) + h_i) φ(q_i) + (adjoint state reads) + ẑ].
``dv_kernel``
    ∇v_b = Σ_{i≥b} u(i−b) (φ(k_b)·φ(q_i)) g̃_i + (adjoint state reads).
``dkv_kernel``
    both in one launch, program j writing column block j of each: ∇k's score tile V Gᵀ (over every value
    column) and ∇v's φ(K)φ(Q)ᵀ (over every feature) from one load of each tile of q, k, v and ∂out (the own
    block of ∂out twice: held, it spilled registers), where a program of the pair loads the two its tile multiplies
    in full (v, ∂out for ∇k; q, k for ∇v) and its own block of the others. Its adjoint state reads are the
    pair's: row block j of Ŝ, D̂ for ∇k, column block j for ∇v.

The state algebra (s, d and the weights u(L−1−b), β^{L−1−b}, β·u(a) of a state read) is that of the module
docstring of :mod:`lra_kit.attention.causal.chunked`; the adjoint recursion is its transpose. With ``PHI`` off
the kernels take q, k already mapped (another feature map, applied once in PyTorch, or the bare product); with
``NORM`` off they compute the bare numerator.

Inputs are read through their strides (the last dimension contiguous), so the (B, N, H, D) → (B, H, N, D) view
of a projection is read in place. The lag weights come from two small tables computed in float64 on the host
(``u_ptr[x+1] = u(x)`` for x = −1 … C, ``p_ptr[x] = βˣ``), so that u near β = 1 is exactly the value of
:func:`~lra_kit.attention.lag_weights.momentum_lag_weights`.

Precision. Every product accumulates in float32. ``IN_DOT`` is the operand type of the products of two input
tiles (the inputs' own type: bf16/fp16 on tensor cores). ``ACC_DOT`` is the type of the products whose
operand is itself a float32 sum (a boundary state, the weighted scores): float32 read as TF32 for 16-bit
inputs (a state of a few thousand positions exceeds float16's 65504). Float32 inputs use ``PRECISION =
"tf32x3"`` (three TF32 products: about float32's accuracy on tensor cores). φ, the normaliser and the states
are float32 throughout.
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def loop_bound_probe_kernel(out_ptr, n):
    """Stores ``n`` by counting to it: a loop to a run-time bound, as ``states_kernel`` has. Run once under
    the interpreter (:func:`lra_kit.attention.causal.triton.switch.interpreter_problem`), before any real kernel."""
    total = 0
    for _ in range(n):
        total += 1
    tl.store(out_ptr, total)


@triton.jit
def _tf32(x):
    """x rounded to TF32 (10 mantissa bits, to nearest, ties away from zero: ``cvt.rna.tf32.f32``), in float32."""
    bits = x.to(tl.uint32, bitcast=True)
    return ((bits + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)


@triton.jit
def _dot(a, b, T: tl.constexpr, PRECISION: tl.constexpr, ROUND_ONLY: tl.constexpr):
    """a @ b with both operands of type T, accumulated in float32. ROUND_ONLY (Triton's interpreter, 16-bit
    inputs): round the operands as the GPU does but multiply in float32 — the interpreter (Triton 3.x
    ``create_dot``) multiplies bf16 operands as their raw uint16 storage, which gives garbage, and ignores
    ``input_precision``, so a TF32 product would be a float32 one there: float32 operands are rounded to TF32."""
    if ROUND_ONLY:
        if T == tl.float32:
            return tl.dot(_tf32(a.to(tl.float32)), _tf32(b.to(tl.float32)), input_precision="ieee")
        return tl.dot(a.to(T).to(tl.float32), b.to(T).to(tl.float32), input_precision="ieee")
    return tl.dot(a.to(T), b.to(T), input_precision=PRECISION)


@triton.jit
def _y_dot(a, b, SCALED: tl.constexpr, PHI_DOT: tl.constexpr, ACC_DOT: tl.constexpr, PRECISION: tl.constexpr,
           ROUND_ONLY: tl.constexpr):
    """a @ b of a state pass: in ACC_DOT where b was SCALED by γ/den (unbounded: |g|/ε where only padding
    precedes a query), else in PHI_DOT (a is φ of an input)."""
    if SCALED:
        return _dot(a, b, ACC_DOT, PRECISION, ROUND_ONLY)
    return _dot(a, b, PHI_DOT, PRECISION, ROUND_ONLY)


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _sum(x, axis: tl.constexpr):
    """Σ along ``axis``. ``tl.sum`` is itself a ``@triton.jit`` function of Triton's library, which the interpreted copy
    of these kernels cannot call (Triton is imported with the interpreter off: switch._kernels); ``tl.reduce`` is
    a builtin."""
    return tl.reduce(x, axis, _add)


@triton.jit
def _tile(ptr, base, stride_n, rows, inside, cols, width):
    """Rows ``rows`` (C,) of one (batch·head)'s (N, width) matrix at ``ptr + base``, columns ``cols``; float32,
    zero outside the sequence and the width."""
    return tl.load(ptr + base + rows[:, None] * stride_n + cols[None, :],
                   mask=inside[:, None] & (cols[None, :] < width), other=0.0).to(tl.float32)


@triton.jit
def _store_rows(ptr, bh, N, rows, inside, cols, width, x):
    """Store ``x`` as rows ``rows`` of one (batch·head)'s (N, width) matrix in a contiguous (B·H, N, width) gradient."""
    tl.store(ptr + (bh * N + rows[:, None]) * width + cols[None, :], x.to(ptr.dtype.element_ty),
             mask=inside[:, None] & (cols[None, :] < width))


@triton.jit
def _mapped(x, inside, cols, width, PHI: tl.constexpr):
    """φ(x) = elu(x) + 1 = x + 1 (x ≥ 0) or eˣ (Katharopoulos eq. 7) where ``PHI``, else x; zero outside the tile's
    rows and width (φ(0) = 1 would otherwise count a missing position). The exponential is of min(x, 0)."""
    if PHI:
        x = tl.where(x >= 0, x + 1.0, tl.exp(tl.minimum(x, 0.0)))
        x = tl.where(inside[:, None] & (cols[None, :] < width), x, 0.0)
    return x


@triton.jit
def _phi_grad(x, PHI: tl.constexpr):
    """φ'(x): 1 for x ≥ 0, eˣ below (``PHI``); 1 without φ."""
    if PHI:
        return tl.where(x >= 0, 1.0, tl.exp(tl.minimum(x, 0.0)))
    return tl.full(x.shape, 1.0, tl.float32)


@triton.jit
def _keep(mask_ptr, b, stride_mb, rows, inside, MASK: tl.constexpr):
    """1.0 for a real key, 0.0 for padding (``key_padding_mask`` True) or outside the sequence."""
    if MASK:
        pad = tl.load(mask_ptr + b * stride_mb + rows, mask=inside, other=1)
        return tl.where(pad == 0, 1.0, 0.0)
    return tl.where(inside, 1.0, 0.0)


@triton.jit
def _rows(ptr, bh, N, rows, inside):
    """One float32 number a row, (B·H, N): den or h."""
    return tl.load(ptr + bh * N + rows, mask=inside, other=1.0)


@triton.jit
def _state(ptr, mask):
    """A tile of boundary states, in float32 whatever type they are stored in (``host.STATE_TYPES``)."""
    return tl.load(ptr, mask=mask, other=0.0).to(tl.float32)


@triton.jit
def _chunk_end(u_ptr, p_ptr, chunk, N, C: tl.constexpr):
    """A chunk of a backward-in-time kernel (∇k, ∇v): positions ``pos``, their ``rows``, which are ``inside`` the
    sequence, and the weights of an adjoint state read at the chunk's end, u(L−1−b) and β^{L−1−b}."""
    pos = tl.arange(0, C)
    start = chunk * C
    L = tl.minimum(C, N - start)
    inside = pos < L
    to_end = tl.where(inside, L - 1 - pos, 0)
    w_s = tl.load(u_ptr + to_end + 1, mask=inside, other=0.0)  # u(L−1−b)
    w_d = tl.load(p_ptr + to_end, mask=inside, other=0.0)  # β^{L−1−b}
    return pos, start + pos, inside, w_s, w_d


@triton.jit
def states_kernel(
    x_ptr, sxb, sxh, sxn,  # forward: k; adjoint: q (raw)
    y_ptr, syb, syh, syn,  # forward: v; adjoint: ∂out
    mask_ptr, smb,  # key_padding_mask as uint8 (B, N), forward only
    den_ptr, h_ptr,  # (BH, N) float32, adjoint only: g̃ = γ·g/den, ẑ weights h
    s_ptr, d_ptr, z_ptr,  # (BH, NC, DX, DY), (BH, NC, DX, DY), (BH, NC, DX) float32: the state at each chunk start
    s_init_ptr, d_init_ptr, z_init_ptr,  # (BH, DX, DY), (BH, DX, DY), (BH, DX): before the first chunk visited
    s_last_ptr, d_last_ptr, z_last_ptr,  # the same shapes: after the last chunk visited
    u_ptr, p_ptr, beta, gamma,
    H, N, DX, DY, NC,
    C: tl.constexpr, BX: tl.constexpr, BY: tl.constexpr,
    REVERSE: tl.constexpr, PHI: tl.constexpr, MASK: tl.constexpr, NORM: tl.constexpr,
    HAS_INIT: tl.constexpr, STORE_LAST: tl.constexpr, USE_D: tl.constexpr,
    IN_DOT: tl.constexpr, PHI_DOT: tl.constexpr, ACC_DOT: tl.constexpr, PRECISION: tl.constexpr,
    ROUND_ONLY: tl.constexpr,
):
    """Forward (REVERSE=False), x = φ(k)·keep, y = v, over a chunk of L positions b = 0 … L−1:
        s ← s + β·u(L−1)·d + Σ_b u(L−1−b) x_bᵀ y_b,    d ← β^L·d + Σ_b β^{L−1−b} x_bᵀ y_b,    z ← z + Σ_b x_b.
    Adjoint (REVERSE=True), x = φ(q), y = g̃ (γ·g/den where NORM), from the last chunk to the first:
        ŝ ← ŝ + Σ_a x_aᵀ y_a,    d̂ ← β^L·d̂ + β·u(L−1)·ŝ + Σ_a β·u(a) x_aᵀ y_a,    ẑ ← ẑ + Σ_a h_a x_a.
    The second is the transpose of the first, as an adjoint must be. USE_D = False (β = 0): no d. z is carried
    where NORM.

    Two operands are float32 numbers outside a 16-bit type's range, so their products take ACC_DOT: forward,
    the decayed x_d = β^{L−1−b}·φ(k_b) (β = 0.3 after 14 positions is below float16's smallest subnormal, which
    flushed a row's final d to 0); adjoint with NORM, y = γ·g/den (den = ε where only padded keys precede a
    query: |g|·1e6, which overflowed float16 to inf and poisoned every earlier position's ∇k, ∇v)."""
    bh, ix, iy = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = bh // H, bh % H
    rx = ix * BX + tl.arange(0, BX)
    ry = iy * BY + tl.arange(0, BY)
    pos = tl.arange(0, C)
    state_mask = (rx[:, None] < DX) & (ry[None, :] < DY)
    state_off = rx[:, None] * DY + ry[None, :]
    z_mask = rx + iy * DX < DX  # every program carries z (a sum over its tile); the first column block stores it
    s = tl.full((BX, BY), 0.0, tl.float32)
    d = tl.full((BX, BY), 0.0, tl.float32)
    z = tl.full((BX,), 0.0, tl.float32)
    if HAS_INIT:
        s += tl.load(s_init_ptr + bh * DX * DY + state_off, mask=state_mask, other=0.0)
        if USE_D:
            d += tl.load(d_init_ptr + bh * DX * DY + state_off, mask=state_mask, other=0.0)
        if NORM:
            z += tl.load(z_init_ptr + bh * DX + rx, mask=rx < DX, other=0.0)
    for c in range(NC):
        if REVERSE:
            chunk = NC - 1 - c
        else:
            chunk = c
        start = chunk * C
        L = tl.minimum(C, N - start)
        inside = pos < L
        rows = start + pos
        x = _mapped(_tile(x_ptr, b * sxb + hh * sxh, sxn, rows, inside, rx, DX), inside, rx, DX, PHI)
        y = _tile(y_ptr, b * syb + hh * syh, syn, rows, inside, ry, DY)
        if REVERSE:
            if NORM:
                y = y * (gamma / _rows(den_ptr, bh, N, rows, inside))[:, None]
        else:
            x = x * _keep(mask_ptr, b, smb, rows, inside, MASK)[:, None]
        boundary = ((bh * NC + chunk) * DX) * DY
        tl.store(s_ptr + boundary + state_off, s, mask=state_mask)
        if NORM:
            tl.store(z_ptr + (bh * NC + chunk) * DX + rx, z, mask=z_mask)
            if REVERSE:
                z += _sum(x * _rows(h_ptr, bh, N, rows, inside)[:, None], 0)
            else:
                z += _sum(x, 0)
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
            sigma = _y_dot(tl.trans(x_s), y, REVERSE and NORM, PHI_DOT, ACC_DOT, PRECISION, ROUND_ONLY)
            delta = _dot(tl.trans(x_d), y, ACC_DOT, PRECISION, ROUND_ONLY)  # forward: β^{L−1−b} may be < 6e-8
            if REVERSE:
                d = decay * d + cross * s + delta
                s = s + sigma
            else:
                s = s + cross * d + sigma
                d = decay * d + delta
        else:  # β = 0: u ≡ 1, the plain causal product (Katharopoulos eq. 10)
            s = s + _y_dot(tl.trans(x), y, REVERSE and NORM, PHI_DOT, ACC_DOT, PRECISION, ROUND_ONLY)
    if STORE_LAST:
        tl.store(s_last_ptr + bh * DX * DY + state_off, s, mask=state_mask)
        if USE_D:
            tl.store(d_last_ptr + bh * DX * DY + state_off, d, mask=state_mask)
        if NORM:
            tl.store(z_last_ptr + bh * DX + rx, z, mask=z_mask)


@triton.jit
def _lag_weights(u_ptr, pos, REVERSE: tl.constexpr):
    """u(lag) over a chunk's (row, column) pairs, 0 where the lag is negative (u(−1) = 0 in the table):
    forward lag = row − column; reverse (row b, column i) lag = i − b."""
    if REVERSE:
        lag = pos[None, :] - pos[:, None]
    else:
        lag = pos[:, None] - pos[None, :]
    return tl.load(u_ptr + tl.where(lag >= 0, lag, -1) + 1), lag >= 0


@triton.jit
def forward_kernel(
    q_ptr, sqb, sqh, sqn,
    k_ptr, skb, skh, skn,
    v_ptr, svb, svh, svn,
    mask_ptr, smb,
    s_ptr, d_ptr, z_ptr,  # boundary states of states_kernel
    out_ptr, sob, soh, son,
    den_ptr,  # (BH, N) float32, written where STORE_DEN
    u_ptr, p_ptr, beta, gamma, eps,
    H, N, D, M, NC,
    C: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr,
    PHI: tl.constexpr, MASK: tl.constexpr, NORM: tl.constexpr, STORE_DEN: tl.constexpr, USE_D: tl.constexpr,
    IN_DOT: tl.constexpr, PHI_DOT: tl.constexpr, ACC_DOT: tl.constexpr, PRECISION: tl.constexpr,
    ROUND_ONLY: tl.constexpr,
):
    """Row a of a chunk, output columns rm:
        num_a = Σ_{b≤a} u(a−b)(φq_a·φk_b) v_b + φq_a S + β·u(a)·φq_a D,   den_a = Σ_{b≤a} φq_a·φk_b + φq_a·z + ε,
    (S, D, z at the chunk start) and out_a = γ·num_a/den_a where NORM, else num_a. The feature dimension is
    walked BD features at a time."""
    bh, chunk, im = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = bh // H, bh % H
    pos = tl.arange(0, C)
    rm = im * BM + tl.arange(0, BM)
    start = chunk * C
    inside = pos < tl.minimum(C, N - start)
    rows = start + pos
    keep = _keep(mask_ptr, b, smb, rows, inside, MASK)
    w_d = beta * tl.load(u_ptr + pos + 1)  # β·u(a)
    scores = tl.full((C, C), 0.0, tl.float32)
    num = tl.full((C, BM), 0.0, tl.float32)
    qz = tl.full((C,), 0.0, tl.float32)
    for kd in range(0, D, BD):
        rd = kd + tl.arange(0, BD)
        fq = _mapped(_tile(q_ptr, b * sqb + hh * sqh, sqn, rows, inside, rd, D), inside, rd, D, PHI)
        fk = _mapped(_tile(k_ptr, b * skb + hh * skh, skn, rows, inside, rd, D), inside, rd, D, PHI) * keep[:, None]
        scores += _dot(fq, tl.trans(fk), PHI_DOT, PRECISION, ROUND_ONLY)
        state_mask = (rd[:, None] < D) & (rm[None, :] < M)
        state_off = ((bh * NC + chunk) * D + rd[:, None]) * M + rm[None, :]
        num += _dot(fq, _state(s_ptr + state_off, state_mask), ACC_DOT, PRECISION, ROUND_ONLY)
        if USE_D:
            d = _state(d_ptr + state_off, state_mask)
            num += _dot(fq * w_d[:, None], d, ACC_DOT, PRECISION, ROUND_ONLY)
        if NORM:
            z = _state(z_ptr + (bh * NC + chunk) * D + rd, rd < D)
            qz += _sum(fq * z[None, :], 1)
    weights, causal = _lag_weights(u_ptr, pos, False)
    v = _tile(v_ptr, b * svb + hh * svh, svn, rows, inside, rm, M)
    num += _dot(scores * weights, v, ACC_DOT, PRECISION, ROUND_ONLY)
    if NORM:
        den = _sum(tl.where(causal, scores, 0.0), 1) + qz + eps
        num = num * (gamma / den)[:, None]
        if STORE_DEN:
            tl.store(den_ptr + bh * N + rows, den, mask=pos + im * C < N - start)  # the first column block
    tl.store(out_ptr + b * sob + hh * soh + rows[:, None] * son + rm[None, :], num.to(out_ptr.dtype.element_ty),
             mask=inside[:, None] & (rm[None, :] < M))


@triton.jit
def dq_kernel(
    q_ptr, sqb, sqh, sqn,
    k_ptr, skb, skh, skn,
    v_ptr, svb, svh, svn,
    g_ptr, sgb, sgh, sgn,  # ∂L/∂out
    o_ptr, sob, soh, son,  # the saved output (NORM)
    mask_ptr, smb,
    s_ptr, d_ptr, z_ptr,  # forward boundary states, S and D read transposed
    den_ptr, h_ptr,  # (BH, N) float32: den read, h = ∂L/∂den written (NORM)
    dq_ptr,  # (B, H, N, D) contiguous
    u_ptr, p_ptr, beta, gamma,
    H, N, D, M, NC,
    C: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr,
    PHI: tl.constexpr, MASK: tl.constexpr, NORM: tl.constexpr, STORE_H: tl.constexpr, USE_D: tl.constexpr,
    IN_DOT: tl.constexpr, PHI_DOT: tl.constexpr, ACC_DOT: tl.constexpr, PRECISION: tl.constexpr,
    ROUND_ONLY: tl.constexpr,
):
    """Row a, feature columns rd: ∇φ(q_a) = Σ_{b≤a} (u(a−b) r_a (g_a·v_b) + h_a) φk_b + r_a g_a(S + β·u(a)·D)ᵀ
    + h_a z, with r_a = γ/den_a and h_a = −(g_a·out_a)/den_a where NORM (else r = 1, h = 0); then ⊙ φ'(q_a)."""
    bh, chunk, idd = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = bh // H, bh % H
    pos = tl.arange(0, C)
    rd = idd * BD + tl.arange(0, BD)
    start = chunk * C
    inside = pos < tl.minimum(C, N - start)
    rows = start + pos
    w_d = beta * tl.load(u_ptr + pos + 1)  # β·u(a)
    scores = tl.full((C, C), 0.0, tl.float32)
    acc = tl.full((C, BD), 0.0, tl.float32)
    go = tl.full((C,), 0.0, tl.float32)
    for km in range(0, M, BM):
        rm = km + tl.arange(0, BM)
        g = _tile(g_ptr, b * sgb + hh * sgh, sgn, rows, inside, rm, M)
        v = _tile(v_ptr, b * svb + hh * svh, svn, rows, inside, rm, M)
        scores += _dot(g, tl.trans(v), IN_DOT, PRECISION, ROUND_ONLY)
        state_mask = (rm[:, None] < M) & (rd[None, :] < D)
        state_off = ((bh * NC + chunk) * D + rd[None, :]) * M + rm[:, None]  # (S)ᵀ: rows m, columns d
        acc += _dot(g, _state(s_ptr + state_off, state_mask), ACC_DOT, PRECISION, ROUND_ONLY)
        if USE_D:
            dT = _state(d_ptr + state_off, state_mask)
            acc += _dot(g * w_d[:, None], dT, ACC_DOT, PRECISION, ROUND_ONLY)
        if NORM:
            go += _sum(g * _tile(o_ptr, b * sob + hh * soh, son, rows, inside, rm, M), 1)
    weights, causal = _lag_weights(u_ptr, pos, False)
    keep = _keep(mask_ptr, b, smb, rows, inside, MASK)
    fk = _mapped(_tile(k_ptr, b * skb + hh * skh, skn, rows, inside, rd, D), inside, rd, D, PHI) * keep[:, None]
    if NORM:
        den = _rows(den_ptr, bh, N, rows, inside)
        h = tl.where(inside, -go / den, 0.0)
        if STORE_H:
            tl.store(h_ptr + bh * N + rows, h, mask=pos + idd * C < N - start)  # the first column block
        r = gamma / den
        p = scores * weights * r[:, None] + tl.where(causal, h[:, None], 0.0)
        z = _state(z_ptr + (bh * NC + chunk) * D + rd, rd < D)
        dfq = _dot(p, fk, ACC_DOT, PRECISION, ROUND_ONLY) + acc * r[:, None] + h[:, None] * z[None, :]
    else:
        dfq = _dot(scores * weights, fk, ACC_DOT, PRECISION, ROUND_ONLY) + acc
    q = _tile(q_ptr, b * sqb + hh * sqh, sqn, rows, inside, rd, D)
    dq = dfq * _phi_grad(q, PHI)
    _store_rows(dq_ptr, bh, N, rows, inside, rd, D, dq)


@triton.jit
def dk_kernel(
    q_ptr, sqb, sqh, sqn,
    k_ptr, skb, skh, skn,
    v_ptr, svb, svh, svn,
    g_ptr, sgb, sgh, sgn,
    mask_ptr, smb,
    s_ptr, d_ptr, z_ptr,  # adjoint boundary states (at each chunk's end), Ŝ and D̂ read transposed; ẑ
    den_ptr, h_ptr,
    dk_ptr,
    u_ptr, p_ptr, beta, gamma,
    H, N, D, M, NC,
    C: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr,
    PHI: tl.constexpr, MASK: tl.constexpr, NORM: tl.constexpr, USE_D: tl.constexpr,
    IN_DOT: tl.constexpr, PHI_DOT: tl.constexpr, ACC_DOT: tl.constexpr, PRECISION: tl.constexpr,
    ROUND_ONLY: tl.constexpr,
):
    """Row b, feature columns rd: ∇φ(k_b) = Σ_{i≥b} (u(i−b) r_i (v_b·g_i) + h_i) φq_i + u(L−1−b) v_b Ŝᵀ
    + β^{L−1−b} v_b D̂ᵀ + ẑ; then ⊙ keep_b φ'(k_b). Ŝ, D̂ were summed from g̃ = r·g already."""
    bh, chunk, idd = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = bh // H, bh % H
    rd = idd * BD + tl.arange(0, BD)
    pos, rows, inside, w_s, w_d = _chunk_end(u_ptr, p_ptr, chunk, N, C)
    scores = tl.full((C, C), 0.0, tl.float32)
    acc = tl.full((C, BD), 0.0, tl.float32)
    for km in range(0, M, BM):
        rm = km + tl.arange(0, BM)
        v = _tile(v_ptr, b * svb + hh * svh, svn, rows, inside, rm, M)
        g = _tile(g_ptr, b * sgb + hh * sgh, sgn, rows, inside, rm, M)
        scores += _dot(v, tl.trans(g), IN_DOT, PRECISION, ROUND_ONLY)
        state_mask = (rm[:, None] < M) & (rd[None, :] < D)
        state_off = ((bh * NC + chunk) * D + rd[None, :]) * M + rm[:, None]
        acc += _dot(v * w_s[:, None], _state(s_ptr + state_off, state_mask),
                    ACC_DOT, PRECISION, ROUND_ONLY)
        if USE_D:
            dT = _state(d_ptr + state_off, state_mask)
            acc += _dot(v * w_d[:, None], dT, ACC_DOT, PRECISION, ROUND_ONLY)
    weights, later = _lag_weights(u_ptr, pos, True)
    fq = _mapped(_tile(q_ptr, b * sqb + hh * sqh, sqn, rows, inside, rd, D), inside, rd, D, PHI)
    if NORM:
        r = gamma / _rows(den_ptr, bh, N, rows, inside)
        h = tl.where(inside, _rows(h_ptr, bh, N, rows, inside), 0.0)
        p = scores * weights * r[None, :] + tl.where(later, h[None, :], 0.0)
        z = _state(z_ptr + (bh * NC + chunk) * D + rd, rd < D)
        dfk = _dot(p, fq, ACC_DOT, PRECISION, ROUND_ONLY) + acc + z[None, :]
    else:
        dfk = _dot(scores * weights, fq, ACC_DOT, PRECISION, ROUND_ONLY) + acc
    k = _tile(k_ptr, b * skb + hh * skh, skn, rows, inside, rd, D)
    dk = dfk * _phi_grad(k, PHI) * _keep(mask_ptr, b, smb, rows, inside, MASK)[:, None]
    _store_rows(dk_ptr, bh, N, rows, inside, rd, D, dk)


@triton.jit
def dv_kernel(
    q_ptr, sqb, sqh, sqn,
    k_ptr, skb, skh, skn,
    g_ptr, sgb, sgh, sgn,
    mask_ptr, smb,
    s_ptr, d_ptr,  # adjoint boundary states (at each chunk's end)
    den_ptr,
    dv_ptr,
    u_ptr, p_ptr, beta, gamma,
    H, N, D, M, NC,
    C: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr,
    PHI: tl.constexpr, MASK: tl.constexpr, NORM: tl.constexpr, USE_D: tl.constexpr,
    IN_DOT: tl.constexpr, PHI_DOT: tl.constexpr, ACC_DOT: tl.constexpr, PRECISION: tl.constexpr,
    ROUND_ONLY: tl.constexpr,
):
    """Row b, value columns rm: ∇v_b = Σ_{i≥b} u(i−b)(φk_b·φq_i) g̃_i + u(L−1−b) φk_b Ŝ + β^{L−1−b} φk_b D̂,
    g̃_i = r_i g_i (r = γ/den where NORM, else 1)."""
    bh, chunk, im = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = bh // H, bh % H
    rm = im * BM + tl.arange(0, BM)
    pos, rows, inside, w_s, w_d = _chunk_end(u_ptr, p_ptr, chunk, N, C)
    keep = _keep(mask_ptr, b, smb, rows, inside, MASK)
    scores = tl.full((C, C), 0.0, tl.float32)
    acc = tl.full((C, BM), 0.0, tl.float32)
    for kd in range(0, D, BD):
        rd = kd + tl.arange(0, BD)
        fk = _mapped(_tile(k_ptr, b * skb + hh * skh, skn, rows, inside, rd, D), inside, rd, D, PHI) * keep[:, None]
        fq = _mapped(_tile(q_ptr, b * sqb + hh * sqh, sqn, rows, inside, rd, D), inside, rd, D, PHI)
        scores += _dot(fk, tl.trans(fq), PHI_DOT, PRECISION, ROUND_ONLY)
        state_mask = (rd[:, None] < D) & (rm[None, :] < M)
        state_off = ((bh * NC + chunk) * D + rd[:, None]) * M + rm[None, :]
        acc += _dot(fk * w_s[:, None], _state(s_ptr + state_off, state_mask),
                    ACC_DOT, PRECISION, ROUND_ONLY)
        if USE_D:
            d = _state(d_ptr + state_off, state_mask)
            acc += _dot(fk * w_d[:, None], d, ACC_DOT, PRECISION, ROUND_ONLY)
    weights, later = _lag_weights(u_ptr, pos, True)
    g = _tile(g_ptr, b * sgb + hh * sgh, sgn, rows, inside, rm, M)
    if NORM:
        g = g * (gamma / _rows(den_ptr, bh, N, rows, inside))[:, None]
    dv = _dot(scores * weights, g, ACC_DOT, PRECISION, ROUND_ONLY) + acc
    _store_rows(dv_ptr, bh, N, rows, inside, rm, M, dv)


@triton.jit
def _key_block(scores, acc, q_ptr, q_base, sqn, k_ptr, k_base, skn, s_ptr, d_ptr, state_row, rows, inside, keep,
               w_s, w_d, rd, rm, D, M,
               PHI: tl.constexpr, USE_D: tl.constexpr, PHI_DOT: tl.constexpr, ACC_DOT: tl.constexpr,
               PRECISION: tl.constexpr, ROUND_ONLY: tl.constexpr):
    """One feature block rd of ``dkv_kernel``: φ(K)φ(Q)ᵀ added to ``scores`` and u(L−1−b) φk_b Ŝ + β^{L−1−b} φk_b D̂
    (columns rm) to ``acc``, as ``dv_kernel`` does; returns them with φ(q) and the raw k of the block, which
    ∇k reads where rd is the program's own block."""
    k = _tile(k_ptr, k_base, skn, rows, inside, rd, D)
    fk = _mapped(k, inside, rd, D, PHI) * keep[:, None]
    fq = _mapped(_tile(q_ptr, q_base, sqn, rows, inside, rd, D), inside, rd, D, PHI)
    scores += _dot(fk, tl.trans(fq), PHI_DOT, PRECISION, ROUND_ONLY)
    state_mask = (rd[:, None] < D) & (rm[None, :] < M)
    state_off = (state_row + rd[:, None]) * M + rm[None, :]
    acc += _dot(fk * w_s[:, None], _state(s_ptr + state_off, state_mask),
                ACC_DOT, PRECISION, ROUND_ONLY)
    if USE_D:
        acc += _dot(fk * w_d[:, None], _state(d_ptr + state_off, state_mask),
                    ACC_DOT, PRECISION, ROUND_ONLY)
    return scores, acc, fq, k


@triton.jit
def _value_block(scores, acc, v_ptr, v_base, svn, g_ptr, g_base, sgn, s_ptr, d_ptr, state_row, rows, inside,
                 w_s, w_d, rd, rm, D, M,
                 USE_D: tl.constexpr, IN_DOT: tl.constexpr, ACC_DOT: tl.constexpr, PRECISION: tl.constexpr,
                 ROUND_ONLY: tl.constexpr):
    """One value block rm of ``dkv_kernel``: V Gᵀ added to ``scores`` and u(L−1−b) v_b Ŝᵀ + β^{L−1−b} v_b D̂ᵀ
    (feature columns rd) to ``acc``, as ``dk_kernel`` does."""
    v = _tile(v_ptr, v_base, svn, rows, inside, rm, M)
    g = _tile(g_ptr, g_base, sgn, rows, inside, rm, M)
    scores += _dot(v, tl.trans(g), IN_DOT, PRECISION, ROUND_ONLY)
    state_mask = (rm[:, None] < M) & (rd[None, :] < D)
    state_off = (state_row + rd[None, :]) * M + rm[:, None]  # (Ŝ)ᵀ: rows m, columns d
    acc += _dot(v * w_s[:, None], _state(s_ptr + state_off, state_mask),
                ACC_DOT, PRECISION, ROUND_ONLY)
    if USE_D:
        acc += _dot(v * w_d[:, None], _state(d_ptr + state_off, state_mask),
                    ACC_DOT, PRECISION, ROUND_ONLY)
    return scores, acc


@triton.jit
def dkv_kernel(
    q_ptr, sqb, sqh, sqn,
    k_ptr, skb, skh, skn,
    v_ptr, svb, svh, svn,
    g_ptr, sgb, sgh, sgn,
    mask_ptr, smb,
    s_ptr, d_ptr, z_ptr,  # adjoint boundary states (at each chunk's end): Ŝ, D̂ (BH, NC, D, M) and ẑ (BH, NC, D)
    den_ptr, h_ptr,
    dk_ptr, dv_ptr,  # (B, H, N, D) and (B, H, N, M) contiguous
    u_ptr, p_ptr, beta, gamma,
    H, N, D, M, NC,
    C: tl.constexpr, BD: tl.constexpr, BM: tl.constexpr,
    PHI: tl.constexpr, MASK: tl.constexpr, NORM: tl.constexpr, USE_D: tl.constexpr,
    IN_DOT: tl.constexpr, PHI_DOT: tl.constexpr, ACC_DOT: tl.constexpr, PRECISION: tl.constexpr,
    ROUND_ONLY: tl.constexpr,
):
    """∇k and ∇v of one chunk in one pass: program j writes ∇k's feature columns j·BD … and ∇v's value columns
    j·BM … (the grid has as many column blocks as the wider of the two), each the formula of ``dk_kernel`` and
    ``dv_kernel``:
        ∇φ(k_b) = Σ_{i≥b} (u(i−b) r_i (v_b·g_i) + h_i) φq_i + u(L−1−b) v_b Ŝᵀ + β^{L−1−b} v_b D̂ᵀ + ẑ,
        ∇v_b    = Σ_{i≥b} u(i−b) (φk_b·φq_i) r_i g_i + u(L−1−b) φk_b Ŝ + β^{L−1−b} φk_b D̂.
    ∇k needs the score tile V Gᵀ summed over every value block, ∇v the tile φ(K)φ(Q)ᵀ over every feature block;
    each block's tiles are loaded once. The value blocks come first; then the feature blocks, starting with the
    program's own, where ∇k is finished and stored, so that neither V Gᵀ nor that block's φ(q) and k is held
    through a loop; the own block of g, which ∇v multiplies last, is loaded again there (a cache hit) rather than
    held through both walks. Held, each spilled registers on sm_90 (the compile guard). With one block of each
    (D, M ≤ the tile) the sums are the two kernels' in their order; with more, the same sums started at the own
    block. A program with no ∇v columns (j·BM ≥ M) walks no other feature block, one with no ∇k columns no other
    value block: Performer's wide features then cost what they cost the two kernels."""
    bh, chunk, j = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    b, hh = bh // H, bh % H
    rd = j * BD + tl.arange(0, BD)  # this program's ∇k columns (none where j·BD ≥ D: loads and stores masked)
    rm = j * BM + tl.arange(0, BM)  # its ∇v columns
    pos, rows, inside, w_s, w_d = _chunk_end(u_ptr, p_ptr, chunk, N, C)
    keep = _keep(mask_ptr, b, smb, rows, inside, MASK)
    state_row = (bh * NC + chunk) * D
    q_base, k_base = b * sqb + hh * sqh, b * skb + hh * skh
    v_base, g_base = b * svb + hh * svh, b * sgb + hh * sgh
    # The other blocks, after the own one (j+1, j+2, … modulo the count): all of them where the program has no own
    # block, none where it has no columns of the gradient that needs them.
    n_d, n_m = (D + BD - 1) // BD, (M + BM - 1) // BM
    has_k, has_v = j < n_d, j < n_m
    other_d = tl.where(has_v, tl.where(has_k, n_d - 1, n_d), 0)
    other_m = tl.where(has_k, tl.where(has_v, n_m - 1, n_m), 0)

    vg = tl.full((C, C), 0.0, tl.float32)  # V Gᵀ, rows b, columns i
    acc_k = tl.full((C, BD), 0.0, tl.float32)
    vg, acc_k = _value_block(vg, acc_k, v_ptr, v_base, svn, g_ptr, g_base, sgn, s_ptr, d_ptr, state_row,
                             rows, inside, w_s, w_d, rd, rm, D, M, USE_D, IN_DOT, ACC_DOT, PRECISION, ROUND_ONLY)
    for t in range(0, other_m):
        km = ((j + 1 + t) % n_m) * BM
        vg, acc_k = _value_block(vg, acc_k, v_ptr, v_base, svn, g_ptr, g_base, sgn, s_ptr, d_ptr, state_row,
                                 rows, inside, w_s, w_d, rd, km + tl.arange(0, BM), D, M,
                                 USE_D, IN_DOT, ACC_DOT, PRECISION, ROUND_ONLY)
    weights, later = _lag_weights(u_ptr, pos, True)
    if NORM:
        r = gamma / _rows(den_ptr, bh, N, rows, inside)
        h = tl.where(inside, _rows(h_ptr, bh, N, rows, inside), 0.0)
        p = vg * weights * r[None, :] + tl.where(later, h[None, :], 0.0)
    else:
        p = vg * weights

    kq = tl.full((C, C), 0.0, tl.float32)  # φ(K)φ(Q)ᵀ, rows b, columns i
    acc_v = tl.full((C, BM), 0.0, tl.float32)
    kq, acc_v, fq, k = _key_block(kq, acc_v, q_ptr, q_base, sqn, k_ptr, k_base, skn, s_ptr, d_ptr, state_row,
                                  rows, inside, keep, w_s, w_d, rd, rm, D, M,
                                  PHI, USE_D, PHI_DOT, ACC_DOT, PRECISION, ROUND_ONLY)
    dfk = _dot(p, fq, ACC_DOT, PRECISION, ROUND_ONLY) + acc_k
    if NORM:
        # loaded here, not through _state: at bf16's 32 × 32 this kernel sits at 255 registers, and the call spilled
        # 12 B a thread (the compile guard, Triton 3.9)
        dfk = dfk + tl.load(z_ptr + (bh * NC + chunk) * D + rd, mask=rd < D, other=0.0).to(tl.float32)[None, :]
    _store_rows(dk_ptr, bh, N, rows, inside, rd, D, dfk * _phi_grad(k, PHI) * keep[:, None])
    for t in range(0, other_d):
        kd = ((j + 1 + t) % n_d) * BD
        kq, acc_v, _, _ = _key_block(kq, acc_v, q_ptr, q_base, sqn, k_ptr, k_base, skn, s_ptr, d_ptr, state_row,
                                     rows, inside, keep, w_s, w_d, kd + tl.arange(0, BD), rm, D, M,
                                     PHI, USE_D, PHI_DOT, ACC_DOT, PRECISION, ROUND_ONLY)
    g = _tile(g_ptr, g_base, sgn, rows, inside, rm, M)  # the own block again (see the docstring)
    if NORM:
        g = g * (gamma / _rows(den_ptr, bh, N, rows, inside))[:, None]  # g̃
    dv = _dot(kq * weights, g, ACC_DOT, PRECISION, ROUND_ONLY) + acc_v
    _store_rows(dv_ptr, bh, N, rows, inside, rm, M, dv)
