"""lra_kit.viz: the book's figure helpers (frames, the kernel-free slider, small multiples)."""
import re

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from lra_kit import viz
from lra_kit.attention import elu_plus_one


def _draw(fig, *, a, b):
    ax = fig.subplots()
    ax.plot([0, 1], [a, b])


def test_render_frames_one_png_per_grid_point():
    frames = viz.render_frames(_draw, {"a": [0.0, 1.0, 2.0], "b": [5.0, 6.0]}, figsize=(2, 1), dpi=20)
    assert sorted(frames) == sorted(f"{i},{j}" for i in range(3) for j in range(2))
    assert all(uri.startswith("data:image/png;base64,") for uri in frames.values())
    assert len(set(frames.values())) == 6  # each point draws a different picture


def test_slider_player_html_has_one_slider_per_parameter_and_starts_at_initial():
    params = {"beta": [0.0, 0.5, 0.9], "gamma": [1.0, 2.0]}
    frames = {f"{i},{j}": f"data:image/png;base64,F{i}{j}" for i in range(3) for j in range(2)}
    page = viz.slider_player_html(frames, params, initial={"beta": 0.5, "gamma": 2.0}, labels={"beta": "β"})
    sliders = re.findall(r'<input type="range" min="0" max="(\d+)" step="1" value="(\d+)"', page)
    assert sliders == [("2", "1"), ("1", "1")]
    assert 'src="data:image/png;base64,F11"' in page  # the initial frame is shown before any JS runs
    assert "β" in page and "addEventListener" in page
    assert "http" not in page  # self-contained: nothing fetched


def test_slider_player_html_rejects_missing_frames():
    with pytest.raises(ValueError, match="one frame per point"):
        viz.slider_player_html({"0": "x"}, {"a": [1, 2]})
    with pytest.raises(ValueError, match="at least one"):
        viz.slider_player_html({}, {})


def test_small_multiples_grid_shape():
    def panel(ax, *, a, b, c):
        ax.plot([a, b, c])

    fig = viz.small_multiples(panel, ("a", [1, 2]), ("b", [3, 4, 5]), fixed={"c": 0})
    assert len(fig.axes) == 6
    assert fig.axes[5].get_title() == "a=2, b=5"
    matplotlib.pyplot.close(fig)


def test_momentum_attention_map_is_the_explicit_eq13_matrix():
    torch.manual_seed(0)
    n, d, beta, gamma = 7, 4, 0.7, 0.8
    q, k = torch.randn(2, n, d, dtype=torch.float64).unbind(0)
    got = viz.momentum_attention_map(q, k, beta=beta, gamma=gamma)
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    lag = (i - j).double()
    weights = torch.where(lag >= 0, gamma * (1 - beta ** (lag + 1)) / (1 - beta), torch.zeros(()).double())
    kernel = elu_plus_one(q) @ elu_plus_one(k).T
    eps = 1e-6  # momentum_attention's default guard in the denominator
    expected = weights * kernel / ((kernel * (lag >= 0)).sum(1, keepdim=True) + eps)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-9)


def test_draw_momentum_frame_and_live_sliders():
    torch.manual_seed(0)
    q, k = torch.randn(2, 6, 3).unbind(0)
    frames = viz.render_frames(
        lambda fig, beta, gamma: viz.draw_momentum_frame(fig, beta=beta, gamma=gamma, q=q, k=k, max_lag=5),
        {"beta": [0.0, 0.9], "gamma": [1.0]}, dpi=20,
    )
    assert len(frames) == 2 and frames["0,0"] != frames["1,0"]
    widget = viz.live_sliders(_draw, {"a": [0.0, 1.0], "b": [2.0, 3.0]}, initial={"a": 0.5})
    sliders = [c for c in widget.children if hasattr(c, "min")]
    assert [(s.description, s.min, s.max, s.value) for s in sliders] == [("a", 0.0, 1.0, 0.5), ("b", 2.0, 3.0, 2.0)]


def test_loglog_slope():
    assert viz.loglog_slope([1, 2, 4, 8], [3, 12, 48, 192]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        viz.loglog_slope([1], [1])


def test_log_length_axis():
    fig, ax = matplotlib.pyplot.subplots()
    ax.plot([256, 512, 1024], [1, 4, 16])
    viz.log_length_axis(ax, [256, 512, 1024])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["256", "512", "1024"]
    matplotlib.pyplot.close(fig)
