"""The least memory traffic of a generated pixel, and the least time it allows on a card: the generation benchmark's
bound (``bound_ms_per_pixel``), as the attention benchmark's ``bound_ms`` is for a forward and backward.

One step of the lean decoder (:mod:`lra_kit.models.decode`) must at least

* read every weight once: the layers', the final norm's and the head's (the embedding tables only in the two rows
  each image looks up: its token and its position);
* read and write each layer's state once: for linear attention s and z (Katharopoulos eqs. 18-19), D² + D numbers
  a head; for momentum s, m and z (Nguyen eq. 12), 2D² + D; both in float32, as the fused step keeps them (the ATen
  step keeps the model's type: float32 for the benchmark's models);
* for the key/value cache, read the keys and values of every position so far and write the new position's.

Activations between the layers are left out: a step fused into one kernel would keep them on chip. The bound is
those bytes ÷ the card's bandwidth (:func:`lra_kit.bench.device.bandwidth`); ``× bound``, the time ÷ the bound, says
how far a step is from what its bytes alone would allow (at batch 1 the weights dominate and the launches decide the
time; at a large batch the states do).
"""
from __future__ import annotations

from lra_kit.attention.modules import LinearAttention, MomentumAttention, SoftmaxAttention

STATE_BYTES = 4  # the RNN steps keep their states in float32


def weight_bytes(model, batch: int) -> int:
    """Bytes of the weights one step reads: every parameter but the embedding tables, and of those the two rows
    (token, position) each of the ``batch`` images looks up."""
    tables = {id(p) for p in model.embed.parameters()}
    weights = sum(p.numel() * p.element_size() for p in model.parameters() if id(p) not in tables)
    rows = 2 * batch * model.cfg.d_model * next(model.parameters()).element_size()
    return weights + rows


def state_bytes(attn, batch: int, position: int) -> int:
    """Bytes one step must read and write of one layer's state, the step reading ``position`` (0-based)."""
    H, D = attn.n_heads, attn.head_dim
    if type(attn) is MomentumAttention:
        return 2 * batch * H * (2 * D * D + D) * STATE_BYTES
    if type(attn) is LinearAttention:
        return 2 * batch * H * (D * D + D) * STATE_BYTES
    if type(attn) is SoftmaxAttention:
        size = attn.W_k.weight.element_size()
        return 2 * batch * H * D * size * (position + 1) + 2 * batch * H * D * size  # read the cache, write k and v
    raise ValueError(f"no lean step, so no bound, for {type(attn).__name__}")


def least_step_bytes(model, batch: int, position: int) -> int:
    """The least bytes one generated position moves (module docstring): the step that reads ``position``."""
    if batch < 1 or position < 0:
        raise ValueError(f"batch must be >= 1 and position >= 0, got {batch}, {position}")
    layers = sum(state_bytes(layer.attn, batch, position) for layer in model.encoder.layers)
    return weight_bytes(model, batch) + layers


def bound_ms_per_pixel(model, batch: int, pixels: int, bytes_per_s: float) -> float:
    """The least milliseconds a step takes, averaged over the steps that read positions 0 … ``pixels`` − 1, at
    ``bytes_per_s``."""
    if pixels < 1 or not bytes_per_s or bytes_per_s <= 0:
        raise ValueError(f"pixels must be >= 1 and bytes_per_s > 0, got {pixels}, {bytes_per_s}")
    first, last = least_step_bytes(model, batch, 0), least_step_bytes(model, batch, pixels - 1)
    return (first + last) / 2 / bytes_per_s * 1e3  # the bytes grow linearly in the position (or not at all)


__all__ = ["STATE_BYTES", "bound_ms_per_pixel", "least_step_bytes", "state_bytes", "weight_bytes"]
