"""The causal op: one autograd Function for the causal product of linear and momentum attention, on either path.

    out_i = γ · [Σ_{j≤i} u(i−j) (φ(q_i)·φ(k_j)) v_j  +  read of the starting state] / (φ(q_i)·z_i + ε),
    z_i = z_0 + Σ_{j≤i} φ(k_j),        u(x) = Σ_{m=0}^{x} βᵐ = (1 − β^{x+1}) / (1 − β),

Katharopoulos et al. eq. 9 at β = 0, γ = 1, and Nguyen et al. eq. 13 at β > 0; without φ and without the
normaliser it is the bare weighted causal product (:func:`causal_product`). Its state after position t is
(s, d, z) of :mod:`lra_kit.attention.causal.state`.

Two paths compute it: the chunked PyTorch code (:mod:`lra_kit.attention.causal.chunked`; the reference and the CPU path)
and the Triton kernels (:mod:`lra_kit.attention.causal.triton.host`; CUDA tensors). :func:`_path` chooses one,
once, here; both take φ, the padding mask, the starting state and the normaliser the same way, inside the one
Function :class:`CausalProduct`, and both save for backward only the raw q, k, v, the mask, the output (when
normalised: its gradient is −(g·out)/den) and the states at segment starts — never φ(Q), φ(K) or per-position
states (Katharopoulos §3.3.1; φ is recomputed in backward through its own autograd, so any feature map works).
Sums and states are float32 for float16/bfloat16 inputs.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import torch
from torch.autograd.function import once_differentiable

from lra_kit.attention.causal import chunked
from lra_kit.attention.causal.chunking import DEFAULT_CHUNK_SIZE, prefix_sum
from lra_kit.attention.causal.state import CausalState
from lra_kit.attention.causal.triton import host
from lra_kit.attention.causal.triton import switch as gpu
from lra_kit.attention.precision import without_autocast

__all__ = ["DEFAULT_CHUNK_SIZE", "CausalProduct", "ProductState", "Spec", "causal_op", "causal_product", "prefix_sum",
           "triton_causal_product"]


class ProductState(NamedTuple):
    """The state of the bare product :func:`causal_product`: (s, d) of :mod:`lra_kit.attention.causal.state`,
    (batch, heads, dim, dim_v) each; ``d`` may be None (β = 0)."""

    s: torch.Tensor
    d: torch.Tensor | None


class Spec(NamedTuple):
    """What the op computes, apart from its tensors. ``phi=None``: q, k are already mapped; ``eps=None``: no
    normaliser (then ``gamma`` is unused); ``keep_d``: return the final d even at β = 0; ``triton``: the path."""

    phi: object
    beta: float
    gamma: float
    eps: float | None
    chunk_size: int
    final: bool
    keep_d: bool
    triton: bool
    out_dtype: torch.dtype  # of the output; :func:`causal_op` resolves the default (v's type) here, once


def _path(spec: Spec):
    return host if spec.triton else chunked


class CausalProduct(torch.autograd.Function):
    """The module docstring's formula, forward and backward, on the path ``spec.triton`` names.

    Inputs: q, k, v (B, H, N, ·), ``mask`` (B, N) bool, True at padded keys, or None, and the starting state
    s0, d0, z0 (each may be None). Outputs: out and the final s, d, z (None unless ``spec.final``).

    Saved for backward: q, k, v, the mask, the output when normalised, and the state at each segment start (a
    few (dim × dim_v) matrices per segment of 512 positions on the chunked path; the starting state on
    the Triton path). Nothing per chunk or position: backward recomputes the chunk states and φ."""

    @staticmethod
    @without_autocast
    def forward(ctx, spec, q, k, v, mask, s0, d0, z0):
        state = None if s0 is None else CausalState(s0, d0, z0)
        out, final, memo = _path(spec).forward(spec, q, k, v, mask, state, any(ctx.needs_input_grad))
        ctx.save_for_backward(q, k, v, mask, out if spec.eps is not None else None)
        ctx.spec, ctx.memo = spec, memo
        ctx.set_materialize_grads(False)  # None, not zeros, for an output the loss does not use
        return (out, *(final if final is not None else (None, None, None)))

    @staticmethod
    @once_differentiable
    @without_autocast
    def backward(ctx, grad, gs, gd, gz):
        q, k, v, mask, out = ctx.saved_tensors
        needs = ctx.needs_input_grad[1:4] + ctx.needs_input_grad[5:8]  # q, k, v, s0, d0, z0
        grad_final = None if gs is None and gd is None and gz is None else CausalState(gs, gd, gz)
        dq, dk, dv, start = _path(ctx.spec).backward(ctx.spec, q, k, v, mask, out, ctx.memo, grad, grad_final, needs)
        return (None, dq, dk, dv, None, *(g if need else None for g, need in zip(start, needs[3:], strict=True)))


@functools.cache
def _apply_outside_graph():
    """CausalProduct.apply outside torch.compile's graph (a graph break around the Triton kernels, which run as
    they do eagerly): Dynamo cannot trace Triton's interpreter (it fails on its numpy pointer arithmetic), and
    the compiled kernels inside a compiled graph are unmeasured — the GPU campaign (docs/gpu.md) tries them.
    Wrapped on first use: ``torch.compiler.disable`` imports Dynamo (and sympy, ~48 MB), which a CPU user never
    needs."""
    return torch.compiler.disable(CausalProduct.apply)


def causal_op(q, k, v, *, phi, beta, gamma, eps, chunk_size, key_padding_mask=None,
              initial_state: CausalState | None = None, output_final_state=False, keep_d=False, triton=None,
              out_dtype=None):
    """Run :class:`CausalProduct`; returns ``(out, CausalState or None)``. Arguments are trusted (the public
    functions check them). ``key_padding_mask`` (B, N), True at padding, goes to the path as it is: the chunked
    path turns it into a factor of its sums' type, the kernels read it. ``triton=None`` chooses the path: the
    Triton kernels where :func:`lra_kit.attention.causal.triton.available` says so (CUDA tensors), else the
    chunked PyTorch code."""
    triton = gpu.available(q) if triton is None else triton
    spec = Spec(phi, float(beta), float(gamma), None if eps is None else float(eps), chunk_size,
                bool(output_final_state), bool(keep_d or beta > 0.0), triton,
                v.dtype if out_dtype is None else out_dtype)
    s0, d0, z0 = (None, None, None) if initial_state is None else initial_state
    # Inside torch.compile the op stays outside the graph on both paths: the chunked path's workspace (buffers
    # reused across segments, written with out=) does not trace under inductor, and eager is what it measures.
    apply = _apply_outside_graph() if triton or torch.compiler.is_compiling() else CausalProduct.apply
    out, s, d, z = apply(spec, q, k, v, key_padding_mask, s0, d0, z0)
    return out, (CausalState(s, d, z) if output_final_state else None)


def _check_product(q, v, beta, chunk_size, initial_state):
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be in [0, 1), got {beta}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    if initial_state is None:
        return None
    s0, d0 = initial_state
    want = (*q.shape[:2], q.shape[-1], v.shape[-1])
    for name, t in (("s", s0), ("d", d0)):
        if t is not None and (not isinstance(t, torch.Tensor) or tuple(t.shape) != want):
            raise ValueError(f"initial_state.{name} must be a tensor of shape {want}")
    return CausalState(s0, d0, None)


def causal_product(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    beta: float = 0.0,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    initial_state: ProductState | tuple | None = None,
    output_final_state: bool = False,
) -> tuple[torch.Tensor, ProductState | None]:
    """out_i = Σ_{j≤i} u(i−j)(q_i·k_j) v_j with u(x) = Σ_{m≤x} βᵐ; β = 0 is the plain causal product (eq. 10).

    ``q, k`` are already feature-mapped, shapes (batch, heads, length, dim); ``v`` is
    (batch, heads, length, dim_v). O(length) memory in forward and backward. Returns ``(out, state)``:
    ``state`` is the :class:`ProductState` after the last position when ``output_final_state=True``, else None.
    ``initial_state`` = (s, d) (d may be None) continues an earlier product. States are float32 for
    float16/bfloat16 inputs.
    """
    state = _check_product(q, v, beta, chunk_size, initial_state)
    keep_d = state is not None and state.d is not None
    out, final = causal_op(q, k, v, phi=None, beta=beta, gamma=1.0, eps=None, chunk_size=chunk_size,
                           initial_state=state, output_final_state=output_final_state, keep_d=keep_d)
    return out, (None if final is None else ProductState(final.s, final.d))


def triton_causal_product(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    beta: float = 0.0,
    initial_state: tuple[torch.Tensor, torch.Tensor] | None = None,
    output_final_state: bool = False,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    out_dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor] | None]:
    """:func:`causal_product` held to the Triton path (whatever :func:`lra_kit.attention.causal.triton.available` says):
    out_i = Σ_{j≤i} u(i−j)(q_i·k_j) v_j (+ q_i·(s + β·u(i)·d) from ``initial_state=(s, d)``).

    float32, bfloat16 or float16, states accumulated in float32; ``chunk_size`` a power of two ≥ 16. Returns
    ``(out, (s, d))`` with the float32 final state when ``output_final_state``, else ``(out, None)``; ``out`` has
    dtype ``out_dtype`` (default that of ``v``; an unnormalised numerator in float16 overflows within a few
    thousand positions). Differentiable in q, k, v, the initial state and the final state; O(length) memory.
    """
    _check_triton(q, k, v, beta, initial_state, chunk_size)
    if out_dtype is not None and out_dtype not in gpu.SUPPORTED_DTYPES:
        raise TypeError(f"out_dtype must be float32, bfloat16 or float16, got {out_dtype}")
    state = None if initial_state is None else CausalState(initial_state[0], initial_state[1], None)
    out, final = causal_op(q, k, v, phi=None, beta=beta, gamma=1.0, eps=None, chunk_size=chunk_size,
                           initial_state=state, output_final_state=output_final_state, keep_d=True, triton=True,
                           out_dtype=out_dtype)
    return out, (None if final is None else (final.s, final.d))


def _check_triton(q, k, v, beta, initial_state, chunk_size) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"{name} must be a tensor of shape (batch, heads, length, dim)")
        if t.dtype not in gpu.SUPPORTED_DTYPES:
            raise TypeError(f"{name} must be float32, bfloat16 or float16 for the Triton path, got {t.dtype}")
    if q.shape != k.shape:
        raise ValueError(f"q and k must have the same shape, got {tuple(q.shape)} and {tuple(k.shape)}")
    if v.shape[:3] != k.shape[:3]:
        raise ValueError(f"v must be (batch, heads, length, dim_v) like k, got {tuple(v.shape)} and {tuple(k.shape)}")
    if not q.dtype == k.dtype == v.dtype:
        raise TypeError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError("q, k, v must be on the same device")
    if q.shape[2] < 1:
        raise ValueError("sequences must have length >= 1")
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be a float in [0, 1), got {beta!r}")
    if not isinstance(chunk_size, int) or chunk_size < 16 or chunk_size & (chunk_size - 1):
        raise ValueError(f"chunk_size must be a power of two >= 16, got {chunk_size!r}")
    if initial_state is not None:
        if not (isinstance(initial_state, (tuple, list)) and len(initial_state) == 2):
            raise TypeError("initial_state must be a pair (s, d) of tensors")
        want = (*q.shape[:2], q.shape[3], v.shape[3])
        for name, t in zip(("s", "d"), initial_state, strict=False):
            if not isinstance(t, torch.Tensor) or tuple(t.shape) != want:
                got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
                raise ValueError(f"initial_state {name} must have shape (batch, heads, dim, dim_v) = {want}, got {got}")
            if t.device != q.device:
                raise ValueError(f"initial_state {name} must be on {q.device}, got {t.device}")
