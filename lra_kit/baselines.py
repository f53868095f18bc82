"""What a classifier scores from one token: the floor below which a trained model has read nothing else.

ListOps (Nangia & Bowman 2018; LRA, Tay et al. 2021 §3.1) asks for the value of a nested expression.
That value is the value of its outermost operator, and which operator that is (the expression's first
token) already narrows the answer: the maximum of many digits is most often 9, the minimum 0, the median
a middle digit, while a sum mod 10 is spread over all ten. :func:`first_token_rule` fits that rule on a
training set (for each first token, its most frequent label) and scores it on another split, so a page
can say how much of a model's accuracy this one token explains.

``python -m lra_kit.baselines --task listops --preset lra-cpu-2h --record-dir results/lra/baselines`` scores
it on the data a preset's runs read and writes the record (``lra_kit.results`` format).
"""
from __future__ import annotations

import argparse
import os
import time
from collections import Counter

import numpy as np

from lra_kit.data.base import SequenceClassificationDataset
from lra_kit.results import make_results, write_results


def _first_tokens(dataset: SequenceClassificationDataset, name: str) -> np.ndarray:
    if not isinstance(dataset, SequenceClassificationDataset):
        raise TypeError(f"{name} must be a SequenceClassificationDataset (one token sequence an example), "
                        f"got {type(dataset).__name__}")
    lengths = dataset.lengths()
    if len(dataset) == 0 or (lengths == 0).any():
        raise ValueError(f"{name} must hold at least one example and no empty sequence")
    return dataset.sequences.values[dataset.sequences.offsets[:-1]].astype(np.int64) + dataset.id_offset


def first_token_rule(train: SequenceClassificationDataset, test: SequenceClassificationDataset) -> dict:
    """Fit "answer the most frequent training label of this first token" on ``train``; score it on ``test``.

    A first token never seen in ``train`` gets the most frequent training label overall; ties go to the
    smaller label. Returns ``accuracy`` and ``count`` on ``test``, the ``rule`` (first token id → label),
    and ``majority``, the accuracy on ``test`` of always answering the most frequent training label (the
    rule's own floor).
    """
    first, labels = _first_tokens(train, "train"), train.labels()
    test_first, test_labels = _first_tokens(test, "test"), test.labels()

    def most_frequent(values: np.ndarray) -> int:
        counts = Counter(values.tolist())
        return min(counts, key=lambda label: (-counts[label], label))

    overall = most_frequent(labels)
    rule = {int(token): most_frequent(labels[first == token]) for token in np.unique(first)}
    predicted = np.array([rule.get(int(token), overall) for token in test_first])
    return {"accuracy": float((predicted == test_labels).mean()), "count": int(len(test_labels)), "rule": rule,
            "majority": float((test_labels == overall).mean())}


def record_first_token(task: str, preset: str, record_dir: str, splits=("val", "test")) -> str:
    """Score :func:`first_token_rule` on the data of ``task`` at ``preset`` (fitted on its training split) and
    write ``<record_dir>/<task>-first-token-<preset>.json``; returns the path."""
    from lra_kit import data
    from lra_kit.train.configs import get_config

    cfg = get_config(task, "softmax", preset=preset)
    start = time.perf_counter()
    loaded = {s: data.load(task, s, scale=cfg.scale, **cfg.data.options) for s in ("train", *splits)}
    metrics = {}
    for split in splits:
        scored = first_token_rule(loaded["train"], loaded[split])
        scored["rule"] = {str(k): v for k, v in scored["rule"].items()}  # JSON keys are strings
        metrics[split] = scored
    config = {"task": task, "preset": preset, "data_scale": cfg.scale, "data_options": dict(cfg.data.options),
              "rule": "most frequent training label of each first token", "fitted_on": "train",
              "train_count": len(loaded["train"])}
    record = make_results(metrics=metrics, config=config, scale=preset, steps=0, seed=0,
                          wall_s=time.perf_counter() - start, device="cpu", experiment="first-token rule",
                          task=task)
    os.makedirs(record_dir, exist_ok=True)
    return write_results(record, os.path.join(record_dir, f"{task}-first-token-{preset}.json"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lra_kit.baselines", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="listops", help="a classification task (default listops)")
    parser.add_argument("--preset", required=True, help="the preset whose data to read, e.g. lra-cpu-2h")
    parser.add_argument("--record-dir", required=True, help="where the record is written")
    args = parser.parse_args(argv)
    path = record_first_token(args.task, args.preset, args.record_dir)
    print(f"[lra-kit] wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
