"""The model's configuration: a plain dataclass, pure data (nanoGPT style).

One ``ModelConfig`` describes every model of the three papers; which model is built from
it (classifier, dual encoder, causal LM) depends on the task's kind, see
:func:`lra_kit.models.build_model`. The papers' values live in :mod:`lra_kit.train.paper_configs`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

CONNECTIONS = ("residual", "momentum", "adaptive")
NORMS = ("pre", "post")
POSITIONS = ("learned", "sinusoidal", "sinusoidal_concat", "none")
POOLINGS = ("mean", "cls", "p_mean")
OUTPUTS = ("softmax", "logistic_mixture")
ACTIVATIONS = ("gelu", "relu")
ADAPTIVE_OVER = ("token", "sample")


@dataclass
class ModelConfig:
    attention: str = "softmax"          # a name of lra_kit.attention.ATTENTIONS
    attention_options: dict = field(default_factory=dict)  # e.g. beta/gamma (momentum), tie_kv (luna)
    layers: int = 2
    d_model: int = 64
    n_heads: int = 2
    d_ff: int = 128                     # FFN hidden size (also the classifier head's hidden size)
    dropout: float = 0.1
    attention_dropout: float = 0.1      # attentions with an attention matrix only (ATTENTIONS[name].dropout)
    activation: str = "gelu"
    norm: str = "pre"                   # "pre" (Nystromformer LRA code) | "post" (Luna, fast-transformers)
    final_norm: bool = True             # a LayerNorm after the last layer
    embed_norm: bool = False            # a LayerNorm after the embeddings (Luna's LRA encoder)
    # Luna's LRA encoder (fairseq-apollo LunaLRAEncoder): tokens N(0, d^-1/2) times sqrt(d), on the scale of the
    # sinusoids; Luna's initial P likewise, plus its own sinusoids and LayerNorm. False: tokens N(0, 0.02)
    # (Nystromformer LRA code), which beside sinusoidal positions leaves the tokens ~3 % of the stream
    embed_scale: bool = False
    position: str = "learned"
    # Momentum connection (Nguyen et al. eq. 15, docs/design.md §6.3): x + γ̃·V̂ + β̃·(x_ℓ − x_{ℓ−1})
    connection: str = "residual"
    connection_beta: float = 0.0        # β̃ ("momentum in momentum connection", Table 1)
    connection_gamma: float = 1.0       # γ̃ ("stepsize in momentum connection", Table 1)
    adaptive_delta: float = 1e-3        # δ of eq. 18
    adaptive_over: str = "token"        # norms of eq. 18 per position (default, the authors' code) or "sample"
    # Classifier
    pooling: str = "mean"
    # Luna
    luna_length: int = 16               # l, the length of P (Luna's LRA README default)
    # Causal LM
    output: str = "softmax"             # "softmax" over the vocabulary | "logistic_mixture" over 256 pixel values
    mixture_components: int = 10

    def validate(self) -> ModelConfig:
        from lra_kit.attention import ATTENTIONS, attention_spec

        choices = {"attention": tuple(sorted(ATTENTIONS)), "connection": CONNECTIONS, "norm": NORMS,
                   "position": POSITIONS, "pooling": POOLINGS, "output": OUTPUTS, "activation": ACTIVATIONS,
                   "adaptive_over": ADAPTIVE_OVER}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"model.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        for name in ("layers", "d_model", "n_heads", "d_ff", "luna_length", "mixture_components"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"model.{name} must be a positive int, got {value!r}")
        if not isinstance(self.embed_scale, bool):
            raise ValueError(f"model.embed_scale must be True or False, got {self.embed_scale!r}")
        for name in ("dropout", "attention_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"model.{name} must be in [0, 1), got {getattr(self, name)!r}")
        if not 0.0 <= self.connection_beta < 1.0:
            raise ValueError(f"model.connection_beta (β̃) must be in [0, 1), got {self.connection_beta!r}")
        if not self.connection_gamma > 0.0:
            raise ValueError(f"model.connection_gamma (γ̃) must be > 0, got {self.connection_gamma!r}")
        if not 0.0 < self.adaptive_delta < 1.0:
            raise ValueError(f"model.adaptive_delta (δ) must be in (0, 1), got {self.adaptive_delta!r}")
        spec = attention_spec(self.attention)
        if spec.post_norm and self.norm != "post":
            raise ValueError(f"{self.attention.capitalize()} layers are post-LN (e.g. Luna eq. 6): "
                             f"got norm={self.norm!r}")
        if not spec.momentum_connection and self.connection != "residual":
            raise ValueError(f"{self.attention.capitalize()} layers use the residual connection (e.g. Luna eq. 6): "
                             f"got connection={self.connection!r}")
        if self.pooling == "p_mean" and not spec.extra_sequence:
            have = [name for name, row in ATTENTIONS.items() if row.extra_sequence]
            raise ValueError("model.pooling='p_mean' (mean over the final P, Luna Table 3) needs an attention with "
                             f"an extra sequence ({', '.join(have)}), got attention={self.attention!r}")
        return self


def attention_kwargs(cfg: ModelConfig, causal: bool, max_length: int | None = None) -> dict:
    """The options ``build_attention`` gets: the config's, plus attention dropout where it exists, plus the
    model's ``max_length`` for an attention whose parameters have the length's size (Linformer's E, F)."""
    from lra_kit.attention import attention_spec

    spec = attention_spec(cfg.attention)
    options = dict(cfg.attention_options)
    if spec.dropout:
        options.setdefault("dropout", cfg.attention_dropout)
    if spec.max_length:
        if max_length is None and "max_length" not in options:
            raise ValueError(f"attention {cfg.attention!r} needs the model's max_length (its projections have "
                             "the sequence's length): build it through a model, or set attention_options['max_length']")
        options.setdefault("max_length", max_length)
    return dict(options, causal=causal)


__all__ = ["ModelConfig", "CONNECTIONS", "NORMS", "POSITIONS", "POOLINGS", "OUTPUTS", "attention_kwargs"]
