"""Attention mechanisms of the three papers and Performer, each with its naive oracle in :mod:`lra_kit.attention.naive`.

Tensors are (batch, heads, length, dim) like ``scaled_dot_product_attention``; ``q, k`` are raw
(the feature map is applied inside); ``key_padding_mask`` is bool (batch, length), True = padding.
Every attention is built by name from one table, :data:`ATTENTIONS` (:func:`build_attention`).
"""
from lra_kit.attention.causal.op import ProductState, causal_product
from lra_kit.attention.causal.state import CausalState
from lra_kit.attention.compat import (
    authors_batched_momentum_attention,
    authors_lra_momentum_attention,
    nystromformer_linear_attention,
)
from lra_kit.attention.feature_maps import FEATURE_MAPS, Elementwise, FeatureMap, elu_plus_one, get_feature_map
from lra_kit.attention.heads import merge_heads, split_heads
from lra_kit.attention.linear import LinearState, linear_attention, linear_attention_step
from lra_kit.attention.linformer import LinformerAttention, linformer_attention
from lra_kit.attention.lsh import LSHAttention, lsh_attention, lsh_buckets, random_rotations
from lra_kit.attention.luna import (
    LunaAttention,
    LunaState,
    causal_luna_attention,
    causal_luna_step,
    causal_mean_product,
    pack_weights,
    real_token_counts,
)
from lra_kit.attention.modules import (
    AttentionOutput,
    KVCache,
    LinearAttention,
    MomentumAttention,
    MultiheadAttention,
    SoftmaxAttention,
)
from lra_kit.attention.momentum import (
    MomentumState,
    momentum_attention,
    momentum_attention_step,
    momentum_weights,
)
from lra_kit.attention.performer import (
    FavorPlus,
    PerformerAttention,
    performer_attention,
    performer_attention_step,
    positive_random_features,
)
from lra_kit.attention.registry import ATTENTIONS, AttentionSpec, attention_names, attention_spec, build_attention
from lra_kit.attention.softmax import softmax_attention

__all__ = [
    "ATTENTIONS", "AttentionOutput", "AttentionSpec", "CausalState", "Elementwise", "FEATURE_MAPS", "FavorPlus",
    "FeatureMap", "KVCache", "LSHAttention", "LinearAttention", "LinearState",
    "LinformerAttention", "LunaAttention", "LunaState", "MomentumAttention",
    "MomentumState", "MultiheadAttention", "PerformerAttention", "ProductState", "SoftmaxAttention", "attention_names",
    "attention_spec", "authors_batched_momentum_attention", "authors_lra_momentum_attention", "build_attention",
    "causal_luna_attention", "causal_luna_step", "causal_mean_product", "causal_product",
    "elu_plus_one", "get_feature_map", "linear_attention", "linear_attention_step", "linformer_attention",
    "lsh_attention", "lsh_buckets", "merge_heads",
    "momentum_attention", "momentum_attention_step", "momentum_weights", "nystromformer_linear_attention",
    "pack_weights", "performer_attention", "performer_attention_step", "positive_random_features", "random_rotations",
    "real_token_counts", "softmax_attention", "split_heads",
]
