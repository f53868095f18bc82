"""The lean step's profile (lra_kit.bench.generation_profile), on the CPU: the record a GPU campaign writes."""
from __future__ import annotations

import json

import pytest

from lra_kit.bench.generation import LEAN, TINY
from lra_kit.bench.generation_profile import TOP, main, profile_step


def test_a_row_names_the_operators_that_take_the_most():
    row = profile_step("mnist", LEAN[-1], 2, steps=3, overrides=TINY)
    assert {"task", "method", "batch", "steps", "top", "cpu_us_per_step"} <= set(row)
    top = row["top"]
    assert 0 < len(top) <= TOP and all(t["calls_per_step"] > 0 for t in top)
    cost = [t["us_per_step"] for t in top]
    assert cost == sorted(cost, reverse=True)
    assert row["calls_per_step"]["addmm"] >= 3  # the projections (q/k/v, output, FFN), whatever their times
    assert {t["op"] for t in top} <= set(row["calls_per_step"])
    assert sum(cost) <= row["cpu_us_per_step"] + 1e-6


@pytest.mark.parametrize("kwargs,match", [({"method": "softmax"}, "lean step"), ({"batch": 0}, ">= 1")])
def test_bad_arguments(kwargs, match):
    args = {"task": "mnist", "method": LEAN[0], "batch": 1, **kwargs}
    with pytest.raises(ValueError, match=match):
        profile_step(args.pop("task"), args.pop("method"), args.pop("batch"), **args)


def test_cli_writes_a_record(tmp_path):
    path = tmp_path / "profile.json"
    assert main(["--device", "cpu", "--tiny", "--methods", *LEAN[:1], "--batches", "1", "2", "--steps", "2",
                 "--json", str(path)]) == 0
    record = json.loads(path.read_text())
    assert record["device"] == "cpu" and record["experiment"] == "bench/decode-profile"
    assert [(r["method"], r["batch"]) for r in record["metrics"]["rows"]] == [(LEAN[0], 1), (LEAN[0], 2)]


def test_a_fused_row_comes_with_its_aten_row(tmp_path):
    """Where the RNN runs fused (here under Triton's interpreter, as on CUDA compiled), the record holds the same
    row on the ATen step beside it; the fused step's Triton kernel is not an aten operator."""
    pytest.importorskip("triton")
    from lra_kit.attention.causal.triton.switch import interpreted, interpreter_problem

    if (problem := interpreter_problem()) is not None:
        pytest.skip(problem)
    path = tmp_path / "profile.json"
    with interpreted():
        assert main(["--device", "cpu", "--tiny", "--methods", "linear", "--batches", "1", "--steps", "2",
                     "--json", str(path)]) == 0
    rows = json.loads(path.read_text())["metrics"]["rows"]
    assert [r["step"] for r in rows] == ["fused", "aten"]
    # the ATen step's readout and update; inside the kernel when fused (every operator's calls: the costliest
    # few, in "top", depend on the timing)
    calls = [r["calls_per_step"] for r in rows]
    assert calls[1]["baddbmm_"] == 1 and "baddbmm_" not in calls[0]
    assert calls[1]["bmm"] - calls[0]["bmm"] == 1  # both keep the mixture head's bmm; the tiny model has one layer


def test_the_compile_comparison_times_both_and_compares_their_tokens():
    """The RNN step eagerly and under torch.compile (the device-addressed step): both timed in alternating rounds,
    the same tokens for the same seed, again for a second decoder in the same process (which inductor failed to
    recompile before each comparison started afresh); a cache, whose span changes with the position, is refused."""
    from lra_kit.bench.generation import GROWING, build_generator
    from lra_kit.bench.generation_profile import COMPILE_ROUNDS, RNNS, compile_comparison

    assert RNNS and not any(GROWING[m] for m in RNNS)
    model = build_generator("mnist", RNNS[0], overrides=TINY)
    c = compile_comparison(model, 2, 3, "cpu")
    assert c["same_tokens"] is True and len(c["rounds_ms"]) == COMPILE_ROUNDS
    assert c["compiled_over_eager"] == pytest.approx(c["compiled_ms_per_step"] / c["eager_ms_per_step"])
    assert c["eager_ms_per_step"] in sorted(r["eager"] for r in c["rounds_ms"])  # a median of the rounds
    assert compile_comparison(model, 1, 3, "cpu")["same_tokens"] is True
    cache = next(m for m in LEAN if GROWING[m])
    with pytest.raises(ValueError, match="RNNs only"):
        compile_comparison(build_generator("mnist", cache, overrides=TINY), 2, 3, "cpu")
