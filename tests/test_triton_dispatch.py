"""The GPU path as linear and momentum attention choose it: under Triton's interpreter on CPU
(``LRA_KIT_TRITON=interpret``), the public functions give what the chunked PyTorch path gives —
outputs, final states and gradients, with padding and a starting state."""
import pytest
import torch

from lra_kit.attention import causal_product, linear_attention, momentum_attention

pytest.importorskip("triton")

B, H, N, D, M = 2, 2, 37, 8, 6


def _inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, H, N, d, generator=gen, dtype=torch.float32) for d in (D, D, M))
    mask = torch.zeros(B, N, dtype=torch.bool)
    mask[1, :5] = True  # left padding in the second sequence
    return q, k, v, mask


def _run(fn, q, k, v, mask, **kw):
    q, k, v = (t.clone().requires_grad_() for t in (q, k, v))
    first, state = fn(q[:, :, :20], k[:, :, :20], v[:, :, :20], causal=True, key_padding_mask=mask[:, :20],
                      output_final_state=True, **kw)
    second, state = fn(q[:, :, 20:], k[:, :, 20:], v[:, :, 20:], causal=True, key_padding_mask=mask[:, 20:],
                       initial_state=state, output_final_state=True, **kw)
    out = torch.cat([first, second], dim=2)
    (out.square().sum() + sum(t.sum() for t in state)).backward()
    return out.detach(), [t.detach() for t in state], [t.grad for t in (q, k, v)]


@pytest.mark.parametrize("fn, kw", [(linear_attention, {}), (momentum_attention, {"beta": 0.6, "gamma": 0.9}),
                                    (momentum_attention, {"beta": 0.99, "gamma": 1.0})])
def test_public_functions_agree_on_the_triton_path(monkeypatch, fn, kw):
    q, k, v, mask = _inputs(0)
    monkeypatch.setenv("LRA_KIT_TRITON", "0")
    reference = _run(fn, q, k, v, mask, **kw)
    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")
    got = _run(fn, q, k, v, mask, **kw)
    torch.testing.assert_close(got[0], reference[0], rtol=1e-4, atol=1e-5)
    for a, b in zip(got[1], reference[1], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)
    for a, b in zip(got[2], reference[2], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_causal_product_dispatches(monkeypatch):
    q, k, v, _ = _inputs(1)
    monkeypatch.setenv("LRA_KIT_TRITON", "0")
    out, state = causal_product(q, k, v, beta=0.6, output_final_state=True)
    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")
    out_t, state_t = causal_product(q, k, v, beta=0.6, output_final_state=True)
    torch.testing.assert_close(out_t, out, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(state_t.s, state.s, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(state_t.d, state.d, rtol=1e-4, atol=1e-4)
