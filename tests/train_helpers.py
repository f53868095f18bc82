"""A tiny copy-task run shared by the checkpoint tests and the child processes they kill."""
from __future__ import annotations

import os

import torch

from lra_kit.data import load
from lra_kit.train.checkpoint import load_checkpoint
from lra_kit.train.configs import get_config


def tiny_copy_config(attention="momentum", connection="adaptive", steps=12):
    cfg = get_config("copy", attention, "smoke", connection)
    cfg.model.layers, cfg.model.d_model, cfg.model.d_ff = 2, 16, 32
    cfg.model.dropout = cfg.model.attention_dropout = 0.1  # dropout on: the RNG state must be restored too
    cfg.data.batch_size, cfg.train.steps, cfg.train.eval_every, cfg.train.eval_batches = 8, steps, 4, 1
    cfg.train.log_every, cfg.train.checkpoint_every = 2, 4
    cfg.optim.schedule, cfg.optim.decay_steps = "step", (6,)  # the scheduler state matters
    return cfg


def copy_datasets():
    # 40 training samples = 5 batches per epoch: 12 steps cross two epoch ends
    sizes = {"train": {"size": 40}, "val": {}, "test": {}}
    return {split: load("copy", split, scale="smoke", **options) for split, options in sizes.items()}


def quiet(*args, **kwargs):
    pass


def final_state(run_dir):
    return load_checkpoint(os.path.join(run_dir, "checkpoint.pt"))


def assert_same_final_state(a: dict, b: dict) -> None:
    """Two training checkpoints hold the same step, weights, optimizer and scheduler states, bit for bit."""
    assert a["state"]["step"] == b["state"]["step"]
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name
    assert a["optimizer"]["state"].keys() == b["optimizer"]["state"].keys()
    for k, st in a["optimizer"]["state"].items():
        for key, value in st.items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(b["optimizer"]["state"][k][key])), key
    assert a["scheduler"] == b["scheduler"]
    assert a["state"]["curves"]["val"] == b["state"]["curves"]["val"]
