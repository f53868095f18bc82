"""The attention benchmark runs end to end and writes its table with provenance (no timing asserted here)."""
import contextlib
import importlib.util
import io
import json

import pytest
import torch

from lra_kit.attention import linear_attention, momentum_attention
from lra_kit.bench.attention import (
    BASELINE,
    METHODS,
    format_ratios,
    format_table,
    io_bytes,
    judged_ratios,
    main,
    run,
)
from lra_kit.cli import main as cli_main


LENGTHS = (48,)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """One run of ``lra-kit bench attention`` (every CPU method, prefill, JSON) shared by the tests below: on a
    CPU each row's memory is measured in a fresh process (seconds each), so the run is paid once. Returns the
    JSON path, what was printed and the table ``run`` returned."""
    from lra_kit.bench import attention

    path = tmp_path_factory.mktemp("bench") / "bench.json"
    returned = []
    real_run = attention.run

    def run_and_look(*args, **kwargs):
        returned.append(real_run(*args, **kwargs))
        return returned[-1]

    out = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setattr(attention, "run", run_and_look)
        assert cli_main(["bench", "attention", "--lengths", *map(str, LENGTHS), "--repeats", "1", "--heads", "1",
                         "--dim", "8", "--device", "cpu", "--json", str(path)]) == 0
    return {"path": path, "out": out.getvalue(), "result": returned[0]}


def test_benchmark_writes_json_with_provenance(bench):
    record = json.loads(bench["path"].read_text())
    for key in ("metrics", "config", "scale", "steps", "seed", "wall_s", "device", "torch", "git_commit", "date"):
        assert key in record
    rows = record["metrics"]["rows"]
    assert {(r["length"], r["method"]) for r in rows} == {(n, m) for n in LENGTHS for m in METHODS}
    for r in rows:
        assert r["median_s"] > 0
        if r["method"] in BASELINE:
            assert r["speedup_vs_sdpa"] > 0
    assert "speed" in bench["out"]


def test_cli_bench_attention(bench):
    assert all(method in bench["out"] for method in METHODS)


def test_format_table_handles_missing_memory():
    row = {"length": 8, "method": "sdpa", "median_s": 1e-3, "spread_s": 0.0, "peak_bytes": None,
           "speedup_vs_sdpa": None, "memory_vs_sdpa": None, "time_vs_linear": None}
    config = {"batch": 1, "heads": 1, "dim": 1, "dtype": "float32", "repeats": 1}
    text = format_table({"config": config, "rows": [row], "device": "cpu"})
    assert "sdpa" in text


def test_peak_memory_by_length_grows_with_length():
    from lra_kit.bench.attention import peak_memory_by_length
    from lra_kit.bench.measure import cpu_peak_supported

    # 1K and 4K: below that the peak is a few hundred kB and warm-up allocations can outweigh it.
    peaks = peak_memory_by_length(["linear_causal", "linear_cumulative_states"], [1024, 4096], heads=1, dim=32)
    assert set(peaks) == {"linear_causal", "linear_cumulative_states"}
    if cpu_peak_supported():
        ours, naive = peaks["linear_causal"], peaks["linear_cumulative_states"]
        assert ours[1] > ours[0] and naive[1] > naive[0]
        assert naive[1] > 4 * ours[1]  # all N states of 32 × 32 against O(N·D)


def test_json_path_is_checked_before_running(tmp_path, monkeypatch):
    import lra_kit.bench.attention as bench

    def must_not_run(*args, **kwargs):
        raise AssertionError("the benchmark ran although its output could not be written")

    monkeypatch.setattr(bench, "run", must_not_run)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(SystemExit, match="cannot write"):
        main(["--lengths", "32", "--json", str(blocker / "bench.json")])
    with pytest.raises(SystemExit, match="is a directory"):
        main(["--lengths", "32", "--json", str(tmp_path)])


def test_prefill_table_and_judged_ratios(bench):
    result = bench["result"]
    assert [r["method"] for r in result["prefill"]] == ["sdpa_kv_cache", "linear_causal", "momentum_causal",
                                                        "performer_causal"]
    rows = {r["method"]: r for r in result["rows"]}
    pre = {r["method"]: r for r in result["prefill"]}
    for r in result["prefill"]:
        assert r["tokens_per_s"] == pytest.approx(LENGTHS[0] / r["median_s"])
    (ratio,) = judged_ratios(result)
    assert ratio["linear"] == "linear_causal" and ratio["momentum"] == "momentum_causal"
    assert ratio["sdpa_over_linear"] == pytest.approx(
        rows["sdpa_causal"]["median_s"] / rows["linear_causal"]["median_s"])
    assert ratio["momentum_over_linear"] == pytest.approx(
        rows["momentum_causal"]["median_s"] / rows["linear_causal"]["median_s"])
    assert ratio["prefill_linear_vs_sdpa"] == pytest.approx(
        pre["sdpa_kv_cache"]["median_s"] / pre["linear_causal"]["median_s"])
    assert ratio["linear_over_bound"] is None and rows["linear_causal"]["bound_ms"] is None  # no bandwidth on a CPU
    text = format_ratios(result)
    assert "SDPA÷lin" in text and "mom÷lin" in text


def test_io_bytes_counts_the_tensors_any_implementation_moves():
    one = 2 * 3 * 5 * 7 * 2  # batch 2, heads 3, length 5, dim 7, two-byte elements
    assert io_bytes("linear", batch=2, heads=3, length=5, dim=7, element=2, backward=False) == 4 * one
    assert io_bytes("linear", batch=2, heads=3, length=5, dim=7, element=2, backward=True) == 11 * one
    assert io_bytes("luna", batch=2, heads=3, length=5, dim=7, element=2, backward=True) is None


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")
def test_the_rows_as_users_call_them_take_the_triton_path_the_causal_rows_never(monkeypatch):
    """``linear`` and ``momentum`` are the library's own calls, which choose the Triton path where it is available
    (here Triton's interpreter); the ``*_causal`` rows are pinned to the PyTorch path (never the same kernels)."""
    from lra_kit.attention.causal import triton as gpu
    from lra_kit.bench.attention import _attention_fn

    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")  # CPU tensors interpreted, CUDA tensors compiled
    device = "cuda" if torch.cuda.is_available() else "cpu"
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 40, 16, generator=gen).to(device) for _ in range(3))
    with gpu.disabled():
        ref, _ = linear_attention(q, k, v, causal=True)
        ref_momentum, _ = momentum_attention(q, k, v, beta=0.6, causal=True)
    for final_state in (False, True):
        out = _attention_fn("linear", 0.6, "auto", final_state=final_state)(q, k, v)
        assert ((out - ref).norm() / ref.norm()).item() < 1e-5
    out = _attention_fn("momentum", 0.6, "auto", final_state=True)(q, k, v)
    assert ((out - ref_momentum).norm() / ref_momentum.norm()).item() < 1e-5

    from lra_kit.attention.causal.triton import host as triton_path

    calls = []
    real = triton_path.forward  # the Triton path's entry in the causal op
    monkeypatch.setattr(triton_path, "forward", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    _attention_fn("linear_causal", 0.6, "auto")(q, k, v)
    _attention_fn("momentum_causal", 0.6, "auto")(q, k, v)
    assert not calls  # the PyTorch path
    _attention_fn("linear", 0.6, "auto")(q, k, v)
    assert calls  # the Triton path


def test_cpu_memory_is_what_a_fresh_process_pays():
    """process_peak counts what a step makes the process's resident set grow by, first-call costs included."""
    from lra_kit.bench.measure import cpu_peak_supported, process_peak

    if not cpu_peak_supported():
        pytest.skip("no /proc/self/clear_refs here")

    def make():
        def step():
            torch.ones(4 * 2**20)  # 16 MiB, touched
        return step

    assert process_peak(make) >= 15 * 2**20


def test_methods_that_cannot_run_here_give_a_row_that_says_why():
    """On this CPU: SDPA pinned to cuDNN finds no kernel, fla's Triton kernels need CUDA; the run goes on and their
    rows say why, in the table and in ``unavailable``."""
    from lra_kit.bench.attention import format_table

    result = run([32], device="cpu", methods=["sdpa_flash", "sdpa_cudnn", "linear", "fla_chunk_linear"], repeats=1,
                 heads=1, dim=8, prefill=False, progress=False)
    assert [r["method"] for r in result["rows"]] == ["sdpa_flash", "linear"]
    why = {u["method"]: u["unavailable"] for u in result["unavailable"]}
    assert set(why) == {"sdpa_cudnn", "fla_chunk_linear"}
    assert why["sdpa_cudnn"].startswith("RuntimeError: ") and "backend" in why["sdpa_cudnn"]
    assert "CUDA" in why["fla_chunk_linear"]
    table = format_table(result)
    assert "sdpa_cudnn               unavailable: RuntimeError: " in table
    assert "fla_chunk_linear         unavailable: flash-linear-attention's kernels" in table


def test_the_json_is_written_after_each_length(tmp_path, monkeypatch):
    """A GPU run stopped at its time limit keeps the lengths it finished: the JSON holds each length as it ends.
    (One method: each row's memory takes a fresh process; the rows of every method are checked above.)"""
    from lra_kit.bench import attention

    path = tmp_path / "bench-cpu.json"
    seen = []
    real_run = attention.run

    def run_and_look(*args, on_length=None, **kwargs):
        def look(result):
            on_length(result)
            seen.append(json.loads(path.read_text())["config"]["lengths"])
        return real_run(*args, on_length=look, **kwargs)

    monkeypatch.setattr(attention, "run", run_and_look)
    asked = tmp_path / "bench-{gpu}.json"  # {gpu}: the device's short name, cpu here
    assert main(["--lengths", "32", "48", "--repeats", "1", "--heads", "1", "--dim", "8", "--device", "cpu",
                 "--methods", "sdpa_causal", "--no-prefill", "--json", str(asked)]) == 0
    assert seen == [[32], [32, 48]]
    rows = json.loads(path.read_text())["metrics"]["rows"]
    assert [(r["length"], r["method"]) for r in rows] == [(32, "sdpa_causal"), (48, "sdpa_causal")]
    assert all(r["peak_bytes"] > 0 and r["warmup_s"] >= 0 for r in rows)


def test_every_row_of_the_run_has_its_definition_in_the_record(bench):
    """A ratio means nothing without what its two rows ran: the record names, for every method of the run and of
    its prefill, what it ran (``config.definitions``), and the LSH and Linformer rows name their settings."""
    from lra_kit.bench import attention

    record = json.loads(bench["path"].read_text())
    written = record["config"]["definitions"]
    ran = {r["method"] for r in record["metrics"]["rows"]} | {r["method"] for r in record["metrics"]["prefill"]}
    assert ran == set(written) and all(written[m] for m in ran)
    for method, rounds in attention.LSH_ROUNDS.items():
        assert f"{rounds} hashing round" in written[method] and "64 buckets" in written[method]
        assert "chunk_size=32" in written[method] and "causal=True" in written[method]
    assert "k = 256" in written["linformer"] and "not causal" in written["linformer"]
    assert "P of length 16" in written["luna"]
    assert set(record["config"]["load_average_1m"]) == {"start", "end"}  # how loaded the machine was


def test_every_method_of_the_benchmark_has_a_definition():
    from lra_kit.bench import attention

    known = attention.definitions(beta=0.6, luna_length=16, sdpa_backend="auto")
    assert set(known) == {*attention.ALL_METHODS, attention.PREFILL_BASELINE}
    assert "beta=0.3" in attention.definitions(beta=0.3, luna_length=16, sdpa_backend="auto")["momentum_causal"]
    with pytest.raises(ValueError, match="no definition of \\['made_up'\\]"):
        attention.run_definitions(["sdpa", "made_up"], beta=0.6, luna_length=16, sdpa_backend="auto")


def test_linformer_rows_drop_the_projections_gradients_after_each_step():
    """E and F are parameters: each step starts without their gradients, as after a model's zero_grad, so that every
    timed call pays what the first one did."""
    from lra_kit.bench import attention

    step = attention.make_step("linformer", B=1, H=1, N=24, D=8, dtype=torch.float32, device=torch.device("cpu"),
                               beta=0.6, luna_length=16)
    step()
    E, F = attention._projections_for(24, "cpu", torch.float32)
    assert E.requires_grad and E.grad is None and F.grad is None
