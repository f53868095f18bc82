"""The book's figures drawn with matplotlib: small multiples, slider frames, live widgets, momentum plots.

The book's rule for interactive figures:

1. a static figure is the content of record (:func:`small_multiples`, :func:`draw_reweighting_frame`);
2. on the static HTML page, with no kernel, the reader can still move the parameters. Where the
   mathematics is a closed form over little data, the page recomputes it (:mod:`lra_kit.viz.widgets`,
   checked against the float64 oracles of :mod:`lra_kit.viz.momentum`); otherwise :func:`slider_player`
   pre-renders PNG frames over a grid and swaps them;
3. in Jupyter, :func:`live_sliders` gives real ``ipywidgets`` sliders that recompute on demand.
"""
from __future__ import annotations

import base64
import io
import itertools
from collections.abc import Callable, Mapping, Sequence

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch

from lra_kit.viz.momentum import reweighting_readouts, reweighting_row, window_label
from lra_kit.viz.widgets import check_grid, format_value, slider_player_html

DrawFrame = Callable[..., None]  # draw(fig, **params): fill an empty figure for one parameter point
DrawPanel = Callable[..., None]  # draw(ax, **params): fill one axes of a small-multiples grid


def figure_to_png_data_uri(fig: matplotlib.figure.Figure, *, dpi: int = 80) -> str:
    """Render ``fig`` to a ``data:image/png;base64,…`` URI (a frame the browser can show without files)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def render_frames(
    draw: DrawFrame,
    params: Mapping[str, Sequence[float]],
    *,
    figsize: tuple[float, float] = (8.0, 3.0),
    dpi: int = 80,
) -> dict[str, str]:
    """One PNG frame per point of the grid ``params``: ``{"i,j,…": data_uri}`` keyed by value indices."""
    grid = check_grid(params)
    names = list(grid)
    frames = {}
    for index in itertools.product(*(range(len(grid[n])) for n in names)):
        fig = plt.figure(figsize=figsize, layout="constrained")
        try:
            draw(fig, **{n: grid[n][i] for n, i in zip(names, index, strict=True)})
            frames[",".join(map(str, index))] = figure_to_png_data_uri(fig, dpi=dpi)
        finally:
            plt.close(fig)
    return frames


def slider_player(
    draw: DrawFrame,
    params: Mapping[str, Sequence[float]],
    *,
    initial: Mapping[str, float] | None = None,
    labels: Mapping[str, str] | None = None,
    figsize: tuple[float, float] = (8.0, 3.0),
    dpi: int = 90,
):
    """A kernel-free slider over the grid ``params``: an ``IPython.display.HTML`` object to display.

    ``draw(fig, **point)`` is called once per grid point (so keep grids small: frames × ~30 kB).
    ``labels`` maps parameter names to what the slider shows (e.g. ``{"beta": "β"}``).
    """
    from IPython.display import HTML

    frames = render_frames(draw, params, figsize=figsize, dpi=dpi)
    return HTML(slider_player_html(frames, params, initial=initial, labels=labels))


def live_sliders(
    draw: DrawFrame,
    params: Mapping[str, Sequence[float]],
    *,
    initial: Mapping[str, float] | None = None,
    figsize: tuple[float, float] = (8.0, 3.0),
):
    """Live ``ipywidgets`` sliders (Jupyter with a kernel): each move calls ``draw`` again.

    The slider for a parameter runs from the smallest to the largest value of ``params[name]``
    in 100 steps. In the static book this cell is removed (tag ``remove-cell``), because without
    a kernel the callback cannot run; :func:`slider_player` is what the static page shows.
    """
    import ipywidgets as widgets

    grid = check_grid(params)
    initial = dict(initial or {})
    controls = {}
    for name, values in grid.items():
        low, high = float(min(values)), float(max(values))
        step = (high - low) / 100 if high > low else 1.0
        controls[name] = widgets.FloatSlider(
            value=float(initial.get(name, values[0])), min=low, max=high, step=step, description=name,
            continuous_update=False, readout_format=".3g",
        )

    def redraw(**point):
        fig = plt.figure(figsize=figsize, layout="constrained")
        draw(fig, **point)
        plt.show()

    return widgets.interactive(redraw, **controls)


def small_multiples(
    draw: DrawPanel,
    rows: tuple[str, Sequence[float]],
    cols: tuple[str, Sequence[float]],
    *,
    panel_size: tuple[float, float] = (2.4, 2.0),
    sharex: bool = True,
    sharey: bool = True,
    fixed: Mapping[str, float] | None = None,
    labels: Mapping[str, str] | None = None,
) -> matplotlib.figure.Figure:
    """A grid of panels, one per (row value, column value): the static content of record.

    ``draw(ax, **{rows[0]: r, cols[0]: c, **fixed})`` fills each panel; titles name the point,
    with ``labels`` mapping parameter names to what the titles show (e.g. ``{"beta": "β"}``).
    """
    labels = dict(labels or {})
    row_name, row_values = rows[0], list(rows[1])
    col_name, col_values = cols[0], list(cols[1])
    if not row_values or not col_values:
        raise ValueError("rows and cols must each hold at least one value")
    fig, axes = plt.subplots(
        len(row_values), len(col_values), squeeze=False, sharex=sharex, sharey=sharey, layout="constrained",
        figsize=(panel_size[0] * len(col_values), panel_size[1] * len(row_values)),
    )
    for r, rv in enumerate(row_values):
        for c, cv in enumerate(col_values):
            ax = axes[r, c]
            draw(ax, **{row_name: rv, col_name: cv, **dict(fixed or {})})
            row_label, col_label = labels.get(row_name, row_name), labels.get(col_name, col_name)
            title = f"{row_label}={format_value(rv)}, {col_label}={format_value(cv)}"
            ax.set_title(title, fontsize=9)
    return fig


# --- momentum attention (chapter 4, ``sec-momentum-attention``) --------------------------------

def draw_momentum_weights(ax, *, beta: float, gamma: float, max_lag: int = 40, ylim=(0.05, 150.0)) -> None:
    """Plot γ(1 − β^{lag+1})/(1 − β) (:func:`momentum_weights`) against lag, with linear attention's 1 for reference."""
    from lra_kit.attention import momentum_weights

    lag = torch.arange(max_lag + 1, dtype=torch.float64)
    ax.plot(lag.numpy(), momentum_weights(lag, beta, gamma).numpy(), color="C0", lw=2, label="momentum")
    ax.axhline(1.0, color="0.5", ls="--", lw=1, label="linear (β=0, γ=1)")
    ax.axhline(gamma / (1 - beta), color="C1", ls=":", lw=1, label="γ/(1−β)")
    ax.set_yscale("log")
    ax.set_ylim(*ylim)
    ax.set_xlabel("lag i − j")


def log_length_axis(ax, lengths: Sequence[int]) -> None:
    """Log–log axes with one plain tick per measured length (no crowded minor-tick labels)."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(list(lengths), [str(n) for n in lengths])
    ax.minorticks_off()


def seed_band(ax, x: Sequence[float], per_seed: Sequence[Sequence[float]], label: str):
    """One variant's result over several seeds: the mean as a line, the seeds' range (min to max) as a band
    in the line's colour. ``per_seed[i]`` holds every seed's value at ``x[i]``; the label gets the seed count.
    One seed draws the line alone: a band of one point would claim a spread that was not measured."""
    if len(x) == 0 or len(x) != len(per_seed):
        raise ValueError(f"x has {len(x)} points and per_seed {len(per_seed)}; give every seed's value at each of "
                         "one or more x")
    counts = {len(v) for v in per_seed}
    if len(counts) > 1 or 0 in counts:
        raise ValueError(f"per_seed must hold the same number (≥ 1) of seeds at every x; got {sorted(counts)}")
    seeds = counts.pop()
    values = np.asarray(per_seed, dtype=float).reshape(len(x), seeds)
    line, = ax.plot(x, values.mean(axis=1), label=f"{label} ({seeds} seed{'s' if seeds != 1 else ''})")
    if seeds > 1:
        ax.fill_between(x, values.min(axis=1), values.max(axis=1), color=line.get_color(), alpha=0.2)
    return line


def draw_reweighting_frame(fig, *, beta: float, gamma: float, query: int, tokens: Sequence[str], scores) -> None:
    """The views of :func:`momentum_reweighting_html` drawn with matplotlib (static record, live ipywidgets).

    Top: query ``query``'s share of attention on each key, linear vs momentum row-normalised
    (:func:`reweighting_row`); bottom: the mean lag every query reads; the numbers are :func:`reweighting_readouts`.
    """
    n = len(tokens)
    top, bottom = fig.subplots(2, 1, gridspec_kw={"height_ratios": [1.2, 1]})
    rows = [reweighting_readouts(scores, beta=beta, gamma=gamma, query=i) for i in range(n)]
    row = reweighting_row(scores, beta=beta, gamma=gamma, query=query)
    linear, momentum = row["linear"], row["normalised"]
    window = int(rows[query]["window"])
    top.axvspan(query - window + 0.5, query + 0.5, color="#fde68a", alpha=0.5, lw=0,
                label=window_label(beta, query))
    positions = np.arange(query + 1)
    top.bar(positions - 0.2, linear.numpy(), width=0.4, color="#9ca3af", label="linear (β = 0)")
    top.bar(positions + 0.2, momentum.numpy(), width=0.4, color="#2563eb", label="momentum, row-normalised")
    top.set_xticks(range(n), ["␣" if t == " " else t for t in tokens], fontsize=8)
    top.set_xlim(-0.6, n - 0.4)
    top.set_ylabel("share")
    top.set_title(f"β = {beta:g}, γ = {gamma:g}: query {query} ('{tokens[query]}'), output scale "
                  f"{rows[query]['scale']:.2f}", fontsize=10)
    top.legend(fontsize=8, loc="upper left")
    bottom.plot([r["mean_lag_linear"] for r in rows], color="#9ca3af", lw=2, label="linear")
    bottom.plot([r["mean_lag_momentum"] for r in rows], color="#2563eb", lw=2, label="momentum")
    bottom.axvline(query, color="#f59e0b", lw=1)
    bottom.set_xlabel("query i")
    bottom.set_ylabel("mean lag read")
    bottom.legend(fontsize=8, loc="upper left")
