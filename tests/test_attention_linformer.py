"""Linformer: against the public ``linformer`` package (code nobody here wrote), the written-out oracle, softmax."""
from __future__ import annotations

import pytest
import torch

from attention_helpers import assert_close, rand_qkv, right_padding_mask
from lra_kit.attention import build_attention, linformer_attention, split_heads
from lra_kit.attention.naive import naive_linformer_attention, naive_softmax_attention
from lra_kit.models import ModelConfig, build_model

linformer = pytest.importorskip("linformer", reason="linformer is in the [test] extra")


@pytest.mark.parametrize("share_kv", [False, True])
@pytest.mark.parametrize("N", [24, 17])  # the full length n and a shorter sequence (the first N columns)
def test_equals_the_linformer_package(share_kv, N):
    torch.manual_seed(0)
    dim, heads, n, k = 16, 4, 24, 6
    theirs = linformer.LinformerSelfAttention(dim, seq_len=n, k=k, heads=heads, share_kv=share_kv).double()
    x = torch.randn(2, N, dim, dtype=torch.float64, requires_grad=True)
    q, kk = split_heads(theirs.to_q(x), heads), split_heads(theirs.to_k(x), heads)
    v = kk if share_kv else split_heads(theirs.to_v(x), heads)
    E = theirs.proj_k.T  # theirs is (n, k), applied as Σ_n x_n·P[n, :]; ours is (k, n)
    F = None if share_kv else theirs.proj_v.T
    ours = linformer_attention(q, kk, v, E=E, F=F)
    ours = theirs.to_out(ours.transpose(1, 2).reshape(2, N, dim))
    reference = theirs(x)
    assert_close(ours, reference)
    g = torch.randn_like(ours)
    assert_close(torch.autograd.grad(ours, x, g)[0], torch.autograd.grad(reference, x, g)[0])


def test_identity_projections_are_softmax_attention():
    """k = n and E = F = I: nothing is compressed, and eq. 7 is softmax attention (eq. 2)."""
    q, k, v = rand_qkv(2, 3, 11, 4)
    eye = torch.eye(11, dtype=torch.float64)
    assert_close(linformer_attention(q, k, v, E=eye, F=eye), naive_softmax_attention(q, k, v))
    mask = right_padding_mask([11, 7], 11)
    # with padding zeroed the padded keys still score 0 against every query: not softmax's masking
    padded = linformer_attention(q, k, v, E=eye, F=eye, key_padding_mask=mask)
    assert (padded[1] - naive_softmax_attention(q, k, v, key_padding_mask=mask)[1]).abs().max() > 1e-3


@pytest.mark.parametrize("per_head", [False, True])
def test_equals_the_written_out_oracle_and_padding_is_invisible(per_head):
    q, k, v = rand_qkv(2, 3, 13, 4, seed=2)
    g = torch.Generator().manual_seed(0)
    shape = (3, 5, 20) if per_head else (5, 20)
    E, F = torch.randn(shape, generator=g, dtype=torch.float64), torch.randn(shape, generator=g, dtype=torch.float64)
    mask = right_padding_mask([13, 8], 13)
    out = linformer_attention(q, k, v, E=E, F=F, key_padding_mask=mask)
    assert_close(out, naive_linformer_attention(q, k, v, E=E, F=F, key_padding_mask=mask))
    short = linformer_attention(q[1:, :, :8], k[1:, :, :8], v[1:, :, :8], E=E, F=F)
    assert_close(out[1:, :, :8], short)


@pytest.mark.parametrize("sharing,n_projections", [("none", 2 * 3), ("headwise", 2), ("key-value", 1),
                                                   ("layerwise", 1)])
def test_sharing_options_hold_the_projections_wang_et_al_describe(sharing, n_projections):
    """Wang et al. §4: per head E_i, F_i; one E, F per layer; E = F; one E for every layer."""
    torch.manual_seed(0)
    cfg = ModelConfig(attention="linformer", attention_options={"k": 5, "sharing": sharing}, layers=3, d_model=12,
                      n_heads=3, d_ff=16)
    model = build_model(cfg, kind="classification", vocab_size=9, num_classes=2, max_length=20)
    per_layer = {id(p) for layer in model.encoder.layers for name, p in layer.attn.named_parameters()
                 if name in ("E", "F")}
    first = model.encoder.layers[0].attn
    count = first.E.numel() // (5 * 20) + (0 if first.F is None else first.F.numel() // (5 * 20))
    assert count == n_projections
    assert len(per_layer) == (1 if sharing == "layerwise" else 3 * (2 if first.F is not None else 1))
    x = torch.randint(1, 9, (2, 20))
    model(x).sum().backward()  # one E shared by all layers gets every layer's gradient
    assert first.E.grad is not None and torch.isfinite(first.E.grad).all()


def test_errors_name_the_lengths_and_the_causal_alternatives():
    with pytest.raises(ValueError, match="'linear'.*'luna'"):
        build_attention("linformer", 16, 2, max_length=8, causal=True)
    attn = build_attention("linformer", 16, 2, max_length=8, k=4)
    with pytest.raises(ValueError, match="length 9 exceeds .*max_length=8"):
        attn(torch.randn(1, 9, 16))
    with pytest.raises(ValueError, match="max_length"):
        build_attention("linformer", 16, 2)
    with pytest.raises(ValueError, match="sharing"):
        build_attention("linformer", 16, 2, max_length=8, sharing="all")
    with pytest.raises(ValueError, match="no causal form"):
        attn(torch.randn(1, 4, 16), output_final_state=True)
    q, k, v = rand_qkv(1, 2, 9, 4)
    with pytest.raises(ValueError, match="length 9.*n = 8"):
        linformer_attention(q, k, v, E=torch.randn(3, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="max_length"):
        ModelConfig(attention="linformer").validate() and build_attention("linformer", 16, 2, causal=False)
