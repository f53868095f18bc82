"""Luna (Ma et al. 2021): pack/unpack against explicit softmax matrices; causal Luna against the loop of eq. 7."""
import pytest
import torch

from attention_helpers import assert_close, right_padding_mask
from lra_kit.attention import LunaAttention, LunaState, causal_mean_product
from lra_kit.attention.luna import _causal_luna, causal_luna_attention, causal_luna_step, real_token_counts
from lra_kit.attention.naive import naive_causal_mean_product, naive_luna_attention


def make(d=16, heads=4, *, seed=0, **kw):
    torch.manual_seed(seed)
    return LunaAttention(d, heads, **kw).double().eval()


def inputs(B=2, n=13, l=5, d=16, seed=1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, n, d, generator=g, dtype=torch.float64)
    return x, torch.randn(1, l, d, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("tie_kv", [False, True])
@pytest.mark.parametrize("n_pack_heads", [None, 2, 1])
@pytest.mark.parametrize("n, l", [(1, 1), (13, 5), (40, 16)])
def test_pack_unpack_matches_explicit_oracle(tie_kv, n_pack_heads, n, l):
    luna = make(tie_kv=tie_kv, n_pack_heads=n_pack_heads)
    x, p = inputs(n=n, l=l)
    mask = right_padding_mask([n, max(1, n // 2)], n)
    y, packed, _ = luna(x, p, key_padding_mask=mask)
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
    y, packed, _ = luna(x, p)
    y_perm, packed_perm, _ = luna(x[:, perm], p)
    assert_close(y_perm, y[:, perm])
    assert_close(packed_perm, packed)


def test_padding_changes_nothing_for_real_tokens():
    luna = make()
    x, p = inputs(B=2, n=12)
    mask = right_padding_mask([12, 7], 12)
    y, packed, _ = luna(x, p, key_padding_mask=mask)
    y_alone, packed_alone, _ = luna(x[1:, :7], p)
    assert_close(y[1:, :7], y_alone)
    assert_close(packed[1:], packed_alone)


def test_cost_is_linear_in_length_packed_size_fixed():
    luna = make()
    for n in (8, 64):
        x, p = inputs(n=n, l=4)
        y, packed, _ = luna(x, p)
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
    y, y_p, state = luna(x, p)
    assert y_p is None and state is None
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
    y, _, _ = luna(x, p)
    x2 = x.clone()
    x2[:, 11:] = torch.randn_like(x2[:, 11:])
    y2, _, _ = luna(x2, p)
    assert torch.equal(y[:, :11], y2[:, :11])
    assert not torch.allclose(y[:, 11:], y2[:, 11:])


def test_causal_gradients_equal_oracle():
    luna = make(causal=True)
    x, p = inputs(n=17)
    x.requires_grad_(True)
    g_fast = torch.autograd.grad(luna(x, p)[0].square().sum(), x)[0]
    g_slow = torch.autograd.grad(naive_luna_attention(luna, x, p)[0].square().sum(), x)[0]
    assert_close(g_fast, g_slow)


def left_padding_mask(lengths, N):
    """bool (B, N), True on the first N − length positions (padding at the start)."""
    lengths = torch.as_tensor(lengths)
    return torch.arange(N)[None, :] < (N - lengths)[:, None]


@pytest.mark.parametrize("side", ["left", "right"])
def test_causal_padding_counts_real_tokens_only(side):
    """t of eq. 7 counts real tokens: a padded batch equals its sequences run alone, at every real position."""
    luna = make(causal=True)
    x, p = inputs(B=3, n=20, l=5)
    lengths = [20, 13, 6]
    mask = (left_padding_mask if side == "left" else right_padding_mask)(lengths, 20)
    x = x.masked_fill(mask[..., None], 1e3)  # padding content must not matter either
    y, _, _ = luna(x, p, key_padding_mask=mask)
    assert torch.isfinite(y).all()
    assert_close(y, naive_luna_attention(luna, x, p, key_padding_mask=mask)[0])
    for b, n in enumerate(lengths):
        real = x[b : b + 1][~mask[b : b + 1]].view(1, n, -1)
        alone, _, _ = luna(real, p)
        assert_close(y[b][~mask[b]], alone[0])


def test_real_token_counts():
    mask = left_padding_mask([4, 2], 4)
    assert real_token_counts(mask, 2, 4).tolist() == [[1, 2, 3, 4], [0, 0, 1, 2]]
    assert real_token_counts(None, 1, 3, start=torch.tensor([5])).tolist() == [[6, 7, 8]]


def causal_parts(B=2, H=3, n=23, d=4, l=5, seed=0, requires_grad=False):
    g = torch.Generator().manual_seed(seed)
    q, k, v, c = (torch.randn(B, H, n, d, generator=g, dtype=torch.float64) for _ in range(4))
    pq = torch.randn(1, H, l, d, generator=g, dtype=torch.float64)
    return [t.requires_grad_(requires_grad) for t in (q, k, v, c, pq)]


def split_at(parts, m):
    return [t[:, :, :m] for t in parts[:4]] + [parts[4]], [t[:, :, m:] for t in parts[:4]] + [parts[4]]


@pytest.mark.parametrize("m", [1, 9, 22])
@pytest.mark.parametrize("chunk_size", [4, 64])
def test_two_parts_equal_whole_and_state_is_the_steps_state(m, chunk_size):
    parts = causal_parts()
    whole, state_n = causal_luna_attention(*parts, output_final_state=True, chunk_size=chunk_size)
    assert_close(whole, causal_luna_attention(*parts, chunk_size=chunk_size)[0])
    first, second = split_at(parts, m)
    y1, s1 = causal_luna_attention(*first, output_final_state=True, chunk_size=chunk_size)
    y2, s2 = causal_luna_attention(*second, initial_state=s1, output_final_state=True, chunk_size=chunk_size)
    assert_close(torch.cat([y1, y2], dim=2), whole)
    # step from the parallel state continues the sequence, and ends in the same state
    state, outs = s1, []
    for t in range(m, parts[0].shape[2]):
        y_t, state = causal_luna_step(*(x[:, :, t] for x in parts[:4]), parts[4], state)
        outs.append(y_t)
    assert_close(torch.stack(outs, dim=2), y2)
    for a, b in zip((s2, state), (state_n, state_n), strict=False):
        assert isinstance(a, LunaState)
        assert_close(a.key_pack, b.key_pack)
        assert_close(a.pack_value, b.pack_value)
        assert torch.equal(a.t, b.t) and a.t.tolist() == [23, 23]


def test_parallel_continues_from_any_step_state_and_padding():
    parts = causal_parts(B=2, n=15)
    mask = left_padding_mask([15, 10], 15)
    whole, _ = causal_luna_attention(*parts, key_padding_mask=mask)
    first, second = split_at(parts, 6)
    _, s1 = causal_luna_attention(*first, key_padding_mask=mask[:, :6], output_final_state=True)
    assert s1.t.tolist() == [6, 1]
    y2, _ = causal_luna_attention(*second, key_padding_mask=mask[:, 6:], initial_state=s1)
    assert_close(y2, whole[:, :, 6:])
    # a state built by stepping over row 1's real tokens continues in the parallel form
    row, state = [x[1:] for x in parts[:4]], None
    for t in range(5, 11):
        _, state = causal_luna_step(*(x[:, :, t] for x in row), parts[4], state)
    y_rest, _ = causal_luna_attention(*(x[:, :, 11:] for x in row), parts[4], initial_state=state)
    assert_close(y_rest, whole[1:, :, 11:])


def test_gradients_through_the_state_equal_the_whole_sequence():
    parts = causal_parts(requires_grad=True, n=19)
    target = torch.randn(2, 3, 19, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    loss = lambda y: (y * target[:, :, -y.shape[2]:]).sum()  # noqa: E731
    g_whole = torch.autograd.grad(loss(causal_luna_attention(*parts)[0]), parts)
    first, second = split_at(parts, 8)
    y1, s1 = causal_luna_attention(*first, output_final_state=True)
    y2, _ = causal_luna_attention(*second, initial_state=s1)
    g_split = torch.autograd.grad(loss(torch.cat([y1, y2], dim=2)), parts)
    for a, b in zip(g_split, g_whole, strict=False):
        assert_close(a, b)


def test_gradient_wrt_initial_state_gradcheck():
    parts = causal_parts(B=1, H=2, n=7, d=3, l=2, requires_grad=True)
    g = torch.Generator().manual_seed(2)
    key_pack = torch.randn(1, 2, 3, 2, generator=g, dtype=torch.float64, requires_grad=True)
    pack_value = torch.randn(1, 2, 2, 3, generator=g, dtype=torch.float64, requires_grad=True)

    def fn(q, k, v, c, pq, kp, pv):
        y, s = causal_luna_attention(q, k, v, c, pq, initial_state=LunaState(kp, pv, torch.tensor([3])),
                                     output_final_state=True, chunk_size=3)
        return y, s.key_pack, s.pack_value

    assert torch.autograd.gradcheck(fn, (*parts, key_pack, pack_value))


def test_backward_keeps_no_length_by_slots_tensor():
    """Issue of memory: A_pack, the logits and A_unpack (n × l per head) are recomputed, not saved."""
    B, H, n, d, l = 1, 2, 200, 4, 7
    parts = causal_parts(B=B, H=H, n=n, d=d, l=l, requires_grad=True)
    saved = []

    def pack(t):
        saved.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y, _ = causal_luna_attention(*parts, dropout_p=0.1)
    assert saved, "the hook saw nothing: the test would prove nothing"
    assert not [s for s in saved if len(s) >= 2 and s[-1] == l and n in s], saved
    # ... while the same computation without the checkpoint saves several
    saved.clear()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        _causal_luna(*parts, None, None, real_token_counts(None, B, n), None, activation="softplus", dropout_p=0.1,
                     chunk_size=64, final=False)
    assert len([s for s in saved if s == (B, H, n, l)]) >= 2
    y.sum().backward()
    assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in parts)


def test_dropout_is_replayed_in_backward():
    parts = causal_parts(requires_grad=True)
    counts = real_token_counts(None, 2, 23)
    torch.manual_seed(7)
    fast = torch.autograd.grad(causal_luna_attention(*parts, dropout_p=0.4)[0].square().sum(), parts)
    torch.manual_seed(7)
    plain = _causal_luna(*parts, None, None, counts, None, activation="softplus", dropout_p=0.4, chunk_size=64,
                         final=False)
    slow = torch.autograd.grad(plain.square().sum(), parts)
    for a, b in zip(fast, slow, strict=False):
        assert_close(a, b)


def test_module_state_in_and_out():
    luna = make(causal=True, tie_kv=True)
    x, p = inputs(n=16)
    y, _, _ = luna(x, p)
    y1, none, s1 = luna(x[:, :10], p, output_final_state=True)
    assert none is None and isinstance(s1, LunaState)
    y2, _, s2 = luna(x[:, 10:], p, initial_state=s1, output_final_state=True)
    assert_close(torch.cat([y1, y2], 1), y)
    state = s1
    for t in range(10, 16):
        y_t, state = luna.step(x[:, t], p, state)
    assert_close(y_t, y[:, -1])
    assert_close(state.key_pack, s2.key_pack)


def test_initialisation_follows_current_official_code():
    luna = make()
    assert torch.count_nonzero(luna.out_proj.bias) == 0
    assert torch.count_nonzero(luna.q_proj.bias) > 0  # not zeroed any more (fairseq-apollo, since Oct 2021)
    bound = (6 / 32) ** 0.5 / 2 ** 0.5  # Xavier-uniform, gain 1/√2
    assert luna.q_proj.weight.abs().max() <= bound and luna.q_proj.weight.abs().max() > 0.9 * bound


def test_invalid_state_and_inputs():
    parts = causal_parts()
    with pytest.raises(ValueError, match="state.key_pack"):
        causal_luna_attention(*parts, initial_state=LunaState(torch.zeros(2, 3, 4, 4), torch.zeros(2, 3, 5, 4),
                                                              torch.zeros(2, dtype=torch.long)))
    with pytest.raises(TypeError, match="LunaState"):
        causal_luna_attention(*parts, initial_state=(1, 2, 3))
    with pytest.raises(ValueError, match="pack_query"):
        causal_luna_attention(*parts[:4], parts[4][..., :2])
    with pytest.raises(ValueError, match="key_padding_mask"):
        causal_luna_attention(*parts, key_padding_mask=torch.zeros(2, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="dropout_p"):
        causal_luna_attention(*parts, dropout_p=1.0)
    luna = make()
    x, p = inputs()
    with pytest.raises(ValueError, match="causal"):
        luna(x, p, output_final_state=True)


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
