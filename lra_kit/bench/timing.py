"""One timer for every benchmark: the median of repeats, synchronised with the device.

On CUDA each call is bracketed by CUDA events (the device's own clock) after the queue has been
drained; on a CPU by ``time.perf_counter``. :func:`interleaved_times` runs several callables in
rounds — one call of each per round — so that a burst of load elsewhere on the machine hits every
method alike instead of one method's repeats; :func:`median_time` is the one-callable case.
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
