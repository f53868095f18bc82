"""The ``train.compile`` option: a torch.compile'd model trains (CPU inductor; about a minute)."""
import json
import math
import os

import pytest

from lra_kit.cli import main


@pytest.mark.slow
def test_compiled_training_runs_and_records_results(tmp_path):
    run_dir = str(tmp_path / "compiled")
    args = ["train", "--task", "copy", "--attention", "momentum", "--scale", "smoke", "--out", run_dir, "--no-progress",
            "--set", "train.compile=True", "--set", "train.steps=4", "--set", "train.eval_every=2"]
    assert main(args) == 0
    with open(os.path.join(run_dir, "results.json")) as f:
        results = json.load(f)
    assert results["config"]["train"]["compile"] is True and results["steps"] == 4
    assert math.isfinite(results["metrics"]["test"]["loss"])
