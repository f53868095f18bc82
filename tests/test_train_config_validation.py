"""Every config value is checked when the config is built: the error names the key, the value and what is allowed."""
from __future__ import annotations

import math

import pytest

from lra_kit.attention import attention_names, attention_spec
from lra_kit.data import task_names, task_spec
from lra_kit.errors import ConfigError
from lra_kit.train.configs import LM_TASKS, SMALL, TASKS, apply_overrides, from_dict, get_config, merge_dict, validate
from lra_kit.train.trainer import Trainer

BAD_OVERRIDES = [  # (override, words the message must contain)
    ("data.batch_size=-4", ["data.batch_size", "-4", "positive integer"]),
    ("data.batch_size=0", ["data.batch_size", "0", "positive integer"]),
    ("data.eval_batch_size=0", ["data.eval_batch_size", "positive integer"]),
    ("data.num_workers=-1", ["data.num_workers", ">= 0"]),
    ("train.eval_every=0", ["train.eval_every", "positive integer"]),
    ("train.log_every=0", ["train.log_every", "positive integer"]),
    ("train.accumulate=0", ["train.accumulate", "positive integer"]),
    ("train.checkpoint_every=0", ["train.checkpoint_every", "positive integer"]),
    ("train.eval_batches=-2", ["train.eval_batches", "positive integer"]),
    ("train.steps=abc", ["train.steps", "'abc'", "an integer"]),
    ("train.steps=2.5", ["train.steps", "2.5", "an integer", "without a decimal point"]),
    ("train.steps=True", ["train.steps", "True", "an integer"]),
    ("train.seed=-1", ["train.seed", ">= 0"]),
    ("train.seed=4294967296", ["train.seed", "4294967295"]),
    ("train.amp=maybe", ["train.amp", "true or false"]),
    ("optim.lr=nan", ["optim.lr", "'nan'", "finite number"]),
    ("optim.lr=0", ["optim.lr", "> 0"]),
    ("optim.lr=-1e-3", ["optim.lr", "> 0"]),
    ("optim.eps=0", ["optim.eps", "> 0"]),
    ("optim.weight_decay=-0.1", ["optim.weight_decay", ">= 0"]),
    ("optim.betas=[0.9]", ["optim.betas", "two numbers in [0, 1)"]),
    ("optim.betas=[0.9, 1.5]", ["optim.betas", "1.5"]),
    ("optim.final_ratio=2", ["optim.final_ratio", "[0, 1]"]),
    ("optim.decay_steps=[0]", ["optim.decay_steps", "positive integers"]),
    ("optim.clip_grad_norm=-1", ["optim.clip_grad_norm", "> 0"]),
    ("optim.schedule=cosine", ["optim.schedule", "'cosine'", "inverse_sqrt"]),
    ("optim.name=sgd", ["optim.name", "'sgd'", "radam"]),
    ("model.layers=0", ["model.layers", "positive"]),
    ("model.dropout=abc", ["model.dropout", "'abc'", "finite number"]),
    ("model.norm=sandwich", ["model.norm", "sandwich"]),
    ("model=3", ["model is a section"]),
    ("task=text", ["task", "--task"]),
    ("model.nlayers=3", ["unknown config key", "model.nlayers"]),
    ("model.layers", ["section.key=value"]),
    ("train.accumulate=3", ["data.batch_size=8", "train.accumulate=3", "divisible"]),
]


@pytest.mark.parametrize("override,words", BAD_OVERRIDES, ids=[o for o, _ in BAD_OVERRIDES])
def test_bad_values_are_refused_when_the_config_is_built(override, words):
    cfg = get_config("listops", "linear", "smoke")
    with pytest.raises(ConfigError) as info:
        apply_overrides(cfg, [override])
    for word in words:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize("section,key,value", [
    ("optim", "lr", math.nan), ("optim", "lr", math.inf), ("train", "steps", 1e4), ("data", "batch_size", "32"),
    ("train", "eval_batches", 0),
])
def test_bad_values_in_a_config_file_are_refused(section, key, value):
    cfg = get_config("copy", "linear", "smoke")
    with pytest.raises(ConfigError, match=f"{section}.{key} must be"):
        merge_dict(cfg, {section: {key: value}})


def test_a_saved_config_is_checked_when_it_is_rebuilt():
    saved = get_config("copy", "linear", "smoke").to_dict()
    saved["train"]["log_every"] = 0
    with pytest.raises(ConfigError, match="train.log_every must be a positive integer, got 0"):
        from_dict(saved)
    with pytest.raises(ConfigError, match="task, attention and scale"):
        from_dict({"model": {}})


def test_a_config_changed_in_code_is_checked_by_the_trainer_before_any_data():
    cfg = get_config("listops", "linear", "smoke")
    cfg.data.batch_size = 0  # datasets=None: reaching data.load would be a different error
    with pytest.raises(ConfigError, match="data.batch_size must be a positive integer, got 0"):
        Trainer(cfg, "/nonexistent", progress=False)


def test_numbers_are_converted_only_where_exact():
    cfg = apply_overrides(get_config("listops", "linear", "smoke"), ["optim.lr=1", "optim.decay_steps=5"])
    assert cfg.optim.lr == 1.0 and isinstance(cfg.optim.lr, float) and cfg.optim.decay_steps == (5,)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("scale", ["smoke", "book", "paper"])
def test_every_shipped_config_validates_and_uses_per_token_adaptive_norms(task, scale):
    for attention in attention_names():
        if task in LM_TASKS and not attention_spec(attention).causal:  # a language model needs a causal form
            with pytest.raises(ConfigError, match=f"{attention} has no causal form"):
                get_config(task, attention, scale)
            continue
        cfg = validate(get_config(task, attention, scale))
        assert cfg.model.adaptive_over == "token"  # one reading of eq. 18 everywhere; "sample" is an option


def test_small_has_a_row_for_each_scale_a_task_has_and_no_other():
    """Which scales a task has is TaskSpec.scales; SMALL gives the values of each below paper, keyed by suite."""
    needed = {(task_spec(task).suite, scale) for task in TASKS for scale in task_spec(task).scales if scale != "paper"}
    assert set(SMALL) == needed


def test_the_small_scales_are_one_table():
    """Each (family, scale) row is applied as written: the table is the single source of the shrunk values."""
    for (family, scale), row in SMALL.items():
        task = task_names(suite=family)[0]
        cfg = get_config(task, "linear", scale).to_dict()
        for key, value in row.items():
            section, name = key.split(".")
            assert cfg[section][name] == value, (family, scale, key)


def test_a_preset_is_checked_against_the_presets_and_the_schema_holds_no_paper_table():
    import ast
    from pathlib import Path

    from lra_kit.train import config_schema

    cfg = get_config("copy", "linear", "smoke")
    cfg.preset = "gpu-1h"
    with pytest.raises(ConfigError, match="unknown preset 'gpu-1h'; valid presets: .*cpu-20k"):
        validate(cfg)
    tree = ast.parse(Path(config_schema.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "lra_kit.train.paper_configs" not in imported and "lra_kit.train.configs" not in imported
