"""Token + position embeddings shared by the classifier and the causal LM."""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from lra_kit.models.config import ModelConfig


def sinusoids(length: int, dim: int) -> torch.Tensor:
    """The fixed sin/cos position table of Vaswani et al. §3.5, (length, dim)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(position * freq)
    table[:, 1::2] = torch.cos(position * freq)[:, : dim // 2]
    return table


class Embeddings(nn.Module):
    """Token embedding + position, dropout, optional LayerNorm.

    ``position``: ``learned`` (Nystromformer LRA code: learned table, N(0, 0.02) like the tokens),
    ``sinusoidal`` (added), ``sinusoidal_concat`` (the copy-task code of Katharopoulos et al.:
    d/2 token features concatenated with d/2 sinusoids), ``none``.

    ``embed_scale``: tokens drawn N(0, d^−½) and multiplied by √d (Vaswani et al. §3.4; fairseq-apollo
    ``LunaLRAEncoder``), so a token weighs as much as its position; otherwise N(0, 0.02).
    """

    def __init__(self, cfg: ModelConfig, num_embeddings: int, max_length: int):
        super().__init__()
        self.position, self.max_length = cfg.position, max_length
        d_tok = cfg.d_model // 2 if cfg.position == "sinusoidal_concat" else cfg.d_model
        self.tokens = nn.Embedding(num_embeddings, d_tok)
        self.scale = math.sqrt(d_tok) if cfg.embed_scale else 1.0
        nn.init.normal_(self.tokens.weight, std=d_tok ** -0.5 if cfg.embed_scale else 0.02)
        if cfg.position == "learned":
            self.positions = nn.Embedding(max_length, cfg.d_model)
            nn.init.normal_(self.positions.weight, std=0.02)
        elif cfg.position in ("sinusoidal", "sinusoidal_concat"):
            self.register_buffer("table", sinusoids(max_length, cfg.d_model - d_tok if d_tok != cfg.d_model
                                                    else cfg.d_model), persistent=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.embed_norm else nn.Identity()

    def forward(self, input_ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """(batch, n) ids → (batch, n, d); ``offset`` is the position of the first id (generation)."""
        n = input_ids.shape[1]
        if offset + n > self.max_length:
            raise ValueError(f"sequence of length {offset + n} exceeds max_length={self.max_length}")
        x = self.tokens(input_ids) * self.scale
        if self.position == "learned":
            x = x + self.positions(torch.arange(offset, offset + n, device=x.device))
        elif self.position == "sinusoidal":
            x = x + self.table[offset:offset + n].to(x.dtype)
        elif self.position == "sinusoidal_concat":
            x = torch.cat([x, self.table[offset:offset + n].to(x.dtype).expand(x.shape[0], -1, -1)], dim=-1)
        return self.norm(self.drop(x))
