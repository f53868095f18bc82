"""Diagrams of the book, drawn from code as vector graphics (SVG).

Each ``draw_*`` function returns a matplotlib figure of a fixed, column-sized shape; ``svg`` turns
a figure into an inline SVG object for a notebook cell, so the diagram stays sharp at any zoom.
"""

from __future__ import annotations

import io

import matplotlib.figure
import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Polygon, Rectangle

__all__ = ["svg", "draw_chunk_tiling", "draw_kernel_trick_shapes", "draw_unrolled_recurrence", "draw_luna_streams",
           "draw_kernel_smoother", "draw_luna_heads", "draw_causal_luna_state"]


def svg(fig: matplotlib.figure.Figure):
    """The figure as an IPython SVG display object (vector graphics), and the figure closed."""
    from IPython.display import SVG

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(fig)
    return SVG(buffer.getvalue())


def _check_positive_int(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


# What the tiling diagram says for each chunked product: the state(s) at a chunk boundary (b = 0, 1, and
# b > 1 as a format with {b}), and the side panel's four captions.
_CHUNK_TEXT = {
    "S": {
        "state": ("$S_0 = 0$", "$S_T$", "$S_{{{b}T}}$"),
        "intra": "intra-chunk: masked $T\\times T$ product\n$(\\phi(Q_{[b]})\\phi(K_{[b]})^\\top\\odot L_T)V_{[b]}$",
        "inter": "inter-chunk: never formed; its sum\nreaches the chunk as $\\phi(Q_{[b]})\\,S_{bT}$",
        "update": "state update per chunk:\n$S_{(b+1)T} = S_{bT} + \\phi(K_{[b]})^\\top V_{[b]}$",
        "ends": "$T = 1$: the RNN.   $T = N$: the masked\n$N\\times N$ matrix.",
    },
    "s,d": {
        "state": ("$s_0 = d_0 = 0$", "$s_T, d_T$", "$s_{{{b}T}}, d_{{{b}T}}$"),
        "intra": "intra-chunk: masked $T\\times T$ product,\neach key weighted by $u(i - j)$",
        "inter": "inter-chunk: never formed; its sum\nreaches the chunk through $s_{bT}$, $d_{bT}$",
        "update": "states carried per chunk by the\nheavy-ball step (eq. 12)",
        "ends": "$T = 1$: the recurrence.   $T = N$: the\nmasked $N\\times N$ matrix.",
    },
}


def draw_chunk_tiling(n_chunks: int = 4, *, width: float = 6.4, states: str = "S") -> matplotlib.figure.Figure:
    """The (query i, key j) plane of causal attention cut into n_chunks × n_chunks tiles.

    Diagonal tiles: a masked T × T product (the intra-chunk part). Tiles below the diagonal are never
    formed: their total reaches the queries through the state at the start of the query's chunk —
    linear attention's S (``states="S"``, chapter 3) or momentum attention's pair s, d
    (``states="s,d"``, chapter 4).
    """
    _check_positive_int("n_chunks", n_chunks)
    if states not in _CHUNK_TEXT:
        raise ValueError(f"states must be one of {sorted(_CHUNK_TEXT)}, got {states!r}")
    text = _CHUNK_TEXT[states]
    # room for the longer momentum labels, paid for with smaller key labels
    left, tick_size = (1.2, 8) if states == "S" else (1.7, 7)
    fig, (ax, side) = plt.subplots(1, 2, figsize=(width, width * 0.5), width_ratios=[1, 1.05])
    intra, inter = "#4C72B0", "#DD8452"
    for b in range(n_chunks):  # b: query chunk (row), counted from the top
        y = n_chunks - 1 - b
        for a in range(b):     # key chunks before the query chunk: reached through the state
            ax.add_patch(Rectangle((a, y), 1, 1, facecolor=inter, alpha=0.35, edgecolor="white", lw=2))
        ax.add_patch(Polygon([(b, y + 1), (b, y), (b + 1, y)], closed=True, facecolor=intra, alpha=0.85,
                             edgecolor="white", lw=0.5))
        ax.add_patch(Rectangle((b, y), 1, 1, fill=False, edgecolor=intra, lw=1.2))
        label = text["state"][min(b, 2)].format(b=b)
        ax.text(-0.15, y + 0.5, label, ha="right", va="center", fontsize=10, color=inter)
    ax.set_xlim(-left, n_chunks)
    ax.set_ylim(0, n_chunks + 0.05)
    ax.set_aspect("equal")
    ax.set_xticks([a + 0.5 for a in range(n_chunks)], [f"keys {a + 1}" for a in range(n_chunks)],
                  fontsize=tick_size)
    ax.set_yticks([])
    ax.set_title("query chunk (row) × key chunk (column)", fontsize=9)
    for spine in ax.spines.values():
        spine.set_visible(False)

    side.axis("off")
    side.set_xlim(0, 1)
    side.set_ylim(0, 1)
    side.add_patch(Polygon([(0.02, 0.92), (0.02, 0.80), (0.14, 0.80)], facecolor=intra, alpha=0.85))
    side.text(0.18, 0.86, text["intra"], va="center", fontsize=9)
    side.add_patch(Rectangle((0.02, 0.55), 0.12, 0.12, facecolor=inter, alpha=0.35))
    side.text(0.18, 0.61, text["inter"], va="center", fontsize=9)
    side.text(0.02, 0.30, text["update"], va="center", fontsize=9)
    side.text(0.02, 0.08, text["ends"], va="center", fontsize=9)
    return fig


def _box(ax, x, y, w, h, label, color, fontsize=9):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, alpha=0.3, edgecolor=color, lw=1.2))
    ax.text(x + w / 2, y + h / 2, label, ha="center", va="center", fontsize=fontsize)


def draw_kernel_trick_shapes(n: int = 8, c: int = 3, m: int = 2, *, width: float = 6.4) -> matplotlib.figure.Figure:
    """Shapes of eq. 6: (φ(Q)φ(K)ᵀ)V with an N × N intermediate against φ(Q)(φ(K)ᵀV) with a C × M one."""
    for name, value in (("n", n), ("c", c), ("m", m)):
        _check_positive_int(name, value)
    fig, ax = plt.subplots(figsize=(width, width * 0.62))
    blue, orange, green, grey = "#4C72B0", "#DD8452", "#55A868", "#8172B2"
    u, gap = 0.3, 0.35  # drawing units per row/column, space between factors

    def row(y, items, caption):
        """Draw factors left to right, bottom-aligned at y; items: (cols, rows, label, colour) or a string."""
        x = 0.0
        ax.text(0, y + n * u + 0.3, caption, fontsize=10)
        for item in items:
            if isinstance(item, str):
                ax.text(x, y + n * u / 2, item, fontsize=10 if len(item) < 3 else 9, va="center")
                x += gap + (0.15 if len(item) < 3 else 0.12 * len(item))
                continue
            cols, rows, label, color = item
            _box(ax, x, y + (n - rows) * u, cols * u, rows * u, label, color, 8)
            x += cols * u + gap
        return x

    x_left = row(4.0, [(c, n, "$N{\\times}C$", blue), (n, c, "$C{\\times}N$", blue), "=",
                       (n, n, "$N{\\times}N$\nstored", orange), (m, n, "$V$", green), "cost $N^2(C+M)$"],
                 "left side:  $(\\phi(Q)\\,\\phi(K)^\\top)\\,V$")
    x_right = row(0.3, [(n, c, "$\\phi(K)^\\top$", blue), (m, n, "$V$", green), "=", (m, c, "", grey),
                        "stored $C{\\times}M$;", (c, n, "$\\phi(Q)$", blue), "cost $2NCM$"],
                  "right side:  $\\phi(Q)\\,(\\phi(K)^\\top V)$")
    ax.set_xlim(-0.1, max(x_left, x_right) + 0.6)
    ax.set_ylim(0.1, 4.0 + n * u + 0.7)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def draw_unrolled_recurrence(steps: int = 4, *, width: float = 6.4) -> matplotlib.figure.Figure:
    """Eqs. 16–20 unrolled: the states (s_i, z_i) carried from step to step, one input and output per step."""
    _check_positive_int("steps", steps)
    fig, ax = plt.subplots(figsize=(width, width * 0.36))
    state, io_color = "#DD8452", "#4C72B0"
    for i in range(steps + 1):
        x = 1.6 * i
        ax.add_patch(Rectangle((x, 1.0), 0.9, 0.8, facecolor=state, alpha=0.35, edgecolor=state))
        ax.text(x + 0.45, 1.4, f"$s_{{{i}}}, z_{{{i}}}$", ha="center", va="center")
        if i < steps:
            ax.add_patch(FancyArrowPatch((x + 0.9, 1.4), (x + 1.6, 1.4), arrowstyle="-|>", mutation_scale=12))
            xm = x + 1.25
            ax.text(xm, 0.15, f"$x_{{{i + 1}}}$", ha="center", color=io_color)
            ax.add_patch(FancyArrowPatch((xm, 0.4), (xm, 1.33), arrowstyle="-|>", mutation_scale=10, color=io_color))
            ax.add_patch(FancyArrowPatch((x + 2.05, 1.8), (x + 2.05, 2.5), arrowstyle="-|>", mutation_scale=10,
                                         color=io_color))
            ax.text(x + 2.05, 2.65, f"$y_{{{i + 1}}}$", ha="center", color=io_color)
    ax.text(0.45, 0.7, "$= 0$", ha="center", fontsize=9)
    ax.set_xlim(-0.2, 1.6 * steps + 1.1)
    ax.set_ylim(0, 3.0)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def draw_luna_streams(*, width: float = 6.4) -> matplotlib.figure.Figure:
    """One Luna layer (Ma et al. Fig. 2): the two streams X (length n) and P (length l) through pack and unpack."""
    fig, ax = plt.subplots(figsize=(width, width * 0.5))
    x_col, p_col, op_col = "#4C72B0", "#DD8452", "#55A868"
    _box(ax, 0.0, 0.3, 1.2, 0.5, "$X$ ($n{\\times}d$)", x_col)
    _box(ax, 0.0, 2.3, 1.2, 0.5, "$P$ ($l{\\times}d$)", p_col)
    _box(ax, 2.0, 2.2, 1.6, 0.7, "pack\n$\\mathrm{Attn}(P, X)$", op_col)
    _box(ax, 4.4, 0.2, 1.6, 0.7, "unpack\n$\\mathrm{Attn}(X, Y_P)$", op_col)
    _box(ax, 7.0, 0.3, 1.5, 0.5, "$Y_X$ ($n{\\times}d$)", x_col)
    _box(ax, 7.0, 2.3, 1.5, 0.5, "$Y_P$ ($l{\\times}d$)", p_col)
    arrows = [((1.2, 2.55), (2.0, 2.55), p_col), ((1.2, 0.55), (2.0, 2.35), x_col),
              ((3.6, 2.55), (7.0, 2.55), p_col), ((3.6, 2.35), (4.4, 0.85), p_col),
              ((1.2, 0.45), (4.4, 0.45), x_col), ((6.0, 0.55), (7.0, 0.55), x_col)]
    for start, end, color in arrows:
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, color=color, lw=1.3))
    ax.text(1.35, 1.45, "keys,\nvalues", fontsize=8, color=x_col, ha="right")
    ax.text(4.15, 1.6, "keys,\nvalues", fontsize=8, color=p_col, ha="left")
    ax.text(2.8, 0.28, "queries", fontsize=8, color=x_col, ha="center")
    ax.text(5.3, 2.68, "to the next layer's $P$", fontsize=8, color=p_col, ha="center")
    ax.text(1.6, 2.68, "queries", fontsize=8, color=p_col, ha="center")
    ax.set_xlim(-0.1, 8.6)
    ax.set_ylim(0, 3.1)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def draw_kernel_smoother(weights=(0.05, 0.1, 0.45, 0.25, 0.1, 0.05), *, width: float = 6.4) -> matplotlib.figure.Figure:
    """Attention as a kernel smoother (Katharopoulos et al. eq. 2–3): query i averages the values v_j with
    weights sim(q_i, k_j)/Σ_j' sim(q_i, k_j'); the arrows' widths are the weights."""
    weights = [float(w) for w in weights]
    if len(weights) < 2 or any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError("weights must be at least two non-negative numbers with a positive sum")
    total = sum(weights)
    weights = [w / total for w in weights]
    n = len(weights)
    fig, ax = plt.subplots(figsize=(width, width * 0.42))
    key_col, out_col = "#4C72B0", "#DD8452"
    for j, w in enumerate(weights):
        x = 1.1 * j
        _box(ax, x, 0.2, 0.9, 0.55, f"$k_{{{j + 1}}}, v_{{{j + 1}}}$", key_col, 8)
        ax.add_patch(FancyArrowPatch((x + 0.45, 0.75), (1.1 * (n - 1) / 2 + 0.45, 2.0), arrowstyle="-|>",
                                     mutation_scale=8, color=out_col, lw=0.5 + 9 * w, alpha=0.75))
        ax.text(x + 0.45, 0.02, f"{w:.2f}", ha="center", va="top", fontsize=7, color=out_col)
    _box(ax, 1.1 * (n - 1) / 2, 2.0, 0.9, 0.55, "$y_i$", out_col, 9)
    formula = "$= \\sum_j \\frac{\\mathrm{sim}(q_i, k_j)}{\\sum_{j'}\\mathrm{sim}(q_i, k_{j'})}\\,v_j$"
    ax.text(1.1 * (n - 1) / 2 + 1.1, 2.27, formula, va="center", fontsize=10)
    ax.text(-0.1, 2.27, "query $q_i$", va="center", ha="left", fontsize=9)
    ax.set_xlim(-0.2, 1.1 * n + 0.2)
    ax.set_ylim(-0.3, 2.8)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def draw_luna_heads(heads: int = 3, *, width: float = 6.4) -> matplotlib.figure.Figure:
    """Where Luna's cross-head terms come from: H pack heads write their d/H columns of Y_P; v_proj acts on
    the merged Y_P, so every unpack head h reads every pack head g through the block W_V^(g,h)."""
    _check_positive_int("heads", heads)
    fig, ax = plt.subplots(figsize=(width, width * 0.5))
    pack, merged, unpack = "#55A868", "#DD8452", "#4C72B0"
    h_gap = 0.9
    for g in range(heads):
        y = 0.3 + h_gap * (heads - 1 - g)
        _box(ax, 0.0, y, 1.5, 0.6, f"pack head {g + 1}\n$A^{{({g + 1})}}_\\mathrm{{pack}}$", pack, 8)
        _box(ax, 2.3, y, 0.8, 0.6, f"cols {g + 1}", merged, 8)
        ax.add_patch(FancyArrowPatch((1.5, y + 0.3), (2.3, y + 0.3), arrowstyle="-|>", mutation_scale=10, color=pack))
        _box(ax, 5.2, y, 1.6, 0.6, f"unpack head {g + 1}", unpack, 8)
    for g in range(heads):
        for h in range(heads):
            y0 = 0.3 + h_gap * (heads - 1 - g) + 0.3
            y1 = 0.3 + h_gap * (heads - 1 - h) + 0.3
            ax.add_patch(FancyArrowPatch((3.1, y0), (5.2, y1), arrowstyle="-|>", mutation_scale=8,
                                         color=merged if g == h else "0.55", lw=1.6 if g == h else 0.7,
                                         ls="-" if g == h else "--"))
    top = 0.3 + h_gap * heads + 0.05
    ax.text(2.7, top, "merged $Y_P$", ha="center", fontsize=9, color=merged)
    ax.text(4.6, top + 0.35, "v_proj mixes the blocks: $W_V^{(g,h)}$", ha="center", fontsize=9)
    ax.text(4.15, -0.15, "solid: $g = h$;  dashed: the cross-head terms $g \\ne h$", ha="center", fontsize=8)
    ax.set_xlim(-0.1, 7.0)
    ax.set_ylim(-0.35, top + 0.7)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig


def draw_causal_luna_state(*, width: float = 6.4) -> matplotlib.figure.Figure:
    """One step of causal Luna (eq-cluna-step): x_t gives k_t, v_t, q_t and a_t = ω(...); the running sums
    U_t, W_t and the count t are the whole state; y_t reads them through a softmax over the l slots."""
    fig, ax = plt.subplots(figsize=(width, width * 0.42))
    inp, state, out = "#4C72B0", "#DD8452", "#55A868"
    _box(ax, 0.0, 1.0, 0.9, 0.6, "$x_t$", inp)
    _box(ax, 1.6, 2.0, 1.9, 0.6, "$a_t = \\omega(p\\,k_t)$", inp, 8)
    _box(ax, 1.6, 1.0, 1.9, 0.6, "$k_t,\\ v_t$", inp, 8)
    _box(ax, 1.6, 0.0, 1.9, 0.6, "$q_t$", inp, 8)
    _box(ax, 4.3, 1.5, 2.3, 1.1, "$U_t = U_{t-1} + k_t^\\top a_t$\n$W_t = W_{t-1} + a_t^\\top v_t$\n$t$", state, 8)
    _box(ax, 7.3, 0.6, 2.3, 0.8, "$y_t = \\mathrm{softmax}(\\frac{q_t U_t}{t\\sqrt{d_h}})\\,\\frac{W_t}{t}$",
         out, 8)
    arrows = [((0.9, 1.3), (1.6, 2.3), inp), ((0.9, 1.3), (1.6, 1.3), inp), ((0.9, 1.3), (1.6, 0.3), inp),
              ((3.5, 2.3), (4.3, 2.2), inp), ((3.5, 1.3), (4.3, 1.8), inp), ((3.5, 0.3), (7.3, 0.8), inp),
              ((6.6, 1.9), (7.3, 1.2), state)]
    for start, end, color in arrows:
        ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=10, color=color, lw=1.1))
    ax.add_patch(FancyArrowPatch((6.2, 2.6), (4.7, 2.6), connectionstyle="arc3,rad=0.6", arrowstyle="-|>",
                                 mutation_scale=10, color=state))
    ax.text(5.45, 3.2, "to step $t + 1$", ha="center", fontsize=8, color=state)
    ax.set_xlim(-0.1, 9.7)
    ax.set_ylim(-0.1, 3.45)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig
