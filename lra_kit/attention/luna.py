"""Luna: Linear Unified Nested Attention (Ma et al. 2021).

Pack (eq. 3):   Y_P = Attn(P, X)     — l queries from P summarise the n positions of X
Unpack (eq. 4): Y_X = Attn(X, Y_P)   — each position of X reads the l packed vectors
Both are O(l·n). Projections follow the official code (fairseq-apollo ``fairseq/modules/luna_attention.py``,
``LunarMultiheadAttention``; docs/reference-implementations.md §3 and docs/design.md §6.5): P is only the
pack *query* (``pq_proj``); pack keys/values come from X (``pc_proj`` tied, or ``pk_proj``/``pv_proj``);
the packed context is *not* output-projected — it is returned as Y_P and becomes the next layer's P
through its own residual + LayerNorm (eq. 6); unpack keys/values come from Y_P (``c_proj`` tied, or
``k_proj``/``v_proj``).

Causal Luna (§3.3, eq. 7) uses the causal function f(X, Y, Z)_t = (1/t) X_t Σ_{j≤t} Y_jᵀ Z_j:
    A_pack   = ω(K_c · P_qᵀ / √d)          (ω = softplus or elu+1, never softmax)
    A_unpack = softmax(f(Q, K, A_pack))      (softmax over the l packed slots)
    Y        = f(A_unpack, A_pack, V)
Each f is a causal product divided by t, computed with the chunked constant-memory causal
product, so the parallel form runs in O(n) memory and the step form keeps a state of fixed
size (two d × l matrices per head and the count t) however long the sequence grows. t counts
the *real* tokens so far: padding writes nothing into the running sums and is not counted, so
a left- or right-padded sequence gives the same outputs at its real positions as unpadded.

Derived in the book, chapters "Luna: pack and unpack" (``sec-luna``) and "Causal Luna" (``sec-causal-luna``).
"""
from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from lra_kit.attention.causal.op import causal_product
from lra_kit.attention.causal.op import DEFAULT_CHUNK_SIZE
from lra_kit.attention.feature_maps import elu_plus_one
from lra_kit.attention.heads import merge_heads, split_heads
from lra_kit.attention.modules import AttentionOutput
from lra_kit.attention.softmax import softmax_attention

PACK_ACTIVATIONS = ("softplus", "elu")


def pack_activation(scores: torch.Tensor, name: str) -> torch.Tensor:
    """ω of causal packing. ``softplus`` uses β = ln 2 as the official code does, so ω(0) = 1 like elu+1."""
    if name == "softplus":
        return F.softplus(scores, beta=math.log(2.0))
    if name == "elu":
        return elu_plus_one(scores)
    raise ValueError(f"pack_activation must be one of {PACK_ACTIVATIONS}, got {name!r}")


def pack_weights(pack_key: torch.Tensor, pack_query: torch.Tensor, activation: str = "softplus") -> torch.Tensor:
    """A_pack = ω(K_c P_qᵀ / √d) of Luna §3.3: (B, H, n, d) and (B or 1, H, l, d) → (B, H, n, l).

    Row j says how strongly position j writes into each of the l slots. ω is positive and acts
    on each score alone, so row j depends on x_j and P only — no normaliser over positions.
    """
    scale = pack_key.shape[-1] ** -0.5
    return pack_activation(pack_key @ pack_query.transpose(-1, -2) * scale, activation)


def _state_dtype(dtype: torch.dtype) -> torch.dtype:
    # Counts and running sums reach the sequence length: float16 holds integers exactly only up to 2048.
    return torch.promote_types(dtype, torch.float32)


def real_token_counts(
    key_padding_mask: torch.Tensor | None, batch: int, n: int, *, start: torch.Tensor | None = None,
    device: torch.device | None = None,
) -> torch.Tensor:
    """t_i = start + (number of real tokens among positions 1..i), shape (batch, n), int64.

    This is the t of Luna eq. 7 for padded batches: counting padding would make a real token's
    output depend on how much padding stands before it.
    """
    real = torch.ones(batch, n, dtype=torch.long, device=device) if key_padding_mask is None \
        else (~key_padding_mask).long()
    counts = torch.cumsum(real, dim=1)
    return counts if start is None else counts + start[:, None]


def causal_mean_product(
    x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, chunk_size: int = DEFAULT_CHUNK_SIZE, *,
    counts: torch.Tensor | None = None, initial: torch.Tensor | None = None,
) -> torch.Tensor:
    """Luna eq. 7: F_t = (1/t) X_t (S_0 + Σ_{j≤t} Y_jᵀ Z_j), for (batch, heads, n, ·) tensors.

    t counts from 1 at the first position, or is given per position by ``counts`` (batch, n)
    (see :func:`real_token_counts`; a count of 0, no real token yet, divides by 1). ``initial``
    is S_0 (batch, heads, d_y, d_z), the sum carried over from earlier positions (default 0).
    """
    if counts is None:
        t = torch.arange(1, x.shape[2] + 1, device=x.device, dtype=_state_dtype(x.dtype))[:, None]
    else:
        t = counts.to(_state_dtype(x.dtype)).clamp_min(1.0)[:, None, :, None]
    total = causal_product(x, y, z, chunk_size=chunk_size)[0].to(t.dtype)
    if initial is not None:
        total = total + x.to(t.dtype) @ initial.to(t.dtype)
    return (total / t).to(z.dtype)


class LunaState(NamedTuple):
    """State of causal Luna after t real tokens (eq. 7 as a recurrence), per sample and head.

    ``key_pack``   Σ_{j≤t} k_j a_jᵀ, (batch, heads, d, l)
    ``pack_value`` Σ_{j≤t} a_j v_jᵀ, (batch, heads, l, d)
    ``t``          the number of real tokens summed, (batch,) int64
    The sums are kept in float32 at least (see ``_state_dtype``). Its size does not depend on t.
    """

    key_pack: torch.Tensor
    pack_value: torch.Tensor
    t: torch.Tensor


def _check_luna_inputs(q, k, v, pack_key, pack_query) -> None:
    named = (("q", q), ("k", k), ("v", v), ("pack_key", pack_key), ("pack_query", pack_query))
    for name, x in named:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        if x.dim() != 4 or not x.is_floating_point():
            raise ValueError(f"{name} must be a floating tensor (batch, heads, length, dim), got {tuple(x.shape)} "
                             f"{x.dtype}")
    if len({x.dtype for _, x in named}) != 1:
        raise TypeError(f"q, k, v, pack_key, pack_query must share a dtype, got {[x.dtype for _, x in named]}")
    B, H, n = q.shape[:3]
    for name, x in named[1:4]:
        if x.shape[:3] != (B, H, n):
            raise ValueError(f"{name} must have (batch, heads, length) = {(B, H, n)} like q, got {tuple(x.shape[:3])}")
    if n < 1:
        raise ValueError("sequences must have length >= 1")
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(f"q and k must have the same last dim, got {q.shape[-1]} and {k.shape[-1]}")
    if pack_query.shape[0] not in (1, B) or pack_query.shape[1] != H or pack_query.shape[-1] != pack_key.shape[-1]:
        raise ValueError(f"pack_query must have shape (1 or {B}, {H}, l, {pack_key.shape[-1]}), "
                         f"got {tuple(pack_query.shape)}")


def _check_state(state, batch: int, heads: int, d_k: int, length: int, d_v: int) -> None:
    if state is None:
        return
    if not isinstance(state, LunaState):
        raise TypeError(f"the state of causal Luna must be a LunaState, got {type(state).__name__}")
    expected = {"key_pack": (batch, heads, d_k, length), "pack_value": (batch, heads, length, d_v), "t": (batch,)}
    for name, shape in expected.items():
        value = getattr(state, name)
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape:
            got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise ValueError(f"state.{name} must have shape {shape}, got {got}")


def _causal_luna(q, k, v, pack_key, pack_query, key_pack, pack_value, counts, keep, *,
                 activation: str, dropout_p: float, chunk_size: int, final: bool):
    """The body of :func:`causal_luna_attention` (run under activation checkpointing when training)."""
    a_pack = pack_weights(pack_key, pack_query, activation)
    if keep is not None:
        a_pack = a_pack * keep  # a padded position writes nothing into either running sum
    q = q * q.shape[-1] ** -0.5
    a_unpack = torch.softmax(causal_mean_product(q, k, a_pack, chunk_size, counts=counts, initial=key_pack), dim=-1)
    if dropout_p > 0.0:
        a_unpack = F.dropout(a_unpack, dropout_p)
    out = causal_mean_product(a_unpack, a_pack, v, chunk_size, counts=counts, initial=pack_value)
    if not final:
        return out
    sd = _state_dtype(q.dtype)
    key_pack_n = k.transpose(-1, -2).to(sd) @ a_pack.to(sd)
    pack_value_n = a_pack.transpose(-1, -2).to(sd) @ v.to(sd)
    if key_pack is not None:
        key_pack_n, pack_value_n = key_pack_n + key_pack, pack_value_n + pack_value
    return out, key_pack_n, pack_value_n


def causal_luna_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    pack_key: torch.Tensor,
    pack_query: torch.Tensor,
    *,
    pack_activation: str = "softplus",
    key_padding_mask: torch.Tensor | None = None,
    initial_state: LunaState | None = None,
    output_final_state: bool = False,
    dropout_p: float = 0.0,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
) -> tuple[torch.Tensor, LunaState | None]:
    """Causal Luna (Ma et al. §3.3, eq. 7), all positions at once:

        A_pack   = ω(K_c P_qᵀ / √d)                                   (:func:`pack_weights`)
        A_unpack = softmax(f(Q/√d, K, A_pack))                          softmax over the l slots
        Y        = f(A_unpack, A_pack, V)

    with f of eq. 7 (:func:`causal_mean_product`), t_i the number of real tokens up to i (padding,
    ``key_padding_mask`` True, is neither summed nor counted) and the running sums starting from
    ``initial_state`` (K_0, P_0, t_0) — zero when None. ``q, k, v, pack_key`` are (batch, heads, n, d),
    raw projections (q is scaled inside, like SDPA); ``pack_query`` is (batch or 1, heads, l, d).
    Returns ``(Y, state)``, always two values: Y is (batch, heads, n, d); ``state`` is None unless
    ``output_final_state=True``, and then the :class:`LunaState` after the last position, exactly what
    :func:`causal_luna_step` takes and returns, so running a sequence in two parts (the second from the first's
    final state) equals running it whole.

    Memory: saved for backward are only the inputs (q, k, v, pack_key, pack_query and the small
    initial state) — four (n × d) tensors per head, what softmax attention keeps. A_pack, the unpack
    logits and A_unpack, three (n × l) tensors per head, are not kept: backward re-runs this function's
    forward (activation checkpointing, ``torch.utils.checkpoint``; dropout masks are replayed from the
    saved RNG state) and differentiates it, each causal product with its constant-memory gradient
    (Katharopoulos et al. §3.3.1). The price is one extra forward of this function, about a third more
    compute than storing them; gradients reach the initial state as well.
    """
    _check_luna_inputs(q, k, v, pack_key, pack_query)
    if pack_activation not in PACK_ACTIVATIONS:
        raise ValueError(f"pack_activation must be one of {PACK_ACTIVATIONS}, got {pack_activation!r}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p}")
    B, H, n, d = k.shape
    if key_padding_mask is not None:
        if not isinstance(key_padding_mask, torch.Tensor) or key_padding_mask.dtype != torch.bool:
            raise TypeError("key_padding_mask must be a bool tensor (True marks padding)")
        if tuple(key_padding_mask.shape) != (B, n):
            raise ValueError(f"key_padding_mask must have shape (batch, length) = {(B, n)}, "
                             f"got {tuple(key_padding_mask.shape)}")
    _check_state(initial_state, B, H, d, pack_query.shape[2], v.shape[-1])
    key_pack, pack_value, t0 = (None, None, None) if initial_state is None else initial_state
    counts = real_token_counts(key_padding_mask, B, n, start=t0, device=q.device)
    keep = None if key_padding_mask is None else (~key_padding_mask)[:, None, :, None].to(q.dtype)
    body = partial(_causal_luna, activation=pack_activation, dropout_p=dropout_p, chunk_size=chunk_size,
                   final=output_final_state)
    tensors = (q, k, v, pack_key, pack_query, key_pack, pack_value, counts, keep)
    needs_grad = torch.is_grad_enabled() and any(
        isinstance(x, torch.Tensor) and x.requires_grad for x in tensors)
    result = checkpoint(body, *tensors, use_reentrant=False) if needs_grad else body(*tensors)
    if not output_final_state:
        return result, None
    out, key_pack_n, pack_value_n = result
    return out, LunaState(key_pack_n, pack_value_n, counts[:, -1])


def causal_luna_step(
    q_t: torch.Tensor,
    k_t: torch.Tensor,
    v_t: torch.Tensor,
    pack_key_t: torch.Tensor,
    pack_query: torch.Tensor,
    state: LunaState | None = None,
    *,
    pack_activation: str = "softplus",
) -> tuple[torch.Tensor, LunaState]:
    """One real token of causal Luna, eq. 7 as a recurrence (Luna §3.3):

        a_t = ω(c_t · P_qᵀ/√d),   K_t = K_{t−1} + k_t a_tᵀ,   P_t = P_{t−1} + a_t v_tᵀ,
        y_t = softmax((q_t/√d) K_t / t) P_t / t.

    ``q_t, k_t, v_t, pack_key_t`` are (batch, heads, d), ``pack_query`` (batch or 1, heads, l, d);
    ``state=None`` starts from zero sums and t = 0. Returns (y_t (batch, heads, d), state).
    """
    for name, x in (("q_t", q_t), ("k_t", k_t), ("v_t", v_t), ("pack_key_t", pack_key_t)):
        if not isinstance(x, torch.Tensor) or x.dim() != 3:
            got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"{name} must be a tensor of shape (batch, heads, dim), got {got}")
    _check_luna_inputs(q_t[:, :, None], k_t[:, :, None], v_t[:, :, None], pack_key_t[:, :, None], pack_query)
    B, H, d = k_t.shape
    _check_state(state, B, H, d, pack_query.shape[2], v_t.shape[-1])
    sd = _state_dtype(q_t.dtype)
    a = pack_weights(pack_key_t[:, :, None], pack_query, pack_activation)[:, :, 0].to(sd)  # (B, H, l)
    if state is None:
        key_pack = a.new_zeros(B, H, d, a.shape[-1])
        pack_value = a.new_zeros(B, H, a.shape[-1], v_t.shape[-1])
        t = torch.zeros(B, dtype=torch.long, device=a.device)
    else:
        key_pack, pack_value, t = state
    key_pack = key_pack + k_t.to(sd)[..., :, None] * a[..., None, :]
    pack_value = pack_value + a[..., :, None] * v_t.to(sd)[..., None, :]
    t = t + 1
    count = t.to(sd)[:, None, None]
    q = q_t.to(sd) * d ** -0.5
    a_unpack = torch.softmax((q[..., None, :] @ key_pack).squeeze(-2) / count, dim=-1)
    out = (a_unpack[..., None, :] @ pack_value).squeeze(-2) / count
    return out.to(v_t.dtype), LunaState(key_pack, pack_value, t)


class LunaAttention(nn.Module):
    """Luna attention: pack (eq. 3) then unpack (eq. 4), or causal Luna (§3.3, eq. 7).

    ``forward(x, p, key_padding_mask=None) -> AttentionOutput(y_x, y_p, state)``, always three values, for
    x (batch, n, d_model) and p (batch or 1, l, d_model). Non-causal: y_p is the packed context
    (batch, l, d_model) and state is None. Causal: P must carry no information about X (Luna §3.3;
    decoder-only P is a per-layer parameter), so no packed context is produced and y_p is None;
    ``forward(..., initial_state=..., output_final_state=True) -> AttentionOutput(y_x, None, LunaState)``
    continues from and returns the recurrent state (state is None without ``output_final_state``), and
    ``step`` generates one position at a time with that state.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        causal: bool = False,
        tie_kv: bool = False,
        n_pack_heads: int | None = None,
        dropout: float = 0.0,
        pack_activation: str = "softplus",
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ):
        super().__init__()
        n_pack_heads = n_heads if n_pack_heads is None else n_pack_heads
        for name, heads in (("n_heads", n_heads), ("n_pack_heads", n_pack_heads)):
            if not isinstance(heads, int) or heads < 1 or d_model % heads:
                raise ValueError(f"{name} must be a positive divisor of d_model={d_model}, got {heads!r}")
        if causal and n_pack_heads != n_heads:
            raise ValueError("causal Luna uses n_heads for packing too; leave n_pack_heads unset")
        if pack_activation not in PACK_ACTIVATIONS:
            raise ValueError(f"pack_activation must be one of {PACK_ACTIVATIONS}, got {pack_activation!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        if not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
        self.d_model, self.n_heads, self.n_pack_heads = d_model, n_heads, n_pack_heads
        self.causal, self.tie_kv, self.dropout = causal, tie_kv, dropout
        self.pack_activation, self.chunk_size = pack_activation, chunk_size

        # Parameter names are those of the official code, so state dicts can be compared.
        self.pq_proj = nn.Linear(d_model, d_model)
        self.q_proj = nn.Linear(d_model, d_model)
        if tie_kv:
            self.pc_proj = nn.Linear(d_model, d_model)
            self.c_proj = nn.Linear(d_model, d_model)
        else:
            if causal:
                self.pc_proj = nn.Linear(d_model, d_model)  # pack scores (keys of the packing)
            else:
                self.pk_proj = nn.Linear(d_model, d_model)
                self.pv_proj = nn.Linear(d_model, d_model)
            self.k_proj = nn.Linear(d_model, d_model)
            self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # The official initialisation as of fairseq-apollo commit 035a360 (``LunarMultiheadAttention.reset_parameters``
        # in fairseq/modules/luna_attention.py; its zeroing of every bias was dropped in Oct 2021): weights
        # Xavier-uniform with gain 1/√2, out_proj with gain 1; out_proj's bias zero, every other bias left at
        # PyTorch's default for nn.Linear, U(−1/√fan_in, 1/√fan_in).
        for name, module in self.named_children():
            module.reset_parameters()
            nn.init.xavier_uniform_(module.weight, gain=1.0 if name == "out_proj" else 1.0 / math.sqrt(2.0))
        nn.init.zeros_(self.out_proj.bias)

    def _heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        return split_heads(x, heads)

    @staticmethod
    def _merge(x: torch.Tensor) -> torch.Tensor:
        return merge_heads(x)

    def _check(self, x: torch.Tensor, p: torch.Tensor) -> None:
        if not isinstance(p, torch.Tensor):
            raise TypeError("LunaAttention needs p, a tensor (batch, l, d_model)")
        for name, t in (("x", x), ("p", p)):
            if t.dim() != 3 or t.shape[-1] != self.d_model:
                raise ValueError(f"{name} must have shape (batch, length, {self.d_model}), got {tuple(t.shape)}")
        if p.shape[0] not in (1, x.shape[0]):
            raise ValueError(f"p must have batch size 1 or {x.shape[0]}, got {p.shape[0]}")

    def forward(
        self, x: torch.Tensor, p: torch.Tensor, key_padding_mask: torch.Tensor | None = None, *,
        initial_state: LunaState | None = None, output_final_state: bool = False,
    ) -> AttentionOutput:
        """x (batch, n, d_model), p (batch or 1, l, d_model) → ``AttentionOutput(y_x, y_p, state)``, always three.

        y_x is (batch, n, d_model); y_p the packed context (batch, l, d_model), None when causal; state
        None unless ``output_final_state=True`` (causal only), then the :class:`LunaState` ``step`` takes.
        """
        self._check(x, p)
        if self.causal:
            return self._causal_forward(x, p, key_padding_mask, initial_state, output_final_state)
        if initial_state is not None or output_final_state:
            raise ValueError("initial_state / output_final_state exist for causal Luna only (causal=True)")
        p = p.expand(x.shape[0], -1, -1)
        drop = self.dropout if self.training else 0.0
        # Pack, eq. 3: P queries X.
        pq = self._heads(self.pq_proj(p), self.n_pack_heads)
        if self.tie_kv:
            pk = pv = self._heads(self.pc_proj(x), self.n_pack_heads)
        else:
            pk = self._heads(self.pk_proj(x), self.n_pack_heads)
            pv = self._heads(self.pv_proj(x), self.n_pack_heads)
        packed = self._merge(softmax_attention(pq, pk, pv, key_padding_mask=key_padding_mask, dropout_p=drop))
        # Unpack, eq. 4: X queries the packed context.
        q = self._heads(self.q_proj(x), self.n_heads)
        if self.tie_kv:
            k = v = self._heads(self.c_proj(packed), self.n_heads)
        else:
            k = self._heads(self.k_proj(packed), self.n_heads)
            v = self._heads(self.v_proj(packed), self.n_heads)
        y = self.out_proj(self._merge(softmax_attention(q, k, v, dropout_p=drop)))
        return AttentionOutput(y, packed, None)

    def causal_projections(self, x: torch.Tensor, p: torch.Tensor):
        """q, k, v, the pack keys K_c (batch, heads, n, d) and the pack queries P_q (batch or 1, heads, l, d)."""
        pack_query = self._heads(self.pq_proj(p), self.n_heads)
        pack_key = self._heads(self.pc_proj(x), self.n_heads)
        q = self._heads(self.q_proj(x), self.n_heads)
        if self.tie_kv:
            k = v = self._heads(self.c_proj(x), self.n_heads)
        else:
            k, v = self._heads(self.k_proj(x), self.n_heads), self._heads(self.v_proj(x), self.n_heads)
        return q, k, v, pack_key, pack_query

    def _causal_forward(self, x, p, key_padding_mask, initial_state, output_final_state):
        q, k, v, pack_key, pack_query = self.causal_projections(x, p)
        out, state = causal_luna_attention(
            q, k, v, pack_key, pack_query, pack_activation=self.pack_activation, key_padding_mask=key_padding_mask,
            initial_state=initial_state, output_final_state=output_final_state,
            dropout_p=self.dropout if self.training else 0.0, chunk_size=self.chunk_size,
        )
        y = self.out_proj(self._merge(out))
        return AttentionOutput(y, None, state)  # state is None unless output_final_state

    def step(
        self, x_t: torch.Tensor, p: torch.Tensor, state: LunaState | None = None
    ) -> tuple[torch.Tensor, LunaState]:
        """One position of causal Luna: x_t (batch, d_model) → (y_t, state); the state has fixed size."""
        if not self.causal:
            raise RuntimeError("step() is defined for causal Luna only (LunaAttention(..., causal=True))")
        if not isinstance(x_t, torch.Tensor) or x_t.dim() != 2:
            raise ValueError(f"x_t must have shape (batch, d_model), got {tuple(getattr(x_t, 'shape', ()))}")
        self._check(x_t[:, None, :], p)
        q, k, v, pack_key, pack_query = self.causal_projections(x_t[:, None, :], p)
        out, state = causal_luna_step(q[:, :, 0], k[:, :, 0], v[:, :, 0], pack_key[:, :, 0], pack_query, state,
                                      pack_activation=self.pack_activation)
        return self.out_proj(out.reshape(out.shape[0], self.d_model)), state
