"""The trained-model figures' weights (lra_kit.viz.trained) reproduce what the modules compute.

attention_weights builds N×N matrices with the float64 oracles; multiplied with the module's own
values and output projection they must give the module's (fast-path) output.
"""
from __future__ import annotations

import pytest
import torch

from lra_kit.attention import attention_names, attention_spec, build_attention
from lra_kit.attention.heads import merge_heads, split_heads
from lra_kit.viz.trained import (
    aligned_weight,
    attention_weights,
    copy_lookup_share,
    layer_update_ratios,
    train_copy_model,
)


OPTIONS = {"momentum": {"beta": 0.6, "gamma": 0.8}}  # beyond the table's defaults
# The attentions whose weights attention_weights does not build, and why: it refuses them.
NO_WEIGHTS = {"performer": "no float64 oracle of FAVOR+'s random-feature kernel in lra_kit.viz.trained"}


@pytest.mark.parametrize("name", [n for n in attention_names() if not attention_spec(n).extra_sequence])  # Luna: below
def test_weights_reproduce_module_output(name):
    torch.manual_seed(0)
    attn = build_attention(name, 16, 2, causal=True, **OPTIONS.get(name, {}))
    x = torch.randn(2, 9, 16)
    if name in NO_WEIGHTS:
        with pytest.raises(TypeError, match=type(attn).__name__):
            attention_weights(attn, x)
        return
    w = attention_weights(attn, x)
    v = split_heads(attn.W_v.double()(x.double()), 2)
    attn.float()
    expected, _, _ = attn(x)
    got = attn.W_o.double()(merge_heads(w @ v)).float()
    attn.float()
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_luna_weights_reproduce_module_output():
    torch.manual_seed(0)
    attn = build_attention("luna", 16, 2, causal=True)
    x, p = torch.randn(2, 9, 16), torch.randn(4, 16)
    w = attention_weights(attn, x, p)
    v = split_heads(attn.v_proj.double()(x.double()), 2)
    attn.float()
    expected, _, _ = attn(x, p[None])
    got = attn.out_proj.double()(merge_heads(w @ v)).float()
    attn.float()
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_an_attention_without_an_oracle_is_refused_and_left_out():
    """Performer has no float64 oracle of its weights: not among the drawable attentions, refused by name of type."""
    from lra_kit.attention import attention_names
    from lra_kit.viz.trained import ATTENTIONS

    assert set(ATTENTIONS) < set(attention_names()) and "performer" not in ATTENTIONS
    assert list(ATTENTIONS) == [name for name in attention_names() if name in ATTENTIONS]  # the registry's order
    with pytest.raises(TypeError, match="PerformerAttention"):
        attention_weights(build_attention("performer", 16, 2, causal=True), torch.randn(1, 5, 16))
    with pytest.raises(ValueError, match="learned P"):
        attention_weights(build_attention("luna", 16, 2, causal=True), torch.randn(1, 5, 16))


def test_lookup_share_of_a_perfect_copy_head():
    w = 5
    n = 2 * w + 2
    perfect = torch.zeros(n, n)
    perfect[torch.arange(n), (torch.arange(n) - w).clamp(min=0)] = 1.0
    assert copy_lookup_share(perfect, w) == 1.0
    assert copy_lookup_share(torch.eye(n), w) == 0.0


def test_bad_arguments():
    with pytest.raises(ValueError, match="attention"):
        train_copy_model("nystrom")
    with pytest.raises(ValueError, match="word_length"):
        train_copy_model("linear", word_length=1)


def test_aligned_weight_and_initial_model():
    w = 4
    n = 2 * w + 2
    perfect = torch.zeros(n, n)
    perfect[torch.arange(n), (torch.arange(n) - w).clamp(min=0)] = 1.0
    assert aligned_weight(perfect, w).item() == 1.0
    assert aligned_weight(torch.eye(n), w).item() == 0.0
    # steps=0 is the model at initialisation: same seed, so the same weights as a trained run started from
    a = train_copy_model("linear", steps=0, word_length=4, scale="smoke")
    b = train_copy_model("linear", steps=0, word_length=4, scale="smoke", seed=0)
    assert a["steps"] == 0 and all(torch.equal(x, y) for x, y in zip(a["model"].state_dict().values(),
                                                                     b["model"].state_dict().values(), strict=True))
    ratios = layer_update_ratios(a["model"], a["ids"])
    assert ratios.shape == (len(a["model"].encoder.layers) - 1, *a["ids"].shape) and (ratios > 0).all()
