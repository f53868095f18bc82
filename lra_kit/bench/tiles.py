"""A short autotune of the causal kernels' chunk and tile sizes (issue 50, item 7), recorded.

    python -m lra_kit.bench.tiles --device cuda [--lengths 16384 65536] [--json results/bench/tiles-<gpu>.json]

For each candidate of the input type (:class:`Candidate`: chunk C, the largest column tile of the chunk kernels,
the largest state tile, and the type the per-chunk states are stored in), it times one forward and backward of
linear attention (β = 0) and of momentum attention (β = 0.6) as users call them, at B 4, H 8, D 64, pipelined
(:func:`lra_kit.bench.timing.pipelined_times`: back-to-back calls, the L2 flushed before each, the median of
``--repeats``). A candidate's score is the geometric mean, over methods and lengths, of its median divided by the
median of what the package ships (:func:`shipped`), timed in the same run; the record names the candidate with the
least score among those whose states' type the precision sweeps allow (:data:`ELIGIBLE_STATES`), and
``tests/test_bench_tiles.py`` fails while the shipped one is not the recorded choice.

The candidates are the sizes the compile guard (:mod:`lra_kit.attention.causal.triton.compile_check`) compiles
without register spills for sm_90: the shipped chunk or half of it, and tiles of 16 columns up to the shipped
type's caps (a larger one would first have to pass the guard); and, for bf16, the states stored in bf16, which
the guard compiles too. On a CPU the kernels run under Triton's
interpreter: the times mean nothing there, and the command only checks that every candidate runs.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import math
import os
import time
from pathlib import Path
from typing import NamedTuple

import torch

from lra_kit.attention import linear_attention, momentum_attention
from lra_kit.attention.causal.triton import host

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
METHODS = {"linear": 0.0, "momentum": 0.6}
JSON = Path("results") / "bench" / "tiles-{gpu}.json"
# The states' types a choice may take: those with which the kernels' bf16 ∇q error stayed within 2× of the PyTorch
# path's in every states sweep against the float64 oracle (results/bench/precision-sweep-states-cpu.json, N 128-256,
# and precision-sweep-states-2k-cpu.json, N 2,048; docs/gpu.md, "Chunk and tile sizes, and the states' type").
# bf16 states did (worst 1.63 at 2,048, float32 states' 1.50); tests/test_bench_tiles.py re-reads the records.
ELIGIBLE_STATES = {torch.float32, torch.bfloat16}


class Candidate(NamedTuple):
    """Sizes (chunk, column tile, state tile, warps) and the type the per-chunk states are stored in."""

    tiling: host.Tiling
    states: torch.dtype


def shipped(dtype: torch.dtype) -> Candidate:
    """What the package launches for ``dtype`` inputs: :data:`~lra_kit.attention.causal.triton.host.TILING` and
    :data:`~lra_kit.attention.causal.triton.host.STATE_TYPES`."""
    return Candidate(host.TILING[dtype], host.STATE_TYPES[dtype])


def candidates(dtype: torch.dtype) -> list[Candidate]:
    """The shipped candidate first, then every other of: its chunk or half of it (no less than 16, the least a
    tensor-core tile takes), and column and state tiles of 16 up to its caps, with float32 states; warps as the
    package chooses them for each size. For bf16 inputs, also the shipped sizes with the states stored in bf16
    (float16 cannot hold them: z passes 65,504 at 64K), whose error the precision sweeps measured. bf16: 9
    candidates."""
    first = shipped(dtype)
    tiling = first.tiling
    chunks = sorted({max(16, tiling.max_chunk // 2), tiling.max_chunk})
    blocks = [b for b in (16, 32, 64) if b <= tiling.max_block]
    states = [b for b in (16, 32, 64) if b <= tiling.state_block]
    out = [first]
    for c, block, state in itertools.product(chunks, blocks, states):
        cand = Candidate(tiling._replace(max_chunk=c, max_block=block, state_block=state), torch.float32)
        if cand != first:
            out.append(cand)
    if dtype == torch.bfloat16:
        other = Candidate(tiling, torch.float32 if first.states == torch.bfloat16 else torch.bfloat16)
        if other not in out:
            out.append(other)
    return out


def name(cand: Candidate) -> str:
    t = cand.tiling
    states = "" if cand.states == torch.float32 else f"-states-{str(cand.states).removeprefix('torch.')}"
    return f"C{t.max_chunk}-B{t.max_block}-S{t.state_block}{states}"


def _step(method: str, *, B: int, H: int, N: int, D: int, dtype, device):
    """One forward and backward of ``method`` (linear or momentum attention, causal) from a stored ∂out."""
    gen = torch.Generator().manual_seed(N)
    q, k, v, g = (torch.randn(B, H, N, D, generator=gen).to(device, dtype) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_()
    beta = METHODS[method]

    def step():
        if beta:
            out = momentum_attention(q, k, v, beta=beta, causal=True)[0]
        else:
            out = linear_attention(q, k, v, causal=True)[0]
        out.backward(g)
        for t in (q, k, v):
            t.grad = None

    return step


def choose(medians: dict[str, dict[str, float]], shipped: str, eligible=None) -> dict:
    """``medians[candidate][method@length]`` seconds → each candidate's score (geometric mean of its medians over
    the shipped tiling's, the same keys) and the ``eligible`` candidate (default: every one) with the least (ties:
    the shipped one, then by name)."""
    if shipped not in medians:
        raise ValueError(f"shipped: {shipped!r} is not among the candidates timed ({', '.join(medians)})")
    eligible = set(medians) if eligible is None else set(eligible)
    if not eligible & set(medians):
        raise ValueError(f"eligible: none of {sorted(eligible)} was timed")
    base = medians[shipped]
    scores = {}
    for cand, times in medians.items():
        if set(times) != set(base):
            raise ValueError(f"medians: {cand} was timed at {sorted(times)}, the shipped tiling at {sorted(base)}")
        scores[cand] = math.exp(sum(math.log(times[key] / base[key]) for key in base) / len(base))
    best = min(eligible & set(scores), key=lambda c: (scores[c], c != shipped, c))
    return {"scores": scores, "choice": best, "speedup": 1 / scores[best]}


def tune(dtype: torch.dtype, lengths, device, *, B=4, H=8, D=64, repeats=20, only=None, progress=print) -> dict:
    """Times every candidate (or the first ``only`` of them) at every length and method; returns the per-candidate
    summaries, the scores and the choice (:func:`choose`)."""
    from lra_kit.bench.timing import pipelined_times, summary

    cands = candidates(dtype)[:only]
    timed, medians = {}, {}
    for candidate in cands:
        cand = name(candidate)
        timed[cand], medians[cand] = {}, {}
        with host.tiling(dtype, candidate.tiling), host.stored_states(candidate.states, dtype):
            for method, N in itertools.product(METHODS, lengths):
                step = _step(method, B=B, H=H, N=N, D=D, dtype=dtype, device=device)
                begin = time.perf_counter()
                times = pipelined_times(step, device, repeats=repeats, warmup=1)
                stats = summary(times)
                key = f"{method}@{N}"
                timed[cand][key] = {**{k: v * 1e3 if k.endswith("_s") else v for k, v in stats.items()},
                                    "first_call_and_timing_s": round(time.perf_counter() - begin, 2)}
                medians[cand][key] = stats["median_s"]
                if progress:
                    progress(f"{cand} {key}: {stats['median_s'] * 1e3:.3f} ms")
    first = name(cands[0])
    eligible = [name(c) for c in cands if c.states in ELIGIBLE_STATES]
    return {"candidates": {name(c): {**c.tiling._asdict(), "states": str(c.states).removeprefix("torch."),
                                     "eligible": name(c) in eligible} for c in cands},
            "ms": timed, "shipped": first, **choose(medians, first, eligible)}


def main(argv=None) -> int:
    from lra_kit.bench.device import gpu_slug
    from lra_kit.results import make_results, write_results

    parser = argparse.ArgumentParser(prog="python -m lra_kit.bench.tiles", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="bfloat16")
    parser.add_argument("--lengths", type=int, nargs="+", default=[16384, 65536])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=20, help="pipelined calls a median is taken over (≥ 1)")
    parser.add_argument("--only", type=int, default=None, help="time only the first N candidates (the shipped first)")
    parser.add_argument("--json", default=None, help=f"the record (default {JSON}, {{gpu}} the card's name; none on "
                                                     "a CPU unless given)")
    args = parser.parse_args(argv)
    for flag in ("batch", "heads", "dim", "repeats"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag} must be ≥ 1, got {getattr(args, flag)}")
    if min(args.lengths) < 1:
        parser.error(f"--lengths must be positive, got {args.lengths}")
    if args.only is not None and args.only < 1:
        parser.error(f"--only must be ≥ 1, got {args.only}")
    device = torch.device(args.device)
    if device.type == "cpu":
        os.environ["LRA_KIT_TRITON"] = "interpret"
    start = time.perf_counter()
    result = tune(DTYPES[args.dtype], args.lengths, device, B=args.batch, H=args.heads, D=args.dim,
                  repeats=args.repeats, only=args.only)
    print(f"choice {result['choice']} ({result['speedup']:.3f}× the shipped {result['shipped']})")
    out = args.json
    if out is None and device.type == "cuda":
        out = str(JSON).format(gpu=gpu_slug(torch.cuda.get_device_name(device)))
    if out:
        record = make_results(
            metrics={"choice": result["choice"], "shipped": result["shipped"], "speedup": result["speedup"],
                     "scores": result["scores"]},
            config={"dtype": args.dtype, "lengths": args.lengths, "batch": args.batch, "heads": args.heads,
                    "dim": args.dim, "repeats": args.repeats, "methods": METHODS,
                    "timing": "pipelined: back-to-back calls, L2 flushed before each, CUDA events; ms: median, "
                              "p20, p80, min, max",
                    "kernels": "compiled" if device.type == "cuda" else "Triton interpreter (times mean nothing)",
                    "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
                    "triton": importlib.metadata.version("triton")},
            scale="full", steps=0, seed=0, wall_s=time.perf_counter() - start, device=str(device),
            candidates=result["candidates"], ms=result["ms"])
        write_results(record, out)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
