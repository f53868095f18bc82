"""Lean decode steps: one attention module's recurrent (or cached) step for one ``generate`` call.

The modules' ``step`` (:mod:`lra_kit.attention.modules`) is the readable form: three projections,
split heads, φ, the state update and readout of the paper's equation, merge heads, the output
projection — about 25 PyTorch operations a layer, each a fresh tensor. The classes here compute the
same numbers, bit for bit on the CPU, in a dozen operations on buffers allocated once per
``generate`` call:

* one projection for q, k and v (the three weight matrices concatenated once, at the start);
* φ of q and k in one call, into a buffer laid out (q|k, batch, heads, dim);
* the state update and the readout of the equation, written in place (``out=`` and ``add_``);
* no dropout (eval), no dtype round trips, no reshape that copies.

:class:`LinearStep` is the RNN of Katharopoulos et al. eqs. 16–20, :class:`MomentumStep` the
heavy-ball RNN of Nguyen et al. eq. 12. :class:`CacheStep` is softmax attention with its keys
and values in a cache preallocated to the sequence length and written in place (the papers'
"stateful softmax", Katharopoulos appendix §C.1).

Every buffer's shape is fixed for the whole call and nothing reads a value back to the host, so a
step can be captured once as a CUDA graph and replayed (:mod:`lra_kit.models.decode`). Each
operation is the one the module's step runs, with the same operands in the same order, which is
what makes the results equal bit for bit (``tests/test_models_decode.py``); the normaliser is
computed as ``(φ(q)·z).sum() + ε`` as there, not folded into the readout's matrix product, whose
summation order differs.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from lra_kit.attention.feature_maps import Elementwise, elu_plus_one
from lra_kit.attention.modules import KVCache, LinearAttention, MomentumAttention, SoftmaxAttention


def lean_supported(attn) -> bool:
    """Whether ``attn`` has a lean step here: causal linear (an element-wise φ), causal momentum (eq. 12, no
    ``compat``) or causal softmax, in float32/float64."""
    if not getattr(attn, "causal", False) or attn.W_q.weight.dtype not in (torch.float32, torch.float64):
        return False
    if type(attn) is SoftmaxAttention:
        return True
    if type(attn) is MomentumAttention and attn.compat is not None:
        return False
    return type(attn) in (LinearAttention, MomentumAttention) and isinstance(attn.feature_map, Elementwise)


def lean_step(attn, state, *, batch: int, length: int):
    """The lean step of ``attn`` (see :func:`lean_supported`), continuing from ``state`` (the module's state
    after the prompt); ``length`` is the whole sequence's, which sizes a key/value cache."""
    if not lean_supported(attn):
        raise ValueError(f"no lean step for {type(attn).__name__} (see lean_supported)")
    if type(attn) is SoftmaxAttention:
        return CacheStep(attn, state, batch=batch, length=length)
    if type(attn) is MomentumAttention:
        return MomentumStep(attn, state, batch=batch)
    return LinearStep(attn, state, batch=batch)


class _Projected:
    """The fused q/k/v projection and the output projection of a :class:`MultiheadAttention`.

    The three weight matrices are concatenated once, keeping their (out, in) layout, and used transposed as
    ``nn.Linear`` uses them: the fused product then equals the three separate ones bit for bit (each output
    column is the same dot product; measured at widths 16-256 and batches 1-64). A layout that moves v's columns
    off a multiple of the model width (say, a constant-1 channel per head appended to v, which would carry the
    normaliser z as one more column of s) changes the blocking of the product and, measured, the last bit of
    some values: this module keeps the modules' layout instead."""

    def __init__(self, attn, batch: int):
        H, D = attn.n_heads, attn.head_dim
        self.weight = torch.cat([attn.W_q.weight, attn.W_k.weight, attn.W_v.weight]).detach()
        self.bias = torch.cat([attn.W_q.bias, attn.W_k.bias, attn.W_v.bias]).detach()
        self.weight_t = self.weight.t()
        self.out_weight_t, self.out_bias = attn.W_o.weight.detach().t(), attn.W_o.bias.detach()
        self.B, self.H, self.D = batch, H, D
        self.qkv = self.weight.new_empty(batch, self.weight.shape[0])

    def project(self, x: torch.Tensor) -> None:
        torch.addmm(self.bias, x, self.weight_t, out=self.qkv)

    def output(self, out_flat: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.out_bias, out_flat, self.out_weight_t)


class _KernelStep(_Projected):
    """What the linear and momentum steps share: φ(q), φ(k) into one buffer, the readout, its normaliser."""

    def __init__(self, attn, batch: int):
        super().__init__(attn, batch)
        B, H, D = batch, self.H, self.D
        self.eps, self.fn = attn.eps, attn.feature_map.fn
        self.one_call = batch == 1 or (H * D) % 64 == 0
        self.qk = self.qkv[:, :2 * H * D].view(B, 2, H, D).transpose(0, 1)  # (q|k, batch, heads, dim)
        self.phi = self.qkv.new_empty(2, B, H, D)
        self.phi_q, self.phi_k = self.phi[0], self.phi[1]  # contiguous (B, H, D) each
        self.phi_q_rows, self.phi_k_col = self.phi_q.view(B * H, 1, D), self.phi_k[..., None]
        self.num = self.qkv.new_empty(B * H, 1, D)
        self.num_heads = self.num.view(B, H, D)
        self.qz = self.qkv.new_empty(B, H, D)
        self.den = self.qkv.new_empty(B, H, 1)
        self.out = self.qkv.new_empty(B, H, D)
        self.out_flat = self.out.view(B, H * D)

    def feature_map(self) -> None:
        """φ of q and k: elu(x) + 1 (eq. 7) written in place, or the map's own function.

        One call maps q and k of every batch row when that visits the values in the same runs as the modules'
        step, which maps q and k each as one contiguous (batch, heads, dim) block: ATen's CPU loops take a
        transcendental function's vectorised form on whole pairs of SIMD vectors and its scalar form on the rest
        of a run, and the two can differ in the last bit. Rows of a width divisible by 64 are whole pairs on
        every instruction set (32 floats on AVX-512); otherwise, with more than one row, q and k are copied into
        contiguous blocks and mapped one block at a time."""
        if self.fn is not elu_plus_one:
            self.phi.copy_(self.fn(self.qk))
        elif self.one_call:
            torch._C._nn.elu(self.qk, out=self.phi)
            self.phi.add_(1.0)
        else:
            self.phi.copy_(self.qk)
            F.elu_(self.phi_q)
            F.elu_(self.phi_k)
            self.phi.add_(1.0)

    def readout(self, s_rows: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """φ(q)ᵀs / (φ(q)·z + ε) (eq. 20; Nguyen eq. 12's v̂), then the output projection."""
        torch.bmm(self.phi_q_rows, s_rows, out=self.num)
        torch.mul(self.phi_q, z, out=self.qz)
        torch.sum(self.qz, -1, keepdim=True, out=self.den)
        self.den.add_(self.eps)
        torch.div(self.num_heads, self.den, out=self.out)
        return self.output(self.out_flat)


class LinearStep(_KernelStep):
    """Katharopoulos et al. eqs. 16–20: s_i = s_{i−1} + φ(k_i)v_iᵀ, z_i = z_{i−1} + φ(k_i), then the readout."""

    def __init__(self, attn: LinearAttention, state, *, batch: int):
        super().__init__(attn, batch)
        B, H, D = batch, self.H, self.D
        self.v = self.qkv[:, 2 * H * D:].view(B, H, 1, D)
        self.s, self.z = (t.detach().clone().contiguous() for t in state)
        self.s_rows = self.s.view(B * H, D, -1)
        self.outer = torch.empty_like(self.s)

    def __call__(self, x: torch.Tensor, ctx=None) -> torch.Tensor:
        self.project(x)
        self.feature_map()
        torch.mul(self.phi_k_col, self.v, out=self.outer)
        self.s.add_(self.outer)  # eq. 18
        self.z.add_(self.phi_k)  # eq. 19
        return self.readout(self.s_rows, self.z)

    def state(self):
        """The module's :class:`~lra_kit.attention.linear.LinearState` (copies)."""
        from lra_kit.attention.linear import LinearState

        return LinearState(self.s.clone(), self.z.clone())


class MomentumStep(_KernelStep):
    """Nguyen et al. eq. 12: m_i = βm_{i−1} − φ(k_i)v_iᵀ, s_i = s_{i−1} − γm_i, z_i = z_{i−1} + φ(k_i)."""

    def __init__(self, attn: MomentumAttention, state, *, batch: int):
        super().__init__(attn, batch)
        B, H, D = batch, self.H, self.D
        self.beta, self.gamma = attn.beta, attn.gamma
        self.v = self.qkv[:, 2 * H * D:].view(B, H, 1, D)
        self.s, self.m, self.z = (t.detach().clone().contiguous() for t in state)
        self.s_rows = self.s.view(B * H, D, -1)
        self.outer = torch.empty_like(self.s)

    def __call__(self, x: torch.Tensor, ctx=None) -> torch.Tensor:
        self.project(x)
        self.feature_map()
        self.m.mul_(self.beta)
        torch.mul(self.phi_k_col, self.v, out=self.outer)
        self.m.sub_(self.outer)  # m = βm − φ(k)vᵀ
        torch.mul(self.m, self.gamma, out=self.outer)
        self.s.sub_(self.outer)  # s = s − γm
        self.z.add_(self.phi_k)
        return self.readout(self.s_rows, self.z)

    def state(self):
        from lra_kit.attention.momentum import MomentumState

        return MomentumState(self.s.clone(), self.m.clone(), self.z.clone())


class CacheStep(_Projected):
    """Softmax attention with a key/value cache preallocated to ``length`` positions and written in place.

    Each step writes its key and value at position ``ctx.position`` (a one-element tensor) and attends over the
    first ``ctx.span`` positions: exactly the positions so far on the CPU (so the result is the module's, bit for
    bit), a fixed bucket on CUDA with ``ctx.mask`` hiding the positions not yet written (a captured graph has
    fixed shapes)."""

    def __init__(self, attn: SoftmaxAttention, state: KVCache, *, batch: int, length: int):
        super().__init__(attn, batch)
        B, H, D = batch, self.H, self.D
        n = state.k.shape[2]
        if n > length:
            raise ValueError(f"length ({length}) must be >= the cached positions ({n})")
        self.q = self.qkv[:, :H * D].view(B, H, 1, D)
        self.kv = self.qkv[:, H * D:].view(B, 2, H, 1, D)
        self.cache = self.qkv.new_empty(B, 2, H, length, D)
        self.cache[:, 0, :, :n], self.cache[:, 1, :, :n] = state.k, state.v
        self.keys, self.values = self.cache[:, 0], self.cache[:, 1]

    def __call__(self, x: torch.Tensor, ctx) -> torch.Tensor:
        self.project(x)
        self.cache.index_copy_(3, ctx.position, self.kv)
        out = F.scaled_dot_product_attention(self.q, self.keys[:, :, :ctx.span], self.values[:, :, :ctx.span],
                                             attn_mask=ctx.mask)
        return self.output(out.view(self.B, -1))

    def state(self, length: int) -> KVCache:
        """The module's :class:`~lra_kit.attention.modules.KVCache` of the first ``length`` positions (copies)."""
        return KVCache(self.keys[:, :, :length].clone(), self.values[:, :, :length].clone())


__all__ = ["CacheStep", "LinearStep", "MomentumStep", "lean_step", "lean_supported"]
