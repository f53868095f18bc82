"""The training batches of one epoch, optionally grouped by length.

Epoch e visits a permutation of the training set drawn from a generator seeded with (seed, e), in
global batches of ``data.batch_size``; rank r of N takes its slice of every batch, split further
into ``train.accumulate`` micro-batches. With ``data.bucket = K > 0`` the permutation is cut into
pools of K global batches, each pool is sorted by sequence length and cut into batches, and the
batches of the epoch are put in a seeded random order: every batch then holds sequences of similar
length, so padding (and, for softmax, its quadratic cost) shrinks, while each example is still seen
once per epoch and the order of lengths follows no schedule. This is the length bucketing of
fairseq's ``batch_by_size`` and of tensor2tensor, not something the LRA papers describe; presets
that use it say so.
"""
from __future__ import annotations

import numpy as np
import torch


def length_bucketed(perm: list[int], lengths: np.ndarray, *, batch: int, pool: int,
                    generator: torch.Generator) -> list[int]:
    """``perm`` reordered so that each run of ``batch`` consecutive indices has similar lengths.

    The first ``len(perm) // batch * batch`` indices are cut into pools of ``pool * batch``; a pool
    is sorted by ``lengths`` (stably, so ties keep the order of ``perm``) and cut into batches; the
    batches are shuffled with ``generator``. The remainder (fewer than ``batch``, never trained on
    in this epoch) stays at the end.
    """
    if pool < 1 or batch < 1:
        raise ValueError(f"pool and batch must be >= 1, got pool={pool}, batch={batch}")
    full = len(perm) // batch * batch
    batches = []
    for start in range(0, full, pool * batch):
        chunk = perm[start:min(start + pool * batch, full)]
        chunk = sorted(chunk, key=lambda i: lengths[i])
        batches.extend(chunk[b:b + batch] for b in range(0, len(chunk), batch))
    order = torch.randperm(len(batches), generator=generator).tolist()
    return [i for b in order for i in batches[b]] + perm[full:]


def item_lengths(dataset) -> np.ndarray:
    """One length per example: the sequence's, or the longer of a pair's (what its padded batch costs)."""
    lengths = np.asarray(dataset.lengths())
    return lengths.reshape(len(lengths), -1).max(axis=1)


class EpochBatches:
    """The batches of one epoch from ``start`` on: lists of indices for this rank (a ``batch_sampler``).

    ``lengths`` and ``bucket`` > 0 group the epoch's batches by length (module docstring); the order is
    still a function of (seed, epoch) only, so a resumed run reads the batches the killed one would have.
    """

    def __init__(self, n: int, *, seed: int, epoch: int, global_batch: int, micro: int, rank: int, world: int,
                 start: int = 0, lengths: np.ndarray | None = None, bucket: int = 0):
        g = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
        self.perm = torch.randperm(n, generator=g).tolist()
        if bucket:
            if lengths is None or len(lengths) != n:
                raise ValueError(f"bucket={bucket} needs one length per example ({n}), got "
                                 f"{None if lengths is None else len(lengths)}")
            self.perm = length_bucketed(self.perm, lengths, batch=global_batch, pool=bucket, generator=g)
        self.global_batch, self.micro, self.rank, self.world, self.start = global_batch, micro, rank, world, start
        self.batches = n // global_batch  # drop_last, so every step sees a full batch

    def __iter__(self):
        per_rank = self.global_batch // self.world
        for b in range(self.start, self.batches):
            mine = self.perm[b * self.global_batch + self.rank * per_rank:][:per_rank]
            for m in range(0, per_rank, self.micro):
                yield mine[m:m + self.micro]

    def __len__(self) -> int:
        return (self.batches - self.start) * (self.global_batch // self.world // self.micro)
