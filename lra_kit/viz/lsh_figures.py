"""The baselines chapter's matplotlib figures: LSH's collision rate against the angle, and softmax's attention
matrix beside LSH's for a few numbers of rounds (the static figure of record beside the slider of
:mod:`lra_kit.viz.lsh`)."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import torch

from lra_kit.viz.lsh import lsh_readouts, lsh_weights, shared_qk_softmax_weights


def draw_collision_rates(ax, angles: torch.Tensor, rates: Mapping[int, torch.Tensor], *, dim: int) -> None:
    """Measured P[h(x) = h(y)] against the angle, one curve per bucket count; b = 2's exact 1 − θ/π dashed."""
    degrees = torch.rad2deg(angles)
    for b, r in rates.items():
        ax.plot(degrees, r, marker="o", markersize=3, label=f"b = {b}")
    ax.plot(degrees, 1 - angles / math.pi, "k--", linewidth=1, label="1 − θ/π")
    ax.set_xlabel("angle θ between x and y (degrees)")
    ax.set_ylabel("P[h(x) = h(y)]")
    ax.set_title(f"collision rate, D = {dim}", fontsize=10)
    ax.set_xticks([0, 45, 90, 135, 180])
    ax.legend(fontsize=8)


def draw_lsh_matrices(qk: torch.Tensor, rotations: torch.Tensor, *, chunk_size: int, n_buckets: int,
                      rounds: Sequence[int] = (1, 4, 8), order=None, panel: float = 2.2):
    """One row: softmax's A, then LSH's W for each number of rounds (first rounds of the bank), rows and columns
    in ``order``; a square-root colour scale shared by all panels. Each title gives the mean total variation."""
    A = shared_qk_softmax_weights(qk)
    order = torch.arange(qk.shape[0]) if order is None else torch.as_tensor(order)
    fig, axes = plt.subplots(1, 1 + len(rounds), figsize=(panel * (1 + len(rounds)), panel + 0.4),
                             layout="constrained")
    vmax = A.max().item() ** 0.5
    panels = [("softmax (shared QK)", A)]
    for r in rounds:
        W = lsh_weights(qk, rotations, rounds=r, n_buckets=n_buckets, chunk_size=chunk_size)
        tv = lsh_readouts(qk, rotations, rounds=r, n_buckets=n_buckets, chunk_size=chunk_size)["total_variation"]
        panels.append((f"lsh-{r}, TV {tv:.2f}", W))
    for ax, (title, M) in zip(axes, panels, strict=True):
        ax.imshow(M[order][:, order].clamp_min(0).sqrt(), cmap="Blues", vmin=0, vmax=vmax, interpolation="nearest")
        ax.set_title(title, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    axes[0].set_ylabel("query i")
    for ax in axes:
        ax.set_xlabel("key j")
    return fig
