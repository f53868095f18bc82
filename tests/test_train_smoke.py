"""Every attention × every task trains at ``smoke`` scale on the CPU and its training loss goes down.

The smoke runs are a dozen steps long, too short to generalise on ListOps or Pathfinder, so
each run trains on the first 32 training examples (three epochs of them) and the loss on
exactly those examples is compared before and after: a deterministic "the loss decreases". The
validation and test passes only have to run, on one batch of 8 each (the whole test split took a quarter of
the time of the runs at 1,024 tokens).
"""
from __future__ import annotations

import pytest
import torch

from lra_kit.attention import attention_names, attention_spec
from lra_kit.data import load
from lra_kit.train.configs import LM_TASKS, TASKS, get_config
from lra_kit.train.trainer import Trainer

ATTENTIONS = attention_names()
_DATA: dict = {}


class Head(torch.utils.data.Dataset):
    """The first ``n`` items of a dataset, with its attributes (vocab_size, collate, kind, ...)."""

    def __init__(self, dataset, n):
        self.dataset, self.n = dataset, min(n, len(dataset))

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return self.dataset[index]

    def __getattr__(self, name):
        return getattr(self.__dict__["dataset"], name)


def write_aan_fixture(root) -> None:
    """A tiny AAN set in the official format (``label, id1, id2, text1, text2``, tab-separated, no header):
    the real corpus is not offline, so Retrieval's smoke run reads this through the real loader."""
    import random

    rng = random.Random(0)
    words = ["attention", "linear", "kernel", "momentum", "parsing", "translation", "corpus", "grammar"]
    for name, n in (("train", 32), ("eval", 16), ("test", 16)):
        with open(root / f"new_aan_pairs.{name}.tsv", "w") as f:
            for i in range(n):
                label = i % 2
                topic = rng.choice(words)
                a = " ".join([topic] * 3 + rng.choices(words, k=12))
                b = " ".join(([topic] * 3 if label else []) + rng.choices(words, k=12))
                f.write(f"{label}\tdoc{i}a\tdoc{i}b\t{a}\t{b}\n")


def label_entropy(dataset) -> float:
    """The cross-entropy of the best constant prediction: the entropy of the labels' frequencies (nats)."""
    counts = torch.bincount(torch.tensor([dataset[i][-1] for i in range(len(dataset))])).double()
    p = counts[counts > 0] / counts.sum()
    return float(-(p * p.log()).sum())


def smoke_data(task, tmp_path_factory):
    if task not in _DATA:
        options = {}
        if task == "retrieval":
            root = tmp_path_factory.mktemp("aan")
            write_aan_fixture(root)
            options = {"root": root}
        _DATA[task] = {s: load(task, s, scale="smoke", **options) for s in ("train", "val", "test")}
    return _DATA[task]


@pytest.mark.data
@pytest.mark.parametrize("task,attention", [(task, attention) for attention in ATTENTIONS for task in TASKS
                                            if attention_spec(attention).causal or task not in LM_TASKS])
def test_smoke_training_decreases_the_loss(task, attention, tmp_path, tmp_path_factory):
    cfg = get_config(task, attention, "smoke")
    data = dict(smoke_data(task, tmp_path_factory))
    data["train"] = Head(data["train"], 32)
    data["val"], data["test"] = Head(data["val"], 8), Head(data["test"], 8)  # only run, not judged: one batch each
    trainer = Trainer(cfg, str(tmp_path / cfg.name), datasets=data, progress=False, log=lambda *a: None)
    before = trainer.evaluate("train")["loss"]
    results = trainer.run()
    after = trainer.evaluate("train")["loss"]
    # A model that starts at the loss of the best constant guess (the labels' entropy; LSH's initialisation on
    # Pathfinder does) cannot go below it in a dozen steps: there it must stay, not rise.
    floor = label_entropy(data["train"]) if data["train"].kind != "lm" else None
    if floor is not None and before < floor + 1e-3:
        assert after < floor + 1e-3, f"{cfg.name}: loss {before:.4f} -> {after:.4f}, the labels' entropy {floor:.4f}"
    else:
        assert after < before, f"{cfg.name}: loss {before:.4f} -> {after:.4f}"
    assert results["steps"] == cfg.train.steps and results["scale"] == "smoke"
    assert results["metrics"]["test"]["count"] > 0
