"""What the causal op carries between positions: the state (s, d, z), and the normaliser of a segment.

One internal state for every causal kernel attention (Katharopoulos eq. 9–12, Nguyen et al. eq. 12–13):

    s_t = Σ_{j≤t} u(t − j) k_j v_jᵀ,     d_t = Σ_{j≤t} β^{t−j} k_j v_jᵀ,     z_t = Σ_{j≤t} k_j,

with k = φ(k) and u(x) = Σ_{m≤x} βᵐ (:mod:`lra_kit.attention.lag_weights`); β = 0 gives u ≡ 1 and s the plain
state S of eq. 10. The public states convert at the edge and nowhere else: ``LinearState(s, z)``,
``MomentumState(s, m, z) = (γ·s, −d, z)`` and the bare product's ``ProductState(s, d)``.
"""
from __future__ import annotations

from typing import NamedTuple

import torch


class CausalState(NamedTuple):
    """(s, d, z) of the module docstring, (B, H, D, M), (B, H, D, M), (B, H, D). ``d`` is None where β = 0 and
    nobody asked for it (it never reaches an output then); ``z`` is None for the bare product (no normaliser)."""

    s: torch.Tensor
    d: torch.Tensor | None
    z: torch.Tensor | None


class Normaliser(NamedTuple):
    """The normaliser of eq. 9 on one segment: den_i = q_i·z_i + ε, z_i = z_0 + Σ_{j≤i} k_j (q, k feature-mapped),
    and out = γ·numerator/den. ``z0``: z before the segment (None = 0). Backward also takes the attention's output
    ``out`` of the segment and ``gz``, the gradient of z at the segment's end (None = 0)."""

    z0: torch.Tensor | None
    eps: float
    gamma: float
    out: torch.Tensor | None = None
    gz: torch.Tensor | None = None
