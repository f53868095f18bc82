"""The generation step's mixture-of-logistics probabilities (MixtureProbabilities) against the log-pmf the loss
uses (logistic_mixture_log_pmf, PixelCNN++ §2.1): the same distribution, to absolute errors below 1e-6."""
from __future__ import annotations

import pytest
import torch

from lra_kit.models.mixture import MIN_LOG_SCALE, MixtureProbabilities, logistic_mixture_log_pmf


def _params(batch: int, K: int, log_scale: float, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    logits, means = torch.randn(batch, K, generator=gen) * 2, torch.rand(batch, K, generator=gen) * 2.4 - 1.2
    log_scales = log_scale + torch.randn(batch, K, generator=gen)
    return torch.cat([logits, means, log_scales], dim=-1)


@pytest.mark.parametrize("log_scale", [1.0, -3.0, -6.0, -9.0], ids=["wide", "narrow", "sharp", "clamped"])
def test_probabilities_are_the_log_pmfs_distribution(log_scale, dtype=torch.float32):
    """Wide to sharp components (log s from 1 down to below the −7 clamp), means reaching past the edge bins:
    P = exp(log-pmf) to the rounding of float32. The two place a bin edge by different roundings (x − μ ± 1/255
    there, (x ± 1/255) − μ here), a few 1e-8 apart, which the sigmoid's argument multiplies by 1/s (up to e⁷) and
    its slope (at most 1/4) passes on to each edge's CDF. Where a bin's mass is below 1e-5 the log-pmf takes the
    density at the bin's centre instead, so there they may differ by up to that mass."""
    K = 10
    params = _params(64, K, log_scale, seed=int(-log_scale * 10)).to(dtype)
    inv_s = params[:, 2 * K:].clamp_min(MIN_LOG_SCALE).neg().exp().max().item()
    tol = 1e-6 + 2 * 0.25 * (4 * 2 ** -24 * inv_s)  # two edges, a few units of float32 rounding near 1 each
    want = logistic_mixture_log_pmf(params, K).exp()
    neg = params.clone()
    neg[:, 2 * K:] *= -1
    got = MixtureProbabilities(64, K, dtype=dtype)(neg[:, :K], neg[:, K:2 * K], neg[:, 2 * K:])
    assert got.shape == (64, 256) and got.dtype == dtype
    assert (got >= 0).all()
    torch.testing.assert_close(got.sum(-1), torch.ones(64, dtype=dtype), rtol=0, atol=10 * tol)
    tiny = want < 1e-5
    torch.testing.assert_close(got[~tiny], want[~tiny], rtol=0, atol=tol)
    torch.testing.assert_close(got[tiny], want[tiny], rtol=0, atol=1e-5)
    assert torch.equal(got.argmax(-1), want.argmax(-1))


def test_the_clamp_on_log_scales_is_the_log_pmfs():
    """log s below −7 counts as −7 (PixelCNN++'s clamp): a component at log s = −20 gives the distribution of one at
    −7, not a spike narrower than a bin."""
    K = 1
    base = torch.tensor([[0.0, 0.1, MIN_LOG_SCALE]])
    far = base.clone()
    far[0, 2] = -20.0
    probs = MixtureProbabilities(1, K)
    a = probs(base[:, :1], base[:, 1:2], -base[:, 2:]).clone()
    b = probs(far[:, :1], far[:, 1:2], -far[:, 2:])
    assert torch.equal(a, b)
