"""The dataset classes every task returns, and the attributes the models read from them.

Attributes (the contract of ``lra_kit.data.load``): ``vocab_size`` (the number of distinct
ids that can appear in ``input_ids``, padding included where padding can occur),
``num_classes`` (None for language modelling), ``max_length``, ``pad_id``, ``kind``
(``"classification" | "retrieval" | "lm"``), ``metadata`` (sources, lossy flag, preset...).
"""
from __future__ import annotations

import functools

import numpy as np
import torch
from torch.utils.data import Dataset

from lra_kit.data.collate import collate as _collate
from lra_kit.data.store.ragged import Ragged

KINDS = ("classification", "retrieval", "lm")


class TaskDataset(Dataset):
    """Common attributes and the collate function bound to this dataset's padding rules."""

    kind: str = "classification"

    def __init__(self, *, task: str, split: str, vocab_size: int, num_classes: int | None, max_length: int,
                 pad_id: int, metadata: dict | None = None, pad_to: int | None = None,
                 mask_pad_tokens: bool = False):
        self.task = task
        self.split = split
        self.vocab_size = int(vocab_size)
        self.num_classes = num_classes
        self.max_length = int(max_length)
        self.pad_id = int(pad_id)
        self.pad_to = pad_to
        self.mask_pad_tokens = mask_pad_tokens
        self.metadata = dict(metadata or {})

    def collate(self, batch):
        """``lra_kit.data.collate`` with this dataset's ``pad_id`` and padding rules."""
        return _collate(batch, pad_id=self.pad_id, pad_to=self.pad_to, mask_pad_tokens=self.mask_pad_tokens,
                        loss_mask=self.loss_mask_fn())

    def loss_mask_fn(self):
        return None

    def lengths(self) -> np.ndarray:
        raise NotImplementedError

    def labels(self) -> np.ndarray | None:
        return None

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(task={self.task!r}, split={self.split!r}, n={len(self)}, "
                f"vocab_size={self.vocab_size}, num_classes={self.num_classes}, max_length={self.max_length})")


class SequenceClassificationDataset(TaskDataset):
    """Items ``(input_ids LongTensor(L,), label int)``."""

    kind = "classification"

    def __init__(self, sequences: Ragged, labels, *, id_offset: int = 0, truncate: int | None = None, **attrs):
        super().__init__(**attrs)
        self.sequences = sequences
        self.id_offset = id_offset  # stored values + id_offset = token ids (bytes are stored raw)
        self.truncate = truncate
        self._labels = np.asarray(labels, dtype=np.int64)
        if len(self._labels) != len(sequences):
            raise ValueError("one label per sequence is required")

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, index: int):
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        ids = self.sequences[index][: self.truncate].astype(np.int64) + self.id_offset
        return torch.from_numpy(ids), int(self._labels[index])

    def lengths(self) -> np.ndarray:
        lengths = self.sequences.lengths
        return lengths if self.truncate is None else np.minimum(lengths, self.truncate)

    def labels(self) -> np.ndarray:
        return self._labels


class PairClassificationDataset(TaskDataset):
    """Items ``((ids1, ids2), label)`` for a dual encoder (LRA Retrieval)."""

    kind = "retrieval"

    def __init__(self, first: Ragged, second: Ragged, labels, *, id_offset: int = 0, truncate: int | None = None,
                 **attrs):
        super().__init__(**attrs)
        self.first, self.second = first, second
        self.id_offset, self.truncate = id_offset, truncate
        self._labels = np.asarray(labels, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._labels)

    def _ids(self, ragged: Ragged, index: int) -> torch.Tensor:
        return torch.from_numpy(ragged[index][: self.truncate].astype(np.int64) + self.id_offset)

    def __getitem__(self, index: int):
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        index %= len(self)
        return (self._ids(self.first, index), self._ids(self.second, index)), int(self._labels[index])

    def lengths(self) -> np.ndarray:
        lengths = np.stack([self.first.lengths, self.second.lengths], axis=1)
        return lengths if self.truncate is None else np.minimum(lengths, self.truncate)

    def labels(self) -> np.ndarray:
        return self._labels


class SequenceLMDataset(TaskDataset):
    """Items ``input_ids LongTensor(L,)`` for autoregressive modelling (pixels, copy task)."""

    kind = "lm"

    def __init__(self, sequences: Ragged, **attrs):
        super().__init__(num_classes=None, **attrs)
        self.sequences = sequences

    def __len__(self) -> int:
        return len(self.sequences)

    def __getitem__(self, index: int):
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return torch.from_numpy(self.sequences[index % len(self)].astype(np.int64))

    def lengths(self) -> np.ndarray:
        return self.sequences.lengths


def bind_collate(dataset: TaskDataset):
    """A picklable collate function for ``DataLoader(collate_fn=...)``."""
    return functools.partial(_collate, pad_id=dataset.pad_id, pad_to=dataset.pad_to,
                             mask_pad_tokens=dataset.mask_pad_tokens, loss_mask=dataset.loss_mask_fn())
