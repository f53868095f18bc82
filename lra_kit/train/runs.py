"""A run directory read back: its config and its best weights, as a Trainer ready to evaluate or sample.

Used by ``lra-kit eval``, ``lra-kit generate`` and ``lra-kit export-web`` (``lra_kit.web.export``).
"""
from __future__ import annotations

import os

from lra_kit.errors import RunDirectoryError
from lra_kit.train.checkpoint import load_checkpoint
from lra_kit.train.configs import from_dict, load_config_file
from lra_kit.train.trainer import Trainer


def run_config(run_dir: str):
    """The config a run directory was trained with (its ``config.json``)."""
    path = os.path.join(run_dir, "config.json")
    if not os.path.isfile(path):
        raise RunDirectoryError(f"{run_dir} is not a run directory (no config.json); train one with `lra-kit train`")
    return from_dict(load_config_file(path))


def checkpoint_name(run_dir: str) -> str:
    """``best.pt`` if the run has one, else ``checkpoint.pt`` (the latest)."""
    names = [name for name in ("best.pt", "checkpoint.pt") if os.path.exists(os.path.join(run_dir, name))]
    if not names:
        raise RunDirectoryError(f"{run_dir} has no checkpoint yet (best.pt or checkpoint.pt)")
    return names[0]


def load_run(run_dir: str, device: str = "cpu"):
    """``(trainer, checkpoint name)``: the run's Trainer with its best (else its latest) weights.

    The config comes from the run's ``config.json``, the weights from ``best.pt`` (else ``checkpoint.pt``),
    read safely (no code is executed) and before any data is loaded, so a bad file fails fast.
    """
    cfg = run_config(run_dir)
    name = checkpoint_name(run_dir)
    state = load_checkpoint(os.path.join(run_dir, name))["model"]  # before the data: a bad file fails fast
    trainer = Trainer(cfg, run_dir, device=device, progress=False)
    trainer.model.load_state_dict(state)
    return trainer, name


__all__ = ["checkpoint_name", "load_run", "run_config"]
