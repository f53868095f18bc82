"""Cross-checks against flash-linear-attention's pure-PyTorch reference ops (docs/reference-implementations.md §2).

Optional: skipped when ``fla-core`` is not installed. Its ``naive.py`` references run on a CPU
(only their package ``__init__`` files touch Triton). They take already feature-mapped q and k in the
layout (batch, length, heads, dim) and compute in float32, so the comparison is in float32.

* causal linear attention (Katharopoulos eq. 9) = ``naive_recurrent_linear_attn(φq, φk, v, scale=1,
  normalize=True)`` (its eps 1e-10 against our 1e-6: negligible next to denominators of order N);
* causal momentum attention (Nguyen et al. eq. 13) = γ/(1−β)·φ(q_i)ᵀ[S_i − β·D_i] / φ(q_i)ᵀΣ_{j≤i}φ(k_j),
  with S from ``naive_recurrent_linear_attn`` and the decayed state D_i = β·D_{i−1} + φ(k_i)v_iᵀ from
  ``naive_recurrent_simple_gla`` with the constant log-gate g = log β (docs/design.md §6.1).
"""
from __future__ import annotations

import math
import warnings

import pytest
import torch

try:
    with warnings.catch_warnings():  # fla warns that Triton falls back to the CPU
        warnings.simplefilter("ignore")
        import fla.ops.linear_attn.naive as fla_linear
        import fla.ops.simple_gla.naive as fla_gla
except Exception as err:  # not installed, or its package __init__ cannot import (e.g. no Triton at all)
    pytest.skip(f"fla-core's naive references are not importable: {err!r}", allow_module_level=True)

from lra_kit.attention import elu_plus_one, linear_attention, momentum_attention  # noqa: E402

B, H, N, D, M = 2, 3, 37, 8, 5  # N not a multiple of any chunk size


def _inputs(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, N, d, generator=g) for d in (D, D, M))


def _fla_layout(x: torch.Tensor) -> torch.Tensor:
    """(batch, heads, length, dim) → fla's (batch, length, heads, dim)."""
    return x.transpose(1, 2).contiguous()


def _from_fla(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2)


def test_causal_linear_attention_matches_fla_naive_recurrent():
    q, k, v = _inputs(0)
    ours, _ = linear_attention(q, k, v, causal=True)
    theirs, _ = fla_linear.naive_recurrent_linear_attn(
        _fla_layout(elu_plus_one(q)), _fla_layout(elu_plus_one(k)), _fla_layout(v), scale=1.0, normalize=True)
    torch.testing.assert_close(ours, _from_fla(theirs), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("beta", [0.3, 0.6, 0.9])
def test_causal_momentum_attention_is_linear_minus_fla_decayed_state(beta):
    gamma = 0.7
    q, k, v = _inputs(1)
    phi_q, phi_k = elu_plus_one(q), elu_plus_one(k)
    fq, fk, fv = _fla_layout(phi_q), _fla_layout(phi_k), _fla_layout(v)
    plain, _ = fla_linear.naive_recurrent_linear_attn(fq, fk, fv, scale=1.0, normalize=False)  # φ(q_i)ᵀS_i
    log_decay = torch.full((B, N, H), math.log(beta))
    decayed, _ = fla_gla.naive_recurrent_simple_gla(fq, fk, fv, log_decay, scale=1.0)         # φ(q_i)ᵀD_i
    numerator = gamma / (1 - beta) * (_from_fla(plain) - beta * _from_fla(decayed))
    denominator = (phi_q * phi_k.cumsum(2)).sum(-1, keepdim=True)
    expected = numerator / denominator
    ours, _ = momentum_attention(q, k, v, beta=beta, gamma=gamma, causal=True)
    torch.testing.assert_close(ours, expected, rtol=1e-4, atol=1e-5)


def test_final_state_matches_fla():
    """With ``output_final_state`` our LinearState(s, z) is fla's (S, Σφ(k))."""
    q, k, v = _inputs(2)
    _, state = linear_attention(q, k, v, causal=True, output_final_state=True)
    _, (s, z) = fla_linear.naive_recurrent_linear_attn(
        _fla_layout(elu_plus_one(q)), _fla_layout(elu_plus_one(k)), _fla_layout(v), scale=1.0, normalize=True,
        output_final_state=True)
    torch.testing.assert_close(state.s.float(), s, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(state.z.float(), z.squeeze(1), rtol=1e-4, atol=1e-4)
