"""Causal linear and momentum attention and the causal product under autocast, on the PyTorch path
(``LRA_KIT_TRITON=0``): their autograd Functions choose their own types, so autocast must not recast the
products inside them (it made ``baddbmm_`` meet a bf16 and a float32 operand and fail). Shown with CPU
autocast; CUDA autocast takes the same code path."""
import pytest
import torch

from lra_kit.attention import causal_product, linear_attention, momentum_attention
from lra_kit.attention.causal import triton as gpu

CASES = {
    "linear": lambda q, k, v: linear_attention(q, k, v, causal=True)[0],
    "momentum": lambda q, k, v: momentum_attention(q, k, v, beta=0.6, gamma=1.0, causal=True)[0],
    "product": lambda q, k, v: causal_product(q.abs(), k.abs(), v, beta=0.6, chunk_size=16)[0],
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_forward_and_backward_under_cpu_autocast(name, dtype):
    """Inside autocast the result (and gradients) equal those outside it for the same inputs."""
    gen = torch.Generator().manual_seed(0)
    base = [torch.randn(2, 2, 70, 8, generator=gen).to(dtype) for _ in range(3)]

    def run(autocast):
        leaves = [t.clone().requires_grad_() for t in base]
        with gpu.disabled(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = CASES[name](*leaves)
        out.float().square().sum().backward()
        return out.detach(), [t.grad for t in leaves]

    out, grads = run(True)
    ref, ref_grads = run(False)
    assert out.dtype == dtype
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
