"""Training benchmark (Luna Table 2): steps per second and peak memory of the LRA Text classifier.

    lra-kit bench training [--lengths 1024 2048 3072 4096] [--model luna-text|momentum] [--batch B]
                           [--device cpu|cuda] [--json results/bench/training-cpu.json]

Ma et al. (Luna §4.1, Table 2) time training steps of the byte-level Text model at 1K-4K tokens, "with
the same batch size" for every model, and report steps/s and peak memory relative to the Transformer.
Their Transformer materialises the n × n attention matrix; today's Transformer calls a fused kernel
(PyTorch's scaled_dot_product_attention, SDPA), which does not. So every other method is reported
against both baselines, measured in the same run:

* ``softmax_materialised`` — softmax attention with SDPA pinned to its math backend, which forms
  softmax(QKᵀ/√d) explicitly (the paper's baseline);
* ``softmax_sdpa`` — the same model with PyTorch's choice of SDPA kernel (flash / memory-efficient).

A step is one optimizer update: forward, cross-entropy, backward, AdamW step, on random bytes (the
cost does not depend on the values). The models differ only in their attention; the rest is one
architecture (post-LN, mean pooling, no dropout, so that SDPA keeps its fused kernels):

* ``--model luna-text``: Luna Table 7's Text model (= Tay et al.'s: 4 layers, d 256, 4 heads, FFN 1024);
* ``--model momentum``: the Momentum paper's LRA model (2 layers, d 64, 2 heads, FFN 128) — the one a
  CPU can time at 4K in minutes.

Timing: median of interleaved repeats (:mod:`lra_kit.bench.timing`); peak memory of one step after a
warm-up step (optimizer state included), in a fresh process on a CPU (:mod:`lra_kit.bench.measure`).
Ratios: ``speed_vs_X`` = time(X) ÷ time(method) (Table 2's "steps per second" relative to X) and
``memory_vs_X`` = peak(method) ÷ peak(X).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

from lra_kit.atomic import check_writable
from lra_kit.attention import attention_spec
from lra_kit.bench.attention import sdpa_context
from lra_kit.bench.measure import working_set_peaks
from lra_kit.bench.timing import interleaved_times
from lra_kit.models import ModelConfig, build_model
from lra_kit.results import make_results, write_results
from lra_kit.bench.entry import module_main

BASELINES = ("softmax_materialised", "softmax_sdpa")
# The methods timed, in order: the attention of each and its options beyond the registry's defaults; Luna's l is
# the suffix. Momentum: β, γ of Nguyen et al. Table 1, Text row.
_ATTENTION = {"softmax_materialised": ("softmax", {}), "softmax_sdpa": ("softmax", {}), "linear": ("linear", {}),
              "performer": ("performer", {}), "momentum": ("momentum", {"beta": 0.6, "gamma": 2.0}),
              "luna-16": ("luna", {"tie_kv": False}), "luna-128": ("luna", {"tie_kv": False}),
              "luna-256": ("luna", {"tie_kv": False})}
METHODS = tuple(_ATTENTION)
MODELS = {
    "luna-text": dict(layers=4, d_model=256, n_heads=4, d_ff=1024),   # Luna Table 7 / Tay et al., Text
    "momentum": dict(layers=2, d_model=64, n_heads=2, d_ff=128),      # Nyströmformer lra_config.py
}
VOCAB = 257  # bytes + padding, as lra_kit.data's Text
DEFAULTS = {  # (model, batch, repeats) per device type
    "cpu": ("momentum", 2, 3),
    "cuda": ("luna-text", 32, 5),
}
LENGTHS = (1024, 2048, 3072, 4096)


def model_config(method: str, model: str) -> ModelConfig:
    """The classifier of ``model``'s shape with ``method``'s attention (post-LN, mean pooling, no dropout)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if model not in MODELS:
        raise ValueError(f"model must be one of {tuple(MODELS)}, got {model!r}")
    attention, options = _ATTENTION[method]
    luna_length = int(method.split("-")[1]) if attention_spec(attention).extra_sequence else 16
    cfg = ModelConfig(attention=attention, attention_options=dict(options), dropout=0.0, attention_dropout=0.0,
                      norm="post", pooling="mean", luna_length=luna_length, **MODELS[model])
    return cfg.validate()


def _backend(method: str, device: torch.device):
    """SDPA's math backend for the materialised baseline; PyTorch's choice otherwise."""
    if method == "softmax_materialised":
        return sdpa_context("math")
    return contextlib.nullcontext()


def make_train_step(method: str, *, length: int, batch: int, model: str, device, amp: bool = False,
                    seed: int = 0) -> Callable[[], float]:
    """One training step of ``method``'s classifier on a fixed random batch; returns the loss."""
    device = torch.device(device)
    torch.manual_seed(seed)
    net = build_model(model_config(method, model), kind="classification", vocab_size=VOCAB, num_classes=2,
                      max_length=length).to(device)
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, VOCAB, (batch, length), generator=g).to(device)
    labels = torch.randint(0, 2, (batch,), generator=g).to(device)

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        autocast = torch.autocast(device.type, dtype=torch.bfloat16) if amp else contextlib.nullcontext()
        with _backend(method, device), autocast:
            loss = F.cross_entropy(net(input_ids=ids).float(), labels)
        loss.backward()
        optimizer.step()
        return loss.detach()

    return step


def _train_step(job, device: torch.device, shape: dict) -> Callable[[], float]:
    length, method = job
    return make_train_step(method, length=length, device=device, **shape)


def measure_peaks(jobs, shape: dict, device: torch.device) -> list[int | None]:
    """Peak bytes of one step per (length, method), after a warm-up step (optimizer state included); on a
    CPU in a fresh process (:func:`lra_kit.bench.measure.working_set_peaks`)."""
    return working_set_peaks(functools.partial(_train_step, shape=shape), jobs, device)


def add_ratios(rows: list[dict]) -> list[dict]:
    """Add ``speed_vs_<baseline>`` = t(baseline)/t(row) and ``memory_vs_<baseline>`` = peak(row)/peak(baseline)
    to each row, against the baselines of the same length (None where a number is missing)."""
    by_key = {(r["length"], r["method"]): r for r in rows}
    for row in rows:
        for base in BASELINES:
            ref = by_key.get((row["length"], base))
            row[f"speed_vs_{base}"] = ref["median_s"] / row["median_s"] if ref else None
            peak, ref_peak = row.get("peak_bytes"), ref.get("peak_bytes") if ref else None
            row[f"memory_vs_{base}"] = peak / ref_peak if peak is not None and ref_peak else None
    return rows


def _check(lengths, batch, repeats, methods, model) -> None:
    if not lengths or any(not isinstance(n, int) or n < 1 for n in lengths):
        raise ValueError(f"lengths must be positive integers, got {lengths!r}")
    for name, value in (("batch", batch), ("repeats", repeats)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ValueError(f"methods must be some of {METHODS}, got {list(methods)!r}")
    if model not in MODELS:
        raise ValueError(f"model must be one of {tuple(MODELS)}, got {model!r}")


def run(lengths=None, *, model=None, batch=None, repeats=None, methods=None, device=None, amp=False,
        memory=True) -> dict:
    """Time every method at every length (interleaved within a length), then measure peak memory."""
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    default_model, default_batch, default_repeats = DEFAULTS["cuda" if device.type == "cuda" else "cpu"]
    lengths = tuple(LENGTHS if lengths is None else lengths)
    model = default_model if model is None else model
    batch = default_batch if batch is None else batch
    repeats = default_repeats if repeats is None else repeats
    methods = tuple(METHODS if methods is None else methods)
    _check(lengths, batch, repeats, methods, model)
    if amp and device.type != "cuda":
        raise ValueError("amp (bf16 autocast) is for CUDA devices; leave it off on a CPU")
    shape = dict(batch=batch, model=model, amp=amp)
    rows = []
    for n in lengths:
        steps = {m: make_train_step(m, length=n, device=device, **shape) for m in methods}
        times = interleaved_times(steps, device, repeats=repeats)
        for m in methods:
            rows.append({"length": n, "method": m, "median_s": statistics.median(times[m]),
                         "spread_s": max(times[m]) - min(times[m]), "steps_per_s": 1 / statistics.median(times[m])})
        del steps
    jobs = [(r["length"], r["method"]) for r in rows]
    peaks = measure_peaks(jobs, shape, device) if memory else [None] * len(jobs)
    for row, peak in zip(rows, peaks, strict=True):
        row["peak_bytes"] = peak
    add_ratios(rows)
    detail = torch.cuda.get_device_name(device) if device.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    return {"config": {"lengths": list(lengths), "model": model, **MODELS[model], "batch": batch, "repeats": repeats,
                       "methods": list(methods), "amp": amp, "vocab_size": VOCAB, "optimizer": "adamw",
                       "dropout": 0.0, "norm": "post", "pooling": "mean"},
            "rows": rows, "device": detail, "device_type": device.type}


def format_table(result: dict) -> str:
    c = result["config"]
    lines = [f"training steps, {c['model']} model ({c['layers']} layers, d {c['d_model']}), batch {c['batch']}, "
             f"{result['device']}; speed = steps/s relative to the baseline, memory = peak relative to it",
             f"{'length':>6} {'method':<21} {'s/step':>8} {'peak MiB':>9} {'speed/mat':>9} {'mem/mat':>8} "
             f"{'speed/sdpa':>10} {'mem/sdpa':>8}"]

    def fmt(x, spec):
        return format(x, spec) if x is not None else "-"
    for r in result["rows"]:
        mib = r["peak_bytes"] / 2**20 if r["peak_bytes"] is not None else None
        lines.append(f"{r['length']:>6} {r['method']:<21} {r['median_s']:>8.3f} {fmt(mib, '>9.1f')} "
                     f"{fmt(r['speed_vs_softmax_materialised'], '>9.2f')} "
                     f"{fmt(r['memory_vs_softmax_materialised'], '>8.2f')} "
                     f"{fmt(r['speed_vs_softmax_sdpa'], '>10.2f')} {fmt(r['memory_vs_softmax_sdpa'], '>8.2f')}")
    return "\n".join(lines)


def write_json(result: dict, path: Path | str, wall_s: float) -> None:
    """Write the rows with the run's provenance (the keys of :mod:`lra_kit.results`)."""
    record = make_results(metrics={"rows": result["rows"]}, config=result["config"], scale="benchmark",
                          steps=result["config"]["repeats"], seed=0, wall_s=wall_s, device=result["device_type"],
                          experiment="bench/training", device_detail=result["device"],
                          python=sys.version.split()[0])
    write_results(record, str(path))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lengths", type=int, nargs="+", default=None, help="default: 1024 2048 3072 4096")
    parser.add_argument("--model", choices=tuple(MODELS), default=None,
                        help="default: momentum on a CPU, luna-text on CUDA")
    parser.add_argument("--batch", type=int, default=None, help="default 2 on a CPU, 32 on CUDA")
    parser.add_argument("--repeats", type=int, default=None, help="default 3 on a CPU, 5 on CUDA")
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=None, help="default: all")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    parser.add_argument("--amp", action="store_true", help="bf16 autocast (CUDA)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory pass")
    parser.add_argument("--json", type=Path, default=None, help="also write results/bench/training-<device>.json")


def main_from_args(args: argparse.Namespace) -> int:
    if args.json:
        check_writable(args.json)  # before the run, not after it
    start = time.perf_counter()
    try:
        result = run(args.lengths, model=args.model, batch=args.batch, repeats=args.repeats, methods=args.methods,
                     device=args.device, amp=args.amp, memory=not args.no_memory)
    except ValueError as err:
        raise SystemExit(f"lra-kit bench training: error: {err}") from None
    print(format_table(result))
    if args.json:
        write_json(result, args.json, time.perf_counter() - start)
        print(f"wrote {args.json}")
    return 0


def main(argv=None) -> int:
    return module_main("python -m lra_kit.bench.training", __doc__, add_arguments, main_from_args, argv)


if __name__ == "__main__":
    sys.exit(main())
