"""Pixel-sequence conventions shared by Image, Pathfinder, MNIST and CIFAR-10 generation.

Pixels are tokens 0..255 and 0 is a real value (a black pixel), so it can never double as
padding. The sequences are fixed-length (1,024 / 784 / 3,072) and a batch is never padded:
``PAD_ID = 256`` lies outside the pixel vocabulary and never appears in ``input_ids``; the
``key_padding_mask`` of these tasks is all False. ``compat="nystromformer"`` reproduces the
Nystromformer/Momentum LRA code, which masks every pixel equal to 0 as padding
(docs/reference-implementations.md §4): there ``pad_id = 0`` and the mask is ``input_ids == 0``.
"""
from __future__ import annotations

import numpy as np

VOCAB_SIZE = 256
PAD_ID = 256
COMPATS = (None, "nystromformer")

# tf.image.rgb_to_grayscale weights (ITU-R BT.601 luma), as used by LRA's image pipeline
GRAY_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], dtype=np.float32)


def rgb_to_gray(images: np.ndarray) -> np.ndarray:
    """uint8 grayscale of uint8 RGB images ``(..., 3)``, as TensorFlow computes it.

    ``tf.image.rgb_to_grayscale`` converts to float in [0, 1], takes the weighted sum and
    converts back with ``convert_image_dtype``, which multiplies by 255.5 and truncates
    (LRA ``image/input_pipeline.py`` then casts to int32).
    """
    x = images.astype(np.float32) / np.float32(255.0)
    gray = (x * GRAY_WEIGHTS).sum(axis=-1, dtype=np.float32)
    return np.clip(np.floor(gray * np.float32(255.5)), 0, 255).astype(np.uint8)


def compat_options(compat: str | None) -> dict:
    """``pad_id`` and ``mask_pad_tokens`` of a pixel dataset for ``compat``."""
    if compat not in COMPATS:
        raise ValueError(f"compat must be one of {COMPATS}, got {compat!r}")
    if compat == "nystromformer":
        return {"pad_id": 0, "mask_pad_tokens": True}
    return {"pad_id": PAD_ID, "mask_pad_tokens": False}
