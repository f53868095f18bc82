"""Luna (Ma et al. 2021): pack/unpack against explicit softmax matrices; causal Luna against the loop of eq. 7."""
import pytest
import torch

from attention_helpers import assert_close, right_padding_mask
from lra_kit.attention import LunaAttention, causal_mean_product
from lra_kit.attention.naive import naive_causal_mean_product, naive_luna_attention


def make(d=16, heads=4, *, seed=0, **kw):
    torch.manual_seed(seed)
    return LunaAttention(d, heads, **kw).double().eval()


def inputs(B=2, n=13, l=5, d=16, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, n, d, generator=g, dtype=torch.float64), torch.randn(1, l, d, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("tie_kv", [False, True])
@pytest.mark.parametrize("n_pack_heads", [None, 2, 1])
@pytest.mark.parametrize("n, l", [(1, 1), (13, 5), (40, 16)])
def test_pack_unpack_matches_explicit_oracle(tie_kv, n_pack_heads, n, l):
    luna = make(tie_kv=tie_kv, n_pack_heads=n_pack_heads)
    x, p = inputs(n=n, l=l)
    mask = right_padding_mask([n, max(1, n // 2)], n)
    y, packed = luna(x, p, key_padding_mask=mask)
    y_ref, packed_ref = naive_luna_attention(luna, x, p, key_padding_mask=mask)
    assert y.shape == x.shape and packed.shape == (2, l, 16)
    assert_close(y, y_ref)
    assert_close(packed, packed_ref)


def test_parameters_follow_official_code():
    names = lambda m: {n.split(".")[0] for n, _ in m.named_parameters()}  # noqa: E731
    assert names(make(tie_kv=True)) == {"pq_proj", "q_proj", "pc_proj", "c_proj", "out_proj"}
    assert names(make(tie_kv=False)) == {"pq_proj", "q_proj", "pk_proj", "pv_proj", "k_proj", "v_proj", "out_proj"}


def test_permutation_equivariant_in_x_and_packed_output_invariant():
    luna = make()
    x, p = inputs(n=21)
    perm = torch.randperm(21, generator=torch.Generator().manual_seed(3))
    y, packed = luna(x, p)
    y_perm, packed_perm = luna(x[:, perm], p)
    assert_close(y_perm, y[:, perm])
    assert_close(packed_perm, packed)


def test_padding_changes_nothing_for_real_tokens():
    luna = make()
    x, p = inputs(B=2, n=12)
    mask = right_padding_mask([12, 7], 12)
    y, packed = luna(x, p, key_padding_mask=mask)
    y_alone, packed_alone = luna(x[1:, :7], p)
    assert_close(y[1:, :7], y_alone)
    assert_close(packed[1:], packed_alone)


def test_cost_is_linear_in_length_packed_size_fixed():
    luna = make()
    for n in (8, 64):
        x, p = inputs(n=n, l=4)
        y, packed = luna(x, p)
        assert packed.shape[1] == 4  # the packed context has length l whatever n is


# Causal Luna (§3.3) ------------------------------------------------------------------------


def test_causal_mean_product_is_eq7():
    g = torch.Generator().manual_seed(0)
    x, y, z = (torch.randn(2, 3, 19, d, generator=g, dtype=torch.float64) for d in (4, 4, 6))
    assert_close(causal_mean_product(x, y, z), naive_causal_mean_product(x, y, z))


@pytest.mark.parametrize("tie_kv", [False, True])
@pytest.mark.parametrize("pack_activation", ["softplus", "elu"])
def test_causal_matches_eq7_oracle_and_steps(tie_kv, pack_activation):
    luna = make(causal=True, tie_kv=tie_kv, pack_activation=pack_activation)
    x, p = inputs(n=70, l=6)
    y, y_p = luna(x, p)
    assert y_p is None
    y_ref, _ = naive_luna_attention(luna, x, p)
    assert_close(y, y_ref)
    state, outs = None, []
    for t in range(x.shape[1]):
        y_t, state = luna.step(x[:, t], p, state)
        outs.append(y_t)
        assert state.key_pack.shape == (2, 4, 4, 6) and state.pack_value.shape == (2, 4, 6, 4)
    assert_close(torch.stack(outs, 1), y)


def test_causal_no_future_leakage():
    luna = make(causal=True)
    x, p = inputs(n=30)
    y, _ = luna(x, p)
    x2 = x.clone()
    x2[:, 11:] = torch.randn_like(x2[:, 11:])
    y2, _ = luna(x2, p)
    assert torch.equal(y[:, :11], y2[:, :11])
    assert not torch.allclose(y[:, 11:], y2[:, 11:])


def test_causal_gradients_equal_oracle():
    luna = make(causal=True)
    x, p = inputs(n=17)
    x.requires_grad_(True)
    g_fast = torch.autograd.grad(luna(x, p)[0].square().sum(), x)[0]
    g_slow = torch.autograd.grad(naive_luna_attention(luna, x, p)[0].square().sum(), x)[0]
    assert_close(g_fast, g_slow)


def test_invalid_arguments():
    with pytest.raises(ValueError, match="n_heads"):
        LunaAttention(16, 3)
    with pytest.raises(ValueError, match="n_pack_heads"):
        LunaAttention(16, 4, n_pack_heads=5)
    with pytest.raises(ValueError, match="pack_activation"):
        LunaAttention(16, 4, causal=True, pack_activation="softmax")
    luna = make()
    x, p = inputs()
    with pytest.raises(ValueError, match="p must have shape"):
        luna(x, p[..., :8])
    with pytest.raises(TypeError, match="needs p"):
        luna(x, None)
    with pytest.raises(RuntimeError, match="causal"):
        luna.step(x[:, 0], p)
