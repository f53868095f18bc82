"""LRA classifiers: one encoder, pooled, then an MLP head (Nyströmformer ``LRA/code/model_wrapper.py``,
docs/reference-implementations.md §4).

``LRAClassifier``           tokens → Encoder → pool → Linear(d, d_ff) → ReLU → Linear(d_ff, classes)
``DualEncoderClassifier``   Retrieval: the same encoder on both documents, u and v pooled,
                            [u, v, u·v, u−v] → Linear(4d, d_ff) → ReLU → Linear(d_ff, classes)

Pooling: ``mean`` over the real (non-padding) positions of x; ``cls`` a learned token
prepended to every sequence (Luna's LRA models, docs/reference-implementations.md §8); ``p_mean`` the mean over Luna's
final packed sequence P (Luna Table 3).
"""
from __future__ import annotations


import torch
import torch.nn as nn

from lra_kit.models.config import ModelConfig
from lra_kit.models.embeddings import Embeddings
from lra_kit.models.layers import Encoder


def masked_mean(x: torch.Tensor, key_padding_mask: torch.Tensor | None) -> torch.Tensor:
    """Mean of (batch, n, d) over the positions that are not padding."""
    if key_padding_mask is None:
        return x.mean(dim=1)
    keep = (~key_padding_mask)[..., None].to(x.dtype)
    return (x * keep).sum(dim=1) / keep.sum(dim=1).clamp_min(1.0)


def mlp_head(d_in: int, d_hidden: int, num_classes: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, num_classes))


class LRAClassifier(nn.Module):
    """Sequence classification (ListOps, Text, Image, Pathfinder).

    ``forward(input_ids, key_padding_mask) -> logits``.
    """

    def __init__(self, cfg: ModelConfig, *, vocab_size: int, num_classes: int, max_length: int, pad_id: int = 0):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        n_embed = max(vocab_size, pad_id + 1)
        self.cls_id = n_embed if cfg.pooling == "cls" else None
        extra = 1 if cfg.pooling == "cls" else 0
        self.embed = Embeddings(cfg, n_embed + extra, max_length + extra)
        self.encoder = Encoder(cfg, causal=False, max_length=max_length + extra)
        self.head = self.make_head(cfg, num_classes)

    def make_head(self, cfg: ModelConfig, num_classes: int) -> nn.Module:
        return mlp_head(cfg.d_model, cfg.d_ff, num_classes)

    def encode(self, input_ids: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(batch, n) ids → pooled (batch, d)."""
        if self.cls_id is not None:
            cls = input_ids.new_full((input_ids.shape[0], 1), self.cls_id)
            input_ids = torch.cat([cls, input_ids], dim=1)
            if key_padding_mask is not None:
                key_padding_mask = torch.cat([key_padding_mask.new_zeros(input_ids.shape[0], 1), key_padding_mask], 1)
        x, p = self.encoder(self.embed(input_ids), key_padding_mask)
        if self.cfg.pooling == "cls":
            return x[:, 0]
        if self.cfg.pooling == "p_mean":
            return p.mean(dim=1)
        return masked_mean(x, key_padding_mask)

    def forward(self, input_ids: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.head(self.encode(input_ids, key_padding_mask))


class DualEncoderClassifier(LRAClassifier):
    """Retrieval (AAN): ``forward(input_ids_1, key_padding_mask_1, input_ids_2, key_padding_mask_2) -> logits``."""

    def make_head(self, cfg: ModelConfig, num_classes: int) -> nn.Module:
        return mlp_head(4 * cfg.d_model, cfg.d_ff, num_classes)

    def forward(self, input_ids_1, key_padding_mask_1=None, input_ids_2=None, key_padding_mask_2=None):
        if input_ids_2 is None:
            raise TypeError("DualEncoderClassifier needs input_ids_2 (the second document)")
        u = self.encode(input_ids_1, key_padding_mask_1)
        v = self.encode(input_ids_2, key_padding_mask_2)
        return self.head(torch.cat([u, v, u * v, u - v], dim=-1))
