"""Atomic checkpoints: everything a killed run needs to continue bit for bit.

A checkpoint holds the model, optimizer, scheduler (and AMP scaler) states, the RNG states
(Python, NumPy, torch CPU and CUDA), the step, the data position (epoch, batches taken in it)
and the trainer's running record (best dev metric, loss curve). It is written to a temporary
file in the same directory, flushed and fsync'ed, then renamed over the old one, so a run
killed at any moment leaves either the old checkpoint or the new one, never half of one.
"""
from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

from lra_kit.atomic import atomic_write


def atomic_save(obj: Any, path: str) -> None:
    """``torch.save`` to ``path`` through a temporary file + ``os.replace`` (never a torn checkpoint)."""
    with atomic_write(path, "wb") as f:
        torch.save(obj, f)


def atomic_write_text(text: str, path: str) -> None:
    """Write a text file atomically (temporary file + rename)."""
    with atomic_write(path, "w") as f:
        f.write(text)


def rng_state() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def load_checkpoint(path: str, map_location="cpu") -> dict:
    # weights_only=False: the checkpoint holds RNG states and plain Python records we wrote ourselves.
    return torch.load(path, map_location=map_location, weights_only=False)
