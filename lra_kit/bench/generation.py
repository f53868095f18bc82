"""Autoregressive image generation speed: Katharopoulos et al. Tables 1-2, appendix Tables 4-5.

``lra-kit bench generation`` (or ``python -m lra_kit.bench.generation``) generates images pixel
by pixel with the papers' models (MNIST: 8 layers, 8 heads, d = 256, FFN 1024, a mixture of 10
logistics; CIFAR-10: the same with 16 layers; the configs of ``lra_kit.train.configs`` at scale
``paper``) and times, in one run on one device, four ways of doing it:

``softmax``           the causal softmax transformer re-run on the whole prefix for every new pixel
                      (``CausalLM.generate(recurrent=False)``), the papers' "Softmax" row;
``softmax-kv-cache``  softmax attention with the keys and values kept between steps, in a cache
                      preallocated to the image and written in place: the papers' "Stateful-softmax"
                      (appendix §C.1);
``linear``            the RNN of Katharopoulos eqs. 16-20: a state of fixed size per layer;
``momentum``          the RNN of Nguyen et al. eq. 12 (β, γ of their Table 1).

The last three run ``generate``'s lean step (:mod:`lra_kit.models.decode`; on CUDA a captured CUDA
graph). ``--reference`` also times them through the modules' step (``generate(lean=False)``), in
the same process, and records both (``modules``, and ``lean_speedup``: the modules' time over the
lean step's, on the same pixels; ``--repeats`` alternates the two that many times and keeps the
medians, which a machine shared with other work needs). For each task and batch size a row reports seconds per image,
images/s, ms per pixel (per generation step: one pixel of every image of the batch) and every
method's time as a ratio to ``linear`` — the way appendix Table 5 prints its columns — at batch 1
and (``--largest-batch``) at the largest batch that fits, found by doubling up to ``--max-batch``
(on a CPU memory does not bound it: the cap does). The weights are random: the time to generate
does not depend on them.

Operators per pixel: each row counts the ATen operators one generated pixel dispatches, with a
``TorchDispatchMode`` around ``generate`` (which runs under ``torch.inference_mode()``, so a composite
operator such as ``aten.linear`` is one call), as the difference between 12 and 4 generated pixels
divided by 8, on the eager step (the one a CUDA graph captures). ``ops_per_pixel`` counts every
operator; ``views_per_pixel`` those of them whose schema returns an alias of an input (views, slices,
``to`` to the same dtype), which launch no kernel; ``kernels_per_pixel`` those that are neither views nor
allocations (``empty`` and the like): on a GPU, one launch each (``lra_kit.bench.dispatch.KernelCounter``).
Where the RNN steps run fused (:class:`lra_kit.attention.decode.FusedStep`: on CUDA, or under Triton's interpreter
with ``LRA_KIT_TRITON=interpret``), ``triton_kernels_per_pixel`` counts their Triton launches, which are no ATen
operators, and ``launches_per_pixel`` is the two together.

On a GPU each lean row also has ``bound_ms_per_pixel``: the least bytes a step must move (the weights once, each
layer's state read and written, the cache's keys and values so far) ÷ the card's bandwidth
(:mod:`lra_kit.bench.generation_bound`), and ``times_bound``, the time ÷ that bound.

Timing a whole image of the uncached softmax is the expensive part (each step re-reads the whole
prefix, so step i costs more than step i − 1). It is generated in chunks of 8 pixels until the image
is done or ``budget_s`` has passed; the lean steps stop at the budget too (checked every 8 steps),
and the modules' steps (``--reference``) are capped from the time of a 16-pixel pilot.
``max_pixels`` caps the pixels of a method outright. A row that stopped early holds the measured
prefix and ``seconds_per_image`` is the prefix time scaled by pixels/timed. Every step of every
method costs at least what the steps before it cost, so that scaled figure is a *lower bound* for
softmax and the key/value cache and an estimate for linear and momentum (constant cost per step);
the row says which in ``extrapolation``. ``"none"`` means the whole image was generated and timed.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

from lra_kit.atomic import check_writable
from lra_kit.attention.decode import FusedStep
from lra_kit.bench.dispatch import KernelCounter
from lra_kit.bench.device import bandwidth as device_bandwidth
from lra_kit.bench.device import gpu_slug
from lra_kit.bench.entry import module_main
from lra_kit.bench.generation_bound import bound_ms_per_pixel
from lra_kit.bench.timing import median_time, synchronize
from lra_kit.data.registry import task_names, task_spec
from lra_kit.models.causal_lm import CausalLM
from lra_kit.results import device_name, make_results, read_results, write_results

# The methods timed, in order, and how each one's per-step cost grows with the step (what a scaled prefix
# time means, see above).
GROWING = {"softmax": True, "softmax-kv-cache": True, "linear": False, "momentum": False}
METHODS = tuple(GROWING)
LEAN = tuple(m for m in METHODS if m != "softmax")  # generate()'s lean step runs all but the uncached softmax
# The image-generation tasks of the task table and their lengths in pixels.
PIXELS = {name: task_spec(name).length for name in task_names(suite="pixels")}
# The papers' row names in appendix Table 5 for our methods (lra_kit.paper_numbers).
PAPER_ROW = {"softmax": "Softmax", "softmax-kv-cache": "Stateful-softmax", "linear": "Linear (ours)"}
TINY = {"layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64}  # a smoke-test model (--tiny)
MAX_BATCH = {"cpu": 16, "cuda": 8192}  # --largest-batch doubles up to this (--max-batch); 1024 capped the H200 run
SOFTMAX_CHUNK = 8  # pixels per generate() call of the uncached softmax, between budget checks
PILOT_PIXELS = 16  # the pilot that sizes a budgeted run of the other methods
COUNT_PIXELS = (4, 12)  # operators per pixel: (count at 12 pixels − count at 4) / 8
OPS_COUNTED = ("ATen operators reaching a TorchDispatchMode around generate() (torch.inference_mode(): a "
               "composite such as aten.linear is one), per generated pixel: (count at 12 pixels - count at 4) / 8, "
               "on the eager step; views_per_pixel: those whose schema returns an alias of an input (views, "
               "slices, to() to the same dtype), no kernel launched; kernels_per_pixel: neither views nor "
               "allocations (lra_kit.bench.dispatch.KernelCounter), a launch each on a GPU; "
               "triton_kernels_per_pixel: the fused RNN steps' Triton launches (lra_kit.attention.decode.FusedStep); "
               "launches_per_pixel: kernels_per_pixel + triton_kernels_per_pixel")


def _attention_of(method: str) -> str:
    return "softmax" if method.startswith("softmax") else method


def build_generator(task: str, method: str, *, overrides: dict | None = None, device="cpu") -> CausalLM:
    """The papers' image model for ``task`` with ``method``'s attention (random weights, eval mode)."""
    from lra_kit.train.configs import get_config

    cfg = get_config(task, _attention_of(method), "paper").model
    for key, value in (overrides or {}).items():
        if not hasattr(cfg, key):
            raise ValueError(f"overrides: unknown model key {key!r}")
        setattr(cfg, key, value)
    cfg.dropout = cfg.attention_dropout = 0.0
    return CausalLM(cfg, vocab_size=256, max_length=PIXELS[task]).to(device).eval()


def _generate(model: CausalLM, method: str, prompt: torch.Tensor, pixels: int, generator, lean: bool = True,
              cuda_graph: bool = True) -> torch.Tensor:
    return model.generate(prompt, pixels, recurrent=method != "softmax", generator=generator, lean=lean,
                          cuda_graph=cuda_graph)


def count_ops(model: CausalLM, method: str, *, lean: bool = True, device="cpu") -> dict:
    """ATen operators per generated pixel at batch 1 (see the module docstring): ``ops_per_pixel``,
    ``views_per_pixel``, ``kernels_per_pixel`` (neither views nor allocations: on a GPU, a launch each) and
    ``by_name`` (every operator's count per pixel)."""
    prompt = torch.zeros(1, 1, dtype=torch.long, device=device)
    gen = torch.Generator(device=device).manual_seed(0)

    def counted(pixels: int) -> tuple[KernelCounter, int]:
        counter, before = KernelCounter(), FusedStep.launched
        with counter:
            _generate(model, method, prompt, pixels, gen, lean, cuda_graph=False)
        return counter, FusedStep.launched - before

    few, many = COUNT_PIXELS
    counted(few)  # first calls fill caches (the position tables, the lag weights) that later calls reuse
    (a, fused_a), (b, fused_b) = counted(few), counted(many)
    n = many - few
    by_name = {name: (b.ops[name] - a.ops[name]) / n for name in sorted(set(a.ops) | set(b.ops))}
    views = sum(b.views.values()) - sum(a.views.values())
    kernels = sum(b.kernels.values()) - sum(a.kernels.values())
    out = {"ops_per_pixel": (sum(b.ops.values()) - sum(a.ops.values())) / n, "views_per_pixel": views / n,
           "kernels_per_pixel": kernels / n, "by_name": {k: v for k, v in by_name.items() if v}}
    if fused_b - fused_a:
        out["triton_kernels_per_pixel"] = (fused_b - fused_a) / n
        out["launches_per_pixel"] = out["kernels_per_pixel"] + out["triton_kernels_per_pixel"]
    return out


# what launch_counts narrows the paper model to (its 8 layers kept): the counts depend on neither the width nor the
# heads (every kernel takes all heads at once), and the interpreter runs one program a layer
NARROW = {"d_model": 8, "d_ff": 16, "n_heads": 1}


def launch_counts(task: str = "mnist", methods=LEAN, *, overrides: dict | None = None) -> dict:
    """Per method, what one generated pixel of the paper model launches (:func:`count_ops`) on the CPU's path
    (``"cpu"``: the ATen steps) and on the GPU's (``"gpu"``: the RNNs fused into one Triton kernel a layer,
    :class:`~lra_kit.attention.decode.FusedStep`), the latter counted on this CPU under Triton's interpreter, whose
    launches stand for the compiled kernel's. The model is narrowed to :data:`NARROW` unless ``overrides`` say
    otherwise. Raises :class:`~lra_kit.attention.causal.triton.switch.InterpreterUnsupported` where Triton is not
    installed or its interpreter cannot run the package's kernels."""
    from lra_kit.attention.causal.triton.switch import (
        InterpreterUnsupported,
        disabled,
        interpreted,
        interpreter_problem,
        triton_installed,
    )

    if not triton_installed():
        raise InterpreterUnsupported("Triton is not installed (pip install -e .[test] on Linux x86-64)")
    if (problem := interpreter_problem()) is not None:
        raise InterpreterUnsupported(problem)
    out = {}
    for method in methods:
        model = build_generator(task, method, overrides=NARROW if overrides is None else overrides)
        with disabled():
            out[method] = {"cpu": count_ops(model, method)}
        with interpreted():
            out[method]["gpu"] = count_ops(model, method)
    return out


def _time_method(model: CausalLM, method: str, batch: int, pixels: int, device, budget_s: float | None,
                 lean: bool = True) -> tuple[float, int]:
    """Seconds to generate ``pixels`` pixels of ``batch`` images (or fewer, within ``budget_s``) and how many."""
    prompt = torch.zeros(batch, 1, dtype=torch.long, device=device)  # the first pixel is given; the rest sampled
    gen = torch.Generator(device=device).manual_seed(0)
    if method == "softmax":
        synchronize(device)
        start, tokens, done = time.perf_counter(), prompt, 0
        while done < pixels:
            n = min(SOFTMAX_CHUNK, pixels - done)
            tokens = _generate(model, method, tokens, n, gen)
            done += n
            synchronize(device)
            if budget_s is not None and time.perf_counter() - start >= budget_s:
                break
        return time.perf_counter() - start, done
    if budget_s is not None and lean and method in LEAN:
        return _lean_within(model, prompt, pixels, gen, device, budget_s)
    if budget_s is not None and pixels > PILOT_PIXELS:
        pilot = median_time(lambda: _generate(model, method, prompt, PILOT_PIXELS, gen, lean), 1, 0, device)
        pixels = max(PILOT_PIXELS, min(pixels, int(budget_s / (pilot / PILOT_PIXELS))))
    return median_time(lambda: _generate(model, method, prompt, pixels, gen, lean), 1, 0, device), pixels


def _lean_within(model: CausalLM, prompt: torch.Tensor, pixels: int, generator, device, budget_s: float):
    """``generate()``'s lean path (prefill, then :class:`~lra_kit.models.decode.Decoder` steps, as CUDA graphs on
    CUDA) stopped once ``budget_s`` has passed; returns (seconds, pixels generated)."""
    from lra_kit.models.decode import CACHE_BUCKET, Decoder, run_steps

    device = torch.device(device)
    graphs = device.type == "cuda"
    synchronize(device)
    start = time.perf_counter()
    with torch.inference_mode():
        decoder = Decoder.after_prompt(model, prompt, pixels, generator=generator,
                                       cache_bucket=CACHE_BUCKET if graphs else 1, graph=graphs)
        done = 1 + run_steps(decoder, pixels - 1, deadline=start + budget_s)
    synchronize(device)
    return time.perf_counter() - start, done


def _row(task: str, method: str, batch: int, seconds: float, timed: int) -> dict:
    total = PIXELS[task] - 1  # pixels generated after the given first one
    per_image = seconds * total / timed / batch
    return {"task": task, "method": method, "batch": batch, "pixels": total, "pixels_timed": timed,
            "seconds": seconds, "seconds_per_image": per_image, "images_per_s": 1.0 / per_image,
            "ms_per_pixel": 1e3 * seconds / timed, "extrapolation": "none" if timed == total
            else "lower bound" if GROWING[method] else "estimate"}


def _with_reference(row: dict, model: CausalLM, method: str, batch: int, device, budget_s, repeats: int) -> dict:
    """``row`` with the modules' step timed beside the lean one on the same pixels (``modules``, ``lean_speedup``:
    the ratio of the two times), in ``repeats`` rounds that alternate the two (medians; ``rounds_s`` keeps each)."""
    seconds, timed = _time_method(model, method, batch, row["pixels_timed"], device, budget_s, lean=False)
    lean_s = row["seconds"] if timed == row["pixels_timed"] else _time_method(model, method, batch, timed, device,
                                                                              None)[0]
    rounds = [(lean_s, seconds)]
    for _ in range(repeats - 1):
        rounds.append((_time_method(model, method, batch, timed, device, None)[0],
                       _time_method(model, method, batch, timed, device, None, lean=False)[0]))
    lean_s, seconds = (statistics.median(r[i] for r in rounds) for i in (0, 1))
    if timed == row["pixels_timed"]:
        row = _row(row["task"], method, batch, lean_s, timed)
    ref = _row(row["task"], method, batch, seconds, timed)
    row["modules"] = {k: ref[k] for k in ("pixels_timed", "seconds_per_image", "images_per_s", "ms_per_pixel",
                                          "extrapolation")}
    row["lean_speedup"] = seconds / lean_s
    row["rounds_s"] = [{"lean": a, "modules": b} for a, b in rounds]
    return row


def time_generation(task: str, methods, batch: int | dict, *, max_pixels: dict, overrides: dict | None = None,
                    device="cpu", budget_s: float | None = None, reference: bool = False,
                    counts: dict | None = None, repeats: int = 1, bytes_per_s: float | None = None) -> list[dict]:
    """One row per method: generate ``batch`` images of ``task`` (or their first ``max_pixels[method]`` pixels, or
    what ``budget_s`` allows). ``batch`` may map methods to batch sizes. ``reference``: the lean methods are also
    timed through the modules' step (``row["modules"]``, :func:`_with_reference`, ``repeats`` rounds). ``counts``
    (method → :func:`count_ops`) are copied into the rows. With the card's ``bytes_per_s``, a lean method's row
    has ``bound_ms_per_pixel`` (:mod:`lra_kit.bench.generation_bound`) and ``times_bound``, its time ÷ that."""
    total = PIXELS[task] - 1
    rows = []
    for method in methods:
        b = batch[method] if isinstance(batch, dict) else batch
        model = build_generator(task, method, overrides=overrides, device=device)
        cap = min(total, max_pixels.get(method, total))
        _generate(model, method, torch.zeros(b, 1, dtype=torch.long, device=device), 4, None)  # warm-up
        row = _row(task, method, b, *_time_method(model, method, b, cap, device, budget_s))
        if reference and method in LEAN:
            row = _with_reference(row, model, method, b, device, budget_s, repeats)
        if counts and method in counts:
            row.update(counts[method])
        if bytes_per_s and method in LEAN:
            row["bound_ms_per_pixel"] = bound_ms_per_pixel(model, b, row["pixels_timed"], bytes_per_s)
            row["times_bound"] = row["ms_per_pixel"] / row["bound_ms_per_pixel"]
        rows.append(row)
    linear = next(r for r in rows if r["method"] == "linear")
    for row in rows:
        row["time_over_linear"] = row["seconds_per_image"] / linear["seconds_per_image"]
    return rows


def _fits(task: str, method: str, batch: int, device, overrides) -> bool:
    """Whether generating ``batch`` images of ``task`` fits in the device's memory: its largest step (the whole
    image through the uncached softmax; the prompt, then a step with the cache preallocated to the image)."""
    from lra_kit.models.decode import Decoder

    model = build_generator(task, method, overrides=overrides, device=device)
    total = PIXELS[task] - 1
    prompt = torch.zeros(batch, 1, dtype=torch.long, device=device)
    try:
        with torch.inference_mode():
            if method == "softmax":
                model(torch.zeros(batch, PIXELS[task], dtype=torch.long, device=device))
            else:
                Decoder.after_prompt(model, prompt, total).step(1)
        synchronize(device)
        return True
    except torch.OutOfMemoryError:
        return False
    finally:
        del model
        if torch.device(device).type == "cuda":
            torch.cuda.empty_cache()


def largest_batch(task: str, method: str, *, cap: int, device="cpu", overrides: dict | None = None) -> int:
    """The largest batch ≤ ``cap`` found by doubling from 1 that fits in the device's memory (:func:`_fits`); on a
    CPU the cap itself, rounded down to a power of two (memory does not bound it there; time does)."""
    if not isinstance(cap, int) or cap < 1:
        raise ValueError(f"max_batch must be a positive int, got {cap!r}")
    batch = 1
    while batch * 2 <= cap:
        if torch.device(device).type == "cuda" and not _fits(task, method, batch * 2, device, overrides):
            break
        batch *= 2
    return batch


def _check_args(tasks, methods, batches, max_pixels, budget_s=None, max_batch=None) -> None:
    for task in tasks:
        if task not in PIXELS:
            raise ValueError(f"tasks: unknown task {task!r}; allowed: {', '.join(PIXELS)}")
    for method in methods:
        if method not in METHODS:
            raise ValueError(f"methods: unknown method {method!r}; allowed: {', '.join(METHODS)}")
    if "linear" not in methods:
        raise ValueError("methods must include 'linear' (every time is reported as a ratio to it)")
    if not batches or any(not isinstance(b, int) or b < 1 for b in batches):
        raise ValueError(f"batches must be positive integers, got {batches!r}")
    for key, cap in max_pixels.items():
        if key not in METHODS or not isinstance(cap, int) or cap < 1:
            raise ValueError(f"max_pixels must map methods to positive integers, got {key!r}: {cap!r}")
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and budget_s > 0):
        raise ValueError(f"budget_s must be a positive number of seconds, got {budget_s!r}")
    if max_batch is not None and (not isinstance(max_batch, int) or max_batch < 1):
        raise ValueError(f"max_batch must be a positive int, got {max_batch!r}")


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def run(tasks=tuple(PIXELS), methods=METHODS, batches=(1,), *, max_pixels: dict | None = None,
        overrides: dict | None = None, device=None, progress: bool = True, budget_s: float | None = None,
        largest: bool = False, max_batch: int | None = None, reference: bool = False, count: bool = True,
        repeats: int = 1) -> dict:
    """Time every task × batch × method; returns ``{"rows": [...], "config": {...}, "device": ...}``.

    ``largest``: one more row per task and method at the largest batch that fits (:func:`largest_batch`, up to
    ``max_batch``, default :data:`MAX_BATCH` of the device), marked ``"batch_search": "largest"``. ``count``:
    operators per pixel in every row (:func:`count_ops`), and through the modules' step with ``reference``."""
    tasks, methods, batches = tuple(tasks), tuple(methods), tuple(batches)
    max_pixels = dict(max_pixels or {})
    _check_args(tasks, methods, batches, max_pixels, budget_s, max_batch)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    max_batch = max_batch or MAX_BATCH.get(device.type, 1)
    rows = []
    load_before = _load_average()
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive int, got {repeats!r}")
    bandwidth = device_bandwidth(device)  # a CPU's: none, so no bound
    kw = dict(max_pixels=max_pixels, overrides=overrides, device=device, budget_s=budget_s, reference=reference,
              repeats=repeats, bytes_per_s=bandwidth["bytes_per_s"])
    for task in tasks:
        counts = {}
        for method in methods if count else ():
            model = build_generator(task, method, overrides=overrides, device=device)
            counts[method] = {"ops": count_ops(model, method, device=device)}
            if reference and method in LEAN:
                counts[method]["modules_ops"] = count_ops(model, method, lean=False, device=device)
            counts[method] = _flat_counts(counts[method])
        for batch in batches:
            new = time_generation(task, methods, batch, counts=counts, **kw)
            rows += new
            if progress:
                print(format_table(new), flush=True)
        if largest:
            sizes = {m: largest_batch(task, m, cap=max_batch, device=device, overrides=overrides) for m in methods}
            new = time_generation(task, methods, sizes, counts=counts, **kw)
            for row in new:
                row["batch_search"] = "largest"
            rows += new
            if progress:
                print(format_table(new), flush=True)
    config = {"tasks": list(tasks), "methods": list(methods), "batches": list(batches), "max_pixels": max_pixels,
              "budget_s": budget_s, "largest_batch": {"searched": largest, "max_batch": max_batch},
              "reference": reference, "repeats": repeats, "model_overrides": overrides or {},
              "threads": torch.get_num_threads(),
              "models": {task: "lra_kit.train.configs.get_config(task, attention, 'paper').model, dropout 0"
                         for task in tasks},
              "prompt": "the first pixel is given (0); the others are sampled at temperature 1",
              "step": "generate()'s lean step (lra_kit.models.decode) for " + ", ".join(LEAN)
                      + ("; a CUDA graph replayed per position" if device.type == "cuda" else "; eager"),
              "ops_counted": OPS_COUNTED, "bandwidth": bandwidth,
              # other work on the machine slows every method; the ratios to linear are what compares
              "load_average_1min": {"before": load_before, "after": _load_average()}}
    return {"rows": rows, "config": config, "device": device}


def _flat_counts(counts: dict) -> dict:
    keys = ("ops_per_pixel", "views_per_pixel", "kernels_per_pixel", "triton_kernels_per_pixel", "launches_per_pixel")
    out = {key: counts["ops"][key] for key in keys if key in counts["ops"]}
    out["ops_by_name"] = counts["ops"]["by_name"]
    if "modules_ops" in counts:
        for key in ("ops_per_pixel", "views_per_pixel", "kernels_per_pixel"):
            out[f"modules_{key}"] = counts["modules_ops"][key]
    return out


def format_table(rows: list[dict]) -> str:
    lines = [f"{'task':8} {'method':17} {'batch':>5} {'timed':>10} {'s/image':>10} {'images/s':>9} {'ms/pixel':>9} "
             f"{'÷ linear':>8} {'ops/px':>7} {'kern/px':>7} {'modules':>16}"]
    for r in rows:
        bound = {"none": "", "lower bound": " ≥", "estimate": " ~"}[r["extrapolation"]]
        # kernels launched: ATen's, and the fused steps' Triton kernels where they ran
        kernels = "launches_per_pixel" if "launches_per_pixel" in r else "kernels_per_pixel"
        ops = " ".join(f"{r[k]:>7.0f}" if k in r else f"{'':>7}" for k in ("ops_per_pixel", kernels))
        ref = ""
        if "modules" in r:
            ref = f" {r['modules']['ms_per_pixel']:>7.2f} ms/px ×{r['lean_speedup']:.2f}"
        if "times_bound" in r:  # the time ÷ the least traffic's (generation_bound)
            ref += f"  {r['times_bound']:.1f}× bound {r['bound_ms_per_pixel']:.3f} ms"
        lines.append(f"{r['task']:8} {r['method']:17} {r['batch']:>5} {r['pixels_timed']:>4}/{r['pixels']:<5} "
                     f"{r['seconds_per_image']:>10.3f} {r['images_per_s']:>9.3f} {r['ms_per_pixel']:>9.3f} "
                     f"{r['time_over_linear']:>8.2f}{bound:2} {ops}{ref}")
    return "\n".join(lines)


def default_json_path(device: torch.device, stem: str = "generation") -> Path:
    """``results/bench/<stem>-<gpu>.json``: ``cpu`` on a CPU, else the card's short name
    (:func:`lra_kit.bench.device.gpu_slug`, as ``results/bench/attention-<gpu>.json`` has it: ``h100`` for an
    "NVIDIA H100 80GB HBM3")."""
    return Path("results") / "bench" / f"{stem}-{gpu_slug(device_name(device))}.json"


def write_json(result: dict, path: Path, wall_s: float, *, append: bool = False, base: dict | None = None) -> None:
    """The rows with the run's provenance (the keys of :mod:`lra_kit.results`); ``append`` merges them into
    the file's rows, ``base`` into those of a record read before (:func:`merge_records`)."""
    import platform

    record = make_results(metrics={"rows": result["rows"]}, config=result["config"], scale="benchmark", steps=1,
                          seed=0, wall_s=wall_s, device=result["device"], experiment="bench/generation",
                          processor=platform.processor() or platform.machine(), python=sys.version.split()[0])
    if base is None and append and Path(path).exists():
        base = read_results(str(path))
    if base is not None:
        record = merge_records(base, record)
    write_results(record, str(path))


def merge_records(old: dict, new: dict) -> dict:
    """``new`` with the rows of ``old`` that it does not re-measure (same task, batch, method and batch search), so
    that one file can gather runs with different pixel caps; ``config.runs`` lists every run's config and date."""
    key = lambda r: (r["task"], r["batch"], r["method"], r.get("batch_search"))  # noqa: E731
    measured = {key(r) for r in new["metrics"]["rows"]}
    if old.get("device") != new.get("device"):
        raise ValueError(f"cannot merge results of device {old.get('device')!r} into {new.get('device')!r}")
    rows = [r for r in old["metrics"]["rows"] if key(r) not in measured] + new["metrics"]["rows"]
    runs = old["config"].get("runs", [dict(old["config"], date=old["date"], git_commit=old["git_commit"])])
    merged = dict(new, metrics={"rows": rows}, wall_s=round(old["wall_s"] + new["wall_s"], 3))
    merged["config"] = {"runs": runs + [dict(new["config"], date=new["date"], git_commit=new["git_commit"])]}
    return merged


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", nargs="+", choices=tuple(PIXELS), default=list(PIXELS))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--batches", type=int, nargs="+", default=[1], help="batch sizes (default 1, Table 5)")
    parser.add_argument("--largest-batch", action="store_true",
                        help="also a row per method at the largest batch that fits, found by doubling")
    parser.add_argument("--max-batch", type=int, default=None,
                        help=f"the cap of --largest-batch (default {MAX_BATCH['cpu']} on a CPU, "
                             f"{MAX_BATCH['cuda']} on CUDA)")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="seconds per row: the uncached softmax stops there, the others are capped from a "
                             "pilot (a stopped row is scaled and flagged in the JSON)")
    parser.add_argument("--max-pixels", nargs="+", default=[], metavar="METHOD=N",
                        help="time only the first N pixels of METHOD (then scaled, flagged in the JSON), "
                             "e.g. softmax=256")
    parser.add_argument("--reference", action="store_true",
                        help="also time the modules' step (generate(lean=False)) in the same process")
    parser.add_argument("--repeats", type=int, default=1,
                        help="with --reference: rounds alternating the lean and the modules' step (medians)")
    parser.add_argument("--no-count", action="store_true", help="do not count operators per pixel")
    parser.add_argument("--tiny", action="store_true", help="a 1-layer d=32 model instead of the papers' (tests)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the results (default results/bench/generation-<gpu>.json, "
                             "<gpu> as in attention-<gpu>.json; generation-cpu.json on a CPU)")
    parser.add_argument("--append", action="store_true",
                        help="merge into an existing JSON (rows of the same task, batch and method are replaced)")
    parser.add_argument("--no-json", action="store_true", help="print only")


def _parse_caps(items) -> dict:
    caps = {}
    for item in items:
        method, _, n = item.partition("=")
        if method not in METHODS or not n.isdigit() or int(n) < 1:
            raise ValueError(f"--max-pixels takes METHOD=N with METHOD in {', '.join(METHODS)} and N >= 1, "
                             f"got {item!r}")
        caps[method] = int(n)
    return caps


def main_from_args(args: argparse.Namespace) -> int:
    try:
        caps = _parse_caps(args.max_pixels)
        if any(b < 1 for b in args.batches):
            raise ValueError(f"--batches must be >= 1, got {args.batches}")
        if "linear" not in args.methods:
            raise ValueError("--methods must include linear (every time is a ratio to it)")
        if args.budget_s is not None and args.budget_s <= 0:
            raise ValueError(f"--budget-s must be > 0, got {args.budget_s}")
        if args.max_batch is not None and args.max_batch < 1:
            raise ValueError(f"--max-batch must be >= 1, got {args.max_batch}")
        if args.repeats < 1:
            raise ValueError(f"--repeats must be >= 1, got {args.repeats}")
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    path = None if args.no_json else (args.json or default_json_path(device))
    if path is not None:
        check_writable(path)  # before the run, not after it
    start = time.perf_counter()
    base = read_results(str(path)) if path is not None and args.append and Path(path).exists() else None
    result = None
    for task in args.tasks:  # the JSON is rewritten after each task: a run stopped at a time limit keeps what it did
        part = run([task], args.methods, args.batches, max_pixels=caps, overrides=TINY if args.tiny else None,
                   device=device, budget_s=args.budget_s, largest=args.largest_batch, max_batch=args.max_batch,
                   reference=args.reference, count=not args.no_count, repeats=args.repeats)
        if result is None:
            result = part
        else:
            config = dict(result["config"], tasks=result["config"]["tasks"] + [task],
                          load_average_1min=dict(result["config"]["load_average_1min"],
                                                 after=part["config"]["load_average_1min"]["after"]))
            result = dict(result, rows=result["rows"] + part["rows"], config=config)
        if path is not None:
            write_json(result, path, time.perf_counter() - start, base=base)
            print(f"wrote {path}", flush=True)
    return 0


def main(argv=None) -> int:
    return module_main("python -m lra_kit.bench.generation", __doc__, add_arguments, main_from_args, argv)


if __name__ == "__main__":
    sys.exit(main())
