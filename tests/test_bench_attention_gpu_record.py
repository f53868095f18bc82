"""The GPU record of the attention benchmark as notebooks/speed_memory.md shows it, from a made-up record."""
import json
from pathlib import Path

import pytest

from lra_kit.bench.attention import GPU_METHODS, PLAIN_OF
from lra_kit.bench.attention_gpu_record import NO_GPU_RECORD, gpu_records, gpu_tables

# The GPU run's own rows, as a ratio entry names them: momentum, and the plain linear row beside it.
MOMENTUM, LINEAR = next((m, plain) for m, plain in PLAIN_OF.items() if m in GPU_METHODS)


def fake_record() -> dict:
    """Two lengths; fla could not run at 32K. By hand: linear at 1K takes 0.55 ms against a bound of 0.011 ms,
    50.0 × the bound; momentum 0.66 ms, 60.0 ×."""
    rows = [
        {"length": 1024, "method": "sdpa_flash", "median_s": 0.4e-3, "bound_ms": 0.011},
        {"length": 1024, "method": "sdpa_cudnn", "median_s": 0.3e-3, "bound_ms": 0.011},
        {"length": 1024, "method": "linear", "median_s": 0.55e-3, "bound_ms": 0.011},
        {"length": 1024, "method": "momentum", "median_s": 0.66e-3, "bound_ms": 0.011},
        {"length": 1024, "method": "fla_chunk_linear", "median_s": 0.5e-3, "bound_ms": 0.011},
        {"length": 32768, "method": "sdpa_flash", "median_s": 250e-3, "bound_ms": 0.352},
        {"length": 32768, "method": "sdpa_cudnn", "median_s": 1234.4e-3, "bound_ms": 0.352},
        {"length": 32768, "method": "linear", "median_s": 7.04e-3, "bound_ms": 0.352},
        {"length": 32768, "method": "momentum", "median_s": 8.8e-3, "bound_ms": 0.352},
    ]
    ratios = [
        {"length": 1024, "linear": LINEAR, "momentum": MOMENTUM, "linear_over_fla": 1.1,
         "cudnn_over_linear": 0.545, "momentum_over_linear": 1.2},
        {"length": 32768, "linear": LINEAR, "momentum": MOMENTUM, "linear_over_fla": None,
         "cudnn_over_linear": 175.3, "momentum_over_linear": 1.25},
    ]
    targets = [
        {"target": "linear ÷ fla time ≤ 1.2, at 1K–4K", "ratio": "linear_over_fla", "length": 1024,
         "value": 1.1, "met": True},
        {"target": "cuDNN SDPA ÷ linear time ≥ 3.0, at 32K", "ratio": "cudnn_over_linear", "length": 32768,
         "value": 175.3, "met": True},
        {"target": "momentum ÷ linear time ≤ 1.2, every length", "ratio": "momentum_over_linear",
         "length": 1024, "value": 1.2, "met": True},
        {"target": "momentum ÷ linear time ≤ 1.2, every length", "ratio": "momentum_over_linear",
         "length": 32768, "value": 1.25, "met": False},
        {"target": "linear ÷ fla peak memory (no threshold), at 64K", "ratio": "linear_memory_vs_fla",
         "length": 65536, "value": None, "met": None},
    ]
    return {"device": "NVIDIA H200", "device_detail": "NVIDIA H200",  # as make_results writes a CUDA run's
            "config": {"methods": ["sdpa_flash", "sdpa_cudnn", "linear", "momentum", "fla_chunk_linear"],
                       "bandwidth": {"bytes_per_s": 4.3e12, "source": "table: measured copy"}},
            "metrics": {"rows": rows, "ratios": ratios, "targets": targets,
                        "unavailable": [{"length": 32768, "method": "fla_chunk_linear",
                                         "unavailable": "OutOfMemoryError: CUDA out of memory"}]}}


def test_the_times_table_has_each_methods_milliseconds_and_says_which_could_not_run():
    t = gpu_tables(fake_record())
    header, rows = t["times"]
    assert header == ["N", "sdpa_flash", "sdpa_cudnn", "linear", "momentum", "fla_chunk_linear"]
    assert rows == [["1K", "0.4", "0.3", "0.55", "0.66", "0.5"],
                    ["32K", "250", "1234", "7.04", "8.8", "unavailable"]]
    assert t["unavailable"] == ["fla_chunk_linear: OutOfMemoryError: CUDA out of memory"]
    assert t["device"] == "NVIDIA H200" and t["bandwidth"].startswith("4.30 TB/s (table")


def test_the_ratio_table_has_ours_over_the_bound_and_the_targets_verdicts():
    header, rows = gpu_tables(fake_record())["ratios"]
    assert len(header) <= 6  # within the page's column
    # 0.55 / 0.011 = 50.0, 0.66 / 0.011 = 60.0; 7.04 / 0.352 = 20.0, 8.8 / 0.352 = 25.0
    assert rows == [["1K", "50.0", "60.0", "1.10 ✓", "0.55", "1.20 ✓"],
                    ["32K", "20.0", "25.0", "–", "175.30 ✓", "1.25 ✗"]]
    assert gpu_tables(fake_record())["targets"] == ["linear ÷ fla time ≤ 1.2, at 1K–4K",
                                                   "cuDNN SDPA ÷ linear time ≥ 3.0, at 32K",
                                                   "momentum ÷ linear time ≤ 1.2, every length"]


def test_a_cpu_record_or_an_old_one_is_refused_by_name():
    for device in ("cpu", None):
        with pytest.raises(ValueError, match="CUDA record"):
            gpu_tables({"device": device, "metrics": {}})
    old = fake_record()
    del old["metrics"]["targets"]
    with pytest.raises(ValueError, match="metrics.targets"):
        gpu_tables(old)


def test_the_gpu_records_are_every_attention_record_but_the_cpus(tmp_path):
    assert gpu_records(tmp_path) == []
    for name in ("attention-cpu.json", "attention-h200.json", "attention-h100.json", "training-cpu.json"):
        (tmp_path / name).write_text(json.dumps({}))
    assert [p.name for p in gpu_records(tmp_path)] == ["attention-h100.json", "attention-h200.json"]
    with pytest.raises(ValueError, match="bench"):
        gpu_records(tmp_path / "nowhere")
    assert "make gpu-check" in NO_GPU_RECORD


def test_every_committed_gpu_record_renders():
    """What the page shows of each results/bench/attention-<gpu>.json: both tables, one row per length, the card
    named (the 2026-11-28 H200 record was refused while a CUDA record's device was taken to read "cuda")."""
    bench = Path(__file__).parents[1] / "results" / "bench"
    records = gpu_records(bench)
    if not records:
        pytest.skip("no GPU record committed")
    for path in records:
        record = json.loads(path.read_text())
        t = gpu_tables(record)
        assert t["device"] == record["device_detail"] != "cpu"
        assert [r[0] for r in t["times"][1]] == [f"{n // 1024}K" for n in record["config"]["lengths"]]
        assert len(t["ratios"][1]) == len(record["metrics"]["ratios"]) and t["targets"]


# The records made before every row had its definition, by name and date: a record made again is checked whole.
BEFORE_DEFINITIONS = {"attention-cpu.json": "2026-11-26T10:16:57+00:00",
                      "attention-h200.json": "2026-11-28T06:01:48+00:00"}


def test_every_attention_record_says_what_each_of_its_rows_ran():
    """A ratio means nothing without what its rows ran (issue 50, item 5; issue 52, item 5): each row of a
    committed record, its prefill's included, has its definition in ``config.definitions``; the two records made
    before the benchmark wrote them all (``BEFORE_DEFINITIONS``) must still define their fla rows."""
    import json
    from pathlib import Path

    records = sorted((Path(__file__).parent.parent / "results" / "bench").glob("attention-*.json"))
    assert records
    for path in records:
        record = json.loads(path.read_text())
        metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
        ran = {row["method"] for row in [*metrics.get("rows", []), *metrics.get("prefill", [])]}
        if BEFORE_DEFINITIONS.get(path.name) == record["date"]:
            ran = {m for m in ran if m.startswith("fla_")}
        definitions = record["config"].get("definitions", {})
        assert ran <= set(definitions), f"{path.name}: no definition of {sorted(ran - set(definitions))}"
