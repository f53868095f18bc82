"""State in, state out: the causal forms continue from any state, agree with the step functions, and
their gradient reaches the initial state; float16 safety; argument checks on entry."""
import pytest
import torch
from attention_helpers import assert_close, rand_qkv, right_padding_mask

from lra_kit.attention import (
    LinearState,
    MomentumState,
    attention_spec,
    linear_attention,
    linear_attention_step,
    momentum_attention,
    momentum_attention_step,
)
from lra_kit.attention.naive import naive_linear_recurrent, naive_momentum_recurrent

# The two state forms of the causal products: each name is the attention whose functions are tested.
STATES = {"linear": LinearState, "momentum": MomentumState}
BETAS = [0.0, 0.6, 0.999]
SPLITS = [1, 5, 16, 17, 63, 64, 65, 100, 149]  # chunk boundaries, segment boundaries (chunk 4 → 64), neither


def with_betas(*betas):
    """``(kind, β)`` for each state form: each β for an attention that takes one (its table defaults have β),
    β = 0 once for the others (it is not used)."""
    return [(kind, beta) for kind in STATES for beta in (betas if "beta" in attention_spec(kind).defaults else (0.0,))]


def run(kind, q, k, v, beta=0.6, gamma=0.7, **kw):
    if kind == "linear":
        return linear_attention(q, k, v, causal=True, **kw)
    return momentum_attention(q, k, v, beta=beta, gamma=gamma, causal=True, **kw)


def steps(kind, q, k, v, state, beta=0.6, gamma=0.7):
    outs = []
    for t in range(q.shape[2]):
        if kind == "linear":
            out_t, state = linear_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], state)
        else:
            out_t, state = momentum_attention_step(q[:, :, t], k[:, :, t], v[:, :, t], state, beta=beta, gamma=gamma)
        outs.append(out_t)
    return torch.stack(outs, 2), state


def assert_states_close(a, b, **kw):
    assert type(a) is type(b)
    for name, x, y in zip(a._fields, a, b, strict=False):
        assert_close(x, y, msg=f"state.{name}", **kw)


@pytest.mark.parametrize("kind, beta", with_betas(*BETAS))
@pytest.mark.parametrize("chunk_size", [4, 64])
def test_two_halves_equal_the_whole(kind, beta, chunk_size):
    q, k, v = rand_qkv(2, 2, 150, 4, 3)
    whole, final = run(kind, q, k, v, beta=beta, chunk_size=chunk_size, output_final_state=True)
    for t in SPLITS:
        first, state = run(kind, q[:, :, :t], k[:, :, :t], v[:, :, :t], beta=beta, chunk_size=chunk_size,
                           output_final_state=True)
        second, state = run(kind, q[:, :, t:], k[:, :, t:], v[:, :, t:], beta=beta, chunk_size=chunk_size,
                            initial_state=state, output_final_state=True)
        assert_close(torch.cat([first, second], 2), whole, rtol=1e-9, atol=1e-9, msg=f"split at {t}")
        assert_states_close(state, final, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind, beta", with_betas(*BETAS))
def test_parallel_final_state_is_the_state_after_n_steps_and_steps_continue_from_it(kind, beta):
    q, k, v = rand_qkv(2, 3, 90, 4, 5)
    whole, _ = run(kind, q, k, v, beta=beta, chunk_size=8)
    out, state = run(kind, q[:, :, :70], k[:, :, :70], v[:, :, :70], beta=beta, chunk_size=8, output_final_state=True)
    _, stepped = steps(kind, q[:, :, :70], k[:, :, :70], v[:, :, :70], None, beta=beta)
    assert_states_close(state, stepped, rtol=1e-9, atol=1e-9)
    rest, _ = steps(kind, q[:, :, 70:], k[:, :, 70:], v[:, :, 70:], state, beta=beta)
    assert_close(torch.cat([out, rest], 2), whole, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind, beta", with_betas(0.0, 0.8))
def test_parallel_continues_from_a_stepped_state(kind, beta):
    q, k, v = rand_qkv(1, 2, 40, 3)
    whole, _ = run(kind, q, k, v, beta=beta)
    first, state = steps(kind, q[:, :, :9], k[:, :, :9], v[:, :, :9], None, beta=beta)
    second, _ = run(kind, q[:, :, 9:], k[:, :, 9:], v[:, :, 9:], beta=beta, chunk_size=4, initial_state=state)
    assert_close(torch.cat([first, second], 2), whole, rtol=1e-9, atol=1e-9)


def random_state(kind, B, H, D, M, seed=1):
    g = torch.Generator().manual_seed(seed)
    s = torch.rand(B, H, D, M, generator=g, dtype=torch.float64)
    z = torch.rand(B, H, D, generator=g, dtype=torch.float64) + 1.0  # a normaliser of earlier, positive features
    if kind == "linear":
        return LinearState(s, z)
    return MomentumState(s, -torch.rand(B, H, D, M, generator=g, dtype=torch.float64), z)


@pytest.mark.parametrize("kind, beta", with_betas(0.0, 0.7))
@pytest.mark.parametrize("N, chunk_size", [(11, 4), (37, 2)])  # one segment; several segments
def test_gradient_reaches_initial_state_gradcheck(kind, beta, N, chunk_size):
    q, k, v = rand_qkv(1, 2, N, 3, 2, requires_grad=True)
    state = tuple(t.requires_grad_() for t in random_state(kind, 1, 2, 3, 2))
    cls = STATES[kind]

    def fn(q, k, v, *state):
        out, final = run(kind, q, k, v, beta=beta, chunk_size=chunk_size, initial_state=cls(*state),
                         output_final_state=True)
        return (out, *final)

    assert torch.autograd.gradcheck(fn, (q, k, v, *state))


@pytest.mark.parametrize("kind, beta", with_betas(0.9))
def test_gradient_with_states_equals_autograd_through_the_recurrent_oracle(kind, beta):
    B, H, N, D, M = 2, 2, 75, 4, 3
    q, k, v = rand_qkv(B, H, N, D, M, requires_grad=True)
    state = tuple(t.requires_grad_() for t in random_state(kind, B, H, D, M))
    weights = [torch.randn(B, H, N, M, dtype=torch.float64)] + [torch.randn_like(t) for t in state]
    leaves = (q, k, v, *state)

    def loss(out, final):
        return sum((w * t).sum() for w, t in zip(weights, (out, *final), strict=False))

    if kind == "linear":
        fast = linear_attention(q, k, v, causal=True, chunk_size=4, initial_state=LinearState(*state),
                                output_final_state=True)
        slow = naive_linear_recurrent(q, k, v, initial_state=state, output_final_state=True)
    else:
        fast = momentum_attention(q, k, v, beta=beta, gamma=0.6, causal=True, chunk_size=4,
                                  initial_state=MomentumState(*state), output_final_state=True)
        slow = naive_momentum_recurrent(q, k, v, beta=beta, gamma=0.6, initial_state=state, output_final_state=True)
    assert_close(fast[0], slow[0], rtol=1e-9, atol=1e-9)
    for name, a, b in zip(("q", "k", "v", "state[0]", "state[1]", "state[2]"), torch.autograd.grad(loss(*fast), leaves),
                          torch.autograd.grad(loss(*slow), leaves), strict=False):
        assert_close(a, b, rtol=1e-8, atol=1e-9, msg=f"grad {name}")


def test_state_with_padding_matches_steps_over_real_tokens():
    """Padded keys add nothing to the state: the final state of a right-padded sequence is its real prefix's."""
    q, k, v = rand_qkv(2, 2, 30, 3)
    mask = right_padding_mask([30, 12], 30)
    for kind in STATES:
        kw = {"beta": 0.0} if kind == "linear" else {"beta": 0.5}
        _, state = run(kind, q, k, v, key_padding_mask=mask, output_final_state=True, chunk_size=8, **kw)
        _, alone = run(kind, q[1:, :, :12], k[1:, :, :12], v[1:, :, :12], output_final_state=True, **kw)
        if kind == "linear":
            for x, y in zip(state, alone, strict=False):
                assert_close(x[1:], y)
        else:  # the momentum state keeps decaying over the padding (eq. 12 with φ(k)vᵀ = 0)
            _, stepped = steps(kind, q[1:, :, :12], k[1:, :, :12], v[1:, :, :12], None, beta=0.5)
            zero = torch.zeros_like(q[1:, :, 12:])
            _, stepped = steps(kind, zero, zero - 1e4, zero, stepped, beta=0.5)  # φ(−1e4) = 0: keys that add nothing
            for x, y in zip(state, stepped, strict=False):
                assert_close(x[1:], y, rtol=1e-9, atol=1e-12)


# float16 safety -------------------------------------------------------------------------------


@pytest.mark.parametrize("N", [1024, 4096, 65536])
@pytest.mark.parametrize("kind", list(STATES))
@pytest.mark.parametrize("causal", [False, True])
def test_float16_matches_float64_at_long_lengths(N, kind, causal):
    """The normaliser of N keys overflows float16 (65504) unless it accumulates in float32."""
    D = 64 if N <= 4096 else 8
    q, k, v = rand_qkv(1, 1 if N > 4096 else 2, N, D, dtype=torch.float16)
    kw = {"causal": causal} if kind == "linear" else {"causal": causal, "beta": 0.9, "gamma": 0.8}
    attend = linear_attention if kind == "linear" else momentum_attention
    out, _ = attend(q, k, v, **kw)
    ref, _ = attend(q.double(), k.double(), v.double(), **kw)
    assert out.dtype == torch.float16
    assert torch.isfinite(out).all()
    rel = ((out.double() - ref).abs().max() / ref.abs().max()).item()
    assert rel < 1e-2, f"relative error {rel:.1e}"
    assert (out == 0).double().mean() < 1e-3


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kind", list(STATES))
def test_half_steps_keep_float32_states(dtype, kind):
    q, k, v = rand_qkv(1, 2, 300, 8, dtype=dtype)
    out, state = steps(kind, q, k, v, None)
    assert out.dtype == dtype and all(t.dtype == torch.float32 for t in state)
    parallel, final = run(kind, q, k, v, output_final_state=True)
    assert all(t.dtype == torch.float32 for t in final)
    assert_states_close(final, state, rtol=1e-4, atol=1e-3)
    tol = 1e-2 if dtype == torch.float16 else 3e-2
    assert_close(out.float(), parallel.float(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("kind", list(STATES))
@pytest.mark.parametrize("causal", [False, True])
def test_fully_padded_row_gives_zero_output_and_zero_gradient(dtype, kind, causal):
    q, k, v = rand_qkv(2, 2, 40, 8, dtype=dtype, requires_grad=True)
    mask = right_padding_mask([40, 0], 40)  # the second sequence is all padding
    kw = {"causal": causal, "key_padding_mask": mask}
    out, _ = linear_attention(q, k, v, **kw) if kind == "linear" else momentum_attention(q, k, v, beta=0.6, **kw)
    (out.float() * torch.randn(out.shape)).sum().backward()
    assert torch.all(out[1] == 0)
    for name, t in (("q", q), ("k", k), ("v", v)):
        assert torch.isfinite(t.grad).all(), f"grad {name} not finite"
        assert torch.all(t.grad[1] == 0), f"grad {name} of the padded row"
    assert torch.isfinite(out[0]).all() and out[0].abs().sum() > 0


# memory --------------------------------------------------------------------------------------


def test_causal_attention_saves_only_inputs_and_output():
    """No φ(Q), φ(K), masked or ones-extended copy and no per-chunk state is kept for backward."""
    from test_attention_linear import _bytes_saved_for_backward

    N, D = 1000, 32
    q, k, v = rand_qkv(1, 2, N, D, dtype=torch.float32, requires_grad=True)
    for fn in (lambda q, k, v: linear_attention(q, k, v, causal=True)[0],
               lambda q, k, v: momentum_attention(q, k, v, beta=0.6, causal=True)[0]):
        assert _bytes_saved_for_backward(fn, q, k, v) == 4 * (2 * N * D * 4)  # q, k, v and the output


# argument checks -------------------------------------------------------------------------------


def test_state_argument_checks():
    q, k, v = rand_qkv(2, 1, 5, 3)
    good = LinearState(torch.zeros(2, 1, 3, 3, dtype=torch.float64), torch.zeros(2, 1, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="causal=True"):
        linear_attention(q, k, v, initial_state=good)
    with pytest.raises(ValueError, match="causal=True"):
        momentum_attention(q, k, v, beta=0.5, output_final_state=True)
    with pytest.raises(TypeError, match="output_final_state"):
        linear_attention(q, k, v, causal=True, output_final_state=1)
    with pytest.raises(ValueError, match="initial_state.s"):
        linear_attention(q, k, v, causal=True, initial_state=LinearState(good.s[:, :, :2], good.z))
    with pytest.raises(TypeError, match="initial_state"):
        linear_attention(q, k, v, causal=True, initial_state=good.s)
    with pytest.raises(TypeError, match="s/m/z"):
        momentum_attention(q, k, v, beta=0.5, causal=True, initial_state=good)
    with pytest.raises(TypeError, match="dtype"):
        half_state = LinearState(good.s.half(), good.z.half())
        linear_attention(q.half(), k.half(), v.half(), causal=True, initial_state=half_state)
    with pytest.raises(ValueError, match="compat"):
        linear_attention(q, k, v, causal=True, initial_state=good, compat="nystromformer")
    with pytest.raises(ValueError, match="chunk_size"):
        linear_attention(q, k, v, causal=True, chunk_size=0)
    with pytest.raises(ValueError, match="state.z"):
        linear_attention_step(q[:, :, 0], k[:, :, 0], v[:, :, 0], LinearState(good.s, good.z[:, :, :1]))
    with pytest.raises(ValueError, match="beta"):  # checked before the state is looked at
        momentum_attention_step(q[:, :, 0], k[:, :, 0], v[:, :, 0], None, beta=1.0)


@pytest.mark.parametrize("beta", [0.0, 0.6])
def test_causal_product_state_in_out_gradcheck(beta):
    """causal_product's own (s, d) pair: halves equal the whole, and gradcheck through both states."""
    from lra_kit.attention import causal_product

    q, k, v = (x.abs() for x in rand_qkv(1, 2, 45, 3, 2))
    whole, final = causal_product(q, k, v, beta=beta, chunk_size=2, output_final_state=True)
    first, state = causal_product(q[:, :, :20], k[:, :, :20], v[:, :, :20], beta=beta, chunk_size=2,
                                  output_final_state=True)
    second, state = causal_product(q[:, :, 20:], k[:, :, 20:], v[:, :, 20:], beta=beta, chunk_size=2,
                                   initial_state=state, output_final_state=True)
    assert_close(torch.cat([first, second], 2), whole, rtol=1e-9, atol=1e-9)
    assert_close(state.s, final.s, rtol=1e-9, atol=1e-9)
    leaves = [t.detach()[:, :, :13].clone().requires_grad_() for t in (q, k, v)]
    s0, d0 = (torch.rand(1, 2, 3, 2, dtype=torch.float64, requires_grad=True) for _ in range(2))

    def fn(q, k, v, s0, d0):
        out, (s, d) = causal_product(q, k, v, beta=beta, chunk_size=2, initial_state=(s0, d0), output_final_state=True)
        return out, s, d

    assert torch.autograd.gradcheck(fn, (*leaves, s0, d0))
