"""Transformer and Luna layers, and the stack that threads the momentum connection through them.

Connections between a layer's input x_ℓ and its attention output V̂_ℓ (Nguyen et al. §3.2):

* ``residual``  — x_ℓ + V̂_ℓ (Vaswani et al.; Nguyen eq. 4).
* ``momentum``  — x_ℓ + γ̃·V̂_ℓ + β̃·(x_ℓ − x_{ℓ−1}), eq. 15 read as one heavy-ball step
  (eq. 9) over depth with ∇f ≈ −V̂_ℓ (docs/design.md §6.3). x_{ℓ−1} is the *input of the previous layer*; for
  the first layer x_0 := x_1, so its momentum term is 0. γ̃ is Table 1's "stepsize in momentum
  connection", β̃ its "momentum in momentum connection". β̃ = 0, γ̃ = 1 is the residual.
* ``adaptive``  — the same with β̃ replaced by eq. 18 (:func:`adaptive_momentum`),
  β̃_ℓ = proj_[0,1−δ]((1 − sqrt(‖V̂_ℓ − V̂_{ℓ−1}‖ / ‖V̂_{ℓ−1}‖))²)  (∇f ≈ −V̂; the sign cancels).
  The norms run over the features of each position — the default, ``adaptive_over="token"``,
  one β̃ per sample and position: the authors' code (``TransformerAdaptive``), the only choice
  that keeps a causal model causal and that does not depend on how a batch is padded
  (docs/design.md §6.4). The named alternative ``adaptive_over="sample"`` takes the norms over
  all real (non-padding) positions and features of a sample, one β̃ per sample; encoders only. The first layer has no
  V̂_{ℓ−1} and uses β̃ = 0. β̃ is treated as a coefficient (detached), as a heavy-ball momentum
  is not differentiated through.

Derived in the book, chapter "Momentum connection and adaptive momentum" (``sec-momentum-connection``,
``sec-adaptive-momentum``); the Luna layer in "Luna: pack and unpack" (``sec-luna-contextual-p``).

"the rest of the layer" f of eq. 15 is the LayerNorm/FFN part: pre-LN (the LRA code of the
Momentum paper, Nyströmformer's ``LRA/code/model.py``; docs/reference-implementations.md §4)
x_{ℓ+1} = h + FFN(LN(h)) with V̂ = Attn(LN(x)); post-LN (Luna, fast-transformers)
x_{ℓ+1} = LN(h' + FFN(h')), h' = LN(h), with V̂ = Attn(x).
"""
from __future__ import annotations

import inspect
import math
from typing import Any, NamedTuple

import torch
import torch.nn as nn

from lra_kit.attention import attention_spec, build_attention
from lra_kit.models.config import ModelConfig, attention_kwargs
from lra_kit.models.embeddings import sinusoids


def adaptive_momentum(
    grad: torch.Tensor,
    prev_grad: torch.Tensor,
    *,
    delta: float = 1e-3,
    dim: int | tuple[int, ...] | None = None,
) -> torch.Tensor:
    """Adaptive heavy-ball momentum, Nguyen et al. eq. 18.

        β̃_k = proj_[0, 1−δ]( (1 − sqrt(‖g_k − g_{k−1}‖ / ‖g_{k−1}‖))² )

    Norms run over all elements when ``dim=None`` (a 0-d tensor comes back) and over ``dim``
    otherwise (kept as size-1 dims, so β̃ broadcasts against ``grad``): ``dim=-1`` for one β̃ per
    position of a (batch, length, features) tensor, as the layers use it; ``dim=(1, 2)`` for one
    per sample. A zero ‖g_{k−1}‖ is treated as the smallest positive number, which sends β̃ to its
    bound instead of NaN.
    """
    if not isinstance(grad, torch.Tensor) or not isinstance(prev_grad, torch.Tensor):
        raise TypeError("grad and prev_grad must be tensors")
    if grad.shape != prev_grad.shape:
        raise ValueError(f"grad and prev_grad must have the same shape, got {tuple(grad.shape)} and "
                         f"{tuple(prev_grad.shape)}")
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    keepdim = dim is not None
    diff = torch.linalg.vector_norm(grad - prev_grad, dim=dim, keepdim=keepdim)
    prev = torch.linalg.vector_norm(prev_grad, dim=dim, keepdim=keepdim)
    ratio = diff / prev.clamp_min(torch.finfo(prev.dtype).tiny)
    return ((1.0 - torch.sqrt(ratio)) ** 2).clamp(0.0, 1.0 - delta)


def returns_final_state(attn: nn.Module) -> bool:
    """Whether ``attn.forward`` takes ``initial_state``/``output_final_state`` (the prefill hook)."""
    params = inspect.signature(attn.forward).parameters
    return "initial_state" in params and "output_final_state" in params


def attention_prefill(attn: nn.Module, x: torch.Tensor, p: Any = None, state: Any = None):
    """Run a causal attention over all of x (batch, n, d) → (y, state), the state ``attn.step`` continues from.

    One parallel call ``attn(x, p, None, initial_state=state, output_final_state=True)`` where the
    module supports it (it returns ``(y, p, state)``, an ``AttentionOutput``); otherwise ``attn.step``
    position by position (same result, n calls).
    """
    if returns_final_state(attn):
        y, _, state = attn(x, p, None, initial_state=state, output_final_state=True)
        return y, state
    outputs = []
    for t in range(x.shape[1]):
        y_t, state = attn.step(x[:, t], p, state)
        outputs.append(y_t)
    return torch.stack(outputs, dim=1), state


class Carry(NamedTuple):
    """What a layer passes to the next for the momentum connection: its input x_ℓ and its V̂_ℓ."""

    x: torch.Tensor | None = None
    v_hat: torch.Tensor | None = None


class FeedForward(nn.Sequential):
    """Linear → activation → dropout → Linear → dropout (the position-wise FFN)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str):
        act = nn.GELU() if activation == "gelu" else nn.ReLU()
        super().__init__(nn.Linear(d_model, d_ff), act, nn.Dropout(dropout), nn.Linear(d_ff, d_model),
                         nn.Dropout(dropout))


class TransformerLayer(nn.Module):
    """Attention + FFN with a residual, momentum or adaptive-momentum connection (see the module docstring)."""

    def __init__(self, cfg: ModelConfig, *, causal: bool = False, max_length: int | None = None):
        super().__init__()
        if cfg.connection == "adaptive" and cfg.adaptive_over == "sample" and causal:
            raise ValueError("adaptive_over='sample' lets each position see the whole sample; a causal model "
                             "needs adaptive_over='token'")
        self.cfg = cfg
        self.attn = build_attention(cfg.attention, cfg.d_model, cfg.n_heads,
                                    **attention_kwargs(cfg, causal, max_length))
        self.norm1, self.norm2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)
        self.drop = nn.Dropout(cfg.dropout)

    def momentum_beta(self, v_hat: torch.Tensor, carry: Carry, keep: torch.Tensor | None):
        """β̃ of this layer: a constant, or eq. 18 from V̂_ℓ and V̂_{ℓ−1} (detached)."""
        cfg = self.cfg
        if cfg.connection == "momentum":
            return cfg.connection_beta
        if carry.v_hat is None:
            return 0.0
        now, before = v_hat.detach(), carry.v_hat.detach()
        if cfg.adaptive_over == "token":
            return adaptive_momentum(now, before, delta=cfg.adaptive_delta, dim=-1)
        if keep is not None:  # padding must not count in a per-sample norm
            now, before = now * keep, before * keep
        return adaptive_momentum(now, before, delta=cfg.adaptive_delta, dim=tuple(range(1, now.dim())))

    def connect(self, x: torch.Tensor, v_hat: torch.Tensor, carry: Carry, keep=None) -> torch.Tensor:
        """h = x + V̂ (residual), or x + γ̃·V̂ + β̃·(x − x_prev) (eq. 15, docs/design.md §6.3)."""
        if self.cfg.connection == "residual":
            return x + v_hat
        h = x + self.cfg.connection_gamma * v_hat
        if carry.x is not None:
            h = h + self.momentum_beta(v_hat, carry, keep) * (x - carry.x)
        return h

    def _finish(self, x, v_hat, carry, keep):
        v_hat = self.drop(v_hat)
        h = self.connect(x, v_hat, carry, keep)
        if self.cfg.norm == "pre":
            out = h + self.ff(self.norm2(h))
        else:
            h = self.norm1(h)
            out = self.norm2(h + self.ff(h))
        return out, Carry(x, v_hat)

    def forward(self, x, carry: Carry = Carry(), p: Any = None, key_padding_mask=None):
        """(batch, n, d) → (x_{ℓ+1}, carry for the next layer, p unchanged)."""
        v_hat, p, _ = self.attn(self.norm1(x) if self.cfg.norm == "pre" else x, p, key_padding_mask)
        keep = None if key_padding_mask is None else (~key_padding_mask)[..., None].to(x.dtype)
        out, carry = self._finish(x, v_hat, carry, keep)
        return out, carry, p

    def step(self, x_t, carry: Carry = Carry(), state: Any = None):
        """One position (batch, d) of a causal layer, with the attention's recurrent/cached state."""
        v_hat, state = self.attn.step(self.norm1(x_t) if self.cfg.norm == "pre" else x_t, None, state)
        out, carry = self._finish(x_t, v_hat, carry, None)
        return out, carry, state

    def prefill(self, x, carry: Carry = Carry(), state: Any = None):
        """All positions (batch, n, d) of a causal layer at once, returning the state ``step`` continues from."""
        v_hat, state = attention_prefill(self.attn, self.norm1(x) if self.cfg.norm == "pre" else x, None, state)
        out, carry = self._finish(x, v_hat, carry, None)
        return out, carry, state


class LunaLayer(nn.Module):
    """A Luna layer carrying (x, p), post-LN (Luna eq. 6; fairseq-apollo ``fairseq/modules/luna_layer.py``,
    docs/reference-implementations.md §3).

        Y_X, Y_P = LunaAttn(X, P)
        X' = LN(X + Y_X),   X'' = LN(X' + FFN(X'))
        P' = LN_p(P + Y_P)            (its own LayerNorm; no FFN on P)

    Causal (decoder-only, Luna §3.3): P must not see X, so each layer owns a learned P
    (``self.p``, l × d) and the P that comes in is ignored; nothing is packed forward.
    """

    def __init__(self, cfg: ModelConfig, *, causal: bool = False, max_length: int | None = None):
        super().__init__()
        self.cfg, self.causal = cfg, causal
        self.attn = build_attention(cfg.attention, cfg.d_model, cfg.n_heads,
                                    **attention_kwargs(cfg, causal, max_length))
        self.norm1, self.norm2, self.norm_p = (nn.LayerNorm(cfg.d_model) for _ in range(3))
        self.ff = FeedForward(cfg.d_model, cfg.d_ff, cfg.dropout, cfg.activation)
        self.drop = nn.Dropout(cfg.dropout)
        if causal:
            self.p = nn.Parameter(torch.randn(cfg.luna_length, cfg.d_model) * cfg.d_model ** -0.5)

    def _finish(self, x, y_x):
        x = self.norm1(x + self.drop(y_x))
        return self.norm2(x + self.ff(x))

    def forward(self, x, carry: Carry = Carry(), p=None, key_padding_mask=None):
        if self.causal:
            p = self.p[None]
        y_x, y_p, _ = self.attn(x, p, key_padding_mask)
        x = self._finish(x, y_x)
        if y_p is not None:
            p = self.norm_p(p + self.drop(y_p))
        return x, carry, p

    def step(self, x_t, carry: Carry = Carry(), state: Any = None):
        y_t, state = self.attn.step(x_t, self.p[None], state)
        return self._finish(x_t, y_t), carry, state

    def prefill(self, x, carry: Carry = Carry(), state: Any = None):
        y, state = attention_prefill(self.attn, x, self.p[None], state)
        return self._finish(x, y), carry, state


class Encoder(nn.Module):
    """N layers (+ the final LayerNorm); the momentum carry and Luna's P flow from layer to layer.

    Non-causal Luna starts from a learned P (``p0``, l × d; Luna §3, "initial P as learned
    embeddings", N(0, d^−½) like the official ``projected_embeddings``). With ``embed_scale`` it is embedded
    as the tokens are (fairseq-apollo ``LunaLRAEncoder``): P₀ = LN_P(√d·p0 + sinusoids), the LayerNorm
    only with ``embed_norm`` and the sinusoids only with ``position="sinusoidal"``.
    """

    def __init__(self, cfg: ModelConfig, *, causal: bool = False, max_length: int | None = None):
        super().__init__()
        cfg.validate()
        self.cfg, self.causal = cfg, causal
        carries_p = attention_spec(cfg.attention).extra_sequence
        Layer = LunaLayer if carries_p else TransformerLayer
        self.layers = nn.ModuleList(Layer(cfg, causal=causal, max_length=max_length) for _ in range(cfg.layers))
        for layer in self.layers[1:]:  # parameters shared across layers (Linformer's layerwise E)
            if hasattr(layer.attn, "share_across_layers"):
                layer.attn.share_across_layers(self.layers[0].attn)
        self.final_norm = nn.LayerNorm(cfg.d_model) if cfg.final_norm else nn.Identity()
        self.p0 = None
        if carries_p and not causal:
            self.p0 = nn.Parameter(torch.randn(cfg.luna_length, cfg.d_model) * cfg.d_model ** -0.5)
            self.p_drop = nn.Dropout(cfg.dropout)
            if cfg.embed_scale:
                positions = sinusoids(cfg.luna_length, cfg.d_model) if cfg.position == "sinusoidal" else None
                self.register_buffer("p_positions", positions, persistent=False)
                self.p_norm = nn.LayerNorm(cfg.d_model) if cfg.embed_norm else nn.Identity()

    def initial_p(self) -> torch.Tensor | None:
        """Luna's P before the first layer, (l, d), before dropout; None for every other attention."""
        if self.p0 is None or not self.cfg.embed_scale:
            return self.p0
        p = self.p0 * math.sqrt(self.cfg.d_model)
        if self.p_positions is not None:
            p = p + self.p_positions.to(p.dtype)
        return self.p_norm(p)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None):
        """(batch, n, d) → (x, p): p is the final packed sequence for non-causal Luna, else None."""
        p = None if self.p0 is None else self.p_drop(self.initial_p().expand(x.shape[0], -1, -1))
        carry = Carry()
        for layer in self.layers:
            x, carry, p = layer(x, carry, p, key_padding_mask)
        return self.final_norm(x), p

    def prefill(self, x: torch.Tensor, states: list | None = None):
        """All positions (batch, n, d) of a causal stack at once → (hidden states, per-layer states for ``step``).

        Each layer runs its attention's parallel form and returns its final recurrent state (a
        layer whose attention lacks that hook steps through x instead), so ``step`` continues
        exactly where the prompt ended.
        """
        if not self.causal:
            raise RuntimeError("prefill() needs a causal Encoder (Encoder(cfg, causal=True))")
        states = [None] * len(self.layers) if states is None else list(states)
        carry = Carry()
        for i, layer in enumerate(self.layers):
            x, carry, states[i] = layer.prefill(x, carry, states[i])
        return self.final_norm(x), states

    def step(self, x_t: torch.Tensor, states: list | None = None):
        """One position through every layer: states[ℓ] is layer ℓ's attention state (None at start)."""
        states = [None] * len(self.layers) if states is None else list(states)
        carry = Carry()
        for i, layer in enumerate(self.layers):
            x_t, carry, states[i] = layer.step(x_t, carry, states[i])
        return self.final_norm(x_t), states
