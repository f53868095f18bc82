"""lra_kit.viz.lookup: the look-up reading of a trained copy model that chapters 2 and 4 assert on."""
from __future__ import annotations

import pytest

from lra_kit.viz.lookup import copy_lookup
from lra_kit.viz.trained import aligned_weight, best_lookup_head, held_out_attention_maps, train_copy_model


def test_copy_lookup_reads_the_held_out_copies_of_both_models():
    w = 4
    look = copy_lookup("linear", word_length=w, steps=3, scale="smoke")
    run, initial = (train_copy_model("linear", word_length=w, steps=s, scale="smoke") for s in (3, 0))
    assert look.run is run and look.initial_run is initial  # the cached runs, not new trainings
    held = held_out_attention_maps(run)
    assert (look.layer, look.head, look.share) == best_lookup_head(held, w)
    # before: the same head of the untrained model, on the aligned key, over all 64 copies
    before = aligned_weight(held_out_attention_maps(initial)[look.layer][:, look.head], w).mean().item()
    assert look.before == pytest.approx(before, abs=0)
    assert 0 <= look.share <= look.together <= 1
    assert len(look.maps) == len(look.initial) == len(run["model"].encoder.layers)
    assert look.maps[0].shape[-1] == 2 * w + 2 and look.accuracy == run["accuracy"]
    text = look.summary()
    assert text.count("\n") == 1 and f"layer {look.layer + 1}, head {look.head + 1}" in text


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="attention"):
        copy_lookup("nystrom", scale="smoke")
    with pytest.raises(ValueError, match="word_length"):
        copy_lookup("linear", word_length=1, scale="smoke")
