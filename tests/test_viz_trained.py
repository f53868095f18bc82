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
    aligned_fraction,
    aligned_weight,
    attention_weights,
    best_lookup_head,
    copy_lookup_share,
    held_out_attention_maps,
    layer_lookup_share,
    layer_update_ratios,
    train_copy_model,
    trained_attention_maps,
)


# beyond the table's defaults; LSH with chunks of 3 and 4 rounds, so that its windows are not the whole sequence
OPTIONS = {"momentum": {"beta": 0.6, "gamma": 0.8}, "lsh": {"chunk_size": 3, "n_hashes": 4, "n_buckets": 4}}
# The attentions whose weights attention_weights does not build, and why: it refuses them.
NO_WEIGHTS = {"performer": "no float64 oracle of FAVOR+'s random-feature kernel in lra_kit.viz.trained"}


@pytest.mark.parametrize("name", [n for n in attention_names()  # Luna: below; the causal models' attentions
                                  if attention_spec(n).causal and not attention_spec(n).extra_sequence])
def test_weights_reproduce_module_output(name):
    torch.manual_seed(0)
    attn = build_attention(name, 16, 2, causal=True, **OPTIONS.get(name, {})).eval()  # LSH: fixed rotations
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


def _causal_uniform(n: int) -> torch.Tensor:
    return torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None]


def test_best_lookup_head_follows_the_weight_on_the_aligned_key_not_a_tie_in_argmax_share():
    """Two heads whose argmax falls one word back for the same 2 of 4 queries: a tie on the share. Head 1 puts
    most of its weight on the aligned key, head 0 hardly any; the choice must be head 1, whatever the heads'
    order, and whatever its rows sum to (momentum's and causal Luna's do not sum to one)."""
    w, n = 4, 10
    rows = torch.arange(w + 1, 2 * w + 1)
    weak, strong = _causal_uniform(n), torch.zeros(n, n)
    weak[rows[:2], rows[:2] - w] += 0.5                    # argmax aligned for queries 1-2, small fraction
    strong[rows, rows - w] = 0.45                          # a large fraction on every query ...
    strong[rows[2:], rows[2:] - 1] = 0.55                  # ... but the argmax elsewhere for queries 3-4
    strong[rows[:2], 0] = 0.1
    assert copy_lookup_share(weak, w) == copy_lookup_share(strong, w) == 0.5
    for maps, want in (([torch.stack([weak, strong])], 1), ([torch.stack([strong, weak])], 0),
                       ([torch.stack([weak, weak]), torch.stack([weak, 6.0 * strong])], 3)):
        layer, head, share = best_lookup_head(maps, w)
        assert maps[0].shape[0] * layer + head == want and share == 0.5, (layer, head)
    assert torch.allclose(aligned_fraction(6.0 * strong, w), aligned_fraction(strong, w))
    assert aligned_fraction(strong, w).item() > 0.4 > 0.3 > aligned_fraction(weak, w).item()
    # maps of several samples: (samples, heads, N, N)
    assert best_lookup_head([torch.stack([weak, strong])[None].expand(3, -1, -1, -1)], w)[:2] == (0, 1)


def test_layer_lookup_share_counts_the_heads_together():
    w, n = 4, 10
    rows = torch.arange(w + 1, 2 * w + 1)
    first, second = _causal_uniform(n), _causal_uniform(n)
    first[rows[:2], rows[:2] - w] = 1.0
    second[rows[2:], rows[2:] - w] = 1.0
    assert copy_lookup_share(first, w) == copy_lookup_share(second, w) == 0.5
    assert layer_lookup_share(torch.stack([first, second]), w) == 1.0
    assert layer_lookup_share(torch.stack([first, first]), w) == 0.5


def test_held_out_maps_hold_every_sample_and_sample_zero_is_the_figures():
    run = train_copy_model("linear", steps=5, word_length=4, scale="smoke")
    held = held_out_attention_maps(run)
    one = trained_attention_maps(run)
    assert len(held) == len(one) and held[0].shape == (run["ids"].shape[0], *one[0].shape)
    assert all(torch.allclose(h[0], o) for h, o in zip(held, one, strict=True))
