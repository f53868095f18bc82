"""Performer (FAVOR+): unbiased kernel estimate, explicit kernel-matrix oracle, causal = step, fixed features."""
from __future__ import annotations

import math

import pytest
import torch

from attention_helpers import assert_close, rand_qkv, right_padding_mask
from lra_kit.attention import (
    FavorPlus,
    PerformerAttention,
    build_attention,
    performer_attention,
    performer_attention_step,
    positive_random_features,
)
from lra_kit.attention.naive import naive_performer_attention
from lra_kit.attention.performer import default_n_features, gaussian_orthogonal_projection


def favor(dim, n_features=None, *, seed=0, orthogonal=True):
    return FavorPlus(dim, n_features, orthogonal=orthogonal, generator=torch.Generator().manual_seed(seed)).double()


def kernel_estimates(q, k, projections):
    """φ(q)ᵀφ(k) of Lemma 1 for each projection: an (R, pairs) tensor of estimates of exp(qᵀk/√d)."""
    s = q.shape[-1] ** -0.25
    return torch.stack([(positive_random_features(q * s, w) * positive_random_features(k * s, w)).sum(-1)
                        for w in projections])


@pytest.mark.parametrize("orthogonal", [True, False])
def test_estimator_is_unbiased_for_the_softmax_kernel(orthogonal):
    d, R = 4, 4000
    g = torch.Generator().manual_seed(1)
    q, k = (0.5 * torch.randn(2, 5, d, generator=g, dtype=torch.float64)).unbind(0)
    exact = torch.exp((q * k).sum(-1) / math.sqrt(d))
    fm = favor(d, 2 * d, orthogonal=orthogonal)  # two orthogonal blocks per draw
    projections = []
    for _ in range(R):  # R independent draws through the module's own redraw
        fm.redraw(g)
        projections.append(fm.projection.clone())
    est = kernel_estimates(q, k, projections)
    mean, se = est.mean(0), est.std(0) / math.sqrt(R)
    assert (se < 0.05 * exact).all(), "too few draws for the test to tell anything"
    assert ((mean - exact).abs() < 4 * se).all(), f"mean {mean} vs exact {exact} (standard errors {se})"

    # The same check has the power to reject a wrong estimator: orthogonal rows of unit length
    # (no Gaussian lengths) are not N(0, I), and their mean misses exp(qᵀk/√d).
    unit = [w / w.norm(dim=1, keepdim=True) for w in projections]
    wrong = kernel_estimates(q, k, unit)
    assert ((wrong.mean(0) - exact).abs() > 4 * wrong.std(0) / math.sqrt(R)).any()


def test_projection_rows_are_orthogonal_in_blocks_and_gaussian_in_length():
    w = gaussian_orthogonal_projection(10, 4, generator=torch.Generator().manual_seed(0))
    assert w.shape == (10, 4) and w.dtype == torch.float64
    for block in (w[0:4], w[4:8], w[8:10]):
        gram = block @ block.T
        assert_close(gram, torch.diag(torch.diagonal(gram)), atol=1e-12)
    # squared lengths of N(0, I_d) rows average d
    many = gaussian_orthogonal_projection(4000, 8, generator=torch.Generator().manual_seed(1))
    assert abs((many * many).sum(1).mean().item() - 8) < 0.2


@pytest.mark.parametrize("causal", [False, True])
def test_matches_the_explicit_kernel_matrix_oracle(causal):
    q, k, v = rand_qkv(2, 3, 21, 8, 5)
    fm = favor(8, 24)
    mask = right_padding_mask([21, 13], 21)
    for m in (None, mask):
        out, _ = performer_attention(q, k, v, feature_map=fm, causal=causal, key_padding_mask=m)
        ref = naive_performer_attention(q, k, v, fm.projection, causal=causal, key_padding_mask=m)
        assert_close(out, ref, msg=f"causal={causal} mask={m is not None}")


def test_approaches_softmax_attention_as_features_grow():
    """FAVOR+ estimates softmax attention: its error shrinks with the number of features."""
    q, k, v = (0.5 * t for t in rand_qkv(1, 2, 30, 8))
    logits = q @ k.transpose(-1, -2) / math.sqrt(8)
    softmax = torch.softmax(logits, -1) @ v
    errors = [(performer_attention(q, k, v, feature_map=favor(8, m, seed=3))[0] - softmax).abs().mean().item()
              for m in (8, 4096)]
    assert errors[1] < errors[0] / 4 and errors[1] < 0.02


def test_causal_equals_step():
    q, k, v = rand_qkv(2, 2, 13, 6, 4)
    fm = favor(6)
    y, _ = performer_attention(q, k, v, feature_map=fm, causal=True, chunk_size=4)
    state, outs = None, []
    for t in range(13):
        out, state = performer_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], state, feature_map=fm)
        outs.append(out)
        assert state.s.shape == (2, 2, fm.n_features, 4)  # the state does not grow with t
    assert_close(torch.stack(outs, 2), y)


def test_features_do_not_change_inside_a_sequence():
    """A position's features depend on that position only: no stabiliser looks at other (later) tokens."""
    fm = favor(6)
    x = torch.randn(2, 3, 17, 6, dtype=torch.float64)
    x_late = x.clone()
    x_late[:, :, 9:] *= 50  # huge later tokens must not change the features of earlier ones
    for side in (fm.queries, fm.keys):
        assert_close(side(x)[:, :, :9], side(x_late)[:, :, :9], rtol=0, atol=0)
        for t in (0, 16):
            assert_close(side(x)[:, :, t], side(x[:, :, t]), rtol=1e-13, atol=0)
    # the causal output at position i ignores every later token, however large
    q, k, v = rand_qkv(1, 2, 17, 6)
    k_late = k.clone()
    k_late[:, :, 9:] *= 50
    y, _ = performer_attention(q, k, v, feature_map=fm, causal=True)
    assert_close(performer_attention(q, k_late, v, feature_map=fm, causal=True)[0][:, :, :9], y[:, :, :9])


def test_projection_is_fixed_until_redraw_and_saved_in_state_dict():
    torch.manual_seed(0)
    attn = build_attention("performer", 16, 2, causal=True).double().train()
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    first, _, _ = attn(x)
    again, _, _ = attn(x)
    assert torch.equal(first, again)  # training mode does not redraw either
    saved = {k: v.clone() for k, v in attn.state_dict().items()}
    assert "feature_map.projection" in saved
    attn.redraw(torch.Generator().manual_seed(5))
    redrawn, _, _ = attn(x)
    assert not torch.equal(attn.feature_map.projection, saved["feature_map.projection"])
    assert not torch.allclose(redrawn, first)
    attn.load_state_dict(saved)
    restored, _, _ = attn(x)
    assert torch.equal(restored, first)
    # the same generator redraws the same projection
    a, b = favor(5), favor(5, seed=9)
    a.redraw(torch.Generator().manual_seed(2))
    b.redraw(torch.Generator().manual_seed(2))
    assert torch.equal(a.projection, b.projection)


@pytest.mark.parametrize("head_dim", [32, 64, 128])
def test_float32_keeps_the_float64_answer(head_dim):
    """The stabilisers keep every feature a normal float32 number for ordinary inputs, so float32
    agrees with float64 (without them, exp(ωᵀx) overflows float32 at these sizes)."""
    q, k, v = rand_qkv(1, 2, 64, head_dim, 8)
    q, k = 3 * q, 3 * k
    fm = favor(head_dim, seed=4)
    for causal in (False, True):
        ref, _ = performer_attention(q, k, v, feature_map=fm, causal=causal)
        out, _ = performer_attention(q.float(), k.float(), v.float(), feature_map=fm.float(), causal=causal)
        assert torch.isfinite(out).all()
        torch.testing.assert_close(out.double(), ref, rtol=1e-3, atol=1e-3)
        fm.double()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_is_computed_in_float32(dtype):
    q, k, v = rand_qkv(2, 2, 40, 16, dtype=torch.float32)
    fm = FavorPlus(16, generator=torch.Generator().manual_seed(0))
    for causal in (False, True):
        out, _ = performer_attention(q.to(dtype), k.to(dtype), v.to(dtype), feature_map=fm, causal=causal)
        assert out.dtype == dtype and torch.isfinite(out).all()
        ref, _ = performer_attention(q, k, v, feature_map=fm, causal=causal)
        torch.testing.assert_close(out.float(), ref, rtol=0.05, atol=0.05)


def test_gradients_match_finite_differences():
    q, k, v = rand_qkv(1, 1, 6, 3, 2, requires_grad=True)
    fm = favor(3, 5)
    for causal in (False, True):
        assert torch.autograd.gradcheck(
            lambda q, k, v, causal=causal: performer_attention(q, k, v, feature_map=fm, causal=causal, chunk_size=4)[0],
            (q, k, v)
        )


def test_fully_padded_sequence_gives_zeros_not_nan():
    q, k, v = rand_qkv(2, 1, 5, 4)
    out, _ = performer_attention(q, k, v, feature_map=favor(4), key_padding_mask=right_padding_mask([5, 0], 5))
    assert torch.isfinite(out).all() and torch.all(out[1] == 0)


def test_module_defaults_and_bad_input():
    attn = PerformerAttention(32, 4)
    assert attn.feature_map.dim == 8 and attn.feature_map.n_features == default_n_features(8) == 17
    q, k, v = rand_qkv(1, 1, 4, 4)
    with pytest.raises(TypeError, match="FavorPlus"):
        performer_attention(q, k, v, feature_map="elu")
    with pytest.raises(ValueError, match="head dim 4"):
        performer_attention(q, k, v, feature_map=favor(5))
    with pytest.raises(ValueError, match="n_features"):
        FavorPlus(4, 0)
    with pytest.raises(ValueError, match="dim"):
        FavorPlus(0)
    with pytest.raises(TypeError, match="queries"):
        favor(4)(q)  # one φ for both sides would skip the stabilisers' split
    with pytest.raises(ValueError, match="last dim 4"):
        favor(4).keys(torch.randn(3, 5))
