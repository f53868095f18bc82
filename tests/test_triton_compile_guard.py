"""Compile-time guard: every Triton kernel variant the package launches, compiled for sm_90 (H100/H200) without a
GPU, fits an sm_90 block's shared memory and spills no registers (lra_kit.attention.causal.triton.compile_check).

Runs in a fresh process: Triton must be imported there with its interpreter flag off. Skipped, with the reason,
where Triton or its NVIDIA backend and ptxas are missing (e.g. not Linux x86-64); compiling takes a few minutes
on two cores."""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("triton")

KERNELS = ("states_kernel", "forward_kernel", "dq_kernel", "dk_kernel", "dv_kernel", "dkv_kernel")  # the causal op's
DECODE = "decode_step_kernel"  # the fused decode step's (lra_kit.attention.decode.FusedStep)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_every_launched_variant_compiles_for_sm90_without_spills(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "LRA_KIT_TRITON")}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"  # Triton 3.9's default, named to silence its warning
    path = tmp_path / "variants.json"
    done = subprocess.run([sys.executable, "-m", "lra_kit.attention.causal.triton.compile_check", "--json", str(path)],
                          capture_output=True, text=True, env=env, timeout=1400)
    if done.returncode == 77:
        pytest.skip(done.stdout.strip())
    bad = [line for line in done.stdout.splitlines() if line and not line.endswith(" ok") and "variants" not in line]
    assert done.returncode == 0, "\n".join(bad[:20]) + done.stderr[-2000:]
    variants = json.loads(path.read_text())["variants"]
    kernels = {v["kernel"] for v in variants}
    assert kernels == {*KERNELS, DECODE}
    assert {v["input"] for v in variants} == {"fp32", "bf16", "fp16"}
    assert all(v["spill_store_bytes"] == 0 and v["shared_bytes"] <= 227 * 1024 for v in variants)


def test_the_variant_list_covers_every_flag():
    from lra_kit.attention.causal.triton.compile_check import variants

    listed = [v for v in variants() if v["kernel"] != DECODE]
    seen = {(v["kernel"], v["input"], v["constexprs"].get("REVERSE", False), v["constexprs"]["USE_D"],
             v["constexprs"]["NORM"]) for v in listed}
    for kernel in KERNELS:
        for dtype in ("fp32", "bf16", "fp16"):
            for reverse in (False, True) if kernel == "states_kernel" else (False,):
                for use_d in (False, True):
                    for norm in (False, True):
                        assert (kernel, dtype, reverse, use_d, norm) in seen, (kernel, dtype, reverse, use_d, norm)
    assert {v["kernel"] for v in listed} == set(KERNELS)


def test_the_variant_list_covers_every_decode_tile():
    """Every head width that runs fused (up to MAX_WIDTH) runs one of the compiled tiles, linear and momentum."""
    from lra_kit.attention.causal.triton.compile_check import variants
    from lra_kit.attention.causal.triton.decode_tile import MAX_WIDTH, fused_tile

    compiled = {(v["constexprs"]["BD"], v["constexprs"]["BV"], v["num_warps"], v["constexprs"]["MOMENTUM"])
                for v in variants() if v["kernel"] == DECODE}
    for D in range(1, MAX_WIDTH + 1):
        tile = fused_tile(D)
        assert tile.cols * tile.blocks >= D and tile.rows >= D and tile.rows * tile.cols <= 4096
        assert {(*tile[:2], tile.warps, False), (*tile[:2], tile.warps, True)} <= compiled, D


def test_the_states_are_compiled_in_the_type_the_package_stores_them_in():
    """The per-chunk states' pointers take ``host.STATE_TYPES``' type, so that a change of it (the autotune's choice)
    is what the guard compiles; a starting or final state stays float32."""
    import torch

    from lra_kit.attention.causal.triton import host
    from lra_kit.attention.causal.triton.compile_check import _signature, variants
    from lra_kit.attention.causal.triton.switch import _kernels

    kernels = _kernels(False, "kernels")
    states = next(v for v in variants() if v["kernel"] == "states_kernel" and v["input"] == "bf16")
    kernel = kernels.states_kernel
    assert _signature(kernel, states)["s_ptr"] == "*fp32"
    with host.stored_states(torch.bfloat16, torch.bfloat16):
        signature = _signature(kernel, states)
        assert signature["s_ptr"] == signature["d_ptr"] == signature["z_ptr"] == "*bf16"
        assert signature["s_init_ptr"] == signature["s_last_ptr"] == "*fp32"
