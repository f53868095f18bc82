"""Batching: pad to the longest item and build ``key_padding_mask`` (True = padding).

The mask follows ``nn.MultiheadAttention`` (docs/design.md §2). It is built from each item's
length, never from token values, so a pixel of value 0 is never taken for padding. The
Nystromformer LRA code instead masks every token equal to 0 (Nyströmformer
``LRA/code``, docs/reference-implementations.md §4: the mask is ``input_ids != 0``), which hides
black pixels in Image and Pathfinder; ``mask_pad_tokens=True`` reproduces that quirk for ``compat="nystromformer"``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import torch


def pad_sequences(seqs: Sequence[torch.Tensor], *, pad_id: int, pad_to: int | None = None,
                  mask_pad_tokens: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack 1-D LongTensors into ``(B, L)`` ids and a ``(B, L)`` bool padding mask."""
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    width = int(lengths.max()) if len(seqs) else 0
    if pad_to is not None:
        width = max(width, pad_to)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = seq
    mask = torch.arange(width)[None, :] >= lengths[:, None]
    if mask_pad_tokens:
        mask |= ids == pad_id
    return ids, mask


def collate(batch: Sequence, *, pad_id: int = 0, pad_to: int | None = None, mask_pad_tokens: bool = False,
            loss_mask: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None) -> dict:
    """Collate items of any task kind into the dict the models take.

    * classification items ``(ids, label)`` -> ``input_ids, key_padding_mask, labels``
    * retrieval items ``((ids1, ids2), label)`` -> ``input_ids_1, key_padding_mask_1,
      input_ids_2, key_padding_mask_2, labels``
    * lm items ``ids`` -> ``input_ids, key_padding_mask`` and, when ``loss_mask`` is
      given (a function of ids and padding mask), ``loss_mask`` (True = predict this token).
    """
    if len(batch) == 0:
        raise ValueError("batch must contain at least one item")
    first = batch[0]
    options = dict(pad_id=pad_id, pad_to=pad_to, mask_pad_tokens=mask_pad_tokens)
    if isinstance(first, torch.Tensor):
        ids, mask = pad_sequences(batch, **options)
        out = {"input_ids": ids, "key_padding_mask": mask}
        if loss_mask is not None:
            out["loss_mask"] = loss_mask(ids, mask)
        return out
    inputs, labels = zip(*batch, strict=True)
    labels = torch.tensor([int(y) for y in labels], dtype=torch.long)
    if isinstance(inputs[0], (tuple, list)):
        ids1, mask1 = pad_sequences([x[0] for x in inputs], **options)
        ids2, mask2 = pad_sequences([x[1] for x in inputs], **options)
        return {"input_ids_1": ids1, "key_padding_mask_1": mask1,
                "input_ids_2": ids2, "key_padding_mask_2": mask2, "labels": labels}
    ids, mask = pad_sequences(inputs, **options)
    return {"input_ids": ids, "key_padding_mask": mask, "labels": labels}
