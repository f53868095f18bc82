"""The GPU campaign: everything the CPU cannot show, in commands of at most 8 minutes that together fit in
45 minutes of one H100 or H200, three 15-minute leases (issue 20; docs/gpu.md). Each command writes its JSON to the
folder named.

    python -m lra_kit.bench.gpu_check --out DIR [--only c1 a1 ...] [--dry-run] [--time-limit 480]
    make gpu-check OUT=DIR   # --time-limit 480 unless TIME_LIMIT=... says otherwise

Steps (each a subprocess with a hard timeout; ``DIR/<step>.json`` records its command, exit status, wall
time and the tail of its output, beside whatever JSON the command itself writes):

c1     ``lra-kit bench attention --device cuda``: what a GPU user compares, in one process (SDPA on FlashAttention
       and on cuDNN, flash-linear-attention's ``chunk_linear_attn``, our linear and momentum attention as users
       call them), 1K–64K, with the HBM bound of each row and the targets' ratios, into
       results/bench/attention-<gpu>.json (rewritten after each length, so a step stopped at its limit keeps
       what it did)
t      ``python -m lra_kit.bench.tiles --device cuda``: the short autotune of the causal kernels' chunk and tile
       sizes (bf16, linear and momentum, 16K and 64K, pipelined), into results/bench/tiles-<gpu>.json; the shipped
       tiling must then be its choice (tests/test_bench_tiles.py)
a1, a2 the CUDA tests (tests/test_attention_gpu.py, the Triton tests) with inputs in float32, bfloat16
b      ``compute-sanitizer --tool memcheck`` on a small odd-sized causal product with initial and final states
d1–d3  200 copy-task steps with AMP (bf16) and torch.compile: linear, momentum, Luna
c2     the papers' methods on the GPU (SDPA on flash, the chunked PyTorch path of linear and momentum, Performer,
       Luna, and the papers' baselines lsh-1/4/8 and Linformer) at 1K–16K, into DIR
g      ``lra-kit bench generation --device cuda`` for MNIST and CIFAR-10, the LSH-1 and LSH-4 baselines included:
       images/s at batch 1 and at the largest batch that fits, the steps timed apart from the prompt pass and the
       CUDA-graph capture, medians of 3 rounds, every method eager (ratios eager ÷ eager) and the lean step also
       replayed as CUDA graphs (graph ÷ graph) and through the modules' step, operators per pixel; written to
       results/bench/generation-<gpu>.json (rewritten after each task)
g2     ``lra-kit bench decode-profile --device cuda``: the lean step under ``torch.profiler`` at MNIST batch 1 and
       1024 (kernels, device time per operator) and replayed as a CUDA graph, into
       results/bench/decode-profile-<gpu>.json: where the time of a generated pixel goes, and the fused RNN step
       against the ATen one
a3     the CUDA tests with inputs in float16
l1, l2 paper-scale ListOps (5,000 steps at batch 32), linear then softmax, recorded under results/lra-paper/; a step
       stopped at its limit resumes from its checkpoint when run again
e      the paper-scale copy task (Katharopoulos §4.1) with linear attention, as many steps as 8 minutes allow,
       recorded under results/copy-paper/

The steps run in that order: the benchmark first (it is what a lease is asked for, and its first length pays
for compiling and autotuning every kernel), then correctness, then a compiled training step, then the rest, so
that a lease cut short keeps what matters most. A lease of 15 minutes, the machine's start included, fits about
8 minutes of steps: ``--time-limit 480``, which c1 fits.

``--dry-run`` prints the commands and the time budget without running anything (tested on CPU). ``--only`` runs
the steps named, in the order named; ``--time-limit S`` fits the run into S seconds (each step's timeout is cut to
what is left, and a step with under 30 s left is skipped and recorded as such), for a lease shorter than the campaign;
``--lengths`` replaces the benchmarks' lengths (c1's; c2 takes those up to 16K).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

STEP_LIMIT_S = 8 * 60
TOTAL_LIMIT_S = 45 * 60  # three leases of 15 minutes, each machine's start (about 30 s) left out as margin
LEASE_LIMIT_S = 480  # what one 15-minute lease has for steps (``--time-limit 480``): the first step must fit it
C2_MAX_LENGTH = 16384
BENCH_JSON = Path("results") / "bench" / "attention-{gpu}.json"  # {gpu}: filled in by the benchmark itself


@dataclass(frozen=True)
class Step:
    name: str
    what: str
    argv: tuple[str, ...]
    budget_s: int  # expected wall time on one H100/H200, with margin
    env: tuple[tuple[str, str], ...] = ()


# c2: the papers' methods, on the GPU: the CPU table's rows (lra_kit.bench.attention.METHODS: the PyTorch path of
# ours, pinned there, Performer, Luna, and the papers' baselines lsh-1/4/8 and Linformer, Katharopoulos et al. Fig. 1)
PAPERS = ("sdpa_causal", "linear_causal", "momentum_causal", "performer_causal", "sdpa", "luna",
          "lsh1_causal", "lsh4_causal", "lsh8_causal", "linformer")


def steps(out: Path, python: str = sys.executable, lengths: tuple[int, ...] | None = None,
          bench_json: Path = BENCH_JSON) -> list[Step]:
    """The campaign's commands, writing into ``out`` (c1 into ``bench_json``), in the order they run: the
    benchmark of what a GPU user compares first, then what only a GPU can show (correctness, then a training step
    compiled, then the rest), so that a lease cut short keeps the most. ``lengths``: the benchmarks' (c1's, the
    benchmark's default 1K–64K when None; c2 takes those up to 16K). Budgets: the longest wall time of the step's
    finished runs on the H200 (results/gpu-check/h200/, session 27, and h200-2026-11-28/) times 1.3 or more (the
    timeout adds 1.25 more); e, which has not run, is estimated."""
    out = Path(out)
    py = (python,)
    # the fused decode step's CUDA tests only: its interpreter tests would spend the lease on the CPU
    fused = "tests/test_attention_decode_fused.py::test_cuda_"
    tests = ("tests/test_attention_gpu.py", "tests/test_triton_causal_product.py", "tests/test_triton_dispatch.py",
             f"{fused}fused_step_is_the_aten_step", f"{fused}graph_generation_gives_the_modules_tokens")
    at = ("--lengths", *map(str, lengths)) if lengths else ()
    small = tuple(n for n in (lengths or (1024, 2048, 4096, 8192, 16384)) if n <= C2_MAX_LENGTH)

    def cuda_tests(i, dtype, budget):
        return Step(f"a{i}", f"CUDA tests, inputs in {dtype}",
                    (*py, "-m", "pytest", "-q", "-m", "gpu or not gpu", *tests,
                     f"--junitxml={out / f'a{i}-tests-{dtype}.xml'}"),
                    budget, (("LRA_KIT_GPU_TEST_DTYPE", dtype),))

    def training(i, attention, budget):
        return Step(f"d{i}", f"copy task, 200 steps, AMP + torch.compile, {attention}",
                    (*py, "-m", "lra_kit.cli", "train", "--task", "copy", "--attention", attention,
                     "--scale", "cpu", "--device", "cuda", "--no-progress",
                     "--set", "train.steps=200", "--set", "train.amp=true", "--set", "train.compile=true",
                     "--out", str(out / f"d-copy-{attention}"), "--record", "gpu-check",
                     "--record-dir", str(out)), budget)

    def paper_listops(i, attention, budget):
        return Step(f"l{i}", f"paper-scale ListOps, {attention}, 5,000 steps at batch 32 (resumes from its checkpoint)",
                    (*py, "-m", "lra_kit.cli", "train", "--task", "listops", "--attention", attention,
                     "--scale", "paper", "--device", "cuda", "--no-progress",
                     "--out", str(out / f"l-listops-{attention}"), "--record", "lra-paper"), budget)

    # Wall seconds on the H200: 2026-11-28 (session 27 in parentheses where the step ran then too).
    return [
        # 210 s, 133 of them fla's first call (its autotuning: 48 configurations for chunk_fwd_kernel_h alone, once
        # for all lengths, as its autotuning keys hold no length); our linear kernels' first call 7.8 s
        Step("c1", "attention benchmark: SDPA flash and cuDNN, fla's chunk_linear_attn, our linear and momentum",
             (*py, "-m", "lra_kit.bench.attention", "--device", "cuda", *at, "--no-prefill",
              "--json", str(bench_json)), 280),
        # estimated, not run yet: 8 candidate tilings, each compiling the six kernels for β = 0 and β > 0 (c1's
        # first call of linear compiled in 7.8 s) and timing 4 rows of 21 pipelined calls (≤ 25 ms each at 64K)
        Step("t", "autotune of the causal kernels' chunk and tile sizes, bf16, 16K and 64K",
             (*py, "-m", "lra_kit.bench.tiles", "--device", "cuda"), 200),
        # + 15 s each for the fused decode step's CUDA tests (its kernel compiled, 4 short generations as graphs)
        cuda_tests(1, "float32", 90),  # 30 s (55 s)
        cuda_tests(2, "bfloat16", 100),  # 66 s (31 s)
        Step("b", "compute-sanitizer memcheck, odd sizes, initial and final states",
             ("compute-sanitizer", "--tool", "memcheck", "--error-exitcode", "1",
              *py, "-m", "lra_kit.bench.gpu_check", "--sanitizer-case"), 40),  # 26 s (20 s)
        training(1, "linear", 95),  # 74 s (67 s)
        training(2, "momentum", 45),  # 33 s (34 s)
        training(3, "luna", 75),  # 58 s
        # 82 s (before lsh-1/4/8 and Linformer were added; +40 s for them estimated, not run yet)
        Step("c2", "the papers' methods on the GPU: SDPA flash, PyTorch path, Performer, Luna, lsh-1/4/8, "
             "Linformer, up to 16K",
             (*py, "-m", "lra_kit.bench.attention", "--device", "cuda", "--lengths", *map(str, small),
              "--sdpa-backend", "flash", "--methods", *PAPERS, "--json", str(out / "attention-c2-flash.json")), 150),
        # 115 s on the H200 (2026-11-28): 4 methods, one 3-s round a row, the lean ones also through the modules'
        # step, the largest batch searched up to 1024. Now, estimated (not run yet): 6 methods (lsh-1, lsh-4 added)
        # × 2 tasks × 2 batch settings, 3 rounds of 0.5 s a way (uncached: one way; lean: eager, graph, modules),
        # about 100 s, with the search up to 8192 (three more tries a method) and the LSH models' builds: 220
        Step("g", "generation benchmark, MNIST and CIFAR-10 with LSH-1/4, batch 1 and the largest that fits",
             (*py, "-m", "lra_kit.bench.generation", "--device", "cuda", "--tasks", "mnist", "cifar10",
              "--batches", "1", "--largest-batch", "--budget-s", "0.5", "--repeats", "3", "--reference"), 220),
        # estimated, not run yet: 10 rows (linear and momentum fused and on the ATen step, the cache; batch 1 and
        # 1024) of 19 eager steps under the profiler and a graph captured and replayed 16 times, each after building
        # the model and, for the first fused row, compiling the Triton kernel
        Step("g2", "the lean generation step profiled: kernels, device time, graph replay, MNIST batch 1 and 1024",
             (*py, "-m", "lra_kit.bench.generation_profile", "--device", "cuda", "--tasks", "mnist",
              "--batches", "1", "1024"), 90),
        cuda_tests(3, "float16", 60),  # 33 s
        # estimated, not run yet: the paper-scale ListOps runs (issue 50, item 8), 5,000 steps at batch 32 with an
        # evaluation every 50 (the Nystromformer config the Momentum paper ran), the 100,000 expressions generated
        # at first use (0.8 s a 500 on one core here: about 15 s on the device's 16). A step stopped at its limit
        # leaves its checkpoint in DIR; running the step again resumes it (carry DIR to a later lease).
        paper_listops(1, "linear", 300),
        paper_listops(2, "softmax", 300),
        # estimated: not run yet
        Step("e", "paper-scale copy task, linear attention, as many steps as fit",
             (*py, "-m", "lra_kit.cli", "train", "--task", "copy", "--attention", "linear",
              "--scale", "paper", "--device", "cuda", "--no-progress", "--set", "train.steps=1500",
              "--out", str(out / "e-copy-paper-linear"), "--record", "copy-paper"), 330),
    ]


def check_budget(plan: list[Step]) -> None:
    """Every step within 8 minutes, all within 45, and the first, with its margin (1.25 × its budget), within one
    lease's ``--time-limit 480`` (ValueError naming the step otherwise)."""
    for step in plan:
        if step.budget_s > STEP_LIMIT_S:
            raise ValueError(f"step {step.name} has a budget of {step.budget_s} s > {STEP_LIMIT_S} s")
    total = sum(s.budget_s for s in plan)
    if total > TOTAL_LIMIT_S:
        raise ValueError(f"the steps' budgets add up to {total} s > {TOTAL_LIMIT_S} s")
    # its budget with the margin every step's timeout gives it (timeout_s), which one lease must hold uncut
    if plan and int(1.25 * plan[0].budget_s) > LEASE_LIMIT_S:
        raise ValueError(f"the first step, {plan[0].name}, may need {int(1.25 * plan[0].budget_s)} s, more than "
                         f"one lease's {LEASE_LIMIT_S} s")


def sanitizer_case() -> None:
    """A small, odd-sized causal product (N = 77, dim 24, dim_v 40, heads 3, chunk 32) with an initial state and
    the final state, forward and backward, in bf16 and float32, β = 0 and 0.9 — every kernel variant's edges."""
    import torch

    from lra_kit.attention.causal import triton_causal_product

    gen = torch.Generator().manual_seed(0)
    for dtype in (torch.bfloat16, torch.float32):
        for beta in (0.0, 0.9):
            q, k = (torch.rand(2, 3, 77, 24, generator=gen).cuda().to(dtype).requires_grad_() for _ in range(2))
            v = torch.randn(2, 3, 77, 40, generator=gen).cuda().to(dtype).requires_grad_()
            s0, d0 = (torch.rand(2, 3, 24, 40, generator=gen).cuda().requires_grad_() for _ in range(2))
            out, (s, d) = triton_causal_product(q, k, v, beta, (s0, d0), True, chunk_size=32)
            (out.float().sum() + s.sum() + d.sum()).backward()
            torch.cuda.synchronize()
    print("sanitizer case done")


MIN_STEP_S = 30


def timeout_s(step: Step, left_s: float | None = None) -> int:
    """A step is stopped at 1.25 × its budget, never later than 8 minutes nor after the ``left_s`` the run has."""
    limit = min(STEP_LIMIT_S, int(1.25 * step.budget_s))
    return limit if left_s is None else min(limit, int(left_s))


def order(plan: list[Step], only: list[str] | None) -> list[Step]:
    """The steps named in ``only``, in the order named (every step, in the campaign's order, when None)."""
    if only is None:
        return plan
    by_name = {s.name: s for s in plan}
    unknown = [name for name in only if name not in by_name]
    if unknown:
        raise ValueError(f"--only: unknown steps {unknown}; valid: {', '.join(by_name)}")
    return [by_name[name] for name in dict.fromkeys(only)]


def run_step(step: Step, out: Path, left_s: float | None = None) -> dict:
    env = dict(os.environ, **dict(step.env))
    limit = timeout_s(step, left_s)
    # the output goes to a file, not a pipe, so that a step stopped at its limit still shows how far it got
    log = out / f"{step.name}.log"
    start = time.perf_counter()
    try:
        with log.open("w") as sink:
            done = subprocess.run(step.argv, stdout=sink, stderr=subprocess.STDOUT, text=True, env=env, timeout=limit)
        rc, text = done.returncode, log.read_text(errors="replace")
    except subprocess.TimeoutExpired:
        rc, text = 124, log.read_text(errors="replace") + f"\ntimed out after {limit} s"
    except FileNotFoundError as e:
        rc, text = 127, str(e)
    from lra_kit.results import git_commit

    record = {"step": step.name, "what": step.what, "command": shlex.join(step.argv), "env": dict(step.env),
              "rc": rc, "wall_s": round(time.perf_counter() - start, 1), "output_tail": text[-6000:],
              # the keys every record under results/ carries
              "scale": "gpu-check", "device": "cuda", "git_commit": git_commit(),
              "config": {"budget_s": step.budget_s, "timeout_s": limit}}
    (out / f"{step.name}.json").write_text(json.dumps(record, indent=1))
    return record


def summary(folder: Path) -> list[dict]:
    """One row per step recorded in ``folder`` (a campaign's DIR): step, what, exit status, wall seconds, and for
    the test steps the counts their JUnit XML gives (passed, failed, skipped) and the test files that failed
    (``failed_in``) and skipped (``skipped_in``). Steps that did not run (``--time-limit``) are left out."""
    import xml.etree.ElementTree as ET

    folder = Path(folder)
    rows = []
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text())
        if not {"step", "rc"} <= set(record):  # the training records beside the steps
            continue
        if "skipped" in record:
            continue
        row = {"step": record["step"], "what": record["what"], "rc": record["rc"], "wall_s": record["wall_s"]}
        for xml in folder.glob(f"{record['step']}-tests-*.xml"):
            counts, where = {"passed": 0, "failed": 0, "skipped": 0}, {"failed": set(), "skipped": set()}
            for case in ET.parse(xml).iter("testcase"):
                tags = {child.tag for child in case}
                outcome = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
                counts[outcome] += 1
                if outcome in where:
                    where[outcome].add(case.get("classname", "").rsplit(".", 1)[-1])
            row.update(counts, failed_in=sorted(where["failed"]), skipped_in=sorted(where["skipped"]))
        rows.append(row)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lra_kit.bench.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="folder for every step's JSON (created)")
    parser.add_argument("--only", nargs="+", default=None, help="run only these steps (e.g. a2 c1)")
    parser.add_argument("--dry-run", action="store_true", help="print the commands and their budgets; run nothing")
    parser.add_argument("--time-limit", type=float, default=None,
                        help="seconds for the whole run: steps are cut to what is left, skipped under 30 s")
    parser.add_argument("--lengths", type=int, nargs="+", default=None,
                        help="the benchmarks' lengths (c1; c2 takes those up to 16K)")
    parser.add_argument("--sanitizer-case", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sanitizer_case:
        sanitizer_case()
        return 0
    if args.out is None:
        parser.error("--out DIR is required")
    if args.time_limit is not None and args.time_limit <= 0:
        parser.error(f"--time-limit must be a positive number of seconds, got {args.time_limit}")
    if args.lengths is not None and min(args.lengths) < 1:
        parser.error(f"--lengths must be positive, got {args.lengths}")
    plan = steps(args.out, lengths=tuple(args.lengths) if args.lengths else None)
    check_budget(plan)
    try:
        plan = order(plan, args.only)
    except ValueError as e:
        parser.error(str(e))
    if args.dry_run:
        for step in plan:
            env = " ".join(f"{k}={v}" for k, v in step.env)
            print(f"[{step.name}] ≤{step.budget_s:>3} s  {step.what}\n    {(env + ' ') if env else ''}"
                  f"{shlex.join(step.argv)}")
        print(f"total budget {sum(s.budget_s for s in plan)} s (limit {TOTAL_LIMIT_S} s)")
        return 0
    import torch

    if not torch.cuda.is_available():
        print("gpu-check needs a CUDA device (use --dry-run to see the commands)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    failed, skipped = [], []
    start = time.perf_counter()
    for step in plan:
        left = None if args.time_limit is None else args.time_limit - (time.perf_counter() - start)
        if left is not None and left < MIN_STEP_S:
            skipped.append(step.name)
            (args.out / f"{step.name}.json").write_text(json.dumps(
                {"step": step.name, "what": step.what, "skipped": f"{left:.0f} s left of --time-limit"}, indent=1))
            print(f"[{step.name}] skipped: {left:.0f} s left", flush=True)
            continue
        record = run_step(step, args.out, left)
        print(f"[{step.name}] rc {record['rc']} in {record['wall_s']} s: {step.what}", flush=True)
        if record["rc"] != 0:
            failed.append(step.name)
    print(f"wrote {args.out}; failed: {', '.join(failed) or 'none'}; skipped: {', '.join(skipped) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
