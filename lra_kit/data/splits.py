"""Split names, scale-dependent subset sizes and seeded index choices.

``smoke`` keeps tens to hundreds of examples (seconds on a CPU), ``book`` a few thousand,
``paper`` everything (docs/design.md §3). Subsets are chosen by a seeded permutation, so the same
scale always gives the same examples.
"""
from __future__ import annotations

import numpy as np

from lra_kit.scales import get_scale

SPLITS = ("train", "val", "test")

# examples per split at each scale; None = the full split
SCALE_SIZES = {
    "smoke": {"train": 256, "val": 64, "test": 64},
    "book": {"train": 4000, "val": 500, "test": 500},
    "cpu": {"train": None, "val": 1000, "test": 1000},  # pixel tasks only (lra_kit.scales)
    "paper": {"train": None, "val": None, "test": None},
}

SUBSET_SEED = 0


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return split


def scale_size(scale: str | None, split: str) -> int | None:
    """How many examples of ``split`` the scale keeps (None = all)."""
    return SCALE_SIZES[get_scale(scale)][check_split(split)]


def subset_indices(n: int, size: int | None, *, seed: int = SUBSET_SEED) -> np.ndarray:
    """``size`` indices out of ``range(n)`` chosen by a seeded permutation (sorted), or all of them."""
    if size is None or size >= n:
        return np.arange(n)
    rng = np.random.default_rng(seed)
    return np.sort(rng.permutation(n)[:size])


def holdout_split(n: int, n_val: int, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded train/val index split of ``range(n)``: ``n - n_val`` train, ``n_val`` val (each sorted).

    The papers' code takes the last 10 % of CIFAR-10's training set in file order (TFDS
    ``train[90%:]``, docs/reference-implementations.md §6); a seeded permutation gives the same sizes without depending
    on an order that the JPEG copy does not keep.
    """
    perm = np.random.default_rng(seed).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])
