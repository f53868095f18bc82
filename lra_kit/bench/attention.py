"""Attention benchmark: forward+backward time and peak memory against SDPA measured in the same run.

    python -m lra_kit.bench.attention [--lengths 1024 2048 4096 8192] [--device cuda] [--json PATH]

For each length: softmax through SDPA (causal, the baseline of the causal methods; and
non-causal, Luna's baseline), causal linear attention (Katharopoulos eq. 9 with the
constant-memory gradient), causal momentum attention (Nguyen eq. 13), and Luna (pack+unpack,
non-causal). Ratios are SDPA's time ÷ the method's time (> 1 means faster than SDPA) and the
method's time ÷ plain linear for momentum (GUIDE §9). It also reports the memory that storing
every per-position state S_i would take, the cost the custom gradient avoids.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch
from tqdm.auto import tqdm

from lra_kit.attention import (
    FavorPlus, LunaAttention, elu_plus_one, linear_attention, momentum_attention, performer_attention, softmax_attention,
)
from lra_kit.attention.naive import naive_cumulative_state_causal_product
from lra_kit.bench.measure import fix_mmap_threshold, interleaved_times, peak_memory
from lra_kit.results import make_results, write_results

METHODS = ("sdpa_causal", "linear_causal", "momentum_causal", "performer_causal", "sdpa", "luna")
# Not in the default table: causal linear attention whose numerator keeps every state S_i for
# autograd (the "naive implementation" of Katharopoulos §3.3.1), the memory baseline of the book.
EXTRA_METHODS = ("linear_cumulative_states",)
BASELINE = {"linear_causal": "sdpa_causal", "momentum_causal": "sdpa_causal", "performer_causal": "sdpa_causal", "luna": "sdpa"}


def _device_detail(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def _linear_with_cumulative_states(q, k, v, eps=1e-6):
    """Causal linear attention (eq. 9) with the numerator through all N states S_i (autograd keeps them)."""
    phi_q, phi_k = elu_plus_one(q), elu_plus_one(k)
    numerator = naive_cumulative_state_causal_product(phi_q, phi_k, v)
    return numerator / ((phi_q * torch.cumsum(phi_k, dim=2)).sum(-1, keepdim=True) + eps)


def make_step(method: str, *, B: int, H: int, N: int, D: int, dtype, device, beta: float, luna_length: int) -> Callable[[], None]:
    """A closure running one forward+backward of ``method`` on fresh-gradient inputs."""
    gen = torch.Generator(device="cpu").manual_seed(N)
    if method == "luna":
        d_model = H * D
        luna = LunaAttention(d_model, H).to(device, dtype)
        x = torch.randn(B, N, d_model, generator=gen).to(device, dtype).requires_grad_()
        p = torch.randn(1, luna_length, d_model, generator=gen).to(device, dtype)

        def step():
            y, packed = luna(x, p)
            (y.sum() + packed.sum()).backward()
            x.grad = None

        return step
    q, k, v = (torch.randn(B, H, N, D, generator=gen).to(device, dtype).requires_grad_() for _ in range(3))
    favor = FavorPlus(D, generator=gen).to(device)
    fns = {
        "sdpa_causal": lambda: softmax_attention(q, k, v, causal=True),
        "sdpa": lambda: softmax_attention(q, k, v),
        "linear_causal": lambda: linear_attention(q, k, v, causal=True),
        "momentum_causal": lambda: momentum_attention(q, k, v, beta=beta, gamma=1.0, causal=True),
        "performer_causal": lambda: performer_attention(q, k, v, feature_map=favor, causal=True),
        "linear_cumulative_states": lambda: _linear_with_cumulative_states(q, k, v),
    }
    fn = fns[method]

    def step():
        fn().sum().backward()
        q.grad = k.grad = v.grad = None

    return step


def _peaks(jobs, shape, device_name: str, progress: bool):
    """Peak memory of each job's forward+backward, after one warm-up run (one-time allocations are not the op's)."""
    device = torch.device(device_name)
    if device.type == "cpu":
        fix_mmap_threshold()  # before the first allocation, so that no freed block stays resident
    out = []
    for N, method in tqdm(jobs, desc="attention benchmark: memory", disable=not progress):
        step = make_step(method, N=N, device=device, **shape)
        step()
        out.append(peak_memory(step, device))
        del step
    return out


def measure_peaks(jobs, shape, device: torch.device, progress: bool):
    """Peak memory per job. On a CPU this runs in a fresh process: the allocator settings that
    make resident memory measurable (fixed mmap threshold) would slow the timed runs."""
    if device.type == "cuda":
        return _peaks(jobs, shape, str(device), progress)
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(_peaks, jobs, shape, "cpu", progress).result()


def peak_memory_by_length(
    methods, lengths, *, batch=1, heads=4, dim=64, dtype=torch.float32, device="cpu", beta=0.6, luna_length=16
) -> dict:
    """{method: [peak bytes of one forward+backward at each length]} — what a plot of memory against length needs."""
    unknown = set(methods) - set(METHODS) - set(EXTRA_METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; valid: {', '.join(METHODS + EXTRA_METHODS)}")
    shape = dict(B=batch, H=heads, D=dim, dtype=dtype, beta=beta, luna_length=luna_length)
    jobs = [(N, m) for m in methods for N in lengths]
    peaks = iter(measure_peaks(jobs, shape, torch.device(device), progress=False))
    return {m: [next(peaks) for _ in lengths] for m in methods}


def run(
    lengths=(1024, 2048, 4096, 8192), *, batch=1, heads=4, dim=64, dtype="float32", device=None,
    beta=0.6, luna_length=16, repeats=5, methods=METHODS, progress=True,
) -> dict:
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    unknown = set(methods) - set(METHODS) - set(EXTRA_METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; valid: {', '.join(METHODS + EXTRA_METHODS)}")
    rows = []
    jobs = [(N, m) for N in lengths for m in methods]
    shape = dict(B=batch, H=heads, D=dim, dtype=torch_dtype, beta=beta, luna_length=luna_length)
    bar = tqdm(total=len(jobs), desc="attention benchmark: time", disable=not progress)
    for N in lengths:
        # Rounds over all methods of one length, so that a burst of load elsewhere on the machine
        # hits every method alike instead of one method's repeats.
        steps = {m: make_step(m, N=N, device=device, **shape) for m in methods}
        times = interleaved_times(steps, device, repeats=repeats)
        for method in methods:
            ts = times[method]
            rows.append({"length": N, "method": method, "median_s": statistics.median(ts), "spread_s": max(ts) - min(ts)})
        bar.update(len(methods))
        del steps
    bar.close()
    peaks = measure_peaks(jobs, shape, device, progress)
    for row, peak in zip(rows, peaks):
        row["peak_bytes"] = peak
    by = {(r["length"], r["method"]): r for r in rows}
    for r in rows:
        base = by.get((r["length"], BASELINE.get(r["method"], "")))
        r["speedup_vs_sdpa"] = base["median_s"] / r["median_s"] if base else None
        r["memory_vs_sdpa"] = (r["peak_bytes"] / base["peak_bytes"]) if base and r["peak_bytes"] and base["peak_bytes"] else None
        plain = by.get((r["length"], "linear_causal"))
        r["time_vs_linear"] = r["median_s"] / plain["median_s"] if (plain and r["method"] == "momentum_causal") else None
        element = torch.tensor([], dtype=torch_dtype).element_size()
        r["per_position_states_bytes"] = batch * heads * r["length"] * dim * dim * element
    return {
        "config": {"lengths": list(lengths), "batch": batch, "heads": heads, "dim": dim, "dtype": dtype,
                   "beta": beta, "luna_length": luna_length, "repeats": repeats, "methods": list(methods)},
        "rows": rows,
        "device": _device_detail(device),
        "device_type": device.type,
    }


def format_table(result: dict) -> str:
    cfg = result["config"]
    lines = [
        f"device: {result['device']} | batch {cfg['batch']}, heads {cfg['heads']}, dim {cfg['dim']}, {cfg['dtype']}, "
        f"forward+backward, median of {cfg['repeats']}",
        f"{'length':>7} {'method':<16} {'median ms':>10} {'× SDPA speed':>12} {'peak MiB':>9} {'× SDPA mem':>10} {'÷ linear':>8}",
    ]
    for r in result["rows"]:
        fmt = lambda x, f: (f % x) if x is not None else "-"  # noqa: E731
        lines.append(
            f"{r['length']:>7} {r['method']:<16} {r['median_s'] * 1e3:>10.2f} {fmt(r['speedup_vs_sdpa'], '%.2f'):>12} "
            f"{fmt(r['peak_bytes'] and r['peak_bytes'] / 2**20, '%.1f'):>9} {fmt(r['memory_vs_sdpa'], '%.2f'):>10} "
            f"{fmt(r['time_vs_linear'], '%.2f'):>8}"
        )
    return "\n".join(lines)


def write_json(result: dict, path: Path, wall_s: float) -> None:
    """Write the table with the run's provenance (the keys of GUIDE §4, :mod:`lra_kit.results`)."""
    record = make_results(
        metrics={"rows": result["rows"]}, config=result["config"], scale="benchmark",
        steps=result["config"]["repeats"], seed=0, wall_s=wall_s, device=result["device_type"],
        experiment="bench/attention", device_detail=result["device"], python=sys.version.split()[0],
    )
    write_results(record, str(path))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--dtype", choices=["float32", "bfloat16", "float16"], default="float32")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--beta", type=float, default=0.6, help="momentum β (default 0.6)")
    parser.add_argument("--luna-length", type=int, default=16, help="length l of Luna's P (default 16)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS + EXTRA_METHODS)
    parser.add_argument("--json", type=Path, default=None, help="also write the table as JSON (e.g. results/bench/attention-cpu.json)")


def main_from_args(args: argparse.Namespace) -> int:
    for name in ("batch", "heads", "dim", "repeats", "luna_length"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} must be >= 1")
    if any(n < 1 for n in args.lengths):
        raise SystemExit("--lengths must be >= 1")
    start = time.perf_counter()
    result = run(
        args.lengths, batch=args.batch, heads=args.heads, dim=args.dim, dtype=args.dtype, device=args.device,
        beta=args.beta, luna_length=args.luna_length, repeats=args.repeats, methods=args.methods,
    )
    print(format_table(result))
    if args.json:
        write_json(result, args.json, time.perf_counter() - start)
        print(f"wrote {args.json}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lra_kit.bench.attention", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return main_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
