"""Layers, connections and classifiers of lra_kit.models (CPU, seconds)."""
from __future__ import annotations

import math

import pytest
import torch

from lra_kit.attention import attention_names, attention_spec
from lra_kit.errors import ConfigError
from lra_kit.models import Carry, LunaLayer, ModelConfig, TransformerLayer, adaptive_momentum, build_model

ATTN = {"softmax": {}, "linear": {}, "momentum": {"beta": 0.6, "gamma": 0.9}}


def small(attention="linear", **kw) -> ModelConfig:
    base = dict(attention=attention, attention_options=ATTN.get(attention, {}), layers=3, d_model=16, n_heads=2,
                d_ff=32, dropout=0.0, attention_dropout=0.0)
    if attention == "luna":
        base.update(norm="post", luna_length=4)
    base.update(kw)
    return ModelConfig(**base)


# Luna: residual only; a language model needs a causal form (not Linformer's)
@pytest.mark.parametrize("attention,kind", [
    (a, kind) for a in attention_names() if attention_spec(a).momentum_connection
    for kind in ("classification", "lm") if kind != "lm" or attention_spec(a).causal])
@pytest.mark.parametrize("norm", ["pre", "post"])
def test_momentum_connection_with_beta0_gamma1_is_the_residual(attention, norm, kind):
    ids = torch.randint(0, 10, (3, 12))
    outs = []
    for connection in ("residual", "momentum"):
        torch.manual_seed(0)
        cfg = small(attention, norm=norm, connection=connection, connection_beta=0.0, connection_gamma=1.0)
        model = build_model(cfg, kind=kind, vocab_size=10, max_length=12, num_classes=3).eval()
        outs.append(model(ids))
    torch.testing.assert_close(outs[0], outs[1], rtol=0, atol=0)


def test_momentum_connection_formula():
    """h = x + γ̃·V̂ + β̃·(x − x_prev) (docs/design.md §6.3), and no momentum term in the first layer."""
    layer = TransformerLayer(small("linear", connection="momentum", connection_beta=0.3, connection_gamma=0.7))
    x, v, x_prev = torch.randn(3, 2, 5, 16).unbind(0)
    torch.testing.assert_close(layer.connect(x, v, Carry(x_prev, v)), x + 0.7 * v + 0.3 * (x - x_prev))
    torch.testing.assert_close(layer.connect(x, v, Carry()), x + 0.7 * v)


# Adaptive momentum, eq. 18 (a rule between layers) ---------------------------------------


def test_adaptive_momentum_formula_all_elements():
    g_prev = torch.tensor([3.0, 4.0])  # norm 5
    g = torch.tensor([3.0, 4.0 + 1.25])  # ‖g − g_prev‖ = 1.25
    expected = (1 - math.sqrt(1.25 / 5)) ** 2
    assert adaptive_momentum(g, g_prev).item() == pytest.approx(expected)
    assert adaptive_momentum(g, g_prev).dim() == 0


@pytest.mark.parametrize("dim", [-1, (1, 2)])
def test_adaptive_momentum_per_token_and_per_sample_and_bounds(dim):
    torch.manual_seed(0)
    g_prev = torch.randn(8, 5, 6)
    g = g_prev + torch.randn(8, 5, 6) * torch.logspace(-4, 1, 8)[:, None, None]
    beta = adaptive_momentum(g, g_prev, delta=1e-3, dim=dim)
    assert beta.shape == ((8, 5, 1) if dim == -1 else (8, 1, 1))
    assert (beta >= 0).all() and (beta <= 1 - 1e-3).all()
    ratio = (g - g_prev).norm(dim=dim, keepdim=True) / g_prev.norm(dim=dim, keepdim=True)
    torch.testing.assert_close(beta, ((1 - ratio.sqrt()) ** 2).clamp(0, 1 - 1e-3), rtol=1e-6, atol=1e-7)
    assert adaptive_momentum(g_prev, g_prev, delta=0.01).item() == pytest.approx(0.99)  # projected to 1 − δ
    zero = torch.zeros(3)
    assert torch.isfinite(adaptive_momentum(zero, zero)).all()


def test_adaptive_momentum_invalid():
    with pytest.raises(ValueError, match="delta"):
        adaptive_momentum(torch.ones(2), torch.ones(2), delta=0.0)
    with pytest.raises(ValueError, match="same shape"):
        adaptive_momentum(torch.ones(2), torch.ones(3))
    with pytest.raises(TypeError, match="tensors"):
        adaptive_momentum([1.0], torch.ones(1))


def test_per_token_is_the_default():
    assert ModelConfig().adaptive_over == "token"
    layer = TransformerLayer(small("linear", connection="adaptive"))
    v, v_prev = torch.randn(2, 3, 5, 16).unbind(0)
    torch.testing.assert_close(layer.momentum_beta(v, Carry(v, v_prev), None),
                               adaptive_momentum(v, v_prev, delta=layer.cfg.adaptive_delta, dim=-1))


@pytest.mark.parametrize("over", ["token", "sample"])
def test_adaptive_beta_stays_in_0_1_minus_delta(over):
    delta = 1e-3
    layer = TransformerLayer(small("linear", connection="adaptive", adaptive_over=over, adaptive_delta=delta))
    g = torch.Generator().manual_seed(0)
    for scale in (1e-6, 1e-2, 1.0, 1e3):
        v = torch.randn(4, 7, 16, generator=g) * scale
        for v_prev in (v + 1e-4 * torch.randn(4, 7, 16, generator=g), torch.randn(4, 7, 16, generator=g),
                       torch.zeros(4, 7, 16), v):
            beta = layer.momentum_beta(v, Carry(v, v_prev), None)
            assert torch.isfinite(beta).all()
            assert beta.min() >= 0.0 and beta.max() <= 1.0 - delta
            assert beta.shape == ((4, 7, 1) if over == "token" else (4, 1, 1))
    # identical consecutive attention outputs: the bound 1 − δ; first layer: 0
    assert torch.allclose(layer.momentum_beta(v, Carry(v, v), None), torch.tensor(1.0 - delta))
    assert layer.momentum_beta(v, Carry(), None) == 0.0


def test_adaptive_per_sample_ignores_padding():
    layer = TransformerLayer(small("linear", connection="adaptive", adaptive_over="sample"))
    v, v_prev = torch.randn(2, 2, 6, 16).unbind(0)
    keep = torch.ones(2, 6, 1)
    keep[:, 4:] = 0
    noisy_v, noisy_prev = v.clone(), v_prev.clone()
    noisy_v[:, 4:] += 100.0
    a = layer.momentum_beta(v, Carry(v, v_prev), keep)
    b = layer.momentum_beta(noisy_v, Carry(v, noisy_prev), keep)
    torch.testing.assert_close(a, b)


def test_adaptive_per_sample_is_refused_for_causal_models():
    with pytest.raises(ValueError, match="adaptive_over"):
        TransformerLayer(small("linear", connection="adaptive", adaptive_over="sample"), causal=True)


@pytest.mark.parametrize("attention", attention_names())
def test_classifier_ignores_padding(attention):
    torch.manual_seed(0)
    cfg = small(attention, pooling="mean")
    model = build_model(cfg, kind="classification", vocab_size=10, max_length=20, num_classes=3, pad_id=0).eval()
    ids = torch.randint(1, 10, (2, 8))
    padded = torch.cat([ids, torch.zeros(2, 5, dtype=torch.long)], dim=1)
    mask = torch.zeros(2, 13, dtype=torch.bool)
    mask[:, 8:] = True
    torch.testing.assert_close(model(ids, torch.zeros(2, 8, dtype=torch.bool)), model(padded, mask),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pooling", ["mean", "cls", "p_mean"])
def test_luna_classifier_poolings_and_p_flow(pooling):
    torch.manual_seed(0)
    cfg = small("luna", pooling=pooling, layers=2)
    model = build_model(cfg, kind="classification", vocab_size=10, max_length=16, num_classes=4)
    ids = torch.randint(0, 10, (3, 16))
    logits = model(ids, torch.zeros(3, 16, dtype=torch.bool))
    assert logits.shape == (3, 4)
    logits.sum().backward()
    assert model.encoder.p0.grad is not None and model.encoder.p0.grad.abs().sum() > 0


def test_luna_layer_updates_p_through_its_own_norm():
    torch.manual_seed(0)
    layer = LunaLayer(small("luna")).eval()
    x, p = torch.randn(2, 9, 16), torch.randn(2, 4, 16)
    x2, _, p2 = layer(x, Carry(), p)
    assert x2.shape == x.shape and p2.shape == p.shape
    _, y_p, _ = layer.attn(x, p)
    torch.testing.assert_close(p2, layer.norm_p(p + y_p))  # Luna eq. 6: no FFN on P
    causal = LunaLayer(small("luna"), causal=True)
    assert causal.p.shape == (4, 16)
    _, _, p_out = causal(x, Carry(), None)
    assert p_out is None or torch.equal(p_out, causal.p[None])


@pytest.mark.parametrize("attention", attention_names())
def test_dual_encoder_on_synthetic_pairs(attention):
    """Retrieval's model path (the AAN data is not offline): [u, v, u·v, u−v] → MLP, trained a few steps."""
    torch.manual_seed(0)
    model = build_model(small(attention, layers=1), kind="retrieval", vocab_size=20, max_length=24, num_classes=2)
    a, b = torch.randint(1, 20, (8, 24)), torch.randint(1, 20, (8, 24))
    mask = torch.zeros(8, 24, dtype=torch.bool)
    mask[:4, 18:] = True
    labels = torch.tensor([0, 1] * 4)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(15):
        loss = torch.nn.functional.cross_entropy(model(a, mask, b, mask), labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    with pytest.raises(TypeError, match="input_ids_2"):
        model(a, mask)


def test_bad_model_config_names_the_valid_values():
    with pytest.raises(ValueError, match="connection must be one of"):
        ModelConfig(connection="nesterov").validate()
    with pytest.raises(ValueError, match="linear.*luna.*momentum.*softmax"):
        ModelConfig(attention="reformer").validate()
    with pytest.raises(ValueError, match="connection_beta"):
        ModelConfig(connection="momentum", connection_beta=1.0).validate()
    with pytest.raises(ValueError, match="post-LN"):
        ModelConfig(attention="luna", norm="pre").validate()
    with pytest.raises(ValueError, match="kind must be one of"):
        build_model(ModelConfig(), kind="seq2seq", vocab_size=4, max_length=4)


def test_structure_follows_the_registry_flags_not_the_name(monkeypatch):
    """A row with Luna's flags under another name gets Luna's layer, learned P and rules (models and configs)."""
    import dataclasses
    from types import MappingProxyType

    import lra_kit.attention
    from lra_kit.attention import registry
    from lra_kit.models import Encoder
    from lra_kit.train import config_schema, configs

    table = MappingProxyType({**registry.ATTENTIONS,
                              "packed": dataclasses.replace(registry.ATTENTIONS["luna"], name="packed")})
    for module in (registry, lra_kit.attention, configs, config_schema):
        monkeypatch.setattr(module, "ATTENTIONS", table)
    encoder = Encoder(small("packed", norm="post", luna_length=4, layers=1))
    assert isinstance(encoder.layers[0], LunaLayer) and encoder.p0 is not None
    assert small("packed", norm="post", pooling="p_mean").validate().pooling == "p_mean"
    with pytest.raises(ValueError, match="post-LN"):
        small("packed", norm="pre").validate()
    with pytest.raises(ValueError, match="residual connection"):
        small("packed", norm="post", connection="adaptive").validate()
    assert configs.get_config("copy", "packed", "smoke").model.norm == "post"
    with pytest.raises(ConfigError, match="connection must be 'residual' with packed"):
        configs.get_config("copy", "packed", "smoke", connection="adaptive")


@pytest.mark.parametrize("embed_scale", [False, True])
def test_embed_scale_keeps_the_token_beside_its_sinusoidal_position(embed_scale):
    """Beside sinusoids (±1), tokens at N(0, 0.02) are drowned: after the embedding LayerNorm two different
    tokens at one position look alike. Scaled as Luna's LRA encoder scales them, they do not; and Luna's
    initial P is on the same scale as the tokens, its rows told apart by their positions."""
    cfg = ModelConfig(attention="luna", norm="post", final_norm=False, embed_norm=True, position="sinusoidal",
                      pooling="cls", embed_scale=embed_scale, d_model=64, luna_length=8, dropout=0.0)
    torch.manual_seed(0)
    model = build_model(cfg, kind="classification", vocab_size=200, num_classes=2, max_length=32)
    x = model.embed(torch.arange(1, 101).view(100, 1))  # 100 tokens, each at position 0
    cos = torch.nn.functional.cosine_similarity(x[:50, 0], x[50:, 0], dim=-1).mean()
    p = model.encoder.initial_p()
    if embed_scale:
        assert cos < 0.5, cos
        assert torch.allclose(p.norm(dim=-1), x[0, 0].norm(), rtol=0.05)  # LayerNorm'd like the tokens
    else:
        assert cos > 0.99, cos
        assert p.norm(dim=-1).max() < 2.0  # N(0, 1/d) rows: norm about 1, an eighth of a token's
