"""Lean decode steps: one attention module's recurrent (or cached) step for one ``generate`` call.

The modules' ``step`` (:mod:`lra_kit.attention.modules`) is the readable form: three projections,
split heads, φ, the state update and readout of the paper's equation, merge heads, the output
projection — about 25 PyTorch operations a layer, each a fresh tensor. The classes here compute the
same quantities in a handful of fused operations on buffers allocated once per ``generate`` call.

For the RNNs (Katharopoulos et al. eqs. 16–20; Nguyen et al. eq. 12) the trick is one extra
feature and one extra value column per head, set up once in the projection's weights:

* v gets a constant 1 appended (a zero weight row, bias 1), so the outer product φ(k)[v 1]ᵀ updates
  the attention memory s and the normaliser z = Σ φ(k) together: the state is one (D+1) × (D+1)
  matrix per head, ``[[s, z], [0, ε]]``;
* q gets a feature whose φ is 1 (a zero weight row, bias 0: elu(0) + 1 = 1), so the readout
  φ(q)ᵀ[s z] + [0 ε] — numerator and denominator φ(q)·z + ε together — is one batched product;
* k gets a feature whose φ is 0 (bias −∞: elu(−∞) + 1 = 0), so the update leaves the ε row as it is.

A layer's attention is then: the q/k/v projection, φ (elu, +1), the state update (one ``baddbmm``),
the readout (one ``bmm``), the division, and the output projection, whose bias rides on a constant-1
column of the readout's buffer and which adds the residual in the same product. Each of these is the
paper's arithmetic in another order of summation, so the numbers equal the modules' to rounding (the
tests check the states and hidden states to 1e-5 and the tokens exactly).

:class:`LinearStep` is the RNN of Katharopoulos et al. eqs. 16–20, :class:`MomentumStep` the
heavy-ball RNN of Nguyen et al. eq. 12. :class:`CacheStep` is softmax attention with its keys
and values in a cache preallocated to the sequence length and written in place (the papers'
"stateful softmax", Katharopoulos appendix §C.1).

:class:`FusedStep` is the GPU's form of the two RNN steps: the q/k/v projection, then one Triton kernel
(:mod:`lra_kit.attention.causal.triton.decode_kernels`) for φ, the update, the readout and the division, then the
output projection: three launches a layer where the ATen step needs seven, and each state element read and
written once. :func:`lean_step` chooses it wherever the causal op would take its Triton path (a CUDA tensor with
Triton installed, or ``LRA_KIT_TRITON=interpret``: Triton's interpreter on the CPU, for the tests) for float32
and φ = elu + 1; the ATen step stays the CPU path and the oracle the tests hold it to.

Every buffer's shape is fixed for the whole call and nothing reads a value back to the host, so a
step can be captured once as a CUDA graph and replayed (:mod:`lra_kit.models.decode`).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from lra_kit.attention.causal.triton.decode_tile import MAX_WIDTH, fused_tile
from lra_kit.attention.causal.triton.switch import available, interpreter_problem, kernels_for
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


def fused_supported(attn) -> bool:
    """Whether ``attn`` runs as a :class:`FusedStep`: causal linear or momentum attention with φ = elu + 1 in float32,
    heads at most ``MAX_WIDTH`` (256) wide, on a device where the causal op takes its Triton path
    (``LRA_KIT_TRITON``, :mod:`lra_kit.attention.causal.triton`)."""
    weight = attn.W_q.weight
    if not lean_supported(attn) or type(attn) is SoftmaxAttention or attn.feature_map.fn is not elu_plus_one:
        return False
    if attn.head_dim > MAX_WIDTH:
        return False
    if weight.dtype != torch.float32 or not available(weight):
        return False
    return weight.is_cuda or interpreter_problem() is None


def lean_step(attn, state, *, batch: int, length: int):
    """The lean step of ``attn`` (see :func:`lean_supported`), continuing from ``state`` (the module's state
    after the prompt); ``length`` is the whole sequence's, which sizes a key/value cache. The RNNs run fused
    (:class:`FusedStep`) where :func:`fused_supported` says so."""
    if not lean_supported(attn):
        raise ValueError(f"no lean step for {type(attn).__name__} (see lean_supported)")
    if type(attn) is SoftmaxAttention:
        return CacheStep(attn, state, batch=batch, length=length)
    if fused_supported(attn):
        return FusedStep(attn, state, batch=batch)
    if type(attn) is MomentumAttention:
        return MomentumStep(attn, state, batch=batch)
    return LinearStep(attn, state, batch=batch)


def with_bias_row(weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """[Wᵀ; bᵀ] (in + 1, out): ``[x 1] @ with_bias_row(W, b)`` is ``x Wᵀ + b``, so a buffer whose last column
    is a constant 1 carries a Linear's bias into the product, and ``addmm(r, [x 1], ·)`` adds a residual r too."""
    return torch.cat([weight.detach().t(), bias.detach()[None]])


def _qkv_projection(attn, batch: int):
    """W_q, W_k, W_v as one product: (the stacked weights transposed, their biases, the (batch, 3·H·D) buffer it
    writes [q | k | v] into)."""
    weight = torch.cat([attn.W_q.weight, attn.W_k.weight, attn.W_v.weight]).detach()
    bias = torch.cat([attn.W_q.bias, attn.W_k.bias, attn.W_v.bias]).detach()
    return weight.t(), bias, weight.new_empty(batch, weight.shape[0])


class _Output:
    """The output projection W_o (+ b_o), reading a (batch, H·D + 1) buffer whose last column is 1: with a
    residual r, ``r + out W_oᵀ + b_o`` in one product; without, ``out W_oᵀ + b_o``."""

    def __init__(self, attn, batch: int, width: int):
        self.weight_aug = with_bias_row(attn.W_o.weight, attn.W_o.bias)
        self.weight_t, self.bias = attn.W_o.weight.detach().t(), attn.W_o.bias.detach()
        self.buffer = self.weight_aug.new_ones(batch, width + 1)
        self.values = self.buffer[:, :width]

    def __call__(self, residual: torch.Tensor | None) -> torch.Tensor:
        if residual is None:
            return torch.addmm(self.bias, self.values, self.weight_t)
        return torch.addmm(residual, self.buffer, self.weight_aug)


class _KernelStep:
    """What the linear and momentum steps share (module docstring): the projection into (q | k | v) blocks of
    D + 1 per head, φ, the readout with its normaliser, the output projection."""

    def __init__(self, attn, batch: int):
        H, D = attn.n_heads, attn.head_dim
        F1 = D + 1
        self.B, self.H, self.D, self.eps = batch, H, D, attn.eps
        self.fn = attn.feature_map.fn
        self.elu = self.fn is elu_plus_one
        zero_row = attn.W_q.weight.new_zeros(1, attn.W_q.weight.shape[1])
        blocks, biases = [], []
        # per head: q (D) and its constant feature, k (D) and its, v (D) and its constant 1
        extras = {"q": 0.0, "k": float("-inf"), "v": 1.0}
        for h in range(H):
            rows = slice(h * D, (h + 1) * D)
            for name, proj in (("q", attn.W_q), ("k", attn.W_k), ("v", attn.W_v)):
                blocks += [proj.weight.detach()[rows], zero_row]
                biases += [proj.bias.detach()[rows], zero_row.new_full((1,), extras[name])]
        self.weight_t = torch.cat(blocks).t()  # (d, H·3(D+1))
        self.bias = torch.cat(biases)
        self.qkv = self.bias.new_empty(batch, H * 3 * F1)
        per_head = self.qkv.view(batch * H, 3, F1)
        self.qk, self.v_row = per_head[:, :2], per_head[:, 2:3]  # (BH, 2, D+1), (BH, 1, D+1)
        self.phi = self.qkv.new_empty(batch * H, 2, F1)
        self.phi_q, self.phi_k_col = self.phi[:, 0:1], self.phi[:, 1, :, None]  # (BH, 1, D+1), (BH, D+1, 1)
        # the state [[s, z], [0, ε]] per head
        self.state = self.qkv.new_zeros(batch * H, F1, F1)
        self.state[:, D, D] = self.eps
        self.s, self.z = self.state[:, :D, :D], self.state[:, :D, D]
        self.num = self.qkv.new_empty(batch * H, 1, F1)
        num = self.num.view(batch, H, 1, F1)
        self.numerator, self.denominator = num[..., :D], num[..., D:]
        self.out = _Output(attn, batch, H * D)
        self.out_heads = self.out.values.view(batch, H, 1, D)

    def load(self, s: torch.Tensor, z: torch.Tensor) -> None:
        """Continue from the module's s (B, H, D, D) and z (B, H, D)."""
        self.s.copy_(s.reshape(self.B * self.H, self.D, self.D))
        self.z.copy_(z.reshape(self.B * self.H, self.D))

    def feature_map(self) -> None:
        """φ of q and k with their constant features (eq. 7: elu(x) + 1, in place), or the map's own function
        (whose values at the constant features are then set: 1 for q, 0 for k)."""
        if self.elu:
            torch._C._nn.elu(self.qk, out=self.phi)
            self.phi.add_(1.0)
        else:
            self.phi.copy_(self.fn(self.qk))
            self.phi[:, :, self.D] = self.phi.new_tensor([1.0, 0.0])

    def readout(self, residual: torch.Tensor | None) -> torch.Tensor:
        """φ(q)ᵀs / (φ(q)·z + ε) (eq. 20; Nguyen eq. 12's v̂), then the output projection (+ the residual)."""
        torch.bmm(self.phi_q, self.state, out=self.num)
        torch.div(self.numerator, self.denominator, out=self.out_heads)
        return self.out(residual)

    def _reshaped(self, t: torch.Tensor) -> torch.Tensor:
        return t.reshape(self.B, self.H, *t.shape[1:]).clone()


class LinearStep(_KernelStep):
    """Katharopoulos et al. eqs. 16–20: s_i = s_{i−1} + φ(k_i)v_iᵀ and z_i = z_{i−1} + φ(k_i) in one outer
    product (φ(k_i)[v_i 1]ᵀ), then the readout."""

    def __init__(self, attn: LinearAttention, state, *, batch: int):
        super().__init__(attn, batch)
        self.load(*state)

    def __call__(self, x: torch.Tensor, ctx=None, residual: torch.Tensor | None = None) -> torch.Tensor:
        torch.addmm(self.bias, x, self.weight_t, out=self.qkv)
        self.feature_map()
        self.state.baddbmm_(self.phi_k_col, self.v_row)  # eqs. 18-19
        return self.readout(residual)

    def state_tuple(self):
        """The module's :class:`~lra_kit.attention.linear.LinearState` (copies)."""
        from lra_kit.attention.linear import LinearState

        return LinearState(self._reshaped(self.s), self._reshaped(self.z))


class MomentumStep(_KernelStep):
    """Nguyen et al. eq. 12: m_i = βm_{i−1} − φ(k_i)v_iᵀ, s_i = s_{i−1} − γm_i, z_i = z_{i−1} + φ(k_i)."""

    def __init__(self, attn: MomentumAttention, state, *, batch: int):
        super().__init__(attn, batch)
        s, m, z = state
        self.load(s, z)
        self.beta, self.gamma = attn.beta, attn.gamma
        self.m = self.qkv.new_zeros(batch * self.H, self.D + 1, self.D)  # row D (k's constant feature) stays 0
        self.m[:, :self.D].copy_(m.reshape(batch * self.H, self.D, self.D))
        self.m_into_s = self.state[:, :, :self.D]
        self.z_col, self.v = self.state[:, :, self.D:], self.v_row[..., :self.D]

    def __call__(self, x: torch.Tensor, ctx=None, residual: torch.Tensor | None = None) -> torch.Tensor:
        torch.addmm(self.bias, x, self.weight_t, out=self.qkv)
        self.feature_map()
        self.m.baddbmm_(self.phi_k_col, self.v, beta=self.beta, alpha=-1.0)  # m = βm − φ(k)vᵀ
        self.m_into_s.add_(self.m, alpha=-self.gamma)  # s = s − γm
        self.z_col.add_(self.phi_k_col)  # z = z + φ(k)
        return self.readout(residual)

    def state_tuple(self):
        from lra_kit.attention.momentum import MomentumState

        return MomentumState(self._reshaped(self.s), self._reshaped(self.m[:, :self.D]), self._reshaped(self.z))


class FusedStep:
    """Linear (Katharopoulos et al. eqs. 18–20) or momentum (Nguyen et al. eq. 12) attention at one position: the
    q/k/v projection, one Triton kernel for φ, the state update, the readout and the normaliser
    (:func:`~lra_kit.attention.causal.triton.decode_kernels.decode_step_kernel`), the output projection.

    The state is float32: s (and m) (B·H, D, D), and z once per column block of the kernel, (B·H, blocks, D)."""

    launched = 0  # kernels launched by every FusedStep so far: the generation benchmark counts them per pixel

    def __init__(self, attn, state, *, batch: int):
        H, D = attn.n_heads, attn.head_dim
        self.B, self.H, self.D, self.eps = batch, H, D, float(attn.eps)
        self.momentum = type(attn) is MomentumAttention
        self.beta, self.gamma = (float(attn.beta), float(attn.gamma)) if self.momentum else (0.0, 1.0)
        self.weight_t, self.bias, self.qkv = _qkv_projection(attn, batch)
        self.tile = fused_tile(D)
        s, z = state.s, state.z
        self.s = s.reshape(batch * H, D, D).to(torch.float32, copy=True).contiguous()
        self.z = z.reshape(batch * H, 1, D).to(torch.float32).repeat(1, self.tile.blocks, 1)  # a copy, as s and m are
        self.m = state.m.reshape(batch * H, D, D).to(torch.float32, copy=True).contiguous() if self.momentum else self.s
        self.out = _Output(attn, batch, H * D)
        self.kernel = kernels_for(self.qkv, "decode_kernels").decode_step_kernel
        self.grid = (batch * H, self.tile.blocks)

    def __call__(self, x: torch.Tensor, ctx=None, residual: torch.Tensor | None = None) -> torch.Tensor:
        torch.addmm(self.bias, x, self.weight_t, out=self.qkv)
        self.kernel[self.grid](self.qkv, self.qkv.stride(0), self.s, self.m, self.z,
                               self.out.buffer, self.out.buffer.stride(0), self.eps, self.beta, self.gamma,
                               self.H, self.D, self.tile.blocks, BD=self.tile.rows, BV=self.tile.cols,
                               MOMENTUM=self.momentum, num_warps=self.tile.warps)
        FusedStep.launched += 1
        return self.out(residual)

    def state_tuple(self):
        """The module's :class:`~lra_kit.attention.linear.LinearState` or
        :class:`~lra_kit.attention.momentum.MomentumState` (copies)."""
        from lra_kit.attention.linear import LinearState
        from lra_kit.attention.momentum import MomentumState

        shape = (self.B, self.H, self.D, self.D)
        s, z = self.s.reshape(shape).clone(), self.z[:, 0].reshape(shape[:3]).clone()
        return MomentumState(s, self.m.reshape(shape).clone(), z) if self.momentum else LinearState(s, z)


class CacheStep:
    """Softmax attention with a key/value cache preallocated to ``length`` positions and written in place.

    Each step writes its key and value at position ``ctx.position`` (a one-element tensor) and attends over the
    first ``ctx.span`` positions: exactly the positions so far on the CPU, a fixed bucket on CUDA with
    ``ctx.mask`` hiding the positions not yet written (a captured graph has fixed shapes)."""

    def __init__(self, attn: SoftmaxAttention, state: KVCache, *, batch: int, length: int):
        H, D = attn.n_heads, attn.head_dim
        self.B, self.H, self.D = batch, H, D
        n = state.k.shape[2]
        if n > length:
            raise ValueError(f"length ({length}) must be >= the cached positions ({n})")
        self.weight_t, self.bias, self.qkv = _qkv_projection(attn, batch)
        self.q = self.qkv[:, :H * D].view(batch, H, 1, D)
        self.kv = self.qkv[:, H * D:].view(batch, 2, H, 1, D)
        # zeros, not empty: a captured step attends over a masked bucket, and a weight of 0 times a NaN left in
        # unwritten memory is NaN
        self.cache = self.qkv.new_zeros(batch, 2, H, length, D)
        self.cache[:, 0, :, :n], self.cache[:, 1, :, :n] = state.k, state.v
        self.keys, self.values = self.cache[:, 0], self.cache[:, 1]
        self.out = _Output(attn, batch, H * D)
        self.out_heads = self.out.values.view(batch, H, 1, D)

    def __call__(self, x: torch.Tensor, ctx, residual: torch.Tensor | None = None) -> torch.Tensor:
        torch.addmm(self.bias, x, self.weight_t, out=self.qkv)
        self.cache.index_copy_(3, ctx.position, self.kv)
        self.out_heads.copy_(F.scaled_dot_product_attention(self.q, self.keys[:, :, :ctx.span],
                                                            self.values[:, :, :ctx.span], attn_mask=ctx.mask))
        return self.out(residual)

    def state_tuple(self, length: int) -> KVCache:
        """The module's :class:`~lra_kit.attention.modules.KVCache` of the first ``length`` positions (copies)."""
        return KVCache(self.keys[:, :, :length].clone(), self.values[:, :, :length].clone())


__all__ = ["CacheStep", "FusedStep", "LinearStep", "MomentumStep", "fused_supported", "lean_step", "lean_supported",
           "with_bias_row"]
