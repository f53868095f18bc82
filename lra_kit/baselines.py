"""What a classifier scores from one token: the floor below which a trained model has read nothing else.

ListOps (Nangia & Bowman 2018; LRA, Tay et al. 2021 §3.1) asks for the value of a nested expression.
That value is the value of its outermost operator, and which operator that is (the expression's first
token) already narrows the answer: the maximum of many digits is most often 9, the minimum 0, the median
a middle digit, while a sum mod 10 is spread over all ten. :func:`first_token_rule` fits that rule on a
training set (for each first token, its most frequent label) and scores it on another split, so a page
can say how much of a model's accuracy this one token explains.

``python -m lra_kit.baselines --task listops --preset lra-cpu-2h --record-dir results/lra/baselines`` scores
it on the data a preset's runs read and writes the record (``lra_kit.results`` format); with ``--run RUN_DIR``
(repeatable) it records instead how far each trained run's answers agree with the rule (:func:`rule_agreement`).
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


def fit_first_token(train: SequenceClassificationDataset) -> tuple[dict[int, int], int]:
    """``(rule, fallback)``: each first token's most frequent label in ``train``, and the most frequent label
    overall (for a first token never seen); ties go to the smaller label."""
    first, labels = _first_tokens(train, "train"), train.labels()

    def most_frequent(values: np.ndarray) -> int:
        counts = Counter(values.tolist())
        return min(counts, key=lambda label: (-counts[label], label))

    return {int(token): most_frequent(labels[first == token]) for token in np.unique(first)}, most_frequent(labels)


def apply_first_token(rule: dict[int, int], fallback: int, dataset: SequenceClassificationDataset, *,
                      name: str = "dataset") -> np.ndarray:
    """The rule's answer for every example of ``dataset`` (called ``name`` in errors), in order."""
    return _answers(rule, fallback, _first_tokens(dataset, name))


def _answers(rule: dict[int, int], fallback: int, first: np.ndarray) -> np.ndarray:
    return np.array([rule.get(int(token), fallback) for token in first], dtype=np.int64)


def first_token_rule(train: SequenceClassificationDataset, test: SequenceClassificationDataset) -> dict:
    """Fit "answer the most frequent training label of this first token" on ``train``; score it on ``test``.

    A first token never seen in ``train`` gets the most frequent training label overall; ties go to the
    smaller label. Returns ``accuracy`` and ``count`` on ``test``, the ``rule`` (first token id → label),
    and ``majority``, the accuracy on ``test`` of always answering the most frequent training label (the
    rule's own floor).
    """
    rule, fallback = fit_first_token(train)
    predicted, labels = apply_first_token(rule, fallback, test, name="test"), test.labels()
    return {"accuracy": float((predicted == labels).mean()), "count": int(len(labels)), "rule": rule,
            "majority": float((labels == fallback).mean())}


def rule_agreement(run_dir: str, split: str = "test") -> dict:
    """How much of a trained classifier's answers the first-token rule explains, on ``split``.

    The run's best weights (``lra_kit.train.runs.load_run``) answer every example of ``split``; the rule is
    fitted on the run's own training set. Returns ``agreement`` (the fraction of examples where the model
    and the rule give the same answer), both accuracies, and the model's accuracy where the rule is right
    and where it is wrong: a model that had learned the rule and nothing else would agree everywhere and
    score 0 where the rule is wrong.
    """
    from lra_kit.train.runs import load_run

    trainer, checkpoint = load_run(run_dir)
    data = trainer.datasets[split]
    rule, fallback = fit_first_token(trainer.datasets["train"])
    first = _first_tokens(data, split)
    scored = compare_with_rule(trainer.predict(split), _answers(rule, fallback, first), data.labels(), first)
    return {**scored, "checkpoint": checkpoint, "run": trainer.cfg.name}


def compare_with_rule(by_model: np.ndarray, by_rule: np.ndarray, labels: np.ndarray, first: np.ndarray) -> dict:
    """Answers of a model and of the rule against the labels, overall and for each first token
    (``by_first_token``: count, agreement, both accuracies); see :func:`rule_agreement`."""
    by_model, by_rule, labels, first = map(np.asarray, (by_model, by_rule, labels, first))
    if not by_model.shape == by_rule.shape == labels.shape == first.shape or by_model.ndim != 1:
        raise ValueError(f"by_model, by_rule, labels and first must be 1-D of one length, got shapes {by_model.shape}, "
                         f"{by_rule.shape}, {labels.shape}, {first.shape}")

    def share(mask: np.ndarray) -> float | None:
        return float(mask.mean()) if mask.size else None

    model_right, rule_right, agree = by_model == labels, by_rule == labels, by_model == by_rule
    per_token = {}
    for token in np.unique(first):
        at = first == token
        per_token[int(token)] = {"count": int(at.sum()), "agreement": share(agree[at]),
                                 "model_accuracy": share(model_right[at]), "rule_accuracy": share(rule_right[at])}
    return {"agreement": share(agree), "model_accuracy": share(model_right), "rule_accuracy": share(rule_right),
            "model_accuracy_where_rule_right": share(model_right[rule_right]),
            "model_accuracy_where_rule_wrong": share(model_right[~rule_right]), "count": int(len(labels)),
            "rule_wrong_count": int((~rule_right).sum()), "by_first_token": per_token}


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


def record_rule_agreement(run_dir: str, preset: str, record_dir: str, split: str = "test") -> str:
    """Write :func:`rule_agreement` of the run in ``run_dir`` (trained at ``preset``) as
    ``<record_dir>/<run name>-first-token-agreement.json``; returns the path."""
    from lra_kit.train.runs import run_config

    cfg = run_config(run_dir)
    if cfg.preset != preset:
        raise ValueError(f"run_dir {run_dir} was trained at preset {cfg.preset!r}, not {preset!r}")
    start = time.perf_counter()
    metrics = {split: rule_agreement(run_dir, split)}
    config = {"task": cfg.task, "preset": preset, "run_config": cfg.to_dict(), "split": split,
              "rule": "most frequent training label of each first token", "fitted_on": "train"}
    record = make_results(metrics=metrics, config=config, scale=preset, steps=cfg.train.steps, seed=cfg.train.seed,
                          wall_s=time.perf_counter() - start, device="cpu", experiment="first-token rule agreement",
                          task=cfg.task, attention=cfg.attention, connection=cfg.connection)
    os.makedirs(record_dir, exist_ok=True)
    return write_results(record, os.path.join(record_dir, f"{cfg.name}-first-token-agreement.json"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lra_kit.baselines", description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", default="listops", help="a classification task (default listops)")
    parser.add_argument("--preset", required=True, help="the preset whose data to read, e.g. lra-cpu-2h")
    parser.add_argument("--record-dir", required=True, help="where the record is written")
    parser.add_argument("--run", action="append", default=[], metavar="RUN_DIR",
                        help="record how far this trained run agrees with the rule instead (repeatable)")
    args = parser.parse_args(argv)
    if not args.run:
        print(f"[lra-kit] wrote {record_first_token(args.task, args.preset, args.record_dir)}")
    for run_dir in args.run:
        print(f"[lra-kit] wrote {record_rule_agreement(run_dir, args.preset, args.record_dir)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
