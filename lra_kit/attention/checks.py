"""Argument checks shared by the attention functions: clear errors instead of silent NaNs (``docs/design.md`` §2).

Every public attention function runs its checks on entry, before any work."""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """q, k, v are floating tensors (batch, heads, length, dim) with matching batch/heads/dims."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"{name} must have shape (batch, heads, length, dim), got {tuple(t.shape)}")
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor, got dtype {t.dtype}")
    if q.shape[:2] != k.shape[:2] or k.shape[:2] != v.shape[:2]:
        raise ValueError(
            f"q, k, v must agree in (batch, heads): got {tuple(q.shape[:2])}, "
            f"{tuple(k.shape[:2])}, {tuple(v.shape[:2])}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dim, got {q.shape[-1]} and {k.shape[-1]}")
    if k.shape[2] != v.shape[2]:
        raise ValueError(f"k and v must have the same length, got {k.shape[2]} and {v.shape[2]}")
    if k.shape[2] < 1:
        raise ValueError("sequences must have length >= 1")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k, v must share a dtype, got {q.dtype}, {k.dtype}, {v.dtype}")


def check_causal_lengths(q: torch.Tensor, k: torch.Tensor) -> None:
    if q.shape[2] != k.shape[2]:
        raise ValueError(
            f"causal attention needs queries and keys of the same length, got {q.shape[2]} and {k.shape[2]}"
        )


def check_step(q_t: torch.Tensor, k_t: torch.Tensor, v_t: torch.Tensor) -> None:
    """Recurrent steps take (batch, heads, dim) tensors."""
    for name, t in (("q_t", q_t), ("k_t", k_t), ("v_t", v_t)):
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a tensor of shape (batch, heads, dim), got {shape}")
    if q_t.shape[:2] != k_t.shape[:2] or k_t.shape[:2] != v_t.shape[:2]:
        raise ValueError("q_t, k_t, v_t must agree in (batch, heads)")
    if q_t.shape[-1] != k_t.shape[-1]:
        raise ValueError(f"q_t and k_t must have the same last dim, got {q_t.shape[-1]} and {k_t.shape[-1]}")


def check_key_padding_mask(mask: torch.Tensor | None, k: torch.Tensor) -> None:
    """key_padding_mask: bool (batch, length), True marks padding (nn.MultiheadAttention convention)."""
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise TypeError("key_padding_mask must be a bool tensor (True marks padding)")
    if mask.shape != (k.shape[0], k.shape[2]):
        raise ValueError(
            f"key_padding_mask must have shape (batch, length) = {(k.shape[0], k.shape[2])}, got {tuple(mask.shape)}"
        )


def check_momentum(beta: float, gamma: float) -> None:
    """β ∈ [0, 1) and γ > 0, both finite (Nguyen et al., below eq. 12)."""
    for name, value in (("beta", beta), ("gamma", gamma)):
        if isinstance(value, torch.Tensor):
            if value.numel() != 1:
                raise ValueError(f"{name} must be a scalar, got a tensor of shape {tuple(value.shape)}")
            value = value.item()
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
    beta, gamma = float(beta), float(gamma)
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"beta must be in [0, 1), got {beta}")
    if not gamma > 0.0:
        raise ValueError(f"gamma must be > 0, got {gamma}")


def check_eps(eps: float) -> None:
    if not (isinstance(eps, (int, float)) and math.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")


def check_chunk_size(chunk_size: int) -> None:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")


def check_state_arguments(causal: bool, initial_state, output_final_state) -> None:
    """initial_state / output_final_state belong to the causal (recurrent) forms only."""
    if not isinstance(output_final_state, bool):
        raise TypeError(f"output_final_state must be a bool, got {type(output_final_state).__name__}")
    if not causal and (initial_state is not None or output_final_state):
        raise ValueError("initial_state and output_final_state need causal=True (a non-causal attention has no state)")


def check_state(state, names: Sequence[str], q: torch.Tensor, v: torch.Tensor, what: str,
                features: int | None = None) -> None:
    """A recurrent state: a tuple of tensors named ``names`` with shapes (B, H, F, M) or, for ``z``, (B, H, F),
    in the dtype the states of ``q`` accumulate in (float32 for float16/bfloat16 inputs). F is the feature
    map's output size (``features``; default the head size, as for element-wise maps)."""
    if not isinstance(state, tuple) or len(state) != len(names):
        raise TypeError(f"{what} must be a {'/'.join(names)} tuple of tensors (e.g. from output_final_state=True)")
    D = q.shape[-1] if features is None else features
    B, H, M = q.shape[0], q.shape[1], v.shape[-1]
    want_dtype = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    for name, t in zip(names, state, strict=True):
        want = (B, H, D) if name == "z" else (B, H, D, M)
        if not isinstance(t, torch.Tensor) or tuple(t.shape) != want:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{what}.{name} must be a tensor of shape {want}, got {got}")
        if t.dtype != want_dtype:
            raise TypeError(f"{what}.{name} must have dtype {want_dtype} for {q.dtype} inputs, got {t.dtype}")
        if t.device != q.device:
            raise ValueError(f"{what}.{name} is on {t.device}, the inputs on {q.device}")
