"""The book's diagrams: each draws, renders to SVG, and rejects bad sizes with a ValueError."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from lra_kit import viz_diagrams  # noqa: E402


@pytest.mark.parametrize("draw", [viz_diagrams.draw_chunk_tiling, viz_diagrams.draw_kernel_trick_shapes,
                                  viz_diagrams.draw_unrolled_recurrence, viz_diagrams.draw_luna_streams,
                                  viz_diagrams.draw_kernel_smoother, viz_diagrams.draw_luna_heads,
                                  viz_diagrams.draw_causal_luna_state])
def test_each_diagram_renders_to_svg(draw):
    image = viz_diagrams.svg(draw())
    assert "<svg" in image.data


def test_chunk_tiling_draws_one_masked_tile_per_chunk():
    fig = viz_diagrams.draw_chunk_tiling(3)
    triangles = [p for p in fig.axes[0].patches if type(p).__name__ == "Polygon"]
    assert len(triangles) == 3


@pytest.mark.parametrize("call", [lambda: viz_diagrams.draw_chunk_tiling(0),
                                  lambda: viz_diagrams.draw_kernel_trick_shapes(8, 2.5, 2),
                                  lambda: viz_diagrams.draw_unrolled_recurrence(True),
                                  lambda: viz_diagrams.draw_luna_heads(0)])
def test_bad_sizes_raise(call):
    with pytest.raises(ValueError, match="positive int"):
        call()
