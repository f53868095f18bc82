"""Both paths of the causal op against its readable oracle, :func:`lra_kit.attention.causal.naive.naive_causal_op`
(the formula as one quadratic sum, float64): outputs, final states and gradients, with φ, momentum, padding and
a starting state. The chunked path at several chunk sizes; the Triton kernels under Triton's interpreter."""
import pytest
import torch

from lra_kit.attention import get_feature_map
from lra_kit.attention.causal import CausalState, causal_op
from lra_kit.attention.causal.naive import naive_causal_op

B, H, N, D, M = 2, 2, 45, 8, 6
CASES = {
    "linear": dict(beta=0.0, gamma=1.0, eps=1e-6),
    "momentum": dict(beta=0.7, gamma=0.8, eps=1e-6),
    "bare product": dict(beta=0.5, gamma=1.0, eps=None),
}


def _inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    q, k, v, g = (torch.randn(B, H, N, d, generator=gen, dtype=torch.float64) for d in (D, D, M, M))
    mask = torch.zeros(B, N, dtype=torch.bool)
    mask[0, :6] = True  # left padding
    start = CausalState(torch.randn(B, H, D, M, generator=gen, dtype=torch.float64),
                        torch.randn(B, H, D, M, generator=gen, dtype=torch.float64),
                        torch.rand(B, H, D, generator=gen, dtype=torch.float64) + 1)
    return q, k, v, g, mask, start


def _run(op, case, phi, dtype, seed=0, **kw):
    q, k, v, g, mask, start = _inputs(seed)
    leaves = [t.to(dtype).requires_grad_() for t in (q, k, v)]
    state = CausalState(*(t.to(dtype).requires_grad_() for t in start))
    if case["eps"] is None:  # the bare product: keys already mapped, no z
        state = CausalState(state.s, state.d, None)
        phi = None
    out, final = op(*leaves, phi=phi, key_padding_mask=mask, initial_state=state, **CASES_KW(case), **kw)
    loss = (out * g.to(dtype)).sum() + sum((t * t).sum() * 0.1 for t in final if t is not None)
    params = leaves + [t for t in state if t is not None]
    return [out, *final], torch.autograd.grad(loss, params)


def CASES_KW(case):  # noqa: N802 - the case's keyword arguments
    return dict(beta=case["beta"], gamma=case["gamma"], eps=case["eps"])


def _oracle(case, phi):
    return _run(lambda *a, **kw: naive_causal_op(*a, **kw), case, phi, torch.float64)


def _fast(case, phi, chunk_size, triton):
    def op(q, k, v, **kw):
        return causal_op(q, k, v, chunk_size=chunk_size, output_final_state=True, keep_d=True, triton=triton, **kw)
    return _run(op, case, phi, torch.float32)


def _close(got, want, tol):
    for a, b in zip(got, want, strict=True):
        if b is None:
            continue
        torch.testing.assert_close(a.double(), b, rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("chunk_size", [1, 16, 64])
def test_chunked_path_equals_the_oracle(case, chunk_size):
    phi = get_feature_map("elu")
    want = _oracle(CASES[case], phi)
    got = _fast(CASES[case], phi, chunk_size, triton=False)
    _close(got[0], want[0], 1e-4)
    _close(got[1], want[1], 1e-4)


@pytest.mark.parametrize("case", CASES)
def test_triton_kernels_equal_the_oracle(monkeypatch, case):
    pytest.importorskip("triton")
    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")
    phi = get_feature_map("elu")
    want = _oracle(CASES[case], phi)
    got = _fast(CASES[case], phi, 16, triton=True)
    _close(got[0], want[0], 1e-4)
    _close(got[1], want[1], 1e-4)


def test_the_oracle_is_the_recurrence():
    """The oracle's quadratic sum equals the RNN of Nguyen et al. eq. 12 run position by position."""
    from lra_kit.attention.naive import naive_momentum_recurrent

    q, k, v, _, _, _ = _inputs(3)
    out, state = naive_causal_op(q, k, v, phi=get_feature_map("elu"), beta=0.6, gamma=0.9)
    rnn, (s, m, z) = naive_momentum_recurrent(q, k, v, beta=0.6, gamma=0.9, output_final_state=True)
    torch.testing.assert_close(out, rnn)
    torch.testing.assert_close(state.z, z)
