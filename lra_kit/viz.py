"""Figures and sliders for the book: small multiples, a kernel-free slider player, live widgets.

The book's rule for interactive figures:

1. a static figure is the content of record (:func:`small_multiples`, :func:`draw_reweighting_frame`);
2. on the static HTML page, with no kernel, the reader can still move the parameters. Where the
   mathematics is a closed form over little data, the page recomputes it: chapter 4's
   :func:`momentum_reweighting_html` (eq. 13 over an embedded score matrix) and chapter 5's
   :func:`momentum_connection_html` (the heavy ball mode by mode over an embedded spectrum) are
   self-contained HTML + JavaScript + SVG, exact at every slider position, with no CDN and no
   kernel. Each has a float64 Python oracle of the numbers it shows (:func:`reweighting_readouts`,
   :func:`connection_readouts`) that the browser test ``tests/browser`` compares with the page.
   Otherwise :func:`slider_player` pre-renders PNG frames over a grid and swaps them;
3. in Jupyter, :func:`live_sliders` gives real ``ipywidgets`` sliders that recompute on demand.
"""
from __future__ import annotations

import base64
import html
import io
import itertools
import json
import math
import uuid
from pathlib import Path
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
    out, _ = momentum_attention(q[None, None], k[None, None], eye, beta=beta, gamma=gamma, causal=causal, **options)
    return out[0, 0]


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

def results_dir() -> Path | None:
    """The repository's committed ``results/`` folder, where the recorded runs are.

    ``$LRA_KIT_RESULTS`` if set; else the first ``results/`` folder at or above the working directory
    (a chapter run inside a clone); else None (a chapter downloaded as ``.ipynb`` and run elsewhere: it
    then says where the runs are, see :func:`results_hint`). Pages print paths relative to the repository,
    never this absolute path.
    """
    import os

    env = os.environ.get("LRA_KIT_RESULTS")
    if env:
        return Path(env)
    return next((p / "results" for p in (Path.cwd(), *Path.cwd().parents) if (p / "results").is_dir()), None)


def results_hint(what: str = "the recorded runs") -> str:
    """One line for a page that cannot find ``results/``: where the runs are and how to point at them."""
    return (f"{what} are committed in the lra_kit repository under results/; this notebook runs outside a "
            "clone. Clone the repository and open the notebook there, or set LRA_KIT_RESULTS to the path of "
            "its results/ folder, then re-run.")


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


# --- sliders computed in the browser ---------------------------------------------------------------
#
# The static page has no kernel, so a slider either switches pre-rendered pictures (coarse, heavy)
# or recomputes in the page. The two widgets below recompute: the data they need is small (a
# score matrix, a spectrum), the formulas are closed forms a few lines long, and the JavaScript is
# checked against the Python functions next to it (``tests/test_viz.py`` for Python, the browser
# test ``tests/browser`` for the page).

_WIDGET_STYLE = (
    "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:14px;max-width:100%;"
    "border:1px solid #ddd;border-radius:6px;padding:0.6em 0.8em;margin:0.5em 0 1em 0;"
)


def _check_unit_interval(name: str, value: float, *, high: float = 1.0) -> float:
    if not isinstance(value, (int, float)) or not 0.0 <= float(value) < high:
        raise ValueError(f"{name} must be a number in [0, {high:g}), got {value!r}")
    return float(value)


def _check_positive(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or not float(value) > 0.0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def _slider_row(name: str, label: str, low: float, high: float, step: float, value: float) -> str:
    label = html.escape(label)
    return (
        f'<label style="display:flex;align-items:center;gap:0.6em;margin:0.15em 0;">'
        f'<span style="min-width:5.5em;">{label}</span>'
        f'<input type="range" data-param="{name}" min="{low:g}" max="{high:g}" step="{step:g}" value="{value:g}" '
        f'aria-label="{label}" style="flex:1;max-width:22em;">'
        f'<output data-value="{name}" style="font-family:monospace;min-width:4em;">{value:g}</output></label>'
    )


def _widget_html(kind: str, data: dict, sliders: list[tuple], readouts: list[tuple[str, str]], script: str) -> str:
    """Sliders, a figure area, a read-out table and an inline script: nothing fetched, no kernel."""
    uid = f"lrakit-{kind}-" + uuid.uuid4().hex[:10]
    rows = "".join(_slider_row(*s) for s in sliders)
    cells = "".join(
        f'<tr><td style="padding:0.1em 0.8em 0.1em 0;">{html.escape(text)}</td>'
        f'<td data-readout="{name}" style="font-family:monospace;text-align:right;">–</td></tr>'
        for name, text in readouts
    )
    # the data sit in a JSON block that the script parses (and a test can read); "</" cannot end it early
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    body = script.replace("__UID__", uid)
    return (
        f'<div id="{uid}" class="lrakit-widget lrakit-{kind}" style="{_WIDGET_STYLE}">'
        f"<div>{rows}</div><div class=\"lrakit-figure\" style=\"width:100%;\"></div>"
        f'<table class="lrakit-readouts" style="border-collapse:collapse;margin-top:0.3em;">{cells}</table>'
        f'<script type="application/json" class="lrakit-data">{payload}</script>'
        f"<script>{body}</script></div>"
    )


# Shared JavaScript: a minimal SVG plotter (axes with ticks, bars, lines), strings only, so that the
# page never needs a namespace URL or a library.
_JS_PLOT = r"""
function fmt(x, d) {
  return (Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-3 && x !== 0)) ? x.toExponential(2) : x.toFixed(d);
}
function esc(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;"); }
function Panel(x, y, w, h, xlo, xhi, ylo, yhi, logy) {
  this.x = x; this.y = y; this.w = w; this.h = h; this.xlo = xlo; this.xhi = xhi; this.logy = !!logy;
  this.ylo = logy ? Math.log10(ylo) : ylo; this.yhi = logy ? Math.log10(yhi) : yhi; this.parts = [];
}
Panel.prototype.X = function (v) { return this.x + (v - this.xlo) / (this.xhi - this.xlo) * this.w; };
Panel.prototype.Y = function (v) {
  var t = this.logy ? Math.log10(Math.max(v, 1e-300)) : v;
  t = Math.min(Math.max(t, this.ylo), this.yhi);
  return this.y + this.h - (t - this.ylo) / (this.yhi - this.ylo) * this.h;
};
Panel.prototype.add = function (s) { this.parts.push(s); };
Panel.prototype.text = function (x, y, s, anchor, extra) {
  this.add('<text x="' + x.toFixed(1) + '" y="' + y.toFixed(1) + '" font-size="12" text-anchor="' +
           (anchor || "middle") + '" ' + (extra || "") + '>' + esc(s) + '</text>');
};
Panel.prototype.axes = function (title, xlabel, ylabel, xticks, yticks) {
  var p = this;
  p.add('<rect x="' + p.x + '" y="' + p.y + '" width="' + p.w + '" height="' + p.h + '" fill="none" stroke="#999"/>');
  xticks.forEach(function (t) {
    var X = p.X(t[0]);
    p.add('<line x1="' + X + '" x2="' + X + '" y1="' + (p.y + p.h) + '" y2="' + (p.y + p.h + 4) + '" stroke="#999"/>');
    p.text(X, p.y + p.h + 16, t[1]);
  });
  yticks.forEach(function (t) {
    var Y = p.Y(t[0]);
    p.add('<line x1="' + (p.x - 4) + '" x2="' + p.x + '" y1="' + Y + '" y2="' + Y + '" stroke="#999"/>');
    p.text(p.x - 6, Y + 4, t[1], "end");
  });
  p.text(p.x + p.w / 2, p.y - 7, title, "middle", 'font-weight="600"');
  if (xlabel) p.text(p.x + p.w / 2, p.y + p.h + 31, xlabel);
  if (ylabel) p.text(p.x - 38, p.y + p.h / 2, ylabel, "middle",
                     'transform="rotate(-90 ' + (p.x - 38) + ' ' + (p.y + p.h / 2) + ')"');
};
Panel.prototype.line = function (xs, ys, color, width, dash, cls) {
  var p = this, pts = xs.map(function (x, k) { return p.X(x).toFixed(1) + "," + p.Y(ys[k]).toFixed(1); });
  p.add('<polyline class="' + (cls || "") + '" points="' + pts.join(" ") + '" fill="none" stroke="' + color +
        '" stroke-width="' + (width || 1.5) + '"' + (dash ? ' stroke-dasharray="' + dash + '"' : "") + '/>');
};
Panel.prototype.hline = function (v, color, dash) {
  var Y = this.Y(v);
  this.add('<line x1="' + this.x + '" x2="' + (this.x + this.w) + '" y1="' + Y + '" y2="' + Y + '" stroke="' + color +
           '"' + (dash ? ' stroke-dasharray="' + dash + '"' : "") + '/>');
};
Panel.prototype.bar = function (x0, x1, v, color, cls, opacity) {
  var Y = this.Y(v), Y0 = this.Y(this.logy ? Math.pow(10, this.ylo) : 0);
  this.add('<rect class="' + (cls || "") + '" x="' + this.X(x0).toFixed(1) + '" y="' + Math.min(Y, Y0).toFixed(1) +
           '" width="' + Math.max(0.5, this.X(x1) - this.X(x0)).toFixed(1) +
           '" height="' + Math.abs(Y0 - Y).toFixed(1) +
           '" fill="' + color + '"' + (opacity ? ' fill-opacity="' + opacity + '"' : "") + '/>');
};
Panel.prototype.legend = function (x, y, items) {
  var p = this;
  items.forEach(function (it, k) {
    var Y = y + 15 * k;
    p.add('<rect x="' + x + '" y="' + (Y - 8) + '" width="14" height="8" fill="' + it[1] + '"/>');
    p.text(x + 18, Y, it[0], "start");
  });
};
function svg(width, height, panels) {
  return '<svg viewBox="0 0 ' + width + ' ' + height + '" width="100%" role="img" style="max-width:' + width +
         'px;display:block;">' + panels.map(function (p) { return p.parts.join(""); }).join("") + '</svg>';
}
function ticks(lo, hi, n, d) {
  var out = [];
  for (var k = 0; k <= n; k++) { var v = lo + (hi - lo) * k / n; out.push([v, v.toFixed(d)]); }
  return out;
}
function logTicks(lo, hi) {
  var out = [], e0 = Math.ceil(Math.log10(lo)), e1 = Math.floor(Math.log10(hi));
  var by = Math.max(1, Math.ceil((e1 - e0) / 4));
  for (var e = e0; e <= e1; e += by) out.push([Math.pow(10, e), "1e" + e]);
  return out;
}
function u(lag, beta) { return beta === 0 ? 1 : (1 - Math.pow(beta, lag + 1)) / (1 - beta); }
function wire(root, redraw) {
  var sliders = Array.prototype.slice.call(root.querySelectorAll("input[type=range]"));
  function read() {
    var v = {};
    sliders.forEach(function (s) {
      v[s.dataset.param] = parseFloat(s.value);
      root.querySelector('output[data-value="' + s.dataset.param + '"]').textContent = s.value;
    });
    return v;
  }
  function show(values) {
    Object.keys(values).forEach(function (name) {
      root.querySelector('[data-readout="' + name + '"]').textContent = values[name];
    });
  }
  function update() { var v = read(); show(redraw(v)); }
  sliders.forEach(function (s) { s.addEventListener("input", update); });
  update();
}
"""


# --- chapter 4: how momentum reweights the keys of a sentence --------------------------------------

def sentence_match_features(text: str, *, match: float = 4.0) -> tuple[list[str], torch.Tensor]:
    """Deterministic features φ of a sentence's characters: φ(c) = [1, √match · onehot(c)] (spaces: [1, 0]).

    Then φ(q_i)·φ(k_j) = 1 + match·[c_i = c_j ≠ space]: every key gets a uniform background
    score, and a key holding the query's own character scores ``1 + match`` — the look-up pattern
    of a copy head, built without training. Returns the characters and a (length, 1 + alphabet)
    float64 tensor usable as both φ(q) and φ(k).
    """
    if not isinstance(text, str) or len(text) < 2:
        raise ValueError(f"text must be a string of at least two characters, got {text!r}")
    _check_positive("match", match)
    alphabet = sorted(set(text) - {" "})
    features = torch.zeros(len(text), 1 + len(alphabet), dtype=torch.float64)
    features[:, 0] = 1.0
    for position, char in enumerate(text):
        if char != " ":
            features[position, 1 + alphabet.index(char)] = match**0.5
    return list(text), features


def causal_scores(phi_q: torch.Tensor, phi_k: torch.Tensor) -> torch.Tensor:
    """The causal kernel matrix K_ij = φ(q_i)·φ(k_j) for j ≤ i, 0 above the diagonal (length × length)."""
    if phi_q.ndim != 2 or phi_q.shape != phi_k.shape:
        raise ValueError(f"phi_q and phi_k must be (length, dim) of one shape, got {tuple(phi_q.shape)}, "
                         f"{tuple(phi_k.shape)}")
    if (phi_q < 0).any() or (phi_k < 0).any():
        raise ValueError("phi_q and phi_k must be non-negative (feature-mapped)")
    return torch.tril(phi_q @ phi_k.T)


def recent_window(beta: float) -> int:
    """The number of most recent keys called "recent": 1/(1 − β) rounded half up, the scale of the lag weights.

    One rule with the slider's JavaScript, ``Math.max(1, Math.floor(1 / (1 - beta) + 0.5))``: the same IEEE
    operations in the same order, so the two agree at every β, the half-integer windows included (β = 0.6
    gives 2.5 → 3, where Python's banker's ``round`` would give 2).
    """
    return max(1, math.floor(1.0 / (1.0 - _check_unit_interval("beta", beta)) + 0.5))


def reweighting_readouts(scores: torch.Tensor, *, beta: float, gamma: float, query: int) -> dict[str, float]:
    """The numbers chapter 4's slider shows for query ``query`` (0-based), from eq. 13 in float64.

    With A_ij = γu(i−j)K_ij / Σ_{j≤i}K_ij the momentum map and A⁰ the linear map (β = 0, γ = 1):
    ``scale`` = Σ_j A_ij (the factor momentum multiplies the output by), and on the row-normalised
    weights P = A/scale vs A⁰: the share of the last :func:`recent_window` keys, the mean lag read,
    and the output ``Σ_j P_ij v_j`` for the value v_j = j (the position read).
    """
    beta = _check_unit_interval("beta", beta)
    gamma = _check_positive("gamma", gamma)
    n = scores.shape[0]
    if scores.ndim != 2 or scores.shape[1] != n:
        raise ValueError(f"scores must be a square (length × length) matrix, got {tuple(scores.shape)}")
    if not isinstance(query, int) or not 0 <= query < n:
        raise ValueError(f"query must be an int in [0, {n}), got {query!r}")
    row = scores[query, : query + 1].double()
    lag = torch.arange(query, -1, -1, dtype=torch.float64)  # lag of key j = query − j
    linear = row / row.sum()
    momentum = gamma * momentum_lag_weights_float64(lag, beta) * linear
    scale = momentum.sum()
    normalised = momentum / scale
    window = min(query + 1, recent_window(beta))
    recent = lag < window
    return {
        "scale": float(scale),
        "window": float(window),
        "recent_linear": float(linear[recent].sum()),
        "recent_momentum": float(normalised[recent].sum()),
        "mean_lag_linear": float((linear * lag).sum()),
        "mean_lag_momentum": float((normalised * lag).sum()),
        "oldest_to_newest": float(momentum_lag_weights_float64(torch.tensor(float(query)), beta)),
    }


def momentum_lag_weights_float64(lag: torch.Tensor, beta: float) -> torch.Tensor:
    """u(x) = Σ_{m=0}^{x} βᵐ summed term by term in float64: the readable oracle of the closed form."""
    lag = torch.as_tensor(lag, dtype=torch.float64)
    powers = beta ** torch.arange(int(lag.max()) + 1 if lag.numel() else 1, dtype=torch.float64)
    return torch.cumsum(powers, 0)[lag.long()]


_JS_REWEIGHTING = r"""
(function () {
  var root = document.getElementById("__UID__"), D = JSON.parse(root.querySelector(".lrakit-data").textContent);
  var n = D.tokens.length;
  __PLOT__
  function row(i, beta, gamma) {   // eq. 13 for query i: linear map, momentum map, row-normalised momentum
    var K = D.scores[i], z = 0, lin = [], mom = [], scale = 0;
    for (var j = 0; j <= i; j++) z += K[j];
    for (j = 0; j <= i; j++) { lin.push(K[j] / z); mom.push(gamma * u(i - j, beta) * K[j] / z); scale += mom[j]; }
    return { lin: lin, mom: mom, scale: scale, norm: mom.map(function (m) { return m / scale; }) };
  }
  function meanLag(w, i) { var s = 0; for (var j = 0; j <= i; j++) s += w[j] * (i - j); return s; }
  wire(root, function (v) {
    var beta = v.beta, gamma = v.gamma, i = Math.round(v.query), r = row(i, beta, gamma);
    var window = Math.min(i + 1, Math.max(1, Math.floor(1 / (1 - beta) + 0.5)));  // = viz.recent_window
    var recentLin = 0, recentMom = 0;
    for (var j = i - window + 1; j <= i; j++) { recentLin += r.lin[j]; recentMom += r.norm[j]; }
    // panel 1: the row over its keys, linear vs momentum (row-normalised)
    var ymax = 0; for (j = 0; j <= i; j++) ymax = Math.max(ymax, r.lin[j], r.norm[j]);
    var p1 = new Panel(60, 28, 620, 150, -0.5, n - 0.5, 0, ymax * 1.1);
    p1.add('<rect x="' + p1.X(i - window + 0.5).toFixed(1) + '" y="' + p1.y + '" width="' +
           (p1.X(i + 0.5) - p1.X(i - window + 0.5)).toFixed(1) + '" height="' + p1.h +
           '" fill="#fde68a" fill-opacity="0.5"/>');
    for (j = 0; j <= i; j++) {
      p1.bar(j - 0.4, j, r.lin[j], "#9ca3af", "bar-linear");
      p1.bar(j, j + 0.4, r.norm[j], "#2563eb", "bar-momentum");
    }
    var xt = [];
    for (j = 0; j < n; j++) xt.push([j, D.tokens[j] === " " ? "␣" : D.tokens[j]]);
    p1.axes("query " + i + " ('" + D.tokens[i] + "'): share of its attention on each key", "", "share", xt,
            ticks(0, ymax * 1.1, 2, 2));
    p1.legend(p1.x + 8, p1.y + 14, [["linear attention (β = 0)", "#9ca3af"], ["momentum, row-normalised", "#2563eb"],
                                     ["the last " + window + " keys ≈ 1/(1−β)", "#fde68a"]]);
    // panel 2: ratio to linear attention's weights against the lag
    var lags = [], ratio = [], ratioNorm = [];
    for (var l = 0; l < n; l++) {
      lags.push(l); ratio.push(gamma * u(l, beta)); ratioNorm.push(gamma * u(l, beta) / r.scale);
    }
    var rmax = Math.max(2, gamma / (1 - beta) * 1.1);
    var p2 = new Panel(60, 232, 280, 130, 0, n - 1, 0.1, Math.max(rmax, 1.5), true);
    p2.hline(1, "#6b7280", "4 3");
    p2.line(lags, ratio, "#dc2626", 2, null, "ratio-raw");
    p2.line(lags, ratioNorm, "#2563eb", 2, "6 3", "ratio-normalised");
    p2.axes("ratio to linear attention's weight", "lag i − j", "ratio (log)", ticks(0, n - 1, 4, 0),
            logTicks(0.1, Math.max(rmax, 1.5)));
    p2.legend(p2.x + 150, p2.y + p2.h - 24, [["A/A⁰ = γu(lag)", "#dc2626"], ["row-normalised", "#2563eb"]]);
    // panel 3: mean lag read by every query, linear vs momentum
    var qs = [], ml = [], mm = [];
    for (var q = 0; q < n; q++) {
      var rq = row(q, beta, gamma);
      qs.push(q); ml.push(meanLag(rq.lin, q)); mm.push(meanLag(rq.norm, q));
    }
    var p3 = new Panel(400, 232, 280, 130, 0, n - 1, 0, n - 1);
    p3.line(qs, ml, "#9ca3af", 2, null, "meanlag-linear");
    p3.line(qs, mm, "#2563eb", 2, null, "meanlag-momentum");
    p3.add('<line x1="' + p3.X(i) + '" x2="' + p3.X(i) + '" y1="' + p3.y + '" y2="' + (p3.y + p3.h) +
           '" stroke="#f59e0b"/>');
    p3.axes("output for the value v_j = j: mean lag read", "query i", "mean lag", ticks(0, n - 1, 4, 0),
            ticks(0, n - 1, 3, 0));
    p3.legend(p3.x + 190, p3.y + p3.h - 24, [["linear", "#9ca3af"], ["momentum", "#2563eb"]]);
    root.querySelector(".lrakit-figure").innerHTML = svg(700, 400, [p1, p2, p3]);
    return {
      scale: fmt(r.scale, 3), window: String(window),
      recent_linear: fmt(recentLin, 3), recent_momentum: fmt(recentMom, 3),
      mean_lag_linear: fmt(meanLag(r.lin, i), 2), mean_lag_momentum: fmt(meanLag(r.norm, i), 2),
      oldest_to_newest: fmt(u(i, beta), 2)
    };
  });
})();
"""

REWEIGHTING_READOUTS = (
    ("scale", "output scale Σⱼ Aᵢⱼ (linear: 1)"),
    ("window", "recent keys: the last 1/(1−β), rounded half up"),
    ("recent_linear", "share on the recent keys, linear"),
    ("recent_momentum", "share on the recent keys, momentum"),
    ("mean_lag_linear", "mean lag read, linear"),
    ("mean_lag_momentum", "mean lag read, momentum"),
    ("oldest_to_newest", "weight of the oldest key ÷ the newest, u(i)"),
)


def momentum_reweighting_html(
    tokens: Sequence[str], scores: torch.Tensor, *, beta: float = 0.9, gamma: float = 1.0, query: int | None = None
) -> str:
    """Chapter 4's slider as self-contained HTML: β, γ and the query move; the page computes eq. 13.

    ``scores`` is the causal kernel K (:func:`causal_scores`); the script evaluates
    A_ij = γu(i−j)K_ij / Σ_{j≤i}K_ij for every slider position, exactly, and shows the numbers
    :func:`reweighting_readouts` computes in Python.
    """
    n = len(tokens)
    if n < 2 or scores.ndim != 2 or tuple(scores.shape) != (n, n):
        raise ValueError(f"scores must be ({n}, {n}) for {n} tokens, got {tuple(scores.shape)}")
    if (scores < 0).any() or (torch.diagonal(scores) <= 0).any():
        raise ValueError("scores must be non-negative with a positive diagonal (φ(q_i)·φ(k_i) > 0)")
    beta = _check_unit_interval("beta", beta, high=0.999)
    gamma = _check_positive("gamma", gamma)
    query = n - 1 if query is None else query
    if not isinstance(query, int) or not 0 <= query < n:
        raise ValueError(f"query must be an int in [0, {n}), got {query!r}")
    data = {"tokens": list(tokens), "scores": [[round(float(x), 12) for x in scores[i, : i + 1]] for i in range(n)]}
    sliders = [("beta", "β", 0.0, 0.99, 0.01, beta), ("gamma", "γ", 0.25, 1.25, 0.05, gamma),
               ("query", "query i", 0, n - 1, 1, query)]
    return _widget_html("reweighting", data, sliders, list(REWEIGHTING_READOUTS),
                        _JS_REWEIGHTING.replace("__PLOT__", _JS_PLOT))


def momentum_reweighting_widget(tokens: Sequence[str], scores: torch.Tensor, **initial):
    """:func:`momentum_reweighting_html` as an ``IPython.display.HTML`` object (static page and Jupyter alike)."""
    from IPython.display import HTML

    return HTML(momentum_reweighting_html(tokens, scores, **initial))


# --- chapter 5: the momentum connection's β̃ and γ̃ on a quadratic ----------------------------------

def eq18_momentum(ratio, *, delta: float = 1e-3):
    """Eq. 18 of Nguyen et al. as a function of r = ‖g_k − g_{k−1}‖/‖g_{k−1}‖: proj_[0, 1−δ] (1 − √r)².

    Non-monotone in r: decreasing to 0 at r = 1, increasing after, clipped at 1 − δ for
    r ≥ (1 + √(1 − δ))² ≈ 4 (and for r ≤ (1 − √(1 − δ))² ≈ δ²/4).
    """
    ratio = torch.as_tensor(ratio, dtype=torch.float64)
    if (ratio < 0).any():
        raise ValueError("ratio must be non-negative (a quotient of norms)")
    _check_unit_interval("delta", delta)
    return ((1 - ratio.sqrt()) ** 2).clamp(0.0, 1.0 - delta)


def heavy_ball_modes(
    eigenvalues: torch.Tensor, e0: torch.Tensor, *, beta: float, step: float, steps: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The heavy ball on a quadratic, run mode by mode in the eigenbasis of A (float64).

    Each eigen-component of the error obeys e_{k+1} = (1 + β − step·λ)e_k − βe_{k−1} with
    e_{−1} = e_0 (the chapter's start x⁻¹ = x⁰). Returns the errors ‖e_k‖ for k = 0 … steps and
    eq. 18's ratios r_k = ‖g_k − g_{k−1}‖/‖g_{k−1}‖ (g = λe) for k = 1 … steps.
    """
    lam, e = torch.as_tensor(eigenvalues, dtype=torch.float64), torch.as_tensor(e0, dtype=torch.float64)
    if lam.ndim != 1 or lam.shape != e.shape or (lam <= 0).any():
        raise ValueError("eigenvalues must be a positive 1-D tensor and e0 of the same shape")
    beta = _check_unit_interval("beta", beta)
    step = _check_positive("step", step)
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    prev = e.clone()
    errors, ratios = [float(torch.linalg.norm(e))], []
    for _ in range(steps):
        e, prev = (1 + beta - step * lam) * e - beta * prev, e
        errors.append(float(torch.linalg.norm(e)))
        ratios.append(float(torch.linalg.norm(lam * (e - prev)) / torch.linalg.norm(lam * prev)))
    return torch.tensor(errors, dtype=torch.float64), torch.tensor(ratios, dtype=torch.float64)


def connection_readouts(
    eigenvalues: torch.Tensor, e0: torch.Tensor, *, beta: float, gamma: float, steps: int, delta: float = 1e-3
) -> dict[str, float]:
    """The numbers chapter 5's slider shows: the run with (β̃, step γ̃/L) against β* for that step, and eq. 18."""
    lam = torch.as_tensor(eigenvalues, dtype=torch.float64)
    step = _check_positive("gamma", gamma) / float(lam.max())
    beta_star = (1 - (step * float(lam.min())) ** 0.5) ** 2
    errors, ratios = heavy_ball_modes(lam, e0, beta=beta, step=step, steps=steps)
    best, _ = heavy_ball_modes(lam, e0, beta=beta_star, step=step, steps=steps)
    return {
        "beta_star": beta_star,
        "error": float(errors[-1]),
        "error_star": float(best[-1]),
        "ratio": float(ratios[-1]),
        "eq18": float(eq18_momentum(ratios[-1], delta=delta)),
        "share_above_one": float((ratios > 1).double().mean()),
    }


_JS_CONNECTION = r"""
(function () {
  var root = document.getElementById("__UID__"), D = JSON.parse(root.querySelector(".lrakit-data").textContent);
  var lam = D.eigenvalues, dim = lam.length;
  var L = Math.max.apply(null, lam), nu = Math.min.apply(null, lam);
  __PLOT__
  function norm(x) { var s = 0; for (var k = 0; k < x.length; k++) s += x[k] * x[k]; return Math.sqrt(s); }
  function run(beta, step) {     // the heavy ball mode by mode: e ← (1 + β − step·λ)e − βe_prev
    var e = D.e0.slice(), prev = D.e0.slice(), errors = [norm(e)], ratios = [];
    for (var k = 0; k < D.steps; k++) {
      var next = [], dg = [], gp = [];
      for (var m = 0; m < dim; m++) {
        next.push((1 + beta - step * lam[m]) * e[m] - beta * prev[m]);
        dg.push(lam[m] * (next[m] - e[m])); gp.push(lam[m] * e[m]);
      }
      prev = e; e = next; errors.push(norm(e)); ratios.push(norm(dg) / norm(gp));
    }
    return { errors: errors, ratios: ratios };
  }
  function eq18(r) { return Math.min(1 - D.delta, Math.max(0, Math.pow(1 - Math.sqrt(r), 2))); }
  wire(root, function (v) {
    var beta = v.beta_t, gamma = v.gamma_t, step = gamma / L, betaStar = Math.pow(1 - Math.sqrt(step * nu), 2);
    var a = run(beta, step), b = run(betaStar, step), ks = [];
    for (var k = 0; k <= D.steps; k++) ks.push(k);
    // panel 1: weight of each earlier layer's update (eq. 15 unrolled)
    var wmax = Math.max(1.2, gamma * u(D.layers - 1, beta)) * 1.1;
    var p1 = new Panel(60, 28, 200, 140, -0.5, D.layers - 0.5, 0, wmax);
    for (var l = 0; l < D.layers; l++) p1.bar(l - 0.35, l + 0.35, gamma * u(l, beta), "#2563eb", "bar-layer");
    p1.hline(1, "#6b7280", "4 3");
    p1.axes("weight of V̂ from l layers back", "lag l (layers)", "weight", ticks(0, D.layers - 1, D.layers - 1, 0),
            ticks(0, wmax, 2, 1));
    // panel 2: the error of the heavy ball with β̃ and with β* for this step
    var p2 = new Panel(330, 28, 350, 140, 0, D.steps, 1e-12, 1e4, true);
    p2.line(ks, b.errors, "#9ca3af", 2, null, "error-star");
    p2.line(ks, a.errors, "#dc2626", 2, null, "error-run");
    p2.axes("‖xᵏ − x*‖ with step γ̃/L", "iteration k", "error (log)", ticks(0, D.steps, 4, 0), logTicks(1e-12, 1e4));
    p2.legend(p2.x + 150, p2.y + 14, [["β̃ (slider)", "#dc2626"], ["β* = (1 − √(γ̃ν/L))²", "#9ca3af"]]);
    // panel 3: eq. 18 against r, and the r this run produces
    var rs = [], bs = [], rmax = 5;
    for (var t = 0; t <= 200; t++) { rs.push(rmax * t / 200); bs.push(eq18(rmax * t / 200)); }
    var p3 = new Panel(60, 232, 620, 130, 0, rmax, 0, 1.05);
    p3.add('<rect x="' + p3.X(1) + '" y="' + p3.y + '" width="' + (p3.X(rmax) - p3.X(1)) + '" height="' + p3.h +
           '" fill="#fee2e2" fill-opacity="0.6"/>');
    p3.line(rs, bs, "#111827", 2, null, "eq18-curve");
    var r = a.ratios[a.ratios.length - 1], rShow = Math.min(r, rmax);
    p3.add('<circle class="eq18-point" cx="' + p3.X(rShow).toFixed(1) + '" cy="' + p3.Y(eq18(r)).toFixed(1) +
           '" r="5" fill="#dc2626"/>');
    p3.axes("eq. 18: β̃ = proj(1 − √r)², r = ‖g_k − g_(k−1)‖ / ‖g_(k−1)‖ (shaded: r > 1, the increasing branch)",
            "r", "β̃", ticks(0, rmax, 5, 0), ticks(0, 1, 2, 1));
    p3.legend(p3.x + 300, p3.y + 40, [["r of this run's last step", "#dc2626"]]);
    root.querySelector(".lrakit-figure").innerHTML = svg(700, 400, [p1, p2, p3]);
    var above = a.ratios.filter(function (x) { return x > 1; }).length / a.ratios.length;
    return {
      beta_star: fmt(betaStar, 4), error: a.errors[D.steps].toExponential(2),
      error_star: b.errors[D.steps].toExponential(2),
      ratio: fmt(r, 3), eq18: fmt(eq18(r), 4), share_above_one: fmt(above, 3)
    };
  });
})();
"""

CONNECTION_READOUTS = (
    ("beta_star", "β* for the step γ̃/L"),
    ("error", "error after the last step, β̃"),
    ("error_star", "error after the last step, β*"),
    ("ratio", "eq. 18's r at the last step"),
    ("eq18", "β̃ eq. 18 would pick there"),
    ("share_above_one", "share of steps with r > 1"),
)


def momentum_connection_html(
    eigenvalues: torch.Tensor, e0: torch.Tensor, *, steps: int, layers: int, beta: float = 0.8, gamma: float = 0.99,
    delta: float = 1e-3,
) -> str:
    """Chapter 5's slider as self-contained HTML: β̃ and γ̃ move; the page runs the heavy ball mode by mode.

    ``eigenvalues`` and ``e0`` are the quadratic's spectrum and the start's error in its eigenbasis;
    the script repeats :func:`heavy_ball_modes` and shows :func:`connection_readouts`.
    """
    lam, e = torch.as_tensor(eigenvalues, dtype=torch.float64), torch.as_tensor(e0, dtype=torch.float64)
    if lam.ndim != 1 or lam.shape != e.shape or (lam <= 0).any():
        raise ValueError("eigenvalues must be a positive 1-D tensor and e0 of the same shape")
    if not isinstance(steps, int) or not 1 <= steps <= 5000:
        raise ValueError(f"steps must be an int in [1, 5000], got {steps!r}")
    if not isinstance(layers, int) or not 1 <= layers <= 64:
        raise ValueError(f"layers must be an int in [1, 64], got {layers!r}")
    beta = _check_unit_interval("beta", beta, high=0.999)
    gamma = _check_positive("gamma", gamma)
    data = {"eigenvalues": lam.tolist(), "e0": e.tolist(), "steps": steps, "layers": layers,
            "delta": _check_unit_interval("delta", delta)}
    sliders = [("beta_t", "β̃", 0.0, 0.99, 0.01, beta), ("gamma_t", "γ̃", 0.01, 1.0, 0.01, gamma)]
    return _widget_html("connection", data, sliders, list(CONNECTION_READOUTS),
                        _JS_CONNECTION.replace("__PLOT__", _JS_PLOT))


def momentum_connection_widget(eigenvalues: torch.Tensor, e0: torch.Tensor, **options):
    """:func:`momentum_connection_html` as an ``IPython.display.HTML`` object."""
    from IPython.display import HTML

    return HTML(momentum_connection_html(eigenvalues, e0, **options))


def draw_reweighting_frame(fig, *, beta: float, gamma: float, query: int, tokens: Sequence[str], scores) -> None:
    """The views of :func:`momentum_reweighting_html` drawn with matplotlib (static record, live ipywidgets).

    Top: query ``query``'s share of attention on each key, linear vs momentum row-normalised; bottom
    left: the mean lag every query reads; the numbers are :func:`reweighting_readouts`.
    """
    n = len(tokens)
    top, bottom = fig.subplots(2, 1, gridspec_kw={"height_ratios": [1.2, 1]})
    rows = [reweighting_readouts(scores, beta=beta, gamma=gamma, query=i) for i in range(n)]
    row = scores[query, : query + 1].double()
    linear = row / row.sum()
    lag = torch.arange(query, -1, -1, dtype=torch.float64)
    momentum = momentum_lag_weights_float64(lag, beta) * linear
    momentum = momentum / momentum.sum()  # γ cancels in the row-normalised share
    window = int(rows[query]["window"])
    top.axvspan(query - window + 0.5, query + 0.5, color="#fde68a", alpha=0.5, lw=0,
                label=f"last {window} keys ≈ 1/(1−β)")
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


def draw_chunk_tiling(ax, *, n: int = 16, chunk: int = 4) -> None:
    """The (query × key) plane of the causal product cut into chunks: which part is computed how."""
    from matplotlib.patches import Rectangle

    if not (isinstance(n, int) and isinstance(chunk, int) and 1 <= chunk <= n):
        raise ValueError(f"need ints 1 ≤ chunk ≤ n, got n={n!r}, chunk={chunk!r}")
    for i in range(n):
        for j in range(i + 1):
            same = i // chunk == j // chunk
            ax.add_patch(Rectangle((j, i), 1, 1, facecolor="#93c5fd" if same else "#fde68a", edgecolor="white", lw=0.8))
    for c in range(1, -(-n // chunk)):
        t = c * chunk
        ax.annotate("", xy=(t, t), xytext=(t - chunk, t - chunk),
                    arrowprops={"arrowstyle": "->", "color": "#b91c1c", "lw": 1.5})
        ax.text(t + 0.2, t - 0.4, f"s, d at t = {t - 1}", color="#b91c1c", fontsize=8, va="bottom")
    ax.set_xlim(0, n)
    ax.set_ylim(n, 0)
    ax.set_aspect("equal")
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    ax.set_xticks(range(0, n + 1, chunk))
    ax.set_yticks(range(0, n + 1, chunk))
