"""The training benchmark (Luna Table 2) runs end to end, its baselines are the same function, its ratios
are what the docstring says (no timing is asserted: that is the benchmark's job, not a test's)."""
import json

import pytest
import torch

from lra_kit.bench.training import BASELINES, METHODS, add_ratios, main, make_train_step, model_config, run
from lra_kit.cli import main as cli_main
from lra_kit.paper_numbers import momentum_hyperparameters


def test_writes_json_with_provenance_and_every_row(tmp_path):
    path = tmp_path / "training.json"
    assert main(["--lengths", "16", "24", "--repeats", "1", "--batch", "1", "--device", "cpu", "--no-memory",
                 "--json", str(path)]) == 0
    record = json.loads(path.read_text())
    for key in ("metrics", "config", "scale", "steps", "seed", "wall_s", "device", "torch", "git_commit", "date"):
        assert key in record
    rows = record["metrics"]["rows"]
    assert {(r["length"], r["method"]) for r in rows} == {(n, m) for n in (16, 24) for m in METHODS}
    for r in rows:
        assert r["median_s"] > 0 and r["steps_per_s"] == pytest.approx(1 / r["median_s"])
        if r["method"] in BASELINES:
            assert r[f"speed_vs_{r['method']}"] == pytest.approx(1.0)


def test_peak_memory_is_measured_on_cpu():
    """The CPU measure sees only allocations above glibc's mmap threshold (fixed at 64 KiB: smaller ones come
    from heap pages already resident, so at 64 tokens, 16 KiB activations, the growth could be 0). At 512
    tokens every activation of the d-64 model is 128 KiB, so each one is fresh pages and the growth is certain."""
    from lra_kit.bench.measure import cpu_peak_supported
    from lra_kit.bench.training import MODELS

    if not cpu_peak_supported():
        pytest.skip("no /proc/self/clear_refs here")
    length = 512
    assert length * MODELS["momentum"]["d_model"] * 4 > 64 * 1024  # one activation exceeds the mmap threshold
    result = run([length], batch=1, repeats=1, methods=["softmax_materialised", "linear"], device="cpu")
    peaks = {r["method"]: r["peak_bytes"] for r in result["rows"]}
    assert all(p is not None and p > 0 for p in peaks.values())


def test_the_two_softmax_baselines_are_the_same_function():
    """Materialised (SDPA's math backend) and fused SDPA differ in how, not in what, they compute."""
    losses = [make_train_step(m, length=48, batch=2, model="momentum", device="cpu", seed=3)() for m in BASELINES]
    torch.testing.assert_close(losses[0], losses[1], rtol=1e-5, atol=1e-6)


def test_model_config_per_method():
    assert model_config("luna-128", "momentum").luna_length == 128
    assert model_config("luna-16", "luna-text").d_model == 256
    opts = model_config("momentum", "momentum").attention_options
    assert (opts["beta"], opts["gamma"]) == momentum_hyperparameters("Text")
    assert {model_config(m, "momentum").attention for m in BASELINES} == {"softmax"}


def test_add_ratios_follow_the_definitions():
    rows = [{"length": 8, "method": "softmax_materialised", "median_s": 2.0, "peak_bytes": 400},
            {"length": 8, "method": "softmax_sdpa", "median_s": 1.0, "peak_bytes": 100},
            {"length": 8, "method": "linear", "median_s": 0.5, "peak_bytes": 50},
            {"length": 16, "method": "linear", "median_s": 0.5, "peak_bytes": None}]
    add_ratios(rows)
    linear = rows[2]
    assert linear["speed_vs_softmax_materialised"] == 4.0 and linear["speed_vs_softmax_sdpa"] == 2.0
    assert linear["memory_vs_softmax_materialised"] == 0.125 and linear["memory_vs_softmax_sdpa"] == 0.5
    assert rows[3]["speed_vs_softmax_sdpa"] is None and rows[3]["memory_vs_softmax_sdpa"] is None


@pytest.mark.parametrize("kwargs, name", [(dict(lengths=[0]), "lengths"), (dict(batch=0), "batch"),
                                          (dict(repeats=0), "repeats"), (dict(methods=["flash"]), "methods"),
                                          (dict(model="big"), "model")])
def test_bad_arguments_name_themselves(kwargs, name):
    args = dict(lengths=[8], device="cpu", memory=False) | kwargs
    with pytest.raises(ValueError, match=name):
        run(args.pop("lengths"), **args)


def test_cli_bench_training(capsys):
    argv = ["bench", "training", "--lengths", "16", "--repeats", "1", "--batch", "1", "--device", "cpu",
            "--no-memory", "--methods", "softmax_sdpa", "linear"]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "linear" in out and "softmax_sdpa" in out
