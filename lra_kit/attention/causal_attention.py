"""Normalised causal kernel attention — linear (Katharopoulos eq. 9) and momentum (Nguyen eq. 13) — as
one autograd Function, for speed and memory.

    out_i = γ · [Σ_{j≤i} u(i−j) (φ(q_i)·φ(k_j)) v_j  +  read of the starting state] / (φ(q_i)·z_i + ε),
    z_i = z_0 + Σ_{j≤i} φ(k_j),

u as in :mod:`lra_kit.attention.causal_product` (β = 0, γ = 1: linear attention). The numerator is the
causal product of that module, whose segment functions ``_forward`` / ``_backward`` also take the
normaliser (``Normaliser``): its in-chunk part Σ_{j≤i} φ(q_i)·φ(k_j) is a row sum of the masked score
matrix the numerator already forms, and its gradient rides in the same chunk products; only the
running sum z at the chunk starts is extra (a few numbers per chunk).

What autograd would otherwise keep, and this Function does not: φ(Q), φ(K) (recomputed in backward,
through φ's own autograd, so any feature map works), the masked copies of K and V, a ones column
concatenated to V for the normaliser, per-chunk states and full-length temporaries (every pass runs
segment by segment). Saved for backward: the raw q, k, v, the key-padding mask, the output (the
caller holds it anyway; the normaliser's gradient is −(g·out)/den) and the state at each segment
start (a few (dim × dim_v) matrices per segment of about n/16 positions; none per chunk or position).
Sums and states are float32 for float16/bfloat16 inputs: the normaliser of a few thousand keys
overflows float16.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch
from torch.autograd.function import once_differentiable

from lra_kit.attention import triton as gpu
from lra_kit.attention.causal_product import (
    Normaliser,
    ProductState,
    _backward,
    _final_state_gradient,
    _forward,
    _initial_state_gradient,
    compute_dtype,
    prefix_sum,
    segments,
    without_autocast,
)


class KernelState(NamedTuple):
    """The causal product's state (s, d) and the normaliser's running sum z (B, H, D); d may be None."""

    s: torch.Tensor
    d: torch.Tensor | None
    z: torch.Tensor


def _mapped(q, k, v, keep, phi, dtype):
    """φ(q), φ(k)·keep, v·keep in the compute dtype: padded keys add nothing to any sum."""
    return _masked(phi.queries(q), phi.keys(k), v, keep, dtype)


def _masked(fq, fk, v, keep, dtype):
    fq, fk, v = fq.to(dtype), fk.to(dtype), v.to(dtype)
    if keep is not None:
        fk, v = fk * keep, v * keep
    return fq, fk, v


def _normaliser(fq, fk, z0, chunk_size, eps):
    """den_i = φ(q_i)·z_i + ε with z_i = z_0 + Σ_{j≤i} φ(k_j); also z at the segment's end."""
    z = prefix_sum(fk, chunk_size)
    if z0 is not None:
        z = z + z0[:, :, None]
    return (fq * z).sum(-1, keepdim=True) + eps, z


class CausalKernelAttention(torch.autograd.Function):
    """out = γ·CausalProduct(φ(q), φ(k), v) / normaliser, forward and backward segment by segment (module docstring)."""

    @staticmethod
    @without_autocast
    def forward(ctx, q, k, v, keep, s0, d0, z0, phi, beta, gamma, eps, chunk_size, final, keep_d):
        dtype = compute_dtype(q.dtype)
        B, H, N, _ = q.shape
        state = None if s0 is None else ProductState(s0, d0)
        z, starts, parts = z0, [], segments(N, chunk_size)
        # One segment: its result is the output (no copy). Several: each is written into place as it comes.
        out = None if len(parts) == 1 else torch.empty(B, H, N, v.shape[-1], dtype=v.dtype, device=v.device)
        for sl in parts:
            starts.append((state, z))
            ks = None if keep is None else keep[:, None, sl, None]
            fq, fk, vs = _mapped(q[:, :, sl], k[:, :, sl], v[:, :, sl], ks, phi, dtype)
            part, state, z = _forward(fq, fk, vs, beta, chunk_size, state, keep_d, Normaliser(z, eps, gamma))
            if out is None:
                out = part.to(v.dtype).contiguous()
            else:
                out[:, :, sl] = part
            del fq, fk, vs, part
        ctx.save_for_backward(q, k, v, keep, out)
        ctx.starts, ctx.phi, ctx.beta, ctx.gamma, ctx.eps, ctx.chunk_size = starts, phi, beta, gamma, eps, chunk_size
        ctx.has_d = d0 is not None
        if not final:
            return out
        ctx.final_has_d = state.d is not None
        return out, state.s, state.d, z

    @staticmethod
    @once_differentiable
    @without_autocast
    def backward(ctx, grad, *grad_final):
        q, k, v, keep, out = ctx.saved_tensors
        needs = ctx.needs_input_grad
        dtype, beta, gamma, C = compute_dtype(q.dtype), ctx.beta, ctx.gamma, ctx.chunk_size
        final, gz = None, None
        if grad_final:
            final = ProductState(grad_final[0], grad_final[1] if ctx.final_has_d else None)
            gz = grad_final[2]
        n, parts, later = q.shape[2], segments(q.shape[2], C), None
        grads = [torch.empty_like(t) if need and len(parts) > 1 else None for t, need in zip((q, k, v), needs[:3],
                                                                                          strict=False)]
        for i in range(len(parts) - 1, -1, -1):
            sl, (start, z0) = parts[i], ctx.starts[i]
            ks = None if keep is None else keep[:, None, sl, None]
            with torch.enable_grad():
                qs, kk = (t[:, :, sl].detach().requires_grad_(need) for t, need in ((q, needs[0]), (k, needs[1])))
                phi_q, phi_k = ctx.phi.queries(qs), ctx.phi.keys(kk)
            fq, fk, vs = _mapped_detached(phi_q, phi_k, v[:, :, sl], ks, dtype)
            norm = Normaliser(z0, ctx.eps, gamma, out[:, :, sl].to(dtype), gz)
            dfq, dfk, dvs, later, gz = _backward(fq, fk, vs, grad[:, :, sl].to(dtype), beta, C, needs[:3], start,
                                                 later, norm)
            if final is not None:
                to_end = torch.arange(n - 1 - sl.start, n - 1 - sl.stop, -1, device=q.device, dtype=dtype)[:, None]
                _final_state_gradient(dfk, dvs, fk, vs, beta, final, to_end)
            if dfk is not None and ks is not None:
                dfk *= ks
            if dvs is not None and ks is not None:
                dvs *= ks
            parts_grads = (*_phi_backward(phi_q, phi_k, qs, kk, dfq, dfk), dvs)
            for i_grad, (full, part, like) in enumerate(zip(grads, parts_grads, (q, k, v), strict=True)):
                if part is None or not needs[i_grad]:
                    continue
                if len(parts) == 1:  # one segment: its gradient is the gradient (no copy)
                    grads[i_grad] = part.to(like.dtype)
                else:
                    full[:, :, sl] = part
            del dfq, dfk, dvs, parts_grads
        dq, dk, dv = grads
        initial = _initial_state_gradient(later, beta, n, final) if any(needs[4:6]) else None
        ds0 = initial.s if needs[4] else None
        dd0 = initial.d if (needs[5] and ctx.has_d) else None
        dz0 = gz if needs[6] else None
        return dq, dk, dv, None, ds0, dd0, dz0, None, None, None, None, None, None, None


def _mapped_detached(phi_q, phi_k, v, keep, dtype):
    return _masked(phi_q.detach(), phi_k.detach(), v, keep, dtype)


def _phi_backward(phi_q, phi_k, qs, ks, dfq, dfk):
    """Chain rule through φ, recomputed for this segment: (dq, dk) = (φ'(q)·∇φ(q), φ'(k)·∇φ(k)), None where not
    asked for."""
    outputs, grads, inputs, slots = [], [], [], []
    result = [None, None]
    for slot, (phi_x, d_phi, x) in enumerate(((phi_q, dfq, qs), (phi_k, dfk, ks))):
        if d_phi is None:
            continue
        if phi_x.requires_grad:
            outputs.append(phi_x)
            grads.append(d_phi.to(phi_x.dtype))
            inputs.append(x)
            slots.append(slot)
        else:  # φ does not depend on its input (a constant map)
            result[slot] = torch.zeros_like(x)
    if outputs:
        # The vector-Jacobian product as the gradient of the scalar Σ φ(x)·∇φ (∇φ a constant): the same numbers as
        # torch.autograd.grad(outputs, inputs, grads), but without tensor grad_outputs, for which PyTorch 2.x
        # imports torch.fx's symbolic shapes (sympy: ~48 MB resident) on the first call of a process.
        with torch.enable_grad():  # backward runs with grad mode off; this product must join φ's graph
            total = sum((out * g).sum() for out, g in zip(outputs, grads, strict=True))
        for slot, x, g in zip(slots, inputs, torch.autograd.grad(total, inputs, allow_unused=True), strict=True):
            result[slot] = torch.zeros_like(x) if g is None else g
    return result


def causal_kernel_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    phi: Callable[[torch.Tensor], torch.Tensor],
    *,
    beta: float,
    gamma: float,
    eps: float,
    chunk_size: int,
    keep: torch.Tensor | None = None,
    initial_state: KernelState | None = None,
    output_final_state: bool = False,
    keep_d: bool = False,
):
    """The module docstring's formula for raw q, k, v (B, H, N, ·); ``keep`` is float (B, N), 1 for real keys.

    Arguments are trusted (the public functions check them). With ``output_final_state`` returns
    ``(out, KernelState)``; ``keep_d`` asks for the decayed state d even at β = 0.
    """
    if gpu.available(q):
        return _triton_kernel_attention(q, k, v, phi, beta=beta, gamma=gamma, eps=eps, chunk_size=chunk_size,
                                        keep=keep, initial_state=initial_state,
                                        output_final_state=output_final_state)
    s0 = d0 = z0 = None
    if initial_state is not None:
        s0, d0, z0 = initial_state
    final = bool(output_final_state)
    result = CausalKernelAttention.apply(q, k, v, keep, s0, d0, z0, phi, float(beta), float(gamma), float(eps),
                                         chunk_size, final, keep_d or beta > 0.0)
    if final:
        out, s, d, z = result
        return out, KernelState(s, d, z)
    return result


def _triton_kernel_attention(q, k, v, phi, *, beta, gamma, eps, chunk_size, keep, initial_state, output_final_state):
    """The same formula on the GPU path: φ and the normaliser in PyTorch (autograd), the causal product in
    Triton (:func:`lra_kit.attention.triton.triton_causal_product`, states in float32). Its state pair
    (s, d) is the one of :mod:`lra_kit.attention.causal_product`; at β = 0, d is the newest k vᵀ."""
    dtype = compute_dtype(q.dtype)
    fq, fk, vv = _mapped(q, k, v, None if keep is None else keep[:, None, :, None], phi, dtype)
    product_state = None
    if initial_state is not None:
        s0, d0, _ = initial_state
        product_state = (s0, torch.zeros_like(s0) if d0 is None else d0)
    # The kernel tiles chunks of a power-of-two size ≥ 16; other sizes fall back to its default.
    size = chunk_size if chunk_size >= 16 and chunk_size & (chunk_size - 1) == 0 else 64
    # The numerator comes back in float32 (``dtype``): unnormalised, it outgrows float16's 65504 within a few
    # thousand positions (Σ_j (φ(q_i)·φ(k_j)) v_j grows with i), while the normalised output does not.
    result = gpu.triton_causal_product(fq.to(q.dtype), fk.to(q.dtype), vv.to(v.dtype), beta,
                                       initial_state=product_state, output_final_state=output_final_state,
                                       chunk_size=size, out_dtype=dtype)
    numerator, (s, d) = result if output_final_state else (result, (None, None))
    z0 = None if initial_state is None else initial_state.z
    den, z = _normaliser(fq, fk, z0, chunk_size, eps)
    out = (gamma * numerator / den).to(v.dtype)
    if output_final_state:
        return out, KernelState(s, d, z[:, :, -1])
    return out
