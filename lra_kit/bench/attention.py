"""Attention benchmark: training time and peak memory of each attention against baselines timed in the same run.

    lra-kit bench attention [--device cpu|cuda] [--lengths N ...] [--methods ...] [--json PATH]

On a CPU (the papers' methods): forward+backward of softmax through SDPA (causal, the baseline of the causal
methods; and non-causal, Luna's baseline), causal linear attention (Katharopoulos eq. 9 with the constant-memory
gradient), causal momentum attention (Nguyen eq. 13), causal Performer, and Luna (pack+unpack, non-causal); and the
papers' baselines: Reformer's LSH attention with 1, 4 and 8 rounds (``lsh1_causal`` …: shared QK, 64 buckets, chunks
of 32; against causal SDPA, as Katharopoulos et al. Fig. 1) and Linformer (``linformer``: k = 256; against
non-causal SDPA, as Ma et al. Table 2). Then
prefill: the causal forward over a prompt, in tokens/s, against SDPA writing the prompt's keys and values into a
KV cache.

On CUDA (what a GPU user compares; lengths 1K–64K, batch 4, 8 heads of 64, bfloat16, causal), each method called
as its users call it: ``scaled_dot_product_attention(q, k, v, is_causal=True)`` pinned to FlashAttention
(``sdpa_flash``) and to cuDNN (``sdpa_cudnn``); flash-linear-attention's
``chunk_linear_attn(elu(q) + 1, elu(k) + 1, v, normalize=True)`` (``fla_chunk_linear``); and ours,
``linear_attention(q, k, v, causal=True)`` (``linear``) and ``momentum_attention(q, k, v, beta=0.6, causal=True)``
(``momentum``), which take the Triton path by themselves. A method that cannot run here (a backend the card
lacks, fla not installed, out of memory) gives a row "unavailable: <why>" instead of stopping the run. Each
row's first call (compiling, autotuning: fla's kernels try dozens of configurations on theirs) is timed apart,
as ``warmup_s``.

Every row has ``bound_ms``: the least HBM traffic of a forward+backward ÷ the card's bandwidth. The least
traffic is read q, k, v and write o (forward), then read q, k, v and ∂o and write ∂q, ∂k, ∂v (backward): 11
tensors of batch·heads·N·D elements (:func:`io_bytes`). The bandwidth comes from a table keyed by the device
name, else from a device-to-device copy timed in the same run (:mod:`lra_kit.bench.device`); the record says
which. ``× bound`` = the time ÷ that bound: 1 is the floor no implementation can beat.

Printed ratios: SDPA's time ÷ the method's (> 1 means faster than SDPA); momentum's time ÷ plain linear's (same
implementation); peak memory ÷ SDPA's (on a CPU: what a fresh process with the default allocator pays for its
first call, as ``ru_maxrss`` would show it — :func:`lra_kit.bench.measure.process_peak`). On CUDA also the
ratios the GPU path is judged by, each beside its target (``GPU_TARGETS``): linear ÷ fla's time, peak memory
÷ fla's, cuDNN SDPA's time ÷ linear's, momentum ÷ linear. Timing: median of repeats, interleaved across methods
(:mod:`lra_kit.bench.timing`), the backward from a stored upstream gradient as in a model; on CUDA the inputs
rotate through enough copies to exceed four times the L2 cache, so no method is timed from cache.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import importlib.util
import itertools
import math
import multiprocessing
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from lra_kit.attention import (
    FavorPlus,
    LunaAttention,
    elu_plus_one,
    linear_attention,
    linformer_attention,
    lsh_attention,
    momentum_attention,
    performer_attention,
    random_rotations,
    softmax_attention,
)
from lra_kit.attention.naive import naive_cumulative_state_linear_attention
from lra_kit.bench.device import bandwidth as device_bandwidth
from lra_kit.bench.device import gpu_slug
from lra_kit.bench.measure import peak_memory, process_peak, working_set_peaks
from lra_kit.bench.timing import interleaved_times, pipelined_times, summary, synchronize
from lra_kit.atomic import check_writable
from lra_kit.results import make_results, write_results
from lra_kit.bench.entry import module_main

METHODS = ("sdpa_causal", "linear_causal", "momentum_causal", "performer_causal", "sdpa", "luna",
           "lsh1_causal", "lsh4_causal", "lsh8_causal", "linformer")
# The papers' baselines (Katharopoulos et al. Fig. 1: lsh-1/4/8, causal; Ma et al. Table 2: Linformer, non-causal):
# LSH with 64 buckets and chunks of 32 (Katharopoulos et al. §4.2.1: "64 buckets", chunks of "approximately 32"),
# Linformer with k = 256, one E and F per layer.
LSH_ROUNDS = {"lsh1_causal": 1, "lsh4_causal": 4, "lsh8_causal": 8}
LSH_BUCKETS = 64
LSH_CHUNK = 32
LINFORMER_K = 256
PAPERS_BASELINES = (*LSH_ROUNDS, "linformer")
# What a GPU user compares, each called as its users call it (the module docstring).
GPU_METHODS = ("sdpa_flash", "sdpa_cudnn", "linear", "momentum", "fla_chunk_linear", "fla_chunk_linear_bare")
# Not in the default table: causal linear attention whose numerator keeps every state S_i for
# autograd (the "naive implementation" of Katharopoulos §3.3.1), the memory baseline of the book; and fla with
# φ in float32, the row the H200 record of 2026-11-28 called fla's.
EXTRA_METHODS = ("linear_cumulative_states", "fla_chunk_linear_phi_f32")
FLA_METHODS = ("fla_chunk_linear", "fla_chunk_linear_bare", "fla_chunk_linear_phi_f32")
ALL_METHODS = METHODS + GPU_METHODS + EXTRA_METHODS
SDPA_PINNED = {"sdpa_flash": "flash", "sdpa_cudnn": "cudnn"}  # method → the one SDPA backend it may use
# the CPU table's non-causal methods (no "_causal" in the name), each timed against non-causal SDPA (Luna, Linformer:
# Ma et al. Table 2); every other method against causal SDPA
NON_CAUSAL = tuple(m for m in METHODS if not m.endswith("_causal"))
BASELINE = {m: "sdpa_causal" if m not in NON_CAUSAL else "sdpa" for m in ALL_METHODS
            if m not in ("sdpa_causal", "sdpa", *SDPA_PINNED)}
PLAIN_OF = {"momentum_causal": "linear_causal", "momentum": "linear"}
FLA = "fla_chunk_linear"
OURS = (*PLAIN_OF.values(), *PLAIN_OF)  # ours, plain and momentum: the rows compared with fla's and SDPA's
CAUSAL_METHODS = tuple(m for m in ALL_METHODS if m not in (*NON_CAUSAL, "linear_cumulative_states"))
# Causal methods with no recurrent state to prefill (LSH: Katharopoulos et al. appendix C.1)
NO_STATE = tuple(LSH_ROUNDS)
PREFILL_BASELINE = "sdpa_kv_cache"
SDPA_BACKENDS = ("auto", "flash", "cudnn", "efficient", "math")
DEFAULTS = {  # (lengths, batch, heads, dtype) per device type
    "cpu": ((1024, 2048, 4096, 8192), 1, 4, "float32"),
    "cuda": ((1024, 4096, 16384, 32768, 65536), 4, 8, "bfloat16"),
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
TIMING = {  # what median_s is, per device type (written into the record)
    "cuda": "median_s: pipelined (triton.testing.do_bench's way): back-to-back calls, each between two CUDA events, "
            "L2 flushed before each, one wait at the end; spread_s = p80 − p20. latency_s: one call alone from an "
            "idle device (includes the host's launch overhead), median of the interleaved rounds",
    "cpu": "median_s: each call alone (time.perf_counter), median of rounds interleaved across methods",
}
PIPELINED_REPEATS = 25  # CUDA: back-to-back calls per row (issue 50, item 2: ≥ 20)
BACKWARD_TENSORS = 11  # read q, k, v, write o; read q, k, v, ∂o, write ∂q, ∂k, ∂v
FORWARD_TENSORS = 4  # read q, k, v, write o


@dataclass(frozen=True)
class Target:
    """A ratio the GPU path is judged by: ``ratio`` (a key of :func:`judged_ratios`) ``op`` ``value`` at every
    length from ``low`` to ``high`` (None: no upper end); ``value`` None: printed there, no threshold set."""

    ratio: str
    what: str
    op: str  # "<=" or ">="
    value: float | None
    low: int = 1
    high: int | None = None

    def applies(self, length: int) -> bool:
        return self.low <= length and (self.high is None or length <= self.high)

    def met(self, x: float | None) -> bool | None:
        if x is None or self.value is None:
            return None
        return x <= self.value if self.op == "<=" else x >= self.value

    def label(self) -> str:
        threshold = "(no threshold)" if self.value is None else f"{'≤' if self.op == '<=' else '≥'} {self.value:.1f}"
        if self.high is None:
            span = "every length" if self.low <= 1 else f"from {_k(self.low)}"
        else:
            span = f"at {_k(self.low)}" if self.low == self.high else f"at {_k(self.low)}–{_k(self.high)}"
        return f"{self.what} {threshold}, {span}"


GPU_TARGETS = (
    Target("linear_over_fla", "linear ÷ fla time", "<=", 1.2, 1024, 4096),
    Target("linear_over_fla", "linear ÷ fla time", "<=", 1.0, 16384, 65536),
    Target("linear_memory_vs_fla", "linear ÷ fla peak memory", "<=", None, 65536, 65536),
    Target("cudnn_over_linear", "cuDNN SDPA ÷ linear time", ">=", 3.0, 32768, 32768),
    Target("momentum_over_linear", "momentum ÷ linear time", "<=", 1.2),
)


def _k(n: int) -> str:
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


class Unavailable(Exception):
    """A method that cannot run on this device or install; its row says why instead of stopping the run."""


def fla_installed() -> bool:
    return importlib.util.find_spec("fla") is not None


def triton_ready(device: torch.device) -> bool:
    from lra_kit.attention.causal.triton import available

    return available(torch.empty(0, device=device))


def default_methods(device: torch.device) -> tuple[str, ...]:
    """The papers' methods on a CPU; on CUDA what a GPU user compares (``GPU_METHODS``)."""
    return GPU_METHODS if device.type == "cuda" else METHODS


def _device_detail(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def sdpa_context(backend: str):
    """Pin SDPA to one backend (``auto``: PyTorch's choice)."""
    if backend == "auto":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    pick = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    return sdpa_kernel([pick[backend]])


def pinned_sdpa(backend: str) -> Callable:
    """Causal ``scaled_dot_product_attention`` as its users call it, allowed one backend only: where that backend
    cannot run (another card, another dtype), PyTorch raises instead of falling back to another."""
    def run(q, k, v):
        with sdpa_context(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    return run


def pytorch_path(fn: Callable) -> Callable:
    """``fn`` on the chunked PyTorch path even where the Triton path would be chosen (a CUDA tensor): the
    ``*_causal`` rows, so that on a GPU the ``linear`` and ``momentum`` rows are compared with something else than
    themselves."""
    from lra_kit.attention.causal import triton as gpu

    def run(*args, **kwargs):
        with gpu.disabled():
            return fn(*args, **kwargs)

    return run


def fla_chunk_linear(q, k, v, *, final_state=False, normalize=True, phi_float32=False):
    """flash-linear-attention's chunk kernel as its users call it (fla's own ``LinearAttention`` layer maps q and k
    this way): (batch, length, heads, dim) layout, ``chunk_linear_attn(F.elu(q) + 1, F.elu(k) + 1, v,
    normalize=True)``, φ in the inputs' type (its scale cancels in the normaliser). ``normalize=False``: the kernel
    alone, the bare numerator (row ``fla_chunk_linear_bare``). ``phi_float32``: φ by this package's
    ``elu_plus_one``, which computes bf16 inputs in float32 and keeps 9 bytes an element alive for q and for k —
    what the H200 record of 2026-11-28 ran as its fla row (row ``fla_chunk_linear_phi_f32``)."""
    from fla.ops.linear_attn import chunk_linear_attn

    if phi_float32:
        fq, fk = elu_plus_one(q), elu_plus_one(k)
    else:
        fq, fk = F.elu(q) + 1, F.elu(k) + 1
    out, _ = chunk_linear_attn(fq, fk, v, normalize=normalize, output_final_state=final_state)
    return out


# What each fla row runs, written into every record (``config["definitions"]``): a ratio to fla's time means
# nothing without it (issue 50, item 1).
FLA_DEFINITIONS = {
    "fla_chunk_linear": "fla.ops.linear_attn.chunk_linear_attn(F.elu(q) + 1, F.elu(k) + 1, v, normalize=True), "
                        "φ in the inputs' type, (B, N, H, D) layout",
    "fla_chunk_linear_bare": "fla.ops.linear_attn.chunk_linear_attn(F.elu(q) + 1, F.elu(k) + 1, v, "
                             "normalize=False): the kernel alone, no normaliser",
    "fla_chunk_linear_phi_f32": "fla.ops.linear_attn.chunk_linear_attn(elu_plus_one(q), elu_plus_one(k), v, "
                                "normalize=True), φ by lra_kit's elu_plus_one: float32 for bf16 inputs",
}


def definitions(*, beta: float, luna_length: int, sdpa_backend: str) -> dict[str, str]:
    """What each row runs, for every method of the benchmark and the prefill's baseline, written into every record
    (``config["definitions"]``): a ratio means nothing without what its two rows ran. Every row is one
    forward+backward on (batch, heads, N, dim) inputs, the backward from a stored upstream gradient ∂o (Luna's:
    below), unless the text says otherwise; the ``*_causal`` rows and ``linear``/``momentum`` are timed against
    ``sdpa_causal``, the others against ``sdpa`` (``BASELINE``)."""
    sdpa = f"softmax_attention → torch's scaled_dot_product_attention, SDPA backend {sdpa_backend!r}"
    chunked = "the chunked PyTorch path (Triton switched off)"
    linear = "linear_attention(q, k, v, causal=True): φ = elu + 1, Katharopoulos et al. eq. 9 with the " \
             "constant-memory gradient (§3.3.1)"
    momentum = f"momentum_attention(q, k, v, beta={beta}, causal=True): Nguyen et al. eq. 13"
    out = {
        "sdpa_causal": f"{sdpa}, is_causal=True: the baseline of the causal rows",
        "sdpa": f"{sdpa}, not causal: the baseline of the non-causal rows (luna, linformer)",
        **{m: f"F.scaled_dot_product_attention(q, k, v, is_causal=True) allowed the {b} backend only (no fallback)"
           for m, b in SDPA_PINNED.items()},
        "linear": f"{linear}, on the path it chooses (Triton on CUDA where installed)",
        "momentum": f"{momentum}, on the path it chooses (Triton on CUDA where installed)",
        "linear_causal": f"{linear}, on {chunked}",
        "momentum_causal": f"{momentum}, on {chunked}",
        "performer_causal": "performer_attention(q, k, v, feature_map=FavorPlus(dim), causal=True): FAVOR+ "
                            "(Choromanski et al.), ⌈dim·ln dim⌉ positive orthogonal random features, one fixed draw",
        "luna": f"LunaAttention(heads·dim, heads)(x, p): Ma et al. pack and unpack (§3.1), non-causal, P of length "
                f"{luna_length}, its input and output projections included (x is (batch, N, heads·dim)); the "
                "backward from (y.sum() + packed.sum())",
        **{m: f"lsh_attention(q, v, rotations, chunk_size={LSH_CHUNK}, causal=True): Reformer's shared-QK LSH "
              f"attention (Kitaev et al. §2), {r} hashing round{'s' * (r > 1)} (rotations fixed), {LSH_BUCKETS} "
              f"buckets, chunks of {LSH_CHUNK} each seeing itself and the chunk before (look_back='round'), no "
              "attention to oneself unless alone; q is the shared query/key, k is not read"
           for m, r in LSH_ROUNDS.items()},
        "linformer": f"linformer_attention(q, k, v, E=E, F=F): Wang et al. eq. 7, k = {LINFORMER_K}, not causal; "
                     f"one E and one F ({LINFORMER_K} × N, U(±1/√k)) for every head (sharing 'headwise'), their "
                     "gradients computed as a model's parameters' are (and dropped after each step)",
        "linear_cumulative_states": "naive_cumulative_state_linear_attention(q, k, v): causal linear attention "
                                    "whose numerator keeps every state S_i for autograd (Katharopoulos et al. "
                                    "§3.3.1's naive implementation)",
        **FLA_DEFINITIONS,
        PREFILL_BASELINE: "prefill baseline: k and v copied into a preallocated KV cache, then "
                          f"{sdpa}, is_causal=True, no grad (the prefill's other rows: each method's forward "
                          "alone, no grad, returning its final state)",
    }
    return out


def check_runnable(method: str, device: torch.device) -> None:
    """Raise :class:`Unavailable` with the reason where ``method`` cannot run on ``device`` at all."""
    if method in FLA_METHODS:
        if not fla_installed():
            raise Unavailable("flash-linear-attention is not installed (pip install fla-core)")
        if device.type != "cuda":
            raise Unavailable("flash-linear-attention's kernels are Triton kernels for CUDA devices")


def _attention_fn(method: str, beta: float, sdpa_backend: str, final_state: bool = False) -> Callable:
    """method → f(q, k, v) on (batch, heads, length, dim) tensors; (batch, length, heads, dim) for fla's."""
    def sdpa(causal):
        def run(q, k, v):
            with sdpa_context(sdpa_backend):
                return softmax_attention(q, k, v, causal=causal)
        return run

    def linear(q, k, v):  # as a user calls it: the Triton path on CUDA where Triton is installed
        return linear_attention(q, k, v, causal=True, output_final_state=final_state)[0]

    def momentum(q, k, v):
        return momentum_attention(q, k, v, beta=beta, causal=True, output_final_state=final_state)[0]

    return {
        "sdpa_causal": sdpa(True),
        "sdpa": sdpa(False),
        "sdpa_flash": pinned_sdpa("flash"),
        "sdpa_cudnn": pinned_sdpa("cudnn"),
        "linear": linear,
        "momentum": momentum,
        "linear_causal": pytorch_path(linear),
        "momentum_causal": pytorch_path(momentum),
        "performer_causal": lambda q, k, v: performer_attention(q, k, v, feature_map=_favor(q), causal=True)[0],
        **{m: functools.partial(_lsh, n_hashes=r) for m, r in LSH_ROUNDS.items()},
        "linformer": _linformer,
        "linear_cumulative_states": naive_cumulative_state_linear_attention,
        FLA: lambda q, k, v: fla_chunk_linear(q, k, v, final_state=final_state),
        "fla_chunk_linear_bare": lambda q, k, v: fla_chunk_linear(q, k, v, final_state=final_state, normalize=False),
        "fla_chunk_linear_phi_f32": lambda q, k, v: fla_chunk_linear(q, k, v, final_state=final_state,
                                                                     phi_float32=True),
    }[method]


def _lsh(q, k, v, *, n_hashes: int):
    """Shared-QK LSH attention as the LSH rows run it: q is the shared query/key (k is not read), ``LSH_BUCKETS``
    buckets, chunks of ``LSH_CHUNK``."""
    rotations = _rotations_for(n_hashes, q.shape[-1], str(q.device))
    return lsh_attention(q, v, rotations=rotations, chunk_size=LSH_CHUNK, causal=True)


@functools.cache
def _rotations_for(n_hashes: int, dim: int, device: str) -> torch.Tensor:
    # fixed, as in eval; training draws new ones (a randn of n_hashes·dim·32 numbers, nothing next to the attention)
    return random_rotations(n_hashes, dim, LSH_BUCKETS, generator=torch.Generator().manual_seed(dim), device=device)


def _linformer(q, k, v):
    """Linformer with k = 256 and one E, F per layer (their gradients computed, as a model's parameters)."""
    E, F = _projections_for(q.shape[2], str(q.device), q.dtype)
    return linformer_attention(q, k, v, E=E, F=F)


@functools.cache
def _projections_for(n: int, device: str, dtype) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(n)
    return tuple(torch.empty(LINFORMER_K, n).uniform_(-LINFORMER_K ** -0.5, LINFORMER_K ** -0.5, generator=g)
                 .to(device, dtype).requires_grad_() for _ in range(2))


@functools.cache
def _favor_for(dim: int, device: str) -> FavorPlus:
    # One fixed draw per head size and device, as a trained Performer would hold it.
    return FavorPlus(dim, generator=torch.Generator().manual_seed(dim)).to(device)


def _favor(q: torch.Tensor) -> FavorPlus:
    return _favor_for(q.shape[-1], str(q.device))


def _input_sets(method, *, B, H, N, D, dtype, device, requires_grad) -> list[tuple[torch.Tensor, ...]]:
    """Random q, k, v; on CUDA enough copies to exceed 4× the L2 cache (rotated call by call; with the upstream
    gradient of :func:`make_step`, four tensors a set)."""
    gen = torch.Generator(device="cpu").manual_seed(N)
    shape = (B, N, H, D) if method.startswith("fla_") else (B, H, N, D)
    copies = 1
    if device.type == "cuda":
        set_bytes = 3 * math.prod(shape) * torch.empty((), dtype=dtype).element_size()
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
        copies = max(1, min(32, math.ceil(4 * l2 / set_bytes)))
    return [tuple(torch.randn(shape, generator=gen).to(device, dtype).requires_grad_(requires_grad) for _ in range(3))
            for _ in range(copies)]


def make_step(method: str, *, B: int, H: int, N: int, D: int, dtype, device, beta: float, luna_length: int,
              sdpa_backend: str = "auto") -> Callable[[], None]:
    """A closure running one forward+backward of ``method`` on fresh-gradient inputs, the backward from a stored
    upstream gradient ∂o (:class:`Unavailable` where ``method`` cannot run on ``device``)."""
    check_runnable(method, torch.device(device))
    if method == "luna":
        gen = torch.Generator(device="cpu").manual_seed(N)
        d_model = H * D
        luna = LunaAttention(d_model, H).to(device, dtype)
        x = torch.randn(B, N, d_model, generator=gen).to(device, dtype).requires_grad_()
        p = torch.randn(1, luna_length, d_model, generator=gen).to(device, dtype)

        def step():
            y, packed, _ = luna(x, p)
            (y.sum() + packed.sum()).backward()
            x.grad = None

        return step
    fn = _attention_fn(method, beta, sdpa_backend)
    # With each set its upstream gradient ∂o, a stored tensor as a model hands back: ``.sum().backward()`` would
    # hand a broadcast one, which costs no memory traffic to read and which some backward kernels copy out first.
    inputs = [(q, k, v, torch.randn_like(v)) for q, k, v in _input_sets(
        method, B=B, H=H, N=N, D=D, dtype=dtype, device=device, requires_grad=True)]
    sets = itertools.cycle(inputs)
    # Linformer's E and F are parameters: their gradients are dropped after each step as a model's optimizer
    # step does (zero_grad's set_to_none), so that every call allocates them as the first one did
    q0 = inputs[0][0]
    params = _projections_for(N, str(q0.device), q0.dtype) if method == "linformer" else ()

    def step():
        q, k, v, grad_out = next(sets)
        fn(q, k, v).backward(grad_out)
        for t in (q, k, v, *params):
            t.grad = None

    return step


def prefill_methods(methods) -> tuple[str, ...]:
    """SDPA with a KV cache, then every causal method of the run except SDPA itself."""
    return (PREFILL_BASELINE,) + tuple(m for m in methods if m in CAUSAL_METHODS and not m.startswith("sdpa")
                                       and m != "linear_cumulative_states" and m not in NO_STATE)


def make_prefill(method: str, *, B, H, N, D, dtype, device, beta, sdpa_backend="auto") -> Callable[[], None]:
    """One no-grad causal forward over an N-token prompt. SDPA also writes the keys and values into a
    preallocated KV cache; ours and fla's also return the final recurrent state."""
    check_runnable(method, torch.device(device))
    sets = itertools.cycle(_input_sets(method if method != PREFILL_BASELINE else "sdpa", B=B, H=H, N=N, D=D,
                                       dtype=dtype, device=device, requires_grad=False))
    if method == PREFILL_BASELINE:
        cache_k = torch.empty(B, H, N, D, device=device, dtype=dtype)
        cache_v = torch.empty_like(cache_k)
        attend = _attention_fn("sdpa_causal", beta, sdpa_backend)

        def step():
            q, k, v = next(sets)
            with torch.inference_mode():
                cache_k.copy_(k)
                cache_v.copy_(v)
                attend(q, k, v)

        return step
    fn = _attention_fn(method, beta, sdpa_backend, final_state=True)

    def step():
        with torch.inference_mode():
            fn(*next(sets))

    return step


def _attention_step(job, device: torch.device, shape: dict) -> Callable:
    N, method = job
    return make_step(method, N=N, device=device, **shape)


def _process_peak(job, shape):
    N, method = job
    torch.set_num_threads(shape.pop("threads"))
    return process_peak(lambda: make_step(method, N=N, device=torch.device("cpu"), **shape))


def measure_peaks(jobs, shape, device: torch.device, progress: bool, cpu_measure: str = "process"):
    """Peak memory per job. On a CPU, ``cpu_measure="process"`` (the default) gives each job a fresh process with
    the default allocator and reports what that process pays (:func:`lra_kit.bench.measure.process_peak`): the
    number a user sees in ``ru_maxrss``. ``"working-set"`` runs all jobs in one fresh process with a fixed mmap
    threshold, after a warm-up, and reports the operation's own working set
    (:func:`lra_kit.bench.measure.peak_memory`)."""
    if device.type == "cuda" or cpu_measure == "working-set":
        return working_set_peaks(functools.partial(_attention_step, shape=shape), jobs, device,
                                 desc="attention benchmark: memory" if progress else None)
    if cpu_measure != "process":
        raise ValueError(f"cpu_measure must be 'process' or 'working-set', got {cpu_measure!r}")
    ctx = multiprocessing.get_context("spawn")
    out = []
    for job in tqdm(jobs, desc="attention benchmark: memory", disable=not progress):
        # one process per job: no job inherits another's heap
        with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
            out.append(pool.submit(_process_peak, job, dict(shape, threads=torch.get_num_threads())).result())
    return out


def _check_methods(methods) -> None:
    unknown = set(methods) - set(ALL_METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; valid: {', '.join(ALL_METHODS)}")


def peak_memory_by_length(
    methods, lengths, *, batch=1, heads=4, dim=64, dtype=torch.float32, device="cpu", beta=0.6, luna_length=16
) -> dict:
    """{method: [peak bytes of one forward+backward at each length]} — what a plot of memory against length needs."""
    _check_methods(methods)
    shape = dict(B=batch, H=heads, D=dim, dtype=dtype, beta=beta, luna_length=luna_length)
    jobs = [(N, m) for m in methods for N in lengths]
    # the operation's own working set (how it grows with length), not the process's first-call costs
    peaks = iter(measure_peaks(jobs, shape, torch.device(device), progress=False, cpu_measure="working-set"))
    return {m: [next(peaks) for _ in lengths] for m in methods}


def io_bytes(method: str, *, batch: int, heads: int, length: int, dim: int, element: int, backward: bool) -> int | None:
    """Bytes any implementation must move through HBM: read q, k, v and write o (forward, 4 tensors); a
    forward+backward also reads q, k, v and ∂o again and writes ∂q, ∂k, ∂v (11 tensors in all). None for Luna,
    whose tensors are not q, k, v."""
    if method == "luna":
        return None
    return (BACKWARD_TENSORS if backward else FORWARD_TENSORS) * batch * heads * length * dim * element


def bound_ms(nbytes: int | None, bandwidth: float | None) -> float | None:
    """The least time to move ``nbytes`` at ``bandwidth`` bytes/s, in milliseconds (None where either is)."""
    if nbytes is None or not bandwidth:
        return None
    return nbytes / bandwidth * 1e3


def _reason(err: BaseException, caught: list) -> str:
    """One line: the error, then what PyTorch warned while it looked for a kernel (SDPA's reasons)."""
    message = str(err).strip().splitlines()
    lines = [f"{type(err).__name__}: {message[0]}" if message else type(err).__name__]
    for w in caught:
        text = " ".join(str(w.message).split())
        if text and text not in lines:
            lines.append(text)
    return "; ".join(lines)


# What a method that cannot run here raises on its first call: a backend the card or dtype lacks
# (SDPA's "No available kernel"), a broken install, too little memory. Ours raise nothing of the kind:
# an error in our own methods is a bug and stops the run.
THIRD_PARTY = tuple(SDPA_PINNED) + FLA_METHODS


def first_call(method: str, make: Callable[[], Callable[[], None]], device: torch.device):
    """Build ``method``'s step with ``make()`` and call it once, timed (compiling and autotuning happen here).
    Returns ``(step, seconds, None)``, or ``(None, None, why)`` where the method cannot run: :class:`Unavailable`,
    out of memory, or, for SDPA pinned to a backend and for fla, the RuntimeError or ImportError it raised."""
    expected = (Unavailable, torch.cuda.OutOfMemoryError) + ((RuntimeError, ImportError) if method in THIRD_PARTY
                                                               else ())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            step = make()
            start = time.perf_counter()
            step()
            synchronize(device)
            return step, time.perf_counter() - start, None
        except expected as err:
            why = str(err) if isinstance(err, Unavailable) else _reason(err, caught)
    if device.type == "cuda":
        torch.cuda.empty_cache()  # what a failed call left in the allocator's cache (its traceback is gone now)
    return None, None, why


def run(
    lengths=None, *, batch=None, heads=None, dim=64, dtype=None, device=None, beta=0.6, luna_length=16,
    repeats=5, methods=None, sdpa_backend=None, prefill=True, progress=True, on_length=None,
) -> dict:
    """Time every method at every length (interleaved), then prefill, then measure peak memory; return the table.
    Each method's first call at each length is timed apart (``warmup_s``); a method that cannot run there gives an
    entry of ``unavailable`` instead of a row. ``on_length(result)``, when given, receives the table so far after
    each length (the command line writes its JSON then, so that a run stopped at a time limit keeps the lengths
    it finished)."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    default_lengths, default_batch, default_heads, default_dtype = DEFAULTS["cuda" if device.type == "cuda" else "cpu"]
    lengths = tuple(lengths or default_lengths)
    batch, heads, dtype = batch or default_batch, heads or default_heads, dtype or default_dtype
    methods = tuple(methods or default_methods(device))
    # FlashAttention takes only 16-bit inputs; float32 on CUDA gets the memory-efficient kernel.
    sdpa_backend = sdpa_backend or ("auto" if device.type != "cuda" else "flash" if dtype != "float32" else "efficient")
    _check_methods(methods)
    if sdpa_backend not in SDPA_BACKENDS:
        raise ValueError(f"sdpa_backend must be one of {SDPA_BACKENDS}, got {sdpa_backend!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    torch_dtype = DTYPES[dtype]
    element = torch.empty((), dtype=torch_dtype).element_size()
    bandwidth = device_bandwidth(device)
    shape = dict(B=batch, H=heads, D=dim, dtype=torch_dtype, beta=beta, luna_length=luna_length,
                 sdpa_backend=sdpa_backend)
    config = dict(device=device, batch=batch, heads=heads, dim=dim, dtype=dtype, beta=beta, luna_length=luna_length,
                  repeats=repeats, methods=methods, sdpa_backend=sdpa_backend, bandwidth=bandwidth,
                  load_start=load_average())
    rows, prefill_rows, unavailable = [], [], []
    pre_methods = prefill_methods(methods) if prefill else ()
    bar = tqdm(total=len(lengths) * (len(methods) + len(pre_methods)), desc="attention benchmark: time",
               disable=not progress)
    for N in lengths:
        # Rounds over all methods of one length, so that a burst of load elsewhere on the machine
        # hits every method alike instead of one method's repeats.
        steps, warmup_s = {}, {}
        for m in methods:
            step, seconds, why = first_call(m, functools.partial(make_step, m, N=N, device=device, **shape), device)
            if why is None:
                steps[m], warmup_s[m] = step, seconds
            else:
                unavailable.append({"length": N, "method": m, "unavailable": why})
            if progress:  # what compiling and autotuning cost, as it happens (a GPU run can be stopped at its limit)
                bar.write(f"{N}: {m} first call " + (f"{seconds:.1f} s" if why is None else f"unavailable: {why}"))
        times = interleaved_times(steps, device, repeats=repeats)  # after one more untimed call each
        for method, ts in times.items():
            row = {"length": N, "method": method, "median_s": statistics.median(ts),
                   "spread_s": max(ts) - min(ts), "warmup_s": warmup_s[method]}
            if device.type == "cuda":  # the device's time, pipelined; the call alone stays as its latency
                piped = summary(pipelined_times(steps[method], device, repeats=max(PIPELINED_REPEATS, repeats)))
                row.update(latency_s=row["median_s"], latency_spread_s=row["spread_s"], median_s=piped["median_s"],
                           spread_s=piped["p80_s"] - piped["p20_s"], p20_s=piped["p20_s"], p80_s=piped["p80_s"],
                           pipelined_count=piped["count"])
            rows.append(row)
        bar.update(len(methods))
        if device.type == "cuda":  # the caching allocator's peak over one more call of each warm step
            peaks = [peak_memory(steps[m], device) for m in times]
        else:
            peaks = measure_peaks([(N, m) for m in times], shape, device, progress)
        for row, peak in zip(rows[len(rows) - len(times):], peaks, strict=True):
            row["peak_bytes"] = peak
        del steps
        ran = {m for m in methods if m in times}
        runnable = [m for m in pre_methods if m == PREFILL_BASELINE or m in ran]
        if runnable:
            pre_shape = {k: v for k, v in shape.items() if k != "luna_length"}
            steps = {m: make_prefill(m, N=N, device=device, **pre_shape) for m in runnable}
            times = interleaved_times(steps, device, repeats=repeats)
            for method in runnable:
                median = statistics.median(times[method])
                prefill_rows.append({"length": N, "method": method, "median_s": median,
                                     "tokens_per_s": batch * N / median})
            del steps
        bar.update(len(pre_methods))
        if device.type == "cuda":
            torch.cuda.empty_cache()  # the next length's inputs are larger
        add_ratios(rows, prefill_rows, batch=batch, heads=heads, dim=dim, element=element,
                   bandwidth=bandwidth["bytes_per_s"])
        if on_length is not None:
            on_length(_table(rows, prefill_rows, unavailable, lengths[:lengths.index(N) + 1], **config))
    bar.close()
    return _table(rows, prefill_rows, unavailable, lengths, **config)


def run_definitions(methods, prefill_rows=(), *, beta: float, luna_length: int, sdpa_backend: str) -> dict:
    """The :func:`definitions` of the run's methods and of its prefill's rows, in the run's order (a method without
    one is an error: no row is recorded without what it ran)."""
    known = definitions(beta=beta, luna_length=luna_length, sdpa_backend=sdpa_backend)
    names = list(dict.fromkeys([*methods, *(r["method"] for r in prefill_rows)]))
    lacking = [m for m in names if m not in known]
    if lacking:
        raise ValueError(f"no definition of {lacking}: add what they run to lra_kit.bench.attention.definitions")
    return {m: known[m] for m in names}


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("fla-core", "triton"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def load_average() -> float | None:
    """The machine's 1-minute load average (None where the system has none): a run on a loaded machine says so."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _table(rows, prefill_rows, unavailable, lengths, *, device, batch, heads, dim, dtype, beta, luna_length, repeats,
           methods, sdpa_backend, bandwidth, load_start=None) -> dict:
    first = {}
    for r in rows:  # the first length each method ran at: where it compiled and autotuned
        first.setdefault(r["method"], r["warmup_s"])
    return {
        "config": {"lengths": list(lengths), "batch": batch, "heads": heads, "dim": dim, "dtype": dtype,
                   "beta": beta, "luna_length": luna_length, "repeats": repeats, "methods": list(methods),
                   "sdpa_backend": sdpa_backend, "bandwidth": bandwidth,
                   "fla": fla_installed(), "versions": _versions(),
                   "definitions": run_definitions(methods, prefill_rows, beta=beta, luna_length=luna_length,
                                                  sdpa_backend=sdpa_backend),
                   "timing": TIMING["cuda" if device.type == "cuda" else "cpu"],
                   # which path linear_attention and momentum_attention chose for themselves here
                   "triton": device.type == "cuda" and triton_ready(device),
                   "first_call_s": first,
                   # the 1-minute load average when the run started and when this table was written (other work
                   # on the machine's cores slows every row; the ratios compare rows timed in the same rounds)
                   "load_average_1m": {"start": load_start, "end": load_average()},
                   # CPU: a fresh process per row, default allocator, growth over the first call (measure.process_peak)
                   "memory_measure": "cuda allocator" if device.type == "cuda" else "process"},
        "rows": rows,
        "prefill": prefill_rows,
        "unavailable": unavailable,
        "device": _device_detail(device),
        "device_type": device.type,
    }


def _over(a: dict | None, b: dict | None, key: str) -> float | None:
    """a[key] ÷ b[key], None where either row or value is missing (or b's is 0)."""
    if a is None or b is None or not a.get(key) or not b.get(key):
        return None
    return a[key] / b[key]


def add_ratios(rows, prefill_rows, *, batch, heads, dim, element, bandwidth) -> None:
    """Each row's ratios to the rows of the same length it is compared with, and its bound (in place).

    ``speedup_vs_sdpa`` and ``memory_vs_sdpa``: against its ``BASELINE``; ``time_vs_linear``: momentum ÷ plain
    linear of the same implementation; for ours (and fla's, against SDPA) ``time_vs_fla``, ``memory_vs_fla``,
    ``speedup_vs_cudnn``, ``speedup_vs_flash``; ``bound_ms``: :func:`io_bytes` ÷ ``bandwidth`` (bytes/s, None
    on a CPU) and ``time_over_bound`` = the median ÷ that bound."""
    by = {(r["length"], r["method"]): r for r in rows}
    for r in rows:
        N, m = r["length"], r["method"]
        base = by.get((N, BASELINE.get(m, "")))
        r["speedup_vs_sdpa"] = _over(base, r, "median_s")
        r["memory_vs_sdpa"] = _over(r, base, "peak_bytes")
        r["time_vs_linear"] = _over(r, by.get((N, PLAIN_OF.get(m, ""))), "median_s")
        fla = by.get((N, FLA)) if m in OURS else None
        r["time_vs_fla"] = _over(r, fla, "median_s")
        r["memory_vs_fla"] = _over(r, fla, "peak_bytes")
        compared = m in OURS or m == FLA
        r["speedup_vs_cudnn"] = _over(by.get((N, "sdpa_cudnn")), r, "median_s") if compared else None
        r["speedup_vs_flash"] = _over(by.get((N, "sdpa_flash")), r, "median_s") if compared else None
        r["bound_ms"] = bound_ms(io_bytes(m, batch=batch, heads=heads, length=N, dim=dim, element=element,
                                          backward=True), bandwidth)
        r["time_over_bound"] = r["median_s"] * 1e3 / r["bound_ms"] if r["bound_ms"] else None
        r["per_position_states_bytes"] = batch * heads * N * dim * dim * element
    pre = {(r["length"], r["method"]): r for r in prefill_rows}
    for r in prefill_rows:
        base = pre.get((r["length"], PREFILL_BASELINE))
        r["speedup_vs_sdpa"] = _over(base, r, "median_s") if r is not base else None
        r["bound_ms"] = bound_ms(io_bytes(r["method"], batch=batch, heads=heads, length=r["length"], dim=dim,
                                          element=element, backward=False), bandwidth)
        r["time_over_bound"] = r["median_s"] * 1e3 / r["bound_ms"] if r["bound_ms"] else None


def _fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


# (header, key, format, width, scale) of the forward+backward table; a column all "-" in a run is left out.
TABLE_COLUMNS = (
    ("median ms", "median_s", ".2f", 10, 1e3),
    ("latency ms/call", "latency_s", ".2f", 15, 1e3),
    ("bound ms", "bound_ms", ".3f", 9, 1),
    ("× bound", "time_over_bound", ".1f", 7, 1),
    ("first s", "warmup_s", ".1f", 7, 1),
    ("peak MiB", "peak_bytes", ".1f", 9, 2**-20),
    ("× SDPA speed", "speedup_vs_sdpa", ".2f", 12, 1),
    ("× SDPA mem", "memory_vs_sdpa", ".2f", 10, 1),
    ("× cuDNN", "speedup_vs_cudnn", ".2f", 7, 1),
    ("× flash", "speedup_vs_flash", ".2f", 7, 1),
    ("÷ linear", "time_vs_linear", ".2f", 8, 1),
    ("÷ fla", "time_vs_fla", ".2f", 6, 1),
    ("mem ÷ fla", "memory_vs_fla", ".2f", 9, 1),
)


def _scaled(r: dict, key: str, scale: float):
    x = r.get(key)
    return None if x is None else x * scale


def format_table(result: dict) -> str:
    """The forward+backward table: one line per (length, method), a method that could not run saying why."""
    cfg = result["config"]
    rows = result["rows"]
    columns = [c for c in TABLE_COLUMNS if any(r.get(c[1]) is not None for r in rows)] or list(TABLE_COLUMNS[:1])
    bw = cfg.get("bandwidth") or {}
    lines = [
        f"device: {result['device']} | batch {cfg['batch']}, heads {cfg['heads']}, dim {cfg['dim']}, {cfg['dtype']}, "
        f"forward+backward, median of {cfg['repeats']}" + (f", SDPA backend {cfg['sdpa_backend']}"
                                                          if cfg.get("sdpa_backend") else ""),
    ]
    if bw.get("bytes_per_s"):
        lines.append(f"bound: 11 tensors of batch·heads·N·dim ÷ {bw['bytes_per_s'] / 1e12:.2f} TB/s ({bw['source']}; "
                     f"a copy here: {bw['measured_copy'] / 1e12:.2f} TB/s)")
    lines.append(f"{'length':>7} {'method':<24} " + " ".join(f"{h:>{w}}" for h, _, _, w, _ in columns))
    by = {(r["length"], r["method"]): r for r in rows}
    missing = {(u["length"], u["method"]): u["unavailable"] for u in result.get("unavailable", [])}
    lengths = sorted({n for n, _ in by} | {n for n, _ in missing})
    for N in lengths:
        for m in list(dict.fromkeys(list(cfg.get("methods", [])) + [k[1] for k in by if k[0] == N])):
            if (N, m) in by:
                r = by[(N, m)]
                lines.append(f"{N:>7} {m:<24} " + " ".join(f"{_fmt(_scaled(r, key, scale), spec):>{w}}"
                                                          for _, key, spec, w, scale in columns))
            elif (N, m) in missing:
                why = missing[(N, m)]
                lines.append(f"{N:>7} {m:<24} unavailable: {why if len(why) <= 160 else why[:157] + '...'}")
    return "\n".join(lines)


def format_prefill(result: dict) -> str:
    """Prompt processing: no-grad causal forward, tokens/s, against SDPA filling a KV cache."""
    if not result.get("prefill"):
        return ""
    lines = ["prefill (causal forward over the prompt, no grad; SDPA also fills a KV cache)",
             f"{'length':>7} {'method':<24} {'median ms':>10} {'tokens/s':>12} {'× SDPA':>7} {'× bound':>7}"]
    for r in result["prefill"]:
        lines.append(f"{r['length']:>7} {r['method']:<24} {r['median_s'] * 1e3:>10.2f} {r['tokens_per_s']:>12.4g} "
                     f"{_fmt(r['speedup_vs_sdpa'], '.2f'):>7} {_fmt(r.get('time_over_bound'), '.1f'):>7}")
    return "\n".join(lines)


def judged_ratios(result: dict) -> list[dict]:
    """Per length, the ratios the implementation is judged by, for our linear and momentum rows of the run (as
    users call them where they ran, else the chunked PyTorch path): against SDPA (``sdpa_causal``) on a CPU;
    against fla's kernel and cuDNN's and FlashAttention's SDPA on a GPU (``GPU_TARGETS``)."""
    rows = {(r["length"], r["method"]): r for r in result["rows"]}
    pre = {(r["length"], r["method"]): r for r in result.get("prefill", [])}
    out = []
    for N in result["config"]["lengths"]:
        linear = next((m for m in ("linear", "linear_causal") if (N, m) in rows), None)
        momentum = next((m for m in ("momentum", "momentum_causal") if (N, m) in rows), None)

        def get(table, m, key, N=N):
            return table[(N, m)].get(key) if (N, m) in table else None

        out.append({
            "length": N, "linear": linear, "momentum": momentum,
            "sdpa_over_linear": get(rows, linear, "speedup_vs_sdpa"),
            "momentum_over_linear": get(rows, momentum, "time_vs_linear"),
            "linear_memory_vs_sdpa": get(rows, linear, "memory_vs_sdpa"),
            "momentum_memory_vs_sdpa": get(rows, momentum, "memory_vs_sdpa"),
            "linear_over_fla": get(rows, linear, "time_vs_fla"),
            "linear_memory_vs_fla": get(rows, linear, "memory_vs_fla"),
            "momentum_memory_vs_fla": get(rows, momentum, "memory_vs_fla"),
            "cudnn_over_linear": get(rows, linear, "speedup_vs_cudnn"),
            "flash_over_linear": get(rows, linear, "speedup_vs_flash"),
            "linear_over_bound": get(rows, linear, "time_over_bound"),
            "fla_over_bound": get(rows, FLA, "time_over_bound"),
            "prefill_linear_vs_sdpa": get(pre, linear, "speedup_vs_sdpa"),
            "prefill_momentum_vs_sdpa": get(pre, momentum, "speedup_vs_sdpa"),
        })
    return out


def target_verdicts(ratios: list[dict], targets=GPU_TARGETS) -> list[dict]:
    """For each target and each length of ``ratios`` it applies to: the ratio's value and whether it meets the
    target (None where the ratio was not measured or the target sets no threshold)."""
    out = []
    for t in targets:
        for r in ratios:
            if t.applies(r["length"]):
                value = r.get(t.ratio)
                out.append({"target": t.label(), "ratio": t.ratio, "length": r["length"], "value": value,
                            "met": t.met(value)})
    return out


# (header, key) of the ratio table; a column all "-" in a run is left out.
RATIO_COLUMNS = (
    ("SDPA÷lin", "sdpa_over_linear"), ("mom÷lin", "momentum_over_linear"), ("mem lin/SDPA", "linear_memory_vs_sdpa"),
    ("mem mom/SDPA", "momentum_memory_vs_sdpa"), ("lin÷fla", "linear_over_fla"),
    ("mem lin/fla", "linear_memory_vs_fla"), ("mem mom/fla", "momentum_memory_vs_fla"),
    ("cuDNN÷lin", "cudnn_over_linear"), ("flash÷lin", "flash_over_linear"), ("lin×bound", "linear_over_bound"),
    ("fla×bound", "fla_over_bound"), ("prefill lin×", "prefill_linear_vs_sdpa"),
    ("prefill mom×", "prefill_momentum_vs_sdpa"),
)


def format_ratios(result: dict) -> str:
    ratios = judged_ratios(result)
    if not ratios:
        return ""
    columns = [(h, k) for h, k in RATIO_COLUMNS if any(r.get(k) is not None for r in ratios)]
    if not columns:
        return ""
    names = next(((r["linear"], r["momentum"]) for r in ratios if r["linear"]), (None, None))
    lines = [f"ratios (linear = {names[0]}, momentum = {names[1]}; fwd+bwd unless prefill)",
             f"{'length':>7} " + " ".join(f"{h:>{max(len(h), 6)}}" for h, _ in columns)]
    for r in ratios:
        lines.append(f"{r['length']:>7} " + " ".join(f"{_fmt(r.get(k), '.2f'):>{max(len(h), 6)}}" for h, k in columns))
    return "\n".join(lines)


def format_targets(result: dict) -> str:
    """The GPU targets, each with its ratio at the lengths of the run it applies to (✓ met, ✗ missed, - not
    measured: a method of the ratio could not run); empty for a run without the GPU methods."""
    if not any(m in GPU_METHODS for m in result["config"].get("methods", [])):
        return ""
    verdicts = target_verdicts(judged_ratios(result))
    lines = ["targets (✓ met, ✗ missed, - not measured)"]
    for label in dict.fromkeys(t.label() for t in GPU_TARGETS):
        cells = [f"{_k(v['length'])} {_fmt(v['value'], '.2f')}{'' if v['met'] is None else ' ✓' if v['met'] else ' ✗'}"
                 for v in verdicts if v["target"] == label]
        lines.append(f"  {label}: " + (", ".join(cells) or "not measured (no length of the run in range)"))
    return "\n".join(lines)


def json_path(path: Path, device: torch.device) -> Path:
    """``path`` with ``{gpu}`` replaced by the device's ``lra_kit.bench.device.gpu_slug`` (``cpu`` on a CPU):
    ``results/bench/attention-{gpu}.json`` → ``results/bench/attention-h200.json`` on an H200."""
    device = torch.device(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return Path(str(path).replace("{gpu}", gpu_slug(name)))


def write_json(result: dict, path: Path, wall_s: float) -> None:
    """Write the tables with the run's provenance (the keys of :mod:`lra_kit.results`)."""
    ratios = judged_ratios(result)
    gpu = any(m in GPU_METHODS for m in result["config"]["methods"])
    record = make_results(
        metrics={"rows": result["rows"], "prefill": result.get("prefill", []),
                 "unavailable": result.get("unavailable", []), "ratios": ratios,
                 "targets": target_verdicts(ratios) if gpu else []},
        config=result["config"], scale="benchmark", steps=result["config"]["repeats"], seed=0, wall_s=wall_s,
        device=result["device_type"], experiment="bench/attention", device_detail=result["device"],
        python=sys.version.split()[0],
    )
    write_results(record, str(path))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cpu, cuda = DEFAULTS["cpu"], DEFAULTS["cuda"]
    parser.add_argument("--lengths", type=int, nargs="+", default=None,
                        help=f"default: {' '.join(map(str, cpu[0]))} on CPU, {' '.join(map(str, cuda[0]))} on CUDA")
    parser.add_argument("--batch", type=int, default=None, help=f"default {cpu[1]} on CPU, {cuda[1]} on CUDA")
    parser.add_argument("--heads", type=int, default=None, help=f"default {cpu[2]} on CPU, {cuda[2]} on CUDA")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--dtype", choices=list(DTYPES), default=None, help="default float32 on CPU, bfloat16 on CUDA")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--beta", type=float, default=0.6, help="momentum β (default 0.6)")
    parser.add_argument("--luna-length", type=int, default=16, help="length l of Luna's P (default 16)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--methods", nargs="+", default=None, choices=ALL_METHODS,
                        help=f"default: {' '.join(METHODS)} on CPU; {' '.join(GPU_METHODS)} on CUDA")
    parser.add_argument("--sdpa-backend", choices=SDPA_BACKENDS, default=None,
                        help="pin the backend of sdpa_causal, sdpa and the prefill's KV cache (default on CUDA: "
                             "flash, or efficient for float32; auto on CPU); sdpa_flash and sdpa_cudnn pin their own")
    parser.add_argument("--no-prefill", action="store_true", help="skip the prefill (prompt processing) table")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the tables as JSON; {gpu} in the path becomes the device's short name "
                             "(results/bench/attention-{gpu}.json → attention-h200.json on an H200)")


def main_from_args(args: argparse.Namespace) -> int:
    for name in ("batch", "heads", "dim", "repeats", "luna_length"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be >= 1")
    if args.lengths and any(n < 1 for n in args.lengths):
        raise SystemExit("--lengths must be >= 1")
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device here")
    path = json_path(args.json, device) if args.json else None
    if path:
        check_writable(path)  # before the run, not after it
    start = time.perf_counter()

    def write_so_far(result):
        write_json(result, path, time.perf_counter() - start)

    result = run(
        args.lengths, batch=args.batch, heads=args.heads, dim=args.dim, dtype=args.dtype, device=device,
        beta=args.beta, luna_length=args.luna_length, repeats=args.repeats, methods=args.methods,
        sdpa_backend=args.sdpa_backend, prefill=not args.no_prefill, on_length=write_so_far if path else None,
    )
    for text in (format_table(result), format_prefill(result), format_ratios(result), format_targets(result)):
        if text:
            print(text, end="\n\n")
    if path:
        write_json(result, path, time.perf_counter() - start)
        print(f"wrote {path}")
    return 0


def main(argv=None) -> int:
    return module_main("python -m lra_kit.bench.attention", __doc__, add_arguments, main_from_args, argv)


if __name__ == "__main__":
    sys.exit(main())
