"""Attention mechanisms of the three papers, each with its naive oracle in :mod:`lra_kit.attention.naive`.

Tensors are (batch, heads, length, dim) like ``scaled_dot_product_attention``; ``q, k`` are raw
(the feature map is applied inside); ``key_padding_mask`` is bool (batch, length), True = padding.
"""
from lra_kit.attention.causal_attention import KernelState, causal_kernel_attention
from lra_kit.attention.causal_product import ProductState, causal_product
from lra_kit.attention.compat import (
    authors_batched_momentum_attention,
    authors_lra_momentum_attention,
    nystromformer_linear_attention,
)
from lra_kit.attention.feature_maps import FEATURE_MAPS, elu_plus_one, get_feature_map
from lra_kit.attention.linear import LinearState, linear_attention, linear_attention_step
from lra_kit.attention.luna import LunaAttention, LunaState, causal_mean_product
from lra_kit.attention.modules import (
    KVCache,
    LinearAttention,
    MomentumAttention,
    MultiheadAttention,
    SoftmaxAttention,
)
from lra_kit.attention.momentum import (
    MomentumState,
    adaptive_momentum,
    momentum_attention,
    momentum_attention_step,
    momentum_weights,
)
from lra_kit.attention.registry import ATTENTIONS, build_attention
from lra_kit.attention.softmax import softmax_attention

__all__ = [
    "ATTENTIONS", "FEATURE_MAPS", "KVCache", "KernelState", "ProductState", "authors_batched_momentum_attention",
    "authors_lra_momentum_attention", "causal_kernel_attention", "nystromformer_linear_attention", "LinearAttention", "LinearState", "LunaAttention", "LunaState",
    "MomentumAttention", "MomentumState", "MultiheadAttention", "SoftmaxAttention", "adaptive_momentum",
    "build_attention", "causal_mean_product", "causal_product", "elu_plus_one", "get_feature_map",
    "linear_attention", "linear_attention_step", "momentum_attention", "momentum_attention_step",
    "momentum_weights", "softmax_attention",
]
