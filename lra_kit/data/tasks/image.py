"""LRA Image: CIFAR-10 as grayscale 1,024-pixel sequences, 10 classes.

Pipeline (LRA ``image/input_pipeline.py``, docs/reference-implementations.md §6): RGB -> ``tf.image.rgb_to_grayscale``
-> ints 0..255, flattened in raster order; vocabulary 256. Splits: the papers' code takes
TFDS ``train[:90%]`` / ``train[90%:]`` / ``test`` = 45,000 / 5,000 / 10,000; here the
5,000 validation images are a seeded draw from the 50,000 training images (``split_seed``).

Source: the official ``cifar-10-python.tar.gz`` when present, else the lossy offline JPEG
copy; ``metadata["copy"]`` and ``metadata["lossy"]`` say which (``cifar10_files``).
Padding: see ``pixels`` (never padded; ``compat="nystromformer"`` masks pixel 0).
"""
from __future__ import annotations

import warnings

from lra_kit.data.base import SequenceClassificationDataset
from lra_kit.data.formats.cifar10 import cifar10_arrays
from lra_kit.data.formats.pixels import VOCAB_SIZE, compat_options, rgb_to_gray
from lra_kit.data.store.ragged import Ragged
from lra_kit.data.splits import check_split, holdout_split, scale_size, subset_indices
from lra_kit.scales import get_scale

VAL_SIZE = 5000
LENGTH = 1024


def cifar10_split_indices(split: str, n_train: int, *, split_seed: int):
    """Indices into the 50,000 training images for ``train`` / ``val`` (seeded 45,000 / 5,000)."""
    train_idx, val_idx = holdout_split(n_train, VAL_SIZE, seed=split_seed)
    return train_idx if split == "train" else val_idx


def load_image(split: str, *, scale: str | None = None, split_seed: int = 0, compat: str | None = None,
               ) -> SequenceClassificationDataset:
    """CIFAR-10 ``split`` as grayscale pixel sequences for classification."""
    check_split(split)
    scale = get_scale(scale)
    options = compat_options(compat)
    images, labels, info = cifar10_arrays("test" if split == "test" else "train")
    if split != "test":
        keep = cifar10_split_indices(split, len(labels), split_seed=split_seed)
        images, labels = images[keep], labels[keep]
    keep = subset_indices(len(labels), scale_size(scale, split))
    gray = rgb_to_gray(images[keep]).reshape(len(keep), LENGTH)
    if info["lossy"]:
        warnings.warn("LRA Image reads the lossy offline JPEG copy of CIFAR-10; grayscale tokens differ from the "
                      "original on most pixels (fetch the official archive: lra-kit data fetch cifar10)", stacklevel=2)
    metadata = dict(info, task="image", scale=scale, split_seed=split_seed, compat=compat,
                    grayscale="tf.image.rgb_to_grayscale")
    return SequenceClassificationDataset(
        Ragged.from_dense(gray), labels[keep], task="image", split=split, vocab_size=VOCAB_SIZE, num_classes=10,
        max_length=LENGTH, metadata=metadata, **options)
