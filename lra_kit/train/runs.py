"""A run directory read back: its config and its best weights, as a Trainer ready to evaluate or sample.

Used by ``lra-kit eval`` and ``lra-kit generate`` and by the library (``lra_kit.train.samples``).
"""
from __future__ import annotations

import os

from lra_kit.errors import RunDirectoryError
from lra_kit.train.checkpoint import load_checkpoint
from lra_kit.train.configs import from_dict, load_config_file
from lra_kit.train.trainer import Trainer


def load_run(run_dir: str, device: str = "cpu"):
    """``(trainer, checkpoint name)``: the run's Trainer with its best (else its latest) weights.

    The config comes from the run's ``config.json``, the weights from ``best.pt`` (else ``checkpoint.pt``),
    read safely (no code is executed) and before any data is loaded, so a bad file fails fast.
    """
    path = os.path.join(run_dir, "config.json")
    if not os.path.isfile(path):
        raise RunDirectoryError(f"{run_dir} is not a run directory (no config.json); train one with `lra-kit train`")
    names = [name for name in ("best.pt", "checkpoint.pt") if os.path.exists(os.path.join(run_dir, name))]
    if not names:
        raise RunDirectoryError(f"{run_dir} has no checkpoint yet (best.pt or checkpoint.pt)")
    cfg = from_dict(load_config_file(path))
    state = load_checkpoint(os.path.join(run_dir, names[0]))["model"]  # before the data: a bad file fails fast
    trainer = Trainer(cfg, run_dir, device=device, progress=False)
    trainer.model.load_state_dict(state)
    return trainer, names[0]


__all__ = ["load_run"]
