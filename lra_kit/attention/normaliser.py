"""The normaliser of linear attention, φ(q_i)ᵀz_i + ε (Katharopoulos et al. eqs. 5, 9, 12), and its gradient.

The chunked PyTorch path reads the causal normaliser off its chunk products (:mod:`lra_kit.attention.causal.chunked`);
the Triton path, whose kernels compute only the numerator, takes it from the prefix sums below. Both do so inside
the one autograd Function of :mod:`lra_kit.attention.causal.op`, with the same adjoint
h_i = ∂L/∂den_i = −(g_i·out_i)/den_i: ∇φ(q_i) gains h_i z_i, ∇φ(k_j) gains Σ_{i≥j} h_i φ(q_i).
"""
from __future__ import annotations

import torch

from lra_kit.attention.causal.chunking import prefix_sum


def normalise(numerator: torch.Tensor, phi_q: torch.Tensor, z: torch.Tensor, eps: float) -> torch.Tensor:
    """numerator / (φ(q)ᵀz + ε), the denominator of eqs. 5, 9 and 12; z is (…, dim) or (…, length, dim)."""
    denominator = (phi_q * z).sum(-1, keepdim=True) + eps
    return numerator / denominator


def prefix_denominator(fq, fk, z0, eps, chunk_size):
    """den_i = φ(q_i)·z_i + ε with z_i = z_0 + Σ_{j≤i} φ(k_j) (eq. 11); returns den (B, H, N, 1), z after the last
    position and z at every position."""
    z = prefix_sum(fk, chunk_size)
    if z0 is not None:
        z = z + z0[:, :, None]
    return (fq * z).sum(-1, keepdim=True) + eps, z[:, :, -1], z


def normaliser_gradients(h, fq, z, gz, dfq, dfk):
    """Add the denominator's share to ∇φ(q) (h_i z_i) and ∇φ(k) (Σ_{i≥j} h_i φ(q_i), plus ``gz``, the gradient of
    the final z); returns them and the gradient of z_0 (Σ_i h_i φ(q_i) + gz)."""
    hq = h * fq
    if dfq is not None:
        dfq = dfq + h * z
    later = torch.flip(torch.cumsum(torch.flip(hq, (2,)), 2), (2,))  # Σ_{i≥j} h_i φ(q_i)
    if gz is not None:
        later = later + gz[:, :, None]
    if dfk is not None:
        dfk = dfk + later
    return dfq, dfk, later[:, :, 0]
