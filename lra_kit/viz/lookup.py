"""The reading of a trained copy model that chapters 2 and 4 check: training moves a head onto the key one
word length back.

On the copy task ``0 w 0 w`` (Katharopoulos et al. §4.1) a query at position i of the second copy must read
the key at i − w to predict token i + 1. :func:`copy_lookup` trains the model of
:func:`lra_kit.viz.trained.train_copy_model`, takes the same model at initialisation (same seed), and measures
on the 64 held-out copies the head that looks up (:func:`~lra_kit.viz.trained.best_lookup_head`), how often
it and its layer's heads together put their largest weight on the aligned key, and that head's mean weight
there before and after training. The page asserts on these numbers; this module only computes and words them.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from lra_kit.viz import trained


@dataclass(frozen=True)
class CopyLookup:
    """A trained copy model and its untrained twin, read for the look-up one word length back.

    ``maps``, ``initial``: per layer, (heads, N, N) weights on one held-out sample (the figures);
    ``layer``, ``head``: the look-up head (0-based); ``share``: how often its largest weight falls on key
    i − w over the held-out second-copy queries; ``together``: the same for the layer's heads together;
    ``before``, ``after``: its mean weight on key i − w at initialisation and trained."""

    run: dict
    initial_run: dict
    maps: list[torch.Tensor]
    initial: list[torch.Tensor]
    word_length: int
    layer: int
    head: int
    share: float
    together: float
    before: float
    after: float

    @property
    def accuracy(self) -> float:
        """Copy accuracy of the trained model on its held-out batch (the second copy's tokens)."""
        return self.run["accuracy"]

    def summary(self) -> str:
        """Two lines: how the model was trained and how well it copies, then the look-up head's numbers."""
        run = self.run
        return (f"{run['steps']} steps at scale {run['scale']!r} in {run['seconds']:.1f} s: copy accuracy "
                f"{self.accuracy:.3f}; layer {self.layer + 1}, head {self.head + 1} puts its largest weight one "
                f"word back for {self.share:.0%} of the queries, the layer's heads together for "
                f"{self.together:.0%}\nweight of that head on the aligned key (mean over the held-out copies): "
                f"{self.before:.2f} at initialisation, {self.after:.2f} trained")


def copy_lookup(attention: str, *, word_length: int = 12, steps: int | None = None,
                scale: str | None = None) -> CopyLookup:
    """Train ``attention``'s copy model (``steps``: the scale's default when None; ``scale``: LRA_KIT_SCALE's
    when None; see :func:`lra_kit.viz.trained.train_copy_model`, which checks the arguments) and read its
    look-up head."""
    run = trained.train_copy_model(attention, word_length=word_length, steps=steps, scale=scale)
    initial_run = trained.train_copy_model(attention, word_length=word_length, steps=0, scale=scale)
    maps, initial = (trained.trained_attention_maps(r) for r in (run, initial_run))
    held, held_initial = (trained.held_out_attention_maps(r) for r in (run, initial_run))
    layer, head, share = trained.best_lookup_head(held, word_length)
    before, after = (trained.aligned_weight(m[layer][:, head], word_length).mean().item()
                     for m in (held_initial, held))
    return CopyLookup(run=run, initial_run=initial_run, maps=maps, initial=initial, word_length=word_length,
                      layer=layer, head=head, share=share,
                      together=trained.layer_lookup_share(held[layer], word_length), before=before, after=after)
