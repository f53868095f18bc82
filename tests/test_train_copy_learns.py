"""The copy task actually learns on a CPU (accuracy ≫ chance = 0.1), once per mechanism.

The smoke config, shortened to words of ≤ 7 symbols (max_length 16) and trained 200 steps, about 4-6 s a run
on one thread. One run per mechanism of the layer, not per attention: linear attention is momentum attention at
β = 0 (Nguyen et al. eq. 13: the same causal product of φ(Q), φ(K), the same feature map φ = elu + 1), so the
momentum run learns through its code; its exact values are checked against oracles in
tests/test_attention_linear.py. The connections ride on the runs that take them: the adaptive momentum
connection (Nguyen et al. eq. 18) on momentum attention, the momentum connection (eq. 15) on Performer.
Measured (seed 0): softmax 0.77, momentum + adaptive 0.53, Performer + momentum connection 0.69, Luna 0.39; with
the attention's output or the connection's V̂ dropped, each stays near chance. LSH (one round, chunks of 32, so
two chunks): 0.57. An attention with no causal form (Linformer) cannot model the copy; it trains in
tests/test_train_smoke.py on the LRA tasks.
The book-scale numbers are in the book / the report.
"""
from __future__ import annotations

import pytest

from lra_kit.attention import attention_names, attention_spec
from lra_kit.data import load
from lra_kit.train.configs import apply_overrides, get_config
from lra_kit.train.trainer import Trainer

# attention -> the connection its run takes (residual: x + V̂; momentum, adaptive: Nguyen et al. eqs. 15, 18)
RUNS = {"softmax": "residual", "momentum": "adaptive", "performer": "momentum", "luna": "residual", "lsh": "residual"}
# attention -> the run whose code it computes through (see the module docstring)
COVERED_BY = {"linear": "momentum"}


@pytest.fixture(scope="module")
def copy_data():
    return {s: load("copy", s, scale="smoke", max_length=16) for s in ("train", "val", "test")}


def test_every_attention_is_run_or_computes_through_a_run():
    assert set(RUNS) | set(COVERED_BY) == {name for name in attention_names() if attention_spec(name).causal}
    assert not set(RUNS) & set(COVERED_BY) and set(COVERED_BY.values()) <= set(RUNS)


@pytest.mark.slow
@pytest.mark.parametrize("attention", list(RUNS))
def test_copy_task_learns(attention, copy_data, tmp_path):
    cfg = get_config("copy", attention, "smoke", RUNS[attention])
    apply_overrides(cfg, ["train.steps=200", "train.eval_every=200", "train.eval_batches=None",
                          "data.batch_size=32", "data.options={'max_length': 16}"])
    results = Trainer(cfg, str(tmp_path / "run"), datasets=copy_data, progress=False, log=lambda *a: None).run()
    accuracy = results["metrics"]["test"]["accuracy"]
    assert accuracy > 0.3, f"copy accuracy {accuracy:.3f} with {attention} and the {RUNS[attention]} connection " \
                           "(chance 0.1)"
