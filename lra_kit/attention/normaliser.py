"""The normaliser of linear attention, φ(q_i)ᵀz_i + ε (Katharopoulos et al. eqs. 5, 9, 12), and its gradient.

The causal op computes it inside its own passes, on both paths: the chunked PyTorch code reads it off its chunk
products (:mod:`lra_kit.attention.causal.chunked`), the Triton kernels off the row sums of their masked score tiles
(:mod:`lra_kit.attention.causal.triton.kernels`), both with the adjoint h_i = ∂L/∂den_i = −(g_i·out_i)/den_i:
∇φ(q_i) gains h_i z_i, ∇φ(k_j) gains Σ_{i≥j} h_i φ(q_i). This module is the formula the other forms use.
"""
from __future__ import annotations

import torch


def normalise(numerator: torch.Tensor, phi_q: torch.Tensor, z: torch.Tensor, eps: float) -> torch.Tensor:
    """numerator / (φ(q)ᵀz + ε), the denominator of eqs. 5, 9 and 12; z is (…, dim) or (…, length, dim)."""
    denominator = (phi_q * z).sum(-1, keepdim=True) + eps
    return numerator / denominator
