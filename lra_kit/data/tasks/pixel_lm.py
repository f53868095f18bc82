"""MNIST and CIFAR-10 image generation: 8-bit pixel sequences for autoregressive models.

Katharopoulos et al. 2020 §4.2 and Nguyen et al. §4.2 generate images pixel by pixel:
MNIST as 784 values, CIFAR-10 as 3,072 (32x32x3). Values are the raw 8-bit intensities
0..255 (vocabulary 256; the papers' output is a mixture of logistics over them).
CIFAR-10 sequences are in raster order with the three channels of a pixel consecutive
(R, G, B, next pixel), the order of PixelCNN-style models; the papers do not state one.

Splits: the official training and test sets; ``val`` is a seeded hold-out of 5,000
training images (``split_seed``; the papers report no validation set), so ``train`` has
55,000 (MNIST) or 45,000 (CIFAR-10, the same images as LRA Image's train split).

CIFAR-10 from the lossy JPEG copy is allowed but flagged (``metadata["lossy"]``, a
warning): its bits/dim are NOT comparable with the papers'.
"""
from __future__ import annotations

import warnings

from lra_kit.data.base import SequenceLMDataset
from lra_kit.data.formats.cifar10 import cifar10_arrays
from lra_kit.data.formats.mnist import mnist_arrays
from lra_kit.data.formats.pixels import PAD_ID, VOCAB_SIZE
from lra_kit.data.store.ragged import Ragged
from lra_kit.data.splits import check_split, holdout_split, scale_size, subset_indices
from lra_kit.scales import get_scale

VAL_SIZE = 5000
LENGTHS = {"mnist": 784, "cifar10": 3072}
OFFICIAL_TRAIN = {"mnist": 60_000, "cifar10": 50_000}  # the official training sets' sizes
# ``train`` at the cpu and paper scales: the official training set less the validation hold-out. A constant of the
# datasets, so a page can count epochs without the data (tests/test_data_real.py checks it against the files)
TRAIN_SIZE = {task: n - VAL_SIZE for task, n in OFFICIAL_TRAIN.items()}


def load_pixel_lm(task: str, split: str, *, scale: str | None = None, split_seed: int = 0) -> SequenceLMDataset:
    """``task`` in ``("mnist", "cifar10")``: ``split`` as pixel sequences for generation."""
    if task not in LENGTHS:
        raise ValueError(f"task must be one of {tuple(LENGTHS)}, got {task!r}")
    check_split(split)
    scale = get_scale(scale)
    reader = mnist_arrays if task == "mnist" else cifar10_arrays
    images, _labels, info = reader("test" if split == "test" else "train")
    if split != "test":
        train_idx, val_idx = holdout_split(len(images), VAL_SIZE, seed=split_seed)
        images = images[train_idx if split == "train" else val_idx]
    keep = subset_indices(len(images), scale_size(scale, split))
    pixels = images[keep].reshape(len(keep), LENGTHS[task])
    if info["lossy"]:
        warnings.warn("CIFAR-10 generation reads the lossy JPEG copy: bits/dim are not comparable with the papers' "
                      "(lra-kit data fetch cifar10)", stacklevel=2)
    metadata = dict(info, task=task, scale=scale, split_seed=split_seed,
                    order="raster, channels interleaved (R,G,B per pixel)" if task == "cifar10" else "raster")
    return SequenceLMDataset(Ragged.from_dense(pixels), task=task, split=split, vocab_size=VOCAB_SIZE,
                             max_length=LENGTHS[task], pad_id=PAD_ID, metadata=metadata)
