"""Attention benchmark: training time, prefill throughput and peak memory against SDPA measured in the same run.

    lra-kit bench attention [--lengths 1024 2048 4096 8192] [--device cuda] [--json PATH]

For each length, forward+backward of: softmax through SDPA (causal, the baseline of the causal
methods; and non-causal, Luna's baseline), causal linear attention (Katharopoulos eq. 9 with the
constant-memory gradient), causal momentum attention (Nguyen eq. 13), and Luna (pack+unpack,
non-causal). On CUDA with Triton installed it adds the Triton kernels (``linear_triton``,
``momentum_triton``), and with flash-linear-attention installed its chunk kernels (``fla_linear``,
and ``fla_momentum_composed``: plain − β·decayed, each by fla). Then prefill: the causal forward
over a prompt, in tokens/s, against SDPA writing the prompt's keys and values into a KV cache.

Printed ratios: SDPA's time ÷ the method's (> 1 means faster than SDPA); momentum's time ÷ plain
linear's (same implementation); peak memory ÷ SDPA's (on a CPU: what a fresh process with the default
allocator pays for its first call, as ``ru_maxrss`` would show it — :func:`lra_kit.bench.measure.process_peak`);
our time ÷ fla's; achieved bandwidth as a
fraction of the device's peak, counting only the bytes of q, k, v, o (forward) and of q, k, v,
∂o, ∂q, ∂k, ∂v (backward) — the minimum any implementation must move. Timing: median of repeats,
interleaved across methods (:mod:`lra_kit.bench.timing`); on CUDA the inputs rotate through
enough copies to exceed four times the L2 cache, so no method is timed from cache.
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
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from tqdm.auto import tqdm

from lra_kit.attention import (
    FavorPlus,
    LunaAttention,
    elu_plus_one,
    linear_attention,
    momentum_attention,
    performer_attention,
    softmax_attention,
)
from lra_kit.attention.naive import naive_cumulative_state_linear_attention
from lra_kit.bench.measure import process_peak, working_set_peaks
from lra_kit.bench.timing import interleaved_times
from lra_kit.atomic import check_writable
from lra_kit.results import make_results, write_results
from lra_kit.bench.entry import module_main

METHODS = ("sdpa_causal", "linear_causal", "momentum_causal", "performer_causal", "sdpa", "luna")
TRITON_METHODS = ("linear_triton", "momentum_triton")
FLA_METHODS = ("fla_linear", "fla_momentum_composed")
# Not in the default table: causal linear attention whose numerator keeps every state S_i for
# autograd (the "naive implementation" of Katharopoulos §3.3.1), the memory baseline of the book.
EXTRA_METHODS = ("linear_cumulative_states",)
ALL_METHODS = METHODS + TRITON_METHODS + FLA_METHODS + EXTRA_METHODS
BASELINE = {m: "sdpa_causal" for m in ALL_METHODS if m not in ("sdpa_causal", "sdpa", "luna")} | {"luna": "sdpa"}
PLAIN_OF = {"momentum_causal": "linear_causal", "momentum_triton": "linear_triton",
            "fla_momentum_composed": "fla_linear"}
FLA_OF = {"linear_triton": "fla_linear", "linear_causal": "fla_linear",
          "momentum_triton": "fla_momentum_composed", "momentum_causal": "fla_momentum_composed"}
CAUSAL_METHODS = tuple(m for m in ALL_METHODS if m not in ("sdpa", "luna", "linear_cumulative_states"))
PREFILL_BASELINE = "sdpa_kv_cache"
SDPA_BACKENDS = ("auto", "flash", "cudnn", "efficient", "math")
# Peak HBM bandwidth from the vendors' datasheets, bytes/s, matched against the device name.
PEAK_BANDWIDTH = {"H200": 4.8e12, "H100": 3.35e12, "A100": 2.0e12}
DEFAULTS = {  # (lengths, batch, heads, dtype) per device type
    "cpu": ((1024, 2048, 4096, 8192), 1, 4, "float32"),
    "cuda": ((1024, 2048, 4096, 8192, 16384, 32768, 65536), 4, 8, "bfloat16"),
}
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def fla_installed() -> bool:
    return importlib.util.find_spec("fla") is not None


def triton_ready(device: torch.device) -> bool:
    from lra_kit.attention.causal.triton import available

    return available(torch.empty(0, device=device))


def default_methods(device: torch.device) -> tuple[str, ...]:
    """The paper's methods everywhere; the Triton kernels and fla's on a GPU where they are installed."""
    methods = METHODS
    if device.type == "cuda" and triton_ready(device):
        methods += TRITON_METHODS
    if device.type == "cuda" and fla_installed():
        methods += FLA_METHODS
    return methods


def _device_detail(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def peak_bandwidth(device: torch.device) -> float | None:
    """Datasheet HBM bandwidth in bytes/s for known GPUs (None elsewhere)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((bw for key, bw in PEAK_BANDWIDTH.items() if key in name), None)


def sdpa_context(backend: str):
    """Pin SDPA to one backend (``auto``: PyTorch's choice)."""
    if backend == "auto":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    pick = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    return sdpa_kernel([pick[backend]])


def triton_linear(q, k, v, *, final_state=False):
    """Causal linear attention (eq. 9) as the library runs it on the Triton path (the library's causal op; the
    benchmark composes nothing): the product in Triton on V itself, φ and the normaliser beside it in the same
    autograd Function. ``final_state`` also forms the final state, which a prefill hands to generation."""
    return linear_attention(q, k, v, causal=True, output_final_state=final_state)[0]


def triton_momentum(q, k, v, *, beta, gamma=1.0, final_state=False):
    """Causal momentum attention (Nguyen eq. 13) as the library runs it on the Triton path."""
    return momentum_attention(q, k, v, beta=beta, gamma=gamma, causal=True, output_final_state=final_state)[0]


def pytorch_path(fn: Callable) -> Callable:
    """``fn`` on the chunked PyTorch path even where the Triton path would be chosen (a CUDA tensor): the
    ``*_causal`` rows, so that the ``*_triton`` rows are compared with something else than themselves."""
    from lra_kit.attention.causal import triton as gpu

    def run(*args, **kwargs):
        with gpu.disabled():
            return fn(*args, **kwargs)

    return run


def fla_linear(q, k, v, *, final_state=False):
    """flash-linear-attention's chunk kernel, (batch, length, heads, dim) layout, φ = elu + 1, no scaling."""
    from fla.ops.linear_attn import chunk_linear_attn

    out, _ = chunk_linear_attn(elu_plus_one(q), elu_plus_one(k), v, scale=1.0, normalize=True,
                               output_final_state=final_state)
    return out


def fla_momentum_composed(q, k, v, *, beta, final_state=False, eps=1e-6):
    """Momentum numerator composed from two fla kernels, (Σ qk v − β·Σ β^{i−j} qk v)/(1−β): the
    subtraction loses about log10(1/(1−β)) digits, which is why the Triton kernel carries both
    states with positive coefficients instead. A timing reference only."""
    from fla.ops.simple_gla import chunk_simple_gla

    phi_q, phi_k = elu_plus_one(q), elu_plus_one(k)
    plain, _ = chunk_simple_gla(q=phi_q, k=phi_k, v=v, scale=1.0, output_final_state=final_state)
    log_decay = torch.full((q.shape[2],), math.log(beta), device=q.device, dtype=torch.float32)
    decayed, _ = chunk_simple_gla(q=phi_q, k=phi_k, v=v, g_gamma=log_decay, scale=1.0,
                                  output_final_state=final_state)
    z = torch.cumsum(phi_k, dim=1)
    return (plain - beta * decayed) / (1 - beta) / ((phi_q * z).sum(-1, keepdim=True) + eps)


def _attention_fn(method: str, beta: float, sdpa_backend: str, final_state: bool = False) -> Callable:
    """method → f(q, k, v) on (batch, heads, length, dim) tensors; (batch, length, heads, dim) for fla's."""
    def sdpa(causal):
        def run(q, k, v):
            with sdpa_context(sdpa_backend):
                return softmax_attention(q, k, v, causal=causal)
        return run

    return {
        "sdpa_causal": sdpa(True),
        "sdpa": sdpa(False),
        "linear_causal": pytorch_path(lambda q, k, v: linear_attention(q, k, v, causal=True)[0]),
        "momentum_causal": pytorch_path(lambda q, k, v: momentum_attention(q, k, v, beta=beta, gamma=1.0,
                                                                           causal=True)[0]),
        "performer_causal": lambda q, k, v: performer_attention(q, k, v, feature_map=_favor(q), causal=True)[0],
        "linear_cumulative_states": naive_cumulative_state_linear_attention,
        "linear_triton": lambda q, k, v: triton_linear(q, k, v, final_state=final_state),
        "momentum_triton": lambda q, k, v: triton_momentum(q, k, v, beta=beta, final_state=final_state),
        "fla_linear": lambda q, k, v: fla_linear(q, k, v, final_state=final_state),
        "fla_momentum_composed": lambda q, k, v: fla_momentum_composed(q, k, v, beta=beta, final_state=final_state),
    }[method]


@functools.cache
def _favor_for(dim: int, device: str) -> FavorPlus:
    # One fixed draw per head size and device, as a trained Performer would hold it.
    return FavorPlus(dim, generator=torch.Generator().manual_seed(dim)).to(device)


def _favor(q: torch.Tensor) -> FavorPlus:
    return _favor_for(q.shape[-1], str(q.device))


def _input_sets(method, *, B, H, N, D, dtype, device, requires_grad) -> list[tuple[torch.Tensor, ...]]:
    """Random q, k, v; on CUDA enough copies to exceed 4× the L2 cache (rotated call by call)."""
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
    """A closure running one forward+backward of ``method`` on fresh-gradient inputs."""
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
    sets = itertools.cycle(_input_sets(method, B=B, H=H, N=N, D=D, dtype=dtype, device=device, requires_grad=True))

    def step():
        q, k, v = next(sets)
        fn(q, k, v).sum().backward()
        q.grad = k.grad = v.grad = None

    return step


def prefill_methods(methods) -> tuple[str, ...]:
    """SDPA with a KV cache, then every causal method of the run except SDPA itself."""
    return (PREFILL_BASELINE,) + tuple(m for m in methods if m in CAUSAL_METHODS and m != "sdpa_causal"
                                       and m != "linear_cumulative_states")


def make_prefill(method: str, *, B, H, N, D, dtype, device, beta, sdpa_backend="auto") -> Callable[[], None]:
    """One no-grad causal forward over an N-token prompt. SDPA also writes the keys and values into a
    preallocated KV cache; the Triton and fla paths also return the final recurrent state."""
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
    """Bytes any implementation must move: read q, k, v and write o; backward also reads q, k, v, ∂o and
    writes ∂q, ∂k, ∂v (7 more tensors). None for Luna, whose tensors are not q, k, v."""
    if method == "luna":
        return None
    return (4 + (7 if backward else 0)) * batch * heads * length * dim * element


def run(
    lengths=None, *, batch=None, heads=None, dim=64, dtype=None, device=None, beta=0.6, luna_length=16,
    repeats=5, methods=None, sdpa_backend=None, prefill=True, progress=True, on_length=None,
) -> dict:
    """Time every method at every length (interleaved), then prefill, then measure peak memory; return the table.
    ``on_length(result)``, when given, receives the table so far after each length (the command line writes its
    JSON then, so that a run stopped at a time limit keeps the lengths it finished)."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    default_lengths, default_batch, default_heads, default_dtype = DEFAULTS["cuda" if device.type == "cuda" else "cpu"]
    lengths = tuple(lengths or default_lengths)
    batch, heads, dtype = batch or default_batch, heads or default_heads, dtype or default_dtype
    methods = tuple(methods or default_methods(device))
    # FlashAttention takes only 16-bit inputs; float32 on CUDA gets the memory-efficient kernel.
    sdpa_backend = sdpa_backend or ("auto" if device.type != "cuda" else "flash" if dtype != "float32" else "efficient")
    _check_methods(methods)
    if any(m in TRITON_METHODS for m in methods) and not triton_ready(device):
        raise ValueError(f"{', '.join(TRITON_METHODS)} need Triton and a CUDA device (pip install -e .[gpu]); "
                         "LRA_KIT_TRITON=interpret runs them on a CPU, slowly")
    if any(m in FLA_METHODS for m in methods) and not (device.type == "cuda" and fla_installed()):
        raise ValueError(f"{', '.join(FLA_METHODS)} need flash-linear-attention and a CUDA device "
                         "(pip install flash-linear-attention)")
    if sdpa_backend not in SDPA_BACKENDS:
        raise ValueError(f"sdpa_backend must be one of {SDPA_BACKENDS}, got {sdpa_backend!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    if not 0.0 < beta < 1.0:
        raise ValueError(f"beta must be in (0, 1), got {beta!r}")
    torch_dtype = DTYPES[dtype]
    element = torch.empty((), dtype=torch_dtype).element_size()
    bandwidth = peak_bandwidth(device)
    shape = dict(B=batch, H=heads, D=dim, dtype=torch_dtype, beta=beta, luna_length=luna_length,
                 sdpa_backend=sdpa_backend)
    jobs = [(N, m) for N in lengths for m in methods]
    config = dict(device=device, batch=batch, heads=heads, dim=dim, dtype=dtype, beta=beta, luna_length=luna_length,
                  repeats=repeats, methods=methods, sdpa_backend=sdpa_backend, bandwidth=bandwidth)
    rows, prefill_rows = [], []
    pre_methods = prefill_methods(methods) if prefill else ()
    bar = tqdm(total=len(jobs) + len(lengths) * len(pre_methods), desc="attention benchmark: time",
               disable=not progress)
    for N in lengths:
        # Rounds over all methods of one length, so that a burst of load elsewhere on the machine
        # hits every method alike instead of one method's repeats.
        steps = {m: make_step(m, N=N, device=device, **shape) for m in methods}
        warmup_s = {}
        times = interleaved_times(steps, device, repeats=repeats, warmup_s=warmup_s)
        for method in methods:
            ts = times[method]
            rows.append({"length": N, "method": method, "median_s": statistics.median(ts),
                         "spread_s": max(ts) - min(ts), "warmup_s": warmup_s[method]})
        if progress:  # what compiling and autotuning cost, as it happens (a GPU run can be stopped at its limit)
            bar.write(f"{N}: first call " + ", ".join(f"{m} {warmup_s[m]:.1f} s" for m in methods))
        bar.update(len(methods))
        del steps
        if pre_methods:
            pre_shape = {k: v for k, v in shape.items() if k != "luna_length"}
            steps = {m: make_prefill(m, N=N, device=device, **pre_shape) for m in pre_methods}
            times = interleaved_times(steps, device, repeats=repeats)
            for method in pre_methods:
                median = statistics.median(times[method])
                prefill_rows.append({"length": N, "method": method, "median_s": median,
                                     "tokens_per_s": batch * N / median})
            bar.update(len(pre_methods))
            del steps
        peaks = measure_peaks([(N, m) for m in methods], shape, device, progress)
        for row, peak in zip(rows[-len(methods):], peaks, strict=True):
            row["peak_bytes"] = peak
        _add_ratios(rows, prefill_rows, batch=batch, heads=heads, dim=dim, element=element, bandwidth=bandwidth)
        if on_length is not None:
            on_length(_table(rows, prefill_rows, lengths[:lengths.index(N) + 1], **config))
    bar.close()
    return _table(rows, prefill_rows, lengths, **config)


def _table(rows, prefill_rows, lengths, *, device, batch, heads, dim, dtype, beta, luna_length, repeats, methods,
           sdpa_backend, bandwidth) -> dict:
    return {
        "config": {"lengths": list(lengths), "batch": batch, "heads": heads, "dim": dim, "dtype": dtype,
                   "beta": beta, "luna_length": luna_length, "repeats": repeats, "methods": list(methods),
                   "sdpa_backend": sdpa_backend, "peak_bandwidth": bandwidth,
                   "fla": fla_installed(), "triton": any(m in TRITON_METHODS for m in methods),
                   # CPU: a fresh process per row, default allocator, growth over the first call (measure.process_peak)
                   "memory_measure": "cuda allocator" if device.type == "cuda" else "process"},
        "rows": rows,
        "prefill": prefill_rows,
        "device": _device_detail(device),
        "device_type": device.type,
    }


def _add_ratios(rows, prefill_rows, *, batch, heads, dim, element, bandwidth) -> None:
    by = {(r["length"], r["method"]): r for r in rows}
    for r in rows:
        base = by.get((r["length"], BASELINE.get(r["method"], "")))
        r["speedup_vs_sdpa"] = base["median_s"] / r["median_s"] if base else None
        has_peaks = base and r["peak_bytes"] and base["peak_bytes"]
        r["memory_vs_sdpa"] = r["peak_bytes"] / base["peak_bytes"] if has_peaks else None
        plain = by.get((r["length"], PLAIN_OF.get(r["method"], "")))
        r["time_vs_linear"] = r["median_s"] / plain["median_s"] if plain else None
        fla = by.get((r["length"], FLA_OF.get(r["method"], "")))
        r["time_vs_fla"] = r["median_s"] / fla["median_s"] if fla else None
        moved = io_bytes(r["method"], batch=batch, heads=heads, length=r["length"], dim=dim, element=element,
                         backward=True)
        r["bandwidth_fraction"] = moved / r["median_s"] / bandwidth if (moved and bandwidth) else None
        r["per_position_states_bytes"] = batch * heads * r["length"] * dim * dim * element
    pre = {(r["length"], r["method"]): r for r in prefill_rows}
    for r in prefill_rows:
        base = pre.get((r["length"], PREFILL_BASELINE))
        r["speedup_vs_sdpa"] = base["median_s"] / r["median_s"] if base and r is not base else None
        moved = io_bytes(r["method"], batch=batch, heads=heads, length=r["length"], dim=dim, element=element,
                         backward=False)
        r["bandwidth_fraction"] = moved / r["median_s"] / bandwidth if (moved and bandwidth) else None


def _fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def format_table(result: dict) -> str:
    """The forward+backward table: one line per (length, method)."""
    cfg = result["config"]
    lines = [
        f"device: {result['device']} | batch {cfg['batch']}, heads {cfg['heads']}, dim {cfg['dim']}, {cfg['dtype']}, "
        f"forward+backward, median of {cfg['repeats']}" + (f", SDPA backend {cfg['sdpa_backend']}"
                                                          if cfg.get("sdpa_backend") else ""),
        (f"{'length':>7} {'method':<22} {'median ms':>10} {'× SDPA speed':>12} {'peak MiB':>9} {'× SDPA mem':>10} "
         f"{'÷ linear':>8} {'÷ fla':>6} {'BW frac':>7}"),
    ]
    for r in result["rows"]:
        lines.append(
            f"{r['length']:>7} {r['method']:<22} {r['median_s'] * 1e3:>10.2f} {_fmt(r['speedup_vs_sdpa'], '.2f'):>12} "
            f"{_fmt(r['peak_bytes'] and r['peak_bytes'] / 2**20, '.1f'):>9} {_fmt(r['memory_vs_sdpa'], '.2f'):>10} "
            f"{_fmt(r['time_vs_linear'], '.2f'):>8} {_fmt(r.get('time_vs_fla'), '.2f'):>6} "
            f"{_fmt(r.get('bandwidth_fraction'), '.2f'):>7}"
        )
    return "\n".join(lines)


def format_prefill(result: dict) -> str:
    """Prompt processing: no-grad causal forward, tokens/s, against SDPA filling a KV cache."""
    if not result.get("prefill"):
        return ""
    lines = ["prefill (causal forward over the prompt, no grad; SDPA also fills a KV cache)",
             f"{'length':>7} {'method':<22} {'median ms':>10} {'tokens/s':>12} {'× SDPA':>7} {'BW frac':>7}"]
    for r in result["prefill"]:
        lines.append(f"{r['length']:>7} {r['method']:<22} {r['median_s'] * 1e3:>10.2f} {r['tokens_per_s']:>12.4g} "
                     f"{_fmt(r['speedup_vs_sdpa'], '.2f'):>7} {_fmt(r['bandwidth_fraction'], '.2f'):>7}")
    return "\n".join(lines)


def judged_ratios(result: dict) -> list[dict]:
    """Per length, the ratios the GPU path is judged by, for our fastest implementation in the run
    (Triton if it ran, else the chunked PyTorch path)."""
    rows = {(r["length"], r["method"]): r for r in result["rows"]}
    pre = {(r["length"], r["method"]): r for r in result.get("prefill", [])}
    out = []
    for N in result["config"]["lengths"]:
        linear = next((m for m in ("linear_triton", "linear_causal") if (N, m) in rows), None)
        momentum = next((m for m in ("momentum_triton", "momentum_causal") if (N, m) in rows), None)

        def get(table, m, key, N=N):
            return table[(N, m)].get(key) if (N, m) in table else None

        out.append({
            "length": N, "linear": linear, "momentum": momentum,
            "sdpa_over_linear": get(rows, linear, "speedup_vs_sdpa"),
            "momentum_over_linear": get(rows, momentum, "time_vs_linear"),
            "linear_memory_vs_sdpa": get(rows, linear, "memory_vs_sdpa"),
            "momentum_memory_vs_sdpa": get(rows, momentum, "memory_vs_sdpa"),
            "linear_over_fla": get(rows, linear, "time_vs_fla"),
            "linear_bandwidth_fraction": get(rows, linear, "bandwidth_fraction"),
            "prefill_linear_vs_sdpa": get(pre, linear, "speedup_vs_sdpa"),
            "prefill_momentum_vs_sdpa": get(pre, momentum, "speedup_vs_sdpa"),
        })
    return out


def format_ratios(result: dict) -> str:
    ratios = judged_ratios(result)
    if not ratios:
        return ""
    lines = [f"ratios (linear = {ratios[0]['linear']}, momentum = {ratios[0]['momentum']}; fwd+bwd unless prefill)",
             (f"{'length':>7} {'SDPA÷lin':>9} {'mom÷lin':>8} {'mem lin/SDPA':>12} {'mem mom/SDPA':>12} "
              f"{'lin÷fla':>8} {'BW frac':>7} {'prefill lin×':>12} {'prefill mom×':>12}")]
    for r in ratios:
        lines.append(
            f"{r['length']:>7} {_fmt(r['sdpa_over_linear'], '.2f'):>9} {_fmt(r['momentum_over_linear'], '.2f'):>8} "
            f"{_fmt(r['linear_memory_vs_sdpa'], '.2f'):>12} {_fmt(r['momentum_memory_vs_sdpa'], '.2f'):>12} "
            f"{_fmt(r['linear_over_fla'], '.2f'):>8} {_fmt(r['linear_bandwidth_fraction'], '.2f'):>7} "
            f"{_fmt(r['prefill_linear_vs_sdpa'], '.2f'):>12} {_fmt(r['prefill_momentum_vs_sdpa'], '.2f'):>12}")
    return "\n".join(lines)


def write_json(result: dict, path: Path, wall_s: float) -> None:
    """Write the tables with the run's provenance (the keys of :mod:`lra_kit.results`)."""
    record = make_results(
        metrics={"rows": result["rows"], "prefill": result.get("prefill", []), "ratios": judged_ratios(result)},
        config=result["config"], scale="benchmark", steps=result["config"]["repeats"], seed=0, wall_s=wall_s,
        device=result["device_type"], experiment="bench/attention", device_detail=result["device"],
        python=sys.version.split()[0],
    )
    write_results(record, str(path))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cpu, cuda = DEFAULTS["cpu"], DEFAULTS["cuda"]
    parser.add_argument("--lengths", type=int, nargs="+", default=None,
                        help=f"default: {' '.join(map(str, cpu[0]))} on CPU, {cuda[0][0]}–{cuda[0][-1]} on CUDA")
    parser.add_argument("--batch", type=int, default=None, help=f"default {cpu[1]} on CPU, {cuda[1]} on CUDA")
    parser.add_argument("--heads", type=int, default=None, help=f"default {cpu[2]} on CPU, {cuda[2]} on CUDA")
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--dtype", choices=list(DTYPES), default=None, help="default float32 on CPU, bfloat16 on CUDA")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--beta", type=float, default=0.6, help="momentum β (default 0.6)")
    parser.add_argument("--luna-length", type=int, default=16, help="length l of Luna's P (default 16)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--methods", nargs="+", default=None, choices=ALL_METHODS,
                        help="default: the paper's methods, plus Triton and fla ones on CUDA when installed")
    parser.add_argument("--sdpa-backend", choices=SDPA_BACKENDS, default=None,
                        help="pin SDPA's backend (default on CUDA: flash, or efficient for float32; auto on CPU)")
    parser.add_argument("--no-prefill", action="store_true", help="skip the prefill (prompt processing) table")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write the tables as JSON (e.g. results/bench/attention-h200.json)")


def main_from_args(args: argparse.Namespace) -> int:
    for name in ("batch", "heads", "dim", "repeats", "luna_length"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be >= 1")
    if args.lengths and any(n < 1 for n in args.lengths):
        raise SystemExit("--lengths must be >= 1")
    if args.json:
        check_writable(args.json)  # before the run, not after it
    start = time.perf_counter()

    def write_so_far(result):
        write_json(result, args.json, time.perf_counter() - start)

    result = run(
        args.lengths, batch=args.batch, heads=args.heads, dim=args.dim, dtype=args.dtype, device=args.device,
        beta=args.beta, luna_length=args.luna_length, repeats=args.repeats, methods=args.methods,
        sdpa_backend=args.sdpa_backend, prefill=not args.no_prefill, on_length=write_so_far if args.json else None,
    )
    for text in (format_table(result), format_prefill(result), format_ratios(result)):
        if text:
            print(text, end="\n\n")
    if args.json:
        write_json(result, args.json, time.perf_counter() - start)
        print(f"wrote {args.json}")
    return 0


def main(argv=None) -> int:
    return module_main("python -m lra_kit.bench.attention", __doc__, add_arguments, main_from_args, argv)


if __name__ == "__main__":
    sys.exit(main())
