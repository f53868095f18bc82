"""The book's diagrams: each draws, renders to SVG, and rejects bad sizes with a ValueError."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from lra_kit.viz import diagrams  # noqa: E402


@pytest.mark.parametrize("draw", [diagrams.draw_chunk_tiling, diagrams.draw_kernel_trick_shapes,
                                  diagrams.draw_unrolled_recurrence, diagrams.draw_luna_streams,
                                  diagrams.draw_kernel_smoother, diagrams.draw_luna_heads,
                                  diagrams.draw_causal_luna_state])
def test_each_diagram_renders_to_svg(draw):
    image = diagrams.svg(draw())
    assert "<svg" in image.data


def test_chunk_tiling_draws_one_masked_tile_per_chunk():
    fig = diagrams.draw_chunk_tiling(3)
    triangles = [p for p in fig.axes[0].patches if type(p).__name__ == "Polygon"]
    assert len(triangles) == 3


def test_chunk_tiling_names_the_states_of_each_product():
    """One diagram for both chunked products: chapter 3's S, chapter 4's pair s, d (the same tiles)."""
    texts = {}
    for states in ("S", "s,d"):
        fig = diagrams.draw_chunk_tiling(3, states=states)
        texts[states] = [t.get_text() for t in fig.axes[0].texts]
        assert len([p for p in fig.axes[0].patches if type(p).__name__ == "Polygon"]) == 3
        matplotlib.pyplot.close(fig)
    assert texts["S"] == ["$S_0 = 0$", "$S_T$", "$S_{2T}$"]
    assert texts["s,d"] == ["$s_0 = d_0 = 0$", "$s_T, d_T$", "$s_{2T}, d_{2T}$"]
    with pytest.raises(ValueError, match="states"):
        diagrams.draw_chunk_tiling(3, states="softmax")


@pytest.mark.parametrize("call", [lambda: diagrams.draw_chunk_tiling(0),
                                  lambda: diagrams.draw_kernel_trick_shapes(8, 2.5, 2),
                                  lambda: diagrams.draw_unrolled_recurrence(True),
                                  lambda: diagrams.draw_luna_heads(0)])
def test_bad_sizes_raise(call):
    with pytest.raises(ValueError, match="positive int"):
        call()
