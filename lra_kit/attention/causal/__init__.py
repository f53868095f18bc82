"""The causal op of linear and momentum attention, in one folder (as flash-linear-attention gives each method one):

- :mod:`~lra_kit.attention.causal.op` — the op: one autograd Function, :func:`causal_op` and the public
  :func:`causal_product`; it chooses the path once per call;
- :mod:`~lra_kit.attention.causal.chunked` — the chunked PyTorch path (the CPU path, and the reference);
- :mod:`~lra_kit.attention.causal.triton` — the Triton path: kernels, host code, switches, compile guard;
- :mod:`~lra_kit.attention.causal.naive` — the readable oracle both paths are tested against;
- :mod:`~lra_kit.attention.causal.state` — the state (s, d, z) both carry between positions.

Dependencies point one way: the op and the paths import ``state``; the paths import the op's constants;
the Triton side never imports the chunked path.
"""
from lra_kit.attention.causal.op import (
    DEFAULT_CHUNK_SIZE,
    ProductState,
    causal_op,
    causal_product,
    prefix_sum,
    triton_causal_product,
)
from lra_kit.attention.causal.state import CausalState

__all__ = ["DEFAULT_CHUNK_SIZE", "CausalState", "ProductState", "causal_op", "causal_product", "prefix_sum",
           "triton_causal_product"]
