"""``lra-kit bench steps``: seconds per training step of the budget plan's runs, through the trainer."""
import json

import pytest

from lra_kit.bench import steps
from lra_kit.cli import main


def test_rows_are_parsed_and_bad_rows_named():
    assert steps.parse_row("copy:cpu-20k:momentum+adaptive") == ("copy", "cpu-20k", "momentum", "adaptive")
    assert steps.parse_row("mnist:cpu-12k:linear") == ("mnist", "cpu-12k", "linear", "residual")
    with pytest.raises(ValueError, match="TASK:PRESET:ATTENTION"):
        steps.parse_row("copy:linear")
    with pytest.raises(ValueError, match="steps must be"):
        steps.run(["copy:cpu-20k:linear"], steps=0)


def test_a_row_times_real_training_steps():
    result = steps.run(["copy:cpu-20k:linear"], steps=3, warmup=1, progress=lambda line: None)
    (row,) = result["rows"]
    assert row["batch"] == 32 and row["steps"] == 3
    assert 0 < row["min_s"] <= row["median_s"] <= row["max_s"]


def test_a_row_without_its_data_is_skipped_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path))
    (row,) = steps.run(["mnist:cpu-12k:linear"], steps=1, warmup=0, progress=lambda line: None)["rows"]
    assert row["skipped"].startswith("data missing") and "median_s" not in row


def test_cli_writes_the_record(tmp_path, capsys):
    out = tmp_path / "steps.json"
    assert main(["bench", "steps", "--rows", "copy:cpu-20k:softmax", "--steps", "2", "--warmup", "1",
                 "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["experiment"] == "bench/steps" and record["metrics"]["rows"][0]["row"] == "copy:cpu-20k:softmax"
    assert "s/step" in capsys.readouterr().out
