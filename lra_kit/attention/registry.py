"""Build any attention module by name (GUIDE §3): ``build_attention("momentum", 64, 2, beta=0.6)``."""
from __future__ import annotations

from typing import Callable

import torch.nn as nn

from lra_kit.attention.luna import LunaAttention
from lra_kit.attention.modules import LinearAttention, MomentumAttention, SoftmaxAttention

ATTENTIONS: dict[str, Callable[..., nn.Module]] = {
    "softmax": SoftmaxAttention,
    "linear": LinearAttention,
    "momentum": MomentumAttention,
    "luna": LunaAttention,
}


def build_attention(name: str, d_model: int, n_heads: int, **options) -> nn.Module:
    """A multi-head attention module with ``forward(x, p=None, key_padding_mask=None) -> (y, p)``.

    ``name`` is one of ``"softmax" | "linear" | "momentum" | "luna"``; ``options`` go to its
    constructor (e.g. ``causal=True``, ``beta=0.6, gamma=0.9``, ``feature_map="elu"``, ``tie_kv=True``).
    """
    if name not in ATTENTIONS:
        raise ValueError(f"unknown attention {name!r}; valid names: {', '.join(sorted(ATTENTIONS))}")
    try:
        return ATTENTIONS[name](d_model, n_heads, **options)
    except TypeError as err:  # an option the chosen attention does not take
        raise TypeError(f"build_attention({name!r}, ...): {err}") from err
