"""Peak memory of a callable, on CPU or CUDA (timing: :mod:`lra_kit.bench.timing`).

Two CPU measures. :func:`process_peak` is what a user's process pays: in a fresh process with the
default allocator, the growth of the resident set's high-water mark over the step's first call
(first-call costs, memory the allocator keeps and fragments, all included; ``ru_maxrss`` before and
after shows the same) — the number the attention benchmark reports. Only the first call is
reproducible: with glibc's adaptive mmap threshold, later calls can raise it further (causal SDPA,
B 1, H 4, D 64, 4K tokens: 32, 43, then 59 MiB after one, two, three calls). :func:`peak_memory`
below is the operation's own working set (fixed threshold, after a warm-up call); :func:`working_set_peaks`
measures it for a list of jobs, the one loop the attention and training benchmarks share.

Peak memory on CUDA comes from the caching allocator's statistics; on a CPU (Linux) from the
process's resident-set high-water mark, reset before each measurement through
``/proc/self/clear_refs``. glibc is told to serve every allocation above 64 KiB with its own
mmap (a fixed threshold turns off glibc's adaptive one), so freed tensors leave the resident
set at once and the mark tracks what the operation itself needed. That setting makes every
large allocation a system call, so measure memory in a process that does no timing.
"""
from __future__ import annotations

import concurrent.futures
import ctypes
import ctypes.util
import multiprocessing
import re
from collections.abc import Callable, Sequence

import torch
from tqdm.auto import tqdm

from lra_kit.bench.timing import synchronize


def _proc_status_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        return int(re.search(rf"^{key}:\s+(\d+) kB", f.read(), re.M).group(1))


_M_MMAP_THRESHOLD = -3  # mallopt parameter number in glibc's malloc.h
_mallopt_done = False


def fix_mmap_threshold() -> None:
    """Make glibc mmap every allocation above 64 KiB (call before allocating what is to be measured)."""
    global _mallopt_done
    if _mallopt_done:
        return
    _mallopt_done = True
    name = ctypes.util.find_library("c")
    if name:
        try:
            ctypes.CDLL(name).mallopt(_M_MMAP_THRESHOLD, 64 * 1024)
        except (OSError, AttributeError):  # not glibc: the high-water mark is then an upper bound
            pass


def cpu_peak_supported() -> bool:
    fix_mmap_threshold()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        _proc_status_kib("VmHWM")
        return True
    except OSError:
        return False


def peak_memory(fn: Callable[[], object], device: torch.device) -> int | None:
    """Bytes of memory ``fn()`` needed above what was in use when it started (None if unmeasurable)."""
    if device.type == "cuda":
        synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        fn()
        synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    if not cpu_peak_supported():
        return None
    before = _proc_status_kib("VmRSS")  # clear_refs has just set the high-water mark to this
    fn()
    return max(0, _proc_status_kib("VmHWM") - before) * 1024


def process_peak(make_step: Callable[[], Callable[[], object]], calls: int = 1) -> int | None:
    """Bytes a fresh process's resident set grows by while ``make_step()``'s step runs ``calls`` times, counted
    from just after the step (and its inputs) are built — what a user's process pays for the step, allocator
    and first-call costs included. Call in a fresh process that has not run the step before (spawn)."""
    step = make_step()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # high-water mark := the current resident set
        before = _proc_status_kib("VmRSS")
    except OSError:
        return None
    for _ in range(calls):
        step()
    return max(0, _proc_status_kib("VmHWM") - before) * 1024


def _working_set_peaks(make_step: Callable, jobs: Sequence, device_name: str, desc: str | None) -> list[int | None]:
    device = torch.device(device_name)
    if device.type == "cpu":
        fix_mmap_threshold()  # before the first allocation, so that no freed block stays resident
    out = []
    for job in tqdm(jobs, desc=desc, disable=desc is None):
        step = make_step(job, device)
        step()  # one-time allocations (optimizer state, first-call caches) are not the step's
        out.append(peak_memory(step, device))
        del step
    return out


def working_set_peaks(make_step: Callable, jobs: Sequence, device: torch.device, *,
                      desc: str | None = None) -> list[int | None]:
    """:func:`peak_memory` of ``make_step(job, device)``'s step for each job, after one warm-up call of it.

    On CUDA in this process. On a CPU in one fresh process (spawn): the allocator setting that makes the
    resident set measurable (:func:`fix_mmap_threshold`) would slow whatever this process times, and a fresh
    heap holds nothing of earlier work. ``make_step`` must therefore pickle (a module-level function, or a
    ``functools.partial`` of one). ``desc`` shows a progress bar with that title.
    """
    if device.type == "cuda":
        return _working_set_peaks(make_step, jobs, str(device), desc)
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(_working_set_peaks, make_step, list(jobs), "cpu", desc).result()


def _tensors_in(x) -> list[torch.Tensor]:
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for y in x for t in _tensors_in(y)]
    return []


def saved_for_backward_bytes(fn: Callable[..., object], *inputs: torch.Tensor) -> int:
    """Bytes that autograd keeps between the forward and the backward pass of ``fn(*inputs)``.

    The count is exact and deterministic (no allocator, any device): the distinct storages of the tensors
    autograd saves, seen by ``torch.autograd.graph.saved_tensors_hooks``, plus the tensors a custom
    ``autograd.Function`` keeps on its ctx as ``memo`` (the segment-start states of
    :mod:`lra_kit.attention.causal.chunked`, which the hooks cannot see). A tensor and its views count once. The
    inputs are cloned into fresh leaves that require grad, so they count when ``fn`` saves them; ``fn`` may
    return a tensor or a tuple whose first element is the output. The backward pass is run, so that what is
    counted is what the backward pass uses. How the book measures what the constant-memory gradient of
    Katharopoulos et al. §3.3.1 saves against softmax and against autograd through all states.
    """
    if not inputs or not all(isinstance(t, torch.Tensor) and t.is_floating_point() for t in inputs):
        raise ValueError("inputs must be one or more floating-point tensors")
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return t

    leaves = [t.detach().clone().requires_grad_() for t in inputs]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*leaves)
    out = out[0] if isinstance(out, tuple) else out
    if not isinstance(out, torch.Tensor) or out.grad_fn is None:
        raise ValueError("fn must return a tensor (or a tuple starting with one) that depends on the inputs")
    nodes, visited = [out.grad_fn], set()
    while nodes:  # walk the graph for states held on a ctx
        node = nodes.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        for t in _tensors_in(getattr(node, "memo", None)):
            pack(t)
        nodes += [n for n, _ in node.next_functions if n is not None]
    out.sum().backward()
    return sum(storages.values())
