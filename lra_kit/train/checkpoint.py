"""Checkpoints: atomic, resumable bit for bit, and safe to load.

A checkpoint holds the model, optimizer and scheduler states, the RNG states (Python, NumPy,
torch CPU and CUDA), the step, the data position (epoch, batches taken in it) and the trainer's
running record (best dev metric, loss curve).

* Atomic: it is written to a temporary file in the same directory, fsync'ed, then renamed over the
  old one (:func:`lra_kit.atomic.atomic_write`), so a run killed at any moment leaves either the old
  checkpoint or the new one, never half of one.
* Safe to load: it holds only tensors and plain data (dicts, lists, tuples, numbers, strings), and
  is read with ``torch.load(..., weights_only=True)``, so a file that holds anything else (a pickled
  object that would run code) is refused with a :class:`lra_kit.errors.CheckpointError` naming it.
  That is why the Python and NumPy RNG states are stored as plain numbers, not as the objects
  ``random.getstate()`` / ``np.random.get_state()`` return.
"""
from __future__ import annotations

import pickle
import random
from typing import Any

import numpy as np
import torch

from lra_kit.atomic import atomic_write
from lra_kit.errors import CheckpointError

FORMAT = 1  # bumped when the layout of a training checkpoint changes
TRAINING_KEYS = ("format", "model", "optimizer", "scheduler", "rng", "state", "config")


def atomic_save(obj: Any, path: str) -> None:
    """``torch.save`` to ``path`` through a temporary file + ``os.replace`` (never a torn checkpoint)."""
    with atomic_write(path, "wb") as f:
        torch.save(obj, f)


def atomic_write_text(text: str, path: str) -> None:
    """Write a text file atomically (temporary file + rename)."""
    with atomic_write(path, "w") as f:
        f.write(text)


def rng_state() -> dict:
    """Every RNG state a training step draws from, as tensors and plain numbers only."""
    version, mt, gauss = random.getstate()
    name, key, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state = {"python": [int(version), [int(x) for x in mt], gauss],
             "numpy": [str(name), torch.from_numpy(key.astype(np.int64)), int(pos), int(has_gauss), float(cached)],
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` returned."""
    version, mt, gauss = state["python"]
    random.setstate((version, tuple(mt), gauss))
    name, key, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, key.numpy().astype(np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def load_checkpoint(path: str, map_location="cpu", *, required: tuple[str, ...] = ("model",)) -> dict:
    """Load a checkpoint with ``weights_only=True``; any problem is a ``CheckpointError`` naming ``path``.

    ``required``: the keys the caller needs (a training checkpoint: :data:`TRAINING_KEYS`).
    """
    try:
        ckpt = torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError as err:
        raise CheckpointError(path, "no such file") from err
    except pickle.UnpicklingError as err:
        if "weights only" in str(err).lower():
            raise CheckpointError(path, "refused: it holds Python objects other than tensors and plain data, "
                                        "which could run code when loaded (it was not written by this version "
                                        "of lra-kit); delete it to start the run afresh") from None
        raise CheckpointError(path, f"corrupt ({err})") from err
    except MemoryError:
        raise
    except Exception as err:  # a truncated or foreign file fails in torch's zip or pickle reader
        raise CheckpointError(path, f"corrupt or truncated ({type(err).__name__}: {err})") from err
    if not isinstance(ckpt, dict):
        raise CheckpointError(path, f"not an lra-kit checkpoint (holds a {type(ckpt).__name__}, not a dict)")
    missing = [key for key in required if key not in ckpt]
    if missing:
        raise CheckpointError(path, f"not an lra-kit checkpoint (no {', '.join(missing)})")
    if "format" in required and ckpt["format"] != FORMAT:
        raise CheckpointError(path, f"format {ckpt['format']!r}, this lra-kit reads format {FORMAT}")
    return ckpt


__all__ = ["FORMAT", "TRAINING_KEYS", "atomic_save", "atomic_write_text", "load_checkpoint", "rng_state",
           "set_rng_state"]
