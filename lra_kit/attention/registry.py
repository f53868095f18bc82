"""The one table of attention names: ``build_attention("momentum", 64, 2, beta=0.6)``.

Every place that accepts an attention by name — the model config, the training configs and CLI,
the benchmark, the tests — reads :data:`ATTENTIONS` (or :func:`attention_names`), so adding an
attention is one row here (see ``docs/adding-an-attention.md``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from collections.abc import Callable, Mapping

import torch.nn as nn

from lra_kit.attention.linformer import LinformerAttention
from lra_kit.attention.lsh import LSHAttention
from lra_kit.attention.luna import LunaAttention
from lra_kit.attention.modules import LinearAttention, MomentumAttention, SoftmaxAttention
from lra_kit.attention.performer import PerformerAttention
from lra_kit.tables import name_table


@dataclass(frozen=True, eq=False)
class AttentionSpec:
    """One attention: its module and what a caller needs to know without building it.

    ``defaults`` are the options :func:`build_attention` uses where the caller gives none;
    ``causal``: it has a causal form (``causal=True``); ``step``: its causal module has
    ``step()`` (generation one position at a time); ``dropout``: it takes ``dropout`` on an
    explicit attention matrix; ``extra_sequence``: it reads and returns Luna's extra sequence p (its
    model layer carries p from layer to layer, and the last layer's p is unused unless pooled);
    ``post_norm``: its layer is post-LN only (the configs set ``model.norm="post"`` at every scale);
    ``momentum_connection``: its layer takes the momentum and adaptive connections between layers
    (Nguyen et al. eqs. 15, 18), which need the attention output V̂ of a residual block;
    ``max_length``: its constructor takes the model's ``max_length`` (parameters the size of the sequence:
    Linformer's E, F), which the models pass on; ``variant``: the option whose value names a run of it beside
    the attention's name (LSH's ``n_hashes``: the papers' lsh-1, lsh-4, lsh-8).
    """

    name: str
    module: Callable[..., nn.Module]
    summary: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    causal: bool = True
    step: bool = True
    dropout: bool = False
    extra_sequence: bool = False
    post_norm: bool = False
    momentum_connection: bool = True
    max_length: bool = False
    variant: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))

    def options(self, **overrides) -> dict:
        """The defaults with ``overrides`` on top: the options ``build_attention`` passes on."""
        return {**self.defaults, **overrides}


ATTENTIONS: Mapping[str, AttentionSpec] = name_table(
    AttentionSpec("softmax", SoftmaxAttention, "softmax(QKᵀ/√d)V through SDPA (Katharopoulos et al. eq. 2)",
                  dropout=True),
    AttentionSpec("linear", LinearAttention, "linear attention, φ = elu + 1 (Katharopoulos et al. eqs. 5, 9)"),
    # β, γ: Nguyen et al. Table 1 (MNIST row); the training configs put each task's row in their place.
    AttentionSpec("momentum", MomentumAttention, "momentum attention (Nguyen et al. eqs. 13, 14)",
                  defaults={"beta": 0.6, "gamma": 0.9}),
    # Luna eq. 6: X' = LN(X + Y_X), P' = LN(P + Y_P), a post-LN residual layer with no V̂ to carry momentum.
    AttentionSpec("luna", LunaAttention, "Luna pack and unpack (Ma et al. eqs. 3, 4, 7)", dropout=True,
                  extra_sequence=True, post_norm=True, momentum_connection=False),
    AttentionSpec("performer", PerformerAttention,
                  "FAVOR+ positive orthogonal random features (Choromanski et al. 2021)"),
    # 64 buckets, chunks of 32: Katharopoulos et al. §4 (lsh-X: X rounds); no recurrent form (their appendix C.1)
    AttentionSpec("lsh", LSHAttention, "Reformer's LSH attention, shared QK (Kitaev et al. 2020 §2)",
                  defaults={"n_hashes": 1, "n_buckets": 64, "chunk_size": 32}, step=False, dropout=True,
                  variant="n_hashes"),
    # k = 256: Wang et al. §5 and the LRA runs the papers report (Nyströmformer's linformer-256)
    AttentionSpec("linformer", LinformerAttention, "Linformer's length projections E, F (Wang et al. 2020 eq. 7)",
                  defaults={"k": 256}, causal=False, step=False, dropout=True, max_length=True),
)


def attention_names() -> tuple[str, ...]:
    """Every registered attention name, in the table's order."""
    return tuple(ATTENTIONS)


def attention_spec(name: str) -> AttentionSpec:
    """The table row of ``name``; an unknown name is a ValueError that lists the valid ones."""
    if not isinstance(name, str) or name not in ATTENTIONS:
        raise ValueError(f"unknown attention {name!r}; valid names: {', '.join(sorted(ATTENTIONS))}")
    return ATTENTIONS[name]


def build_attention(name: str, d_model: int, n_heads: int, **options) -> nn.Module:
    """A multi-head attention module with ``forward(x, p=None, key_padding_mask=None) -> AttentionOutput(y, p, state)``.

    ``forward`` always returns three values (``y, p, state = attn(x)``): ``p`` is Luna's extra sequence (the
    others pass it through), ``state`` is None unless ``output_final_state=True`` (causal modules).

    ``name`` is one of :func:`attention_names`; ``options`` go to its constructor on top of the
    table's defaults (e.g. ``causal=True``, ``beta=0.6, gamma=0.9``, ``feature_map="elu"``,
    ``tie_kv=True``, ``n_features=64``).
    """
    spec = attention_spec(name)
    try:
        return spec.module(d_model, n_heads, **spec.options(**options))
    except TypeError as err:  # an option the chosen attention does not take
        raise TypeError(f"build_attention({name!r}, ...): {err}") from err
