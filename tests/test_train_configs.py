"""Configurations as data: the papers' settings at ``paper`` scale, overrides, schedules."""
from __future__ import annotations

import json

import pytest

from lra_kit.attention import attention_names, attention_spec
from lra_kit.train.configs import (
    LM_TASKS,
    LRA_TASKS, TASKS, apply_overrides, format_config, from_dict, get_config, merge_dict,
)
from lra_kit.train.schedules import lr_factor


def test_copy_task_paper_setting():
    """Katharopoulos et al. §4.1 / Nguyen et al. §4.1 and Table 1."""
    cfg = get_config("copy", "momentum", "paper", "momentum")
    m, o = cfg.model, cfg.optim
    assert (m.layers, m.n_heads, m.d_model // m.n_heads, m.d_ff) == (4, 8, 32, 1024)
    assert cfg.data.batch_size == 64 and cfg.train.steps == 10_000
    assert o.name == "radam" and o.lr == 1e-3 and o.schedule == "step" and tuple(o.decay_steps) == (3000,)
    assert o.lr * o.decay_factor == pytest.approx(1e-4)
    assert m.attention_options == {"beta": 0.1, "gamma": 0.6}
    assert (m.connection, m.connection_beta, m.connection_gamma) == ("momentum", 0.99, 0.99)
    adaptive = get_config("copy", "momentum", "paper", "adaptive").model
    assert (adaptive.connection, adaptive.connection_gamma, adaptive.adaptive_over) == ("adaptive", 0.99, "token")


def test_mnist_paper_setting():
    m = get_config("mnist", "momentum", "paper").model
    assert (m.layers, m.n_heads, m.d_model, m.d_ff) == (8, 8, 256, 1024)
    assert m.output == "logistic_mixture" and m.mixture_components == 10
    assert m.attention_options == {"beta": 0.6, "gamma": 0.9}
    cfg = get_config("mnist", "linear", "paper")
    assert cfg.optim.name == "radam" and cfg.optim.lr == 1e-4 and cfg.data.batch_size == 10


# Per LRA task: β, γ and the adaptive connection's γ of the Momentum paper's Table 1; batch, warm-up steps and
# steps of Nyströmformer lra_config.py.
MOMENTUM_LRA_PAPER = {
    "listops": (0.1, 0.6, 0.4, 32, 1000, 5000),
    "text": (0.6, 2.0, 0.001, 32, 8000, 20000),
    "retrieval": (0.6, 1.0, 0.5, 32, 800, 30000),
    "image": (0.9, 0.9, 0.001, 256, 175, 35000),
    "pathfinder": (0.3, 0.1, 0.8, 256, 312, 62400),
}


@pytest.mark.parametrize("task", LRA_TASKS)
def test_momentum_lra_paper_setting(task):
    """Nyströmformer lra_config.py (docs/reference-implementations.md §8) with the Momentum paper's Table 1."""
    beta, gamma, adaptive_gamma, batch, warmup, steps = MOMENTUM_LRA_PAPER[task]
    cfg = get_config(task, "momentum", "paper", "adaptive")
    m = cfg.model
    assert (m.layers, m.d_model, m.n_heads, m.d_ff, m.norm, m.pooling) == (2, 64, 2, 128, "pre", "mean")
    assert m.attention_options == {"beta": beta, "gamma": gamma} and m.connection_gamma == adaptive_gamma
    assert (cfg.data.batch_size, cfg.optim.warmup_steps, cfg.train.steps, cfg.optim.lr) == (batch, warmup, steps, 1e-4)
    assert cfg.optim.name == "adamw" and cfg.optim.schedule == "linear"


def test_luna_lra_paper_setting():
    cfg = get_config("text", "luna", "paper")
    m = cfg.model
    expected = (4, 256, 1024, 4, "post", "cls", 16)
    assert (m.layers, m.d_model, m.d_ff, m.n_heads, m.norm, m.pooling, m.luna_length) == expected
    assert cfg.optim.schedule == "inverse_sqrt" and cfg.optim.lr == 5e-5 and cfg.optim.warmup_steps == 8000
    assert m.attention_options["tie_kv"] is False
    assert get_config("pathfinder", "luna", "paper").model.pooling == "mean"


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("scale", ["smoke", "book", "paper"])
def test_every_config_builds_and_round_trips(task, scale):
    for attention in attention_names():
        if task in LM_TASKS and not attention_spec(attention).causal:
            continue  # refused with a clear error: tests/test_train_config_validation.py
        cfg = get_config(task, attention, scale)
        again = from_dict(json.loads(format_config(cfg)))
        assert json.loads(format_config(again)) == json.loads(format_config(cfg))


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="valid tasks: listops, text, retrieval"):
        get_config("imdb", "linear")
    with pytest.raises(ValueError, match=f"valid attentions: {', '.join(sorted(attention_names()))}"):
        get_config("copy", "nystrom")
    with pytest.raises(ValueError, match="valid connections: residual, momentum, adaptive"):
        get_config("copy", "linear", connection="nesterov")
    with pytest.raises(ValueError, match="Table 1 gives no momentum-connection"):
        get_config("listops", "momentum", connection="momentum")


def test_overrides_and_partial_config_files():
    cfg = get_config("listops", "momentum", "smoke")
    apply_overrides(cfg, ["model.layers=4", "optim.lr=3e-4", "model.attention_options.beta=0.5",
                          "optim.decay_steps=[10, 20]", "train.amp=true", "model.connection=adaptive"])
    assert cfg.model.layers == 4 and cfg.optim.lr == 3e-4 and cfg.model.attention_options["beta"] == 0.5
    assert cfg.optim.decay_steps == (10, 20) and cfg.train.amp is True and cfg.model.connection == "adaptive"
    merge_dict(cfg, {"model": {"d_model": 48}, "train": {"steps": 7}})
    assert cfg.model.d_model == 48 and cfg.train.steps == 7 and cfg.model.layers == 4
    with pytest.raises(ValueError, match="unknown config key"):
        apply_overrides(cfg, ["model.nlayers=3"])
    with pytest.raises(ValueError, match="section.key=value"):
        apply_overrides(cfg, ["model.layers"])
    with pytest.raises(ValueError, match="norm must be one of"):
        apply_overrides(cfg, ["model.norm=sandwich"])


def test_schedules():
    linear = lr_factor("linear", lr=1e-4, steps=100, warmup_steps=10, warmup_start=1 / 25, final_ratio=0.0)
    assert linear(0) == pytest.approx(1 / 25) and linear(10) == pytest.approx(1.0)
    assert linear(55) == pytest.approx(0.5) and linear(100) == pytest.approx(0.0)
    step = lr_factor("step", lr=1e-3, steps=10_000, decay_steps=(3000,), decay_factor=0.1)
    assert step(2999) == 1.0 and step(3000) == pytest.approx(0.1)
    inv = lr_factor("inverse_sqrt", lr=1e-3, steps=100, warmup_steps=4, warmup_start=1e-7)
    assert inv(0) == pytest.approx(1e-4) and inv(4) == pytest.approx(1.0) and inv(16) == pytest.approx(0.5)
    assert lr_factor("constant", lr=1, steps=5)(3) == 1.0
    with pytest.raises(ValueError, match="schedule must be one of"):
        lr_factor("cosine", lr=1, steps=5)
