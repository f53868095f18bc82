"""The float64 numbers behind the baselines chapter's LSH slider, and the slider as self-contained HTML.

One example (:func:`lsh_example`): ``N`` shared query/key vectors drawn around a few directions, so that
softmax attention has blocks to find, and a fixed bank of random rotations, ``rounds`` × ``dim`` ×
``max_buckets/2``. A setting of the slider uses the first ``r`` rounds of the bank and the first ``b/2``
columns of each, so moving a slider changes one thing at a time.

:func:`lsh_weights` is the N × N matrix that :func:`lra_kit.attention.lsh_attention` applies to the values,
read off by running it on V = I in float64; :func:`shared_qk_softmax_weights` is the matrix it approximates
(shared-QK softmax with the self-mask). :func:`lsh_readouts` are the widget's numbers. The page's script,
``js/lsh.js``, recomputes all of them at every slider position with no kernel, and Node checks it against
these functions (``tests/js/lsh.test.mjs``).
"""
from __future__ import annotations

import html
import json
import math
import uuid

import torch

from lra_kit.attention.lsh import SELF_SCORE, lsh_attention, lsh_buckets
from lra_kit.viz.widgets import packaged_script


def lsh_example(n: int = 48, dim: int = 8, *, clusters: int = 6, rounds: int = 8, max_buckets: int = 32,
                norm: float = 16.0, spread: float = 0.15, seed: int = 0) -> dict:
    """The slider's example: ``qk`` (n, dim), float64, each row ``norm`` × a unit vector near one of ``clusters``
    random directions (angular noise ``spread``), in a random order; and ``rotations`` (rounds, dim,
    max_buckets/2), i.i.d. N(0, 1); ``labels``, each row's direction, and ``order``, the rows sorted by it (only
    to draw the matrices with the clusters as blocks: the computation keeps the random order). One seed."""
    for name, value in (("n", n), ("dim", dim), ("clusters", clusters), ("rounds", rounds)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if not isinstance(max_buckets, int) or max_buckets < 2 or max_buckets % 2:
        raise ValueError(f"max_buckets must be an even int >= 2, got {max_buckets!r}")
    g = torch.Generator().manual_seed(seed)
    centres = torch.nn.functional.normalize(torch.randn(clusters, dim, generator=g, dtype=torch.float64), dim=-1)
    label = torch.randint(0, clusters, (n,), generator=g)
    x = centres[label] + spread * torch.randn(n, dim, generator=g, dtype=torch.float64)
    qk = norm * torch.nn.functional.normalize(x, dim=-1)
    rotations = torch.randn(rounds, dim, max_buckets // 2, generator=g, dtype=torch.float64)
    order = torch.sort(label, stable=True).indices
    return {"qk": qk, "rotations": rotations, "labels": label, "order": order}


def check_setting(rotations: torch.Tensor, rounds: int, n_buckets: int) -> torch.Tensor:
    """The rotations of a slider setting: the first ``rounds`` of the bank, the first ``n_buckets/2`` columns."""
    if rotations.dim() != 3:
        raise ValueError(f"rotations must be (rounds, dim, max_buckets/2), got {tuple(rotations.shape)}")
    if not isinstance(rounds, int) or not 1 <= rounds <= rotations.shape[0]:
        raise ValueError(f"rounds must be an int in [1, {rotations.shape[0]}], got {rounds!r}")
    if not isinstance(n_buckets, int) or n_buckets % 2 or not 2 <= n_buckets <= 2 * rotations.shape[2]:
        raise ValueError(f"n_buckets must be an even int in [2, {2 * rotations.shape[2]}], got {n_buckets!r}")
    return rotations[:rounds, :, : n_buckets // 2]


def lsh_weights(qk: torch.Tensor, rotations: torch.Tensor, *, rounds: int, n_buckets: int, chunk_size: int,
                causal: bool = False) -> torch.Tensor:
    """W (N, N), float64: row i the weights LSH attention puts on the values, ``lsh_attention(qk, V=I)``."""
    rot = check_setting(rotations, rounds, n_buckets).to(torch.float64)
    x = qk.to(torch.float64)[None, None]
    eye = torch.eye(qk.shape[0], dtype=torch.float64)[None, None]
    return lsh_attention(x, eye, rotations=rot, chunk_size=chunk_size, causal=causal)[0, 0]


def shared_qk_softmax_weights(qk: torch.Tensor, *, causal: bool = False) -> torch.Tensor:
    """A (N, N), float64: what LSH approximates, softmax over every key k_j = q_j/‖q_j‖, itself at the self score."""
    q = qk.to(torch.float64)
    n = q.shape[0]
    scores = q @ torch.nn.functional.normalize(q, dim=-1).T / math.sqrt(q.shape[1])
    if causal:
        scores = scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), -math.inf)
    scores = scores.masked_fill(torch.eye(n, dtype=torch.bool), SELF_SCORE)
    return torch.softmax(scores, dim=-1)


def visible_keys(qk: torch.Tensor, rotations: torch.Tensor, *, rounds: int, n_buckets: int,
                 chunk_size: int) -> torch.Tensor:
    """P (N, N) bool: j ∈ P_i, key j is in query i's window (its chunk or the one before) in some round; j ≠ i."""
    rot = check_setting(rotations, rounds, n_buckets)
    n = qk.shape[0]
    buckets = lsh_buckets(qk.to(torch.float64)[None, None], rot.to(torch.float64))[0, 0]  # (rounds, N)
    seen = torch.zeros(n, n, dtype=torch.bool)
    for b in buckets.tolist():
        ranked = sorted(range(n), key=lambda i: (b[i], i))
        chunk = torch.empty(n, dtype=torch.long)
        chunk[ranked] = torch.arange(n) // chunk_size
        seen |= (chunk[None, :] == chunk[:, None]) | (chunk[None, :] == chunk[:, None] - 1)
    return seen & ~torch.eye(n, dtype=torch.bool)


def lsh_readouts(qk: torch.Tensor, rotations: torch.Tensor, *, rounds: int, n_buckets: int,
                 chunk_size: int) -> dict[str, float]:
    """The widget's numbers for one setting: keys a query sees, the softmax mass on them, and how far W is from A."""
    W = lsh_weights(qk, rotations, rounds=rounds, n_buckets=n_buckets, chunk_size=chunk_size)
    A = shared_qk_softmax_weights(qk)
    P = visible_keys(qk, rotations, rounds=rounds, n_buckets=n_buckets, chunk_size=chunk_size)
    n = qk.shape[0]
    return {
        "keys_seen": P.sum().item() / n,
        "mass_seen": (A * P).sum().item() / n,
        "total_variation": 0.5 * (W - A).abs().sum().item() / n,
        "max_abs": (W - A).abs().max().item(),
    }


def collision_rates(angles, n_buckets: int, *, dim: int = 32, pairs: int = 100, rounds: int = 100,
                    seed: int = 0) -> torch.Tensor:
    """P[h(x) = h(y)] measured for unit x, y at each angle (radians): ``pairs`` random pairs at that angle, each
    hashed by :func:`lra_kit.attention.lsh_buckets` with every one of ``rounds`` random R (dim × n_buckets/2,
    i.i.d. N(0, 1)); the rate over all pairs × rounds."""
    for name, value in (("pairs", pairs), ("rounds", rounds)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    g = torch.Generator().manual_seed(seed)
    rates = []
    for angle in torch.as_tensor(angles, dtype=torch.float64).tolist():
        x = torch.nn.functional.normalize(torch.randn(pairs, dim, generator=g, dtype=torch.float64), dim=-1)
        u = torch.randn(pairs, dim, generator=g, dtype=torch.float64)
        u = torch.nn.functional.normalize(u - (u * x).sum(-1, keepdim=True) * x, dim=-1)  # a direction ⟂ x
        y = math.cos(angle) * x + math.sin(angle) * u
        rotations = torch.randn(rounds, dim, n_buckets // 2, generator=g, dtype=torch.float64)
        hx, hy = (lsh_buckets(z[None, None], rotations) for z in (x, y))  # (1, 1, rounds, pairs)
        rates.append((hx == hy).double().mean().item())
    return torch.tensor(rates, dtype=torch.float64)


# --- the slider ------------------------------------------------------------------------------------------

LSH_READOUTS = (
    ("keys_seen", "keys a query sees, mean |Pᵢ| (of N − 1)"),
    ("mass_seen", "softmax's weight on those keys, mean"),
    ("total_variation", "mean total variation ½Σⱼ|Wᵢⱼ − Aᵢⱼ|"),
    ("max_abs", "largest |Wᵢⱼ − Aᵢⱼ|"),
)


def lsh_script() -> str:
    """The text of ``js/lsh.js`` (it defines ``LraKitLSH``), checked to be safe inside ``<script>``."""
    return packaged_script("lsh.js")


def lsh_data(qk: torch.Tensor, rotations: torch.Tensor, *, chunk_size: int, order=None) -> dict:
    """What the widget embeds: qk and the rotation bank rounded to 12 decimals, the chunk size, and the order in
    which to draw the rows and columns (default: as they are). The script computes on these rounded numbers, so
    the tests compare it with Python on them (:func:`embedded`)."""
    if qk.dim() != 2 or rotations.dim() != 3 or rotations.shape[1] != qk.shape[1]:
        raise ValueError(f"qk must be (N, D) and rotations (rounds, D, b/2), got {tuple(qk.shape)} and "
                         f"{tuple(rotations.shape)}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    order = list(range(qk.shape[0])) if order is None else [int(i) for i in order]
    if sorted(order) != list(range(qk.shape[0])):
        raise ValueError(f"order must be a permutation of range({qk.shape[0]})")
    return {"qk": [[round(float(x), 12) for x in row] for row in qk], "order": order,
            "rotations": [[[round(float(x), 12) for x in row] for row in r] for r in rotations],
            "chunk_size": chunk_size, "self_score": SELF_SCORE}


def embedded(data: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """qk and the rotations back from :func:`lsh_data`, as float64 tensors."""
    return torch.tensor(data["qk"], dtype=torch.float64), torch.tensor(data["rotations"], dtype=torch.float64)


def lsh_widget_html(qk: torch.Tensor, rotations: torch.Tensor, *, chunk_size: int, rounds: int = 1,
                    n_buckets: int = 8, order=None) -> str:
    """The slider as self-contained HTML: rounds and buckets move; the page hashes, sorts, chunks and combines
    the rounds (``js/lsh.js``) and draws W beside A. Nothing is fetched and no kernel is needed."""
    data = lsh_data(qk, rotations, chunk_size=chunk_size, order=order)
    check_setting(rotations, rounds, n_buckets)
    uid = "lrakit-lsh-" + uuid.uuid4().hex[:10]
    style = ("font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:14px;max-width:100%;"
             "border:1px solid #ddd;border-radius:6px;padding:0.6em 0.8em;margin:0.5em 0 1em 0;")

    def row(name, label, low, high, step, value):
        label = html.escape(label)
        return (f'<label style="display:flex;align-items:center;gap:0.6em;margin:0.15em 0;">'
                f'<span style="min-width:7em;">{label}</span>'
                f'<input type="range" data-param="{name}" min="{low}" max="{high}" step="{step}" value="{value}" '
                f'aria-label="{label}" style="flex:1;max-width:22em;">'
                f'<output data-value="{name}" style="font-family:monospace;min-width:3em;">{value}</output></label>')

    sliders = (row("rounds", "rounds r", 1, rotations.shape[0], 1, rounds)
               + row("buckets", "buckets b", 2, 2 * rotations.shape[2], 2, n_buckets))
    cells = "".join(f'<tr><td style="padding:0.1em 0.8em 0.1em 0;">{html.escape(text)}</td>'
                    f'<td data-readout="{name}" style="font-family:monospace;text-align:right;">–</td></tr>'
                    for name, text in LSH_READOUTS)
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (f'<div id="{uid}" class="lrakit-widget lrakit-lsh" style="{style}"><div>{sliders}</div>'
            f'<div class="lrakit-figure" style="width:100%;"></div>'
            f'<table class="lrakit-readouts" style="border-collapse:collapse;margin-top:0.3em;">{cells}</table>'
            f'<script type="application/json" class="lrakit-data">{payload}</script>'
            f'<script>{lsh_script()}\nLraKitLSH.mount(document.getElementById("{uid}"));</script></div>')


def lsh_widget(qk: torch.Tensor, rotations: torch.Tensor, **options):
    """:func:`lsh_widget_html` as an ``IPython.display.HTML`` object (static page and Jupyter alike)."""
    from IPython.display import HTML

    return HTML(lsh_widget_html(qk, rotations, **options))
