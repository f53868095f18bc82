"""Figures and sliders for the book: small multiples, a kernel-free slider player, live widgets.

The book's rule for interactive figures:

1. a static figure is the content of record (:func:`small_multiples`);
2. on the static HTML page, with no kernel, the reader can still move the parameters:
   :func:`slider_player` pre-renders one frame per point of a parameter grid (computed by the
   real ``lra_kit`` code) and ships them with a few lines of JavaScript that swap the frame when a
   slider moves — no CDN, no kernel, never a dead slider;
3. in Jupyter, :func:`live_sliders` gives real ``ipywidgets`` sliders that recompute on demand.

The drawing functions are generic: ``draw(fig, **params)`` draws one frame. Chapter 4 uses them
for β and γ of momentum attention (:func:`draw_momentum_frame`), chapter 5 for β̃ and γ̃.
"""
from __future__ import annotations

import base64
import html
import io
import itertools
import json
import uuid
from collections.abc import Callable, Mapping, Sequence

import matplotlib

import matplotlib.pyplot as plt
import numpy as np
import torch

DrawFrame = Callable[..., None]  # draw(fig, **params): fill an empty figure for one parameter point
DrawPanel = Callable[..., None]  # draw(ax, **params): fill one axes of a small-multiples grid


def _check_grid(params: Mapping[str, Sequence[float]]) -> dict[str, list]:
    if not params:
        raise ValueError("params must name at least one parameter and its values")
    grid = {}
    for name, values in params.items():
        values = list(values)
        if not values:
            raise ValueError(f"params[{name!r}] must hold at least one value")
        grid[name] = values
    return grid


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
    grid = _check_grid(params)
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


def _format_value(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def slider_player_html(
    frames: Mapping[str, str],
    params: Mapping[str, Sequence[float]],
    *,
    initial: Mapping[str, float] | None = None,
    labels: Mapping[str, str] | None = None,
) -> str:
    """HTML + JavaScript: one range slider per parameter; moving one shows the pre-rendered frame.

    Self-contained (frames are data URIs, the script is inline), so it works on a static page and
    in a PDF-less offline copy; nothing is fetched and no kernel is needed.
    """
    grid = _check_grid(params)
    names = list(grid)
    expected = {",".join(map(str, i)) for i in itertools.product(*(range(len(grid[n])) for n in names))}
    if set(frames) != expected:
        raise ValueError("frames must hold exactly one frame per point of the params grid")
    initial = dict(initial or {})
    labels = dict(labels or {})
    start = []
    for name in names:
        if name in initial:
            values = np.asarray(grid[name], dtype=float)
            start.append(int(np.argmin(np.abs(values - float(initial[name])))))
        else:
            start.append(0)
    uid = "lrakit-player-" + uuid.uuid4().hex[:12]
    rows = []
    for k, name in enumerate(names):
        label = html.escape(labels.get(name, name))
        rows.append(
            f'<label style="display:flex;align-items:center;gap:0.6em;margin:0.2em 0;">'
            f'<span style="min-width:2.5em;">{label}</span>'
            f'<input type="range" min="0" max="{len(grid[name]) - 1}" step="1" value="{start[k]}" '
            f'data-param="{k}" aria-label="{label}" style="width:16em;">'
            f'<output style="font-family:monospace;">{html.escape(_format_value(grid[name][start[k]]))}</output>'
            f"</label>"
        )
    first = frames[",".join(map(str, start))]
    values_js = json.dumps([[_format_value(v) for v in grid[n]] for n in names])
    frames_js = json.dumps(dict(frames))
    return f"""<div id="{uid}" class="lrakit-player" style="max-width:100%;">
<img alt="frame of a parameter sweep; move the sliders below" src="{first}" style="max-width:100%;height:auto;">
<div>{''.join(rows)}</div>
<script>
(function () {{
  var root = document.getElementById("{uid}");
  var frames = {frames_js};
  var values = {values_js};
  var image = root.querySelector("img");
  var sliders = Array.prototype.slice.call(root.querySelectorAll("input[type=range]"));
  function show() {{
    var index = sliders.map(function (s) {{ return s.value; }});
    sliders.forEach(function (s, k) {{ s.nextElementSibling.textContent = values[k][+s.value]; }});
    image.src = frames[index.join(",")];
  }}
  sliders.forEach(function (s) {{ s.addEventListener("input", show); }});
}})();
</script>
</div>"""


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

    grid = _check_grid(params)
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
            title = f"{row_label}={_format_value(rv)}, {col_label}={_format_value(cv)}"
            ax.set_title(title, fontsize=9)
    return fig


# --- momentum attention (chapter 4, ``sec-momentum-attention``) --------------------------------

def momentum_attention_map(q, k, *, beta: float, gamma: float = 1.0, causal: bool = True, **options) -> torch.Tensor:
    """The (length × length) map A of momentum attention, read off :func:`momentum_attention` itself.

    With V = I (value j is the j-th unit vector) the output row i is Σ_j A_ij e_j = A_i, so the map
    comes from the implementation, not from a re-typed formula. ``q, k`` are (length, dim).
    """
    from lra_kit.attention import momentum_attention

    n = q.shape[0]
    eye = torch.eye(n, dtype=q.dtype)[None, None]
    return momentum_attention(q[None, None], k[None, None], eye, beta=beta, gamma=gamma, causal=causal, **options)[0, 0]


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


def draw_momentum_frame(fig, *, beta: float, gamma: float, q, k, max_lag: int = 40, vmin=1e-3, vmax=None) -> None:
    """One frame of chapter 4's slider: the lag weights (left) and the reweighted map of a real input (right)."""
    from matplotlib.colors import LogNorm

    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.3, 1]})
    draw_momentum_weights(left, beta=beta, gamma=gamma, max_lag=max_lag)
    left.set_ylabel("weight of key j in s_i")
    left.legend(fontsize=7, loc="upper left")
    left.set_title(f"β = {beta:g}, γ = {gamma:g}", fontsize=10)
    attention = momentum_attention_map(q, k, beta=beta, gamma=gamma).clamp_min(vmin)
    image = right.imshow(attention.numpy(), norm=LogNorm(vmin=vmin, vmax=vmax), cmap="viridis")
    right.set_xlabel("key j")
    right.set_ylabel("query i")
    right.set_title("attention map A (log colour)", fontsize=10)
    fig.colorbar(image, ax=right, shrink=0.85)


# --- measuring on the reader's machine ------------------------------------------------------------

def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y against log x: the measured exponent p in y ∝ xᵖ."""
    x, y = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if x.size < 2:
        raise ValueError("need at least two points to fit a slope")
    return float(np.polyfit(x, y, 1)[0])


def log_length_axis(ax, lengths: Sequence[int]) -> None:
    """Log–log axes with one plain tick per measured length (no crowded minor-tick labels)."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(list(lengths), [str(n) for n in lengths])
    ax.minorticks_off()
