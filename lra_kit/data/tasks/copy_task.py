"""The synthetic copy task of Katharopoulos et al. 2020 §4.1 and Nguyen et al. §4.1.

Each sample is ``0 w 0 w``: a separator 0, a word ``w`` of symbols from {1..10}, the
separator again and ``w`` again; "a sequence of maximum length 128 with 10 different
symbols separated by a dedicated separator symbol". The papers do not say how ``|w|`` is
drawn. At ``paper`` scale it follows the linear-transformer authors' code
(idiap/linear-transformer-experiments, ``causal-copy/main.py``, whose setting the Momentum
paper says it follows): uniform in ``max_length // 4 .. (max_length - 1) // 2 - 1`` = 32..62.
At ``smoke``/``book`` scale it is uniform in ``1..(max_length // 2 - 1)``, so short words make
a small model learn within a CPU minute. Samples are generated on the fly from ``SeedSequence([seed, split, i])``:
item ``i`` of a split is always the same, whatever the order of access or the number of
workers.

Ids: 0 = separator, 1..10 = symbols, 11 = padding (vocabulary 12). ``loss_mask`` marks
the second copy of ``w`` (the positions whose token is to be predicted from the prefix),
the accuracy the papers report.
"""
from __future__ import annotations

import numpy as np
import torch

from lra_kit.data.base import SequenceLMDataset
from lra_kit.data.splits import check_split
from lra_kit.scales import get_scale

SEPARATOR = 0
NUM_SYMBOLS = 10
PAD_ID = NUM_SYMBOLS + 1
VOCAB_SIZE = NUM_SYMBOLS + 2
MAX_LENGTH = 128
SIZES = {"smoke": {"train": 256, "val": 64, "test": 64},
         "book": {"train": 6400, "val": 640, "test": 640},
         "paper": {"train": 64_000, "val": 6_400, "test": 6_400}}
SIZES["cpu"] = SIZES["paper"]  # the cpu scale shrinks the model, not the data
SMOKE_MAX_LENGTH = 32
_SPLIT_CODE = {"train": 0, "val": 1, "test": 2}


def word_length_range(max_length: int, scale: str) -> tuple[int, int]:
    """(shortest, longest) |w|: the authors' code's range at ``paper`` scale, 1..max_length//2 − 1 otherwise."""
    if scale in ("paper", "cpu"):
        return max_length // 4, (max_length - 1) // 2 - 1
    return 1, max_length // 2 - 1


def copy_sample(seed: int, split: str, index: int, max_length: int = MAX_LENGTH, min_word: int = 1,
                max_word: int | None = None) -> np.ndarray:
    """Sample ``index`` of ``split``: ``[0, w, 0, w]`` as int64 ids, min_word ≤ |w| ≤ max_word."""
    max_word = max_length // 2 - 1 if max_word is None else max_word
    rng = np.random.default_rng([seed, _SPLIT_CODE[split], index])
    n = int(rng.integers(min_word, max_word + 1))
    word = rng.integers(1, NUM_SYMBOLS + 1, size=n)
    return np.concatenate([[SEPARATOR], word, [SEPARATOR], word]).astype(np.int64)


def copy_loss_mask(input_ids: torch.Tensor, key_padding_mask: torch.Tensor) -> torch.Tensor:
    """True on the second copy of ``w``: real tokens after the second separator."""
    separators = torch.cumsum((input_ids == SEPARATOR) & ~key_padding_mask, dim=1)
    return (separators >= 2) & (input_ids != SEPARATOR) & ~key_padding_mask


class CopyTaskDataset(SequenceLMDataset):
    """On-the-fly copy-task samples; ``len`` fixed by the scale (the papers train for epochs of fresh data)."""

    def __init__(self, split: str, size: int, *, seed: int, max_length: int, word_lengths: tuple[int, int],
                 metadata: dict):
        from lra_kit.data.store.ragged import Ragged

        super().__init__(Ragged(np.zeros(0), np.zeros(1)), task="copy", split=split, vocab_size=VOCAB_SIZE,
                         max_length=max_length, pad_id=PAD_ID, metadata=metadata)
        self.size, self.seed, self.word_lengths = size, seed, word_lengths

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):
        if not -self.size <= index < self.size:
            raise IndexError(index)
        sample = copy_sample(self.seed, self.split, index % self.size, self.max_length, *self.word_lengths)
        return torch.from_numpy(sample)

    def lengths(self) -> np.ndarray:
        return np.array([len(copy_sample(self.seed, self.split, i, self.max_length, *self.word_lengths))
                         for i in range(self.size)])

    def loss_mask_fn(self):
        return copy_loss_mask


def load_copy(split: str, *, scale: str | None = None, seed: int = 0, max_length: int | None = None,
              size: int | None = None) -> CopyTaskDataset:
    """The copy task ``split``; ``smoke`` uses ``max_length`` 32 unless given."""
    check_split(split)
    scale = get_scale(scale)
    if max_length is None:
        max_length = SMOKE_MAX_LENGTH if scale == "smoke" else MAX_LENGTH
    if max_length < 4:
        raise ValueError(f"max_length must be >= 4 (room for 0 w 0 w), got {max_length}")
    size = SIZES[scale][split] if size is None else size
    shortest, longest = word_length_range(max_length, scale)
    metadata = {"task": "copy", "scale": scale, "seed": seed, "max_length": max_length, "num_symbols": NUM_SYMBOLS,
                "word_length": f"uniform {shortest}..{longest}"}
    return CopyTaskDataset(split, size, seed=seed, max_length=max_length, word_lengths=(shortest, longest),
                           metadata=metadata)
