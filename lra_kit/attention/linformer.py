"""Linformer (Wang et al. 2020, "Linformer: Self-Attention with Linear Complexity"), a baseline of Nguyen et al.
Table 4 and Ma et al. Tables 2–3, and the method Luna generalises (Ma et al. §3.4).

Softmax attention's N × N matrix is close to low rank (Wang et al. Theorem 1), so the keys and values are
projected along the *length* to k rows before attending (their eq. 7):

    head = softmax( Q (E K)ᵀ / √d ) (F V),        E, F ∈ R^{k × n} learned,

O(n·k) in time and memory. E and F are parameters of size k × n: the model has a maximum length n, and
nothing in the projection says which of k rows came from which position, so there is no causal form (a
query would see a mix of every position). Sharing (Wang et al. §4, "Additional Efficiency Techniques"):
``"none"`` (each head its own E and F), ``"headwise"`` (one E and one F per layer, for every head),
``"key-value"`` (E = F, for every head of the layer), ``"layerwise"`` (one E for every head, key, value and
layer; the model ties its layers' E through :meth:`LinformerAttention.share_across_layers`).

Shorter sequences and padding, as the public code does: a sequence of length N < n uses the first N columns
of E and F (``linformer`` 0.2.3 ``LinformerSelfAttention`` slices its projections so), and padded keys and
values are zeroed before the projection (the Nyströmformer LRA code, ``LRA/code/attention_linformer.py`` at
mlpen/Nystromformer 5689313, multiplies K and V by the mask). Together these make right padding invisible:
the columns of E beyond a sequence's real length multiply zero rows.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from lra_kit.attention.checks import check_key_padding_mask, check_qkv
from lra_kit.attention.heads import merge_heads, split_heads
from lra_kit.attention.modules import AttentionOutput, MultiheadAttention

SHARINGS = ("none", "headwise", "key-value", "layerwise")


def linformer_attention(q, k, v, *, E: torch.Tensor, F: torch.Tensor | None = None,
                        key_padding_mask: torch.Tensor | None = None, dropout_p: float = 0.0) -> torch.Tensor:
    """softmax(Q (E K)ᵀ/√d)(F V), Wang et al. eq. 7; F = E when ``F`` is None (key-value sharing).

    q, k, v (batch, heads, N, d); E, F (k, n) shared by the heads or (heads, k, n) one per head, with n ≥ N:
    the first N columns project this sequence. Padded keys and values are zeroed before the projection.
    """
    check_qkv(q, k, v)
    check_key_padding_mask(key_padding_mask, k)
    F_ = E if F is None else F
    N = k.shape[2]
    for name, P in (("E", E), ("F", F_)):
        if not isinstance(P, torch.Tensor) or P.dim() not in (2, 3):
            raise ValueError(f"{name} must be a (k, n) or (heads, k, n) tensor")
        if P.dim() == 3 and P.shape[0] != k.shape[1]:
            raise ValueError(f"{name} has {P.shape[0]} heads' projections, the input {k.shape[1]} heads")
        if P.shape[-1] < N:
            raise ValueError(f"the sequence (length {N}) is longer than the projection length n = {P.shape[-1]} "
                             f"of {name}; build the attention with max_length >= {N}")
    if not (isinstance(dropout_p, (int, float)) and 0.0 <= dropout_p < 1.0):
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p!r}")
    if key_padding_mask is not None:
        keep = (~key_padding_mask)[:, None, :, None].to(k.dtype)
        k, v = k * keep, v * keep
    E_, F_ = E[..., :N].to(k.dtype), F_[..., :N].to(k.dtype)
    k_proj, v_proj = E_ @ k, F_ @ v  # (batch, heads, k, d): the length projected to k rows
    weights = torch.softmax((q @ k_proj.transpose(-1, -2)) / math.sqrt(q.shape[-1]), dim=-1)
    if dropout_p > 0:
        weights = torch.nn.functional.dropout(weights, p=dropout_p)
    return weights @ v_proj


class LinformerAttention(MultiheadAttention):
    """Multi-head Linformer attention (Wang et al. 2020), non-causal, with the projections' sharing of their §4.

    ``max_length`` is n, the longest sequence the projections take (the models pass theirs); ``k`` the
    projected length (256 in Wang et al. and in the LRA runs the papers report); ``sharing`` one of
    ``SHARINGS`` (default ``"headwise"``, as ``linformer`` 0.2.3 shares E across heads). E and F start
    uniform in ±1/√k, as ``linformer`` 0.2.3 initialises them (the Nyströmformer code draws N(0, 0.02²)).
    """

    def __init__(self, d_model, n_heads, *, causal=False, head_dim=None, max_length: int | None = None, k: int = 256,
                 sharing: str = "headwise", dropout: float = 0.0):
        if causal:
            raise ValueError("Linformer has no causal form (its projections mix every position: Wang et al. §4); "
                             "for a causal model use linear attention ('linear', Katharopoulos et al.) or causal "
                             "Luna ('luna', Ma et al. §3.3)")
        super().__init__(d_model, n_heads, causal=False, head_dim=head_dim)
        for name, value in (("max_length", max_length), ("k", k)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}"
                                 + (" (the models pass their max_length)" if name == "max_length" else ""))
        if sharing not in SHARINGS:
            raise ValueError(f"sharing must be one of {SHARINGS}, got {sharing!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        self.max_length, self.k, self.sharing, self.dropout = max_length, k, sharing, dropout
        shape = (n_heads, k, max_length) if sharing == "none" else (k, max_length)
        self.E = nn.Parameter(torch.empty(shape).uniform_(-k ** -0.5, k ** -0.5))
        separate_f = sharing in ("none", "headwise")
        self.F = nn.Parameter(torch.empty(shape).uniform_(-k ** -0.5, k ** -0.5)) if separate_f else None

    def share_across_layers(self, first: LinformerAttention) -> None:
        """Layerwise sharing: use ``first``'s E (the model calls this on every layer after the first)."""
        if self.sharing == "layerwise":
            if first.E.shape != self.E.shape:
                raise ValueError(f"layerwise sharing needs equal projections, got {tuple(first.E.shape)} and "
                                 f"{tuple(self.E.shape)}")
            self.E = first.E

    def forward(self, x, p=None, key_padding_mask=None, *, initial_state=None, output_final_state=False):
        """x (batch, length ≤ max_length, d_model) → ``AttentionOutput(out, p, None)`` (``p`` passed through)."""
        if x.dim() != 3 or x.shape[-1] != self.d_model:
            raise ValueError(f"x must have shape (batch, length, {self.d_model}), got {tuple(x.shape)}")
        if initial_state is not None or output_final_state:
            raise ValueError("Linformer has no causal form, so no initial_state/output_final_state")
        if x.shape[1] > self.max_length:
            raise ValueError(f"sequence length {x.shape[1]} exceeds Linformer's projection length max_length="
                             f"{self.max_length}")
        q, k, v = (split_heads(W(x), self.n_heads) for W in (self.W_q, self.W_k, self.W_v))
        out = linformer_attention(q, k, v, E=self.E, F=self.F, key_padding_mask=key_padding_mask,
                                  dropout_p=self.dropout if self.training else 0.0)
        return AttentionOutput(self.W_o(merge_heads(out)), p, None)

    def extra_repr(self) -> str:
        return f"max_length={self.max_length}, k={self.k}, sharing={self.sharing!r}"
