"""The generation benchmark (Katharopoulos et al. Tables 1-2, appendix Tables 4-5) runs end to end on a tiny model,
times the steps apart from the prompt pass and the set-up, keeps every round beside their medians, divides eager by
eager (graph by graph), and labels every number it did not measure directly; no timing is asserted but those a test
makes slow on purpose."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import torch

from lra_kit.bench import generation
from lra_kit.bench.generation import (
    GROWING, LEAN, LSH_ROUNDS, METHODS, PIXELS, TINY, UNCACHED, build_generator, count_ops, default_json_path,
    largest_batch, merge_records, run, time_generation,
)
from lra_kit.bench.generation_timing import Round, time_round
from lra_kit.cli import main as cli_main
from lra_kit.results import REQUIRED_KEYS

RECURRENT = tuple(m for m in METHODS if not GROWING[m])  # a state of constant size per step


def test_rows_scale_a_capped_prefix_and_say_so():
    # every method but linear (the reference of the ratios) capped, so that the test generates one whole image
    capped = {"softmax": 5, "softmax-kv-cache": 6, "momentum": 7, "lsh-1": 3, "lsh-4": 4}
    rows = time_generation("mnist", METHODS, 2, max_pixels=capped, overrides=TINY, repeats=1)
    by = {r["method"]: r for r in rows}
    assert set(by) == set(METHODS)
    total = PIXELS["mnist"] - 1
    for method, pixels in capped.items():  # a growing state is a lower bound, a constant one an estimate
        assert (by[method]["pixels_timed"], by[method]["extrapolation"]) == (
            pixels, "lower bound" if GROWING[method] else "estimate")
        # the uncached ways' every pixel is a step; the lean ways' first pixel comes from the prompt pass
        assert by[method]["steps_timed"] == pixels - (method in LEAN)
    assert (by["linear"]["pixels_timed"], by["linear"]["extrapolation"]) == (total, "none")
    assert by["linear"]["time_over_linear"] == 1.0
    for r in rows:
        assert r["ms_per_pixel"] == pytest.approx(1e3 * r["seconds"] / r["steps_timed"])
        assert r["seconds_per_image"] == pytest.approx(r["ms_per_pixel"] / 1e3 * total / 2)
        assert r["images_per_s"] == pytest.approx(1 / r["seconds_per_image"])
        assert r["time_over_linear"] == pytest.approx(r["seconds_per_image"] / by["linear"]["seconds_per_image"])
        assert r["way"] == ("eager" if r["method"] in LEAN else "uncached")
        assert (r["prefill_s"] is None) == (r["setup_s"] is None) == (r["method"] in UNCACHED)


def test_lsh_rows_rerun_the_prefix_with_the_papers_config_and_are_lower_bounds():
    """Katharopoulos et al. Tables 1-2: LSH-1 and LSH-4, 64 buckets, chunks of 29 (MNIST) and 37 (CIFAR-10); no
    recurrent form, so each pixel re-runs the prefix: a prefix's time scaled to the image is a lower bound."""
    chunks = {"mnist": 29, "cifar10": 37}
    for task in PIXELS:
        for method, rounds in LSH_ROUNDS.items():
            options = build_generator(task, method, overrides=TINY).encoder.layers[0].attn
            assert (options.n_hashes, options.n_buckets, options.chunk_size) == (rounds, 64, chunks[task])
    rows = time_generation("mnist", ("linear", *LSH_ROUNDS), 1, max_pixels={"linear": 4, "lsh-1": 9, "lsh-4": 3},
                           overrides=TINY, budget_s=1e-4, repeats=2)
    by = {r["method"]: r for r in rows}
    for method in LSH_ROUNDS:
        row = by[method]
        assert row["extrapolation"] == "lower bound" and row["way"] == "uncached" and "graph" not in row
        assert row["attention_options"]["n_hashes"] == LSH_ROUNDS[method]
        assert row["prefill_s"] is None and row["setup_s"] is None
    # within a budget an uncached way stops after its first chunk of 8 pixels; a cap below 8 stops it first
    assert (by["lsh-1"]["pixels_timed"], by["lsh-4"]["pixels_timed"]) == (8, 3)
    assert by["linear"]["extrapolation"] == "estimate"
    with pytest.raises(ValueError, match="method"):
        build_generator("mnist", "lsh-2")


def test_a_budget_stops_every_way_and_the_later_rounds_repeat_the_first():
    """Within a budget the uncached softmax stops after its first chunk of pixels (a lower bound), the lean steps at
    their first check, after 8 steps (an estimate for the RNNs, a lower bound for the cache); the lean methods are
    also timed through the modules' step, in the same rounds and over the same pixels, when asked."""
    rows = time_generation("mnist", METHODS, 1, max_pixels={}, overrides=TINY, budget_s=1e-4, reference=True,
                           repeats=3)
    by = {r["method"]: r for r in rows}
    for method in UNCACHED:
        assert (by[method]["pixels_timed"], by[method]["extrapolation"]) == (8, "lower bound")
        assert "modules" not in by[method]
    for method in LEAN:
        row = by[method]
        assert row["pixels_timed"] == row["modules"]["pixels_timed"] == 1 + 8
        assert row["extrapolation"] == ("lower bound" if GROWING[method] else "estimate")
        assert row["lean_speedup"] == pytest.approx(row["modules"]["ms_per_pixel"] / row["ms_per_pixel"])
        rounds = row["rounds_s"]  # three rounds alternating the two steps
        assert len(rounds) == 3 and row["seconds"] == sorted(r["lean"] for r in rounds)[1]
        assert row["modules"]["setup_s"] == 0.0 and row["modules"]["prefill_s"] > 0
    for r in rows:  # every round generated what the first did, and the row holds their medians
        assert len(r["rounds"]) == 3 and len({(x["pixels"], x["steps"]) for x in r["rounds"]}) == 1
        assert r["seconds"] == sorted(x["steps_s"] for x in r["rounds"])[1]


def _scripted(times: dict[str, list[float]]):
    """A stand-in for generation_timing.time_round (lean ways): way → the steps' seconds of each successive round,
    every round generating the pixels asked for, the prompt pass 0.5 s and the set-up 0.25 s."""
    calls = {way: iter(seconds) for way, seconds in times.items()}

    def fake(model, way, batch, pixels, device="cpu", *, budget_s=None):
        return Round(next(calls[way]), pixels - 1, pixels, 0.5, 0.25)
    return fake


def test_a_row_is_the_median_of_its_rounds_and_keeps_each(monkeypatch):
    monkeypatch.setattr(generation, "time_round", _scripted({"eager": [0.3, 0.1, 0.2]}))
    rows = time_generation("mnist", ("linear",), 1, max_pixels={"linear": 11}, overrides=TINY, repeats=3)
    row = rows[0]
    assert [r["steps_s"] for r in row["rounds"]] == [0.3, 0.1, 0.2]  # in the order they ran
    assert row["seconds"] == 0.2 and row["ms_per_pixel"] == pytest.approx(1e3 * 0.2 / 10)
    assert (row["prefill_s"], row["setup_s"], row["steps_timed"]) == (0.5, 0.25, 10)


def test_ratios_divide_eager_by_eager_and_graph_by_graph(monkeypatch):
    """On CUDA the lean methods replay CUDA graphs while the uncached ones run eagerly: time_over_linear divides
    eager by eager, graph.time_over_linear graph by graph, never one by the other."""
    eager = {"softmax": 8.0, "softmax-kv-cache": 3.0, "linear": 2.0, "momentum": 2.2}
    graph = {"softmax-kv-cache": 0.9, "linear": 0.5, "momentum": 0.6}
    methods = tuple(eager)

    def rounds(model, method, batch, pixels, *, device, budget_s, reference, repeats):
        def make(seconds, way):
            return [Round(seconds, 10, 11 - (way == "uncached"), None, None)] * repeats
        out = {"uncached" if method in UNCACHED else "eager": make(eager[method], "eager")}
        if method in graph:
            out["graph"] = make(graph[method], "graph")
        return out

    monkeypatch.setattr(generation, "measure", rounds)
    by = {r["method"]: r for r in time_generation("mnist", methods, 1, max_pixels={}, overrides=TINY)}
    assert by["softmax"]["time_over_linear"] == pytest.approx(8.0 / 2.0)  # not 8 / 0.5, eager ÷ graph
    assert by["softmax-kv-cache"]["time_over_linear"] == pytest.approx(3.0 / 2.0)
    assert by["softmax-kv-cache"]["graph"]["time_over_linear"] == pytest.approx(0.9 / 0.5)
    assert by["momentum"]["graph"]["time_over_linear"] == pytest.approx(0.6 / 0.5)
    assert "graph" not in by["softmax"]
    config = run(("mnist",), ("linear",), max_pixels={"linear": 3}, overrides=TINY, progress=False, count=False,
                 repeats=1)["config"]
    assert "eager / eager" in config["ratios"]["time_over_linear"]
    assert "CUDA graph / CUDA graph" in config["ratios"]["graph.time_over_linear"]
    assert "prefill_s" in config["timing"] and "setup_s" in config["timing"]


class _SlowPrefill:
    """Encoder.prefill made slower by ``delay`` seconds: the prompt pass that a step's time must not include."""

    def __init__(self, model, delay):
        self.prefill, self.delay = model.encoder.prefill, delay

    def __call__(self, *args, **kwargs):
        time.sleep(self.delay)
        return self.prefill(*args, **kwargs)


@pytest.mark.parametrize("way", ["eager", "modules"])
def test_the_prompt_pass_is_timed_apart_from_the_steps(way):
    delay, pixels = 0.4, 5
    model = build_generator("mnist", "linear", overrides=TINY)
    fast = time_round(model, way, 1, pixels)
    model.encoder.prefill = _SlowPrefill(model, delay)
    slow = time_round(model, way, 1, pixels)
    assert slow.prefill_s >= delay > fast.prefill_s
    # the steps' time and the ms per pixel do not hold the delay (4 steps: a whole delay would add 100 ms each)
    assert slow.steps == pixels - 1 and slow.steps_s < delay / 2
    assert slow.ms_per_pixel < 1e3 * delay / (2 * slow.steps)


def test_the_set_up_is_timed_apart_from_the_steps(monkeypatch):
    from lra_kit.models import decode

    delay = 0.4
    build = decode.Decoder.__init__

    def slow_build(self, *args, **kwargs):
        time.sleep(delay)
        build(self, *args, **kwargs)

    monkeypatch.setattr(decode.Decoder, "__init__", slow_build)
    model = build_generator("mnist", "softmax-kv-cache", overrides=TINY)
    one = time_round(model, "eager", 1, 5)
    assert one.setup_s >= delay and one.steps_s < delay / 2 and one.prefill_s < delay


def test_a_slow_prompt_pass_leaves_the_rows_ms_per_pixel_alone(monkeypatch):
    """Through the whole benchmark: a row's prefill_s holds the prompt pass, its ms_per_pixel does not."""
    delay = 0.3
    built = generation.build_generator

    def slow(*args, **kwargs):
        model = built(*args, **kwargs)
        model.encoder.prefill = _SlowPrefill(model, delay)
        return model

    monkeypatch.setattr(generation, "build_generator", slow)
    row = time_generation("mnist", ("linear",), 1, max_pixels={"linear": 5}, overrides=TINY, repeats=1)[0]
    assert row["prefill_s"] >= delay and row["seconds"] < delay / 2
    assert row["ms_per_pixel"] < 1e3 * delay / (2 * row["steps_timed"])


@pytest.mark.parametrize("method", ["linear", "softmax-kv-cache", "softmax", "lsh-1"])
def test_a_timed_round_draws_the_tokens_generate_draws(method):
    """What is timed is generation: each way's tokens are generate()'s with the same generator."""
    model = build_generator("mnist", method, overrides=TINY)
    prompt = torch.zeros(2, 1, dtype=torch.long)
    ways = ("eager", "modules") if method in LEAN else ("uncached",)
    for way in ways:
        got = time_round(model, way, 2, 6).tokens
        want = model.generate(prompt, 6, recurrent=method in LEAN, lean=way != "modules",
                              generator=torch.Generator().manual_seed(0))
        assert torch.equal(got, want), (method, way)


def test_a_round_refuses_bad_arguments():
    model = build_generator("mnist", "linear", overrides=TINY)
    with pytest.raises(ValueError, match="way must be one of"):
        time_round(model, "fast", 1, 4)
    with pytest.raises(ValueError, match="pixels must be an int >= 2"):
        time_round(model, "eager", 1, 1)
    with pytest.raises(ValueError, match="budget_s"):
        time_round(model, "eager", 1, 4, budget_s=0)
    with pytest.raises(ValueError, match="device must be cuda"):
        time_round(model, "graph", 1, 4)


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
    rows = time_generation("mnist", RECURRENT, 1, max_pixels={RECURRENT[-1]: 3}, overrides=TINY, repeats=1)
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
    (dict(max_pixels={"momentum": 1}), r"max_pixels\['momentum'\] must be >= 2"),
    (dict(budget_s=0), "budget_s"), (dict(max_batch=0), "max_batch"), (dict(repeats=0), "repeats"),
    (dict(repeats=1.5), "repeats"),
])
def test_bad_arguments_are_refused_before_any_work(kwargs, match):
    with pytest.raises(ValueError, match=match):
        run(**kwargs, overrides=TINY, progress=False)


def test_cli_writes_json_and_appends(tmp_path, capsys):
    path = tmp_path / "gen.json"
    base = ["bench", "generation", "--tiny", "--tasks", "mnist", "--device", "cpu", "--json", str(path),
            "--max-pixels", *(f"{m}=4" for m in METHODS)]
    assert cli_main(base + ["--batches", "1"]) == 0
    record = json.loads(path.read_text())
    assert all(key in record for key in REQUIRED_KEYS) and record["device"] == "cpu"
    assert len(record["metrics"]["rows"]) == len(METHODS)
    assert all(r["ops_per_pixel"] > 0 for r in record["metrics"]["rows"])
    assert "TorchDispatchMode" in record["config"]["ops_counted"]
    assert all(len(r["rounds"]) == generation.REPEATS for r in record["metrics"]["rows"])  # unless --repeats says
    assert cli_main(base + ["--batches", "1", "2", "--append", "--no-count", "--largest-batch", "--max-batch", "2",
                            "--reference", "--repeats", "1"]) == 0
    merged = json.loads(path.read_text())
    rows = merged["metrics"]["rows"]
    assert sorted((r["batch"], r["method"], r.get("batch_search", "")) for r in rows) == sorted(
        [(b, m, "") for b in (1, 2) for m in METHODS] + [(2, m, "largest") for m in METHODS])
    assert all("modules" in r for r in rows if r["method"] in LEAN and r.get("batch_search"))
    assert all(len(r["rounds"]) == 1 for r in rows)
    assert len(merged["config"]["runs"]) == 2 and all("timing" in run for run in merged["config"]["runs"])
    out = capsys.readouterr().out
    assert "÷ linear" in out and "prefill" in out and "lsh-4" in out


def test_merge_refuses_another_device():
    row = {"task": "mnist", "batch": 1, "method": "linear"}
    old = {"device": "cpu", "metrics": {"rows": [row]}, "config": {}, "date": "d", "git_commit": "c", "wall_s": 1.0}
    with pytest.raises(ValueError, match="device"):
        merge_records(old, dict(old, device="NVIDIA H200"))


def test_bad_cap_on_the_command_line():
    with pytest.raises(SystemExit, match="max-pixels"):
        cli_main(["bench", "generation", "--tiny", "--no-json", "--max-pixels", "softmax=x"])
    with pytest.raises(SystemExit, match="max-pixels linear=1"):
        cli_main(["bench", "generation", "--tiny", "--no-json", "--max-pixels", "linear=1"])
    with pytest.raises(SystemExit, match="--repeats must be >= 1"):
        cli_main(["bench", "generation", "--tiny", "--no-json", "--repeats", "0"])


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
