"""The config machinery: the dataclasses of an experiment, their checks, overrides and JSON.

Papers appear nowhere here: their values are data in :mod:`lra_kit.train.paper_configs`, and
:func:`lra_kit.train.configs.get_config` builds a config from them. ``check_values`` checks every value
of a config but the name of its preset, a key of the papers' module (``lra_kit.train.configs.validate``
checks both); ``set_value``, ``apply_overrides`` and ``merge_dict`` change one (``--set``,
``--config``; never the preset, which ``get_config`` fixes); ``load_config_file`` and ``format_config``
read and print one.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import json
import math
import typing
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any

from lra_kit.attention import ATTENTIONS
from lra_kit.data.registry import TASKS
from lra_kit.errors import ConfigError
from lra_kit.models.config import CONNECTIONS, ModelConfig
from lra_kit.scales import SCALES
from lra_kit.train.optimizers import OPTIMIZERS
from lra_kit.train.schedules import SCHEDULES


@dataclass
class OptimConfig:
    name: str = "adamw"              # a key of lra_kit.train.optimizers.OPTIMIZERS
    lr: float = 1e-4
    betas: tuple = (0.9, 0.999)
    eps: float = 1e-6
    weight_decay: float = 0.0
    schedule: str = "linear"         # see lra_kit.train.schedules
    warmup_steps: int = 0
    warmup_start: float = 0.0        # lr factor at step 0 of the warmup (inverse_sqrt: absolute lr)
    final_ratio: float = 0.0         # linear decay ends at lr·final_ratio
    decay_steps: tuple = ()          # step schedule: multiply by decay_factor at each
    decay_factor: float = 0.1
    clip_grad_norm: float | None = None


@dataclass
class DataConfig:
    batch_size: int = 32             # the global batch (all ranks, all accumulation micro-batches)
    eval_batch_size: int | None = None
    options: dict = field(default_factory=dict)  # keyword options of lra_kit.data.load
    num_workers: int = 0
    bucket: int = 0                  # > 0: batches from pools of this many, sorted by length (train/batches.py)


@dataclass
class TrainConfig:
    steps: int = 100                 # optimizer updates
    eval_every: int = 50
    eval_batches: int | None = None  # dev batches per evaluation; None = the whole split
    checkpoint_every: int | None = None  # default: eval_every
    log_every: int = 10
    accumulate: int = 1              # micro-batches per update
    amp: bool = False                # bf16 autocast on CUDA
    compile: bool = False            # torch.compile the model
    seed: int = 0


@dataclass
class ExperimentConfig:
    task: str
    attention: str
    scale: str
    connection: str = "residual"
    model: ModelConfig = field(default_factory=ModelConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    source: str = ""
    preset: str | None = None        # a named reduced scale of PRESETS, on top of ``scale``'s data

    @property
    def scale_name(self) -> str:
        """The name of the scale a reader is told, which is the preset's name where there is one.

        A preset's data are those of ``scale``.
        """
        return self.preset or self.scale

    @property
    def name(self) -> str:
        """``task-attention[+connection]-scale``, then ``-seedN`` for a seed other than 0 (so that the seeds
        of one comparison are recorded side by side)."""
        suffix = "" if self.connection == "residual" else f"+{self.connection}"
        seed = f"-seed{self.train.seed}" if self.train.seed else ""
        return f"{self.task}-{self.attention_label}{suffix}-{self.scale_name}{seed}"

    @property
    def attention_label(self) -> str:
        """The attention's name in run names, with the value of the option that names its variant where it has one
        (``AttentionSpec.variant``), so LSH with 4 rounds of hashing is ``lsh-4``, as Katharopoulos et al. write
        lsh-X."""
        from lra_kit.attention import attention_spec

        variant = attention_spec(self.attention).variant
        if variant is None:
            return self.attention
        return f"{self.attention}-{self.model.attention_options.get(variant)}"

    def to_dict(self) -> dict:
        return asdict(self)


def with_defaults(saved: dict) -> dict:
    """A config dict saved before some fields existed (a checkpoint, a record), with each missing field
    at its default. A field is only ever added with a default that keeps what runs did before it
    existed (e.g. ``data.bucket = 0``, no length grouping), so the completed dict is the config that
    run had."""
    done = dict(saved)
    for f in fields(ExperimentConfig):
        if f.name in done and isinstance(done[f.name], dict) and is_dataclass(f.default_factory):
            done[f.name] = {**asdict(f.default_factory()), **done[f.name]}
    return done


def check_choice(name: str, value: str, allowed) -> None:
    """A ``ConfigError`` naming ``name`` and the allowed values where ``value`` is not one of them."""
    if value not in allowed:
        raise ConfigError(f"unknown {name} {value!r}; valid {name}s: {', '.join(allowed)}")


# ---------------------------------------------------------------------------------------------
# Validation: every value is checked when the config is built, naming the key, the value and what
# is allowed, so that a bad value never reaches the training loop (a zero batch size would spin).

POSITIVE_INTS = ("data.batch_size", "data.eval_batch_size", "train.steps", "train.eval_every", "train.eval_batches",
                 "train.checkpoint_every", "train.log_every", "train.accumulate")
NON_NEGATIVE_INTS = ("data.num_workers", "data.bucket", "optim.warmup_steps", "train.seed")
POSITIVE_FLOATS = ("optim.lr", "optim.eps", "optim.decay_factor", "optim.clip_grad_norm")
NON_NEGATIVE_FLOATS = ("optim.weight_decay", "optim.warmup_start")
CHOICES = {"optim.name": tuple(OPTIMIZERS), "optim.schedule": SCHEDULES}
MAX_SEED = 2**32 - 1  # NumPy's seed range
CHOSEN_BY_FLAGS = ("task", "attention", "scale", "connection", "preset")  # fixed by get_config's arguments
SECTIONS = ("model", "optim", "data", "train")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _describe(hint) -> str:
    names = {int: "an integer", float: "a finite number", bool: "true or false", str: "a string",
             tuple: "a list", dict: "a mapping"}
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args:
        return f"{_describe(args[0])} or None"
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def _has_type(value, hint) -> bool:
    args = typing.get_args(hint)
    if args:  # X | None
        return value is None or any(_has_type(value, a) for a in args if a is not type(None))
    if hint is int:
        return _is_int(value)
    if hint is float:
        return _is_number(value) and math.isfinite(value)
    if hint in (bool, str, tuple, dict):
        return isinstance(value, hint)
    return True


def _check_types(section: str, obj) -> None:
    hints = typing.get_type_hints(type(obj))
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if not _has_type(value, hints[f.name]):
            extra = " (write it without a decimal point)" if hints[f.name] is int and isinstance(value, float) else ""
            raise ConfigError(f"{section}.{f.name} must be {_describe(hints[f.name])}, got {value!r}{extra}")


def _get(cfg: ExperimentConfig, key: str):
    section, name = key.split(".")
    return getattr(getattr(cfg, section), name)


def _check_ranges(cfg: ExperimentConfig) -> None:
    for key in POSITIVE_INTS:
        value = _get(cfg, key)
        if value is not None and value < 1:
            raise ConfigError(f"{key} must be a positive integer, got {value!r}")
    for key in NON_NEGATIVE_INTS:
        if _get(cfg, key) < 0:
            raise ConfigError(f"{key} must be an integer >= 0, got {_get(cfg, key)!r}")
    for key in POSITIVE_FLOATS:
        value = _get(cfg, key)
        if value is not None and not value > 0:
            raise ConfigError(f"{key} must be a finite number > 0, got {value!r}")
    for key in NON_NEGATIVE_FLOATS:
        if _get(cfg, key) < 0:
            raise ConfigError(f"{key} must be a finite number >= 0, got {_get(cfg, key)!r}")
    for key, allowed in CHOICES.items():
        if _get(cfg, key) not in allowed:
            raise ConfigError(f"{key} must be one of {allowed}, got {_get(cfg, key)!r}")
    o, t = cfg.optim, cfg.train
    if t.seed > MAX_SEED:
        raise ConfigError(f"train.seed must be in [0, {MAX_SEED}], got {t.seed!r}")
    if not 0.0 <= o.final_ratio <= 1.0:
        raise ConfigError(f"optim.final_ratio must be in [0, 1], got {o.final_ratio!r}")
    if len(o.betas) != 2 or not all(_is_number(b) and 0.0 <= b < 1.0 for b in o.betas):
        raise ConfigError(f"optim.betas must be two numbers in [0, 1), got {o.betas!r}")
    if not all(_is_int(s) and s >= 1 for s in o.decay_steps):
        raise ConfigError(f"optim.decay_steps must be a list of positive integers, got {o.decay_steps!r}")
    if cfg.data.batch_size % t.accumulate:
        raise ConfigError(f"data.batch_size={cfg.data.batch_size} must be divisible by "
                          f"train.accumulate={t.accumulate} (the micro-batches of one update)")


def check_values(cfg: ExperimentConfig) -> ExperimentConfig:
    """Check every value of ``cfg`` (types, then ranges) but the preset's name; raise ``ConfigError`` naming the
    first bad key. ``lra_kit.train.configs.validate`` adds the preset, whose names are ``PRESETS``'s keys."""
    check_choice("task", cfg.task, TASKS)
    check_choice("attention", cfg.attention, tuple(sorted(ATTENTIONS)))
    check_choice("connection", cfg.connection, CONNECTIONS)
    check_choice("scale", cfg.scale, SCALES)
    for section in SECTIONS:
        obj = getattr(cfg, section)
        expected = type(getattr(ExperimentConfig("copy", "linear", "smoke"), section))
        if not isinstance(obj, expected):
            raise ConfigError(f"{section} must be a section of keys (e.g. {section}.<key>=...), got {obj!r}")
        _check_types(section, obj)
    _check_ranges(cfg)
    try:
        cfg.model.validate()
    except ValueError as err:  # ModelConfig's own checks name the model.* key
        raise ConfigError(str(err)) from None
    return cfg


# ---------------------------------------------------------------------------------------------
# Overrides, (de)serialisation.

def _parse_value(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true"
        if lowered in ("none", "null"):
            return None
        return text


def set_value(cfg: ExperimentConfig, key: str, value: Any) -> None:
    """``set_value(cfg, "model.layers", 4)``: the dotted key must exist (``attention_options.beta`` may be new).

    Values are not checked here (call :func:`check_values` after the last one): a list becomes a tuple
    where the field is a tuple, an integer a float where the field is a float.
    """
    parts = key.split(".")
    if parts[0] in CHOSEN_BY_FLAGS:
        raise ConfigError(f"{parts[0]} is chosen by get_config (lra-kit train --{parts[0]}), not by a config key")
    obj: Any = cfg
    for i, part in enumerate(parts[:-1]):
        if isinstance(obj, dict):
            obj = obj.setdefault(part, {})
            if not isinstance(obj, dict):
                raise ConfigError(f"unknown config key {key!r} ({'.'.join(parts[:i + 1])!r} is not a mapping)")
        elif dataclasses.is_dataclass(obj) and part in {f.name for f in dataclasses.fields(obj)}:
            obj = getattr(obj, part)
        else:
            raise ConfigError(f"unknown config key {key!r} (no {'.'.join(parts[:i + 1])!r})")
    last = parts[-1]
    if isinstance(obj, dict):
        obj[last] = value
    elif dataclasses.is_dataclass(obj) and last in {f.name for f in dataclasses.fields(obj)}:
        current = getattr(obj, last)
        if dataclasses.is_dataclass(current):
            raise ConfigError(f"{key} is a section; set its keys, e.g. {key}.<key>=value")
        if isinstance(current, tuple) and isinstance(value, (list, tuple)):
            value = tuple(value)
        elif isinstance(current, tuple) and _is_number(value):
            value = (value,)
        elif isinstance(current, float) and _is_int(value):
            value = float(value)
        setattr(obj, last, value)
    else:
        valid = sorted(f.name for f in dataclasses.fields(obj)) if dataclasses.is_dataclass(obj) else []
        raise ConfigError(f"unknown config key {key!r}; valid keys here: {', '.join(valid)}")


def apply_overrides(cfg: ExperimentConfig, overrides) -> ExperimentConfig:
    """Apply ``["model.layers=4", "optim.lr=3e-4", ...]`` (values parsed as Python literals), then check them."""
    for item in overrides or ():
        if "=" not in item:
            raise ConfigError(f"override must look like section.key=value, got {item!r}")
        key, text = item.split("=", 1)
        set_value(cfg, key.strip(), _parse_value(text.strip()))
    return check_values(cfg)


def _merge(cfg: ExperimentConfig, values: dict, prefix: str) -> None:
    for key, value in values.items():
        dotted = f"{prefix}{key}"
        try:
            current = _lookup(cfg, dotted)
        except (AttributeError, KeyError, TypeError):
            raise ConfigError(f"unknown config key {dotted!r}") from None
        if isinstance(value, dict) and dataclasses.is_dataclass(current):
            _merge(cfg, value, prefix=dotted + ".")
        else:
            set_value(cfg, dotted, copy.deepcopy(value))


def _lookup(cfg: ExperimentConfig, dotted: str):
    """The current value at ``dotted`` (None for a new key inside a mapping, e.g. attention_options)."""
    obj: Any = cfg
    for part in dotted.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part)
    return obj


def merge_dict(cfg: ExperimentConfig, values: dict, prefix: str = "") -> ExperimentConfig:
    """Apply a (possibly partial) nested dict, e.g. from ``--config FILE`` (JSON), then check it."""
    if not isinstance(values, dict):
        raise ConfigError(f"a config must be a mapping of sections, got {type(values).__name__}")
    _merge(cfg, values, prefix)
    return check_values(cfg)



def load_config_file(path: str) -> dict:
    """Read a JSON config file; a missing or malformed file is a ``ConfigError`` naming it."""
    try:
        with open(path) as f:
            values = json.load(f)
    except OSError as err:
        raise ConfigError(f"config file {path}: {err.strerror or err}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"config file {path} is not valid JSON: {err}") from None
    if not isinstance(values, dict):
        raise ConfigError(f"config file {path} must hold a JSON object of sections, got {type(values).__name__}")
    return values


def format_config(cfg: ExperimentConfig) -> str:
    """The config as indented JSON, printed at the start of every run."""
    return json.dumps(cfg.to_dict(), indent=2, default=str)


__all__ = ["CHOSEN_BY_FLAGS", "DataConfig", "ExperimentConfig", "OptimConfig", "TrainConfig", "apply_overrides",
           "check_choice", "check_values", "format_config", "load_config_file", "merge_dict", "set_value"]
