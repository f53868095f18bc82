"""Where a generated pixel's time goes: the lean step (:mod:`lra_kit.models.decode`) under ``torch.profiler``.

    lra-kit bench decode-profile --device cuda --tasks mnist --batches 1 1024
    python -m lra_kit.bench.generation_profile ...   # the same

The generation benchmark (:mod:`lra_kit.bench.generation`) says how long a pixel takes; this says why. For each
task, method and batch it runs a few eager steps of the lean step under the profiler and records, per step, the
kernels launched and the time of each operator (on CUDA the time on the device, summed over the step's kernels;
on a CPU the operator's own time), the largest first. On CUDA it also times the same step replayed as a CUDA
graph, with CUDA events: where the graph takes about the sum of its kernels' device time, the step is bound by
its kernels (their arithmetic or bytes); where it takes much longer, by the gaps between ~100 short kernels.

Where the RNNs run fused on the device (:class:`lra_kit.attention.decode.FusedStep`: one Triton kernel a layer),
each of their rows is profiled twice, ``"step": "fused"`` and ``"step": "aten"`` (the ATen step, with the Triton
path turned off), so that the record compares the two on the same card.

``--compile`` also times the RNNs' step eagerly against ``torch.compile`` of the same step (the device-addressed one,
``Decoder(graph=True)``, whose shapes never change, so it compiles once): ``compile`` in the row, with each one's
milliseconds a step (medians of alternating rounds), the seconds the first compiled calls took, and whether the two
drew the same tokens: whether ``generate`` should offer ``torch.compile`` of the step on a CPU, where it would be
faster (the image-generation page reads the CPU record).

The record (``results/bench/decode-profile-<gpu>.json``, or ``-cpu``) holds, per row: ``step``,
``kernels_per_step`` (Triton's included), ``device_us_per_step`` (CUDA) or ``cpu_us_per_step``,
``triton_us_per_step`` (the fused kernel's device time, within ``device_us_per_step``), ``graph_us_per_step``
(CUDA), ``top``: the operators that take the most, with their calls and microseconds per step, and
``calls_per_step``: every operator's calls.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

import torch

from lra_kit.atomic import check_writable
from lra_kit.bench.entry import module_main
from lra_kit.bench.generation import GROWING, LEAN, PIXELS, TINY, build_generator, default_json_path
from lra_kit.bench.timing import synchronize
from lra_kit.results import make_results, write_results

TOP = 12  # operators kept per row, the most expensive first
RNNS = tuple(m for m in LEAN if not GROWING[m])  # the lean methods whose step does not grow: the RNNs
TRITON_KERNELS = ("decode_step_kernel",)  # the fused step's kernel: a device event under no aten operator


def _device_us(event) -> float:
    # torch renamed cuda → device in these totals; the old name is read where the new one is missing. A kernel's
    # own event (the fused step's Triton kernel, under no aten operator) may carry only the inclusive total.
    own = float(getattr(event, "self_device_time_total", getattr(event, "self_cuda_time_total", 0.0)))
    return own or float(getattr(event, "device_time_total", getattr(event, "cuda_time_total", 0.0)))


def _decoder(model, batch: int, steps: int, device, graph: bool):
    from lra_kit.models.decode import CACHE_BUCKET, Decoder

    prompt = torch.zeros(batch, 1, dtype=torch.long, device=device)
    return Decoder.after_prompt(model, prompt, steps + 1, generator=torch.Generator(device=device).manual_seed(0),
                                graph=graph, cache_bucket=CACHE_BUCKET if graph else 1)


def profile_step(task: str, method: str, batch: int, *, device="cpu", steps: int = 16, warmup: int = 3,
                 overrides: dict | None = None, fused: bool = True) -> dict:
    """One row: ``steps`` eager lean steps of ``method`` at ``batch`` under the profiler (after ``warmup``), and on
    CUDA the step replayed as a CUDA graph ``steps`` times (module docstring). ``fused=False`` turns the Triton path
    off, so that the RNNs run the ATen step."""
    from lra_kit.attention.causal.triton.switch import disabled

    with contextlib.nullcontext() if fused else disabled():
        return _profile_step(task, method, batch, device=device, steps=steps, warmup=warmup, overrides=overrides)


def _profile_step(task: str, method: str, batch: int, *, device, steps: int, warmup: int,
                  overrides: dict | None) -> dict:
    from lra_kit.attention.decode import FusedStep

    if method not in LEAN:
        raise ValueError(f"method must be one with a lean step ({', '.join(LEAN)}), got {method!r}")
    if batch < 1 or steps < 1 or warmup < 0:
        raise ValueError(f"batch and steps must be >= 1 and warmup >= 0, got {batch}, {steps}, {warmup}")
    device = torch.device(device)
    cuda = device.type == "cuda"
    model = build_generator(task, method, overrides=overrides, device=device)
    activities = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if cuda else [])
    with torch.inference_mode():
        decoder = _decoder(model, batch, warmup + steps, device, graph=False)
        step = "fused" if any(isinstance(layer.attention, FusedStep) for layer in decoder.layers) else "aten"
        for t in range(1, 1 + warmup):
            decoder.step(t)
        synchronize(device)
        with torch.profiler.profile(activities=activities) as prof:
            for t in range(1 + warmup, 1 + warmup + steps):
                decoder.step(t)
            synchronize(device)
    averages = prof.key_averages()
    events = [e for e in averages if e.key.startswith("aten::")]
    triton = [e for e in averages if e.key in TRITON_KERNELS]
    cost = _device_us if cuda else (lambda e: float(e.self_cpu_time_total))
    top = sorted(events + triton, key=cost, reverse=True)[:TOP]
    row = {"task": task, "method": method, "batch": batch, "steps": steps, "step": step,
           "top": [{"op": e.key.removeprefix("aten::"), "calls_per_step": e.count / steps,
                    "us_per_step": round(cost(e) / steps, 2)} for e in top],
           # every operator's calls, not only the costliest: what a step runs does not depend on the timing
           "calls_per_step": {e.key.removeprefix("aten::"): e.count / steps for e in events + triton}}
    if cuda:
        triton_us = sum(_device_us(e) for e in triton)
        row["device_us_per_step"] = round((sum(_device_us(e) for e in events) + triton_us) / steps, 2)
        row["triton_us_per_step"] = round(triton_us / steps, 2)
        row["kernels_per_step"] = sum(e.count for e in events + triton if _device_us(e) > 0) / steps
        row["graph_us_per_step"] = round(_graph_us(model, batch, steps, device), 2)
    else:
        row["cpu_us_per_step"] = round(sum(cost(e) for e in events) / steps, 2)
    return row


COMPILE_ROUNDS = 3  # alternating eager / compiled rounds of the compile comparison; medians kept
COMPILE_WARMUP = 8  # compiled calls before timing: the first traces and compiles, the next may recompile once


def compile_comparison(model, batch: int, steps: int, device) -> dict:
    """Milliseconds a step of ``model``'s lean RNN step, eagerly (positions by Python int) and under ``torch.compile``
    (positions by the device counter: fixed shapes), in :data:`COMPILE_ROUNDS` alternating rounds of ``steps`` steps
    (medians, and every round); the seconds the compiled step's first :data:`COMPILE_WARMUP` calls took; whether the
    two drew the same tokens (same generator, same seed)."""
    from lra_kit.attention.decode import CacheStep

    positions = COMPILE_WARMUP + COMPILE_ROUNDS * steps
    with torch.inference_mode():
        eager, graphed = (_decoder(model, batch, positions, device, graph=graph) for graph in (False, True))
        if any(isinstance(layer.attention, CacheStep) for layer in eager.layers):
            raise ValueError("the compile comparison runs the RNNs only (a cache's span changes with the position)")
        # a fresh compile each time: recompiling Decoder.step for a second decoder in one process failed inside
        # inductor (torch 2.13, CPU: "Expected !size_bytes_is_heap_allocated_"), and one comparison's compiled
        # code is no use to the next
        torch._dynamo.reset()
        compiled = torch.compile(graphed.step)
        start = time.perf_counter()
        for t in range(1, 1 + COMPILE_WARMUP):
            eager.step(t)
            compiled(None, None)
        synchronize(device)
        compile_s = time.perf_counter() - start
        rounds, t = [], 1 + COMPILE_WARMUP
        for _ in range(COMPILE_ROUNDS):
            times = {}
            for name, run in (("eager", lambda i: eager.step(i)), ("compiled", lambda i: compiled(None, None))):
                synchronize(device)
                begin = time.perf_counter()
                for i in range(t, t + steps):
                    run(i)
                synchronize(device)
                times[name] = (time.perf_counter() - begin) * 1e3 / steps
            rounds.append(times)
            t += steps
        same = bool(torch.equal(eager.tokens, graphed.tokens))
    median = {name: statistics.median(r[name] for r in rounds) for name in ("eager", "compiled")}
    return {"eager_ms_per_step": median["eager"], "compiled_ms_per_step": median["compiled"],
            "compiled_over_eager": median["compiled"] / median["eager"], "rounds_ms": rounds,
            "first_calls_s": compile_s, "same_tokens": same, "steps": steps}


def _graph_us(model, batch: int, steps: int, device) -> float:  # pragma: no cover - GPU
    """Microseconds per step of the lean step replayed as one CUDA graph, timed with CUDA events."""
    with torch.inference_mode():
        decoder = _decoder(model, batch, steps + 2, device, graph=True)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        span = decoder.span(1)  # a key/value cache attends over its first bucket, the unwritten positions masked
        with torch.cuda.stream(side):
            decoder.step(None, span)  # the warm-up a capture needs
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        graph.register_generator_state(decoder.generator)
        with torch.cuda.graph(graph):
            decoder.step(None, span)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        # replays past the end of the buffers would write out of bounds: the decoder was sized for them
        start.record()
        for _ in range(steps):
            graph.replay()
        end.record()
        torch.cuda.synchronize(device)
    return start.elapsed_time(end) * 1000 / steps


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", nargs="+", choices=tuple(PIXELS), default=["mnist"])
    parser.add_argument("--methods", nargs="+", choices=LEAN, default=list(LEAN))
    parser.add_argument("--batches", type=int, nargs="+", default=[1])
    parser.add_argument("--steps", type=int, default=16, help="profiled steps per row (after 3 of warm-up)")
    parser.add_argument("--tiny", action="store_true", help="a 1-layer d=32 model instead of the papers' (tests)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--json", type=Path, default=None,
                        help="default results/bench/decode-profile-<gpu>.json (-cpu on a CPU)")
    parser.add_argument("--no-json", action="store_true", help="print only")
    parser.add_argument("--compile", action="store_true",
                        help="also time the RNNs' step eagerly against torch.compile (compile_comparison)")


def format_rows(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        total = (f"device {r['device_us_per_step']:.0f} µs, graph {r['graph_us_per_step']:.0f} µs, "
                 f"{r['kernels_per_step']:.0f} kernels" if "device_us_per_step" in r
                 else f"cpu {r['cpu_us_per_step']:.0f} µs")
        lines.append(f"{r['task']} {r['method']} batch {r['batch']} ({r.get('step', 'aten')} step): {total} a step")
        lines += [f"    {t['op']:<28} {t['calls_per_step']:>5.1f} calls {t['us_per_step']:>9.1f} µs" for t in r["top"]]
        if "compile" in r:
            c = r["compile"]
            lines.append(f"    torch.compile: {c['compiled_ms_per_step']:.3f} ms a step against "
                         f"{c['eager_ms_per_step']:.3f} eager (×{c['compiled_over_eager']:.2f}; first calls "
                         f"{c['first_calls_s']:.1f} s; same tokens: {c['same_tokens']})")
    return "\n".join(lines)


def main_from_args(args: argparse.Namespace) -> int:
    if any(b < 1 for b in args.batches) or args.steps < 1:
        raise SystemExit(f"error: --batches and --steps must be >= 1, got {args.batches}, {args.steps}")
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    path = None if args.no_json else (args.json or default_json_path(device, "decode-profile"))
    if path is not None:
        check_writable(path)
    start, rows = time.perf_counter(), []
    for task in args.tasks:
        for method in args.methods:
            for batch in args.batches:
                kw = dict(device=device, steps=args.steps, overrides=TINY if args.tiny else None)
                new = [profile_step(task, method, batch, **kw)]
                if new[0]["step"] == "fused":  # the same row on the ATen step, for the comparison
                    new.append(profile_step(task, method, batch, fused=False, **kw))
                if args.compile and method in RNNS:
                    model = build_generator(task, method, overrides=kw["overrides"], device=device)
                    new[0]["compile"] = compile_comparison(model, batch, args.steps, device)
                rows += new
                print(format_rows(new), flush=True)
                if path is not None:  # rewritten after each row: a run stopped at a time limit keeps what it did
                    config = {"tasks": args.tasks, "methods": args.methods, "batches": args.batches,
                              "steps": args.steps, "warmup": 3, "tiny": args.tiny, "compile": args.compile,
                              "compile_rounds": COMPILE_ROUNDS, "threads": torch.get_num_threads(),
                              "step": "lra_kit.models.decode.Decoder.step, eager under torch.profiler; "
                                      "on CUDA also replayed as one CUDA graph (CUDA events)"}
                    write_results(make_results(metrics={"rows": rows}, config=config, scale="benchmark",
                                               steps=args.steps, seed=0, wall_s=time.perf_counter() - start,
                                               device=device, experiment="bench/decode-profile"), str(path))
    if path is not None:
        print(f"wrote {path}")
    return 0


def main(argv=None) -> int:
    return module_main("python -m lra_kit.bench.generation_profile", __doc__, add_arguments, main_from_args, argv)


__all__ = ["profile_step", "format_rows"]

if __name__ == "__main__":
    sys.exit(main())
