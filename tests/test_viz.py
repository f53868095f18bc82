"""lra_kit.viz: the book's figure helpers (frames, the kernel-free sliders, small multiples, their oracles)."""
import math
import re

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from lra_kit.viz import figures, momentum, results, widgets
from lra_kit.attention import elu_plus_one


def _draw(fig, *, a, b):
    ax = fig.subplots()
    ax.plot([0, 1], [a, b])


def test_render_frames_one_png_per_grid_point():
    frames = figures.render_frames(_draw, {"a": [0.0, 1.0, 2.0], "b": [5.0, 6.0]}, figsize=(2, 1), dpi=20)
    assert sorted(frames) == sorted(f"{i},{j}" for i in range(3) for j in range(2))
    assert all(uri.startswith("data:image/png;base64,") for uri in frames.values())
    assert len(set(frames.values())) == 6  # each point draws a different picture


def test_slider_player_html_has_one_slider_per_parameter_and_starts_at_initial():
    params = {"beta": [0.0, 0.5, 0.9], "gamma": [1.0, 2.0]}
    frames = {f"{i},{j}": f"data:image/png;base64,F{i}{j}" for i in range(3) for j in range(2)}
    page = widgets.slider_player_html(frames, params, initial={"beta": 0.5, "gamma": 2.0}, labels={"beta": "β"})
    sliders = re.findall(r'<input type="range" min="0" max="(\d+)" step="1" value="(\d+)"', page)
    assert sliders == [("2", "1"), ("1", "1")]
    assert 'src="data:image/png;base64,F11"' in page  # the initial frame is shown before any JS runs
    assert "β" in page and "addEventListener" in page
    assert "http" not in page  # self-contained: nothing fetched


def test_slider_player_html_rejects_missing_frames():
    with pytest.raises(ValueError, match="one frame per point"):
        widgets.slider_player_html({"0": "x"}, {"a": [1, 2]})
    with pytest.raises(ValueError, match="at least one"):
        widgets.slider_player_html({}, {})


def test_small_multiples_grid_shape():
    def panel(ax, *, a, b, c):
        ax.plot([a, b, c])

    fig = figures.small_multiples(panel, ("a", [1, 2]), ("b", [3, 4, 5]), fixed={"c": 0})
    assert len(fig.axes) == 6
    assert fig.axes[5].get_title() == "a=2, b=5"
    matplotlib.pyplot.close(fig)


def test_momentum_attention_map_is_the_explicit_eq13_matrix():
    torch.manual_seed(0)
    n, d, beta, gamma = 7, 4, 0.7, 0.8
    q, k = torch.randn(2, n, d, dtype=torch.float64).unbind(0)
    got = momentum.momentum_attention_map(q, k, beta=beta, gamma=gamma)
    i = torch.arange(n)[:, None]
    j = torch.arange(n)[None, :]
    lag = (i - j).double()
    weights = torch.where(lag >= 0, gamma * (1 - beta ** (lag + 1)) / (1 - beta), torch.zeros(()).double())
    kernel = elu_plus_one(q) @ elu_plus_one(k).T
    eps = 1e-6  # momentum_attention's default guard in the denominator
    expected = weights * kernel / ((kernel * (lag >= 0)).sum(1, keepdim=True) + eps)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-9)


def test_live_sliders():
    widget = figures.live_sliders(_draw, {"a": [0.0, 1.0], "b": [2.0, 3.0]}, initial={"a": 0.5})
    sliders = [c for c in widget.children if hasattr(c, "min")]
    assert [(s.description, s.min, s.max, s.value) for s in sliders] == [("a", 0.0, 1.0, 0.5), ("b", 2.0, 3.0, 2.0)]


def test_loglog_slope():
    assert results.loglog_slope([1, 2, 4, 8], [3, 12, 48, 192]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        results.loglog_slope([1], [1])


def test_markdown_table_keeps_each_row_in_its_cells():
    table = results.markdown_table(["claim", "verdict"], [["a | b", "holds"], ["two\nlines", 0.5]])
    lines = table.splitlines()
    assert lines[:2] == ["| claim | verdict |", "|---|---|"]
    # an escaped pipe does not split a cell, and a newline does not start a row
    assert [len(re.split(r"(?<!\\)\|", line)) for line in lines] == [4, 4, 4, 4]
    assert lines[3] == "| two lines | 0.5 |"
    with pytest.raises(ValueError, match=r"rows\[1\] has 1 cells; the header has 2"):
        results.markdown_table(["claim", "verdict"], [["a", "b"], ["c"]])


def test_markdown_list_splits_outside_brackets_only():
    assert results.markdown_list("a (b; c); d; e") == "- a (b; c)\n- d\n- e"


def test_log_length_axis():
    fig, ax = matplotlib.pyplot.subplots()
    ax.plot([256, 512, 1024], [1, 4, 16])
    figures.log_length_axis(ax, [256, 512, 1024])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["256", "512", "1024"]
    matplotlib.pyplot.close(fig)


# --- the sliders computed in the page (chapters 4 and 5) --------------------------------------------

SENTENCE = "the model reads the sentence and then reads the sentence again"


def _sentence_scores():
    tokens, phi = momentum.sentence_match_features(SENTENCE)
    return tokens, phi, momentum.causal_scores(phi, phi)


def test_sentence_match_scores_are_one_plus_match_on_equal_characters():
    tokens, phi, scores = _sentence_scores()
    n = len(SENTENCE)
    for i in range(n):
        for j in range(i + 1):
            same = SENTENCE[i] == SENTENCE[j] != " "
            assert scores[i, j].item() == pytest.approx(1 + 4 * same)
    assert torch.count_nonzero(torch.triu(scores, 1)) == 0


@pytest.mark.parametrize("beta,gamma", [(0.0, 1.0), (0.5, 0.7), (0.9, 1.0), (0.99, 1.25)])
def test_reweighting_readouts_agree_with_momentum_attention(beta, gamma):
    _, phi, scores = _sentence_scores()
    # the map from lra_kit's O(N) implementation, φ = identity on the already non-negative features
    a = momentum.momentum_attention_map(phi, phi, beta=beta, gamma=gamma, feature_map=lambda x: x)
    a0 = momentum.momentum_attention_map(phi, phi, beta=0.0, gamma=1.0, feature_map=lambda x: x)
    for query in (0, 7, len(SENTENCE) - 1):
        got = momentum.reweighting_readouts(scores, beta=beta, gamma=gamma, query=query)
        row, row0 = a[query, : query + 1], a0[query, : query + 1]
        lag = torch.arange(query, -1, -1, dtype=torch.float64)
        window = min(query + 1, momentum.recent_window(beta))
        assert got["scale"] == pytest.approx(row.sum().item(), rel=1e-5)
        p = row / row.sum()
        assert got["recent_momentum"] == pytest.approx(p[lag < window].sum().item(), rel=1e-5, abs=1e-9)
        assert got["recent_linear"] == pytest.approx(row0[lag < window].sum().item(), rel=1e-5, abs=1e-9)
        assert got["mean_lag_momentum"] == pytest.approx((p * lag).sum().item(), rel=1e-5, abs=1e-9)
    last = momentum.reweighting_readouts(scores, beta=beta, gamma=gamma, query=len(SENTENCE) - 1)
    if 0 < beta and last["window"] < len(SENTENCE):  # weight moves to older keys: less on the recent, larger mean lag
        assert last["recent_momentum"] < last["recent_linear"]
        assert last["mean_lag_momentum"] > last["mean_lag_linear"]


def _half_integer_betas(high: float = 0.999) -> list[float]:
    """Every β < high at which the window 1/(1 − β) is a half-integer k + ½: β = (2k − 1)/(2k + 1)."""
    return [(2 * k - 1) / (2 * k + 1) for k in range(1, 2000) if (2 * k - 1) / (2 * k + 1) < high]


def test_recent_window_rounds_half_up_like_the_javascript():
    # the slider's recentWindow runs on the same grid under Node (tests/test_viz_js.py)
    slider = [round(0.01 * i, 2) for i in range(100)]  # the page's β slider: 0 … 0.99 in steps of 0.01
    for beta in slider + _half_integer_betas():
        x = 1 / (1 - beta)
        assert momentum.recent_window(beta) == max(1, math.floor(x + 0.5))
        if x == math.floor(x) + 0.5:  # an exact half-integer rounds up (Python's round() would go to even)
            assert momentum.recent_window(beta) == math.floor(x) + 1
    assert momentum.recent_window(0.6) == 3  # 1/(1 − 0.6) is exactly 2.5 in binary64: rounded up, not to even


def test_momentum_reweighting_html_is_self_contained_and_checks_input():
    tokens, _, scores = _sentence_scores()
    page = widgets.momentum_reweighting_html(tokens, scores, beta=0.6, gamma=1.0, query=20)
    assert "http" not in page and "<script src" not in page  # nothing fetched
    params = re.findall(r'data-param="(\w+)" min="([\d.]+)" max="([\d.]+)" step="[\d.]+" value="([\d.]+)"', page)
    assert params == [("beta", "0", "0.99", "0.6"), ("gamma", "0.25", "1.25", "1"), ("query", "0", "61", "20")]
    assert page.count("<td data-readout=") == len(widgets.REWEIGHTING_READOUTS)
    assert len(page) < 60_000
    with pytest.raises(ValueError, match="scores must be"):
        widgets.momentum_reweighting_html(tokens[:-1], scores)
    with pytest.raises(ValueError, match="beta"):
        widgets.momentum_reweighting_html(tokens, scores, beta=1.0)
    with pytest.raises(ValueError, match="query"):
        widgets.momentum_reweighting_html(tokens, scores, query=len(tokens))
    with pytest.raises(ValueError, match="non-negative"):
        momentum.causal_scores(-torch.ones(3, 2), torch.ones(3, 2))
    with pytest.raises(ValueError, match="text"):
        momentum.sentence_match_features("a")


def test_eq18_is_non_monotone_and_clipped():
    r = torch.tensor([0.0, 0.25, 1.0, 2.25, 4.0, 9.0], dtype=torch.float64)
    got = momentum.eq18_momentum(r, delta=1e-3)
    torch.testing.assert_close(got, torch.tensor([0.999, 0.25, 0.0, 0.25, 0.999, 0.999], dtype=torch.float64))
    with pytest.raises(ValueError, match="non-negative"):
        momentum.eq18_momentum(-1.0)


def test_heavy_ball_modes_is_the_heavy_ball_in_the_eigenbasis():
    torch.manual_seed(0)
    dim, steps, beta, step = 6, 40, 0.7, 0.9
    lam = torch.linspace(0.05, 1.0, dim, dtype=torch.float64)
    q, _ = torch.linalg.qr(torch.randn(dim, dim, dtype=torch.float64))
    a, b = q @ torch.diag(lam) @ q.T, torch.randn(dim, dtype=torch.float64)
    x_star = -torch.linalg.solve(a, b)
    x = prev = torch.zeros(dim, dtype=torch.float64)
    errors, ratios, g_prev = [torch.linalg.norm(x - x_star).item()], [], None
    for _ in range(steps):
        g = a @ x + b
        if g_prev is not None:
            ratios.append((torch.linalg.norm(g - g_prev) / torch.linalg.norm(g_prev)).item())
        x, prev, g_prev = x - step * g + beta * (x - prev), x, g
        errors.append(torch.linalg.norm(x - x_star).item())
    ratios.append((torch.linalg.norm(a @ x + b - g_prev) / torch.linalg.norm(g_prev)).item())
    got_errors, got_ratios = momentum.heavy_ball_modes(lam, q.T @ (-x_star), beta=beta, step=step, steps=steps)
    torch.testing.assert_close(got_errors, torch.tensor(errors, dtype=torch.float64), rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(got_ratios, torch.tensor(ratios, dtype=torch.float64), rtol=1e-9, atol=1e-12)
    out = momentum.connection_readouts(lam, q.T @ (-x_star), beta=beta, gamma=step, steps=steps)
    assert out["beta_star"] == pytest.approx((1 - (step * 0.05) ** 0.5) ** 2)
    assert out["error"] == pytest.approx(errors[-1])


def test_momentum_connection_html_is_self_contained_and_checks_input():
    lam, e0 = torch.linspace(0.01, 1, 5, dtype=torch.float64), torch.ones(5, dtype=torch.float64)
    page = widgets.momentum_connection_html(lam, e0, steps=50, layers=4)
    assert "http" not in page and page.count('type="range"') == 2
    assert page.count("<td data-readout=") == len(widgets.CONNECTION_READOUTS)
    with pytest.raises(ValueError, match="eigenvalues"):
        widgets.momentum_connection_html(-lam, e0, steps=50, layers=4)
    with pytest.raises(ValueError, match="steps"):
        widgets.momentum_connection_html(lam, e0, steps=0, layers=4)


def test_draw_reweighting_frame():
    tokens, _, scores = _sentence_scores()
    fig = matplotlib.pyplot.figure()
    figures.draw_reweighting_frame(fig, beta=0.9, gamma=1.0, query=len(tokens) - 1, tokens=tokens, scores=scores)
    top, bottom = fig.axes
    heights = [p.get_height() for p in top.patches if p.get_width() == pytest.approx(0.4)]
    assert len(heights) == 2 * len(tokens) and sum(heights) == pytest.approx(2.0)  # two rows that sum to one
    matplotlib.pyplot.close(fig)


RECORD = {"scale": "cpu-20k", "steps": 20000, "seed": 1, "device": "cpu", "git_commit": "8fd0892a1b2c3d4e",
          "date": "2026-11-25T10:00:00+00:00", "wall_s": 3330.0}


def test_provenance_gives_the_parts_asked_in_their_order_with_room_to_wrap():
    assert results.provenance(RECORD) == ("scale cpu-20k, 20,000 steps, seed 1, cpu, commit 8fd0892a1b, "
                                          "2026-11-25, 56 min")
    assert results.provenance(RECORD, ("seed", "commit")) == "seed 1, commit 8fd0892a1b"
    assert results.provenance({**RECORD, "git_commit": None}, ("commit",)) == "commit ?"
    with pytest.raises(ValueError, match=r"parts \['wall'\] unknown; allowed: scale, steps"):
        results.provenance(RECORD, ("seed", "wall"))


def test_mean_range_shows_the_seeds_range_and_the_seeds_that_never_got_there():
    from lra_kit.results import spread
    assert results.mean_range(spread([0.5])) == "0.500"
    assert results.mean_range(spread([0.5, 0.25, 0.75]), 2) == "0.50 [0.25, 0.75]"
    assert results.mean_range(spread([1800, None]), 0) == "1800 (1 of 2 never)"
    assert results.mean_range(spread([None, None]), 0) == "never"


def test_seed_band_draws_the_mean_and_the_seeds_range():
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    line = figures.seed_band(ax, [1, 2, 3], [[1.0, 3.0, 2.0], [4.0, 4.0, 7.0], [0.0, 9.0, 3.0]], "linear")
    assert list(line.get_ydata()) == [2.0, 5.0, 4.0] and line.get_label() == "linear (3 seeds)"
    (band,) = ax.collections
    ys = band.get_paths()[0].vertices[:, 1]
    assert {1.0, 4.0, 0.0} <= set(ys) and {3.0, 7.0, 9.0} <= set(ys) and not {2.0, 5.0} & set(ys)
    assert band.get_facecolor()[0][:3] == pytest.approx(matplotlib.colors.to_rgb(line.get_color()))
    line = figures.seed_band(ax, [1, 2], [[0.5], [0.25]], "softmax")
    assert line.get_label() == "softmax (1 seed)" and len(ax.collections) == 1  # one seed: no band
    with pytest.raises(ValueError, match="same number"):
        figures.seed_band(ax, [1, 2], [[1.0, 2.0], [1.0]], "x")
    with pytest.raises(ValueError, match="each of one or more x"):
        figures.seed_band(ax, [1, 2], [[1.0]], "x")
    plt.close(fig)


def test_above_or_below_says_the_sign_in_words_and_never_minus_zero():
    assert results.above_or_below(1.0896) == "9.0% above"
    assert results.above_or_below(0.9996) == "0.04% below"  # one decimal would read 0.0%
    assert results.above_or_below(1.00004) == "0.004% above"
    assert results.above_or_below(1.000004) == "level with"  # 0.0004 %: zero even at three decimals
    assert results.above_or_below(1.0) == "level with"
    assert results.above_or_below(0.5) == "50.0% below"
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="ratio must be a finite number > 0"):
            results.above_or_below(bad)


def test_results_dir_finds_the_repositorys_results_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.delenv("LRA_KIT_RESULTS", raising=False)
    (tmp_path / "results").mkdir()  # some other results/ folder above a downloaded notebook
    (tmp_path / "nb").mkdir()
    monkeypatch.chdir(tmp_path / "nb")
    assert results.results_dir() is None
    assert "LRA_KIT_RESULTS" in results.results_hint() and str(tmp_path) not in results.results_hint()
    (tmp_path / "results" / "record.sh").write_text("")  # the repository's has its record script
    assert results.results_dir() == tmp_path / "results"
    monkeypatch.setenv("LRA_KIT_RESULTS", str(tmp_path / "elsewhere"))
    with pytest.raises(ValueError, match="LRA_KIT_RESULTS must name the repository's results/ folder"):
        results.results_dir()
    (tmp_path / "elsewhere").mkdir()
    assert results.results_dir() == tmp_path / "elsewhere"
