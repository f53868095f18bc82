"""Softmax attention (SDPA) against its explicit form, and the module registry's common interface."""
import pytest
import torch

from attention_helpers import assert_close, rand_qkv, right_padding_mask
from lra_kit.attention import (
    ATTENTIONS,
    AttentionOutput,
    attention_names,
    attention_spec,
    build_attention,
    softmax_attention,
)
from lra_kit.attention.naive import naive_softmax_attention

# Options a row needs to be built outside a model: Linformer's projections have the sequence's length n,
# which the models pass as max_length.
OPTIONS = {name: {"max_length": 16} for name, spec in ATTENTIONS.items() if spec.max_length}


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("N", [1, 9, 33])
def test_softmax_matches_explicit(causal, N):
    q, k, v = rand_qkv(2, 2, N, 4)
    mask = right_padding_mask([N, max(1, N - 4)], N)
    no_padding = torch.zeros(2, N, dtype=torch.bool)  # the fast path: an all-False mask is dropped
    for m in (None, mask, no_padding):
        assert_close(
            softmax_attention(q, k, v, causal=causal, key_padding_mask=m),
            naive_softmax_attention(q, k, v, causal=causal, key_padding_mask=m),
        )


def test_fully_padded_sequence_gives_zeros_not_nan():
    q, k, v = rand_qkv(2, 1, 6, 3, requires_grad=True)
    mask = right_padding_mask([6, 0], 6)
    out = softmax_attention(q, k, v, key_padding_mask=mask)
    assert torch.isfinite(out).all() and torch.all(out[1] == 0)
    out.sum().backward()
    assert torch.isfinite(q.grad).all()


@pytest.mark.parametrize("name", attention_names())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_registry_builds_every_attention_with_common_forward(name, dtype):
    torch.manual_seed(0)
    attn = build_attention(name, 16, 4, **OPTIONS.get(name, {})).to(dtype)  # the defaults, and a length
    assert isinstance(attn, ATTENTIONS[name].module)
    x = torch.randn(2, 11, 16, dtype=dtype)
    p = torch.randn(1, 3, 16, dtype=dtype) if ATTENTIONS[name].extra_sequence else None
    mask = right_padding_mask([11, 6], 11)
    y, p_out, state = attn(x, p, key_padding_mask=mask)
    assert state is None
    assert y.shape == x.shape and y.dtype == dtype and torch.isfinite(y).all()
    # padding is invisible: the real positions of the padded sequence are those of its unpadded prefix
    y_short, _, _ = attn(x[1:, :6], p, key_padding_mask=None)
    torch.testing.assert_close(y[1:, :6], y_short, rtol=1e-4 if dtype == torch.float32 else 1e-9, atol=1e-5)
    if ATTENTIONS[name].extra_sequence:
        assert p_out.shape == (2, 3, 16)
    else:
        assert p_out is None


@pytest.mark.parametrize("name", [n for n in attention_names() if ATTENTIONS[n].step])
def test_causal_modules_step_equals_forward(name):
    torch.manual_seed(0)
    attn = build_attention(name, 16, 2, causal=True).double().eval()
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    p = torch.randn(1, 4, 16, dtype=torch.float64) if ATTENTIONS[name].extra_sequence else None
    y, _, _ = attn(x, p)
    state, outs = None, []
    for t in range(9):
        y_t, state = attn.step(x[:, t], p, state)
        outs.append(y_t)
    assert_close(torch.stack(outs, 1), y)


BUILDS = [(name, causal) for name in attention_names() for causal in (False, True)
          if not causal or ATTENTIONS[name].causal]  # every row, causal where it has a causal form


@pytest.mark.parametrize("name,causal", BUILDS)
def test_forward_always_returns_out_p_state(name, causal):
    """Every row of the table, causal and not: forward returns AttentionOutput(out, p, state) whatever its flags."""
    torch.manual_seed(0)
    spec = ATTENTIONS[name]
    attn = build_attention(name, 16, 2, causal=causal, **OPTIONS.get(name, {})).double().eval()
    x = torch.randn(2, 7, 16, dtype=torch.float64)
    p = torch.randn(1, 3, 16, dtype=torch.float64)  # Luna's extra sequence; the others must pass it through
    mask = right_padding_mask([7, 4], 7)
    plain = attn(x, p)
    for result in (plain, attn(x, p, mask), attn(x, p, key_padding_mask=mask, output_final_state=False)):
        assert isinstance(result, AttentionOutput) and len(result) == 3
        y, p_out, state = result
        assert y.shape == x.shape and state is None and result.out is y and result.state is None
        if spec.extra_sequence:  # packed context (batch, l, d) when non-causal; causal Luna packs nothing forward
            assert (p_out is None) if causal else (p_out.shape == (2, 3, 16))
        else:
            assert p_out is p
    if not spec.extra_sequence:
        assert attn(x).p is None and len(attn(x)) == 3
    if not causal or not spec.step:  # no state to return: non-causal, or no recurrent form (LSH)
        with pytest.raises(ValueError, match="causal|recurrent form"):
            attn(x, p, output_final_state=True)
        return
    final = attn(x, p, output_final_state=True)
    assert isinstance(final, AttentionOutput) and len(final) == 3 and final.state is not None
    assert_close(final.out, plain.out)
    # a state in, none asked for: still three values, state None; the two halves make the whole
    first = attn(x[:, :3], p, output_final_state=True)
    rest = attn(x[:, 3:], p, initial_state=first.state)
    assert isinstance(rest, AttentionOutput) and len(rest) == 3 and rest.state is None
    assert_close(torch.cat([first.out, rest.out], 1), plain.out)


def test_table_rows_are_consistent():
    assert attention_names() == tuple(ATTENTIONS) and len(set(attention_names())) == len(ATTENTIONS)
    for name, spec in ATTENTIONS.items():
        assert spec.name == name and spec.summary
        assert spec.options(causal=True)["causal"] is True
        with pytest.raises(TypeError):
            spec.defaults["new"] = 1  # the table is read-only: a caller cannot change another's defaults
    assert build_attention("momentum", 16, 2).beta == ATTENTIONS["momentum"].defaults["beta"]
    assert build_attention("momentum", 16, 2, beta=0.3).beta == 0.3  # the caller's option wins


def test_registry_errors_name_the_valid_options():
    valid = ", ".join(sorted(attention_names()))
    with pytest.raises(ValueError, match=f"unknown attention 'nystrom'; valid names: {valid}"):
        build_attention("nystrom", 16, 2)
    with pytest.raises(ValueError, match="valid names"):
        attention_spec("Softmax")
    with pytest.raises(TypeError, match="linear"):
        build_attention("linear", 16, 2, beta=0.5)
    with pytest.raises(ValueError, match="beta"):
        build_attention("momentum", 16, 2, beta=1.0)
    with pytest.raises(ValueError, match="divisible"):
        build_attention("linear", 16, 3)
    with pytest.raises(ValueError, match="feature_map"):
        build_attention("linear", 16, 2, feature_map="gelu")


def test_split_and_merge_heads_are_inverse():
    from lra_kit.attention import merge_heads, split_heads

    x = torch.arange(2 * 5 * 12, dtype=torch.float64).reshape(2, 5, 12)
    h = split_heads(x, 3)
    assert h.shape == (2, 3, 5, 4)
    assert torch.equal(h[1, 2, 4], x[1, 4, 8:12])  # head j holds features j·D … (j+1)·D − 1 of each position
    assert torch.equal(merge_heads(h), x)
    assert torch.equal(split_heads(x[:, 0], 3), h[:, :, 0]) and torch.equal(merge_heads(h[:, :, 0]), x[:, 0])
    with pytest.raises(ValueError, match="divisible by n_heads=5"):
        split_heads(x, 5)
    with pytest.raises(ValueError, match="n_heads"):
        split_heads(x, 0)
