"""Luna: Linear Unified Nested Attention (Ma et al. 2021).

Pack (eq. 3):   Y_P = Attn(P, X)     — l queries from P summarise the n positions of X
Unpack (eq. 4): Y_X = Attn(X, Y_P)   — each position of X reads the l packed vectors
Both are O(l·n). Projections follow the official code (fairseq-apollo ``luna_attention.py``,
see notes §3): P is only the pack *query* (``pq_proj``); pack keys/values come from X
(``pc_proj`` tied, or ``pk_proj``/``pv_proj``); the packed context is *not* output-projected
— it is returned as Y_P and becomes the next layer's P through its own residual + LayerNorm
(eq. 6); unpack keys/values come from Y_P (``c_proj`` tied, or ``k_proj``/``v_proj``).

Causal Luna (§3.3, eq. 7) uses the causal function f(X, Y, Z)_t = (1/t) X_t Σ_{j≤t} Y_jᵀ Z_j:
    A_pack   = ω(pc_proj(X) · pq_proj(P)ᵀ / √d)          (ω = softplus or elu+1, never softmax)
    A_unpack = softmax(f(Q, K, A_pack))                    (softmax over the l packed slots)
    Y        = f(A_unpack, A_pack, V)
Each f is a causal product divided by t, computed here with the chunked constant-memory
causal product, so the parallel form runs in O(n) memory and the step form keeps a state
of fixed size (l × d per head) however long the sequence grows.

Derived in the book, chapters "Luna: pack and unpack" (``sec-luna``) and "Causal Luna" (``sec-causal-luna``).
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from lra_kit.attention.causal_product import DEFAULT_CHUNK_SIZE, causal_product
from lra_kit.attention.feature_maps import elu_plus_one
from lra_kit.attention.heads import merge_heads, split_heads
from lra_kit.attention.softmax import softmax_attention

PACK_ACTIVATIONS = ("softplus", "elu")


def pack_activation(scores: torch.Tensor, name: str) -> torch.Tensor:
    """ω of causal packing. ``softplus`` uses β = ln 2 as the official code does, so ω(0) = 1 like elu+1."""
    if name == "softplus":
        return F.softplus(scores, beta=math.log(2.0))
    if name == "elu":
        return elu_plus_one(scores)
    raise ValueError(f"pack_activation must be one of {PACK_ACTIVATIONS}, got {name!r}")


def causal_mean_product(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, chunk_size: int = DEFAULT_CHUNK_SIZE):
    """Luna eq. 7: F_t = (1/t) X_t Σ_{j≤t} Y_jᵀ Z_j, for (batch, heads, n, ·) tensors (t counts from 1)."""
    t = torch.arange(1, x.shape[2] + 1, device=x.device, dtype=x.dtype)[:, None]
    return causal_product(x, y, z, chunk_size=chunk_size) / t


class LunaState(NamedTuple):
    """Step state of causal Luna: Σ K_j A_jᵀ (B, H, d, l), Σ A_j V_jᵀ (B, H, l, d), and the step count t."""

    key_pack: torch.Tensor
    pack_value: torch.Tensor
    t: int


class LunaAttention(nn.Module):
    """Luna attention: pack (eq. 3) then unpack (eq. 4), or causal Luna (§3.3, eq. 7).

    ``forward(x, p, key_padding_mask=None) -> (y_x, y_p)`` for x (batch, n, d_model) and
    p (batch, l, d_model). Non-causal: y_p is the packed context (batch, l, d_model).
    Causal: P must carry no information about X (Luna §3.3; decoder-only P is a per-layer
    parameter), so no packed context is produced and y_p is None; ``step`` generates one
    position at a time with a state that does not grow.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        causal: bool = False,
        tie_kv: bool = False,
        n_pack_heads: Optional[int] = None,
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
        # Xavier-uniform with gain 1/√2, out_proj gain 1, zero biases (the official initialisation).
        for name, module in self.named_children():
            gain = 1.0 if name == "out_proj" else 1.0 / math.sqrt(2.0)
            nn.init.xavier_uniform_(module.weight, gain=gain)
            nn.init.zeros_(module.bias)

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
        self, x: torch.Tensor, p: torch.Tensor, key_padding_mask: Optional[torch.Tensor] = None
    ) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        self._check(x, p)
        p = p.expand(x.shape[0], -1, -1)
        if self.causal:
            return self._causal_forward(x, p, key_padding_mask), None
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
        return y, packed

    def _causal_inputs(self, x: torch.Tensor, p: torch.Tensor):
        """q, k, v (batch, heads, n, d) and the packing scores A_pack (batch, heads, n, l)."""
        scale = (self.d_model // self.n_heads) ** -0.5
        pq = self._heads(self.pq_proj(p), self.n_heads) * scale
        a_pack = pack_activation(self._heads(self.pc_proj(x), self.n_heads) @ pq.transpose(-1, -2), self.pack_activation)
        q = self._heads(self.q_proj(x), self.n_heads) * scale
        if self.tie_kv:
            k = v = self._heads(self.c_proj(x), self.n_heads)
        else:
            k, v = self._heads(self.k_proj(x), self.n_heads), self._heads(self.v_proj(x), self.n_heads)
        return q, k, v, a_pack

    def _causal_forward(self, x, p, key_padding_mask):
        q, k, v, a_pack = self._causal_inputs(x, p)
        if key_padding_mask is not None:
            keep = (~key_padding_mask)[:, None, :, None].to(x.dtype)
            k, v, a_pack = k * keep, v * keep, a_pack * keep
        a_unpack = torch.softmax(causal_mean_product(q, k, a_pack, self.chunk_size), dim=-1)
        if self.training and self.dropout:
            a_unpack = F.dropout(a_unpack, self.dropout)
        out = causal_mean_product(a_unpack, a_pack, v, self.chunk_size)
        return self.out_proj(self._merge(out))

    def step(
        self, x_t: torch.Tensor, p: torch.Tensor, state: Optional[LunaState] = None
    ) -> tuple[torch.Tensor, LunaState]:
        """One position of causal Luna: x_t (batch, d_model) → (y_t, state); the state has fixed size."""
        if not self.causal:
            raise RuntimeError("step() is defined for causal Luna only (LunaAttention(..., causal=True))")
        if x_t.dim() != 2:
            raise ValueError(f"x_t must have shape (batch, d_model), got {tuple(x_t.shape)}")
        x = x_t[:, None, :]
        self._check(x, p)
        q, k, v, a_pack = self._causal_inputs(x, p.expand(x.shape[0], -1, -1))
        q, k, v, a = q[:, :, 0], k[:, :, 0], v[:, :, 0], a_pack[:, :, 0]  # (B, H, ·)
        if state is None:
            key_pack = k.new_zeros(*k.shape, a.shape[-1])
            pack_value = v.new_zeros(*a.shape, v.shape[-1])
            t = 0
        else:
            key_pack, pack_value, t = state
        t += 1
        key_pack = key_pack + k[..., :, None] * a[..., None, :]
        pack_value = pack_value + a[..., :, None] * v[..., None, :]
        a_unpack = torch.softmax((q[..., None, :] @ key_pack).squeeze(-2) / t, dim=-1)
        out = (a_unpack[..., None, :] @ pack_value).squeeze(-2) / t
        y = self.out_proj(out.reshape(out.shape[0], self.d_model))
        return y, LunaState(key_pack, pack_value, t)
