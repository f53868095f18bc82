"""Momentum attention (Nguyen et al. eqs. 12–14, 18): closed form = recurrence = lra_kit."""
import math

import pytest
import torch
from attention_helpers import assert_close, rand_qkv, right_padding_mask

from lra_kit.attention import (
    linear_attention,
    momentum_attention,
    momentum_attention_step,
    momentum_weights,
)
from lra_kit.attention.naive import naive_momentum_attention, naive_momentum_recurrent

BETAS = [0.0, 0.1, 0.6, 0.9, 0.999]
GAMMAS = [0.6, 1.0, 2.5]
SHAPES = [(1, 1, 1, 1, 1), (2, 3, 17, 5, 4), (1, 2, 130, 8, 3), (2, 1, 64, 1, 1)]


@pytest.mark.parametrize("beta", BETAS)
@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("shape", SHAPES)
def test_causal_closed_form_equals_recurrence_equals_lra_kit(beta, gamma, shape):
    B, H, N, D, M = shape
    q, k, v = rand_qkv(B, H, N, D, M)
    out, _ = momentum_attention(q, k, v, beta=beta, gamma=gamma, causal=True)
    closed = naive_momentum_attention(q, k, v, beta=beta, gamma=gamma, causal=True)
    recurrent, _ = naive_momentum_recurrent(q, k, v, beta=beta, gamma=gamma)
    assert_close(closed, recurrent, rtol=1e-9, atol=1e-9, msg="eq. 13 vs eq. 12")
    assert_close(out, closed, rtol=1e-9, atol=1e-9, msg="lra_kit vs eq. 13")


@pytest.mark.parametrize("beta", [0.0, 0.3, 0.99])
@pytest.mark.parametrize("chunk_size", [1, 5, 64])
def test_causal_any_chunk_size(beta, chunk_size):
    q, k, v = rand_qkv(1, 2, 41, 4)
    out, _ = momentum_attention(q, k, v, beta=beta, gamma=0.9, causal=True, chunk_size=chunk_size)
    assert_close(out, naive_momentum_attention(q, k, v, beta=beta, gamma=0.9, causal=True), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("beta", [0.0, 0.6, 0.999])
def test_steps_equal_parallel(beta):
    B, H, N, D = 2, 2, 33, 4
    q, k, v = rand_qkv(B, H, N, D)
    parallel, _ = momentum_attention(q, k, v, beta=beta, gamma=0.6, causal=True)
    state, outs = None, []
    for t in range(N):
        out_t, state = momentum_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], state, beta=beta, gamma=0.6)
        outs.append(out_t)
        assert state.s.shape == state.m.shape == (B, H, D, D) and state.z.shape == (B, H, D)
    assert_close(torch.stack(outs, 2), parallel, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("causal", [False, True])
def test_beta_zero_gamma_one_is_linear_attention(causal):
    q, k, v = rand_qkv()
    mask = right_padding_mask([17, 9], 17)
    assert_close(
        momentum_attention(q, k, v, beta=0.0, gamma=1.0, causal=causal, key_padding_mask=mask)[0],
        linear_attention(q, k, v, causal=causal, key_padding_mask=mask)[0],
    )


@pytest.mark.parametrize("beta", BETAS)
def test_noncausal_eq14_uses_each_sequence_true_length(beta):
    B, H, N, D = 3, 2, 15, 4
    lengths = [15, 8, 1]
    q, k, v = rand_qkv(B, H, N, D)
    mask = right_padding_mask(lengths, N)
    out, _ = momentum_attention(q, k, v, beta=beta, gamma=0.9, key_padding_mask=mask)
    assert_close(out, naive_momentum_attention(q, k, v, beta=beta, gamma=0.9, key_padding_mask=mask))
    for b, n in enumerate(lengths):  # a padded sequence gives what the unpadded one gives
        alone, _ = momentum_attention(q[b : b + 1, :, :n], k[b : b + 1, :, :n], v[b : b + 1, :, :n], beta=beta,
                                      gamma=0.9)
        assert_close(out[b : b + 1, :, :n], alone)


def test_causal_padding_and_future_leakage():
    q, k, v = rand_qkv(2, 2, 40, 3)
    mask = right_padding_mask([40, 25], 40)
    out, _ = momentum_attention(q, k, v, beta=0.7, gamma=0.8, causal=True, key_padding_mask=mask)
    assert_close(out, naive_momentum_attention(q, k, v, beta=0.7, gamma=0.8, causal=True, key_padding_mask=mask))
    q2, k2, v2 = (x.clone() for x in (q, k, v))
    for x in (q2, k2, v2):
        x[:, :, 20:] = torch.randn_like(x[:, :, 20:])
    out2, _ = momentum_attention(q2, k2, v2, beta=0.7, gamma=0.8, causal=True, key_padding_mask=mask)
    assert torch.equal(out[:, :, :20], out2[:, :, :20])


def test_momentum_gradients_equal_autograd_through_oracle():
    q, k, v = rand_qkv(2, 2, 150, 4, 3, requires_grad=True)  # crosses chunk boundaries
    g = torch.randn(2, 2, 150, 3, dtype=torch.float64)
    fast = torch.autograd.grad((momentum_attention(q, k, v, beta=0.8, gamma=0.6, causal=True)[0] * g).sum(), (q, k, v))
    slow = torch.autograd.grad(
        (naive_momentum_attention(q, k, v, beta=0.8, gamma=0.6, causal=True) * g).sum(), (q, k, v)
    )
    for name, a, b in zip("qkv", fast, slow, strict=False):
        assert_close(a, b, rtol=1e-9, atol=1e-9, msg=f"grad {name}")


@pytest.mark.parametrize("beta", [0.9, 0.99, 0.999])
def test_float32_stable_for_beta_near_one(beta):
    """Float32 keeps the accuracy of linear attention even where γ/(1−β)·(S − βD) would cancel."""
    q, k, v = rand_qkv(1, 2, 1500, 16)
    ref = naive_momentum_attention(q, k, v, beta=beta, gamma=1.0, causal=True)
    out, _ = momentum_attention(q.float(), k.float(), v.float(), beta=beta, gamma=1.0, causal=True)
    assert torch.isfinite(out).all()
    rel = (out.double() - ref).abs().max() / ref.abs().max()
    assert rel < 1e-5, f"relative error {rel:.2e}"


def test_authors_batched_differs_from_eq13_except_at_the_last_position():
    q, k, v = rand_qkv(1, 2, 64, 4)
    paper, _ = momentum_attention(q, k, v, beta=0.6, gamma=0.9, causal=True)
    authors, _ = momentum_attention(q, k, v, beta=0.6, gamma=0.9, causal=True, compat="authors_batched")
    assert_close(authors, naive_momentum_attention(q, k, v, beta=0.6, gamma=0.9, causal=True, compat="authors_batched"))
    assert_close(authors[:, :, -1], paper[:, :, -1])
    assert (authors[:, :, :-1] - paper[:, :, :-1]).abs().max() > 1e-2


def test_momentum_weights_formula():
    lag = torch.arange(10, dtype=torch.float64)
    w = momentum_weights(lag, 0.6, 0.9)
    assert_close(w, 0.9 * (1 - 0.6 ** (lag + 1)) / (1 - 0.6))
    assert_close(momentum_weights(lag, 0.0, 1.0), torch.ones(10, dtype=torch.float64))


@pytest.mark.parametrize("beta", [0.0, 0.3, 0.95, 0.999])
def test_momentum_weights_closed_form_is_the_sum_of_powers(beta):
    """Eq. 13's γ(1 − β^{x+1})/(1 − β) against its definition γ Σ_{m=0}^{x} βᵐ, summed term by term in float64."""
    lag = torch.arange(200, dtype=torch.float64)
    by_terms = 0.9 * torch.cumsum(beta ** torch.arange(200, dtype=torch.float64), 0)
    torch.testing.assert_close(momentum_weights(lag, beta, 0.9), by_terms, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "beta, gamma, match",
    [(1.0, 1.0, "beta"), (1.5, 1.0, "beta"), (-0.1, 1.0, "beta"), (0.5, 0.0, "gamma"), (0.5, -1.0, "gamma"),
     (math.nan, 1.0, "beta"), (0.5, math.inf, "gamma"), (0.5, math.nan, "gamma")],
)
def test_invalid_beta_gamma(beta, gamma, match):
    q, k, v = rand_qkv(1, 1, 4, 2)
    with pytest.raises(ValueError, match=match):
        momentum_attention(q, k, v, beta=beta, gamma=gamma, causal=True)
    with pytest.raises(ValueError, match=match):
        momentum_attention_step(q[:, :, 0], k[:, :, 0], v[:, :, 0], beta=beta, gamma=gamma)


def test_invalid_compat():
    q, k, v = rand_qkv(1, 1, 4, 2)
    with pytest.raises(ValueError, match="compat"):
        momentum_attention(q, k, v, beta=0.5, compat="authors")


# Adaptive momentum, eq. 18 ------------------------------------------------------------------


def test_lra_compat_modes_are_the_unnormalised_nystromformer_attention():
    """compat='nystromformer' / 'authors_lra': φ(Q)(φ(K)ᵀV)/√n, n padded, keys at padding zeroed, no normaliser."""
    from lra_kit.attention.feature_maps import elu_plus_one

    B, H, N, D = 2, 2, 30, 4
    q, k, v = rand_qkv(B, H, N, D)
    mask = right_padding_mask([30, 20], N)
    keep = (~mask)[:, None, :, None].double()
    fq, fk = elu_plus_one(q) / N**0.25, elu_plus_one(k) * keep / N**0.25
    expected = fq @ (fk.transpose(-1, -2) @ (v * keep))
    assert_close(linear_attention(q, k, v, key_padding_mask=mask, compat="nystromformer")[0], expected)
    j = torch.arange(1, N + 1, dtype=torch.float64)
    w = (0.9 * (1 - 0.6 ** (N - j + 1)) / (1 - 0.6))[None, None, :, None]  # the padded length in the weights
    expected = fq @ ((fk * w).transpose(-1, -2) @ (v * keep))
    got, _ = momentum_attention(q, k, v, beta=0.6, gamma=0.9, key_padding_mask=mask, compat="authors_lra")
    assert_close(got, expected)
    with pytest.raises(ValueError, match="causal"):
        linear_attention(q, k, v, causal=True, compat="nystromformer")
    with pytest.raises(ValueError, match="causal"):
        momentum_attention(q, k, v, beta=0.5, causal=True, compat="authors_lra")
    with pytest.raises(ValueError, match="compat"):
        linear_attention(q, k, v, compat="authors_lra")
