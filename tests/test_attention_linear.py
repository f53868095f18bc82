"""Linear attention (Katharopoulos et al.): fast paths against the float64 oracles of lra_kit.attention.naive."""
import pytest
import torch
from attention_helpers import assert_close, rand_qkv, right_padding_mask

from lra_kit.attention import causal_product, linear_attention, linear_attention_step
from lra_kit.attention.naive import (
    naive_cumulative_state_causal_product,
    naive_linear_attention,
    naive_linear_recurrent,
)
from lra_kit.bench.attention import peak_memory_by_length
from lra_kit.bench.measure import cpu_peak_supported

SHAPES = [  # (B, H, N, D, M): length 1, head dim 1, lengths not divisible by the chunk size
    (1, 1, 1, 1, 1),
    (2, 3, 17, 5, 4),
    (1, 2, 64, 8, 8),
    (2, 1, 130, 3, 1),
    (1, 2, 200, 16, 7),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("feature_map", ["elu", "relu", "softplus"])
def test_linear_matches_kernel_matrix_oracle(shape, causal, feature_map):
    B, H, N, D, M = shape
    q, k, v = rand_qkv(B, H, N, D, M)
    out, _ = linear_attention(q, k, v, causal=causal, feature_map=feature_map)
    ref = naive_linear_attention(q, k, v, causal=causal, feature_map=feature_map)
    assert out.shape == (B, H, N, M)
    assert_close(out, ref, msg=f"{shape} causal={causal} {feature_map}")


@pytest.mark.parametrize("chunk_size", [1, 3, 16, 64, 1000])
def test_causal_linear_any_chunk_size(chunk_size):
    q, k, v = rand_qkv(2, 2, 37, 4, 6)
    out, _ = linear_attention(q, k, v, causal=True, chunk_size=chunk_size)
    assert_close(out, naive_linear_attention(q, k, v, causal=True))


def test_callable_feature_map():
    q, k, v = rand_qkv()
    square = lambda x: x * x
    assert_close(
        linear_attention(q, k, v, causal=True, feature_map=square)[0],
        naive_linear_attention(q, k, v, causal=True, feature_map=square),
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_parallel_equals_recurrent(shape):
    """Eq. 9 computed in parallel equals the RNN of eqs. 16–20, both as the naive loop and as steps."""
    B, H, N, D, M = shape
    q, k, v = rand_qkv(B, H, N, D, M)
    parallel, _ = linear_attention(q, k, v, causal=True)
    assert_close(parallel, naive_linear_recurrent(q, k, v)[0])
    state, outs = None, []
    for t in range(N):
        out_t, state = linear_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], state)
        outs.append(out_t)
        assert state.s.shape == (B, H, D, M) and state.z.shape == (B, H, D)  # constant size
    assert_close(torch.stack(outs, dim=2), parallel)


@pytest.mark.parametrize("causal", [False, True])
def test_padded_keys_change_nothing_for_real_tokens(causal):
    B, H, N, D = 3, 2, 20, 4
    lengths = [20, 13, 1]
    q, k, v = rand_qkv(B, H, N, D)
    mask = right_padding_mask(lengths, N)
    out, _ = linear_attention(q, k, v, causal=causal, key_padding_mask=mask)
    assert_close(out, naive_linear_attention(q, k, v, causal=causal, key_padding_mask=mask))
    for b, n in enumerate(lengths):
        alone, _ = linear_attention(q[b : b + 1, :, :n], k[b : b + 1, :, :n], v[b : b + 1, :, :n], causal=causal)
        assert_close(out[b : b + 1, :, :n], alone, msg=f"sequence {b}")
    # Garbage in the padding changes no real output.
    k2, v2 = k.clone(), v.clone()
    k2[mask[:, None, :, None].expand_as(k2)] = 1e3
    v2[mask[:, None, :, None].expand_as(v2)] = -1e3
    out2, _ = linear_attention(q, k2, v2, causal=causal, key_padding_mask=mask)
    real = ~mask[:, None, :, None].expand_as(out)
    assert_close(out2[real], out[real])


def test_padded_keys_get_zero_gradient():
    q, k, v = rand_qkv(2, 2, 12, 3, requires_grad=True)
    mask = right_padding_mask([12, 7], 12)
    linear_attention(q, k, v, causal=True, key_padding_mask=mask)[0].sum().backward()
    assert torch.all(k.grad[1, :, 7:] == 0) and torch.all(v.grad[1, :, 7:] == 0)


def test_causality_future_perturbation_changes_nothing_in_the_past():
    q, k, v = rand_qkv(2, 2, 50, 4)
    out, _ = linear_attention(q, k, v, causal=True)
    t = 23
    q2, k2, v2 = (x.clone() for x in (q, k, v))
    for x in (q2, k2, v2):
        x[:, :, t + 1 :] += torch.randn_like(x[:, :, t + 1 :]) * 5
    out2, _ = linear_attention(q2, k2, v2, causal=True)
    assert torch.equal(out[:, :, : t + 1], out2[:, :, : t + 1])
    assert not torch.allclose(out[:, :, t + 1 :], out2[:, :, t + 1 :])


@pytest.mark.parametrize("beta", [0.0, 0.5, 0.95])
def test_causal_product_gradcheck(beta):
    """The constant-memory backward (eqs. 13–15) against finite differences."""
    q, k, v = rand_qkv(1, 2, 11, 3, 2, requires_grad=True)
    assert torch.autograd.gradcheck(lambda q, k, v: causal_product(q, k, v, beta=beta, chunk_size=4)[0], (q, k, v))


@pytest.mark.parametrize("shape", SHAPES[1:])
def test_linear_gradients_equal_autograd_through_oracle(shape):
    B, H, N, D, M = shape
    q, k, v = rand_qkv(B, H, N, D, M, requires_grad=True)
    grad_out = torch.randn(B, H, N, M, dtype=torch.float64)
    fast = torch.autograd.grad((linear_attention(q, k, v, causal=True)[0] * grad_out).sum(), (q, k, v))
    slow = torch.autograd.grad((naive_linear_attention(q, k, v, causal=True) * grad_out).sum(), (q, k, v))
    for name, a, b in zip("qkv", fast, slow, strict=False):
        assert_close(a, b, rtol=1e-9, atol=1e-9, msg=f"grad {name}")


def _bytes_saved_for_backward(fn, *inputs):
    """Bytes of all tensors autograd keeps for backward while ``fn`` runs (inputs counted once)."""
    seen, total = set(), [0]

    def pack(t):
        key = (t.data_ptr(), t.numel(), t.dtype)
        if key not in seen:
            seen.add(key)
            total[0] += t.numel() * t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(*inputs)
    return total[0]


def test_memory_custom_gradient_linear_naive_cumulative_quadratic():
    """Saved-for-backward memory: O(N·D) for the custom gradient, O(N·D·M) for the cumulative states."""
    D = M = 32
    ours, naive = [], []
    for N in (256, 512, 1024):
        q, k, v = rand_qkv(1, 1, N, D, M, dtype=torch.float32, requires_grad=True)
        ours.append(_bytes_saved_for_backward(lambda *a: causal_product(*a)[0], q, k, v))
        naive.append(_bytes_saved_for_backward(naive_cumulative_state_causal_product, q, k, v))
    # Ours saves exactly q, k, v: 3·N·D floats.
    assert ours == [3 * N * D * 4 for N in (256, 512, 1024)]
    # The naive version keeps every state S_i: at least N·D·M floats, i.e. D times more.
    assert all(n >= N * D * M * 4 for n, N in zip(naive, (256, 512, 1024), strict=False))
    assert naive[-1] / ours[-1] > D / 4


def test_float32_close_to_float64_oracle_long_sequence():
    q, k, v = rand_qkv(1, 2, 2048, 16)
    out, _ = linear_attention(q.float(), k.float(), v.float(), causal=True)
    ref = naive_linear_attention(q, k, v, causal=True)
    torch.testing.assert_close(out.double(), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(feature_map="gelu"), ValueError, "feature_map"),
        (dict(eps=-1.0), ValueError, "eps"),
        (dict(key_padding_mask=torch.zeros(2, 5)), TypeError, "key_padding_mask"),
        (dict(key_padding_mask=torch.zeros(2, 4, dtype=torch.bool)), ValueError, "key_padding_mask"),
    ],
)
def test_invalid_arguments(kwargs, error, match):
    q, k, v = rand_qkv(2, 1, 5, 3)
    with pytest.raises(error, match=match):
        linear_attention(q, k, v, **kwargs)


def test_mismatched_shapes():
    q, k, v = rand_qkv(2, 1, 5, 3)
    with pytest.raises(ValueError, match="last dim"):
        linear_attention(q[..., :2], k, v)
    with pytest.raises(ValueError, match="same length"):
        linear_attention(q, k, v[:, :, :4])
    with pytest.raises(ValueError, match="batch, heads, length, dim"):
        linear_attention(q[0], k[0], v[0])
    with pytest.raises(ValueError, match="same length"):
        linear_attention(q[:, :, :3], k, v, causal=True)
    with pytest.raises(TypeError, match="floating"):
        linear_attention(q.long(), k.long(), v.long())


@pytest.mark.skipif(not cpu_peak_supported(), reason="needs /proc/self/clear_refs (Linux)")
def test_peak_memory_linear_in_length_naive_cumulative_length_dim_dim():
    """Measured peak memory of forward+backward (in a fresh process, lra_kit.bench): the custom
    gradient grows like N, the cumulative states like N·D·M."""
    D = M = 32
    # 4K to 16K: long enough to run in segments (shorter sequences are one segment, see
    # causal_product.segments), and large against the allocator's slack.
    lengths = [4096, 8192, 16384]
    peaks = peak_memory_by_length(["linear_causal", "linear_cumulative_states"], lengths, heads=2, dim=D)
    ours, naive = peaks["linear_causal"], peaks["linear_cumulative_states"]
    for N, a, b in zip(lengths, ours, naive, strict=False):
        assert b >= 2 * N * D * M * 4  # all N states of size D × M (float32), per head
        assert a < b / 8
    # Linear in N: a segment's temporaries are a constant, so doubling N adds what the last doubling added
    # twice over (a quadratic term would make the ratio 4).
    assert 1.5 < (ours[2] - ours[1]) / (ours[1] - ours[0]) < 2.6


@pytest.mark.parametrize("N, chunk_size", [(1, 64), (63, 64), (64, 64), (200, 64), (37, 5)])
def test_prefix_sum_equals_cumsum(N, chunk_size):
    from lra_kit.attention.causal.op import prefix_sum

    x = torch.randn(2, 3, N, 4, dtype=torch.float64, requires_grad=True)
    assert_close(prefix_sum(x, chunk_size), torch.cumsum(x, dim=2))
    g = torch.randn(2, 3, N, 4, dtype=torch.float64)
    (grad,) = torch.autograd.grad((prefix_sum(x, chunk_size) * g).sum(), x)
    assert_close(grad, torch.flip(torch.cumsum(torch.flip(g, [2]), 2), [2]))
