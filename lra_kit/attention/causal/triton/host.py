"""The Triton path of the causal op: host side of the kernels of :mod:`lra_kit.attention.causal.triton.kernels`.

:mod:`lra_kit.attention.causal.op` calls :func:`forward` and :func:`backward` from its one autograd Function when
it chooses this path (CUDA tensors). The kernels take the raw q, k, v and the padding mask and apply φ (elu + 1),
the mask, the normaliser and momentum as they read them; this side allocates the outputs, the gradients and the
per-chunk states, and launches. A forward is two launches, a backward four (∇k and ∇v in one kernel; five where
only one of the two is asked for); no PyTorch kernel runs between them for linear and momentum attention with
elu + 1 (``tests/test_triton_budget.py`` counts both).

State. After position t the state is s_t = Σ_{j≤t} u(t−j) φ(k_j)v_jᵀ, d_t = Σ_{j≤t} β^{t−j} φ(k_j)v_jᵀ and
z_t = Σ_{j≤t} φ(k_j) (:mod:`lra_kit.attention.causal.state`); ``initial_state`` starts from one, and
``output_final_state`` returns the one after the last position, in float32.

Backward. With g = ∂L/∂out, r_i = γ/den_i and h_i = −(g_i·out_i)/den_i (∂L/∂den_i), ∇q is a weighted causal
product forward in time and ∇k, ∇v backward in time, through the adjoint states ŝ_t = Σ_{i>t} φ(q_i)(r_i g_i)ᵀ,
d̂_t and ẑ_t = Σ_{i>t} h_i φ(q_i) (plus the gradients of the final state, which start the recursion); the
adjoint at the start is the gradient of the starting state. Saved for backward: the raw q, k, v, the mask, the
output, den (one float32 a position) and the starting state; φ and the boundary states are recomputed.

Another feature map than elu + 1 (Performer's) is applied once in PyTorch, and the chain rule through it runs
in PyTorch after the kernels. Non-causal linear attention is two matrix products, which cuBLAS already runs at
the hardware's rate; it has no Triton kernel.
"""
from __future__ import annotations

import contextlib
import functools
from typing import NamedTuple

import torch

from lra_kit.attention.causal.state import CausalState
from lra_kit.attention.causal.chunking import DEFAULT_CHUNK_SIZE
from lra_kit.attention.lag_weights import momentum_lag_weights
from lra_kit.attention.feature_maps import Elementwise, elu_plus_one
from lra_kit.attention.mapped import phi_backward, phi_forward
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
    state_warps: int  # of states_kernel without d (β = 0); with d see :func:`state_warps`


TILING = {
    torch.bfloat16: Tiling(64, 32, 32, 8),
    torch.float16: Tiling(64, 32, 32, 8),
    torch.float32: Tiling(16, 32, 32, 8),
}


@contextlib.contextmanager
def tiling(dtype: torch.dtype, sizes: Tiling):
    """Within the block, calls with ``dtype`` inputs use ``sizes`` instead of the shipped :data:`TILING` (the
    autotune's hook, :mod:`lra_kit.bench.tiles`); restored on exit."""
    if dtype not in TILING:
        raise ValueError(f"dtype: one of {sorted(map(str, TILING))}, got {dtype}")
    for field in ("max_chunk", "max_block", "state_block"):
        size = getattr(sizes, field)
        if size < 16 or size & (size - 1):
            raise ValueError(f"sizes.{field}: a power of two ≥ 16 (tl.dot's least tile), got {size}")
    with _swapped(TILING, dtype, sizes):
        yield


@contextlib.contextmanager
def _swapped(table: dict, key, value):
    """``table[key]`` is ``value`` within the block and what it was after (:func:`tiling`, :func:`stored_states`)."""
    before = table[key]
    table[key] = value
    try:
        yield
    finally:
        table[key] = before


# Widest tile of any type: a wide feature map (Performer: 267 features) is walked in steps of at most this.
MAX_BLOCK = max(t.max_block for t in TILING.values())

# The type the per-chunk boundary states (s, d, z and their adjoints) are stored in, per input type. The running
# sums stay float32 in registers; this is the copy written at each chunk boundary and read by the output and
# gradient kernels (about 30% of the bytes a bf16 forward loads and stores at D = M = 64, counted per chunk).
# float16 cannot hold a state (z grows with the position, past 65,504 at 64K). bf16 can: against the float64
# oracle, bf16 states raise the kernels' bf16 ∇q error by a median 9% at N = 2,048 (worst ratio to the PyTorch
# path's 1.63, float32 states' 1.50; ``python -m lra_kit.bench.precision_sweep --states float32 bfloat16 --length
# 2048``), within issue 50's 2× bound. Whether they are also faster is the GPU autotune's to say
# (:mod:`lra_kit.bench.tiles`, whose recorded choice this table must be); until it has run, float32.
# :func:`stored_states` changes it within a block.
STATE_TYPES = {torch.bfloat16: torch.float32, torch.float16: torch.float32, torch.float32: torch.float32}


@contextlib.contextmanager
def stored_states(dtype: torch.dtype, inputs: torch.dtype = torch.bfloat16):
    """Within the block, the boundary states of ``inputs``-typed calls are stored as ``dtype`` (a measurement hook:
    the precision sweep's ``--states``); the table is restored on exit."""
    if dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise ValueError(f"dtype: the states' type must be float32, bfloat16 or float16, got {dtype}")
    if inputs not in STATE_TYPES:
        raise ValueError(f"inputs: one of {sorted(map(str, STATE_TYPES))}, got {inputs}")
    with _swapped(STATE_TYPES, inputs, dtype):
        yield


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


def dkv_blocks(BD: int, BM: int, dtype: torch.dtype) -> tuple[int, int]:
    """(BD, BM) of ``dkv_kernel``. float32 takes square tiles, the wider of the two: its tf32x3 products at 16 × 32
    and 32 × 16 with d spilled 20–130 B a thread with 4 or 8 warps (Triton 3.9), where 32 × 32 with 8 fits; the
    narrower side's extra columns are masked (read from nowhere, multiplied as zeros)."""
    if dtype == torch.float32:
        return (max(BD, BM),) * 2
    return BD, BM


def state_warps(dtype: torch.dtype, use_d: bool) -> int:
    """Warps of states_kernel. The compile guard ran with two Triton versions, 3.9 and 3.7.1 (the one PyPI's CUDA
    torch 2.13 wheel brings). With 16-bit inputs and no d, a 32 × 32 state tile spilled with 4 warps under 3.7.1
    (reverse, with a starting and a final state). With d, it spilled with 8. So: 8 without d, 4 with it.
    float32 takes 8."""
    if dtype == torch.float32:
        return TILING[dtype].state_warps
    return 4 if use_d else TILING[dtype].state_warps


def output_warps(BD: int, BM: int, dtype: torch.dtype = torch.bfloat16, kernel: str = "forward_kernel") -> int:
    """Warps of the chunk kernels, as ptxas -v measured them for sm_90 (the compile guard, with Triton 3.9 and
    3.7.1). float32's tf32x3 tiles (C = 16) fit 4 warps, except in two places: 32 × 16 spills with 4 and not with
    8; the ∇q kernel with d spilled 8 B at 16 × 16 with 4 warps under 3.7.1, and takes 8 at every tile. With
    16-bit inputs (C = 64), the forward and ∇q kernels hold the score tile, the output tile and φ's inputs at
    once. From 16 × 32 on, they spilled up to 176 B a thread with 4 warps, so they take 8. ∇k and ∇v fit 4.
    The fused ∇k, ∇v kernel holds both score tiles: with 4 warps it spilled at every 16-bit tile (up to 1.2 KB a
    thread at 32 × 32 with d, Triton 3.9); it takes 8 (16, capped at 128 registers a thread, spilled more)."""
    if kernel == "dkv_kernel":
        return 8
    if dtype == torch.float32:
        return 8 if kernel == "dq_kernel" or (BD, BM) == (32, 16) else 4
    if kernel == "dv_kernel" and dtype == torch.bfloat16 and BD * BM >= 1024:
        return 8  # φ's products in TF32 (dot_types): with d, 32 × 32 spilled 28 B a thread with 4 warps
    return 8 if kernel in ("forward_kernel", "dq_kernel") and BD * BM >= 512 else 4


class DotTypes(NamedTuple):
    """Operand types of the kernels' products (module docstring of :mod:`lra_kit.attention.causal.triton.kernels`)."""

    in_dot: str  # products of two input tiles
    acc_dot: str  # products with a float32 sum as operand (a state, the weighted scores)
    precision: str  # input_precision of the float32 products
    phi_dot: str  # products with φ of an input as operand (φ applied in the kernels)


def dot_types(dtype: torch.dtype) -> DotTypes:
    """bf16/fp16 inputs: tensor-core products of the inputs' own type, float32 accumulation; the float32 sums
    (states, weighted scores) are read as TF32 — float32's range (they overflow float16) and a 10-bit mantissa
    (rounding them to bf16 as well doubled the gradients' error; they live in float32 in memory anyway, so
    this costs no traffic). float32 inputs: tf32x3, about float32's accuracy on tensor cores ("ieee" runs on
    the CUDA cores with a large per-thread stack).

    φ(x) = x + 1 of a bf16 input is not a bf16 number: rounded back to bf16's 8-bit mantissa, it put ∇q at 2–8×
    the float32 path's error under the interpreter (issue 50). φ's products are TF32 for bf16 inputs (10 bits, as
    float16 has: float16 inputs keep their type, exact enough and twice TF32's rate)."""
    if dtype == torch.bfloat16:
        return DotTypes("bf16", "fp32", "tf32", "fp32")
    if dtype == torch.float16:
        return DotTypes("fp16", "fp32", "tf32", "fp16")
    return DotTypes("fp32", "fp32", "tf32x3", "fp32")


def _tl_dtype(name: str):
    import triton.language as tl

    return {"bf16": tl.bfloat16, "fp16": tl.float16, "fp32": tl.float32}[name]




def in_kernel_phi(phi) -> bool:
    """Whether the kernels apply ``phi`` themselves: elu + 1 (Katharopoulos eq. 7), the default feature map."""
    return isinstance(phi, Elementwise) and phi.fn is elu_plus_one


def _rows_of(t: torch.Tensor):
    """``t`` (B, H, N, ·) with its last dimension contiguous (copied only when it is not), and its three other
    strides: the kernels read the (B, N, H, D) → (B, H, N, D) view of a projection in place."""
    if t.stride(-1) != 1:
        t = t.contiguous()
    return (t, t.stride(0), t.stride(1), t.stride(2))


def _mask_of(mask: torch.Tensor | None, fallback: torch.Tensor):
    """key_padding_mask (B, N) as bytes and its batch stride; ``fallback`` (never read) where there is none."""
    if mask is None:
        return (fallback, 0)
    if mask.stride(-1) != 1:
        mask = mask.contiguous()
    return (mask.view(torch.uint8), mask.stride(0))


class _Launch:
    """Shapes, tables and launch parameters shared by the forward and backward passes."""

    def __init__(self, q: torch.Tensor, v: torch.Tensor, spec, phi_in_kernel: bool, mask):
        self.B, self.H, self.N, self.D = q.shape
        self.M = v.shape[3]
        self.BH = self.B * self.H
        self.dtype = q.dtype
        self.tiling = TILING[q.dtype]
        self.C, self.beta = kernel_chunk(q.dtype, spec.chunk_size), spec.beta
        self.gamma = spec.gamma
        self.eps = 0.0 if spec.eps is None else spec.eps
        self.norm = spec.eps is not None
        self.use_d = spec.beta > 0.0  # at β = 0 the decayed state d never reaches an output: not stored
        self.NC = -(-self.N // self.C)
        self.u, self.p = lag_tables(spec.beta, self.C, q.device)
        self.kernels = kernels_for(q)
        self.flags = dict(PHI=phi_in_kernel, MASK=mask is not None, NORM=self.norm, USE_D=self.use_d)
        types = dot_types(q.dtype)
        # Triton's interpreter cannot multiply bf16 and ignores TF32 (kernels._dot): there the operands of
        # 16-bit inputs are rounded as the GPU rounds them, and multiplied in float32.
        round_only = not q.is_cuda and types.in_dot != "fp32"
        phi_dot = types.phi_dot if phi_in_kernel else types.in_dot  # without φ, x is an input tile: no rounding
        self.dots = dict(IN_DOT=_tl_dtype(types.in_dot), PHI_DOT=_tl_dtype(phi_dot), PRECISION=types.precision,
                         ROUND_ONLY=round_only)
        self.acc_dot = _tl_dtype(types.acc_dot)
        self.mask = _mask_of(mask, self.u)
        self.BD, self.BM = launch_blocks(self.D, self.M, q.dtype)

    def state_buffers(self, dx: int, dy: int, device):
        """Per-chunk states (s, d, z) of one pass; d and z only where used (else s stands in, never written)."""
        dtype = STATE_TYPES[self.dtype]
        s = torch.empty(self.BH, self.NC, dx, dy, device=device, dtype=dtype)
        d = torch.empty_like(s) if self.use_d else s
        z = torch.empty(self.BH, self.NC, dx, device=device, dtype=dtype) if self.norm else s
        return s, d, z

    def edge(self, dx, dy, device, given=None):
        """A state (s, d, z) before the first chunk visited (``given``, flattened) or after the last (new)."""
        if given is not None:
            s, d, z = given
            return (_flat(s, self.BH), _flat(d, self.BH) if self.use_d else _flat(s, self.BH),
                    _flat(z, self.BH) if self.norm else _flat(s, self.BH))
        s = torch.empty(self.BH, dx, dy, device=device, dtype=torch.float32)
        return (s, torch.empty_like(s) if self.use_d else s,
                torch.empty(self.BH, dx, device=device, dtype=torch.float32) if self.norm else s)

    def states(self, x, y, *, reverse: bool, init=None, store_last: bool, den=None, h=None):
        """Boundary states of Σ xᵀy (s, d) and Σ x (z), forward in time (x = k, y = v) or the adjoints
        backward in time (x = q, y = ∂out, with den and h); and the state after the last chunk visited."""
        x, y = _rows_of(x), _rows_of(y)
        DX, DY = x[0].shape[-1], y[0].shape[-1]
        s, d, z = self.state_buffers(DX, DY, x[0].device)
        last = self.edge(DX, DY, x[0].device) if store_last else (s, d, z)
        first = init if init is not None else (s, d, z)
        rows = den if den is not None else self.u
        # Small state tiles: this pass is sequential over chunks, so its parallelism is BH·(DX/BX)·(DY/BY).
        BX, BY = _block(DX, self.tiling.state_block), _block(DY, self.tiling.state_block)
        grid = (self.BH, -(-DX // BX), -(-DY // BY))
        flags = dict(self.flags, MASK=self.flags["MASK"] and not reverse)
        self.kernels.states_kernel[grid](
            *x, *y, *self.mask, rows, h if h is not None else rows, s, d, z, *first, *last,
            self.u, self.p, self.beta, self.gamma, self.H, self.N, DX, DY, self.NC,
            C=self.C, BX=BX, BY=BY, REVERSE=reverse, HAS_INIT=init is not None, STORE_LAST=store_last,
            **flags, **self.dots, ACC_DOT=self.acc_dot, num_warps=state_warps(self.dtype, self.use_d),
        )
        return (s, d, z), (last if store_last else None)

    def _launch(self, name, blocks, *args, tiles=None, **flags):
        """``name`` on a grid of (batch·head, chunk, ``blocks`` column blocks), with tiles (BD, BM) (default:
        ``launch_blocks``'s)."""
        grid = (self.BH, self.NC, blocks)
        BD, BM = tiles or (self.BD, self.BM)
        kernel = getattr(self.kernels, name)
        kernel[grid](*args, self.u, self.p, self.beta, *flags.pop("scalars"), self.H, self.N, self.D, self.M,
                     self.NC, C=self.C, BD=BD, BM=BM, **flags, **self.dots, ACC_DOT=self.acc_dot,
                     num_warps=output_warps(BD, BM, self.dtype, name))

    def forward(self, q, k, v, states, out, den):
        s, d, z = states
        self._launch("forward_kernel", _cdiv(self.M, self.BM), *_rows_of(q), *_rows_of(k), *_rows_of(v),
                     *self.mask, s, d, z, *_rows_of(out), den if den is not None else self.u,
                     scalars=(self.gamma, self.eps), STORE_DEN=den is not None, **self.flags)

    def dq(self, q, k, v, g, out, states, den, h, dq):
        s, d, z = states
        self._launch("dq_kernel", _cdiv(self.D, self.BD), *_rows_of(q), *_rows_of(k), *_rows_of(v),
                     *_rows_of(g), *_rows_of(out if out is not None else g), *self.mask, s, d, z,
                     _or(den, self.u), _or(h, self.u), dq, scalars=(self.gamma,), STORE_H=h is not None,
                     **self.flags)

    def dk(self, q, k, v, g, adjoint, den, h, dk):
        s, d, z = adjoint
        self._launch("dk_kernel", _cdiv(self.D, self.BD), *_rows_of(q), *_rows_of(k), *_rows_of(v),
                     *_rows_of(g), *self.mask, s, d, z, _or(den, self.u), _or(h, self.u), dk,
                     scalars=(self.gamma,), **self.flags)

    def dv(self, q, k, g, adjoint, den, dv):
        s, d, _ = adjoint
        self._launch("dv_kernel", _cdiv(self.M, self.BM), *_rows_of(q), *_rows_of(k), *_rows_of(g),
                     *self.mask, s, d, _or(den, self.u), dv, scalars=(self.gamma,), **self.flags)

    def dkv(self, q, k, v, g, adjoint, den, h, dk, dv):
        """∇k and ∇v in one launch (``dkv_kernel``): a program reads each tile of its chunk once for both gradients
        (its own block of ∂out twice)."""
        s, d, z = adjoint
        BD, BM = dkv_blocks(self.BD, self.BM, self.dtype)
        blocks = max(_cdiv(self.D, BD), _cdiv(self.M, BM))  # program j: column block j of ∇k and of ∇v
        self._launch("dkv_kernel", blocks, *_rows_of(q), *_rows_of(k), *_rows_of(v), *_rows_of(g), *self.mask,
                     s, d, z, _or(den, self.u), _or(h, self.u), dk, dv, scalars=(self.gamma,), tiles=(BD, BM),
                     **self.flags)


def _cdiv(n: int, block: int) -> int:
    return -(-n // block)


def _or(t, fallback):
    return fallback if t is None else t


def _flat(t: torch.Tensor, bh: int) -> torch.Tensor:
    """A (B, H, ·, ·) or (B, H, ·) state as (B·H, ·, ·) float32, copied only where it is not already one."""
    t = t.reshape(bh, *t.shape[2:])
    return t if t.dtype == torch.float32 and t.is_contiguous() else t.to(torch.float32).contiguous()


def _mapped(spec, q, k, needs=(False, False)):
    """(what the kernels read as q and k, whether they apply φ, what the chain rule through φ needs): elu + 1 is
    applied in the kernels; another map once here (with its graph, where ``needs`` asks); None: q, k as given."""
    if spec.phi is None or in_kernel_phi(spec.phi):
        return q, k, spec.phi is not None, None
    phi_q, phi_k, qs, ks = phi_forward(spec.phi, q, k, needs)
    return phi_q.detach(), phi_k.detach(), False, (phi_q, phi_k, qs, ks)


def _newest_product(spec, k, v, mask, phi_in_kernel):
    """d after the last position at β = 0: the newest φ(k)vᵀ alone (the kernels never store it), float32; ``k`` is
    what the kernels read (φ applied already unless ``phi_in_kernel``)."""
    fk = k[:, :, -1].float()
    if phi_in_kernel:
        fk = spec.phi.keys(fk)
    if mask is not None:
        fk = fk * (~mask[:, -1]).float()[:, None, None]
    return fk[..., :, None] * v[:, :, -1, None, :].float()


def forward(spec, q, k, v, mask, state, needs_grad=True):
    """The causal op's forward on the Triton path: one pass over the chunks for the boundary states, one for the
    outputs (and den, kept for backward where ``needs_grad``). Returns the output, the final
    :class:`~lra_kit.attention.causal.state.CausalState` (when ``spec.final``) and what backward needs."""
    fq, fk, phi_in_kernel, _ = _mapped(spec, q, k)
    run = _Launch(fq, v, spec, phi_in_kernel, mask)
    init = None
    if state is not None:
        d0 = state.d if state.d is not None or not run.use_d else torch.zeros_like(state.s)
        z0 = state.z if state.z is not None or not run.norm else state.s.new_zeros(state.s.shape[:3])
        init = run.edge(run.D, run.M, q.device, (state.s, d0, z0))
    states, last = run.states(fk, v, reverse=False, init=init, store_last=spec.final)
    out = torch.empty(*v.shape, device=v.device, dtype=spec.out_dtype)
    den = torch.empty(run.BH, run.N, device=q.device, dtype=torch.float32) if run.norm and needs_grad else None
    run.forward(fq, fk, v, states, out, den)
    del states
    final = None
    if spec.final:
        B, H = q.shape[:2]
        s_T = last[0].view(B, H, run.D, run.M)
        if run.use_d:
            d_T = last[1].view(B, H, run.D, run.M)
        elif spec.keep_d:
            d_T = _newest_product(spec, fk, v, mask, phi_in_kernel)
        else:
            d_T = None
        z_T = last[2].view(B, H, run.D) if run.norm else None
        final = CausalState(s_T, d_T, z_T)
    return out, final, (init, den)


def backward(spec, q, k, v, mask, out, memo, grad, grad_final, needs):
    """The gradients of :func:`forward`: the forward boundary states recomputed, ∇q (and h) forward in time, the
    adjoint states backward in time, then ∇k and ∇v (one launch for both). ``needs``: q, k, v, s0, d0, z0.
    Returns dq, dk, dv and the gradient of the starting state as a
    :class:`~lra_kit.attention.causal.state.CausalState`."""
    init, den = memo
    fq, fk, phi_in_kernel, chain = _mapped(spec, q, k, needs[:2])
    run = _Launch(fq, v, spec, phi_in_kernel, mask)
    if grad is None:
        grad = torch.zeros_like(v)
    gs, gd, gz = grad_final if grad_final is not None else (None, None, None)
    # Where φ is applied in PyTorch the kernels return ∇φ(q), ∇φ(k), in float32, for its chain rule.
    grad_type = {0: q.dtype, 1: k.dtype} if chain is None else {0: torch.float32, 1: torch.float32}
    h = torch.empty(run.BH, run.N, device=q.device, dtype=torch.float32) if run.norm else None
    dfq = dfk = dv = ds0 = dd0 = dz0 = None
    if needs[0] or run.norm:  # the ∇q pass also forms h, which ∇k and the starting z's gradient read
        states, _ = run.states(fk, v, reverse=False, init=init, store_last=False)
        dfq = torch.empty(*fq.shape, device=q.device, dtype=grad_type[0])
        run.dq(fq, fk, v, grad, out, states, den, h, dfq)
        del states
        if not needs[0]:
            dfq = None
    needs_init = init is not None and any(needs[3:6])
    if needs[1] or needs[2] or needs_init:
        adjoint_init = None
        if spec.final and any(g is not None for g in (gs, gd if run.use_d else None, gz)):
            zero = torch.zeros(q.shape[0], q.shape[1], run.D, run.M, device=q.device)
            adjoint_init = run.edge(run.D, run.M, q.device, (
                zero if gs is None else gs, zero if gd is None or not run.use_d else gd,
                zero[..., 0] if gz is None else gz))
        adjoint, first = run.states(fq, grad, reverse=True, init=adjoint_init, store_last=needs_init,
                                    den=den, h=h)
        if needs[1]:
            dfk = torch.empty(*fk.shape, device=k.device, dtype=grad_type[1])
        if needs[2]:
            dv = torch.empty(*v.shape, device=v.device, dtype=v.dtype)
        # Both: one pass (dkv_kernel). One alone: its own kernel (dk_kernel, dv_kernel stay for this), which reads
        # only what that gradient needs; the fused one would read q, k in full for ∇v's score tile where only ∇k is
        # asked for, v and ∂out for ∇k's where only ∇v is: more bytes for a result thrown away.
        if needs[1] and needs[2]:
            run.dkv(fq, fk, v, grad, adjoint, den, h, dfk, dv)
        elif needs[1]:
            run.dk(fq, fk, v, grad, adjoint, den, h, dfk)
        elif needs[2]:
            run.dv(fq, fk, grad, adjoint, den, dv)
        if needs_init:
            B, H = q.shape[:2]
            ds0 = first[0].view(B, H, run.D, run.M)
            # β = 0: the initial d reaches no output and no final state (β^N = 0)
            dd0 = first[1].view(B, H, run.D, run.M) if run.use_d else torch.zeros_like(ds0)
            dz0 = first[2].view(B, H, run.D) if run.norm else None
    if not run.use_d and gd is not None:  # β = 0: the final d = φ(k_N) v_Nᵀ was formed in forward
        dk_last, dv_last = _newest_product_gradients(spec, fk, v, mask, gd, phi_in_kernel)
        if dfk is not None:
            dfk[:, :, -1] += dk_last.to(dfk.dtype)
        if dv is not None:
            dv[:, :, -1] += dv_last.to(dv.dtype)
    if chain is not None:
        dfq, dfk = phi_backward(spec.phi, *chain, dfq, dfk)
    return _cast(dfq, q), _cast(dfk, k), dv, CausalState(ds0, dd0, dz0)


def _newest_product_gradients(spec, k, v, mask, gd, phi_in_kernel):
    """∇k_N and ∇v_N of the final d = φ(k_N)v_Nᵀ (β = 0), through φ where the kernels apply it (``k``: what the
    kernels read)."""
    with torch.enable_grad():
        k_last = k[:, :, -1].detach().float().requires_grad_()
        fk = spec.phi.keys(k_last) if phi_in_kernel else k_last
        if mask is not None:
            fk = fk * (~mask[:, -1]).float()[:, None, None]
        (dk,) = torch.autograd.grad(fk, k_last, (gd.float() @ v[:, :, -1, :, None].float()).squeeze(-1))
    dv = (gd.float().transpose(-1, -2) @ fk.detach()[..., None]).squeeze(-1)
    return dk, dv


def _cast(t, like):
    return None if t is None else t.to(like.dtype)
