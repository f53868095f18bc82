"""The Triton path of the causal op: host side of the Triton kernels, forward and backward.

:mod:`lra_kit.attention.causal.op` calls :func:`forward` and :func:`backward` from its one autograd
Function when it chooses this path (CUDA tensors). The operation is the weighted causal product

    out_i = Σ_{j≤i} u(i−j) (q_i·k_j) v_j,        u(x) = (1 − β^{x+1}) / (1 − β),

(Katharopoulos et al. eq. 9 at β = 0; the numerator of Nguyen et al. eq. 13 at β > 0), with the
recurrent state made explicit. After position t the state is the pair

    s_t = Σ_{j≤t} u(t−j) k_j v_jᵀ,        d_t = Σ_{j≤t} β^{t−j} k_j v_jᵀ,

the heavy-ball states of eq. 12 with γ = 1 (d_t = −m_t, s_t = s_{t−1} + d_t), and it reaches a
later query through Σ_{j≤t} u(i−j) k_j v_jᵀ = s_t + β·u(i−t−1)·d_t. ``initial_state=(s, d)``
starts the sequence from such a pair (a prompt already processed) and ``output_final_state``
returns the pair after the last position, in float32.

Backward. With g = ∂L/∂out, the adjoint of the state pair at a chunk boundary t is
ŝ_t = Σ_{i>t} q_i g_iᵀ and d̂_t = Σ_{i>t} β·u(i−t−1) q_i g_iᵀ (plus the gradients of the final
state, which start the recursion); then ∇k_j and ∇v_j are the weighted products of eqs. 14–15
backward in time and ∇q_i that of eq. 13 forward in time (module docstring of
:mod:`lra_kit.attention.causal.chunked`), and the adjoint at the start is the gradient of the starting state.
The op saves the raw q, k, v, the mask, the output and the starting state; φ and the boundary states are
recomputed. The kernels compute the numerator only: the normaliser's den and its adjoint come from prefix
sums (:mod:`lra_kit.attention.normaliser`), inside the same Function as on the chunked path.

Non-causal linear attention is two matrix products, φ(K)ᵀV then φ(Q)·(φ(K)ᵀV), which cuBLAS
already runs at the hardware's rate; it has no Triton kernel here.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import torch

from lra_kit.attention.causal.state import CausalState
from lra_kit.attention.causal.chunking import DEFAULT_CHUNK_SIZE
from lra_kit.attention.lag_weights import momentum_lag_weights
from lra_kit.attention.mapped import masked, phi_backward, phi_forward
from lra_kit.attention.normaliser import normaliser_gradients, prefix_denominator
from lra_kit.attention.precision import compute_dtype
from lra_kit.attention.causal.triton.switch import kernels_for


@functools.lru_cache(maxsize=64)
def lag_tables(beta: float, chunk_size: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """u(x) for x = −1 … C (index x + 1) and βˣ for x = 0 … C, computed in float64, stored in float32.

    Cached per (β, C, device): a copy to the GPU is a blocking host transfer, which every forward and
    backward would otherwise pay (and which CUDA-graph capture forbids). The tables are never written."""
    lags = torch.arange(-1, chunk_size + 1, dtype=torch.float64)
    u = momentum_lag_weights(lags, beta)
    p = torch.tensor([beta**x for x in range(chunk_size + 1)], dtype=torch.float64)
    return u.to(device, torch.float32), p.to(device, torch.float32)


class Tiling(NamedTuple):
    """Tile sizes and warps per input type. Each was compiled for sm_90 with ``ptxas -v`` (the compile guard,
    :mod:`lra_kit.attention.causal.triton.compile_check`): the largest that fit shared memory without register spills.
    float32's tf32x3 products hold three TF32 parts of every operand, so its tiles are smaller."""

    max_chunk: int  # largest chunk C (the caller's chunk_size is capped to it)
    max_block: int  # largest tile of the feature and output widths in chunk_output_kernel
    state_block: int  # largest state tile of chunk_states_kernel
    state_warps: int


TILING = {
    torch.bfloat16: Tiling(64, 32, 32, 4),
    torch.float16: Tiling(64, 32, 32, 4),
    torch.float32: Tiling(16, 32, 32, 8),
}
# Widest tile of any type: a wide feature map (Performer: 267 features) is walked in steps of at most this.
MAX_BLOCK = max(t.max_block for t in TILING.values())


def _block(n: int, cap: int) -> int:
    # tl.dot needs every block dimension ≥ 16 and a power of two.
    return max(16, min(cap, 1 << max(0, n - 1).bit_length()))


def kernel_chunk(dtype: torch.dtype, chunk_size: int) -> int:
    """The chunk the kernels use: the caller's, capped by the type's tiling. The kernels tile chunks of a power of
    two ≥ 16; another size (the PyTorch path takes any) falls back to ``DEFAULT_CHUNK_SIZE``."""
    if chunk_size < 16 or chunk_size & (chunk_size - 1):
        chunk_size = DEFAULT_CHUNK_SIZE
    return min(chunk_size, TILING[dtype].max_chunk)


def launch_blocks(dx: int, dz: int, dtype: torch.dtype = torch.bfloat16) -> tuple[int, int]:
    """(BX, BZ) of chunk_output_kernel for a feature width ``dx`` and an output width ``dz``."""
    cap = TILING[dtype].max_block
    return _block(dx, cap), _block(dz, cap)


def output_warps(BX: int, BZ: int, dtype: torch.dtype = torch.bfloat16) -> int:
    """Warps of chunk_output_kernel, as measured by ptxas -v for sm_90 (the compile guard): 16-bit tiles up to
    32 × 32 at C = 64 fit 4 warps (64 × 16 spilled with 4; 64 × 64 with β > 0 still spilled 16 B with 8: hence
    the cap of 32). float32's tf32x3 tiles (C = 16) fit 4 warps except 32 × 16, which spilled 12 B with 4 and
    none with 8 (while 32 × 32 spilled 24 B with 8 and none with 4)."""
    return 8 if dtype == torch.float32 and (BX, BZ) == (32, 16) else 4


class DotTypes(NamedTuple):
    """Operand types of the kernels' products (module docstring of :mod:`lra_kit.attention.causal.triton.kernels`)."""

    in_dot: str  # products of two input tiles
    acc_dot: str  # products with a float32 sum as operand (a state, the weighted scores)
    precision: str  # input_precision of the float32 products


def dot_types(dtype: torch.dtype) -> DotTypes:
    """bf16/fp16 inputs: tensor-core products of the inputs' own type, float32 accumulation; the float32 sums
    (states, weighted scores) are read as TF32 — float32's range (they overflow float16) and a 10-bit mantissa
    (rounding them to bf16 as well doubled the gradients' error; they live in float32 in memory anyway, so
    this costs no traffic). float32 inputs: tf32x3, about float32's accuracy on tensor cores ("ieee" runs on
    the CUDA cores with a large per-thread stack)."""
    if dtype in (torch.bfloat16, torch.float16):
        return DotTypes("bf16" if dtype == torch.bfloat16 else "fp16", "fp32", "tf32")
    return DotTypes("fp32", "fp32", "tf32x3")


def _tl_dtype(name: str):
    import triton.language as tl

    return {"bf16": tl.bfloat16, "fp16": tl.float16, "fp32": tl.float32}[name]


class _Launch:
    """Shapes, tables and launch parameters shared by the forward and backward passes."""

    def __init__(self, q: torch.Tensor, v: torch.Tensor, beta: float, chunk_size: int):
        self.BH = q.shape[0] * q.shape[1]
        self.N, self.D, self.M = q.shape[2], q.shape[3], v.shape[3]
        self.dtype = q.dtype
        self.tiling = TILING[q.dtype]
        self.C, self.beta = kernel_chunk(q.dtype, chunk_size), beta
        self.use_d = beta > 0.0  # at β = 0 the decayed state d never reaches an output: not stored
        self.NC = -(-self.N // self.C)
        self.u, self.p = lag_tables(beta, self.C, q.device)
        self.kernels = kernels_for(q)
        types = dot_types(q.dtype)
        self.in_dot, self.acc_dot, self.precision = _tl_dtype(types.in_dot), _tl_dtype(types.acc_dot), types.precision
        # Triton's interpreter cannot multiply bf16 (kernels._dot): there the operands are rounded, not typed.
        self.round_only = not q.is_cuda and types.in_dot == "bf16"

    def flat(self, t: torch.Tensor) -> torch.Tensor:
        return t.reshape(self.BH, self.N, t.shape[-1]).contiguous()

    def states(self, x, y, *, reverse: bool, init=None, store_last: bool):
        """Boundary states (BH, NC, DX, DY) of Σ xᵀy (d only where β > 0), and the state after the last chunk."""
        DX, DY = x.shape[-1], y.shape[-1]
        s = x.new_empty(self.BH, self.NC, DX, DY, dtype=torch.float32)
        d = torch.empty_like(s) if self.use_d else s  # β = 0: never written (USE_D=False); any pointer will do
        if store_last:
            s_last = torch.empty(self.BH, DX, DY, device=x.device, dtype=torch.float32)
            d_last = torch.empty_like(s_last) if self.use_d else s_last
        else:  # unused by the kernel; any float32 pointer will do
            s_last = d_last = s
        s_init, d_init = init if init is not None else (s, s)
        # Small state tiles: this pass is sequential over chunks, so its parallelism is BH·(DX/BX)·(DY/BY).
        BX, BY = _block(DX, self.tiling.state_block), _block(DY, self.tiling.state_block)
        grid = (self.BH, -(-DX // BX), -(-DY // BY))
        self.kernels.chunk_states_kernel[grid](
            x, y, s, d, s_init, d_init, s_last, d_last, self.u, self.p, self.beta,
            self.N, DX, DY, self.NC,
            C=self.C, BX=BX, BY=BY, REVERSE=reverse, HAS_INIT=init is not None, STORE_LAST=store_last,
            USE_D=self.use_d, IN_DOT=self.in_dot, PRECISION=self.precision, ROUND_ONLY=self.round_only,
            num_warps=self.tiling.state_warps,
        )
        return s, d, (s_last, d_last) if store_last else None

    def output(self, x, y, z, s, d, *, reverse: bool, transpose_state: bool, out_dtype):
        """The weighted product of chunk_output_kernel; the state is read as (x-dim, z-dim) or transposed."""
        DX, DZ = x.shape[-1], z.shape[-1]
        out = torch.empty(self.BH, self.N, DZ, device=x.device, dtype=out_dtype)
        bh_stride, chunk_stride, rows, cols = s.stride()
        stride_x, stride_z = (cols, rows) if transpose_state else (rows, cols)
        BX, BZ = launch_blocks(DX, DZ, self.dtype)
        grid = (self.BH, self.NC, -(-DZ // BZ))
        self.kernels.chunk_output_kernel[grid](
            x, y, z, s, d, out, self.u, self.p, self.beta,
            self.N, DX, DZ, self.NC, bh_stride, chunk_stride, stride_x, stride_z,
            C=self.C, BX=BX, BZ=BZ, REVERSE=reverse, USE_D=self.use_d,
            IN_DOT=self.in_dot, ACC_DOT=self.acc_dot, PRECISION=self.precision, ROUND_ONLY=self.round_only,
            num_warps=output_warps(BX, BZ, self.dtype),
        )
        return out


def forward(spec, q, k, v, keep, state):
    """The causal op's forward on the Triton path (:mod:`lra_kit.attention.causal.op` calls it inside its one
    autograd Function): φ and the padding mask in PyTorch, the weighted product in Triton over the whole sequence,
    the normaliser (when ``spec.eps`` is set) as prefix sums. Returns the output, the final
    :class:`~lra_kit.attention.causal.state.CausalState` (when ``spec.final``) and what backward needs."""
    dtype = compute_dtype(q.dtype)
    fq, fk = (q, k) if spec.phi is None else (spec.phi.queries(q), spec.phi.keys(k))
    fq32, fk32, vv32 = masked(fq, fk, v, _keep(keep), dtype)
    # The kernels multiply in the inputs' own type (16-bit tensor cores) and accumulate in float32; the
    # normaliser is summed from the float32 features.
    fq, fk, vv = fq32.to(q.dtype), fk32.to(q.dtype), vv32.to(v.dtype)
    run = _Launch(fq, vv, spec.beta, spec.chunk_size)
    qf, kf, vf = run.flat(fq), run.flat(fk), run.flat(vv)
    init = None
    if state is not None:
        s_init = _flat_state(state.s, run)
        d_init = s_init  # β = 0: never read (USE_D=False); any pointer will do
        if run.use_d:
            d_init = torch.zeros_like(s_init) if state.d is None else _flat_state(state.d, run)
        init = (s_init, d_init)
    s, d, last = run.states(kf, vf, reverse=False, init=init, store_last=spec.final)
    # With a normaliser the numerator stays in float32: unnormalised, it outgrows float16's 65504 within a few
    # thousand positions (Σ_j (φ(q_i)·φ(k_j)) v_j grows with i), while the normalised output does not.
    out_dtype = dtype if spec.eps is not None else spec.out_dtype
    out = run.output(qf, kf, vf, s, d, reverse=False, transpose_state=False, out_dtype=out_dtype)
    out = out.view(*v.shape[:3], v.shape[3])
    del s, d
    z0 = None if state is None else state.z
    z_end = None
    if spec.eps is not None:
        den, z_end, _ = prefix_denominator(fq32, fk32, z0, spec.eps, spec.chunk_size)
        out = out.mul_(den.reciprocal_().mul_(spec.gamma)).to(v.dtype)
    final = None
    if spec.final:
        B, H = q.shape[:2]
        s_T = last[0].view(B, H, run.D, run.M)
        if run.use_d:
            d_T = last[1].view(B, H, run.D, run.M)
        elif spec.keep_d:
            # β = 0: d_N = Σ_j 0^{N−1−j} k_j v_jᵀ is the newest k vᵀ alone (the kernels never store it)
            d_T = fk[:, :, -1, :, None].float() * vv[:, :, -1, None, :].float()  # as the kernels saw them
        else:
            d_T = None
        final = CausalState(s_T, d_T, z_end)
    return out, final, (init, z0)


def backward(spec, q, k, v, keep, out, memo, grad, grad_final, needs):
    """The gradients of :func:`forward`: the adjoint recursion of the module docstring in Triton, the normaliser's
    share (∂/∂den = −(g·out)/den) as prefix sums, then the chain rule through φ. ``needs``: q, k, v, s0, d0, z0.
    Returns dq, dk, dv and the gradient of the starting state as a
    :class:`~lra_kit.attention.causal.state.CausalState`."""
    init, z0 = memo
    dtype = compute_dtype(q.dtype)
    phi_q, phi_k, qs, ks = phi_forward(spec.phi, q, k, needs[:2])
    fq32, fk32, vv32 = masked(phi_q.detach(), phi_k.detach(), v, _keep(keep), dtype)
    fq, fk, vv = fq32.to(q.dtype), fk32.to(q.dtype), vv32.to(v.dtype)
    run = _Launch(fq, vv, spec.beta, spec.chunk_size)
    grad = torch.zeros(*v.shape, device=v.device, dtype=dtype) if grad is None else grad.to(dtype)
    gs, gd, gz = grad_final if grad_final is not None else (None, None, None)
    h = z = None
    if spec.eps is not None:
        den, _, z = prefix_denominator(fq32, fk32, z0, spec.eps, spec.chunk_size)
        h = (grad * out.to(dtype)).sum(-1, keepdim=True).div_(den).neg_()  # ∂/∂den
        grad = grad * den.reciprocal_().mul_(spec.gamma)  # ∂/∂numerator
    # The kernels read ∂out in the inputs' type (its products run in that type anyway).
    qf, kf, vf, gf = run.flat(fq), run.flat(fk), run.flat(vv), run.flat(grad.to(v.dtype))
    dfq = dfk = dv = ds0 = dd0 = None
    if needs[0]:
        s, d, _ = run.states(kf, vf, reverse=False, init=init, store_last=False)
        dfq = run.output(gf, vf, kf, s, d, reverse=False, transpose_state=True, out_dtype=q.dtype)
        dfq = dfq.view(*fq.shape).to(dtype)
        del s, d
    needs_init = init is not None and any(needs[3:5])
    if needs[1] or needs[2] or needs_init:
        adjoint_init = None
        final = [gs, gd if run.use_d else None]
        if spec.final and any(g is not None for g in final):
            ds_T, dd_T = (torch.zeros(run.BH, run.D, run.M, device=q.device) if g is None
                          else g.reshape(run.BH, run.D, run.M).float().contiguous() for g in final)
            adjoint_init = (ds_T, dd_T if run.use_d else ds_T)
        s, d, first = run.states(qf, gf, reverse=True, init=adjoint_init, store_last=needs_init)
        if needs[1]:
            dfk = run.output(vf, gf, qf, s, d, reverse=True, transpose_state=True, out_dtype=k.dtype)
            dfk = dfk.view(*fk.shape).to(dtype)
        if needs[2]:
            dv = run.output(kf, qf, gf, s, d, reverse=True, transpose_state=False, out_dtype=v.dtype)
            dv = dv.view(*v.shape).to(dtype)
        if needs_init:
            B, H = q.shape[:2]
            ds0 = first[0].view(B, H, run.D, run.M)
            # β = 0: the initial d reaches no output and no final state (β^N = 0)
            dd0 = first[1].view(B, H, run.D, run.M) if run.use_d else torch.zeros_like(ds0)
    if not run.use_d and gd is not None:  # β = 0: the final d = k_N v_Nᵀ was formed in forward
        gd = gd.to(dtype)
        if dfk is not None:
            dfk[:, :, -1] += (gd @ vv32[:, :, -1, :, None]).squeeze(-1)
        if dv is not None:
            dv[:, :, -1] += (gd.transpose(-1, -2) @ fk32[:, :, -1, :, None]).squeeze(-1)
    dz0 = None
    if h is not None:
        dfq, dfk, dz0 = normaliser_gradients(h, fq32, z, gz, dfq, dfk)
    if keep is not None:
        dfk = None if dfk is None else dfk * _keep(keep)
        dv = None if dv is None else dv * _keep(keep)
    dq, dk = phi_backward(spec.phi, phi_q, phi_k, qs, ks, dfq, dfk)
    return _cast(dq, q), _cast(dk, k), _cast(dv, v), CausalState(ds0, dd0, dz0)


def _cast(t, like):
    return None if t is None else t.to(like.dtype)


def _keep(keep):
    return None if keep is None else keep[:, None, :, None]


def _flat_state(t: torch.Tensor, run: _Launch) -> torch.Tensor:
    return t.reshape(run.BH, run.D, run.M).to(torch.float32).contiguous()


