"""The Triton kernel of one generated position's attention: φ, the state update, the readout and the normaliser in
one launch per layer (the host side is :class:`lra_kit.attention.decode.FusedStep`).

For one (batch·head) and one block of value columns, with q, k, v the raw projections of the position read,

    linear (Katharopoulos et al. eqs. 18–20):   s ← s + φ(k)vᵀ
    momentum (Nguyen et al. eq. 12):             m ← βm − φ(k)vᵀ,   s ← s − γm
    both:                                        z ← z + φ(k),      out = φ(q)ᵀs / (φ(q)·z + ε)

with φ(x) = elu(x) + 1 (eq. 7). Each state element is read once and written once; φ, the products and the division
stay in registers. The ATen step of :mod:`lra_kit.attention.decode` computes the same numbers in five launches
(φ as elu and +1, the update, the readout, the division), each reading or writing the state or its neighbours.

The state is float32, (B·H, D, D) for s and m. Every column block keeps its own copy of z, (B·H, blocks, D), since
each needs φ(q)·z for its denominator and a block must not read a z that another block has already advanced.
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _phi(x, inside):
    """elu(x) + 1: x + 1 for x ≥ 0, eˣ below (the exponential of min(x, 0), so no overflow); 0 outside the head."""
    return tl.where(inside, tl.where(x >= 0, x + 1.0, tl.exp(tl.minimum(x, 0.0))), 0.0)


@triton.jit
def decode_step_kernel(
    qkv_ptr, stride_qkv,  # (B, 3·H·D): [q | k | v] of the position read
    s_ptr, m_ptr, z_ptr,  # float32, in place: s, m (B·H, D, D); z (B·H, blocks, D)
    out_ptr, stride_out,  # (B, ≥ H·D): the heads' outputs side by side
    eps, beta, gamma,
    H, D, blocks,
    BD: tl.constexpr, BV: tl.constexpr, MOMENTUM: tl.constexpr,
):
    bh = tl.program_id(0).to(tl.int64)
    block = tl.program_id(1)
    b, h = bh // H, bh % H
    rows = tl.arange(0, BD)
    cols = block * BV + tl.arange(0, BV)
    row_in, col_in = rows < D, cols < D
    head = qkv_ptr + b * stride_qkv + h * D
    q = tl.load(head + rows, mask=row_in, other=0.0).to(tl.float32)
    k = tl.load(head + H * D + rows, mask=row_in, other=0.0).to(tl.float32)
    v = tl.load(head + 2 * H * D + cols, mask=col_in, other=0.0)
    v = v.to(tl.float32)
    phi_q, phi_k = _phi(q, row_in), _phi(k, row_in)

    tile = bh * D * D + rows[:, None] * D + cols[None, :]
    tile_in = row_in[:, None] & col_in[None, :]
    s = tl.load(s_ptr + tile, mask=tile_in, other=0.0)
    outer = phi_k[:, None] * v[None, :]
    if MOMENTUM:
        m = beta * tl.load(m_ptr + tile, mask=tile_in, other=0.0) - outer
        tl.store(m_ptr + tile, m, mask=tile_in)
        s = s - gamma * m
    else:
        s = s + outer
    tl.store(s_ptr + tile, s, mask=tile_in)
    z_at = z_ptr + (bh * blocks + block) * D + rows
    z = tl.load(z_at, mask=row_in, other=0.0) + phi_k
    tl.store(z_at, z, mask=row_in)

    # tl.reduce, not tl.sum: the interpreted copy of this module cannot call
    # Triton's own @jit functions
    numerator = tl.reduce(phi_q[:, None] * s, 0, _add)
    denominator = tl.reduce(phi_q * z, 0, _add) + eps
    out = (numerator / denominator).to(out_ptr.dtype.element_ty)
    tl.store(out_ptr + b * stride_out + h * D + cols, out, mask=col_in)
