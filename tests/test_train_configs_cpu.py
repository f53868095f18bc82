"""The named reduced scale ``cpu`` of the recorded CPU runs: the papers' data, a smaller model, and nothing
else changed but what lra_kit.train.paper_configs.SMALL lists."""
from __future__ import annotations

import pytest

from lra_kit import data
from lra_kit.data import task_names, task_spec
from lra_kit.data.splits import scale_size
from lra_kit.errors import ConfigError
from lra_kit.train.configs import PRESETS, SMALL, get_config


def test_copy_cpu_keeps_the_task_and_shrinks_the_model():
    paper, cpu = get_config("copy", "momentum", "paper", "adaptive"), get_config("copy", "momentum", "cpu", "adaptive")
    assert (cpu.model.layers, cpu.model.d_model, cpu.data.batch_size, cpu.train.steps) == (2, 64, 32, 2000)
    assert cpu.train.steps >= 2000  # enough steps for a convergence curve
    assert cpu.optim.name == paper.optim.name == "radam"
    assert cpu.model.attention_options == paper.model.attention_options  # Nguyen et al. Table 1 β, γ
    assert (cpu.model.connection, cpu.model.connection_gamma) == (paper.model.connection, paper.model.connection_gamma)
    shrunk = set(SMALL[("copy", "cpu")])
    assert "data.options" not in shrunk  # the sequence length stays the paper's


def test_copy_cpu_reads_the_paper_data():
    a, b = data.load("copy", "val", scale="cpu"), data.load("copy", "val", scale="paper")
    assert len(a) == len(b) and a.max_length == b.max_length == 128 and a.word_lengths == b.word_lengths
    assert all((a[i] == b[i]).all() for i in range(20))


def test_mnist_cpu_keeps_batch_and_data_sizes():
    cfg = get_config("mnist", "linear", "cpu")
    assert cfg.data.batch_size == get_config("mnist", "linear", "paper").data.batch_size == 10
    assert cfg.model.output == "softmax" and cfg.model.layers == 2
    assert scale_size("cpu", "train") is None and scale_size("cpu", "test") == 1000


@pytest.mark.parametrize("task", [task for task in task_names() if "cpu" not in task_spec(task).scales])
def test_cpu_scale_is_refused_where_it_is_not_defined(task):
    with pytest.raises(ConfigError, match="cpu"):
        get_config(task, "linear", "cpu")
    with pytest.raises(ValueError, match="cpu"):
        data.load(task, "train", scale="cpu")


# The presets of the long recorded runs (those built on the cpu scale), with the steps each trains for.
LONG_STEPS = {"cpu-20k": 20_000, "cpu-12k": 12_000}


@pytest.mark.parametrize("preset, task", [(preset, task) for preset, spec in PRESETS.items() if spec["base"] == "cpu"
                                          for task in spec["tasks"]])
def test_long_presets_change_only_the_budget(preset, task):
    """The long recorded runs (docs/budget.md) are the cpu scale's recipe with more steps: the model, the data,
    the optimizer and Table 1's β/γ stay those of the cpu scale."""
    steps = LONG_STEPS[preset]
    base, long = get_config(task, "momentum", "cpu", "adaptive"), get_config(task, "momentum", None, "adaptive", preset)
    assert long.train.steps == steps and long.scale == "cpu" and long.scale_name == preset
    assert long.model == base.model and long.data == base.data
    assert (long.optim.name, long.optim.lr) == (base.optim.name, base.optim.lr)
    if task == "copy":  # the drop of the learning rate stays at three quarters of the run
        assert long.optim.decay_steps == (15_000,) and base.optim.decay_steps == (1500,)


def test_a_seed_other_than_0_names_the_record():
    cfg = get_config("copy", "linear", None, preset="cpu-20k")
    assert cfg.name == "copy-linear-cpu-20k"
    cfg.train.seed = 2
    assert cfg.name == "copy-linear-cpu-20k-seed2"
