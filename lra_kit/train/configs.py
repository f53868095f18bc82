"""Experiment configurations: every task × attention × scale of the three papers.

``get_config(task, attention, scale, connection="residual", preset=None)`` returns an
:class:`ExperimentConfig` (plain dataclasses), checked by :func:`validate`. ``paper`` is the papers'
setting, built here from the tables of :mod:`lra_kit.train.paper_configs` (plain data, with their
sources); ``smoke``, ``book`` and ``cpu`` shrink it by the table ``SMALL`` (docs/design.md §3
Scales), presets by ``PRESETS``; the dataset size comes from ``lra_kit.data.load(..., scale=...)``.
The dataclasses, their checks and overrides are :mod:`lra_kit.train.config_schema`. The tasks are
the rows of :data:`lra_kit.data.TASK_TABLE`, the attentions those of
:data:`lra_kit.attention.ATTENTIONS`.
"""
from __future__ import annotations

import copy

from lra_kit.attention import ATTENTIONS, attention_spec
from lra_kit.data.registry import LM_TASKS, LRA_TASKS, TASKS, task_names_at, task_spec
from lra_kit.errors import ConfigError
from lra_kit.models.config import CONNECTIONS, ModelConfig
from lra_kit.scales import SCALES, get_scale
from lra_kit.train.config_schema import (
    CHOSEN_BY_FLAGS,
    DataConfig,
    ExperimentConfig,
    OptimConfig,
    TrainConfig,
    apply_overrides,
    check_choice,
    check_values,
    format_config,
    load_config_file,
    merge_dict,
    set_value,
    with_defaults,
)
from lra_kit.train.paper_configs import (
    ATTENTION_OPTIONS,
    TASK_ATTENTION_OPTIONS,
    CIFAR10,
    CONNECTION,
    COPY,
    LUNA_LRA,
    LUNA_P_LENGTH,
    MNIST,
    MOMENTUM_LRA,
    PRESETS,
    SMALL,
)


def validate(cfg: ExperimentConfig) -> ExperimentConfig:
    """Check every value of ``cfg``: its preset, if any, is a key of ``PRESETS``, and the rest as
    ``lra_kit.train.config_schema.check_values`` checks it; raise ``ConfigError`` naming the first bad key."""
    if cfg.preset is not None:
        check_choice("preset", cfg.preset, tuple(PRESETS))
    return check_values(cfg)


def _apply_preset(cfg: ExperimentConfig, preset: str) -> None:
    """Put the values of ``PRESETS[preset]`` (then its row for the task) on ``cfg``."""
    spec = PRESETS[preset]
    for key, value in {**spec["values"], **spec["per_task"].get(cfg.task, {})}.items():
        set_value(cfg, key, copy.deepcopy(value))
    cfg.preset = preset
    cfg.source += f" — preset {preset!r}: {spec['shrunk']}"


def _attention_options(task: str, attention: str) -> dict:
    options = attention_spec(attention).options()  # the table's defaults; an unknown name is an error
    if attention == "momentum":
        row = CONNECTION[task]
        options.update(beta=row["beta"], gamma=row["gamma"])
    options.update(ATTENTION_OPTIONS.get(attention, {}))
    options.update(TASK_ATTENTION_OPTIONS.get(attention, {}).get(task, {}))
    return options


def _connection(model: ModelConfig, task: str, connection: str) -> None:
    """Table 1's β̃, γ̃ for the connection asked for."""
    model.connection = connection
    row = CONNECTION[task]
    if connection == "momentum":
        if "conn_beta" not in row:
            have = [t for t, r in CONNECTION.items() if "conn_beta" in r]
            raise ConfigError(f"Nguyen et al. Table 1 gives no momentum-connection β̃ for task {task!r} (only for "
                              f"{', '.join(have)}); use --connection adaptive, or set model.connection_beta and "
                              "model.connection_gamma explicitly with --set")
        model.connection_beta, model.connection_gamma = row["conn_beta"], row["conn_gamma"]
    elif connection == "adaptive":
        model.connection_gamma = row["adaptive_gamma"]


def _lra_config(task: str, attention: str, scale: str) -> ExperimentConfig:
    if attention == "luna":  # the Luna paper's own LRA models; every other attention runs the Momentum paper's
        t = LUNA_LRA[task]
        model = ModelConfig(attention="luna", attention_options=_attention_options(task, "luna"), layers=t["layers"],
                            d_model=t["d"], n_heads=t["heads"], d_ff=t["ff"], dropout=t["dropout"],
                            attention_dropout=t["attn_dropout"], norm="post", final_norm=False, embed_norm=True,
                            embed_scale=True, position="sinusoidal", pooling=t["pooling"], luna_length=LUNA_P_LENGTH)
        optim = OptimConfig(name="adam", lr=t["lr"], betas=(0.9, 0.98), eps=1e-8, weight_decay=t["wd"],
                            schedule="inverse_sqrt", warmup_steps=t["warmup"], warmup_start=1e-7)
        e = MOMENTUM_LRA[task]  # Luna's evaluation cadence is not published: use the LRA code's
        train = TrainConfig(steps=t["steps"], eval_every=e["eval_every"], eval_batches=e["eval_batches"], amp=True)
        data = DataConfig(batch_size=t["batch"])
        source = "Luna LRA: fairseq-apollo examples/luna/README.lra.md (docs/reference-implementations.md §8)"
    else:
        t = MOMENTUM_LRA[task]
        # adaptive_over: the per-token norms of eq. 18, the one reading used everywhere (docs/design.md §6.4).
        model = ModelConfig(attention=attention, attention_options=_attention_options(task, attention), layers=2,
                            d_model=64, n_heads=2, d_ff=128, dropout=0.1, attention_dropout=0.1, norm="pre",
                            position="learned", pooling="mean", adaptive_over="token")
        # OneCycleLR(linear) as in run_tasks.py: from lr/25 up to lr, then down to lr/(25·10⁴).
        optim = OptimConfig(name="adamw", lr=1e-4, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, schedule="linear",
                            warmup_steps=t["warmup"], warmup_start=1 / 25, final_ratio=1 / 25e4)
        train = TrainConfig(steps=t["steps"], eval_every=t["eval_every"], eval_batches=t["eval_batches"],
                            accumulate=max(t["batch"] // t["micro"], 1), amp=True)
        data = DataConfig(batch_size=t["batch"])
        source = ("Momentum Transformer LRA = Nyströmformer lra_config.py (docs/reference-implementations.md §8), "
                  "β/γ from Nguyen et al. Table 1")
    return ExperimentConfig(task, attention, scale, model=model, optim=optim, data=data, train=train, source=source)


def _copy_config(task: str, attention: str, scale: str) -> ExperimentConfig:
    d = COPY["heads"] * COPY["head_dim"]
    model = ModelConfig(attention=attention, attention_options=_attention_options(task, attention),
                        layers=COPY["layers"], d_model=d, n_heads=COPY["heads"], d_ff=4 * d, dropout=COPY["dropout"],
                        attention_dropout=COPY["dropout"], activation="relu", norm="post", final_norm=True,
                        position="sinusoidal_concat", luna_length=16)
    optim = OptimConfig(name="radam", lr=COPY["lr"], betas=(0.9, 0.999), eps=1e-8, weight_decay=COPY["weight_decay"],
                        schedule="step", decay_steps=(COPY["decay_at"],), decay_factor=COPY["lr_after"] / COPY["lr"])
    train = TrainConfig(steps=COPY["steps"], eval_every=COPY["eval_every"], eval_batches=COPY["eval_batches"],
                        log_every=COPY["log_every"])
    data = DataConfig(batch_size=COPY["batch"])
    source = "copy task: Katharopoulos et al. §4.1, Nguyen et al. §4.1 + causal-copy code defaults"
    return ExperimentConfig(task, attention, scale, model=model, optim=optim, data=data, train=train, source=source)


def _pixel_config(task: str, attention: str, scale: str) -> ExperimentConfig:
    t = MNIST if task == "mnist" else CIFAR10
    steps = t["epochs"] * t["train_size"] // t["batch"] if task == "mnist" else t["iterations"]
    model = ModelConfig(attention=attention, attention_options=_attention_options(task, attention), layers=t["layers"],
                        d_model=t["d"], n_heads=t["heads"], d_ff=t["ff"], dropout=0.1, attention_dropout=0.1,
                        activation="relu", norm="post", position="sinusoidal_concat", output="logistic_mixture",
                        mixture_components=10, luna_length=16)
    optim = OptimConfig(name="radam", lr=t["lr"], eps=1e-8, schedule="constant")
    train = TrainConfig(steps=steps, eval_every=5000, eval_batches=100, log_every=100)
    data = DataConfig(batch_size=t["batch"])
    return ExperimentConfig(task, attention, scale, model=model, optim=optim, data=data, train=train,
                            source=f"{task} generation: Katharopoulos et al. §4.2, Nguyen et al. §4.2")


# The papers' recipe of each suite of tasks (TaskSpec.suite): the LRA runs, the copy task, image generation.
_RECIPES = {"lra": _lra_config, "copy": _copy_config, "pixels": _pixel_config}


def _shrink(cfg: ExperimentConfig) -> None:
    """Apply the row of ``SMALL`` for the config's suite and scale.

    Which scales a task has is ``TaskSpec.scales`` (the one answer ``lra_kit.data.load`` gives too); ``SMALL``
    holds a row for each of them below ``paper`` (tests/test_train_config_validation.py).
    """
    spec = task_spec(cfg.task)
    if cfg.scale not in spec.scales:
        have = task_names_at(cfg.scale)
        raise ConfigError(f"scale {cfg.scale!r} is defined only for the tasks {', '.join(have)}, not {cfg.task!r}")
    for key, value in SMALL[(spec.suite, cfg.scale)].items():
        set_value(cfg, key, copy.deepcopy(value))
    cfg.source += f" — shrunk to the {cfg.scale} scale"


def get_config(task: str, attention: str, scale: str | None = None, connection: str = "residual",
               preset: str | None = None) -> ExperimentConfig:
    """The configuration of ``task`` with ``attention`` at ``scale`` (``paper`` = the papers' setting).

    ``preset`` names a reduced scale of ``PRESETS`` (e.g. ``"lra-cpu"``); it fixes the scale of the
    data to its ``base`` (a different explicit ``scale`` is an error).
    """
    check_choice("task", task, TASKS)
    check_choice("attention", attention, tuple(sorted(ATTENTIONS)))
    check_choice("connection", connection, CONNECTIONS)
    if preset is not None:
        check_choice("preset", preset, tuple(PRESETS))
        base, tasks = PRESETS[preset]["base"], PRESETS[preset]["tasks"]
        if task not in tasks:
            raise ConfigError(f"preset {preset!r} is for the tasks {', '.join(tasks)}, not {task!r}")
        if scale is not None and scale != base:
            raise ConfigError(f"preset {preset!r} runs on the {base!r} scale's data; leave scale unset or {base!r}, "
                              f"got {scale!r}")
        scale = base
    scale = get_scale(scale)
    if task in LM_TASKS and not attention_spec(attention).causal:
        causal = ", ".join(name for name, row in ATTENTIONS.items() if row.causal)
        raise ConfigError(f"{task} trains a causal language model, and {attention} has no causal form; "
                          f"attentions with one: {causal}")
    cfg = _RECIPES[task_spec(task).suite](task, attention, scale)
    if scale != "paper":
        _shrink(cfg)
    if connection != "residual":
        if not attention_spec(attention).momentum_connection:
            raise ConfigError(f"{attention.capitalize()} layers use the residual connection; connection must be "
                              f"'residual' with {attention}")
        _connection(cfg.model, task, connection)
        cfg.connection = connection
    if preset is not None:
        _apply_preset(cfg, preset)
    if attention_spec(attention).post_norm:
        cfg.model.norm = "post"  # e.g. Luna layers are post-LN (Luna eq. 6) at every scale and preset
    return validate(cfg)


def from_dict(values: dict) -> ExperimentConfig:
    """Rebuild a saved config (``config.json`` of a run directory)."""
    if not isinstance(values, dict) or any(k not in values for k in ("task", "attention", "scale")):
        raise ConfigError("a saved config must be a mapping with task, attention and scale")
    cfg = get_config(values["task"], values["attention"], values["scale"], values.get("connection", "residual"),
                     values.get("preset"))
    return merge_dict(cfg, {k: v for k, v in values.items() if k not in CHOSEN_BY_FLAGS})


__all__ = ["CHOSEN_BY_FLAGS", "CIFAR10", "CONNECTION", "COPY", "DataConfig", "ExperimentConfig", "LM_TASKS",
           "LRA_TASKS", "LUNA_LRA", "MNIST", "MOMENTUM_LRA", "OptimConfig", "PRESETS", "SCALES", "SMALL", "TASKS",
           "TrainConfig", "apply_overrides", "format_config", "from_dict", "get_config", "load_config_file",
           "merge_dict", "set_value", "validate", "with_defaults"]
