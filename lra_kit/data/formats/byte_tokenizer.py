"""Byte-level tokenization of LRA Text and Retrieval.

LRA encodes text with TFDS's ``ByteTextEncoder`` (docs/reference-implementations.md §6): each UTF-8 byte ``b`` becomes
id ``b + 1`` and 0 is padding, a vocabulary of 257. The same ids are used here.
"""
from __future__ import annotations

import numpy as np

PAD_ID = 0
ID_OFFSET = 1
VOCAB_SIZE = 256 + ID_OFFSET


def encode(text: str | bytes, max_length: int | None = None) -> np.ndarray:
    """Token ids (int64) of ``text``'s UTF-8 bytes, truncated to ``max_length``."""
    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    return np.frombuffer(data[:max_length], dtype=np.uint8).astype(np.int64) + ID_OFFSET


def decode(ids) -> str:
    """The text of token ids (padding dropped; invalid UTF-8 replaced)."""
    data = bytes(int(i) - ID_OFFSET for i in ids if int(i) != PAD_ID)
    return data.decode("utf-8", errors="replace")
