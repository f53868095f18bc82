"""The generation benchmark (Katharopoulos et al. appendix Tables 4-5) runs end to end on a tiny model and
labels every number it did not measure directly; no timing is asserted."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from lra_kit.bench.generation import (
    GROWING, LEAN, METHODS, PIXELS, TINY, build_generator, count_ops, default_json_path, largest_batch, merge_records,
    run, time_generation,
)
from lra_kit.cli import main as cli_main
from lra_kit.results import REQUIRED_KEYS

RECURRENT = tuple(m for m in METHODS if not GROWING[m])  # a state of constant size per step


def test_rows_scale_a_capped_prefix_and_say_so():
    # every method but linear (the reference of the ratios) capped, so that the test generates one whole image
    capped = {"softmax": 5, "softmax-kv-cache": 6, "momentum": 7}
    rows = time_generation("mnist", METHODS, 2, max_pixels=capped, overrides=TINY)
    by = {r["method"]: r for r in rows}
    assert set(by) == set(METHODS)
    total = PIXELS["mnist"] - 1
    for method, pixels in capped.items():  # a growing state is a lower bound, a constant one an estimate
        assert (by[method]["pixels_timed"], by[method]["extrapolation"]) == (
            pixels, "lower bound" if GROWING[method] else "estimate")
        assert by[method]["seconds_per_image"] == pytest.approx(by[method]["seconds"] * total / pixels / 2)
    assert (by["linear"]["pixels_timed"], by["linear"]["extrapolation"]) == (total, "none")
    assert by["linear"]["seconds_per_image"] == pytest.approx(by["linear"]["seconds"] / 2)
    assert by["linear"]["time_over_linear"] == 1.0
    for r in rows:
        assert r["images_per_s"] == pytest.approx(1 / r["seconds_per_image"])
        assert r["time_over_linear"] == pytest.approx(r["seconds_per_image"] / by["linear"]["seconds_per_image"])


def test_a_budget_stops_the_uncached_softmax_and_caps_the_others():
    """Within a budget the uncached softmax stops after its first chunk of pixels (a lower bound), the lean steps at
    their first check, after 8 steps (an estimate for the RNNs, a lower bound for the cache); the lean methods are
    also timed through the modules' step, in the same process and over the same pixels, when asked."""
    rows = time_generation("mnist", METHODS, 1, max_pixels={}, overrides=TINY, budget_s=1e-4, reference=True,
                           repeats=3)
    by = {r["method"]: r for r in rows}
    assert (by["softmax"]["pixels_timed"], by["softmax"]["extrapolation"]) == (8, "lower bound")
    for method in LEAN:
        assert by[method]["pixels_timed"] == by[method]["modules"]["pixels_timed"] == 1 + 8
        assert by[method]["extrapolation"] == ("lower bound" if GROWING[method] else "estimate")
        assert by[method]["lean_speedup"] == pytest.approx(
            by[method]["modules"]["seconds_per_image"] / by[method]["seconds_per_image"])
        rounds = by[method]["rounds_s"]  # three rounds alternating the two steps; the row holds the medians
        assert len(rounds) == 3 and by[method]["seconds"] == sorted(r["lean"] for r in rounds)[1]
    assert "modules" not in by["softmax"]
    for r in rows:
        assert r["ms_per_pixel"] == pytest.approx(1e3 * r["seconds"] / r["pixels_timed"])


def test_operators_are_counted_per_pixel_and_views_apart():
    """Katharopoulos §3.4's RNN through the lean step dispatches fewer operators per pixel than through the
    modules; the count is per pixel (it does not grow with the pixels generated) and names each operator."""
    model = build_generator("mnist", "linear", overrides=TINY)
    lean, modules = count_ops(model, "linear"), count_ops(model, "linear", lean=False)
    assert lean["ops_per_pixel"] == sum(lean["by_name"].values())
    assert 0 <= lean["views_per_pixel"] < lean["ops_per_pixel"] < modules["ops_per_pixel"]
    assert lean["by_name"]["addmm"] == 3 + 1 and "dropout" in modules["by_name"] and "dropout" not in lean["by_name"]
    assert modules["by_name"]["unflatten"] > 0 and modules["views_per_pixel"] > lean["views_per_pixel"]


def test_largest_batch_doubles_up_to_the_cap():
    assert largest_batch("mnist", "linear", cap=1) == 1
    assert largest_batch("mnist", "linear", cap=12) == 8  # a CPU: memory does not bound it, the cap does
    with pytest.raises(ValueError, match="max_batch"):
        largest_batch("mnist", "linear", cap=0)


def test_a_capped_linear_row_is_an_estimate():
    rows = time_generation("mnist", RECURRENT, 1, max_pixels={RECURRENT[-1]: 3}, overrides=TINY)
    assert [r["extrapolation"] for r in rows] == ["none"] * (len(RECURRENT) - 1) + ["estimate"]


def test_models_are_the_papers():
    """Katharopoulos §4.2.1-4.2.2: 8 (MNIST) or 16 (CIFAR-10) layers, 8 heads, d 256, FFN 1024, 10 logistics."""
    layers = {"mnist": 8, "cifar10": 16}
    for task in PIXELS:  # the image-generation tasks of the task table
        m = build_generator(task, "momentum").cfg
        assert (m.layers, m.n_heads, m.d_model, m.d_ff) == (layers[task], 8, 256, 1024)
        assert (m.output, m.mixture_components, m.dropout) == ("logistic_mixture", 10, 0.0)
    assert build_generator("mnist", "softmax-kv-cache").cfg.attention == "softmax"


@pytest.mark.parametrize("kwargs,match", [
    (dict(tasks=("svhn",)), "tasks"), (dict(methods=("softmax", "nystrom")), "methods"),
    (dict(methods=tuple(m for m in METHODS if m != "linear")), "linear"), (dict(batches=(0,)), "batches"),
    (dict(max_pixels={"linear": 0}), "max_pixels"), (dict(max_pixels={"nystrom": 3}), "max_pixels"),
    (dict(budget_s=0), "budget_s"), (dict(max_batch=0), "max_batch"), (dict(repeats=0), "repeats"),
])
def test_bad_arguments_are_refused_before_any_work(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run(**kwargs, overrides=TINY, progress=False)


def test_cli_writes_json_and_appends(tmp_path, capsys):
    path = tmp_path / "gen.json"
    base = ["bench", "generation", "--tiny", "--tasks", "mnist", "--device", "cpu", "--json", str(path),
            "--max-pixels", "softmax=4", "softmax-kv-cache=4", "linear=4", "momentum=4"]
    assert cli_main(base + ["--batches", "1"]) == 0
    record = json.loads(path.read_text())
    assert all(key in record for key in REQUIRED_KEYS) and record["device"] == "cpu"
    assert len(record["metrics"]["rows"]) == len(METHODS)
    assert all(r["ops_per_pixel"] > 0 for r in record["metrics"]["rows"])
    assert "TorchDispatchMode" in record["config"]["ops_counted"]
    assert cli_main(base + ["--batches", "1", "2", "--append", "--no-count", "--largest-batch", "--max-batch", "2",
                            "--reference"]) == 0
    merged = json.loads(path.read_text())
    rows = merged["metrics"]["rows"]
    assert sorted((r["batch"], r["method"], r.get("batch_search", "")) for r in rows) == sorted(
        [(b, m, "") for b in (1, 2) for m in METHODS] + [(2, m, "largest") for m in METHODS])
    assert all("modules" in r for r in rows if r["method"] in LEAN and r.get("batch_search"))
    assert len(merged["config"]["runs"]) == 2
    assert "÷ linear" in capsys.readouterr().out


def test_merge_refuses_another_device():
    row = {"task": "mnist", "batch": 1, "method": "linear"}
    old = {"device": "cpu", "metrics": {"rows": [row]}, "config": {}, "date": "d", "git_commit": "c", "wall_s": 1.0}
    with pytest.raises(ValueError, match="device"):
        merge_records(old, dict(old, device="NVIDIA H200"))


def test_bad_cap_on_the_command_line():
    with pytest.raises(SystemExit, match="max-pixels"):
        cli_main(["bench", "generation", "--tiny", "--no-json", "--max-pixels", "softmax=x"])


def test_default_path_names_the_device():
    assert str(default_json_path(torch.device("cpu"))) == "results/bench/generation-cpu.json"


def test_a_gpus_record_has_the_attention_benchmarks_short_name(monkeypatch):
    from lra_kit.bench import attention, generation

    card = "NVIDIA H100 80GB HBM3"
    monkeypatch.setattr(generation, "device_name", lambda device: card)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: card)
    cuda = torch.device("cuda")
    assert str(default_json_path(cuda)) == "results/bench/generation-h100.json"
    gpu = attention.json_path(Path("results/bench/attention-{gpu}.json"), cuda).stem.removeprefix("attention-")
    assert default_json_path(cuda).stem.removeprefix("generation-") == gpu
