"""The numbers behind chapter 4's and chapter 5's sliders, in float64 (torch only, no plotting).

Each function is the readable oracle of what a kernel-free widget (:mod:`lra_kit.viz.widgets`) computes in
the page: :func:`reweighting_readouts` for chapter 4's momentum attention (Nguyen et al. eq. 13) and
:func:`connection_readouts` for chapter 5's momentum connection (eq. 15, eq. 18). The JavaScript
(``lra_kit/viz/js/sliders.js``) is run against them under Node (``tests/test_viz_js.py``) and in the
built pages (``tests/browser``).
"""
from __future__ import annotations

import math

import torch

from lra_kit.attention import momentum_attention, momentum_weights


def check_unit_interval(name: str, value: float, *, high: float = 1.0) -> float:
    if not isinstance(value, (int, float)) or not 0.0 <= float(value) < high:
        raise ValueError(f"{name} must be a number in [0, {high:g}), got {value!r}")
    return float(value)


def check_positive(name: str, value: float) -> float:
    if not isinstance(value, (int, float)) or not float(value) > 0.0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


# --- chapter 4: how momentum reweights the keys of a sentence --------------------------------------

def momentum_attention_map(q, k, *, beta: float, gamma: float = 1.0, causal: bool = True, **options) -> torch.Tensor:
    """The (length × length) map A of momentum attention, read off :func:`momentum_attention` itself.

    With V = I (value j is the j-th unit vector) the output row i is Σ_j A_ij e_j = A_i, so the map
    comes from the implementation, not from a re-typed formula. ``q, k`` are (length, dim).
    """
    n = q.shape[0]
    eye = torch.eye(n, dtype=q.dtype)[None, None]
    out, _ = momentum_attention(q[None, None], k[None, None], eye, beta=beta, gamma=gamma, causal=causal, **options)
    return out[0, 0]



def sentence_match_features(text: str, *, match: float = 4.0) -> tuple[list[str], torch.Tensor]:
    """Deterministic features φ of a sentence's characters: φ(c) = [1, √match · onehot(c)] (spaces: [1, 0]).

    Then φ(q_i)·φ(k_j) = 1 + match·[c_i = c_j ≠ space]: every key gets a uniform background
    score, and a key holding the query's own character scores ``1 + match`` — the look-up pattern
    of a copy head, built without training. Returns the characters and a (length, 1 + alphabet)
    float64 tensor usable as both φ(q) and φ(k).
    """
    if not isinstance(text, str) or len(text) < 2:
        raise ValueError(f"text must be a string of at least two characters, got {text!r}")
    check_positive("match", match)
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

    One rule with the slider's ``recentWindow`` (``lra_kit/viz/js/sliders.js``),
    ``Math.max(1, Math.floor(1 / (1 - beta) + 0.5))``: the same IEEE operations in the same order, so the
    two agree at every β, the half-integer windows included (β = 0.6 gives 2.5 → 3, where Python's
    banker's ``round`` would give 2).
    """
    return max(1, math.floor(1.0 / (1.0 - check_unit_interval("beta", beta)) + 0.5))


def window_label(beta: float, query: int) -> str:
    """The figures' name for the shaded recent keys of query ``query`` (0-based): the last
    ``min(query + 1, recent_window(beta))`` keys, called "≈ 1/(1−β)" only when the prefix is long enough to hold
    that many; an early query's window is its whole prefix, and the label says so. The slider's ``windowLabel``
    (``lra_kit/viz/js/sliders.js``) returns the same string (tests/js/sliders.test.mjs)."""
    if not isinstance(query, int) or query < 0:
        raise ValueError(f"query must be an int >= 0, got {query!r}")
    full = recent_window(beta)
    window = min(query + 1, full)
    keys = f"the last {window} key" + ("" if window == 1 else "s")
    if window < full:
        return f"{keys}: the whole prefix (1/(1−β) ≈ {full})"
    return f"{keys} ≈ 1/(1−β)"


def reweighting_row(scores: torch.Tensor, *, beta: float, gamma: float, query: int) -> dict[str, torch.Tensor]:
    """Eq. 13 on query ``query``'s (0-based) row of the causal kernel K: what momentum makes of linear attention.

    Over the keys j = 0 … query: ``lag`` = query − j; ``weights`` γu(i−j), the library's lag weights
    (:func:`lra_kit.attention.momentum_weights`); ``linear`` A⁰_ij = K_ij / Σ_{j'≤i} K_ij' (β = 0, γ = 1);
    ``momentum`` A_ij = γu(i−j) A⁰_ij; ``normalised`` = A_ij / Σ_j A_ij, the share of each key (γ cancels
    in it). The one row behind the read-outs and the figures; the slider's ``reweightingRow``
    (``lra_kit/viz/js/sliders.js``) is its counterpart in the page. Float64.
    """
    beta = check_unit_interval("beta", beta)
    gamma = check_positive("gamma", gamma)
    n = scores.shape[0]
    if scores.ndim != 2 or scores.shape[1] != n:
        raise ValueError(f"scores must be a square (length × length) matrix, got {tuple(scores.shape)}")
    if not isinstance(query, int) or not 0 <= query < n:
        raise ValueError(f"query must be an int in [0, {n}), got {query!r}")
    row = scores[query, : query + 1].double()
    lag = torch.arange(query, -1, -1, dtype=torch.float64)  # lag of key j = query − j
    linear = row / row.sum()
    weights = momentum_weights(lag, beta, gamma)
    momentum = weights * linear
    return {"lag": lag, "weights": weights, "linear": linear, "momentum": momentum,
            "normalised": momentum / momentum.sum()}


def reweighting_readouts(scores: torch.Tensor, *, beta: float, gamma: float, query: int) -> dict[str, float]:
    """The numbers chapter 4's slider shows for query ``query`` (0-based), from eq. 13 in float64.

    On :func:`reweighting_row`'s A (momentum) and A⁰ (linear): ``scale`` = Σ_j A_ij (the factor momentum
    multiplies the output by), and on the row-normalised weights P = A/scale vs A⁰: the share of the last
    :func:`recent_window` keys, the mean lag read, and the output ``Σ_j P_ij v_j`` for the value v_j = j
    (the position read); ``oldest_to_newest`` = u(query)/u(0), the oldest key's lag weight over the newest's.
    """
    row = reweighting_row(scores, beta=beta, gamma=gamma, query=query)
    lag, linear, normalised = row["lag"], row["linear"], row["normalised"]
    window = min(query + 1, recent_window(beta))
    recent = lag < window
    return {
        "scale": float(row["momentum"].sum()),
        "window": float(window),
        "recent_linear": float(linear[recent].sum()),
        "recent_momentum": float(normalised[recent].sum()),
        "mean_lag_linear": float((linear * lag).sum()),
        "mean_lag_momentum": float((normalised * lag).sum()),
        "oldest_to_newest": float(row["weights"][0] / row["weights"][-1]),
    }


# --- chapter 5: the momentum connection's β̃ and γ̃ on a quadratic ----------------------------------

def eq18_momentum(ratio, *, delta: float = 1e-3):
    """Eq. 18 of Nguyen et al. as a function of r = ‖g_k − g_{k−1}‖/‖g_{k−1}‖: proj_[0, 1−δ] (1 − √r)².

    Non-monotone in r: decreasing to 0 at r = 1, increasing after, clipped at 1 − δ for
    r ≥ (1 + √(1 − δ))² ≈ 4 (and for r ≤ (1 − √(1 − δ))² ≈ δ²/4).
    """
    ratio = torch.as_tensor(ratio, dtype=torch.float64)
    if (ratio < 0).any():
        raise ValueError("ratio must be non-negative (a quotient of norms)")
    check_unit_interval("delta", delta)
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
    beta = check_unit_interval("beta", beta)
    step = check_positive("step", step)
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
    step = check_positive("gamma", gamma) / float(lam.max())
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


