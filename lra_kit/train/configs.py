"""Experiment configurations as data: every task × attention × scale of the three papers.

``get_config(task, attention, scale, connection="residual")`` returns an
:class:`ExperimentConfig` (plain dataclasses), checked by :func:`validate`. ``paper`` is the
papers' setting, from:

* ``MOMENTUM_LRA`` — the Momentum paper's LRA runs = Nyströmformer's ``LRA/code/lra_config.py``
  (docs/reference-implementations.md §4 and §8) with β/γ and the adaptive step size from the
  authors' ``LRA/README.md`` (= Nguyen et al. Table 1). Used for softmax, linear, momentum.
* ``LUNA_LRA`` — Luna's LRA runs (fairseq-apollo ``examples/luna/README.lra.md``,
  docs/reference-implementations.md §3 and §8). Used for luna.
* ``COPY`` — Katharopoulos et al. §4.1 / Nguyen et al. §4.1 (4 layers, 8 heads × 32, batch 64,
  RAdam 1e-3 → 1e-4 after 3,000 steps); the unstated rest from the linear-transformer authors'
  code (idiap/linear-transformer-experiments ``causal-copy/``): 100 epochs × 100 steps = 10,000
  steps, evaluation on 20 batches every epoch, dropout 0.1, RAdam weight decay 0.01, post-LN
  fast-transformers encoder with ReLU, token features concatenated with sinusoids.
* ``MNIST`` — Katharopoulos §4.2.1 / Nguyen §4.2: 8 layers, 8 heads, d 256, FFN 1024, mixture of
  10 logistics, RAdam 1e-4, batch 10, 250 epochs.
* ``CONNECTION`` — Nguyen et al. Table 1: β, γ of momentum attention; β̃, γ̃ of the connections.

``smoke`` and ``book`` shrink the model and the number of steps by the table ``SMALL``
(docs/design.md §3 Scales); the dataset size comes from ``lra_kit.data.load(..., scale=...)``.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import json
import math
import typing
from dataclasses import asdict, dataclass, field
from typing import Any

from lra_kit.attention import ATTENTIONS, attention_spec
from lra_kit.errors import ConfigError
from lra_kit.models.config import CONNECTIONS, ModelConfig
from lra_kit.scales import SCALES, get_scale
from lra_kit.train.optimizers import OPTIMIZERS
from lra_kit.train.schedules import SCHEDULES

LRA_TASKS = ("listops", "text", "retrieval", "image", "pathfinder")
LM_TASKS = ("copy", "mnist", "cifar10")
TASKS = LRA_TASKS + LM_TASKS


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
        return f"{self.task}-{self.attention}{suffix}-{self.scale_name}{seed}"

    def to_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# The papers' tables, as data.

# Nyströmformer LRA/code/lra_config.py (docs/reference-implementations.md §8).
# eval_batches = num_eval_steps; micro = gpu_memory (the per-GPU micro-batch).
MOMENTUM_LRA = {
    "listops":    dict(batch=32, warmup=1000, steps=5000, eval_every=50, eval_batches=62, micro=32),
    "text":       dict(batch=32, warmup=8000, steps=20000, eval_every=500, eval_batches=781, micro=32),
    "retrieval":  dict(batch=32, warmup=800, steps=30000, eval_every=300, eval_batches=565, micro=32),
    "image":      dict(batch=256, warmup=175, steps=35000, eval_every=175, eval_batches=20, micro=128),
    "pathfinder": dict(batch=256, warmup=312, steps=62400, eval_every=312, eval_batches=312, micro=128),
}

# fairseq-apollo examples/luna/README.lra.md + fairseq/models/lra/model.py (docs/reference-implementations.md §8),
# with learning rate and both dropouts as Luna Table 7 prints them: where the README differs from the paper
# (Retrieval lr 5e-4 there, 5e-5 in Table 7; Image dropout / attention dropout 0.3 / 0.1 there, 0.1 / 0.3 in
# Table 7) the paper wins, since Table 7 is the setting its Table 1 reports.
LUNA_LRA = {
    "listops":    dict(layers=1, d=512, ff=2048, heads=8, dropout=0.1, attn_dropout=0.1, lr=1e-4, warmup=1000,
                       batch=32, wd=1e-4, steps=5000, pooling="cls"),
    "text":       dict(layers=4, d=256, ff=1024, heads=4, dropout=0.3, attn_dropout=0.3, lr=5e-5, warmup=8000,
                       batch=32, wd=1e-4, steps=20000, pooling="cls"),
    "retrieval":  dict(layers=4, d=128, ff=512, heads=4, dropout=0.1, attn_dropout=0.1, lr=5e-5, warmup=8000,
                       batch=32, wd=1e-4, steps=20000, pooling="cls"),
    "image":      dict(layers=1, d=64, ff=128, heads=8, dropout=0.1, attn_dropout=0.3, lr=5e-3, warmup=4000,
                       batch=256, wd=0.0, steps=35000, pooling="cls"),
    "pathfinder": dict(layers=1, d=128, ff=128, heads=4, dropout=0.2, attn_dropout=0.1, lr=1e-3, warmup=4000,
                       batch=512, wd=0.0, steps=62500, pooling="mean"),
}
LUNA_P_LENGTH = 16  # --encoder-projection-length, README default

# Nguyen et al. Table 1 (= the authors' READMEs, docs/reference-implementations.md §5): momentum
# attention β, γ; momentum connection β̃, γ̃ ("momentum/stepsize in momentum connection"); adaptive γ̃.
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

# Katharopoulos et al. §4.1 + the causal-copy code defaults (idiap/linear-transformer-experiments).
COPY = dict(layers=4, heads=8, head_dim=32, batch=64, lr=1e-3, lr_after=1e-4, decay_at=3000, weight_decay=0.01,
            steps=10_000, eval_every=100, eval_batches=20, dropout=0.1, log_every=50)
# Katharopoulos §4.2.1 / Nguyen §4.2 (MNIST); CIFAR-10 (Katharopoulos §4.2.2): 16 layers, lr 2e-4, batch 4.
MNIST = dict(layers=8, heads=8, d=256, ff=1024, lr=1e-4, batch=10, epochs=250, train_size=55_000)
CIFAR10 = dict(layers=16, heads=8, d=256, ff=1024, lr=2e-4, batch=4, iterations=1_250_000)

# How the smoke and book scales shrink each family of paper configs (docs/design.md §3 Scales): the
# values each row sets, as dotted config keys; everything else stays the paper's. LRA: a 1-2 layer
# model at lr 1e-3 without AMP or accumulation. Copy: small models learn the copy much sooner pre-LN
# with learned positions (measured: post-LN + sinusoids stays at chance for ~400 steps at d=64), so
# they use those, no dropout and lr 3e-3 (Luna stays post-LN, Luna eq. 6). Pixels: a softmax over
# the 256 values instead of the mixture of logistics, no dropout.
_SMALL_MODEL = {"smoke": {"model.layers": 1, "model.d_model": 32, "model.n_heads": 2, "model.d_ff": 64},
                "book": {"model.layers": 2, "model.d_model": 64, "model.n_heads": 4, "model.d_ff": 128}}
_NO_DROPOUT = {"model.dropout": 0.0, "model.attention_dropout": 0.0}
SMALL = {
    ("lra", "smoke"): {**_SMALL_MODEL["smoke"], "model.luna_length": 4, "optim.lr": 1e-3, "optim.schedule": "constant",
                       "optim.warmup_steps": 0, "optim.warmup_start": 0.0, "train.amp": False, "train.accumulate": 1,
                       "data.batch_size": 8, "train.steps": 12, "train.eval_every": 6, "train.eval_batches": 2},
    ("lra", "book"): {**_SMALL_MODEL["book"], "model.luna_length": 8, "optim.lr": 1e-3, "optim.schedule": "linear",
                      "optim.warmup_steps": 20, "optim.warmup_start": 0.0, "train.amp": False, "train.accumulate": 1,
                      "data.batch_size": 32, "train.steps": 300, "train.eval_every": 100, "train.eval_batches": None},
    ("copy", "smoke"): {"model.layers": 2, "model.d_model": 32, "model.n_heads": 2, "model.d_ff": 64,
                        "model.luna_length": 4, "model.norm": "pre", "model.position": "learned", **_NO_DROPOUT,
                        "optim.lr": 3e-3, "optim.weight_decay": 0.0, "optim.decay_steps": (),
                        "data.batch_size": 16, "train.steps": 30, "train.eval_every": 15, "train.eval_batches": 2,
                        "train.log_every": 10},
    ("copy", "book"): {**_SMALL_MODEL["book"], "model.luna_length": 8, "model.norm": "pre",
                       "model.position": "learned", **_NO_DROPOUT,
                       "optim.lr": 3e-3, "optim.weight_decay": 0.0, "optim.decay_steps": (450,),
                       "data.batch_size": 32, "data.options": {"max_length": 32}, "train.steps": 600,
                       "train.eval_every": 100, "train.eval_batches": 8, "train.log_every": 10},
    ("pixels", "smoke"): {**_SMALL_MODEL["smoke"], "model.luna_length": 4, "model.output": "softmax", **_NO_DROPOUT,
                          "optim.lr": 1e-3, "data.batch_size": 4, "train.steps": 8, "train.eval_every": 4,
                          "train.eval_batches": 2},
    ("pixels", "book"): {**_SMALL_MODEL["book"], "model.luna_length": 4, "model.output": "softmax", **_NO_DROPOUT,
                         "optim.lr": 1e-3, "data.batch_size": 16, "train.steps": 300, "train.eval_every": 100,
                         "train.eval_batches": 10},
}

# The named reduced scale ``cpu`` (runs recorded on a 2-core CPU). Kept from ``paper``: the
# data (the copy task's sequence and word lengths, the MNIST images), the task and the optimizer (RAdam).
# Shrunk, all listed here: the model (2 layers, d 64, 4 heads instead of 4 × 256 × 8 for the copy task and
# 8 × 256 × 8 for MNIST), the steps (2,000 instead of 10,000 copy steps; 500 MNIST steps of 10 images,
# 0.09 of an epoch instead of 250 epochs), the copy batch (32 instead of 64). The copy runs use the
# small-model recipe of the book scale (pre-LN, learned positions, no dropout, lr 3e-3 → 3e-4). MNIST
# keeps the papers' batch of 10 and post-LN, at lr 1e-3 and with a softmax over the 256 pixel values
# instead of the mixture of 10 logistics (measured: the mixture's 256-bin likelihood makes a step 14×
# slower at this model size on one core); MNIST evaluates on 1,000 test images (lra_kit.data.splits).
SMALL.update({
    ("copy", "cpu"): {**_SMALL_MODEL["book"], "model.luna_length": 8, "model.norm": "pre",
                      "model.position": "learned", **_NO_DROPOUT,
                      "optim.lr": 3e-3, "optim.weight_decay": 0.0, "optim.decay_steps": (1500,),
                      "data.batch_size": 32, "train.steps": 2000, "train.eval_every": 100,
                      "train.eval_batches": 5, "train.log_every": 20},
    ("pixels", "cpu"): {**_SMALL_MODEL["book"], "model.luna_length": 8, "model.output": "softmax", **_NO_DROPOUT,
                        "optim.lr": 1e-3, "data.batch_size": 10, "train.steps": 500, "train.eval_every": 100,
                        "train.eval_batches": 10, "train.log_every": 20},
})


# Named reduced scales: what the hardware at hand honestly allows, recorded under its own name. A preset
# is the data of its ``base`` scale (lra_kit.data at that scale) with ``values`` (then ``per_task``) on top;
# ``shrunk`` says, for the reader of a result, what differs from the papers' setting.
_LRA_CPU_VALUES = {
    "model.layers": 2, "model.d_model": 64, "model.n_heads": 2, "model.d_ff": 128, "model.luna_length": 16,
    "model.dropout": 0.1, "model.attention_dropout": 0.0, "optim.lr": 1e-3, "optim.schedule": "linear",
    "optim.warmup_steps": 25, "optim.warmup_start": 0.0, "optim.final_ratio": 0.0, "train.amp": False,
    "train.accumulate": 1, "data.batch_size": 16, "train.steps": 500, "train.eval_every": 100,
    "train.eval_batches": 8, "train.log_every": 10}

PRESETS = {
    # LRA on 2 CPU cores shared with other work, one thread per run, ~2 minutes a run. Measured alone, one
    # thread, 1K tokens, batch 32: 0.6-1.9 s a step depending on the attention; ListOps at the paper's
    # lengths (500-2,000 tokens) costs about twice that. The model is the Momentum paper's LRA model
    # (Nyströmformer lra_config.py: 2 layers, d 64, 2 heads × 32, FFN 128, dropout 0.1, mean pooling)
    # for every attention, Luna with P = 16 (Luna-16). Attention dropout is off because PyTorch's CPU
    # SDPA has no fused kernel with dropout (measured: 12.5 s against 1.9 s a step for softmax).
    "lra-cpu": dict(
        base="book", tasks=LRA_TASKS,
        values=_LRA_CPU_VALUES,
        per_task={"text": {"data.options": {"max_length": 1024}}},
        shrunk=("500 steps at batch 16 (two epochs of the 4,000 training examples) instead of 5,000-62,400 steps "
                "at batch 32-512; the book-scale "
                "data (4,000 train / 500 val / 500 test examples; ListOps at the paper's lengths; Text truncated "
                "to 1,024 bytes instead of 4,000); Retrieval not run (no AAN corpus); lr 1e-3 with 25 warmup steps "
                "then linear decay to 0 instead of 1e-4 (OneCycle over thousands of warmup steps); no attention "
                "dropout; no AMP; dev = 8 batches (a fixed sample of 128 examples); Luna uses the same 2-layer d 64 "
                "model instead of Luna Table 7's per-task models"),
    ),
    # The same model and schedule, four times the steps, on Image's whole training set: 2,000 steps at batch 16
    # see 32,000 of CIFAR-10's 45,000 training images once (no repeats), and the test accuracy is over the full
    # 10,000 test images. About 4× the lra-cpu time (3-25 minutes a run on one thread).
    "lra-cpu-long": dict(
        base="paper", tasks=("image",),
        values={**_LRA_CPU_VALUES, "optim.warmup_steps": 100, "train.steps": 2000, "train.eval_every": 250,
                "train.eval_batches": 16},
        per_task={},
        shrunk=("2,000 steps at batch 16 (32,000 of the 45,000 training images, each seen once) instead of 35,000 "
                "steps at batch 256; the full CIFAR-10 splits (45,000 train / 5,000 val / 10,000 test); lr 1e-3 "
                "with 100 warmup steps then linear decay to 0 instead of 1e-4 (OneCycle); no attention dropout; "
                "no AMP; dev = 16 batches (a fixed sample of 256 examples); Luna uses the same 2-layer d 64 model "
                "instead of Luna Table 7's"),
    ),
    # The copy task until linear attention has converged (Katharopoulos Fig. 2 trains 10,000 steps of a 4-layer
    # d 256 model; this 2-layer d 64 model at lr 3e-3 is still learning at 2,000). The cpu scale's recipe with
    # ten times the steps, and the drop to lr 3e-4 kept at three quarters of the run. Measured alone on one
    # thread: 0.11 (softmax), 0.12 (linear), 0.16 s a step (momentum, adaptive); 35-55 minutes a run.
    "cpu-20k": dict(
        base="cpu", tasks=("copy",),
        values={"train.steps": 20_000, "optim.decay_steps": (15_000,), "train.eval_every": 500,
                "train.eval_batches": 10, "train.log_every": 100},
        per_task={},
        shrunk=("a 2-layer d 64 model (4 heads) instead of 4 layers × d 256 (8 heads); 20,000 steps at batch 32 "
                "instead of 10,000 at batch 64; pre-LN, learned positions, no dropout, no weight decay; RAdam at "
                "lr 3e-3, dropped to 3e-4 at step 15,000, instead of 1e-3 dropped to 1e-4 at step 3,000"),
    ),
    # MNIST for 12,000 steps of 10 images (2.2 epochs of the 55,000 training images) with the cpu scale's model:
    # 0.2-0.4 s a step on one thread, 40-80 minutes a run.
    "cpu-12k": dict(
        base="cpu", tasks=("mnist",),
        values={"train.steps": 12_000, "train.eval_every": 1000, "train.eval_batches": 10, "train.log_every": 50},
        per_task={},
        shrunk=("a 2-layer d 64 model (4 heads, FFN 128) instead of 8 layers × d 256 (FFN 1,024); 12,000 steps "
                "at batch 10 (2.2 epochs) instead of 250 epochs; lr 1e-3 instead of 1e-4; a softmax over the 256 "
                "pixel values instead of a mixture of 10 logistics; no dropout; bits/dim over 1,000 test images"),
    ),
}


def _apply_preset(cfg: ExperimentConfig, preset: str) -> None:
    """Put the values of ``PRESETS[preset]`` (then its row for the task) on ``cfg``."""
    spec = PRESETS[preset]
    for key, value in {**spec["values"], **spec["per_task"].get(cfg.task, {})}.items():
        set_value(cfg, key, copy.deepcopy(value))
    if cfg.attention == "luna":
        cfg.model.norm = "post"  # Luna layers are post-LN (Luna eq. 6) at every scale
    cfg.preset = preset
    cfg.source += f" — preset {preset!r}: {spec['shrunk']}"


def _family(task: str) -> str:
    return "lra" if task in LRA_TASKS else "copy" if task == "copy" else "pixels"


def _check(name: str, value: str, allowed) -> None:
    if value not in allowed:
        raise ConfigError(f"unknown {name} {value!r}; valid {name}s: {', '.join(allowed)}")


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
            raise ConfigError(f"Nguyen et al. Table 1 gives no momentum-connection β̃ for task {task!r} (only for "
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
    source = "copy task: Katharopoulos et al. §4.1, Nguyen et al. §4.1 + causal-copy code defaults"
    return ExperimentConfig("copy", attention, scale, model=model, optim=optim, data=data, train=train, source=source)


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


def _shrink(cfg: ExperimentConfig) -> None:
    """Apply the row of ``SMALL`` for the config's family and scale."""
    family = _family(cfg.task)
    if (family, cfg.scale) not in SMALL:
        have = sorted({task for task in TASKS if (_family(task), cfg.scale) in SMALL})
        raise ConfigError(f"scale {cfg.scale!r} is defined only for the tasks {', '.join(have)}, not {cfg.task!r}")
    for key, value in SMALL[(family, cfg.scale)].items():
        set_value(cfg, key, copy.deepcopy(value))
    if cfg.attention == "luna":
        cfg.model.norm = "post"  # Luna layers are post-LN (Luna eq. 6) at every scale
    cfg.source += f" — shrunk to the {cfg.scale} scale"


def get_config(task: str, attention: str, scale: str | None = None, connection: str = "residual",
               preset: str | None = None) -> ExperimentConfig:
    """The configuration of ``task`` with ``attention`` at ``scale`` (``paper`` = the papers' setting).

    ``preset`` names a reduced scale of ``PRESETS`` (e.g. ``"lra-cpu"``); it fixes the scale of the
    data to its ``base`` (a different explicit ``scale`` is an error).
    """
    _check("task", task, TASKS)
    _check("attention", attention, tuple(sorted(ATTENTIONS)))
    _check("connection", connection, CONNECTIONS)
    if preset is not None:
        _check("preset", preset, tuple(PRESETS))
        base, tasks = PRESETS[preset]["base"], PRESETS[preset]["tasks"]
        if task not in tasks:
            raise ConfigError(f"preset {preset!r} is for the tasks {', '.join(tasks)}, not {task!r}")
        if scale is not None and scale != base:
            raise ConfigError(f"preset {preset!r} runs on the {base!r} scale's data; leave scale unset or {base!r}, "
                              f"got {scale!r}")
        scale = base
    scale = get_scale(scale)
    if task in LRA_TASKS:
        cfg = _lra_config(task, attention, scale)
    elif task == "copy":
        cfg = _copy_config(attention, scale)
    else:
        cfg = _pixel_config(task, attention, scale)
    if scale != "paper":
        _shrink(cfg)
    if connection != "residual":
        if attention == "luna":
            raise ConfigError("Luna layers use the residual connection; connection must be 'residual' with luna")
        _connection(cfg.model, task, connection)
        cfg.connection = connection
    if preset is not None:
        _apply_preset(cfg, preset)
    return validate(cfg)


# ---------------------------------------------------------------------------------------------
# Validation: every value is checked when the config is built, naming the key, the value and what
# is allowed, so that a bad value never reaches the training loop (a zero batch size would spin).

POSITIVE_INTS = ("data.batch_size", "data.eval_batch_size", "train.steps", "train.eval_every", "train.eval_batches",
                 "train.checkpoint_every", "train.log_every", "train.accumulate")
NON_NEGATIVE_INTS = ("data.num_workers", "optim.warmup_steps", "train.seed")
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


def validate(cfg: ExperimentConfig) -> ExperimentConfig:
    """Check every value of ``cfg`` (types, then ranges); raise ``ConfigError`` naming the first bad key."""
    _check("task", cfg.task, TASKS)
    _check("attention", cfg.attention, tuple(sorted(ATTENTIONS)))
    _check("connection", cfg.connection, CONNECTIONS)
    _check("scale", cfg.scale, SCALES)
    if cfg.preset is not None:
        _check("preset", cfg.preset, tuple(PRESETS))
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

    Values are not checked here (call :func:`validate` after the last one): a list becomes a tuple
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
    """Apply ``["model.layers=4", "optim.lr=3e-4", ...]`` (values parsed as Python literals), then validate."""
    for item in overrides or ():
        if "=" not in item:
            raise ConfigError(f"override must look like section.key=value, got {item!r}")
        key, text = item.split("=", 1)
        set_value(cfg, key.strip(), _parse_value(text.strip()))
    return validate(cfg)


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
    """Apply a (possibly partial) nested dict, e.g. from ``--config FILE`` (JSON), then validate."""
    if not isinstance(values, dict):
        raise ConfigError(f"a config must be a mapping of sections, got {type(values).__name__}")
    _merge(cfg, values, prefix)
    return validate(cfg)


def from_dict(values: dict) -> ExperimentConfig:
    """Rebuild a saved config (``config.json`` of a run directory)."""
    if not isinstance(values, dict) or any(k not in values for k in ("task", "attention", "scale")):
        raise ConfigError("a saved config must be a mapping with task, attention and scale")
    cfg = get_config(values["task"], values["attention"], values["scale"], values.get("connection", "residual"),
                     values.get("preset"))
    return merge_dict(cfg, {k: v for k, v in values.items() if k not in CHOSEN_BY_FLAGS})


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


__all__ = ["CONNECTION", "COPY", "DataConfig", "ExperimentConfig", "LM_TASKS", "LRA_TASKS", "LUNA_LRA", "MNIST",
           "MOMENTUM_LRA", "OptimConfig", "PRESETS", "SCALES", "SMALL", "TASKS", "TrainConfig", "apply_overrides",
           "format_config", "from_dict", "get_config", "load_config_file", "merge_dict", "set_value", "validate"]
