"""Reading the seeds of a recorded comparison and summarising them (the reproduction pages' spread)."""
import json
import math

import pytest

from lra_kit.results import seed_records, spread, standard_error, steps_to_loss


def _write(folder, name, seed):
    (folder / name).write_text(json.dumps({"seed": seed, "metrics": {}}))


def test_seed_records_finds_every_seed_in_order(tmp_path):
    _write(tmp_path, "copy-linear-cpu-20k-seed2.json", 2)
    _write(tmp_path, "copy-linear-cpu-20k.json", 0)
    _write(tmp_path, "copy-linear-cpu-20k-seed1.json", 1)
    _write(tmp_path, "copy-linear-cpu-20k-extra.json", 7)        # another run's name: not a seed of this one
    _write(tmp_path, "copy-linear+momentum-cpu-20k.json", 0)     # another variant
    assert [r["seed"] for r in seed_records(str(tmp_path), "copy-linear-cpu-20k")] == [0, 1, 2]
    assert seed_records(str(tmp_path), "copy-softmax-cpu-20k") == []


def test_seed_records_refuses_a_file_whose_name_lies(tmp_path):
    _write(tmp_path, "copy-linear-cpu-20k-seed1.json", 0)
    with pytest.raises(ValueError, match="named for seed 1 but holds seed 0"):
        seed_records(str(tmp_path), "copy-linear-cpu-20k")


def test_spread_and_missed_values():
    s = spread([3, None, 1, 2])
    assert (s["mean"], s["min"], s["max"], s["n"], s["missed"]) == (2.0, 1.0, 3.0, 4, 1)
    assert math.isnan(spread([None])["mean"])
    with pytest.raises(ValueError):
        spread([])


def test_steps_to_loss_uses_the_running_mean():
    curve = [{"step": 10 * (i + 1), "loss": loss} for i, loss in enumerate([4.0, 1.0, 1.0, 0.1, 0.1])]
    assert steps_to_loss(curve, 1.0, width=1) == 20
    assert steps_to_loss(curve, 1.0, width=3) == 40     # (1 + 1 + 0.1) / 3 = 0.7 at step 40; 2.0 at step 30
    assert steps_to_loss(curve, 0.01, width=1) is None


def test_standard_error_of_an_accuracy():
    # one class of a balanced test set of 10,000: half a point; a perfect model has no test-set noise
    assert standard_error(0.5, 10_000) == pytest.approx(0.005)
    assert standard_error(0.364, 2_000) == pytest.approx(0.01076, abs=1e-5)
    assert standard_error(1.0, 100) == 0.0
    with pytest.raises(ValueError, match="p must be an accuracy"):
        standard_error(36.4, 2_000)  # points, not a fraction
    with pytest.raises(ValueError, match="n must be a count"):
        standard_error(0.5, 0)
