"""Feature maps φ for kernelised attention (Katharopoulos et al. 2020, §3.2.1).

A feature map turns a raw query or key into a non-negative feature vector so that
sim(q, k) = φ(q)ᵀφ(k) is a valid (non-negative) similarity (eq. 4). Derived in the book,
chapter "The kernel trick" (``sec-kernel-trick``).

Feature maps are modules (:class:`FeatureMap`) with two entry points, ``queries(x)`` and
``keys(x)``: a random-feature map such as Performer's FAVOR+ (:mod:`lra_kit.attention.performer`)
holds its random projection as a buffer, treats queries and keys differently (each side has
its own numerical stabiliser) and is redrawn only by an explicit ``redraw()``. The element-wise
maps of the papers (elu + 1, relu, softplus) are the simple case: the same function for both
sides, nothing to draw.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F


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


def elu_plus_one_into(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1 written into ``out`` (a float32/64 buffer of ``x``'s type and shape), with no temporary:
    the causal op's chunked path maps every segment into buffers it reuses (:mod:`lra_kit.attention.causal.chunked`)."""
    return F.elu_(out.copy_(x)).add_(1.0)


def elu_plus_one_derivative_(phi_x: torch.Tensor) -> torch.Tensor:
    """φ'(x) from φ(x) alone, in place: φ' = 1 where x > 0 (there φ = x + 1 > 1) and φ' = eˣ = φ where x ≤ 0
    (there φ = eˣ ≤ 1), so φ' = min(φ, 1). The chain rule of the chunked path needs no copy of x."""
    return phi_x.clamp_(max=1.0)


def relu(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = max(x, 0). Zero gradient for negative inputs, the reason eq. 7 prefers elu."""
    return F.relu(x)


def softplus(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = log(1 + eˣ), a smooth positive map (one of Luna §3.3's two choices)."""
    return F.softplus(x)


class FeatureMap(nn.Module):
    """φ of eq. 4 as a module: ``queries(x)`` maps queries, ``keys(x)`` maps keys, on (…, dim) tensors.

    The default maps both sides with ``forward``; subclasses that treat the sides differently
    override ``queries``/``keys``. ``redraw()`` draws new random features (a no-op for a
    deterministic map). A feature map never changes inside a forward pass: every position of a
    sequence, and every step of its recurrent form, sees the same φ.
    """

    def queries(self, x: torch.Tensor) -> torch.Tensor:
        return self(x)

    def keys(self, x: torch.Tensor) -> torch.Tensor:
        return self(x)

    def redraw(self, generator: torch.Generator | None = None) -> None:
        """Draw new random features; deterministic maps have none, so this does nothing."""
        return None

    def output_dim(self, dim: int) -> int:
        """Size of φ(x) for inputs of size ``dim`` (the first dimension of a recurrent state)."""
        return dim


class Elementwise(FeatureMap):
    """A deterministic map applied element-wise and alike to queries and keys (eq. 7 and its variants).

    ``into(x, out)`` and ``derivative_(phi_x)`` (both optional, for float32/64): the same map written into a
    given buffer, and its derivative computed in place from φ(x) alone. With both, the chunked causal op maps
    and differentiates segments in buffers it reuses, with no autograd graph and no temporaries."""

    def __init__(self, fn: Callable[[torch.Tensor], torch.Tensor], name: str | None = None, *,
                 into: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
                 derivative_: Callable[[torch.Tensor], torch.Tensor] | None = None):
        super().__init__()
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        if (into is None) != (derivative_ is None):
            raise ValueError("into and derivative_ must be given together (or neither)")
        self.fn, self.name = fn, name or getattr(fn, "__name__", type(fn).__name__)
        self.into, self.derivative_ = into, derivative_

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fn(x)

    def extra_repr(self) -> str:
        return self.name


# Stateless, so one shared instance per name serves every caller.
FEATURE_MAPS: dict[str, FeatureMap] = {
    "elu": Elementwise(elu_plus_one, "elu", into=elu_plus_one_into, derivative_=elu_plus_one_derivative_),
    "relu": Elementwise(relu, "relu"),
    "softplus": Elementwise(softplus, "softplus"),
}


def get_feature_map(feature_map: str | FeatureMap | Callable[[torch.Tensor], torch.Tensor]) -> FeatureMap:
    """The :class:`FeatureMap` for ``feature_map``: a name (``"elu" | "relu" | "softplus"``), a
    :class:`FeatureMap` (returned as is), or a plain callable (applied alike to queries and keys)."""
    if isinstance(feature_map, FeatureMap):
        return feature_map
    if isinstance(feature_map, str):
        if feature_map in FEATURE_MAPS:
            return FEATURE_MAPS[feature_map]
    elif callable(feature_map):
        return Elementwise(feature_map)
    raise ValueError(
        f"feature_map must be one of {sorted(FEATURE_MAPS)}, a FeatureMap module or a callable, got {feature_map!r}"
    )
