"""Trainer details: gradient accumulation, clipping, the lr schedule in the log, bad batch sizes."""
from __future__ import annotations

import pytest
import torch

from lra_kit.data import load
from lra_kit.train.checkpoint import load_checkpoint
from lra_kit.train.configs import apply_overrides, get_config
from lra_kit.train.trainer import Trainer


@pytest.fixture(scope="module")
def listops():
    return {s: load("listops", s, scale="smoke") for s in ("train", "val", "test")}


def quiet(*a, **k):
    pass


def cfg_with(*overrides):
    cfg = get_config("listops", "linear", "smoke")
    return apply_overrides(cfg, ["model.dropout=0.0", "model.attention_dropout=0.0", "train.steps=4",
                                 "train.eval_every=4", *overrides])


@pytest.mark.data
def test_gradient_accumulation_equals_the_full_batch(tmp_path, listops):
    Trainer(cfg_with(), str(tmp_path / "full"), datasets=listops, progress=False, log=quiet).run()
    Trainer(cfg_with("train.accumulate=4"), str(tmp_path / "acc"), datasets=listops, progress=False, log=quiet).run()
    a = load_checkpoint(str(tmp_path / "full" / "checkpoint.pt"))["model"]
    b = load_checkpoint(str(tmp_path / "acc" / "checkpoint.pt"))["model"]
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-4, atol=1e-6, msg=name)


@pytest.mark.data
def test_clipping_and_schedule_are_applied(tmp_path, listops):
    cfg = cfg_with("optim.clip_grad_norm=0.5", "optim.schedule='linear'", "optim.warmup_steps=2",
                   "optim.warmup_start=0.5", "optim.final_ratio=0.0", "train.log_every=1")
    results = Trainer(cfg, str(tmp_path / "run"), datasets=listops, progress=False, log=quiet).run()
    lrs = [r["lr"] for r in results["curves"]["train"]]
    lr = cfg.optim.lr
    assert lrs == pytest.approx([0.75 * lr, lr, 0.5 * lr, 0.0])  # the lr of the *next* update


def test_batch_must_split_into_micro_batches(listops):
    with pytest.raises(ValueError, match="divisible"):
        Trainer(cfg_with("train.accumulate=3"), "/nonexistent", datasets=listops, progress=False, log=quiet)


def test_eval_batches_cover_the_split_in_order_or_sample_all_of_it():
    """A limited dev evaluation draws from the whole split, not its first batches (which can be one class)."""
    from lra_kit.train.trainer import eval_batches

    full = eval_batches(10, 4, None)
    assert full == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert eval_batches(10, 4, 3) == full  # enough batches to cover the split: all of it, in order
    labels = [0] * 500 + [1] * 500  # a label-sorted split, as IMDB's test set is stored
    sample = eval_batches(1000, 16, 8)
    assert len(sample) == 8 and all(len(b) == 16 for b in sample)
    flat = [i for b in sample for i in b]
    assert len(set(flat)) == 128 and max(flat) < 1000
    assert 0.3 < sum(labels[i] for i in flat) / 128 < 0.7  # both classes, where the first 128 hold one
    assert eval_batches(1000, 16, 8) == sample  # the same sample at every evaluation


@pytest.mark.data
def test_predict_gives_each_examples_answer_in_order(tmp_path, listops):
    # untrained: a few steps of training make it answer one value everywhere, which no order could get wrong
    trainer = Trainer(cfg_with(), str(tmp_path / "run"), datasets=listops, progress=False, log=quiet)
    answers, labels = trainer.predict("test"), listops["test"].labels()
    assert answers.shape == labels.shape and len(set(answers.tolist())) > 1  # an order to get wrong
    assert (answers == labels).mean() == pytest.approx(trainer.evaluate("test")["accuracy"])
    trainer.model.eval()
    with torch.no_grad():
        for i in range(len(labels)):  # one example at a time, unpadded: the same answer
            assert int(trainer.model(listops["test"][i][0][None]).argmax()) == answers[i], i


@pytest.mark.data
def test_evaluation_leaves_the_model_in_the_mode_it_found(tmp_path, listops):
    """Dropout must stay on for the training steps after a dev evaluation, and off for a reader's eval model."""
    trainer = Trainer(cfg_with("model.dropout=0.1"), str(tmp_path / "run"), datasets=listops, progress=False,
                      log=quiet)
    for mode in (True, False):
        trainer.model.train(mode)
        trainer.evaluate("val")
        trainer.predict("val")
        assert all(m.training == mode for m in trainer.model.modules()), mode
