"""Autoregressive image generation speed: Katharopoulos et al. Tables 1-2, appendix Tables 4-5.

``lra-kit bench generation`` (or ``python -m lra_kit.bench.generation``) generates images pixel
by pixel with the papers' models (MNIST: 8 layers, 8 heads, d = 256, FFN 1024, a mixture of 10
logistics; CIFAR-10: the same with 16 layers; the configs of ``lra_kit.train.configs`` at scale
``paper``) and times, in one run on one device, four ways of doing it:

``softmax``           the causal softmax transformer re-run on the whole prefix for every new pixel
                      (``CausalLM.generate(recurrent=False)``), the papers' "Softmax" row;
``softmax-kv-cache``  softmax attention with the keys and values kept between steps, the papers'
                      "Stateful-softmax" (appendix §C.1);
``linear``            the RNN of Katharopoulos eqs. 16-20: a state of fixed size per layer;
``momentum``          the RNN of Nguyen et al. eq. 12 (β, γ of their Table 1).

For each task and batch size it reports seconds per batch, seconds per image and images/s, and
every method's time as a ratio to ``linear`` — the way appendix Table 5 prints its columns.
The weights are random: the time to generate does not depend on them.

Timing a whole image of the uncached softmax is the expensive part (each step re-reads the whole
prefix, so step i costs more than step i − 1). ``max_pixels`` caps the pixels generated per
method; a capped row holds the measured prefix and ``seconds_per_image`` is the prefix time scaled
by pixels/timed. Every step of every method costs at least what the steps before it cost, so that
scaled figure is a *lower bound* for softmax and the key/value cache and an estimate for linear and
momentum (constant cost per step); the row says which in ``extrapolation``. ``"none"`` means the
whole image was generated and timed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from lra_kit.atomic import check_writable
from lra_kit.bench.timing import interleaved_times
from lra_kit.data.registry import task_names, task_spec
from lra_kit.models.causal_lm import CausalLM
from lra_kit.results import device_name, make_results, read_results, write_results
from lra_kit.bench.entry import module_main

# The methods timed, in order, and how each one's per-step cost grows with the step (what a scaled prefix
# time means, see above).
GROWING = {"softmax": True, "softmax-kv-cache": True, "linear": False, "momentum": False}
METHODS = tuple(GROWING)
# The image-generation tasks of the task table and their lengths in pixels.
PIXELS = {name: task_spec(name).length for name in task_names(suite="pixels")}
# The papers' row names in appendix Table 5 for our methods (lra_kit.paper_numbers).
PAPER_ROW = {"softmax": "Softmax", "softmax-kv-cache": "Stateful-softmax", "linear": "Linear (ours)"}
TINY = {"layers": 1, "d_model": 32, "n_heads": 2, "d_ff": 64}  # a smoke-test model (--tiny)


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


def _generate_fn(model: CausalLM, method: str, batch: int, new_pixels: int, device) -> Callable[[], torch.Tensor]:
    prompt = torch.zeros(batch, 1, dtype=torch.long, device=device)  # the first pixel is given; the rest sampled
    gen = torch.Generator(device=device).manual_seed(0)
    recurrent = method != "softmax"
    return lambda: model.generate(prompt, new_pixels, recurrent=recurrent, generator=gen)


def _check_args(tasks, methods, batches, max_pixels) -> None:
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


def time_generation(task: str, methods, batch: int, *, max_pixels: dict, overrides: dict | None = None,
                    device="cpu") -> list[dict]:
    """One row per method: generate ``batch`` images of ``task`` (or their first ``max_pixels[method]`` pixels)."""
    total = PIXELS[task] - 1  # pixels generated after the given first one
    fns, timed = {}, {}
    for method in methods:
        model = build_generator(task, method, overrides=overrides, device=device)
        timed[method] = min(total, max_pixels.get(method, total))
        fns[method] = _generate_fn(model, method, batch, timed[method], device)
        _generate_fn(model, method, batch, 4, device)()  # warm-up: allocator, first-call overheads
    times = interleaved_times(fns, device, repeats=1, warmup=0)
    rows = []
    for method in methods:
        seconds = times[method][0]
        full = timed[method] == total
        per_image = seconds * total / timed[method] / batch
        rows.append({"task": task, "method": method, "batch": batch, "pixels": total, "pixels_timed": timed[method],
                     "seconds": seconds, "seconds_per_image": per_image, "images_per_s": 1.0 / per_image,
                     "extrapolation": "none" if full else "lower bound" if GROWING[method] else "estimate"})
    linear = next(r for r in rows if r["method"] == "linear")
    for row in rows:
        row["time_over_linear"] = row["seconds_per_image"] / linear["seconds_per_image"]
    return rows


def _load_average() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def run(tasks=tuple(PIXELS), methods=METHODS, batches=(1,), *, max_pixels: dict | None = None,
        overrides: dict | None = None, device=None, progress: bool = True) -> dict:
    """Time every task × batch × method; returns ``{"rows": [...], "config": {...}, "device": ...}``."""
    tasks, methods, batches = tuple(tasks), tuple(methods), tuple(batches)
    max_pixels = dict(max_pixels or {})
    _check_args(tasks, methods, batches, max_pixels)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    rows = []
    load_before = _load_average()
    for task in tasks:
        for batch in batches:
            new = time_generation(task, methods, batch, max_pixels=max_pixels, overrides=overrides, device=device)
            rows += new
            if progress:
                print(format_table(new), flush=True)
    config = {"tasks": list(tasks), "methods": list(methods), "batches": list(batches), "max_pixels": max_pixels,
              "model_overrides": overrides or {}, "threads": torch.get_num_threads(),
              "models": {task: "lra_kit.train.configs.get_config(task, attention, 'paper').model, dropout 0"
                         for task in tasks},
              "prompt": "the first pixel is given (0); the others are sampled at temperature 1",
              # other work on the machine slows every method; the ratios to linear are what compares
              "load_average_1min": {"before": load_before, "after": _load_average()}}
    return {"rows": rows, "config": config, "device": device}


def format_table(rows: list[dict]) -> str:
    lines = [f"{'task':8} {'method':17} {'batch':>5} {'timed':>10} {'s/image':>10} {'images/s':>9} {'÷ linear':>8}"]
    for r in rows:
        bound = {"none": "", "lower bound": " ≥", "estimate": " ~"}[r["extrapolation"]]
        lines.append(f"{r['task']:8} {r['method']:17} {r['batch']:>5} {r['pixels_timed']:>4}/{r['pixels']:<5} "
                     f"{r['seconds_per_image']:>10.3f} {r['images_per_s']:>9.3f} {r['time_over_linear']:>8.2f}{bound}")
    return "\n".join(lines)


def default_json_path(device: torch.device) -> Path:
    """``results/bench/generation-<device>.json``: ``cpu``, or the GPU's name in lower case with dashes."""
    name = device_name(device).lower().replace("nvidia ", "")
    return Path("results") / "bench" / f"generation-{'-'.join(name.split())}.json"


def write_json(result: dict, path: Path, wall_s: float, *, append: bool = False) -> None:
    """The rows with the run's provenance (the keys of :mod:`lra_kit.results`); ``append`` merges them into
    the file's rows (:func:`merge_records`)."""
    import platform

    record = make_results(metrics={"rows": result["rows"]}, config=result["config"], scale="benchmark", steps=1,
                          seed=0, wall_s=wall_s, device=result["device"], experiment="bench/generation",
                          processor=platform.processor() or platform.machine(), python=sys.version.split()[0])
    if append and Path(path).exists():
        record = merge_records(read_results(str(path)), record)
    write_results(record, str(path))


def merge_records(old: dict, new: dict) -> dict:
    """``new`` with the rows of ``old`` that it does not re-measure (same task, batch and method), so that one
    file can gather runs with different pixel caps; ``config.runs`` lists every run's config and date."""
    key = lambda r: (r["task"], r["batch"], r["method"])  # noqa: E731
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
    parser.add_argument("--max-pixels", nargs="+", default=[], metavar="METHOD=N",
                        help="time only the first N pixels of METHOD (then scaled, flagged in the JSON), "
                             "e.g. softmax=256")
    parser.add_argument("--tiny", action="store_true", help="a 1-layer d=32 model instead of the papers' (tests)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the results (default results/bench/generation-<device>.json)")
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
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    path = None if args.no_json else (args.json or default_json_path(device))
    if path is not None:
        check_writable(path)  # before the run, not after it
    start = time.perf_counter()
    result = run(args.tasks, args.methods, args.batches, max_pixels=caps, overrides=TINY if args.tiny else None,
                 device=device)
    if path is not None:
        write_json(result, path, time.perf_counter() - start, append=args.append)
        print(f"wrote {path}")
    return 0


def main(argv=None) -> int:
    return module_main("python -m lra_kit.bench.generation", __doc__, add_arguments, main_from_args, argv)


if __name__ == "__main__":
    sys.exit(main())
