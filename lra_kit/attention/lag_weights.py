"""The momentum weights of Nguyen et al. as functions of a lag: u(x) of eq. 13, βˣ of the decayed state, and the
weights counted from the sequence end of eq. 14. Shared by the chunked PyTorch path, the Triton path and the
non-causal forms."""
from __future__ import annotations

import math

import torch


def momentum_lag_weights(lag: torch.Tensor, beta: float) -> torch.Tensor:
    """u(x) = (1 − β^{x+1}) / (1 − β) = Σ_{m=0}^{x} βᵐ for integer lags x ≥ −1 (u(−1) = 0).

    Evaluated as −expm1((x+1) log β) / (1 − β), accurate for β near 1.
    """
    if beta == 0.0:
        return (lag >= 0).to(lag.dtype)
    return -torch.expm1((lag + 1) * math.log(beta)) / (1.0 - beta)


def decay_weights(lag: torch.Tensor, beta: float) -> torch.Tensor:
    """β^x for integer lags x ≥ 0, with 0⁰ = 1 (at β = 0 only the newest term survives)."""
    return (lag == 0).to(lag.dtype) if beta == 0.0 else torch.exp(lag * math.log(beta))


def scalar_u(x: int, beta: float) -> float:
    """u(x) for one integer lag, as a Python float."""
    return float(x + 1 > 0) if beta == 0.0 else (1.0 - beta ** (x + 1)) / (1.0 - beta)


def key_weights_from_end(key_padding_mask, length, beta, gamma, device, dtype, batch):
    """γ u(N − j) for each key (B, 1, L, 1): eq. 14's weights, N the true length and j the rank of a real key
    (with ``key_padding_mask=None``, N is ``length``)."""
    if key_padding_mask is None:
        rank = torch.arange(1, length + 1, device=device, dtype=dtype).expand(batch, length)
        n = torch.full((batch, 1), float(length), device=device, dtype=dtype)
    else:
        real = (~key_padding_mask).to(dtype)
        rank = torch.cumsum(real, dim=1)
        n = real.sum(dim=1, keepdim=True)
    lag = (n - rank).clamp(min=0)
    return (gamma * momentum_lag_weights(lag, beta))[:, None, :, None]
