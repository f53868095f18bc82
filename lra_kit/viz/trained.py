"""Small trained models for the book's figures: a copy-task language model and what it attends to.

The copy task (Katharopoulos et al. §4.1) with one fixed word length w: a sample is ``0 w 0 w``, so a
model that has learnt the task predicts token t+1 of the second copy by reading position t+1−(w+1),
i.e. the *query at position t attends to key t − w* (one word length back). That is a sharp, checkable
claim about a trained attention map, which random projections cannot show.

:func:`train_copy_model` trains at the size of the copy config of the current scale
(``lra_kit.train.configs.get_config("copy", attention, scale)``, docs/design.md §3 Scales) for a few
hundred steps on the CPU, cached per build. :func:`attention_weights` turns a trained layer into its
per-head N×N attention matrices with the float64 oracles of :mod:`lra_kit.attention.naive`: each
oracle applied to the values V = I returns its own weight matrix (row i of (weights) @ I).
"""
from __future__ import annotations

import functools
import time

import torch

from lra_kit.attention import ATTENTIONS as REGISTRY
from lra_kit.attention.heads import split_heads
from lra_kit.attention.lsh import LSHAttention
from lra_kit.attention.luna import LunaAttention, pack_activation
from lra_kit.attention.modules import LinearAttention, MomentumAttention, SoftmaxAttention
from lra_kit.attention.naive import (
    naive_lsh_attention,
    naive_causal_mean_product,
    naive_linear_attention,
    naive_momentum_attention,
    naive_softmax_attention,
)
from lra_kit.data.tasks.copy_task import NUM_SYMBOLS, SEPARATOR, VOCAB_SIZE
from lra_kit.models.causal_lm import CausalLM
from lra_kit.scales import get_scale
from lra_kit.train.configs import get_config

STEPS = {"smoke": 60, "book": 300, "paper": 300}


def copy_batch(generator: torch.Generator, batch_size: int, word_length: int) -> torch.Tensor:
    """(batch, 2w+2) ids ``0 w 0 w`` with symbols uniform in 1..10."""
    word = torch.randint(1, NUM_SYMBOLS + 1, (batch_size, word_length), generator=generator)
    sep = torch.full((batch_size, 1), SEPARATOR)
    return torch.cat([sep, word, sep, word], dim=1)


def copy_accuracy(model: CausalLM, ids: torch.Tensor) -> float:
    """Share of the second copy's tokens predicted correctly (argmax), the papers' copy accuracy."""
    w = (ids.shape[1] - 2) // 2
    with torch.no_grad():
        predicted = model(ids)[:, w + 1:-1].argmax(-1)
    return (predicted == ids[:, w + 2:]).float().mean().item()


@functools.cache
def train_copy_model(attention: str, *, steps: int | None = None, seed: int = 0, word_length: int = 12,
                     connection: str = "residual", layers: int | None = None, record_every: int = 0,
                     scale: str | None = None) -> dict:
    """Train a causal LM on the copy task with one word length; cached per argument set.

    ``steps=0`` returns the same model at initialisation (same seed): the "before" of a trained figure.

    Returns ``{"model", "ids" (a held-out batch), "accuracy" (on it), "steps", "scale", "seconds",
    "beta_trace"}``; ``beta_trace`` is ``(step, β̃ per layer)`` every ``record_every`` steps for an
    adaptive connection (mean over the held-out batch's positions, eq. 18).
    """
    if attention not in ATTENTIONS:
        raise ValueError(f"attention must be one of {ATTENTIONS}, got {attention!r}")
    if not (isinstance(word_length, int) and 2 <= word_length <= 60):
        raise ValueError(f"word_length must be an int in 2..60, got {word_length!r}")
    scale = get_scale(scale)
    steps = STEPS[scale] if steps is None else steps
    if not (isinstance(steps, int) and steps >= 0):
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    cfg = get_config("copy", attention, "smoke" if scale == "smoke" else "book", connection=connection).model
    cfg.dropout = cfg.attention_dropout = 0.0
    if layers is not None:
        cfg.layers = layers
    torch.manual_seed(seed)
    n = 2 * word_length + 2
    model = CausalLM(cfg, vocab_size=VOCAB_SIZE, max_length=n)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    held_out = copy_batch(torch.Generator().manual_seed(seed + 1), 64, word_length)
    mask = torch.zeros(n, dtype=torch.bool)
    mask[word_length + 2:] = True  # the second copy is what the papers score
    trace = []
    start = time.perf_counter()
    for step in range(steps):
        if record_every and step % record_every == 0:
            trace.append((step, layer_betas(model, held_out)))
        ids = copy_batch(gen, 32, word_length)
        loss = model.loss_terms(ids, None, mask[None].expand_as(ids))
        opt.zero_grad()
        (loss["nll"] / loss["count"]).backward()
        opt.step()
    if record_every:
        trace.append((steps, layer_betas(model, held_out)))
    model.eval()
    return {"model": model, "ids": held_out, "accuracy": copy_accuracy(model, held_out), "steps": steps,
            "scale": scale, "seconds": time.perf_counter() - start, "beta_trace": trace}


def attention_inputs(model: CausalLM, ids: torch.Tensor) -> list[torch.Tensor]:
    """What each layer's attention module sees (after the pre-LN), captured by forward pre-hooks."""
    seen = []
    hooks = [layer.attn.register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach()))
             for layer in model.encoder.layers]
    _forward_with_hooks(model, ids, hooks)
    return seen


def layer_betas(model: CausalLM, ids: torch.Tensor) -> list[float]:
    """Mean β̃ of each layer of an adaptive-connection model on ``ids`` (eq. 18; layer 1 has none: 0)."""
    betas, hooks = [], []
    for layer in model.encoder.layers:
        def record(_m, args, out, layer=layer):
            _x, v_hat, carry, keep = args
            beta = layer.momentum_beta(v_hat, carry, keep) if carry.v_hat is not None else 0.0
            betas.append(float(torch.as_tensor(beta).mean()))
        hooks.append(_Hook(layer, record))
    _forward_with_hooks(model, ids, hooks)
    return betas


def layer_update_ratios(model: CausalLM, ids: torch.Tensor) -> torch.Tensor:
    """Eq. 18's ratio r = ‖V̂_ℓ − V̂_{ℓ−1}‖/‖V̂_{ℓ−1}‖ per token (over the features) for layers 2 … L of
    ``model`` on ``ids``, from the updates its layers actually pass to the connection: (layers − 1, batch, N)."""
    updates, hooks = [], []
    for layer in model.encoder.layers:
        def record(_m, args, out):
            updates.append(args[1].detach().double())
        hooks.append(_Hook(layer, record))
    _forward_with_hooks(model, ids, hooks)
    ratios = [torch.linalg.vector_norm(now - before, dim=-1) / torch.linalg.vector_norm(before, dim=-1)
              for before, now in zip(updates[:-1], updates[1:], strict=True)]
    return torch.stack(ratios)


def _forward_with_hooks(model: CausalLM, ids: torch.Tensor, hooks: list) -> None:
    """One no-grad forward pass of ``model`` on ``ids`` with ``hooks`` attached, removed afterwards in any case."""
    try:
        with torch.no_grad():
            model(ids)
    finally:
        for h in hooks:
            h.remove()


class _Hook:
    """Wrap ``layer._finish`` to see its arguments (v̂ and the carry are not module inputs)."""

    def __init__(self, layer, fn):
        self.layer, original = layer, layer._finish

        def wrapped(*args):
            out = original(*args)
            fn(layer, args, out)
            return out
        layer._finish = wrapped

    def remove(self) -> None:
        del self.layer._finish


def attention_weights(attn, x: torch.Tensor, p: torch.Tensor | None = None) -> torch.Tensor:
    """(batch, heads, N, N) float64 causal attention weights of a trained module on its input x.

    softmax: softmax(QKᵀ/√d) with the causal mask (eq. 2/8); linear: φ(q_i)ᵀφ(k_j)/Σ_{j'≤i}φ(q_i)ᵀφ(k_{j'})
    (eq. 9); momentum: the same kernel matrix times the momentum weights W_ij (eq. 13). Luna: the
    token-to-token weights of causal Luna, (1/i) Σ_c A_unpack[i, c] A_packᵀ[j, c] for j ≤ i (§3.3).
    Each from :mod:`lra_kit.attention.naive` applied to V = I. ``p``: causal Luna's learned P (l, d).
    """
    draw = _WEIGHTS.get(type(attn))
    if draw is None:
        raise TypeError(f"attn must be a module of one of the attentions {', '.join(ATTENTIONS)} (the ones with a "
                        f"float64 oracle of their weights), got {type(attn).__name__}")
    return draw(attn, x.double(), p)


def _query_key_heads(attn, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k (batch, heads, N, d_h) of a multi-head module in float64, and V = I broadcast to their heads."""
    n = x.shape[1]
    with torch.no_grad():
        w_q, w_k = attn.W_q.double(), attn.W_k.double()
        q, k = split_heads(w_q(x), attn.n_heads), split_heads(w_k(x), attn.n_heads)
        attn.W_q.float(), attn.W_k.float()
    return q, k, torch.eye(n, dtype=torch.float64).expand(*q.shape[:2], n, n)


def _softmax_weights(attn, x: torch.Tensor, p=None) -> torch.Tensor:
    q, k, eye = _query_key_heads(attn, x)
    return naive_softmax_attention(q, k, eye, causal=True)


def _kernel_weights(oracle, attn, x: torch.Tensor, **options) -> torch.Tensor:
    """A kernel attention's oracle on V = I with the module's own feature map φ, in float64 for the call."""
    q, k, eye = _query_key_heads(attn, x)
    fm = attn.feature_map.double()
    try:
        with torch.no_grad():
            return oracle(q, k, eye, causal=True, feature_map=fm, eps=attn.eps, **options)
    finally:
        fm.float()


def _linear_weights(attn, x: torch.Tensor, p=None) -> torch.Tensor:
    return _kernel_weights(naive_linear_attention, attn, x)


def _momentum_weights(attn, x: torch.Tensor, p=None) -> torch.Tensor:
    return _kernel_weights(naive_momentum_attention, attn, x, beta=attn.beta, gamma=attn.gamma)


def _luna_weights(attn, x: torch.Tensor, p: torch.Tensor | None) -> torch.Tensor:
    if p is None:
        raise ValueError("causal Luna needs its layer's learned P: attention_weights(attn, x, p=layer.p)")
    return luna_token_weights(attn, x, p)


# The attentions whose weights attention_weights draws, each module with its float64 oracle. Keyed by the exact
# module type, not isinstance: a subclass may compute something else, and a wrong map would look plausible.
# A registered attention with no entry here (Performer) is left out of ATTENTIONS, so a new row of the registry
# needs no edit in this file; drawing its weights is one oracle and one entry.
def _lsh_weights(attn, x: torch.Tensor, p=None) -> torch.Tensor:
    """LSH's weights with its fixed (eval) rotations: the loop oracle on V = I (its output is linear in V)."""
    if attn.training or attn.look_back != "round":
        raise TypeError("LSHAttention's weights are those of its fixed rotations in eval mode, with look_back='round'")
    with torch.no_grad():
        qk = split_heads(attn.W_q.double()(x), attn.n_heads)
        attn.W_q.float()
    eye = torch.eye(x.shape[1], dtype=torch.float64).expand(*qk.shape[:2], x.shape[1], x.shape[1])
    return naive_lsh_attention(qk, eye, rotations=attn.rotations.double(), chunk_size=attn.chunk_size, causal=True)


_WEIGHTS = {SoftmaxAttention: _softmax_weights, LinearAttention: _linear_weights,
            MomentumAttention: _momentum_weights, LunaAttention: _luna_weights, LSHAttention: _lsh_weights}
ATTENTIONS = tuple(name for name, spec in REGISTRY.items() if spec.module in _WEIGHTS)  # in the registry's order


def luna_pack_weights(attn, x: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """(batch, heads, N, l) A_packᵀ = ω(X W_pc (P W_pq)ᵀ/√d_h) of causal Luna (§3.3): what each P slot takes
    from each token; ``p`` the layer's learned P (l, d)."""
    if not getattr(attn, "causal", False) or not hasattr(attn, "pc_proj"):
        raise TypeError("attn must be a causal Luna module")
    p = p.detach().double()
    with torch.no_grad():
        m = attn.double()
        scale = (m.d_model // m.n_heads) ** -0.5
        pq = split_heads(m.pq_proj(p[None]), m.n_heads) * scale
        out = pack_activation(split_heads(m.pc_proj(x.double()), m.n_heads) @ pq.transpose(-1, -2), m.pack_activation)
        m.float()
    return out


def luna_token_weights(attn, x: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Causal Luna's effective weights on V: Y = f(A_unpack, A_packᵀ, V) with V = I (§3.3, eq. 7's loop)."""
    x = x.double()
    a_pack = luna_pack_weights(attn, x, p)
    with torch.no_grad():
        m = attn.double()
        scale = (m.d_model // m.n_heads) ** -0.5
        q = split_heads(m.q_proj(x), m.n_heads) * scale
        k = split_heads(m.c_proj(x) if m.tie_kv else m.k_proj(x), m.n_heads)
        a_unpack = torch.softmax(naive_causal_mean_product(q, k, a_pack), dim=-1)
        n = x.shape[1]
        eye = torch.eye(n, dtype=torch.float64).expand(*q.shape[:2], n, n)
        out = naive_causal_mean_product(a_unpack, a_pack, eye)
        m.float()
    return out


def trained_attention_maps(run: dict, sample: int = 0) -> list[torch.Tensor]:
    """Per layer, the (heads, N, N) weights of ``run["model"]`` on held-out sample ``sample``."""
    model, ids = run["model"], run["ids"][sample:sample + 1]
    return [attention_weights(layer.attn, x, getattr(layer, "p", None))[0]
            for layer, x in zip(model.encoder.layers, attention_inputs(model, ids), strict=True)]


def held_out_attention_maps(run: dict) -> list[torch.Tensor]:
    """Per layer, the (samples, heads, N, N) weights of ``run["model"]`` on its whole held-out batch (64 copies):
    what a head is measured on, so that its statistics do not rest on one sample's w queries."""
    model, ids = run["model"], run["ids"]
    return [attention_weights(layer.attn, x, getattr(layer, "p", None))
            for layer, x in zip(model.encoder.layers, attention_inputs(model, ids), strict=True)]


def _second_copy(word_length: int) -> torch.Tensor:
    """The second copy's queries i = w+1 … 2w, each predicting token i+1, which sits at i − w in the first copy."""
    return torch.arange(word_length + 1, 2 * word_length + 1)


def copy_lookup_share(weights: torch.Tensor, word_length: int) -> float:
    """Share of second-copy queries i (predicting token i+1) whose argmax key is i − w, one word length back
    (over every leading dimension: samples, heads)."""
    rows = _second_copy(word_length)
    return (weights[..., rows, :].argmax(-1) == rows - word_length).double().mean().item()


def aligned_weight(weights: torch.Tensor, word_length: int) -> torch.Tensor:
    """Mean weight that second-copy queries i put on key i − w, the aligned position ((..., N, N) -> (...))."""
    rows = _second_copy(word_length)
    return weights[..., rows, rows - word_length].mean(-1)


def aligned_fraction(weights: torch.Tensor, word_length: int) -> torch.Tensor:
    """Mean fraction of each second-copy query's total weight that falls on key i − w ((..., N, N) -> (...)).

    The same as :func:`aligned_weight` where rows sum to one (softmax, linear); momentum's rows sum to their
    momentum multiplier and causal Luna's to no fixed value, so heads are compared on this fraction."""
    rows = _second_copy(word_length)
    return (weights[..., rows, rows - word_length] / weights[..., rows, :].sum(-1)).mean(-1)


def best_lookup_head(maps: list[torch.Tensor], word_length: int) -> tuple[int, int, float]:
    """(layer, head, share): the head that puts the largest fraction of its weight one word length back
    (:func:`aligned_fraction`, averaged over the maps' samples), and how often its argmax falls there
    (:func:`copy_lookup_share`). ``maps``: per layer, (heads, N, N) or (samples, heads, N, N).

    Chosen on the fraction, a continuous measure, not on the argmax share: over w = 12 queries the share
    takes 13 values, heads tie on it, and a tie broken by the heads' order picked a head that does not
    look up (causal Luna, chapter 7)."""
    fractions = [(ell, h, aligned_fraction(m[..., h, :, :], word_length).mean().item())
                 for ell, m in enumerate(maps) for h in range(m.shape[-3])]
    ell, h, _ = max(fractions, key=lambda s: s[2])
    return ell, h, copy_lookup_share(maps[ell][..., h, :, :], word_length)


def layer_lookup_share(layer_maps: torch.Tensor, word_length: int) -> float:
    """Share of second-copy queries for which at least one head of the layer puts its argmax on key i − w:
    the look-up done by the layer's heads together. ``layer_maps``: (heads, N, N) or (samples, heads, N, N)."""
    rows = _second_copy(word_length)
    hits = layer_maps[..., rows, :].argmax(-1) == rows - word_length  # (..., heads, w)
    return hits.any(-2).double().mean().item()


def draw_init_vs_trained(initial: list[torch.Tensor], trained: list[torch.Tensor], word_length: int,
                         layer: int, head: int, *, labels=("at initialisation", "trained")):
    """One head's map at initialisation beside the same head trained, the aligned key j = i − w dashed."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(6.0, 3.0), layout="constrained")
    rows = torch.arange(word_length + 1, 2 * word_length + 2)
    for ax, maps, label in zip(axes, (initial, trained), labels, strict=True):
        m = maps[layer][head]
        ax.imshow(m.numpy(), cmap="Blues", vmin=0)
        ax.plot(rows - word_length, rows, ls="--", lw=0.8, color="tab:red")
        ax.set_xticks([]), ax.set_yticks([])
        ax.set_title(f"{label}: aligned weight {aligned_weight(m, word_length).item():.2f}", fontsize=8)
        ax.set_xlabel("key j", fontsize=8), ax.set_ylabel("query i", fontsize=8)
    fig.suptitle(f"layer {layer + 1}, head {head + 1}", fontsize=9)
    return fig


def draw_attention_maps(maps: list[torch.Tensor], word_length: int, title: str = ""):
    """One heat map per (layer, head), the line j = i − w (one word length back) dashed on the second copy."""
    import matplotlib.pyplot as plt

    layers, heads = len(maps), maps[0].shape[0]
    fig, axes = plt.subplots(layers, heads, figsize=(1.7 * heads, 1.75 * layers), squeeze=False,
                             layout="constrained")
    rows = torch.arange(word_length + 1, 2 * word_length + 2)
    for ell, m in enumerate(maps):
        for h in range(heads):
            ax = axes[ell][h]
            ax.imshow(m[h].numpy(), cmap="Blues", vmin=0)
            ax.plot(rows - word_length, rows, ls="--", lw=0.6, color="tab:red")
            ax.set_xticks([]), ax.set_yticks([])
            ax.set_title(f"layer {ell + 1}, head {h + 1}", fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


def luna_packing(run: dict, sample: int = 0) -> list[torch.Tensor]:
    """Per layer of a causal Luna ``run``, the (heads, N, l) packing weights A_packᵀ (:func:`luna_pack_weights`)
    on held-out sample ``sample``: what each token writes into each slot of the layer's P."""
    model, ids = run["model"], run["ids"][sample:sample + 1]
    return [luna_pack_weights(layer.attn, x, layer.p)[0]
            for layer, x in zip(model.encoder.layers, attention_inputs(model, ids), strict=True)]


def pack_profile(weights: torch.Tensor) -> dict[str, float | list[int]]:
    """How one head's packing weights ``weights`` (N tokens, l slots), all positive, vary.

    ``over_tokens``: per slot the coefficient of variation (std / mean) over the tokens, averaged over the
    slots; ``over_slots``: per token the same over the slots, averaged over the tokens; ``min_slot_corr``: the
    smallest correlation between two slots' profiles over the tokens (1: every slot packs the same tokens);
    ``strong_tokens``: the positions whose weight, averaged over the slots, exceeds half its largest value."""
    if weights.dim() != 2 or weights.shape[1] < 2 or not (weights > 0).all():
        raise ValueError(f"weights must be positive, (tokens, slots ≥ 2), got shape {tuple(weights.shape)}")
    w = weights.double()
    mean = w.mean(1)
    return {"over_tokens": (w.std(0) / w.mean(0)).mean().item(),
            "over_slots": (w.std(1) / mean).mean().item(),
            "min_slot_corr": torch.corrcoef(w.T).min().item(),
            "strong_tokens": (mean > mean.max() / 2).nonzero().flatten().tolist()}


def draw_packing_init_vs_trained(initial: list[torch.Tensor], trained: list[torch.Tensor], word_length: int,
                                 head: int = 0, *, labels=("at initialisation", "trained")):
    """One head's packing weights (slots × tokens) per layer: at initialisation (top row) above the same model
    trained (bottom row). Each layer's two panels share one colour scale from 0, so that an even packing looks
    even; the dotted line marks where the second copy starts. ``initial``, ``trained``: per layer
    (heads, N, l), as :func:`luna_packing` returns them."""
    import matplotlib.pyplot as plt

    if len(initial) != len(trained):
        raise ValueError(f"initial and trained must have the same layers, got {len(initial)} and {len(trained)}")
    layers = len(trained)
    fig, axes = plt.subplots(2, layers, figsize=(3.0 * layers, 4.6), squeeze=False, layout="constrained")
    for ell in range(layers):
        panels = (initial[ell][head], trained[ell][head])
        top = max(a.max().item() for a in panels)
        for row, (a, label) in enumerate(zip(panels, labels, strict=True)):
            ax = axes[row][ell]
            image = ax.imshow(a.numpy().T, cmap="Greens", aspect="auto", vmin=0, vmax=top)
            ax.axvline(word_length + 1.5, ls=":", color="k", lw=0.8)
            ax.set_title(f"layer {ell + 1}, head {head + 1}, {label}", fontsize=8)
            ax.set_xlabel("token position", fontsize=8), ax.set_ylabel("slot of P", fontsize=8)
        fig.colorbar(image, ax=axes[:, ell], shrink=0.8)
    return fig


def print_beta_trace(run: dict, betas, r_initial: torch.Tensor, r_trained: torch.Tensor) -> None:
    """Print what an adaptive-connection ``run`` did per layer: its mean β̃ (eq. 18) at the first and the last
    record of ``betas`` (records, layers), and the median of eq. 18's per-token ratio r at initialisation and
    trained (``r_initial``, ``r_trained``: (layers − 1, batch, N), as :func:`layer_update_ratios` returns)."""
    betas = torch.as_tensor(betas)
    if betas.dim() != 2 or r_initial.shape != r_trained.shape or r_initial.shape[0] != betas.shape[1] - 1:
        raise ValueError(f"betas must be (records, layers) and r_initial, r_trained (layers − 1, …), got "
                         f"{tuple(betas.shape)}, {tuple(r_initial.shape)}, {tuple(r_trained.shape)}")
    print(f"{run['steps']} steps at scale {run['scale']!r} in {run['seconds']:.1f} s: "
          f"copy accuracy {run['accuracy']:.3f}")
    print("layer   mean β̃, first → last record   median r, initialisation → trained")
    for ell in range(1, betas.shape[1]):
        print(f"{ell + 1:>5}   {betas[0, ell]:>8.3f} → {betas[-1, ell]:<5.3f}{'':>14}"
              f"{r_initial[ell - 1].median():>8.2f} → {r_trained[ell - 1].median():.2f}")
    share = (r_initial > 1).double().mean(), (r_trained > 1).double().mean()
    print(f"layers 2-{betas.shape[1]}, every token: r > 1 for {share[0]:.0%} → {share[1]:.0%}, "
          f"median r {r_initial.median():.2f} → {r_trained.median():.2f}")
