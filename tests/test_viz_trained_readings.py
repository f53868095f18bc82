"""The measures behind the readings of chapters 5 and 7's trained-model figures (lra_kit.viz.trained):
how a causal Luna layer's packing weights vary (pack_profile), the packing weights of a run (luna_packing),
the init-beside-trained packing figure, and the per-layer table of an adaptive connection's β̃."""
from __future__ import annotations

import matplotlib
import pytest
import torch

matplotlib.use("Agg")

from lra_kit.viz.trained import (  # noqa: E402
    attention_inputs,
    draw_packing_init_vs_trained,
    layer_update_ratios,
    luna_pack_weights,
    luna_packing,
    pack_profile,
    print_beta_trace,
    train_copy_model,
)


def test_pack_profile_tells_token_selection_from_slot_selection():
    tokens = torch.tensor([0.1, 0.1, 2.0, 3.0, 0.1, 0.1])
    same = tokens[:, None].expand(6, 4).clone()               # every slot packs tokens 2 and 3
    f = pack_profile(same)
    assert f["min_slot_corr"] == pytest.approx(1.0) and f["over_slots"] == pytest.approx(0.0)
    assert f["over_tokens"] > 1.0 and f["strong_tokens"] == [2, 3]
    differ = same.clone()
    differ[:, 1] = tokens.roll(3)                              # slot 1 packs tokens 5 and 0 instead
    g = pack_profile(differ)
    assert g["min_slot_corr"] < 0.0 and g["over_slots"] > 0.1
    even = torch.ones(6, 4) + 1e-3 * torch.rand(6, 4)
    assert pack_profile(even)["over_tokens"] < 0.01 and len(pack_profile(even)["strong_tokens"]) == 6


@pytest.mark.parametrize("bad", [torch.ones(6), torch.ones(6, 1), -torch.ones(6, 4)])
def test_pack_profile_refuses_what_is_not_a_packing(bad):
    with pytest.raises(ValueError, match="weights"):
        pack_profile(bad)


def test_luna_packing_is_each_layers_pack_weights_and_the_figure_draws_both_models():
    initial = train_copy_model("luna", steps=0, word_length=4, scale="smoke")
    trained = train_copy_model("luna", steps=3, word_length=4, scale="smoke")
    packs, packs_initial = luna_packing(trained), luna_packing(initial)
    model = trained["model"]
    assert len(packs) == len(model.encoder.layers)
    first = model.encoder.layers[0]
    assert packs[0].shape == (first.attn.n_heads, trained["ids"].shape[1], first.p.shape[0])
    # sample 1 of the held-out batch is that sample's row of the batch's packing weights
    x = attention_inputs(model, trained["ids"][:2])[0]
    torch.testing.assert_close(luna_packing(trained, sample=1)[0], luna_pack_weights(first.attn, x, first.p)[1])
    fig = draw_packing_init_vs_trained(packs_initial, packs, 4)
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == 2 * len(packs)
    for column in range(len(packs)):                           # the two panels of a layer share one scale from 0
        top, bottom = images[column], images[len(packs) + column]
        assert top.get_clim() == bottom.get_clim() and top.get_clim()[0] == 0
    matplotlib.pyplot.close(fig)
    with pytest.raises(ValueError, match="same layers"):
        draw_packing_init_vs_trained(packs_initial[:1], packs, 4)


def test_print_beta_trace_prints_one_row_per_layer_with_momentum(capsys):
    run = train_copy_model("softmax", steps=0, word_length=4, scale="smoke", connection="adaptive", layers=3,
                           record_every=1)
    betas = torch.tensor([b for _, b in run["beta_trace"]])
    ratios = layer_update_ratios(run["model"], run["ids"])
    print_beta_trace(run, betas, ratios, ratios)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[2:4]] == ["2", "3"] and "r > 1" in lines[-1]
    with pytest.raises(ValueError, match="betas"):
        print_beta_trace(run, betas, ratios[:1], ratios[:1])
