"""The book's kernel-free sliders: self-contained HTML whose script recomputes the figure in the page.

The static page has no kernel, so a slider either switches pre-rendered pictures (coarse, heavy) or
recomputes in the page. Chapter 4's :func:`momentum_reweighting_html` (eq. 13 over an embedded score
matrix) and chapter 5's :func:`momentum_connection_html` (the heavy ball mode by mode over an embedded
spectrum) recompute: the data they need is small, the formulas are closed forms a few lines long, and
the numbers they show are those of the float64 oracles in :mod:`lra_kit.viz.momentum`.
:func:`slider_player_html` swaps pre-rendered frames (:func:`lra_kit.viz.figures.slider_player`
draws them) where no closed form exists.

The JavaScript is one file, ``lra_kit/viz/js/sliders.js``, shipped with the package and inlined into
each widget: a chapter's output then works on the static page, in JupyterLab and in a downloaded
``.ipynb`` alike, with nothing fetched. Node runs that file against the oracles
(``tests/test_viz_js.py``); the browser tests (``tests/browser``) move the sliders on the built pages.
"""
from __future__ import annotations

import functools
import html
import itertools
import json
import uuid
from collections.abc import Mapping, Sequence
from importlib import resources

import torch

from lra_kit.viz.momentum import check_positive, check_unit_interval


@functools.cache
def packaged_script(filename: str) -> str:
    """The text of ``lra_kit/viz/js/<filename>``, checked to be safe inlined in a ``<script>`` element."""
    source = resources.files("lra_kit.viz").joinpath("js", filename).read_text(encoding="utf-8")
    if "</script" in source.lower():
        raise ValueError(f"lra_kit/viz/js/{filename} must not contain '</script': it is inlined in a <script> element")
    return source


def sliders_script() -> str:
    """The text of ``js/sliders.js`` (it defines ``LraKitSliders``)."""
    return packaged_script("sliders.js")


def _script(mount: str, uid: str) -> str:
    """The library, then one call that mounts it on the widget's element."""
    return f'<script>{sliders_script()}\nLraKitSliders.{mount}(document.getElementById("{uid}"));</script>'


def _data_block(data) -> str:
    # the data sit in a JSON block that the script parses (and a test can read); "</" cannot end it early
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("</", "<\\/")
    return f'<script type="application/json" class="lrakit-data">{payload}</script>'


def check_grid(params: Mapping[str, Sequence[float]]) -> dict[str, list]:
    if not params:
        raise ValueError("params must name at least one parameter and its values")
    grid = {}
    for name, values in params.items():
        values = list(values)
        if not values:
            raise ValueError(f"params[{name!r}] must hold at least one value")
        grid[name] = values
    return grid


def format_value(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) else str(value)


def slider_player_html(
    frames: Mapping[str, str],
    params: Mapping[str, Sequence[float]],
    *,
    initial: Mapping[str, float] | None = None,
    labels: Mapping[str, str] | None = None,
) -> str:
    """HTML + JavaScript: one range slider per parameter; moving one shows the pre-rendered frame.

    Self-contained (frames are data URIs, the script is inlined), so it works on a static page and
    in a PDF-less offline copy; nothing is fetched and no kernel is needed.
    """
    import numpy as np

    grid = check_grid(params)
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
            f'<output style="font-family:monospace;">{html.escape(format_value(grid[name][start[k]]))}</output>'
            f"</label>"
        )
    first = frames[",".join(map(str, start))]
    data = {"values": [[format_value(v) for v in grid[n]] for n in names], "frames": dict(frames)}
    return (f'<div id="{uid}" class="lrakit-player" style="max-width:100%;">'
            f'<img alt="frame of a parameter sweep; move the sliders below" src="{first}" '
            f'style="max-width:100%;height:auto;"><div>{"".join(rows)}</div>'
            f"{_data_block(data)}{_script('mountPlayer', uid)}</div>")


_WIDGET_STYLE = (
    "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:14px;max-width:100%;"
    "border:1px solid #ddd;border-radius:6px;padding:0.6em 0.8em;margin:0.5em 0 1em 0;"
)


def _slider_row(name: str, label: str, low: float, high: float, step: float, value: float) -> str:
    label = html.escape(label)
    return (
        f'<label style="display:flex;align-items:center;gap:0.6em;margin:0.15em 0;">'
        f'<span style="min-width:5.5em;">{label}</span>'
        f'<input type="range" data-param="{name}" min="{low:g}" max="{high:g}" step="{step:g}" value="{value:g}" '
        f'aria-label="{label}" style="flex:1;max-width:22em;">'
        f'<output data-value="{name}" style="font-family:monospace;min-width:4em;">{value:g}</output></label>'
    )


def _widget_html(kind: str, data: dict, sliders: list[tuple], readouts: list[tuple[str, str]], mount: str) -> str:
    """Sliders, a figure area, a read-out table and an inline script: nothing fetched, no kernel."""
    uid = f"lrakit-{kind}-" + uuid.uuid4().hex[:10]
    rows = "".join(_slider_row(*s) for s in sliders)
    cells = "".join(
        f'<tr><td style="padding:0.1em 0.8em 0.1em 0;">{html.escape(text)}</td>'
        f'<td data-readout="{name}" style="font-family:monospace;text-align:right;">–</td></tr>'
        for name, text in readouts
    )
    return (
        f'<div id="{uid}" class="lrakit-widget lrakit-{kind}" style="{_WIDGET_STYLE}">'
        f"<div>{rows}</div><div class=\"lrakit-figure\" style=\"width:100%;\"></div>"
        f'<table class="lrakit-readouts" style="border-collapse:collapse;margin-top:0.3em;">{cells}</table>'
        f"{_data_block(data)}{_script(mount, uid)}</div>"
    )



# --- chapter 4: how momentum reweights the keys of a sentence --------------------------------------

REWEIGHTING_READOUTS = (
    ("scale", "output scale Σⱼ Aᵢⱼ (linear: 1)"),
    ("window", "recent keys: the last 1/(1−β), rounded half up, at most the i + 1 there are"),
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

    ``scores`` is the causal kernel K (:func:`lra_kit.viz.momentum.causal_scores`); the script evaluates
    A_ij = γu(i−j)K_ij / Σ_{j≤i}K_ij for every slider position, exactly, and shows the numbers
    :func:`lra_kit.viz.momentum.reweighting_readouts` computes in Python.
    """
    n = len(tokens)
    if n < 2 or scores.ndim != 2 or tuple(scores.shape) != (n, n):
        raise ValueError(f"scores must be ({n}, {n}) for {n} tokens, got {tuple(scores.shape)}")
    if (scores < 0).any() or (torch.diagonal(scores) <= 0).any():
        raise ValueError("scores must be non-negative with a positive diagonal (φ(q_i)·φ(k_i) > 0)")
    beta = check_unit_interval("beta", beta, high=0.999)
    gamma = check_positive("gamma", gamma)
    query = n - 1 if query is None else query
    if not isinstance(query, int) or not 0 <= query < n:
        raise ValueError(f"query must be an int in [0, {n}), got {query!r}")
    sliders = [("beta", "β", 0.0, 0.99, 0.01, beta), ("gamma", "γ", 0.25, 1.25, 0.05, gamma),
               ("query", "query i", 0, n - 1, 1, query)]
    return _widget_html("reweighting", reweighting_data(tokens, scores), sliders, list(REWEIGHTING_READOUTS),
                        "mountReweighting")


def reweighting_data(tokens: Sequence[str], scores: torch.Tensor) -> dict:
    """What chapter 4's widget embeds for its script: the tokens and row i of K for j ≤ i, rounded to 12 decimals.

    The script computes on these rounded rows, so its numbers are checked against the Python oracle on them
    (``tests/test_viz_js.py``).
    """
    return {"tokens": list(tokens), "scores": [[round(float(x), 12) for x in scores[i, : i + 1]]
                                               for i in range(len(tokens))]}


def momentum_reweighting_widget(tokens: Sequence[str], scores: torch.Tensor, **initial):
    """:func:`momentum_reweighting_html` as an ``IPython.display.HTML`` object (static page and Jupyter alike)."""
    from IPython.display import HTML

    return HTML(momentum_reweighting_html(tokens, scores, **initial))


# --- chapter 5: the momentum connection's β̃ and γ̃ on a quadratic ----------------------------------

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
    the script repeats :func:`lra_kit.viz.momentum.heavy_ball_modes` and shows
    :func:`lra_kit.viz.momentum.connection_readouts`.
    """
    lam, e = torch.as_tensor(eigenvalues, dtype=torch.float64), torch.as_tensor(e0, dtype=torch.float64)
    if lam.ndim != 1 or lam.shape != e.shape or (lam <= 0).any():
        raise ValueError("eigenvalues must be a positive 1-D tensor and e0 of the same shape")
    if not isinstance(steps, int) or not 1 <= steps <= 5000:
        raise ValueError(f"steps must be an int in [1, 5000], got {steps!r}")
    if not isinstance(layers, int) or not 1 <= layers <= 64:
        raise ValueError(f"layers must be an int in [1, 64], got {layers!r}")
    beta = check_unit_interval("beta", beta, high=0.999)
    gamma = check_positive("gamma", gamma)
    data = {"eigenvalues": lam.tolist(), "e0": e.tolist(), "steps": steps, "layers": layers,
            "delta": check_unit_interval("delta", delta)}
    sliders = [("beta_t", "β̃", 0.0, 0.99, 0.01, beta), ("gamma_t", "γ̃", 0.01, 1.0, 0.01, gamma)]
    return _widget_html("connection", data, sliders, list(CONNECTION_READOUTS), "mountConnection")


def momentum_connection_widget(eigenvalues: torch.Tensor, e0: torch.Tensor, **options):
    """:func:`momentum_connection_html` as an ``IPython.display.HTML`` object."""
    from IPython.display import HTML

    return HTML(momentum_connection_html(eigenvalues, e0, **options))
