"""The causal op's kernels in float16 and bfloat16 against the float64 oracle, over random padded cases.

    python -m lra_kit.bench.precision_sweep [--seeds 40] [--out results/bench/precision-sweep-cpu.json]
    python -m lra_kit.bench.precision_sweep --dtypes bfloat16 --states bfloat16   # the states' type, measured

Each seed is one case (:func:`sweep_case`): N 128–256, head width 8 or 16, row 0 padded at the start (0–100 keys,
often more than a chunk), row 1 at the end (0–50), linear (β = 0) or momentum (β = 0.6, γ = 0.9), and an upstream
gradient that is nonzero at padded positions too. For each input type the inputs are rounded to it; the float64
oracle (:func:`lra_kit.attention.causal.naive.naive_causal_op`) runs on the rounded inputs; the Triton kernels and
the chunked PyTorch path each in the type itself, as a user calls them (both sum in float32 and store the output
and the gradients in the type; the kernels under Triton's interpreter on a CPU, compiled on CUDA). The record
holds, for out, ∇q, ∇k, ∇v, the relative RMS error of each path against the oracle and the worst ratio of the
two. ``tests/test_triton_low_precision.py`` runs a few seeds of the same sweep (issue 50, item 4: bf16 ∇q within
2× of the PyTorch path's error over 40 seeds). ``--states T`` stores the kernels' per-chunk boundary states as T
instead of float32 (:func:`lra_kit.attention.causal.triton.host.stored_states`; issue 50, item 7: states in the
inputs' type where the oracle's error allows), into its own record by default.
"""
from __future__ import annotations

import argparse
import itertools
import os
import time

import torch

from lra_kit.attention import get_feature_map
from lra_kit.attention.causal import causal_op
from lra_kit.attention.causal.naive import naive_causal_op

PHI = get_feature_map("elu")
NAMES = ("out", "dq", "dk", "dv")
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
STATE_NAMES = {"float32": torch.float32, **DTYPES}
DEFAULT_OUT = os.path.join("results", "bench", "precision-sweep-cpu.json")
STATES_OUT = os.path.join("results", "bench", "precision-sweep-states-cpu.json")


def rel_rms(a: torch.Tensor, b: torch.Tensor) -> float:
    """‖a − b‖ / ‖b‖ in float64."""
    a, b = (t.detach().double().cpu() for t in (a, b))
    return ((a - b).norm() / b.norm()).item()


def padded_case(seed: int, N: int, D: int, M: int, lead: int, tail: int = 0, B: int = 1, H: int = 2):
    """Raw q, k, v, an upstream gradient g (nonzero everywhere, padded positions included) and a mask with
    ``lead`` padded keys at the start and ``tail`` at the end of row 0, in float64."""
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, H, N, D, generator=gen, dtype=torch.float64) for _ in range(2))
    v, g = (torch.randn(B, H, N, M, generator=gen, dtype=torch.float64) for _ in range(2))
    mask = torch.zeros(B, N, dtype=torch.bool)
    mask[0, :lead] = True
    if tail:
        mask[0, N - tail:] = True
    return q, k, v, g, mask


def sweep_case(seed: int, length: int | None = None):
    """Seed → (q, k, v, g, mask, β): N 128–256 (or ``length``), D 8 or 16, leading padding 0–100 on row 0, trailing
    0–50 on row 1; β = 0 for even seeds, 0.6 for odd."""
    gen = torch.Generator().manual_seed(1000 + seed)
    N = int(torch.randint(128, 257, (1,), generator=gen))
    N = length or N
    D = (8, 16)[int(torch.randint(0, 2, (1,), generator=gen))]
    lead, tail = int(torch.randint(0, 101, (1,), generator=gen)), int(torch.randint(0, 51, (1,), generator=gen))
    q, k, v, g, mask = padded_case(seed, N=N, D=D, M=D, lead=lead, B=2)
    if tail:
        mask[1, N - tail:] = True
    return q, k, v, g, mask, (0.0, 0.6)[seed % 2]


def run(q, k, v, g, mask, dtype, *, beta=0.0, gamma=1.0, triton, device="cpu", final_weight=0.0):
    """Output, final state and (∇q, ∇k, ∇v) of Σ out·g (+ final_weight·Σ d, the final decayed state) in ``dtype``;
    ``triton=None`` is the float64 oracle, False the chunked PyTorch path, True the kernels on ``device``."""
    leaves = [t.detach().to(device if triton else "cpu", dtype).requires_grad_() for t in (q, k, v)]
    if triton is None:
        out, final = naive_causal_op(*leaves, phi=PHI, beta=beta, gamma=gamma, key_padding_mask=mask)
    else:
        out, final = causal_op(*leaves, phi=PHI, beta=beta, gamma=gamma, eps=1e-6, chunk_size=64,
                               key_padding_mask=mask.to(leaves[0].device), output_final_state=True, keep_d=True,
                               triton=triton)
    loss = (out * g.to(out)).sum() + final_weight * final.d.sum()
    return out, final, torch.autograd.grad(loss, leaves)


def rounded(dtype, *ts):
    """The inputs as ``dtype`` rounds them, back in float64: what every path sees."""
    return [t.to(dtype).double() for t in ts]


def sweep_errors(seed: int, dtype: torch.dtype, device: str = "cpu", states: torch.dtype = torch.float32,
                 length: int | None = None) -> dict:
    """{name: (kernels' error, PyTorch path's error)} against the float64 oracle for one sweep case, the kernels'
    boundary states stored as ``states``; raises ``FloatingPointError`` where a kernel's gradient is not finite."""
    from lra_kit.attention.causal.triton.host import stored_states

    q, k, v, g, mask, beta = sweep_case(seed, length)
    q, k, v = rounded(dtype, q, k, v)
    gamma = 0.9 if beta else 1.0
    w_out, _, want = run(q, k, v, g, mask, torch.float64, beta=beta, gamma=gamma, triton=None)
    r_out, _, ref = run(q, k, v, g, mask, dtype, beta=beta, gamma=gamma, triton=False)
    with stored_states(states, dtype):
        k_out, _, got = run(q, k, v, g, mask, dtype, beta=beta, gamma=gamma, triton=True, device=device)
    errors = {"out": (rel_rms(k_out, w_out), rel_rms(r_out, w_out))}
    for name, a, r, w in zip(NAMES[1:], got, ref, want, strict=True):
        if not torch.isfinite(a).all():
            raise FloatingPointError(f"seed {seed}, {dtype}: {name} has non-finite entries")
        errors[name] = (rel_rms(a, w), rel_rms(r, w))
    return errors


def sweep(seeds: int, device: str = "cpu", progress=None, dtypes=tuple(DTYPES), states=("float32",),
          length: int | None = None) -> dict:
    """Every seed in each of ``dtypes`` (names of :data:`DTYPES`) and each type of the kernels' stored states
    (:data:`STATE_NAMES`): per type and quantity the kernels' and the PyTorch path's errors, seed by seed, and the
    worst ratio of the two. Keyed by the input type's name, with ", states T" where the states are not float32."""
    out = {}
    for name, kept in itertools.product(dtypes, states):
        dtype, rows = DTYPES[name], []
        key = name if kept == "float32" else f"{name}, states {kept}"
        for seed in range(seeds):
            errors = sweep_errors(seed, dtype, device, STATE_NAMES[kept], length)
            rows.append({"seed": seed, **{k: list(v) for k, v in errors.items()}})
            if progress:
                progress(key, rows[-1])
        out[key] = {"cases": rows, "worst_ratio": {
            k: max(r[k][0] / r[k][1] for r in rows) for k in NAMES}, "worst_error": {
            k: max(r[k][0] for r in rows) for k in NAMES}}
    return out


def main(argv=None) -> int:
    from lra_kit.results import make_results, write_results

    parser = argparse.ArgumentParser(prog="python -m lra_kit.bench.precision_sweep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=40, help="cases per input type (default 40)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="where the kernels run: cuda (compiled) or cpu (Triton's interpreter)")
    parser.add_argument("--dtypes", nargs="+", choices=tuple(DTYPES), default=list(DTYPES),
                        help="input types to sweep (default both)")
    parser.add_argument("--states", nargs="+", choices=tuple(STATE_NAMES), default=["float32"],
                        help="the types the kernels store their per-chunk states in, each swept (default float32, "
                             "as they run)")
    parser.add_argument("--length", type=int, default=None,
                        help="every case's length N instead of a random one of 128-256 (a long N: many chunks, "
                             "the states' share of each output grows)")
    parser.add_argument("--out", help=f"the record (default {DEFAULT_OUT}; with --states other than float32, "
                                      f"{STATES_OUT})")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error(f"--seeds must be ≥ 1, got {args.seeds}")
    if args.device == "cpu":
        os.environ["LRA_KIT_TRITON"] = "interpret"
    start = time.perf_counter()
    def show(name, row):
        print(name, row["seed"], {k: round(row[k][0] / row[k][1], 2) for k in NAMES}, flush=True)

    if args.length is not None and args.length < 1:
        parser.error(f"--length must be ≥ 1, got {args.length}")
    out = args.out or (DEFAULT_OUT if args.states == ["float32"] else STATES_OUT)
    result = sweep(args.seeds, args.device, progress=show, dtypes=args.dtypes, states=args.states,
                   length=args.length)
    record = make_results(metrics={n: {"worst_ratio": r["worst_ratio"], "worst_error": r["worst_error"]}
                                   for n, r in result.items()},
                          config={"seeds": args.seeds, "case": sweep_case.__doc__, "chunk_size": 64, "eps": 1e-6,
                                  "states": args.states, "length": args.length or "128-256",
                                  "kernels": "compiled" if args.device.startswith("cuda") else "Triton interpreter",
                                  "ratio": "kernels' relative RMS error ÷ the chunked PyTorch path's, both called "
                                           "with the input type, both against the float64 oracle"},
                          scale="full", steps=0, seed=0, wall_s=time.perf_counter() - start, device=args.device,
                          cases={n: r["cases"] for n, r in result.items()})
    write_results(record, out)
    print(f"wrote {out}: worst ratios " + "; ".join(
        f"{n} " + ", ".join(f"{k} {v:.2f}" for k, v in r["worst_ratio"].items()) for n, r in result.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
