"""Experiment configurations as data: every task × attention × scale of the three papers.

``get_config(task, attention, scale, connection="residual")`` returns an
:class:`ExperimentConfig` (plain dataclasses). ``paper`` is the papers' setting, from:

* ``MOMENTUM_LRA`` — the Momentum paper's LRA runs = Nystromformer's ``lra_config.py``
  (notes/reference-implementations.md §b1) with β/γ and the adaptive step size from the
  authors' ``LRA/README.md`` (= Nguyen et al. Table 1). Used for softmax, linear, momentum.
* ``LUNA_LRA`` — Luna's LRA runs (fairseq-apollo ``README.lra.md``, notes §b2). Used for luna.
* ``COPY`` — Katharopoulos et al. §4.1 / Nguyen et al. §4.1 (4 layers, 8 heads × 32, batch 64,
  RAdam 1e-3 → 1e-4 after 3,000 steps); the unstated rest from the linear-transformer authors'
  ``causal-copy`` code defaults (notes §8): 100 epochs × 100 steps = 10,000 steps, evaluation
  on 20 batches every epoch, dropout 0.1, RAdam weight decay 0.01, post-LN fast-transformers
  encoder with ReLU, token features concatenated with sinusoids.
* ``MNIST`` — Katharopoulos §4.2.1 / Nguyen §4.2: 8 layers, 8 heads, d 256, FFN 1024, mixture of
  10 logistics, RAdam 1e-4, batch 10, 250 epochs.
* ``CONNECTION`` — Nguyen et al. Table 1: β, γ of momentum attention; β̃, γ̃ of the connections.

``smoke`` and ``book`` shrink the model and the number of steps (GUIDE §4); the dataset size
comes from ``lra_kit.data.load(..., scale=...)``.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from lra_kit.attention import ATTENTIONS, attention_spec
from lra_kit.models.config import CONNECTIONS, ModelConfig
from lra_kit.scales import SCALES, get_scale

LRA_TASKS = ("listops", "text", "retrieval", "image", "pathfinder")
LM_TASKS = ("copy", "mnist", "cifar10")
TASKS = LRA_TASKS + LM_TASKS
OPTIMIZERS = ("adamw", "adam", "radam")
SCHEDULES = ("constant", "linear", "step", "inverse_sqrt")


@dataclass
class OptimConfig:
    name: str = "adamw"
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
    clip_grad_norm: Optional[float] = None


@dataclass
class DataConfig:
    batch_size: int = 32             # the global batch (all ranks, all accumulation micro-batches)
    eval_batch_size: Optional[int] = None
    options: dict = field(default_factory=dict)  # keyword options of lra_kit.data.load
    num_workers: int = 0


@dataclass
class TrainConfig:
    steps: int = 100                 # optimizer updates
    eval_every: int = 50
    eval_batches: Optional[int] = None  # dev batches per evaluation; None = the whole split
    checkpoint_every: Optional[int] = None  # default: eval_every
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

    @property
    def name(self) -> str:
        suffix = "" if self.connection == "residual" else f"+{self.connection}"
        return f"{self.task}-{self.attention}{suffix}-{self.scale}"

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# The papers' tables, as data.

# Nystromformer lra_config.py (notes §b1). eval_batches = num_eval_steps; micro = gpu_memory.
MOMENTUM_LRA = {
    "listops":    dict(batch=32, warmup=1000, steps=5000, eval_every=50, eval_batches=62, micro=32),
    "text":       dict(batch=32, warmup=8000, steps=20000, eval_every=500, eval_batches=781, micro=32),
    "retrieval":  dict(batch=32, warmup=800, steps=30000, eval_every=300, eval_batches=565, micro=32),
    "image":      dict(batch=256, warmup=175, steps=35000, eval_every=175, eval_batches=20, micro=128),
    "pathfinder": dict(batch=256, warmup=312, steps=62400, eval_every=312, eval_batches=312, micro=128),
}

# fairseq-apollo examples/luna/README.lra.md + fairseq/models/lra/model.py (notes §b2).
LUNA_LRA = {
    "listops":    dict(layers=1, d=512, ff=2048, heads=8, dropout=0.1, attn_dropout=0.1, lr=1e-4, warmup=1000,
                       batch=32, wd=1e-4, steps=5000, pooling="cls"),
    "text":       dict(layers=4, d=256, ff=1024, heads=4, dropout=0.3, attn_dropout=0.3, lr=5e-5, warmup=8000,
                       batch=32, wd=1e-4, steps=20000, pooling="cls"),
    "retrieval":  dict(layers=4, d=128, ff=512, heads=4, dropout=0.1, attn_dropout=0.1, lr=5e-4, warmup=8000,
                       batch=32, wd=1e-4, steps=20000, pooling="cls"),
    "image":      dict(layers=1, d=64, ff=128, heads=8, dropout=0.3, attn_dropout=0.1, lr=5e-3, warmup=4000,
                       batch=256, wd=0.0, steps=35000, pooling="cls"),
    "pathfinder": dict(layers=1, d=128, ff=128, heads=4, dropout=0.2, attn_dropout=0.1, lr=1e-3, warmup=4000,
                       batch=512, wd=0.0, steps=62500, pooling="mean"),
}
LUNA_P_LENGTH = 16  # --encoder-projection-length, README default

# Nguyen et al. Table 1 (= the authors' READMEs, notes §b1): momentum attention β, γ;
# momentum connection β̃, γ̃ ("momentum/stepsize in momentum connection"); adaptive γ̃.
CONNECTION = {
    "copy":       dict(beta=0.1, gamma=0.6, conn_beta=0.99, conn_gamma=0.99, adaptive_gamma=0.99),
    "mnist":      dict(beta=0.6, gamma=0.9, conn_beta=0.1, conn_gamma=0.99, adaptive_gamma=0.99),
    "cifar10":    dict(beta=0.1, gamma=0.9, conn_beta=0.1, conn_gamma=0.9, adaptive_gamma=0.9),
    "listops":    dict(beta=0.1, gamma=0.6, adaptive_gamma=0.4),
    "text":       dict(beta=0.6, gamma=2.0, adaptive_gamma=0.001),
    "retrieval":  dict(beta=0.6, gamma=1.0, adaptive_gamma=0.5),
    "image":      dict(beta=0.9, gamma=0.9, adaptive_gamma=0.001),
    "pathfinder": dict(beta=0.3, gamma=0.1, adaptive_gamma=0.8),
}

# Katharopoulos et al. §4.1 + causal-copy code defaults (notes §8).
COPY = dict(layers=4, heads=8, head_dim=32, batch=64, lr=1e-3, lr_after=1e-4, decay_at=3000, weight_decay=0.01,
            steps=10_000, eval_every=100, eval_batches=20, dropout=0.1, log_every=50)
# Katharopoulos §4.2.1 / Nguyen §4.2 (MNIST); CIFAR-10 (§4.2.2 / notes §b1): 16 layers, lr 2e-4, batch 4.
MNIST = dict(layers=8, heads=8, d=256, ff=1024, lr=1e-4, batch=10, epochs=250, train_size=55_000)
CIFAR10 = dict(layers=16, heads=8, d=256, ff=1024, lr=2e-4, batch=4, iterations=1_250_000)

# How smoke and book shrink a model: (layers, d_model, heads, d_ff).
SMALL = {"smoke": dict(layers=1, d=32, heads=2, ff=64), "book": dict(layers=2, d=64, heads=4, ff=128)}


def _check(name: str, value: str, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; valid {name}s: {', '.join(allowed)}")


def _attention_options(task: str, attention: str) -> dict:
    options = attention_spec(attention).options()  # the table's defaults; an unknown name is an error
    if attention == "momentum":
        row = CONNECTION[task]
        options.update(beta=row["beta"], gamma=row["gamma"])
    if attention == "luna":
        options.update(tie_kv=False)
    return options


def _connection(model: ModelConfig, task: str, connection: str) -> None:
    """Table 1's β̃, γ̃ for the connection asked for."""
    model.connection = connection
    row = CONNECTION[task]
    if connection == "momentum":
        if "conn_beta" not in row:
            have = [t for t, r in CONNECTION.items() if "conn_beta" in r]
            raise ValueError(f"Nguyen et al. Table 1 gives no momentum-connection β̃ for task {task!r} (only for "
                             f"{', '.join(have)}); use --connection adaptive, or set model.connection_beta and "
                             "model.connection_gamma explicitly with --set")
        model.connection_beta, model.connection_gamma = row["conn_beta"], row["conn_gamma"]
    elif connection == "adaptive":
        model.connection_gamma = row["adaptive_gamma"]


def _lra_config(task: str, attention: str, scale: str) -> ExperimentConfig:
    if attention == "luna":
        t = LUNA_LRA[task]
        model = ModelConfig(attention="luna", attention_options=_attention_options(task, "luna"), layers=t["layers"],
                            d_model=t["d"], n_heads=t["heads"], d_ff=t["ff"], dropout=t["dropout"],
                            attention_dropout=t["attn_dropout"], norm="post", final_norm=False, embed_norm=True,
                            position="sinusoidal", pooling=t["pooling"], luna_length=LUNA_P_LENGTH)
        optim = OptimConfig(name="adam", lr=t["lr"], betas=(0.9, 0.98), eps=1e-8, weight_decay=t["wd"],
                            schedule="inverse_sqrt", warmup_steps=t["warmup"], warmup_start=1e-7)
        e = MOMENTUM_LRA[task]  # Luna's evaluation cadence is not published: use the LRA code's
        train = TrainConfig(steps=t["steps"], eval_every=e["eval_every"], eval_batches=e["eval_batches"], amp=True)
        data = DataConfig(batch_size=t["batch"])
        source = "Luna LRA: fairseq-apollo README.lra.md (notes/reference-implementations.md §b2)"
    else:
        t = MOMENTUM_LRA[task]
        model = ModelConfig(attention=attention, attention_options=_attention_options(task, attention), layers=2,
                            d_model=64, n_heads=2, d_ff=128, dropout=0.1, attention_dropout=0.1, norm="pre",
                            position="learned", pooling="mean", adaptive_over="sample")
        # OneCycleLR(linear) as in run_tasks.py: from lr/25 up to lr, then down to lr/(25·10⁴).
        optim = OptimConfig(name="adamw", lr=1e-4, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, schedule="linear",
                            warmup_steps=t["warmup"], warmup_start=1 / 25, final_ratio=1 / 25e4)
        train = TrainConfig(steps=t["steps"], eval_every=t["eval_every"], eval_batches=t["eval_batches"],
                            accumulate=max(t["batch"] // t["micro"], 1), amp=True)
        data = DataConfig(batch_size=t["batch"])
        source = "Momentum Transformer LRA = Nystromformer lra_config.py (notes §b1), β/γ from Nguyen et al. Table 1"
    cfg = ExperimentConfig(task, attention, scale, model=model, optim=optim, data=data, train=train, source=source)
    if scale != "paper":
        s = SMALL[scale]
        model.layers, model.d_model, model.n_heads, model.d_ff = s["layers"], s["d"], s["heads"], s["ff"]
        model.luna_length = 4 if scale == "smoke" else 8
        optim.lr, optim.warmup_steps, optim.warmup_start = 1e-3, 0 if scale == "smoke" else 20, 0.0
        optim.schedule = "constant" if scale == "smoke" else "linear"
        train.amp, train.accumulate = False, 1
        if scale == "smoke":
            data.batch_size, train.steps, train.eval_every, train.eval_batches = 8, 12, 6, 2
        else:
            data.batch_size, train.steps, train.eval_every, train.eval_batches = 32, 300, 100, None
        cfg.source += f" — shrunk to the {scale} scale"
    return cfg


def _copy_config(attention: str, scale: str) -> ExperimentConfig:
    d = COPY["heads"] * COPY["head_dim"]
    model = ModelConfig(attention=attention, attention_options=_attention_options("copy", attention),
                        layers=COPY["layers"], d_model=d, n_heads=COPY["heads"], d_ff=4 * d, dropout=COPY["dropout"],
                        attention_dropout=COPY["dropout"], activation="relu", norm="post", final_norm=True,
                        position="sinusoidal_concat", luna_length=16)
    optim = OptimConfig(name="radam", lr=COPY["lr"], betas=(0.9, 0.999), eps=1e-8, weight_decay=COPY["weight_decay"],
                        schedule="step", decay_steps=(COPY["decay_at"],), decay_factor=COPY["lr_after"] / COPY["lr"])
    train = TrainConfig(steps=COPY["steps"], eval_every=COPY["eval_every"], eval_batches=COPY["eval_batches"],
                        log_every=COPY["log_every"])
    data = DataConfig(batch_size=COPY["batch"])
    cfg = ExperimentConfig("copy", attention, scale, model=model, optim=optim, data=data, train=train,
                           source="copy task: Katharopoulos et al. §4.1, Nguyen et al. §4.1 + causal-copy code defaults")
    if scale != "paper":
        # Small models learn the copy much sooner pre-LN with learned positions (measured: post-LN +
        # sinusoids stays at chance for ~400 steps at d=64), so smoke/book use those, no dropout, lr 3e-3.
        model.norm = "post" if attention == "luna" else "pre"  # Luna layers are post-LN (eq. 6)
        model.position, model.dropout, model.attention_dropout = "learned", 0.0, 0.0
        optim.lr, optim.weight_decay, train.log_every = 3e-3, 0.0, 10
    if scale == "smoke":
        model.layers, model.d_model, model.n_heads, model.d_ff, model.luna_length = 2, 32, 2, 64, 4
        optim.decay_steps = ()
        data.batch_size, train.steps, train.eval_every, train.eval_batches = 16, 30, 15, 2
    elif scale == "book":
        model.layers, model.d_model, model.n_heads, model.d_ff, model.luna_length = 2, 64, 4, 128, 8
        optim.decay_steps = (450,)
        data.batch_size, train.steps, train.eval_every, train.eval_batches = 32, 600, 100, 8
        data.options = {"max_length": 32}
    return cfg


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
    cfg = ExperimentConfig(task, attention, scale, model=model, optim=optim, data=data, train=train,
                           source=f"{task} generation: Katharopoulos et al. §4.2, Nguyen et al. §4.2 (notes §b1)")
    if scale != "paper":
        s = SMALL[scale]
        model.layers, model.d_model, model.n_heads, model.d_ff = s["layers"], s["d"], s["heads"], s["ff"]
        model.output, model.luna_length, model.dropout, model.attention_dropout = "softmax", 4, 0.0, 0.0
        optim.lr = 1e-3
        if scale == "smoke":
            data.batch_size, train.steps, train.eval_every, train.eval_batches = 4, 8, 4, 2
        else:
            data.batch_size, train.steps, train.eval_every, train.eval_batches = 16, 300, 100, 10
    return cfg


def get_config(task: str, attention: str, scale: Optional[str] = None, connection: str = "residual") -> ExperimentConfig:
    """The configuration of ``task`` with ``attention`` at ``scale`` (``paper`` = the papers' setting)."""
    _check("task", task, TASKS)
    _check("attention", attention, tuple(sorted(ATTENTIONS)))
    _check("connection", connection, CONNECTIONS)
    scale = get_scale(scale)
    if task in LRA_TASKS:
        cfg = _lra_config(task, attention, scale)
    elif task == "copy":
        cfg = _copy_config(attention, scale)
    else:
        cfg = _pixel_config(task, attention, scale)
    if connection != "residual":
        if attention == "luna":
            raise ValueError("Luna layers use the residual connection; connection must be 'residual' with luna")
        _connection(cfg.model, task, connection)
        cfg.connection = connection
    cfg.model.validate()
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
    """``set_value(cfg, "model.layers", 4)``: the dotted key must exist (``attention_options.beta`` may be new)."""
    parts = key.split(".")
    obj: Any = cfg
    for i, part in enumerate(parts[:-1]):
        if isinstance(obj, dict):
            obj = obj.setdefault(part, {})
        elif dataclasses.is_dataclass(obj) and hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            raise ValueError(f"unknown config key {key!r} (no {'.'.join(parts[:i + 1])!r})")
    last = parts[-1]
    if isinstance(obj, dict):
        obj[last] = value
    elif dataclasses.is_dataclass(obj) and last in {f.name for f in dataclasses.fields(obj)}:
        current = getattr(obj, last)
        if isinstance(current, tuple) and isinstance(value, (list, tuple)):
            value = tuple(value)
        elif isinstance(current, tuple) and isinstance(value, (int, float)):
            value = (value,)
        elif isinstance(current, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        setattr(obj, last, value)
    else:
        valid = sorted(f.name for f in dataclasses.fields(obj)) if dataclasses.is_dataclass(obj) else []
        raise ValueError(f"unknown config key {key!r}; valid keys here: {', '.join(valid)}")


def apply_overrides(cfg: ExperimentConfig, overrides) -> ExperimentConfig:
    """Apply ``["model.layers=4", "optim.lr=3e-4", ...]`` (values parsed as Python literals)."""
    for item in overrides or ():
        if "=" not in item:
            raise ValueError(f"override must look like section.key=value, got {item!r}")
        key, text = item.split("=", 1)
        set_value(cfg, key.strip(), _parse_value(text.strip()))
    cfg.model.validate()
    return cfg


def merge_dict(cfg: ExperimentConfig, values: dict, prefix: str = "") -> ExperimentConfig:
    """Apply a (possibly partial) nested dict, e.g. from ``--config FILE`` (JSON)."""
    for key, value in values.items():
        dotted = f"{prefix}{key}"
        target = cfg
        for part in dotted.split(".")[:-1]:
            target = getattr(target, part) if not isinstance(target, dict) else target[part]
        current = target[key] if isinstance(target, dict) and key in target else getattr(target, key, None)
        if isinstance(value, dict) and dataclasses.is_dataclass(current):
            merge_dict(cfg, value, prefix=dotted + ".")
        else:
            set_value(cfg, dotted, copy.deepcopy(value))
    return cfg


def from_dict(values: dict) -> ExperimentConfig:
    """Rebuild a saved config (``config.json`` of a run directory)."""
    cfg = get_config(values["task"], values["attention"], values["scale"], values.get("connection", "residual"))
    rest = {k: v for k, v in values.items() if k not in ("task", "attention", "scale", "connection")}
    return merge_dict(cfg, rest)


def load_config_file(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def format_config(cfg: ExperimentConfig) -> str:
    """The config as indented JSON, printed at the start of every run."""
    return json.dumps(cfg.to_dict(), indent=2, default=str)


__all__ = ["CONNECTION", "COPY", "DataConfig", "ExperimentConfig", "LM_TASKS", "LRA_TASKS", "LUNA_LRA", "MNIST",
           "MOMENTUM_LRA", "OptimConfig", "SCALES", "TASKS", "TrainConfig", "apply_overrides", "format_config",
           "from_dict", "get_config", "load_config_file", "merge_dict", "set_value"]
