"""The attention core on CUDA in float32, bf16 and fp16, against the float64 CPU oracles (skipped without a GPU).
``LRA_KIT_GPU_TEST_DTYPE=bfloat16`` (etc.) runs one type only (the GPU campaign, lra_kit.bench.gpu_check)."""
import os

import pytest
import torch

from attention_helpers import rand_qkv, right_padding_mask
from lra_kit.attention import LunaAttention, linear_attention, momentum_attention, softmax_attention
from lra_kit.attention.naive import (
    naive_linear_attention,
    naive_luna_attention,
    naive_momentum_attention,
    naive_softmax_attention,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

# bf16 has an 8-bit mantissa: compare by relative RMS error, as flash-linear-attention does.
TOL = {torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 1e-2}
_ONLY = os.environ.get("LRA_KIT_GPU_TEST_DTYPE")
DTYPES = [getattr(torch, _ONLY)] if _ONLY else [torch.float32, torch.bfloat16, torch.float16]


def rel_rms(a, b):
    return ((a.double().cpu() - b).norm() / b.norm()).item()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("N", [1, 100, 1000])
def test_linear_cuda(dtype, causal, N):
    q, k, v = rand_qkv(2, 4, N, 32)
    mask = right_padding_mask([N, max(1, N // 3)], N)
    ref = naive_linear_attention(q, k, v, causal=causal, key_padding_mask=mask)
    out, _ = linear_attention(*(t.cuda().to(dtype) for t in (q, k, v)), causal=causal, key_padding_mask=mask.cuda())
    assert out.dtype == dtype and out.is_cuda
    assert rel_rms(out, ref) < TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("beta", [0.0, 0.6, 0.999])
def test_momentum_cuda(dtype, causal, beta):
    q, k, v = rand_qkv(2, 4, 777, 32)
    ref = naive_momentum_attention(q, k, v, beta=beta, gamma=0.9, causal=causal)
    out, _ = momentum_attention(*(t.cuda().to(dtype) for t in (q, k, v)), beta=beta, gamma=0.9, causal=causal)
    assert torch.isfinite(out).all()
    assert rel_rms(out, ref) < TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_gradients_cuda(dtype):
    q, k, v = rand_qkv(1, 2, 513, 16, requires_grad=True)
    g = torch.randn(1, 2, 513, 16, dtype=torch.float64)
    ref = torch.autograd.grad((naive_momentum_attention(q, k, v, beta=0.5, causal=True) * g).sum(), (q, k, v))
    qc, kc, vc = (t.detach().cuda().to(dtype).requires_grad_() for t in (q, k, v))
    out, _ = momentum_attention(qc, kc, vc, beta=0.5, causal=True)
    grads = torch.autograd.grad((out * g.cuda().to(dtype)).sum(), (qc, kc, vc))
    for a, b in zip(grads, ref, strict=False):
        assert rel_rms(a, b) < 5 * TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_cuda(dtype):
    q, k, v = rand_qkv(2, 4, 300, 32)
    ref = naive_softmax_attention(q, k, v, causal=True)
    out = softmax_attention(*(t.cuda().to(dtype) for t in (q, k, v)), causal=True)
    assert rel_rms(out, ref) < TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_luna_cuda(dtype, causal):
    torch.manual_seed(0)
    luna = LunaAttention(64, 4, causal=causal).double().eval()
    x, p = torch.randn(2, 300, 64, dtype=torch.float64), torch.randn(1, 16, 64, dtype=torch.float64)
    ref, _ = naive_luna_attention(luna, x, p)
    fast = luna.to("cuda", dtype)
    out, _, _ = fast(x.cuda().to(dtype), p.cuda().to(dtype))
    assert rel_rms(out, ref) < 2 * TOL[dtype]
