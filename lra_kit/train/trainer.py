"""The training loop: one run directory, resumable bit for bit, single process or DDP.

    RUN_DIR/config.json     the ExperimentConfig (also printed at the start)
    RUN_DIR/checkpoint.pt   the latest state (atomic, safe to load; see lra_kit.train.checkpoint)
    RUN_DIR/best.pt         the model with the best dev metric so far
    RUN_DIR/log.jsonl       one JSON line per train log / evaluation / test
    RUN_DIR/results.json    the keys of docs/design.md §5 Results format + the curves (written at the end)
    RUN_DIR/.lock           held while a trainer uses the directory (see lra_kit.train.lock)

Data order is a function of (seed, epoch) only (lra_kit.train.batches: a seeded permutation
per epoch, optionally grouped by length with ``data.bucket``). The
position (epoch, batches done) is checkpointed, so a restarted run reads exactly the
batches the killed run would have read, and dropout draws from the restored RNG states.

Before a run starts, its output paths are checked (:func:`lra_kit.atomic.check_writable`), the
directory is locked against a second trainer, and temporary files of killed writes are removed.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
from tqdm.auto import tqdm

from lra_kit.atomic import check_writable, remove_orphans
from lra_kit.attention import attention_spec
from lra_kit.data.registry import task_spec
from lra_kit.errors import ConfigError, OutputPathError, RunDirectoryError
from lra_kit.models import bits_per_dim, build_model, per_image_bits
from lra_kit.results import git_commit, make_results, write_results
from lra_kit.train.batches import EpochBatches, item_lengths
from lra_kit.train.checkpoint import (
    FORMAT, TRAINING_KEYS, atomic_save, atomic_write_text, load_checkpoint, rng_state, set_rng_state,
)
from lra_kit.train.config_schema import with_defaults
from lra_kit.train.configs import ExperimentConfig, format_config, validate
from lra_kit.train.distributed import DistInfo, all_reduce_sum, barrier, init_distributed, local_device
from lra_kit.train.lock import run_directory_lock
from lra_kit.train.optimizers import build_optimizer
from lra_kit.train.schedules import build_scheduler


def default_run_dir(cfg: ExperimentConfig) -> str:
    return os.path.join("runs", cfg.name)


def record_path(record_dir: str, record: str, cfg: ExperimentConfig) -> str:
    """Where ``--record NAME`` writes a copy of the results: ``RECORD_DIR/NAME/<cfg.name>.json``."""
    return os.path.join(record_dir, record, f"{cfg.name}.json")


class TaskLoss(nn.Module):
    """The model plus its task's loss, so DDP and torch.compile see one ``forward``.

    Returns the mean loss to back-propagate and the sums (loss, correct, count) to report:
    cross-entropy over examples for classification/retrieval; for language modelling the
    next-token NLL over the predicted tokens (``loss_mask`` respected), and over the sequences with a
    prediction the sum and the sum of squares of each one's mean NLL (``seq_sum``, ``seq_sq``, ``seqs``): the
    per-image spread of bits/dim, so that two models' bits/dim can be told apart from the test set's noise.
    """

    def __init__(self, model: nn.Module, kind: str):
        super().__init__()
        self.model, self.kind = model, kind

    def forward(self, batch: dict) -> dict:
        if self.kind == "lm":
            t = self.model.loss_terms(batch["input_ids"], batch.get("key_padding_mask"), batch.get("loss_mask"))
            have = t["seq_count"] > 0
            per_seq = (t["seq_nll"].detach() / t["seq_count"].clamp_min(1))[have]
            return {"loss": t["nll"] / t["count"].clamp_min(1), "loss_sum": t["nll"].detach(),
                    "correct": t["correct"], "count": t["count"],
                    "seq_sum": per_seq.sum(), "seq_sq": (per_seq ** 2).sum(), "seqs": have.sum()}
        labels = batch["labels"]
        logits = self.model(**{k: v for k, v in batch.items() if k != "labels"}).float()
        ce = F.cross_entropy(logits, labels, reduction="sum")
        return {"loss": ce / labels.numel(), "loss_sum": ce.detach(), "correct": (logits.argmax(-1) == labels).sum(),
                "count": torch.tensor(labels.numel(), device=labels.device)}


def _to(batch: dict, device: torch.device) -> dict:
    return {k: v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


def _load_datasets(cfg: ExperimentConfig, splits=("train", "val", "test")) -> dict:
    from lra_kit import data

    try:
        return {s: data.load(cfg.task, s, scale=cfg.scale, **cfg.data.options) for s in splits}
    except (ValueError, TypeError) as err:  # data.load checks its options on entry: a bad data.options value
        if isinstance(err, ConfigError):
            raise
        raise ConfigError(f"data.options={cfg.data.options!r}: {err}") from err


def _parse_log_line(line: str) -> dict | None:
    """One record of log.jsonl, or None for a line torn by a kill in the middle of its append."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


EVAL_SAMPLE_SEED = 0


def eval_batches(n: int, size: int, max_batches: int | None) -> list[list[int]]:
    """Index batches of ``size`` for evaluating ``n`` examples: all of them in order (``max_batches=None``, or
    enough batches to cover the split), else ``max_batches`` batches of one fixed seeded sample of the whole split.

    A split's examples are stored in index order, and some sources are sorted by label (IMDB's test set:
    the negative reviews first; image folders class by class), so its first few batches can hold a single
    class. The sample is the same at every evaluation, and independent of the global RNG (bit-exact resume).
    """
    if max_batches is None or max_batches * size >= n:
        order = list(range(n))
    else:
        order = np.random.default_rng(EVAL_SAMPLE_SEED).permutation(n)[: max_batches * size].tolist()
    return [order[b: b + size] for b in range(0, len(order), size)]


class Trainer:
    """``Trainer(cfg, out_dir).run()`` trains, evaluates, tests and writes ``results.json``.

    ``datasets`` (``{"train", "val", "test"}``) replaces ``lra_kit.data.load`` (tests);
    ``record`` also writes the results to ``results/<record>/<cfg.name>.json``.
    Bad values raise :class:`lra_kit.errors.ConfigError` here, before any data is read.
    """

    def __init__(self, cfg: ExperimentConfig, out_dir: str | None = None, *, device: str = "auto",
                 datasets: dict | None = None, record: str | None = None, record_dir: str = "results",
                 progress: bool = True, log=print):
        validate(cfg)
        self.cfg, self.out_dir = cfg, out_dir or default_run_dir(cfg)
        self.record, self.record_dir = record, record_dir
        on_cuda = device.startswith("cuda") or (device == "auto" and torch.cuda.is_available())
        self.dist: DistInfo = init_distributed(torch.device("cuda" if on_cuda else "cpu"))
        self.device = local_device(device, self.dist)
        self.progress = progress and self.dist.is_main
        self._log = log if self.dist.is_main else (lambda *a, **k: None)
        t = cfg.train
        per_rank = cfg.data.batch_size // self.dist.world_size
        if cfg.data.batch_size % (self.dist.world_size * t.accumulate):
            raise ConfigError(f"data.batch_size={cfg.data.batch_size} must be divisible by world_size × accumulate "
                              f"= {self.dist.world_size} × {t.accumulate}")
        self.micro = per_rank // t.accumulate
        # Per-rank seeds give the ranks different dropout masks; the initial weights are rank 0's (DDP
        # broadcasts them) and the data order depends on t.seed only. (Resume restores rank 0's RNG on
        # every rank, so bit-identical resume is promised for single-process runs.)
        self._seed_everything(t.seed + self.dist.rank)
        self.datasets = datasets if datasets is not None else _load_datasets(cfg)
        train = self.datasets["train"]
        if len(train) < cfg.data.batch_size:
            raise ConfigError(f"the train split has {len(train)} examples, fewer than "
                              f"data.batch_size={cfg.data.batch_size}")
        self.kind = train.kind
        try:
            model = build_model(cfg.model, kind=train.kind, vocab_size=train.vocab_size, max_length=train.max_length,
                                num_classes=train.num_classes, pad_id=train.pad_id)
        except (ValueError, TypeError) as err:  # the attention's own checks, e.g. model.attention_options.beta=5
            raise ConfigError(f"model: {err}") from err
        self.model = model.to(self.device)
        self.task_loss = TaskLoss(self.model, self.kind)
        self.train_module: nn.Module = self.task_loss
        self.ddp = None
        if self.dist.enabled:
            from torch.nn.parallel import DistributedDataParallel as DDP

            ids = [self.device.index] if self.device.type == "cuda" else None
            # An extra sequence's last update (Luna's P) is read by no loss (unless pooling="p_mean"): its
            # LayerNorm gets no grad.
            unused = attention_spec(cfg.model.attention).extra_sequence
            self.ddp = self.train_module = DDP(self.task_loss, device_ids=ids, find_unused_parameters=unused)
        if t.compile:
            self.train_module = torch.compile(self.train_module)
        self.optimizer = build_optimizer([p for p in self.model.parameters() if p.requires_grad], cfg.optim)
        self.scheduler = build_scheduler(self.optimizer, cfg.optim, t.steps)
        self.state = {"step": 0, "epoch": 0, "batch_in_epoch": 0, "best": None, "best_step": None, "wall_s": 0.0,
                      "curves": {"train": [], "val": []}, "window": [0.0, 0.0, 0.0, 0, 0.0]}
        # The code this process trains with: read now, not when the record is written hours later (the
        # repository may have moved on meanwhile). A resumed run adds one entry per process to state["commits"].
        self.commit = git_commit()

    # -- set-up ---------------------------------------------------------------------------------
    @staticmethod
    def _seed_everything(seed: int) -> None:
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

    def _autocast(self):
        if self.cfg.train.amp and self.device.type == "cuda":
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _loader(self, dataset, batch_sampler) -> DataLoader:
        # A private generator: creating a loader must not consume the global RNG (bit-exact resume).
        return DataLoader(dataset, batch_sampler=batch_sampler, collate_fn=dataset.collate,
                          num_workers=self.cfg.data.num_workers, pin_memory=self.device.type == "cuda",
                          generator=torch.Generator().manual_seed(0))

    @functools.cached_property
    def train_lengths(self) -> np.ndarray:
        """Each training example's length, read once: the training set does not change during a run."""
        return item_lengths(self.datasets["train"])

    def epoch_batches(self, epoch: int, start: int = 0) -> EpochBatches:
        """The training batches of ``epoch`` from batch ``start`` on, for this rank (grouped by length when
        ``data.bucket`` > 0)."""
        train, cfg = self.datasets["train"], self.cfg
        lengths = self.train_lengths if cfg.data.bucket else None
        return EpochBatches(len(train), seed=cfg.train.seed, epoch=epoch, global_batch=cfg.data.batch_size,
                            micro=self.micro, rank=self.dist.rank, world=self.dist.world_size, start=start,
                            lengths=lengths, bucket=cfg.data.bucket)

    # -- files ----------------------------------------------------------------------------------
    def path(self, name: str) -> str:
        return os.path.join(self.out_dir, name)

    def _write_log(self, record: dict) -> None:
        if not self.dist.is_main:
            return
        path = self.path("log.jsonl")
        try:
            with open(path, "a") as f:
                f.write(json.dumps(record) + "\n")
        except OSError as err:  # a full disk: the run stops here and resumes from its last checkpoint
            raise OutputPathError(path, err.strerror or str(err)) from err

    def save_checkpoint(self) -> None:
        if not self.dist.is_main:
            return
        atomic_save({"format": FORMAT, "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                     "scheduler": self.scheduler.state_dict(), "rng": rng_state(), "state": self.state,
                     "config": self.cfg.to_dict()}, self.path("checkpoint.pt"))

    def _resume(self) -> bool:
        path = self.path("checkpoint.pt")
        if not os.path.exists(path):
            return False
        # map_location="cpu": the RNG states must stay CPU tensors; load_state_dict moves the rest
        ckpt = load_checkpoint(path, map_location="cpu", required=TRAINING_KEYS)
        if ckpt["config"] != self.cfg.to_dict():  # a checkpoint from before a field existed has its default
            # ``source`` only tells the reader where the values come from: rewording it changes no training
            saved = json.loads(json.dumps(with_defaults(ckpt["config"]) | {"source": ""}, default=str))
            now = json.loads(json.dumps(self.cfg.to_dict() | {"source": ""}, default=str))
            if saved != now:
                raise RunDirectoryError(f"{self.out_dir} holds a run with a different config; give another --out "
                                        "(or delete the directory) to start a new run")
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.scheduler.load_state_dict(ckpt["scheduler"])
        set_rng_state(ckpt["rng"])
        self.state = ckpt["state"]
        if self.dist.is_main and os.path.exists(self.path("log.jsonl")):  # drop lines written after the checkpoint
            with open(self.path("log.jsonl")) as f:
                records = [r for r in map(_parse_log_line, f) if r is not None]
            kept = [r for r in records if r.get("step", 0) <= self.state["step"] and r.get("split") != "test"]
            atomic_write_text("".join(json.dumps(r) + "\n" for r in kept), self.path("log.jsonl"))
        return True

    # -- evaluation -----------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self, split: str, max_batches: int | None = None, model: nn.Module | None = None) -> dict:
        """Loss and accuracy on ``split``: all of it (``max_batches=None``), or ``max_batches`` batches of a
        fixed seeded sample of it (:func:`eval_batches`)."""
        dataset = self.datasets[split]
        size = self.cfg.data.eval_batch_size or self.cfg.data.batch_size  # a global batch, split over the ranks
        mine = [batch[self.dist.rank::self.dist.world_size] for batch in eval_batches(len(dataset), size, max_batches)]
        mine = [batch for batch in mine if batch]
        module = self.task_loss if model is None else TaskLoss(model, self.kind)
        keys = ("loss_sum", "correct", "count", "seq_sum", "seq_sq", "seqs")
        sums = [0.0] * len(keys)
        for batch in self._eval_batches(module, dataset, mine):
            with self._autocast():
                out = module(batch)
            for i, key in enumerate(keys):
                sums[i] += float(out.get(key, 0.0))
        loss_sum, correct, count, seq_sum, seq_sq, seqs = all_reduce_sum(sums, self.dist, self.device)
        metrics = {"loss": loss_sum / max(count, 1), "accuracy": correct / max(count, 1), "count": int(count)}
        if task_spec(self.cfg.task).metric == "bits_per_dim":
            metrics["bits_per_dim"] = bits_per_dim(loss_sum, int(count))
            metrics.update(per_image_bits(seq_sum, seq_sq, int(seqs)))
        return metrics

    @torch.no_grad()
    def predict(self, split: str) -> np.ndarray:
        """The model's answer (the class of largest logit) for every example of ``split``, in the split's order.

        For classification and retrieval tasks, on one process; ``evaluate`` scores the same answers.
        """
        if self.kind == "lm":
            raise ValueError(f"predict answers classification tasks; {self.cfg.task!r} is language modelling")
        if self.dist.world_size != 1:
            raise ValueError("predict runs on one process; call it outside torchrun")
        dataset = self.datasets[split]
        size = self.cfg.data.eval_batch_size or self.cfg.data.batch_size
        answers = []
        for batch in self._eval_batches(self.model, dataset, eval_batches(len(dataset), size, None)):
            inputs = {k: v for k, v in batch.items() if k != "labels"}
            with self._autocast():
                answers.append(self.model(**inputs).argmax(-1).cpu())
        return torch.cat(answers).numpy()

    def _eval_batches(self, module: nn.Module, dataset, batches: list):
        """``dataset``'s ``batches`` on the device, with ``module`` in eval mode while they are read; after,
        each of its submodules is back in its own mode (a model set to eval inside the training wrapper stays
        so), also when the reader stops early."""
        modes = [(m, m.training) for m in module.modules()]
        module.eval()
        try:
            for batch in self._loader(dataset, batches):
                yield _to(batch, self.device)
        finally:
            for m, training in modes:
                m.training = training

    def _is_better(self, metrics: dict) -> bool:
        key, higher = self.selection_metric()
        if self.state["best"] is None:
            return True
        return metrics[key] > self.state["best"] if higher else metrics[key] < self.state["best"]

    def selection_metric(self) -> tuple[str, bool]:
        """Best-dev selection: accuracy (higher) for classification, loss (lower) for language modelling."""
        return ("loss", False) if self.kind == "lm" else ("accuracy", True)

    # -- training -------------------------------------------------------------------------------
    def train_step(self, batches) -> None:
        t = self.cfg.train
        window = self.state["window"]  # loss_sum, correct, count, tokens, seconds since the last log line
        start = time.perf_counter()
        for i in range(t.accumulate):
            batch = _to(next(batches), self.device)
            sync = contextlib.nullcontext()
            if self.ddp is not None and i < t.accumulate - 1:
                sync = self.ddp.no_sync()  # all-reduce the gradients once, after the last micro-batch
            with sync:
                with self._autocast():
                    out = self.train_module(batch)
                (out["loss"] / t.accumulate).backward()
            window[0] += float(out["loss_sum"])
            window[1] += float(out["correct"])
            window[2] += float(out["count"])
            for key in ("key_padding_mask", "key_padding_mask_1", "key_padding_mask_2"):  # real tokens read
                if key in batch:
                    window[3] += int((~batch[key]).sum())
        if self.cfg.optim.clip_grad_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.clip_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        window[4] += time.perf_counter() - start

    def _log_train(self, bar) -> None:
        loss_sum, correct, count, tokens, seconds = self.state["window"]
        loss_sum, correct, count, tokens = all_reduce_sum([loss_sum, correct, count, tokens], self.dist, self.device)
        record = {"step": self.state["step"], "split": "train", "loss": loss_sum / max(count, 1),
                  "accuracy": correct / max(count, 1), "lr": self.scheduler.get_last_lr()[0],
                  "tokens_per_s": tokens / max(seconds, 1e-9)}
        self.state["curves"]["train"].append(record)
        self.state["window"] = [0.0, 0.0, 0.0, 0, 0.0]
        self._write_log(record)
        if bar is not None:
            bar.set_postfix(loss=f"{record['loss']:.4f}", acc=f"{record['accuracy']:.3f}",
                            tok_s=f"{record['tokens_per_s']:.0f}")

    def _evaluate_dev(self) -> dict:
        metrics = self.evaluate("val", self.cfg.train.eval_batches)
        record = {"step": self.state["step"], "split": "val", **metrics}
        self.state["curves"]["val"].append(record)
        self._write_log(record)
        if self._is_better(metrics):
            key, _ = self.selection_metric()
            self.state["best"], self.state["best_step"] = metrics[key], self.state["step"]
            if self.dist.is_main:
                atomic_save({"model": self.model.state_dict(), "step": self.state["step"], "metrics": metrics},
                            self.path("best.pt"))
        return metrics

    def _record_path(self) -> str | None:
        return record_path(self.record_dir, self.record, self.cfg) if self.record else None

    def check_outputs(self) -> None:
        """Raise ``OutputPathError`` now, not after hours of training, if an output path is unwritable."""
        if not self.dist.is_main:
            return
        check_writable(self.out_dir, directory=True)
        if self.record:
            check_writable(self._record_path())

    def _exclusive(self):
        """The run directory's lock (rank 0 writes everything, so rank 0 holds it)."""
        return run_directory_lock(self.out_dir) if self.dist.is_main else contextlib.nullcontext()

    def run(self) -> dict:
        """Train (resuming from ``checkpoint.pt`` if there is one), then :meth:`finish`."""
        self.check_outputs()
        if self.dist.is_main:
            try:
                os.makedirs(self.out_dir, exist_ok=True)
            except OSError as err:
                raise OutputPathError(self.out_dir, err.strerror or str(err)) from err
        barrier(self.dist)
        with self._exclusive():
            if self.dist.is_main:
                for orphan in remove_orphans(self.out_dir):
                    self._log(f"[lra-kit] removed {orphan}, left by a write that was killed")
            self._train()
            return self.finish()

    def _train(self) -> None:
        cfg, t = self.cfg, self.cfg.train
        resumed = self._resume()
        self.state.setdefault("commits", []).append({"from_step": self.state["step"], "commit": self.commit})
        processes = f" × {self.dist.world_size} processes" if self.dist.enabled else ""
        self._log(f"[lra-kit] {cfg.name} (scale={cfg.scale}) on {self.device}{processes}; run directory {self.out_dir}")
        self._log(format_config(cfg))
        if resumed:
            self._log(f"[lra-kit] resuming from the checkpoint at step {self.state['step']}/{t.steps} "
                      f"in {self.out_dir}")
        elif self.dist.is_main:
            atomic_write_text(format_config(cfg) + "\n", self.path("config.json"))
            if os.path.exists(self.path("log.jsonl")):
                os.unlink(self.path("log.jsonl"))
        every_ckpt = t.checkpoint_every or t.eval_every
        train = self.datasets["train"]
        bar = tqdm(total=t.steps, initial=self.state["step"], desc=cfg.name, disable=not self.progress,
                   dynamic_ncols=True)
        started = time.perf_counter()
        wall_before = self.state["wall_s"]
        self.train_module.train()
        while self.state["step"] < t.steps:
            sampler = self.epoch_batches(self.state["epoch"], start=self.state["batch_in_epoch"])
            batches = iter(self._loader(train, sampler))
            for _ in range(sampler.batches - self.state["batch_in_epoch"]):
                self.train_step(batches)
                self.state["step"] += 1
                self.state["batch_in_epoch"] += 1
                step = self.state["step"]
                bar.update(1)
                if step % t.log_every == 0 or step == t.steps:
                    self._log_train(bar)
                if step % t.eval_every == 0 or step == t.steps:
                    self._evaluate_dev()
                self.state["wall_s"] = wall_before + time.perf_counter() - started
                if step % every_ckpt == 0 or step == t.steps:
                    self.save_checkpoint()
                if step >= t.steps:
                    break
            if self.state["batch_in_epoch"] >= sampler.batches:
                self.state["epoch"] += 1
                self.state["batch_in_epoch"] = 0
        bar.close()

    def finish(self) -> dict:
        """Test the best-dev model (or the last one if there was no evaluation) and write the results.

        The best weights are loaded into ``self.model`` for the test and the last ones put back after it.
        """
        best_path = self.path("best.pt")
        barrier(self.dist)
        last = None
        if os.path.exists(best_path):
            best = load_checkpoint(best_path)["model"]
            last = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
            self.model.load_state_dict(best)
        try:
            test = self.evaluate("test")
        finally:
            if last is not None:
                self.model.load_state_dict(last)
        self._write_log({"step": self.state["step"], "split": "test", **test})
        last_val = self.state["curves"]["val"][-1] if self.state["curves"]["val"] else None
        last_train = self.state["curves"]["train"][-1] if self.state["curves"]["train"] else None
        best_val = {"step": self.state["best_step"], self.selection_metric()[0]: self.state["best"]}
        metrics = {"test": test, "best_val": best_val, "last_val": last_val, "last_train": last_train}
        results = make_results(metrics=metrics, config=self.cfg.to_dict(), scale=self.cfg.scale_name,
                               steps=self.state["step"], seed=self.cfg.train.seed, wall_s=self.state["wall_s"],
                               device=self.device, commit=self.commit, commits=self.state.get("commits", []),
                               experiment=self.cfg.name, task=self.cfg.task,
                               attention=self.cfg.attention, connection=self.cfg.connection,
                               world_size=self.dist.world_size, data=dict(self.datasets["train"].metadata),
                               curves=self.state["curves"])
        if self.dist.is_main:
            write_results(results, self.path("results.json"))
            if self.record:
                path = write_results(results, self._record_path())
                self._log(f"[lra-kit] recorded {path}")
            shown = ", ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in test.items())
            self._log(f"[lra-kit] test ({self.cfg.name}, scale={self.cfg.scale}): {shown}")
        return results
