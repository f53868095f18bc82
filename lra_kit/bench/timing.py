"""One timer for every benchmark: the median of repeats, synchronised with the device.

On CUDA each call is bracketed by CUDA events (the device's own clock) after the queue has been
drained; on a CPU by ``time.perf_counter``. :func:`interleaved_times` runs several callables in
rounds — one call of each per round — so that a burst of load elsewhere on the machine hits every
method alike instead of one method's repeats; :func:`median_time` is the one-callable case. Those time each
call alone: on CUDA, from a drained queue, so a short call's time includes the host's launch overhead — a
*per-call latency*. :func:`pipelined_times` is the device's throughput time, as ``triton.testing.do_bench``
measures it: back-to-back calls, L2 flushed before each, one wait at the end; :func:`summary` gives its median
and spread.
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch


def synchronize(device: torch.device | str | None) -> None:
    """Wait for the device's queued work (a no-op on a CPU)."""
    device = torch.device(device) if device is not None else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _check(repeats: int, warmup: int) -> None:
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an int >= 1, got {repeats!r}")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {warmup!r}")


def _time_once(fn: Callable[[], object], device: torch.device) -> float:
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3
    begin = time.perf_counter()
    fn()
    return time.perf_counter() - begin


def interleaved_times(
    fns: dict[str, Callable[[], object]], device: torch.device | str | None = None, *, repeats: int = 5,
    warmup: int = 1, warmup_s: dict[str, float] | None = None,
) -> dict[str, list[float]]:
    """Seconds of each ``fns[name]()`` over ``repeats`` rounds, each round calling every callable once,
    after ``warmup`` untimed calls of each (compilation, autotuning, allocator growth). ``warmup_s``, when given,
    receives each callable's warm-up seconds: on a GPU, what compiling and autotuning its kernels cost."""
    _check(repeats, warmup)
    device = torch.device(device) if device is not None else torch.device("cpu")
    for name, fn in fns.items():
        start = time.perf_counter()
        for _ in range(warmup):
            fn()
        synchronize(device)
        if warmup_s is not None:
            warmup_s[name] = time.perf_counter() - start
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            times[name].append(_time_once(fn, device))
    return times


def median_time(
    fn: Callable[[], object], repeats: int = 5, warmup: int = 1, device: torch.device | str | None = None
) -> float:
    """Median seconds of ``fn()`` over ``repeats`` synchronised calls after ``warmup`` untimed ones."""
    return statistics.median(interleaved_times({"fn": fn}, device, repeats=repeats, warmup=warmup)["fn"])


# L2 flush: a buffer at least this many times the L2 cache is zeroed before each timed call (triton.testing.do_bench
# zeroes 256 MB; H100/H200 have 50/60 MB of L2).
FLUSH_FACTOR = 2


def pipelined_times(
    fn: Callable[[], object], device: torch.device | str | None = None, *, repeats: int = 25, warmup: int = 1,
    flush: Callable[[], object] | None = None, event=None,
) -> list[float]:
    """Seconds of each of ``repeats`` back-to-back calls of ``fn``, as ``triton.testing.do_bench`` measures them.

    On CUDA: the L2 cache is flushed (``flush``: zero a buffer of ``FLUSH_FACTOR`` × the L2's size) before each
    call, each call is bracketed by its own pair of CUDA events, and the host waits only once, after the last
    call. So the host queues call after call ahead of the device, and a call's time is the device's, not the
    host's launch overhead: a short call timed alone from an idle device measures Python and the launches
    (issue 50, item 2: SDPA flash at 1K took 0.82 ms alone, 0.22 ms pipelined). ``event`` makes an event (a test
    passes a fake); on a CPU each call is timed by ``time.perf_counter`` (no queue to pipeline)."""
    _check(repeats, warmup)
    device = torch.device(device) if device is not None else torch.device("cpu")
    for _ in range(warmup):
        fn()
    if device.type != "cuda" and event is None:
        out = []
        for _ in range(repeats):
            if flush is not None:
                flush()
            begin = time.perf_counter()
            fn()
            out.append(time.perf_counter() - begin)
        return out
    if event is None:
        def event():
            return torch.cuda.Event(enable_timing=True)
    if flush is None:
        flush = l2_flush(device)
    synchronize(device)
    marks = [(event(), event()) for _ in range(repeats)]
    for start, end in marks:
        flush()
        start.record()
        fn()
        end.record()
    marks[-1][1].synchronize()
    return [start.elapsed_time(end) / 1e3 for start, end in marks]


def l2_flush(device: torch.device) -> Callable[[], object]:
    """A callable that evicts the L2 cache of ``device`` by zeroing a buffer ``FLUSH_FACTOR`` times its size."""
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 2**20
    buffer = torch.empty(FLUSH_FACTOR * l2 // 4, dtype=torch.int32, device=device)
    return buffer.zero_


def summary(seconds: list[float]) -> dict:
    """The median of ``seconds`` with its spread: the 20th and 80th percentiles (do_bench's quantiles), the
    extremes and the count."""
    ordered = sorted(seconds)

    def quantile(p):
        i = p * (len(ordered) - 1)
        lo = int(i)
        hi = min(lo + 1, len(ordered) - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (i - lo)

    return {"median_s": statistics.median(ordered), "p20_s": quantile(0.2), "p80_s": quantile(0.8),
            "min_s": ordered[0], "max_s": ordered[-1], "count": len(ordered)}
