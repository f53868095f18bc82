"""Discretized mixture of logistics over 8-bit pixel values (Salimans et al. 2017, PixelCNN++ §2.1).

The papers model each pixel with "a mixture of 10 logistics" (Katharopoulos et al. §4.2.1,
Nguyen et al. §4.2). A value c ∈ {0..255} is mapped to x = 2c/255 − 1 ∈ [−1, 1]; component k
(weight π_k, mean μ_k, scale s_k) gives it the mass of its bin [x − 1/255, x + 1/255]:

    P(c) = Σ_k π_k [σ((x + 1/255 − μ_k)/s_k) − σ((x − 1/255 − μ_k)/s_k)]

with the edge bins extended to ±∞ (c = 0 takes everything below, c = 255 everything above).
Here the whole 256-bin log-pmf is computed, so the loss, greedy decoding and sampling all
read one table; bins whose mass underflows use the density at the bin centre × bin width,
as PixelCNN++ does.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

N_BINS = 256
MIN_LOG_SCALE = -7.0  # PixelCNN++ clamps log s_k at −7


def split_params(params: torch.Tensor, components: int):
    """(…, 3K) → logits π (…, K), means μ (…, K), log scales (…, K) (clamped at −7)."""
    if params.shape[-1] != 3 * components:
        raise ValueError(f"params must have last dim 3·components = {3 * components}, got {params.shape[-1]}")
    logits, means, log_scales = params.split(components, dim=-1)
    return logits, means, log_scales.clamp_min(MIN_LOG_SCALE)


def logistic_mixture_log_pmf(params: torch.Tensor, components: int) -> torch.Tensor:
    """log P(c) for every c ∈ {0..255}: (…, 3K) → (…, 256); logsumexp over the last dim is ≈ 0."""
    logits, means, log_scales = (t.float()[..., None] for t in split_params(params, components))  # (…, K, 1)
    x = torch.linspace(-1.0, 1.0, N_BINS, device=params.device)  # bin centres 2c/255 − 1
    inv_s = torch.exp(-log_scales)
    centred = x - means
    plus_in = inv_s * (centred + 1.0 / (N_BINS - 1))
    min_in = inv_s * (centred - 1.0 / (N_BINS - 1))
    log_cdf_plus = plus_in - F.softplus(plus_in)          # log σ(plus_in): the mass below the bin's top
    log_one_minus_cdf_min = -F.softplus(min_in)           # log(1 − σ(min_in)): the mass above its bottom
    mass = torch.sigmoid(plus_in) - torch.sigmoid(min_in)
    mid_in = inv_s * centred
    log_pdf_mid = mid_in - log_scales - 2.0 * F.softplus(mid_in)  # log density at the centre
    log_mass = torch.where(mass > 1e-5, torch.log(mass.clamp_min(1e-12)), log_pdf_mid - math.log((N_BINS - 1) / 2))
    log_mass[..., 0] = log_cdf_plus[..., 0]
    log_mass[..., -1] = log_one_minus_cdf_min[..., -1]
    return torch.logsumexp(torch.log_softmax(logits, dim=-2) + log_mass, dim=-2)


class MixtureProbabilities:
    """The same distribution as :func:`logistic_mixture_log_pmf`, as probabilities, on buffers allocated once
    (the generation step's sampler, :mod:`lra_kit.models.decode`):

        P(c) = Σ_k π_k [σ((e_{c+1} − μ_k)/s_k) − σ((e_c − μ_k)/s_k)],   π = softmax(logits)

    with the bin edges e_c = 2c/255 − 1 − 1/255 for c = 1..255 and e_0 = −∞, e_256 = +∞ (the edge bins take
    the tails). Each component's CDF is evaluated once per edge, so the 256 masses are one difference of
    257 sigmoids, and the mixture one batched product: nine operations a call where the log-pmf takes
    about thirty. Masses below the log-pmf's 1e-5 threshold are the plain difference here, not the density
    at the bin's centre: for drawing a value or taking the most likely one only absolute errors matter,
    and these are below 1e-6 (``tests/test_models_mixture.py`` compares the two)."""

    def __init__(self, batch: int, components: int, *, dtype=torch.float32, device=None):
        self.K = components
        edges = torch.linspace(-1.0, 1.0, N_BINS, dtype=dtype, device=device) - 1.0 / (N_BINS - 1)
        edges[0] = float("-inf")
        self.edges = torch.cat([edges, edges.new_full((1,), float("inf"))])  # (257,)
        self.inv_s = self.edges.new_empty(batch, components, 1)
        self.cdf = self.edges.new_empty(batch, components, N_BINS + 1)
        self.mass = self.edges.new_empty(batch, components, N_BINS)
        self.probs = self.edges.new_empty(batch, 1, N_BINS)

    def __call__(self, logits: torch.Tensor, means: torch.Tensor, neg_log_scales: torch.Tensor) -> torch.Tensor:
        """(batch, K) each → P (batch, 256). ``neg_log_scales``: −log s_k (its clamp at −7 is applied here)."""
        torch.clamp_max(neg_log_scales[..., None], -MIN_LOG_SCALE, out=self.inv_s)
        self.inv_s.exp_()  # 1/s_k
        torch.sub(self.edges, means[..., None], out=self.cdf)
        self.cdf.mul_(self.inv_s).sigmoid_()
        torch.sub(self.cdf[..., 1:], self.cdf[..., :-1], out=self.mass)
        torch.bmm(torch.softmax(logits, dim=-1)[:, None], self.mass, out=self.probs)
        return self.probs[:, 0]


__all__ = ["N_BINS", "MixtureProbabilities", "logistic_mixture_log_pmf", "split_params"]
