"""How the causal op cuts a sequence into chunks: the chunk size both paths use, and the chunked prefix sum.

Imported by the op (:mod:`lra_kit.attention.causal.op`, which re-exports both) and by each path, so that neither
path imports the other.
"""
from __future__ import annotations

import torch

# Positions per chunk of both paths (the Triton kernels cap it per input type: host.TILING).
DEFAULT_CHUNK_SIZE = 64


def prefix_sum(x: torch.Tensor, chunk_size: int = DEFAULT_CHUNK_SIZE) -> torch.Tensor:
    """Z_i = Σ_{j≤i} x_j along the length of a (batch, heads, length, dim) tensor (Katharopoulos eq. 11).

    The same value as ``torch.cumsum(x, dim=2)``, computed as a lower-triangular matrix product inside chunks
    plus the chunks' running totals: on a CPU, cumsum along a dimension that is not the last one is several times
    slower."""
    B, H, N, D = x.shape
    C = max(1, min(chunk_size, N))
    pad = -N % C
    chunks = torch.nn.functional.pad(x, (0, 0, 0, pad)).view(B, H, (N + pad) // C, C, D)
    ones = torch.ones(C, C, dtype=x.dtype, device=x.device).tril_()
    local = ones @ chunks
    if local.shape[2] > 1:
        totals = local[:, :, :, -1:]
        local = local + (torch.cumsum(totals, 2) - totals)
    return local.view(B, H, N + pad, D)[:, :, :N]
