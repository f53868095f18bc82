"""What a user's process pays for its first causal linear-attention backward: no one-time import of sympy.

PyTorch 2.x imports torch.fx's symbolic shapes (and with them sympy and mpmath, about 48 MB resident) the first
time ``torch.autograd.grad`` gets tensor ``grad_outputs``. The backward pass recomputes φ and takes its
vector-Jacobian product as the gradient of a scalar, which does not (lra_kit.attention.mapped.phi_backward);
before, a fresh process paid those 48 MB on its first step (1K tokens: 3.6× SDPA's growth instead of 1.7×)."""
import subprocess
import sys

CODE = """
import sys
import torch
from lra_kit.attention import linear_attention, momentum_attention
from lra_kit.attention.causal import triton as gpu
q, k, v = (torch.randn(1, 2, 64, 8, requires_grad=True) for _ in range(3))
with gpu.disabled():
    linear, _ = linear_attention(q, k, v, causal=True)
    momentum, _ = momentum_attention(q, k, v, beta=0.6, causal=True)
    (linear.sum() + momentum.sum()).backward()
assert q.grad is not None
print("sympy" in sys.modules)
"""


def test_first_backward_imports_no_sympy():
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"
