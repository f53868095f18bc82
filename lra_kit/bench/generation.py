"""Autoregressive image generation speed: Katharopoulos et al. Tables 1-2, appendix Tables 4-5.

``lra-kit bench generation`` (or ``python -m lra_kit.bench.generation``) generates images pixel
by pixel with the papers' models (MNIST: 8 layers, 8 heads, d = 256, FFN 1024, a mixture of 10
logistics; CIFAR-10: the same with 16 layers; the configs of ``lra_kit.train.configs`` at scale
``paper``) and times, in one run on one device, six ways of doing it:

``softmax``           the causal softmax transformer re-run on the whole prefix for every new pixel
                      (``CausalLM.generate(recurrent=False)``), the papers' "Softmax" row;
``softmax-kv-cache``  softmax attention with the keys and values kept between steps, in a cache
                      preallocated to the image and written in place: the papers' "Stateful-softmax"
                      (appendix §C.1);
``linear``            the RNN of Katharopoulos eqs. 16-20: a state of fixed size per layer;
``momentum``          the RNN of Nguyen et al. eq. 12 (β, γ of their Table 1);
``lsh-1``, ``lsh-4``  Reformer's LSH attention (:mod:`lra_kit.attention.lsh`) with 1 and 4 rounds of hashing, 64
                      buckets and chunks of 29 pixels (MNIST) or 37 (CIFAR-10), the config of ``get_config(task,
                      "lsh", "paper")``: the papers' "LSH-1" and "LSH-4" rows. LSH has no recurrent form (its sort
                      and chunks are redone for every input, appendix §C.1), so, as in the paper, every new pixel
                      re-runs the whole prefix, as the uncached softmax does.

How each is timed (:mod:`lra_kit.bench.generation_timing`): the *steps* — one per generated pixel, each drawing
that pixel of every image of the batch — apart from the prompt pass (``prefill_s``) and the set-up (``setup_s``:
the decoder's buffers, and on CUDA the warm-up and capture of each CUDA graph). ``ms_per_pixel`` is the steps'
time ÷ the steps, ``seconds_per_image`` that × the image's new pixels ÷ the batch, ``images_per_s`` its inverse.
Every row is the median of ``repeats`` rounds (default 3), each kept in ``rounds``: the first round within
``budget_s``, the later ones over as many pixels as it generated.

Eager against eager, graph against graph. The uncached softmax and LSH run eagerly, and the three lean methods
(the cache and the two RNNs: ``generate()``'s lean step, :mod:`lra_kit.models.decode`) are timed eagerly too: a row's
top-level numbers are eager, and ``time_over_linear`` — every method's time as a ratio to ``linear``'s, the way
appendix Table 5 prints its columns — divides eager by eager. On CUDA, where ``generate`` replays the lean step as
CUDA graphs, the lean rows also hold ``graph`` (the same numbers for the graph replay) with its own
``time_over_linear``, graph ÷ linear's graph. ``config.ratios`` names what each ratio divides.

``--reference`` also times the lean methods through the modules' step (``generate(lean=False)``) in the same rounds,
over the same pixels, and records both (``modules``, and ``lean_speedup``: the modules' time over the eager lean
step's — eager against eager again). Rows come at batch 1 and (``--largest-batch``) at the largest batch that fits,
found by doubling up to ``--max-batch`` (on a CPU memory does not bound it: the cap does). The weights are random:
the time to generate does not depend on them.

Operators per pixel: each row counts the ATen operators one generated pixel dispatches, with a
``TorchDispatchMode`` around ``generate`` (which runs under ``torch.inference_mode()``, so a composite
operator such as ``aten.linear`` is one call), as the difference between 12 and 4 generated pixels
divided by 8, on the eager step (the one a CUDA graph captures). ``ops_per_pixel`` counts every
operator; ``views_per_pixel`` those of them whose schema returns an alias of an input (views, slices,
``to`` to the same dtype), which launch no kernel; ``kernels_per_pixel`` those that are neither views nor
allocations (``empty`` and the like): on a GPU, one launch each (``lra_kit.bench.dispatch.KernelCounter``).
Where the RNN steps run fused (:class:`lra_kit.attention.decode.FusedStep`: on CUDA, or under Triton's interpreter
with ``LRA_KIT_TRITON=interpret``), ``triton_kernels_per_pixel`` counts their Triton launches, which are no ATen
operators, and ``launches_per_pixel`` is the two together. (For the uncached methods the count of a pixel is that
of one pass over the prefix: it does not grow with the prefix.)

On a GPU each lean row also has ``bound_ms_per_pixel``: the least bytes a step must move (the weights once, each
layer's state read and written, the cache's keys and values so far) ÷ the card's bandwidth
(:mod:`lra_kit.bench.generation_bound`), and ``times_bound``, the time ÷ that bound (eager at the top level, the graph
replay's in ``graph``).

Timing a whole image of the uncached softmax or LSH is the expensive part (each step re-reads the whole prefix, so
step i costs more than step i − 1). Their steps run in chunks of 8 pixels until the image is done or ``budget_s``
has passed; the lean steps stop at the budget too (checked every 8 steps). ``max_pixels`` caps the pixels of a
method outright. A row that stopped early holds the measured prefix, and ``seconds_per_image`` scales its time per
step to the whole image. Every step of every method costs at least what the steps before it cost, so that scaled
figure is a *lower bound* for softmax, LSH and the key/value cache and an estimate for linear and momentum (constant
cost per step); the row says which in ``extrapolation``. ``"none"`` means the whole image was generated.
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
from lra_kit.bench.generation_timing import Round, time_round
from lra_kit.bench.timing import synchronize
from lra_kit.data.registry import task_names, task_spec
from lra_kit.models.causal_lm import CausalLM
from lra_kit.results import device_name, make_results, read_results, write_results

# The methods timed, in order, and how each one's per-step cost grows with the step (what a scaled prefix
# time means, see above).
GROWING = {"softmax": True, "softmax-kv-cache": True, "linear": False, "momentum": False, "lsh-1": True,
           "lsh-4": True}
METHODS = tuple(GROWING)
LSH_ROUNDS = {"lsh-1": 1, "lsh-4": 4}  # Reformer's rounds of hashing (Katharopoulos et al. Tables 1-2: LSH-X)
UNCACHED = ("softmax", *LSH_ROUNDS)  # every pixel re-runs the whole prefix
LEAN = tuple(m for m in METHODS if m not in UNCACHED)  # generate()'s lean step runs them
# The image-generation tasks of the task table and their lengths in pixels.
PIXELS = {name: task_spec(name).length for name in task_names(suite="pixels")}
# The papers' row names in appendix Tables 4-5 for our methods (lra_kit.paper_numbers).
PAPER_ROW = {"softmax": "Softmax", "softmax-kv-cache": "Stateful-softmax", "linear": "Linear (ours)",
             "lsh-1": "LSH-1", "lsh-4": "LSH-4"}
TINY = {"layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64}  # a smoke-test model (--tiny)
MAX_BATCH = {"cpu": 16, "cuda": 8192}  # --largest-batch doubles up to this (--max-batch); 1024 capped the H200 run
REPEATS = 3  # rounds per row (--repeats): the row holds their medians
COUNT_PIXELS = (4, 12)  # operators per pixel: (count at 12 pixels − count at 4) / 8
OPS_COUNTED = ("ATen operators reaching a TorchDispatchMode around generate() (torch.inference_mode(): a "
               "composite such as aten.linear is one), per generated pixel: (count at 12 pixels - count at 4) / 8, "
               "on the eager step; views_per_pixel: those whose schema returns an alias of an input (views, "
               "slices, to() to the same dtype), no kernel launched; kernels_per_pixel: neither views nor "
               "allocations (lra_kit.bench.dispatch.KernelCounter), a launch each on a GPU; "
               "triton_kernels_per_pixel: the fused RNN steps' Triton launches (lra_kit.attention.decode.FusedStep); "
               "launches_per_pixel: kernels_per_pixel + triton_kernels_per_pixel")
TIMING = {  # what a row's times are (config.timing; lra_kit.bench.generation_timing)
    "steps": "ms_per_pixel: the steps' seconds / the steps (one step draws one pixel of every image of the batch), "
             "the median over the rounds; seconds_per_image: ms_per_pixel x the image's new pixels / batch",
    "prefill_s": "the prompt pass (Encoder.prefill and the draw of the first new pixel), not in the steps; None "
                 "for the uncached methods, which have none",
    "setup_s": "the decoder's buffers, and on CUDA each graph's warm-up step and capture, not in the steps (the "
               "warm-up steps are not counted among them); None for the uncached methods, 0 for the modules' step",
    "rounds": "round 1 stops at budget_s; the later rounds generate as many pixels as it did; each round's "
              "steps_s, steps, pixels, prefill_s and setup_s are kept in the row's rounds",
    "ways": {"uncached": "the whole prefix re-run for every pixel, eager (softmax, lsh-1, lsh-4)",
             "eager": "generate()'s lean step (lra_kit.models.decode.Decoder), eager (the row's top-level numbers "
                      "for softmax-kv-cache, linear, momentum)",
             "graph": "the same step replayed as CUDA graphs (row['graph'], CUDA only)",
             "modules": "the modules' step, generate(lean=False) (row['modules'], --reference)"},
}
RATIOS = {  # what each ratio of a row divides (config.ratios): eager by eager, graph by graph, never mixed
    "time_over_linear": "eager / eager: the row's seconds per image (uncached or the lean step, eager) / linear's "
                        "eager lean step's, same task and batch",
    "graph.time_over_linear": "CUDA graph / CUDA graph: a lean row's graph replay / linear's graph replay",
    "lean_speedup": "eager / eager: the modules' step's ms per pixel / the eager lean step's, over the same pixels",
    "times_bound": "the time / the least time its bytes allow (top level: eager; graph.times_bound: graph replay)",
}


def _attention_of(method: str) -> str:
    if method.startswith("softmax"):
        return "softmax"
    return "lsh" if method in LSH_ROUNDS else method


def build_generator(task: str, method: str, *, overrides: dict | None = None, device="cpu") -> CausalLM:
    """The papers' image model for ``task`` with ``method``'s attention (random weights, eval mode); for ``lsh-N``
    the config's LSH options (64 buckets, chunks of 29 or 37) with N rounds of hashing."""
    from lra_kit.train.configs import get_config

    if method not in METHODS:
        raise ValueError(f"method: unknown method {method!r}; allowed: {', '.join(METHODS)}")
    cfg = get_config(task, _attention_of(method), "paper").model
    if method in LSH_ROUNDS:
        cfg.attention_options = dict(cfg.attention_options, n_hashes=LSH_ROUNDS[method])
    for key, value in (overrides or {}).items():
        if not hasattr(cfg, key):
            raise ValueError(f"overrides: unknown model key {key!r}")
        setattr(cfg, key, value)
    cfg.dropout = cfg.attention_dropout = 0.0
    return CausalLM(cfg, vocab_size=256, max_length=PIXELS[task]).to(device).eval()


def _generate(model: CausalLM, method: str, prompt: torch.Tensor, pixels: int, generator, lean: bool = True,
              cuda_graph: bool = True) -> torch.Tensor:
    return model.generate(prompt, pixels, recurrent=method in LEAN, generator=generator, lean=lean,
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


def ways(method: str, device, reference: bool = False) -> tuple[str, ...]:
    """How ``method`` is timed (:data:`lra_kit.bench.generation_timing.WAYS`): its row's way first (``uncached`` or
    ``eager``), then, for a lean method, the CUDA graph replay on CUDA and the modules' step with ``reference``."""
    if method not in LEAN:
        return ("uncached",)
    graph = ("graph",) if torch.device(device).type == "cuda" else ()
    return ("eager", *graph, *(("modules",) if reference else ()))


def measure(model: CausalLM, method: str, batch: int, pixels: int, *, device="cpu", budget_s: float | None = None,
            reference: bool = False, repeats: int = REPEATS) -> dict[str, list[Round]]:
    """``repeats`` rounds of every way of timing ``method`` (:func:`ways`), one of each per round, so that a burst of
    load elsewhere hits them alike: round 1 generates up to ``pixels`` pixels within ``budget_s`` (the modules' step
    no more than the eager step did), the later rounds as many as round 1 did. Where the modules' step stopped
    earlier than the eager lean step, each round also times the lean step over the modules' pixels
    (``"eager@modules"``), so that ``lean_speedup`` compares the same pixels. Returns the rounds by way."""
    timed = ways(method, device, reference)
    rounds: dict[str, list[Round]] = {way: [] for way in timed}
    size: dict[str, int] = {}
    for i in range(repeats):
        for way in timed:
            if i == 0:
                cap = size["eager"] if way == "modules" else pixels
                one = time_round(model, way, batch, cap, device, budget_s=budget_s)
                size[way] = one.pixels
            else:
                one = time_round(model, way, batch, size[way], device)
            rounds[way].append(one)
        if "modules" in timed and size["modules"] < size["eager"]:
            rounds.setdefault("eager@modules", []).append(time_round(model, "eager", batch, size["modules"], device))
    return rounds


def summary(task: str, method: str, batch: int, rounds: list[Round]) -> dict:
    """What a row records of one way's rounds: the pixels generated, the steps timed, the medians (seconds of steps,
    ms per pixel, seconds per image and images/s from them, prefill and set-up), whether the image was scaled from a
    prefix (``extrapolation``), and every round."""
    total = PIXELS[task] - 1  # pixels generated after the given first one
    sizes = {(r.pixels, r.steps) for r in rounds}
    if len(sizes) != 1:
        raise ValueError(f"the rounds of {method} generated different pixels or steps: {sorted(sizes)}")
    ms = statistics.median(r.ms_per_pixel for r in rounds)
    per_image = ms / 1e3 * total / batch

    def median_of(key: str) -> float | None:
        values = [getattr(r, key) for r in rounds]
        return None if values[0] is None else statistics.median(values)

    return {"pixels_timed": rounds[0].pixels, "steps_timed": rounds[0].steps, "seconds": median_of("steps_s"),
            "ms_per_pixel": ms, "seconds_per_image": per_image, "images_per_s": 1.0 / per_image,
            "extrapolation": "none" if rounds[0].pixels == total else "lower bound" if GROWING[method] else "estimate",
            "prefill_s": median_of("prefill_s"), "setup_s": median_of("setup_s"),
            "rounds": [r.record() for r in rounds]}


def _row(task: str, method: str, batch: int, rounds: dict[str, list[Round]]) -> dict:
    """A row from :func:`measure`'s rounds: the row's way at the top level, ``graph`` and ``modules`` beside it."""
    way = "uncached" if method not in LEAN else "eager"
    row = {"task": task, "method": method, "batch": batch, "pixels": PIXELS[task] - 1, "way": way,
           **summary(task, method, batch, rounds[way])}
    if "graph" in rounds:
        row["graph"] = summary(task, method, batch, rounds["graph"])
    if "modules" in rounds:
        row["modules"] = summary(task, method, batch, rounds["modules"])
        same = rounds.get("eager@modules", rounds["eager"])  # the lean step over the modules' pixels
        lean_ms = statistics.median(r.ms_per_pixel for r in same)
        row["lean_speedup"] = row["modules"]["ms_per_pixel"] / lean_ms
        row["rounds_s"] = [{"lean": a.steps_s, "modules": b.steps_s}
                           for a, b in zip(same, rounds["modules"], strict=True)]
    return row


def time_generation(task: str, methods, batch: int | dict, *, max_pixels: dict, overrides: dict | None = None,
                    device="cpu", budget_s: float | None = None, reference: bool = False,
                    counts: dict | None = None, repeats: int = REPEATS, bytes_per_s: float | None = None) -> list[dict]:
    """One row per method: generate ``batch`` images of ``task`` (or their first ``max_pixels[method]`` pixels, or
    what ``budget_s`` allows), ``repeats`` rounds (:func:`measure`). ``batch`` may map methods to batch sizes.
    ``reference``: the lean methods are also timed through the modules' step (``row["modules"]``,
    ``lean_speedup``). ``counts`` (method → :func:`count_ops`) are copied into the rows. With the card's
    ``bytes_per_s``, a lean method's row has ``bound_ms_per_pixel`` (:mod:`lra_kit.bench.generation_bound`) and
    ``times_bound``, its time ÷ that (and the same in ``graph``). ``time_over_linear``: eager ÷ linear's eager;
    ``graph.time_over_linear``: graph ÷ linear's graph (:data:`RATIOS`)."""
    if "linear" not in methods:
        raise ValueError("methods must include 'linear' (every time is reported as a ratio to it)")
    total = PIXELS[task] - 1
    device = torch.device(device)
    rows = []
    for method in methods:
        b = batch[method] if isinstance(batch, dict) else batch
        model = build_generator(task, method, overrides=overrides, device=device)
        cap = min(total, max_pixels.get(method, total))
        prompt = torch.zeros(b, 1, dtype=torch.long, device=device)
        _generate(model, method, prompt, 4, None)  # warm-up (on CUDA, of the graph replay)
        if method in LEAN and device.type == "cuda":
            _generate(model, method, prompt, 4, None, cuda_graph=False)  # and of the eager step
        row = _row(task, method, b, measure(model, method, b, cap, device=device, budget_s=budget_s,
                                            reference=reference, repeats=repeats))
        if method in LSH_ROUNDS:  # what ran: the config's buckets and chunks, the method's rounds
            row["attention_options"] = dict(model.cfg.attention_options)
        if counts and method in counts:
            row.update(counts[method])
        if bytes_per_s and method in LEAN:
            for part in (row, row.get("graph")):
                if part is not None:
                    part["bound_ms_per_pixel"] = bound_ms_per_pixel(model, b, part["pixels_timed"], bytes_per_s)
                    part["times_bound"] = part["ms_per_pixel"] / part["bound_ms_per_pixel"]
        rows.append(row)
    linear = next(r for r in rows if r["method"] == "linear")
    for row in rows:
        row["time_over_linear"] = row["seconds_per_image"] / linear["seconds_per_image"]
        if "graph" in row and "graph" in linear:
            row["graph"]["time_over_linear"] = row["graph"]["seconds_per_image"] / linear["graph"]["seconds_per_image"]
    return rows


def _fits(task: str, method: str, batch: int, device, overrides) -> bool:
    """Whether generating ``batch`` images of ``task`` fits in the device's memory: its largest step (the whole
    image through the model for the uncached methods; the prompt, then a step with the cache preallocated to the
    image for the lean ones)."""
    from lra_kit.models.decode import Decoder

    model = build_generator(task, method, overrides=overrides, device=device)
    total = PIXELS[task] - 1
    prompt = torch.zeros(batch, 1, dtype=torch.long, device=device)
    try:
        with torch.inference_mode():
            if method not in LEAN:  # the whole image through the model: the last step of the uncached ways
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


def _check_args(tasks, methods, batches, max_pixels, budget_s=None, max_batch=None, repeats=REPEATS) -> None:
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
        if key in LEAN and cap < 2:  # the first pixel comes from the prompt pass: a step needs a second one
            raise ValueError(f"max_pixels[{key!r}] must be >= 2 for a lean method (the first pixel comes from the "
                             f"prompt pass, the steps time the others), got {cap}")
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and budget_s > 0):
        raise ValueError(f"budget_s must be a positive number of seconds, got {budget_s!r}")
    if max_batch is not None and (not isinstance(max_batch, int) or max_batch < 1):
        raise ValueError(f"max_batch must be a positive int, got {max_batch!r}")
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be a positive int (rounds per row; their medians are recorded), "
                         f"got {repeats!r}")


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def run(tasks=tuple(PIXELS), methods=METHODS, batches=(1,), *, max_pixels: dict | None = None,
        overrides: dict | None = None, device=None, progress: bool = True, budget_s: float | None = None,
        largest: bool = False, max_batch: int | None = None, reference: bool = False, count: bool = True,
        repeats: int = REPEATS) -> dict:
    """Time every task × batch × method, each row the medians of ``repeats`` rounds (:func:`time_generation`);
    returns ``{"rows": [...], "config": {...}, "device": ...}``.

    ``largest``: one more row per task and method at the largest batch that fits (:func:`largest_batch`, up to
    ``max_batch``, default :data:`MAX_BATCH` of the device), marked ``"batch_search": "largest"``. ``count``:
    operators per pixel in every row (:func:`count_ops`), and through the modules' step with ``reference``."""
    tasks, methods, batches = tuple(tasks), tuple(methods), tuple(batches)
    max_pixels = dict(max_pixels or {})
    _check_args(tasks, methods, batches, max_pixels, budget_s, max_batch, repeats)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    max_batch = max_batch or MAX_BATCH.get(device.type, 1)
    rows = []
    load_before = _load_average()
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
              "step": "generate()'s lean step (lra_kit.models.decode) for " + ", ".join(LEAN) + ", eager"
                      + ("; and replayed as CUDA graphs (row['graph'])" if device.type == "cuda" else "")
                      + "; the whole prefix re-run for every pixel for " + ", ".join(UNCACHED),
              "lsh": "lra_kit.attention.lsh.LSHAttention with get_config(task, 'lsh', 'paper')'s options and "
                     "n_hashes from the method's name (each LSH row's attention_options)",
              "timing": TIMING, "ratios": RATIOS,
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
    """The rows as printed: eager times (÷ linear's eager), the prompt pass and set-up apart in milliseconds, and where
    timed the modules' step (× its time over the lean step's), the CUDA graph replay (÷ linear's graph replay) and
    the least time the bytes allow."""
    mark = {"none": "", "lower bound": " ≥", "estimate": " ~"}
    lines = [f"{'task':8} {'method':17} {'batch':>5} {'timed':>10} {'s/image':>10} {'images/s':>9} {'ms/pixel':>9} "
             f"{'÷ linear':>8}   {'prefill':>8} {'setup':>8} {'rounds':>6} {'ops/px':>7} {'kern/px':>7}  "
             "modules / graph / bound"]

    def ms(x):
        return f"{'–':>8}" if x is None else f"{1e3 * x:>6.1f}ms"

    for r in rows:
        # kernels launched: ATen's, and the fused steps' Triton kernels where they ran
        kernels = "launches_per_pixel" if "launches_per_pixel" in r else "kernels_per_pixel"
        ops = " ".join(f"{r[k]:>7.0f}" if k in r else f"{'':>7}" for k in ("ops_per_pixel", kernels))
        extra = []
        if "modules" in r:
            extra.append(f"modules {r['modules']['ms_per_pixel']:.2f} ms/px ×{r['lean_speedup']:.2f}")
        if "graph" in r:
            g = r["graph"]
            extra.append(f"graph {g['ms_per_pixel']:.3f} ms/px{mark[g['extrapolation']]} ÷ linear "
                         f"{g['time_over_linear']:.2f}, setup {1e3 * g['setup_s']:.0f} ms"
                         + (f", {g['times_bound']:.1f}× bound" if "times_bound" in g else ""))
        if "times_bound" in r:  # the time ÷ the least traffic's (generation_bound)
            extra.append(f"eager {r['times_bound']:.1f}× bound {r['bound_ms_per_pixel']:.3f} ms")
        lines.append(f"{r['task']:8} {r['method']:17} {r['batch']:>5} {r['pixels_timed']:>4}/{r['pixels']:<5} "
                     f"{r['seconds_per_image']:>10.3f} {r['images_per_s']:>9.3f} {r['ms_per_pixel']:>9.3f} "
                     f"{r['time_over_linear']:>8.2f}{mark[r['extrapolation']]:2} {ms(r.get('prefill_s'))} "
                     f"{ms(r.get('setup_s'))} {len(r.get('rounds', [])) or 1:>6} {ops}  {'; '.join(extra)}".rstrip())
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
                        help="seconds of steps in a row's first round: every way stops there (a stopped row is "
                             "scaled to the image and flagged in the JSON); the later rounds time as many pixels")
    parser.add_argument("--max-pixels", nargs="+", default=[], metavar="METHOD=N",
                        help="time only the first N pixels of METHOD (then scaled, flagged in the JSON), "
                             "e.g. softmax=256")
    parser.add_argument("--reference", action="store_true",
                        help="also time the modules' step (generate(lean=False)) in the same rounds, eager against "
                             "the eager lean step")
    parser.add_argument("--repeats", type=int, default=REPEATS,
                        help=f"rounds per row, every way of timing once per round; the row holds the medians and "
                             f"keeps each round (default {REPEATS})")
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
            raise ValueError(f"--repeats must be >= 1 (rounds per row), got {args.repeats}")
        for method, cap in caps.items():
            if method in LEAN and cap < 2:
                raise ValueError(f"--max-pixels {method}={cap}: a lean method needs N >= 2 (the first pixel comes "
                                 "from the prompt pass)")
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
