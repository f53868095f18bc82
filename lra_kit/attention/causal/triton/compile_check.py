"""Compile-time guard of the Triton kernels: every variant the package launches, compiled for sm_90 (H100/H200)
without a GPU, with its shared memory and register spills read off the compiler.

    python -m lra_kit.attention.causal.triton.compile_check [--json PATH] [--list]

Triton ships its NVIDIA backend and ``ptxas`` in the wheel, so this runs on a CPU-only machine: the
kernels go through Triton's code generator and ``ptxas -v`` exactly as on first launch on a GPU.
A variant fails if it needs more shared memory than an sm_90 block may have (227 KiB), or if ``ptxas``
reports spill stores or loads (registers spilled to local memory: slow, and the sign of a tile too
large for its warps). ``tests/test_triton_compile_guard.py`` runs this in a fresh process (Triton's
interpreter flag must be off when Triton is first imported).

The variants are those :class:`lra_kit.attention.causal.triton.host._Launch` can produce: each input
type, each output type, both directions in time, β = 0 or not (``USE_D``), with or without an initial
state and a final one, and the tile sizes of every head and feature width (block sizes 16 … the type's
cap in ``TILING``; wider feature maps, e.g. Performer's 267 features, are walked in steps of that cap);
and the fused decode step's kernel at every head width's tile, linear and momentum (:func:`decode_variants`).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import os
import re
import sys
import time

# Shared memory an sm_90 thread block may use (opt-in maximum: 227 KiB; CUDA C Programming Guide, compute
# capability 9.0 table).
SM90_SHARED_BYTES = 227 * 1024
INPUT_TYPES = ("fp32", "bf16", "fp16")
TORCH_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def _blocks(cap: int) -> list[int]:
    return [b for b in (16, 32, 64) if b <= cap]


def variants() -> list[dict]:
    """Every (kernel, types, constexprs, warps) the host code launches (see the module docstring), at the type's
    largest chunk: the tiles of every head and feature width (block sizes 16 … the type's cap) with the flags of
    linear and momentum attention (φ, mask and normaliser in the kernels); the other flags (no φ, no normaliser:
    another feature map or the bare product; a starting or final state) at the largest tile, since they add loads
    and stores, not registers per tile."""
    import torch

    from lra_kit.attention.causal.triton.host import TILING, dkv_blocks, dot_types, output_warps, state_warps

    out = []
    for dtype in INPUT_TYPES:
        torch_dtype = getattr(torch, TORCH_NAMES[dtype])
        types, tiling = dot_types(torch_dtype), TILING[torch_dtype]
        dots = dict(IN_DOT=types.in_dot, PRECISION=types.precision, ROUND_ONLY=False)
        attention = dict(PHI=True, MASK=True, NORM=True)
        bare = dict(PHI=False, MASK=False, NORM=False)
        state_blocks = [b for b in _blocks(tiling.state_block)][::-1]
        for b, reverse, use_d in itertools.product(state_blocks, (False, True), (False, True)):
            largest = b == state_blocks[0]
            for flags, edges in ((attention, False), (attention, True), (bare, True)):
                if edges and not largest:
                    continue
                phi_dot = types.phi_dot if flags["PHI"] else types.in_dot
                out.append({"kernel": "states_kernel", "input": dtype, "output": "fp32",
                            "num_warps": state_warps(torch_dtype, use_d),
                            "constexprs": dict(C=tiling.max_chunk, BX=b, BY=b, REVERSE=reverse, HAS_INIT=edges,
                                               STORE_LAST=edges, USE_D=use_d, ACC_DOT=types.acc_dot, PHI_DOT=phi_dot,
                                               **dict(flags, MASK=flags["MASK"] and not reverse), **dots)})
        blocks = _blocks(tiling.max_block)
        for kernel, extra in (("forward_kernel", {"STORE_DEN": True}), ("dq_kernel", {"STORE_H": True}),
                              ("dk_kernel", {}), ("dv_kernel", {}), ("dkv_kernel", {})):
            for bd, bm, use_d in itertools.product(blocks, blocks, (False, True)):
                if kernel == "dkv_kernel" and dkv_blocks(bd, bm, torch_dtype) != (bd, bm):
                    continue  # launched with other tiles (host.dkv_blocks), listed under those
                largest = (bd, bm) == (blocks[-1], blocks[-1])
                for flags in (attention, bare) if largest else (attention,):
                    # the bare product's numerator may be float32 (``out_dtype``); ∇ of another φ is float32
                    # (∇q, ∇k: "output"); ∇v has v's type always (``_signature``), so dv_kernel has no float32 one
                    wider = flags is bare and kernel != "dv_kernel"
                    for out_type in tuple(dict.fromkeys((dtype, "fp32"))) if wider else (dtype,):
                        out.append({"kernel": kernel, "input": dtype, "output": out_type,
                                    "num_warps": output_warps(bd, bm, torch_dtype, kernel),
                                    "constexprs": dict(C=tiling.max_chunk, BD=bd, BM=bm, USE_D=use_d,
                                                       ACC_DOT=types.acc_dot, **flags, **extra, **dots,
                                                       PHI_DOT=types.phi_dot if flags["PHI"] else types.in_dot)})
    return out + decode_variants()


def decode_variants() -> list[dict]:
    """The fused decode step's kernel (:class:`lra_kit.attention.decode.FusedStep`, float32), linear and momentum,
    at the tile of every power-of-two head width from 8 up to the widest that runs fused (``MAX_WIDTH``, 256); a width
    between two powers takes the larger's tile."""
    from lra_kit.attention.causal.triton.decode_tile import MAX_WIDTH, fused_tile

    widths = [8 << i for i in range(MAX_WIDTH.bit_length() - 3)]
    out = []
    for D, momentum in itertools.product(widths, (False, True)):
        tile = fused_tile(D)
        out.append({"module": "decode_kernels", "kernel": "decode_step_kernel", "input": "fp32", "output": "fp32",
                    "num_warps": tile.warps, "constexprs": dict(BD=tile.rows, BV=tile.cols, MOMENTUM=momentum)})
    return out


INPUTS = {"x_ptr", "y_ptr", "q_ptr", "k_ptr", "v_ptr", "g_ptr", "o_ptr"}
OUTPUTS = {"out_ptr", "dq_ptr", "dk_ptr", "dv_ptr"}
STATES = {"s_ptr", "d_ptr", "z_ptr"}  # the per-chunk boundary states (a starting or final state is float32)


def _state_type(input_type: str) -> str:
    """The type the package stores the per-chunk states of ``input_type`` inputs in (``host.STATE_TYPES``)."""
    import torch

    from lra_kit.attention.causal.triton.host import STATE_TYPES

    stored = STATE_TYPES[getattr(torch, TORCH_NAMES[input_type])]
    return {name: short for short, name in TORCH_NAMES.items()}[str(stored).removeprefix("torch.")]


def _signature(kernel, variant: dict) -> dict:
    signature = {}
    for name in kernel.arg_names:
        if name in variant["constexprs"]:
            signature[name] = "constexpr"
        elif name == "dv_ptr":  # ∇v is allocated in v's type (host.backward), whatever type ∇k has
            signature[name] = f"*{variant['input']}"
        elif name in OUTPUTS:
            signature[name] = f"*{variant['output']}"
        elif name == "mask_ptr":
            signature[name] = "*u8"
        elif name in STATES:
            signature[name] = f"*{_state_type(variant['input'])}"
        elif name.endswith("_ptr"):
            signature[name] = f"*{variant['input']}" if name in INPUTS else "*fp32"
        else:
            signature[name] = "fp32" if name in ("beta", "gamma", "eps") else "i32"
    return signature


def why_not() -> str | None:
    """Why this machine cannot compile for sm_90 (None if it can)."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed (pip install -e .[test] on Linux x86-64, or .[gpu])"
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        return "TRITON_INTERPRET is set: kernels would be interpreted, not compiled"
    import triton
    from triton import knobs

    if "nvidia" not in triton.backends.backends:
        return "this Triton has no NVIDIA backend"
    try:
        path = knobs.nvidia.ptxas.path
    except Exception as error:  # noqa: BLE001 — any failure to find ptxas means: cannot check here
        return f"no ptxas: {error}"
    if not path or not os.path.exists(path):
        return "no ptxas in this Triton installation"
    return None


_PTXAS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGS = re.compile(r"Used (\d+) registers")


def compile_variant(kernels, variant: dict) -> dict:
    """Compile one variant for sm_90a; its shared memory, registers, stack and spills."""
    import triton
    import triton.language as tl
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kernel = getattr(kernels, variant["kernel"])
    constexprs = {k: (getattr(tl, {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}[v])
                      if k in ("IN_DOT", "PHI_DOT", "ACC_DOT") else v) for k, v in variant["constexprs"].items()}
    log = io.StringIO()
    start = time.perf_counter()
    with knobs.nvidia.scope(), knobs.compilation.scope(), contextlib.redirect_stdout(log):
        knobs.nvidia.dump_ptxas_log = True  # ptxas -v, which Triton always runs, printed instead of discarded
        knobs.compilation.always_compile = True  # a cached binary would come without ptxas's report
        compiled = triton.compile(ASTSource(kernel, _signature(kernel, variant), constexprs),
                                  target=GPUTarget("cuda", 90, 32), options={"num_warps": variant["num_warps"]})
    text = log.getvalue()
    ptxas = _PTXAS.findall(text)
    regs = _REGS.findall(text)
    stack, spill_stores, spill_loads = (max(int(m[i]) for m in ptxas) if ptxas else None for i in range(3))
    shared = int(compiled.metadata.shared)
    result = dict(variant, shared_bytes=shared, registers=max(map(int, regs)) if regs else None,
                  stack_bytes=stack, spill_store_bytes=spill_stores, spill_load_bytes=spill_loads,
                  compile_s=round(time.perf_counter() - start, 2))
    problems = []
    if shared > SM90_SHARED_BYTES:
        problems.append(f"shared memory {shared} B > {SM90_SHARED_BYTES} B")
    if spill_stores is None:
        problems.append("ptxas -v printed no spill report")
    elif spill_stores or spill_loads:
        problems.append(f"register spills: {spill_stores} B stored, {spill_loads} B loaded")
    result["problems"] = problems
    return result


def describe(variant: dict) -> str:
    c = variant["constexprs"]
    flags = ",".join(k for k in ("REVERSE", "USE_D", "HAS_INIT", "STORE_LAST", "PHI", "MASK", "NORM", "MOMENTUM")
                     if c.get(k))
    blocks = "×".join(str(c[k]) for k in ("BX", "BY", "BD", "BM", "BV") if k in c)
    return (f"{variant['kernel']} {variant['input']}->{variant['output']} blocks {blocks} "
            f"warps {variant['num_warps']} [{flags}]")


def _compile_one(variant: dict) -> dict:
    from lra_kit.attention.causal.triton.switch import _kernels

    return compile_variant(_kernels(False, variant.get("module", "kernels")), variant)


def run(selected: list[dict] | None = None, progress=None, jobs: int = 1) -> list[dict]:
    """Compile each variant (all by default) in ``jobs`` processes; the results with their ``problems`` (empty
    where all is well), in the order of the variants."""
    todo = selected if selected is not None else variants()
    if jobs <= 1:
        results = []
        for variant in todo:
            results.append(_compile_one(variant))
            if progress:
                progress(results[-1])
        return results
    import concurrent.futures
    import multiprocessing

    # spawn: a fresh interpreter per worker, with Triton imported there for the first time (compiled mode)
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = []
        for result in pool.map(_compile_one, todo):
            results.append(result)
            if progress:
                progress(result)
        return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lra_kit.attention.causal.triton.compile_check",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default=None, help="write every variant's numbers to this file")
    parser.add_argument("--list", action="store_true", help="list the variants and exit")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="compiling processes (default: all cores)")
    args = parser.parse_args(argv)
    if args.list:
        for variant in variants():
            print(describe(variant))
        return 0
    reason = why_not()
    if reason:
        print(f"compile check skipped: {reason}")
        return 77  # the automake convention for "skipped"
    start = time.perf_counter()

    def show(r):
        status = "; ".join(r["problems"]) or "ok"
        print(f"{describe(r):<75} smem {r['shared_bytes']:>6} regs {r['registers']} stack {r['stack_bytes']} "
              f"{status}", flush=True)

    results = run(progress=show, jobs=max(1, args.jobs))
    bad = [r for r in results if r["problems"]]
    took = time.perf_counter() - start
    print(f"{len(results)} variants compiled for sm_90 in {took:.0f} s; {len(bad)} with problems")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": "cuda sm_90", "shared_limit_bytes": SM90_SHARED_BYTES, "variants": results}, f,
                      indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
