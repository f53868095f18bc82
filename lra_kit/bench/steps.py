"""Seconds per training step of the recorded CPU runs: each preset's model, trained through the trainer itself.

    lra-kit bench steps [--rows TASK:PRESET:ATTENTION[+CONNECTION] ...] [--steps 30] [--warmup 10]
                        [--threads 1] [--compile] [--json results/bench/steps-cpu.json]

The recorded reproductions run one per core, one thread each (docs/budget.md plans their core-hours from these
numbers). A row builds the run's exact configuration (``get_config(task, attention, preset=...)``), the
:class:`lra_kit.train.trainer.Trainer` with its data and optimizer, and times ``train_step`` — forward, loss,
backward, optimizer step, the batch read from the loader — one step at a time: the median of ``--steps`` steps
after ``--warmup``. ``--compile`` sets ``train.compile`` (``torch.compile`` of the model and its loss). A row whose
dataset is missing is reported as such, not timed.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from lra_kit.atomic import check_writable
from lra_kit.bench.entry import module_main
from lra_kit.data.store.errors import DataError
from lra_kit.results import make_results, write_results

# The runs of the budget plan (docs/budget.md): task, preset, attention[+connection].
DEFAULT_ROWS = tuple(
    f"{task}:{preset}:{name}"
    for task, preset, names in (
        ("copy", "cpu-20k", ("softmax", "linear", "momentum", "momentum+adaptive")),
        ("mnist", "cpu-12k", ("softmax", "linear", "momentum", "momentum+adaptive")),
        ("text", "lra-cpu", ("softmax", "linear", "momentum+adaptive", "luna")),
        ("listops", "lra-cpu", ("softmax", "linear", "momentum+adaptive", "luna")),
    )
    for name in names
)


def parse_row(row: str) -> tuple[str, str, str, str]:
    """``"copy:cpu-20k:momentum+adaptive"`` → ``("copy", "cpu-20k", "momentum", "adaptive")``."""
    parts = row.split(":")
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"a row is TASK:PRESET:ATTENTION[+CONNECTION], e.g. copy:cpu-20k:linear; got {row!r}")
    task, preset, name = parts
    attention, _, connection = name.partition("+")
    return task, preset, attention, connection or "residual"


def time_row(row: str, *, steps: int, warmup: int, compile: bool = False) -> dict:
    """Median seconds per ``train_step`` of one row (see the module docstring)."""
    from lra_kit.train.configs import get_config
    from lra_kit.train.trainer import Trainer

    task, preset, attention, connection = parse_row(row)
    cfg = get_config(task, attention, None, connection, preset)
    cfg.train.compile = compile
    result = {"row": row, "task": task, "preset": preset, "attention": attention, "connection": connection,
              "batch": cfg.data.batch_size, "compile": compile}
    with tempfile.TemporaryDirectory() as workdir:
        try:
            trainer = Trainer(cfg, workdir, device="cpu", progress=False, log=lambda *a, **k: None)
        except DataError as err:
            return {**result, "skipped": f"data missing: {str(err).splitlines()[0]}"}
        train = trainer.datasets["train"]
        sampler = trainer.epoch_batches(0)
        if len(sampler) < warmup + steps:
            raise ValueError(f"{row}: the train split has {len(sampler)} batches, fewer than warmup + steps")
        batches = iter(trainer._loader(train, sampler))
        times = []
        for i in range(warmup + steps):
            start = time.perf_counter()
            trainer.train_step(batches)
            if i >= warmup:
                times.append(time.perf_counter() - start)
    median = statistics.median(times)
    return {**result, "median_s": median, "min_s": min(times), "max_s": max(times), "steps": steps,
            "warmup": warmup, "core_hours_per_1000_steps": median * 1000 / 3600}


def run(rows=DEFAULT_ROWS, *, steps: int = 30, warmup: int = 10, threads: int = 1, compile: bool = False,
        progress=print) -> dict:
    if not (isinstance(steps, int) and steps >= 1) or not (isinstance(warmup, int) and warmup >= 0):
        raise ValueError(f"steps must be an int >= 1 and warmup an int >= 0, got steps={steps!r} warmup={warmup!r}")
    if not (isinstance(threads, int) and threads >= 1):
        raise ValueError(f"threads must be an int >= 1, got {threads!r}")
    for row in rows:
        parse_row(row)  # every row checked before the first is timed
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        results = []
        for row in rows:
            results.append(time_row(row, steps=steps, warmup=warmup, compile=compile))
            progress(format_row(results[-1]))
    finally:
        torch.set_num_threads(before)
    return {"rows": results, "config": {"rows": list(rows), "steps": steps, "warmup": warmup, "threads": threads,
                                        "compile": compile}}


def format_row(r: dict) -> str:
    if "skipped" in r:
        return f"{r['row']:34} {r['skipped']}"
    return (f"{r['row']:34} {r['median_s']:7.3f} s/step  (min {r['min_s']:.3f}, max {r['max_s']:.3f}; "
            f"batch {r['batch']}; {r['core_hours_per_1000_steps']:.3f} core-hours per 1,000 steps)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rows", nargs="+", default=list(DEFAULT_ROWS), metavar="TASK:PRESET:ATTENTION",
                        help="default: the runs of docs/budget.md")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per row (default 30)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first (default 10)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: one run per core)")
    parser.add_argument("--compile", action="store_true", help="train.compile: torch.compile the model and loss")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows (results/bench/steps-cpu.json)")


def main_from_args(args: argparse.Namespace) -> int:
    if args.json:
        check_writable(args.json)
    start = time.perf_counter()
    try:
        result = run(args.rows, steps=args.steps, warmup=args.warmup, threads=args.threads, compile=args.compile)
    except ValueError as err:
        raise SystemExit(f"lra-kit bench steps: error: {err}") from None
    if args.json:
        record = make_results(metrics={"rows": result["rows"]}, config=result["config"], scale="benchmark",
                              steps=args.steps, seed=0, wall_s=time.perf_counter() - start, device="cpu",
                              experiment="bench/steps", python=sys.version.split()[0])
        write_results(record, str(args.json))
        print(f"wrote {args.json}")
    return 0


def main(argv=None) -> int:
    return module_main("python -m lra_kit.bench.steps", __doc__, add_arguments, main_from_args, argv)


if __name__ == "__main__":
    sys.exit(main())
