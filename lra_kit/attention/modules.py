"""Multi-head modules around the attention functions, with one interface for the models.

Every module built by :func:`lra_kit.attention.build_attention` has

    forward(x, p=None, key_padding_mask=None) -> AttentionOutput(out, p, None)
    forward(x, p, key_padding_mask, initial_state=state, output_final_state=True) -> AttentionOutput(out, p, state)
                                                            (causal modules: prefill, or a sequence in pieces)
    step(x_t, p=None, state=None) -> (y_t, state)          (causal modules; generation)

``forward`` always returns three values, whatever its flags: an :class:`AttentionOutput`, a named tuple
that unpacks as ``y, p, state = attn(x)``. ``state`` is None unless ``output_final_state=True``. The state
that ``forward`` returns is exactly what ``step`` takes, and the other way round: a prompt is prefilled
in one parallel call, then continued token by token.

``p`` is Luna's extra sequence; the other attentions pass it through untouched, so a model can
treat every attention alike. ``x`` is (batch, length, d_model), ``x_t`` is (batch, d_model).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import torch
import torch.nn as nn

from lra_kit.attention.checks import check_momentum
from lra_kit.attention.feature_maps import get_feature_map
from lra_kit.attention.heads import merge_heads, split_heads
from lra_kit.attention.linear import linear_attention, linear_attention_step
from lra_kit.attention.momentum import momentum_attention, momentum_attention_step
from lra_kit.attention.softmax import softmax_attention


class AttentionOutput(NamedTuple):
    """What every attention module's ``forward`` returns, always these three (``y, p, state = attn(x)``).

    - ``out``: the attention output y, (batch, length, d_model);
    - ``p``: Luna's extra sequence: non-causal Luna's packed context (batch, l, d_model), None for causal
      Luna; every other module passes its ``p`` argument through unchanged;
    - ``state``: None unless ``forward`` was called with ``output_final_state=True`` (causal modules only);
      then the state after the last position, the one ``step`` continues from.
    """

    out: torch.Tensor
    p: Any
    state: Any


class KVCache(NamedTuple):
    """Softmax attention's step state: all keys and values so far (it grows with t)."""

    k: torch.Tensor
    v: torch.Tensor


class MultiheadAttention(nn.Module):
    """Q, K, V, O projections (Katharopoulos eq. 2) around one attention function, split in heads.

    Subclasses define ``attend(q, k, v, key_padding_mask)`` on (batch, heads, length, head_dim)
    tensors and ``attend_step(q_t, k_t, v_t, state)`` on (batch, heads, head_dim).
    """

    def __init__(self, d_model: int, n_heads: int, *, causal: bool = False, head_dim: int | None = None):
        super().__init__()
        if not isinstance(n_heads, int) or n_heads < 1:
            raise ValueError(f"n_heads must be a positive int, got {n_heads!r}")
        if head_dim is None:
            if d_model % n_heads:
                raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads} (or give head_dim)")
            head_dim = d_model // n_heads
        self.d_model, self.n_heads, self.head_dim, self.causal = d_model, n_heads, head_dim, causal
        inner = n_heads * head_dim
        self.W_q = nn.Linear(d_model, inner)
        self.W_k = nn.Linear(d_model, inner)
        self.W_v = nn.Linear(d_model, inner)
        self.W_o = nn.Linear(inner, d_model)

    def forward(self, x: torch.Tensor, p: Any = None, key_padding_mask: torch.Tensor | None = None, *,
                initial_state: Any = None, output_final_state: bool = False) -> AttentionOutput:
        """x (batch, length, d_model) → ``AttentionOutput(out, p, state)``, always three values.

        ``out`` is the attention output (batch, length, d_model); ``p`` is the argument, passed through
        untouched (Luna's extra sequence; these modules do not read it); ``state`` is None unless
        ``output_final_state=True``. A causal module starts from ``initial_state`` (None: the start of a
        sequence) and, asked for it, returns its state after the last position — the state ``step`` takes.
        ``initial_state``/``output_final_state`` on a non-causal module are a ValueError.
        """
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, length, {self.d_model}), got {tuple(x.shape)}")
        stateful = initial_state is not None or bool(output_final_state)
        if stateful and not self.causal:
            raise ValueError("initial_state/output_final_state need a causal module (causal=True)")
        q, k, v = (split_heads(W(x), self.n_heads) for W in (self.W_q, self.W_k, self.W_v))
        if not stateful:
            return AttentionOutput(self.W_o(merge_heads(self.attend(q, k, v, key_padding_mask))), p, None)
        out, state = self.attend_with_state(q, k, v, key_padding_mask, initial_state)
        return AttentionOutput(self.W_o(merge_heads(out)), p, state if output_final_state else None)

    def step(self, x_t: torch.Tensor, p: Any = None, state: Any = None):
        """One position x_t (batch, d_model) of a causal module → ``(y_t, state)``; ``state=None`` starts a sequence."""
        if not self.causal:
            raise RuntimeError(f"{type(self).__name__}.step needs a causal module (causal=True)")
        if x_t.dim() != 2 or x_t.shape[-1] != self.d_model:
            raise ValueError(f"x_t must have shape (batch, {self.d_model}), got {tuple(x_t.shape)}")
        q, k, v = (split_heads(W(x_t), self.n_heads) for W in (self.W_q, self.W_k, self.W_v))
        out, state = self.attend_step(q, k, v, state)
        return self.W_o(merge_heads(out)), state

    def attend(self, q, k, v, key_padding_mask):  # pragma: no cover - abstract
        raise NotImplementedError

    def attend_step(self, q_t, k_t, v_t, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def attend_with_state(self, q, k, v, key_padding_mask, state):  # pragma: no cover - abstract
        """Causal attention over (batch, heads, length, head_dim) from ``state`` → (out, final state)."""
        raise NotImplementedError


class SoftmaxAttention(MultiheadAttention):
    """Softmax attention (SDPA) with attention dropout; generation keeps a key/value cache."""

    def __init__(self, d_model, n_heads, *, causal=False, head_dim=None, dropout: float = 0.0):
        super().__init__(d_model, n_heads, causal=causal, head_dim=head_dim)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.dropout = dropout

    def attend(self, q, k, v, key_padding_mask):
        drop = self.dropout if self.training else 0.0
        return softmax_attention(q, k, v, causal=self.causal, key_padding_mask=key_padding_mask, dropout_p=drop)

    def attend_with_state(self, q, k, v, key_padding_mask, state):
        if state is None:
            return self.attend(q, k, v, key_padding_mask), KVCache(k, v)
        if key_padding_mask is not None:
            raise ValueError("key_padding_mask cannot be combined with a KV-cache initial_state")
        # The new queries see every cached key and, causally, the new keys: query i sits at position offset + i.
        offset, n = state.k.shape[2], q.shape[2]
        k, v = torch.cat([state.k, k], dim=2), torch.cat([state.v, v], dim=2)
        position = offset + torch.arange(n, device=q.device)[:, None]
        allowed = torch.arange(offset + n, device=q.device)[None, :] <= position
        drop = self.dropout if self.training else 0.0
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=drop)
        return out, KVCache(k, v)

    def attend_step(self, q_t, k_t, v_t, state):
        k = k_t[:, :, None] if state is None else torch.cat([state.k, k_t[:, :, None]], dim=2)
        v = v_t[:, :, None] if state is None else torch.cat([state.v, v_t[:, :, None]], dim=2)
        out = softmax_attention(q_t[:, :, None], k, v)[:, :, 0]
        return out, KVCache(k, v)


class LinearAttention(MultiheadAttention):
    """Linear attention (Katharopoulos et al. eqs. 5, 9); generation uses the RNN form (eqs. 16–20)."""

    def __init__(self, d_model, n_heads, *, causal=False, head_dim=None, feature_map="elu", eps: float = 1e-6,
                 compat: str | None = None):
        super().__init__(d_model, n_heads, causal=causal, head_dim=head_dim)
        self.feature_map, self.eps, self.compat = get_feature_map(feature_map), eps, compat

    def attend(self, q, k, v, key_padding_mask):
        return linear_attention(
            q, k, v, causal=self.causal, feature_map=self.feature_map, key_padding_mask=key_padding_mask, eps=self.eps,
            compat=self.compat,
        )[0]

    def attend_with_state(self, q, k, v, key_padding_mask, state):
        return linear_attention(q, k, v, causal=True, feature_map=self.feature_map, key_padding_mask=key_padding_mask,
                                eps=self.eps, compat=self.compat, initial_state=state, output_final_state=True)

    def attend_step(self, q_t, k_t, v_t, state):
        return linear_attention_step(q_t, k_t, v_t, state, feature_map=self.feature_map, eps=self.eps)


class MomentumAttention(MultiheadAttention):
    """Momentum attention (Nguyen et al. eqs. 13, 14); generation uses the heavy-ball RNN (eq. 12)."""

    def __init__(
        self, d_model, n_heads, *, beta: float, gamma: float = 1.0, causal=False, head_dim=None,
        feature_map="elu", eps: float = 1e-6, compat: str | None = None,
    ):
        super().__init__(d_model, n_heads, causal=causal, head_dim=head_dim)
        check_momentum(beta, gamma)
        self.beta, self.gamma, self.eps, self.compat = float(beta), float(gamma), eps, compat
        self.feature_map = get_feature_map(feature_map)  # a module: a random-feature map moves and saves with this one

    def attend(self, q, k, v, key_padding_mask):
        return momentum_attention(
            q, k, v, beta=self.beta, gamma=self.gamma, causal=self.causal, feature_map=self.feature_map,
            key_padding_mask=key_padding_mask, eps=self.eps, compat=self.compat,
        )[0]

    def attend_with_state(self, q, k, v, key_padding_mask, state):
        return momentum_attention(
            q, k, v, beta=self.beta, gamma=self.gamma, causal=True, feature_map=self.feature_map,
            key_padding_mask=key_padding_mask, eps=self.eps, compat=self.compat, initial_state=state,
            output_final_state=True,
        )

    def attend_step(self, q_t, k_t, v_t, state):
        if self.compat is not None:
            raise RuntimeError(f"compat={self.compat!r} has no recurrent form (it is not eq. 12)")
        return momentum_attention_step(
            q_t, k_t, v_t, state, beta=self.beta, gamma=self.gamma, feature_map=self.feature_map, eps=self.eps
        )
