"""Models built from the attention registry: Transformer/Luna layers, LRA classifiers, causal LM.

``build_model(cfg, kind=..., vocab_size=..., num_classes=..., max_length=..., pad_id=...)``
picks the model for a task's kind (``"classification" | "retrieval" | "lm"``).
"""
from __future__ import annotations

from lra_kit.models.causal_lm import CausalLM, bits_per_dim, per_image_bits
from lra_kit.models.classifier import DualEncoderClassifier, LRAClassifier, masked_mean
from lra_kit.models.config import ModelConfig
from lra_kit.models.embeddings import Embeddings
from lra_kit.models.layers import (
    Carry,
    Encoder,
    FeedForward,
    LunaLayer,
    TransformerLayer,
    adaptive_momentum,
    attention_prefill,
)
from lra_kit.models.mixture import logistic_mixture_log_pmf

KINDS = ("classification", "retrieval", "lm")


def build_model(cfg: ModelConfig, *, kind: str, vocab_size: int, max_length: int, num_classes=None, pad_id: int = 0):
    """The model for a task of ``kind`` with the dataset's vocabulary, classes and length."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind == "lm":
        return CausalLM(cfg, vocab_size=vocab_size, max_length=max_length, pad_id=pad_id)
    if not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an int >= 2 for kind={kind!r}, got {num_classes!r}")
    cls = DualEncoderClassifier if kind == "retrieval" else LRAClassifier
    return cls(cfg, vocab_size=vocab_size, num_classes=num_classes, max_length=max_length, pad_id=pad_id)


__all__ = ["KINDS", "Carry", "CausalLM", "DualEncoderClassifier", "Embeddings", "Encoder", "FeedForward",
           "LRAClassifier", "LunaLayer", "ModelConfig", "TransformerLayer", "adaptive_momentum", "attention_prefill",
           "bits_per_dim", "build_model", "per_image_bits",
           "logistic_mixture_log_pmf", "masked_mean"]
