"""The attention benchmark runs end to end and writes its table with provenance (no timing asserted here)."""
import json

from lra_kit.bench.attention import BASELINE, METHODS, format_table, main
from lra_kit.cli import main as cli_main


def test_benchmark_writes_json_with_provenance(tmp_path, capsys):
    path = tmp_path / "bench.json"
    assert main(["--lengths", "64", "96", "--repeats", "1", "--heads", "2", "--dim", "8", "--json", str(path)]) == 0
    record = json.loads(path.read_text())
    for key in ("metrics", "config", "scale", "steps", "seed", "wall_s", "device", "torch", "git_commit", "date"):
        assert key in record
    rows = record["metrics"]["rows"]
    assert {(r["length"], r["method"]) for r in rows} == {(n, m) for n in (64, 96) for m in METHODS}
    for r in rows:
        assert r["median_s"] > 0
        if r["method"] in BASELINE:
            assert r["speedup_vs_sdpa"] > 0
    assert "speed" in capsys.readouterr().out


def test_cli_bench_attention(capsys):
    assert cli_main(["bench", "attention", "--lengths", "32", "--repeats", "1", "--dim", "4", "--methods", "sdpa_causal", "linear_causal"]) == 0
    out = capsys.readouterr().out
    assert "linear_causal" in out and "sdpa_causal" in out


def test_format_table_handles_missing_memory():
    row = {"length": 8, "method": "sdpa", "median_s": 1e-3, "spread_s": 0.0, "peak_bytes": None,
           "speedup_vs_sdpa": None, "memory_vs_sdpa": None, "time_vs_linear": None}
    text = format_table({"config": {"batch": 1, "heads": 1, "dim": 1, "dtype": "float32", "repeats": 1}, "rows": [row], "device": "cpu"})
    assert "sdpa" in text


def test_peak_memory_by_length_grows_with_length():
    from lra_kit.bench.attention import peak_memory_by_length
    from lra_kit.bench.measure import cpu_peak_supported

    peaks = peak_memory_by_length(["linear_causal", "linear_cumulative_states"], [256, 1024], heads=1, dim=32)
    assert set(peaks) == {"linear_causal", "linear_cumulative_states"}
    if cpu_peak_supported():
        ours, naive = peaks["linear_causal"], peaks["linear_cumulative_states"]
        assert ours[1] > ours[0] and naive[1] > naive[0]
        assert naive[1] > 4 * ours[1]  # all N states of 32 × 32 against O(N·D)
