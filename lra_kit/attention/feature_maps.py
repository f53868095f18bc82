"""Feature maps φ for kernelised attention (Katharopoulos et al. 2020, §3.2.1).

A feature map turns a raw query or key into a non-negative feature vector so that
sim(q, k) = φ(q)ᵀφ(k) is a valid (non-negative) similarity (eq. 4). Derived in the book,
chapter "The kernel trick" (``sec-kernel-trick``).
"""
from __future__ import annotations

from typing import Callable, Union

import torch
import torch.nn.functional as F

FeatureMap = Callable[[torch.Tensor], torch.Tensor]


def elu_plus_one(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1, Katharopoulos et al. eq. 7.

    Half-precision inputs are mapped as ``where(x ≥ 0, x + 1, exp(x))`` in float32: in bf16,
    ``elu(x) + 1`` rounds to exactly 0 for x ≲ −8 (flash-linear-attention issue #1261), while
    exp(x) itself is representable. (The exponential is of min(x, 0), so the branch that
    ``where`` discards cannot overflow into a ``0 · inf`` gradient.) Float32/64 use the cheaper
    elu(x) + 1 directly, as the paper's code does.
    """
    if x.dtype in (torch.float16, torch.bfloat16):
        y = x.float()
        return torch.where(y >= 0, y + 1, torch.exp(y.clamp(max=0))).to(x.dtype)
    return F.elu(x) + 1


def relu(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = max(x, 0). Zero gradient for negative inputs, the reason eq. 7 prefers elu."""
    return F.relu(x)


def softplus(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = log(1 + eˣ), a smooth positive map (one of Luna §3.3's two choices)."""
    return F.softplus(x)


FEATURE_MAPS: dict[str, FeatureMap] = {
    "elu": elu_plus_one,
    "relu": relu,
    "softplus": softplus,
}


def get_feature_map(feature_map: Union[str, FeatureMap]) -> FeatureMap:
    """Return the feature map named ``feature_map`` (``"elu" | "relu" | "softplus"``) or the callable itself."""
    if callable(feature_map):
        return feature_map
    if isinstance(feature_map, str) and feature_map in FEATURE_MAPS:
        return FEATURE_MAPS[feature_map]
    raise ValueError(
        f"feature_map must be one of {sorted(FEATURE_MAPS)} or a callable, got {feature_map!r}"
    )
