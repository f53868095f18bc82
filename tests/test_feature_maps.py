"""Feature maps as modules: the ``queries``/``keys``/``redraw`` API, and the attentions use both sides."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attention_helpers import assert_close, rand_qkv
from lra_kit.attention import (
    FEATURE_MAPS,
    Elementwise,
    FavorPlus,
    FeatureMap,
    LinearAttention,
    get_feature_map,
    linear_attention,
    linear_attention_step,
    momentum_attention,
    momentum_attention_step,
)
from lra_kit.attention.naive import naive_linear_attention

EXPECTED = {"elu": lambda x: F.elu(x) + 1, "relu": F.relu, "softplus": F.softplus}


@pytest.mark.parametrize("name", sorted(FEATURE_MAPS))
def test_named_maps_are_modules_with_both_sides_alike(name):
    phi = get_feature_map(name)
    assert isinstance(phi, FeatureMap) and isinstance(phi, torch.nn.Module)
    x = torch.randn(3, 7, dtype=torch.float64)
    for side in (phi, phi.queries, phi.keys):
        assert_close(side(x), EXPECTED[name](x), rtol=1e-14, atol=1e-15)
    assert phi.redraw() is None and not list(phi.parameters()) and not list(phi.buffers())
    assert get_feature_map(phi) is phi


def test_plain_callables_are_wrapped_and_bad_names_rejected():
    phi = get_feature_map(torch.square)
    assert isinstance(phi, Elementwise)
    x = torch.randn(4)
    assert torch.equal(phi.queries(x), x * x) and torch.equal(phi.keys(x), x * x)
    for bad in ("gelu", None, 3):
        with pytest.raises(ValueError, match="feature_map must be one of"):
            get_feature_map(bad)
    with pytest.raises(TypeError, match="callable"):
        Elementwise("elu")


class Asymmetric(FeatureMap):
    """φ_Q(x) = elu(x) + 1, φ_K(x) = 2(elu(x) + 1): a constant factor on the keys cancels in eqs. 5, 9 and 12."""

    def queries(self, x):
        return F.elu(x) + 1

    def keys(self, x):
        return 2 * (F.elu(x) + 1)


class Swapped(FeatureMap):
    """φ_Q = softplus, φ_K = elu + 1: any mix-up of the two sides changes the answer."""

    def queries(self, x):
        return F.softplus(x)

    def keys(self, x):
        return F.elu(x) + 1


@pytest.mark.parametrize("causal", [False, True])
def test_linear_and_momentum_map_queries_and_keys_with_their_own_side(causal):
    q, k, v = rand_qkv(2, 2, 11, 4)
    ref = naive_linear_attention(q, k, v, causal=causal, feature_map="elu", eps=0.0)
    assert_close(linear_attention(q, k, v, causal=causal, feature_map=Asymmetric(), eps=0.0)[0], ref)
    assert_close(momentum_attention(q, k, v, beta=0.0, causal=causal, feature_map=Asymmetric(), eps=0.0)[0], ref)
    # explicit kernel matrix φ_Q(Q)φ_K(K)ᵀ of the two different sides
    phi = Swapped()
    A = phi.queries(q) @ phi.keys(k).transpose(-1, -2)
    A = A.tril() if causal else A
    out, _ = linear_attention(q, k, v, causal=causal, feature_map=phi, eps=0.0)
    assert_close(out, (A @ v) / A.sum(-1, keepdim=True))


def test_step_functions_map_queries_and_keys_with_their_own_side():
    q, k, v = rand_qkv(1, 2, 6, 3)
    phi = Swapped()
    y, _ = linear_attention(q, k, v, causal=True, feature_map=phi)
    y_m, _ = momentum_attention(q, k, v, beta=0.4, causal=True, feature_map=phi)
    s_lin = s_mom = None
    for t in range(6):
        out, s_lin = linear_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], s_lin, feature_map=phi)
        assert_close(out, y[:, :, t])
        out, s_mom = momentum_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], s_mom, beta=0.4, feature_map=phi)
        assert_close(out, y_m[:, :, t])


def test_a_random_feature_map_travels_with_the_module_that_holds_it():
    """Linear attention can take any FeatureMap module; its buffers move and save with the attention."""
    torch.manual_seed(0)
    attn = LinearAttention(16, 2, feature_map=FavorPlus(8, 12))
    assert "feature_map.projection" in attn.state_dict()
    attn = attn.double()
    assert attn.feature_map.projection.dtype == torch.float64
    y, _, _ = attn(torch.randn(2, 5, 16, dtype=torch.float64))
    assert torch.isfinite(y).all()


def test_the_oracles_map_queries_and_keys_with_their_own_side():
    from lra_kit.attention.naive import naive_linear_recurrent, naive_momentum_attention, naive_momentum_recurrent

    q, k, v = rand_qkv(1, 2, 7, 3)
    phi = Swapped()
    y, _ = linear_attention(q, k, v, causal=True, feature_map=phi)
    assert_close(naive_linear_attention(q, k, v, causal=True, feature_map=phi), y)
    assert_close(naive_linear_recurrent(q, k, v, feature_map=phi)[0], y)
    y_m, _ = momentum_attention(q, k, v, beta=0.3, causal=True, feature_map=phi)
    assert_close(naive_momentum_attention(q, k, v, beta=0.3, causal=True, feature_map=phi), y_m)
    assert_close(naive_momentum_recurrent(q, k, v, beta=0.3, feature_map=phi)[0], y_m)
