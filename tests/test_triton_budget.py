"""The Triton path's budget, checkable without a GPU: what linear and momentum attention launch outside their
Triton kernels, forward + backward, counted with a TorchDispatchMode under Triton's interpreter
(:mod:`lra_kit.bench.dispatch`), and the Triton kernels they launch. On a GPU each PyTorch kernel is a launch and a
pass over memory; the kernels apply φ, the mask, the normaliser and momentum themselves, so none should be left."""
import math

import pytest
import torch

from lra_kit.attention import linear_attention, momentum_attention
from lra_kit.attention.causal.triton.host import kernel_chunk
from lra_kit.bench.dispatch import KernelCounter

pytest.importorskip("triton")

B, N, H, D = 2, 100, 2, 16
MAX_KERNELS = 4  # per forward + backward (issue budget); the path launches none today
# The Triton launches of one forward + backward with ∇q, ∇k and ∇v asked for: forward 2, backward 4 (the forward
# states recomputed, ∇q, the adjoint states, then ∇k and ∇v in one kernel: 7 launches in all before it).
TRITON_LAUNCHES = ("states_kernel", "forward_kernel", "states_kernel", "dq_kernel", "states_kernel", "dkv_kernel")


def _allowed_bytes(beta: float) -> int:
    """What a forward + backward may allocate: the output, den and h (one float32 a position each), the three
    gradients, and the per-chunk states (s, z, and d where β > 0) of three passes: forward, the backward's
    recomputation of it, and the adjoint pass."""
    per_position = B * H * N
    chunks = math.ceil(N / kernel_chunk(torch.float32, 64))
    states = B * H * chunks * (D * D * (2 if beta > 0 else 1) + D)
    return 4 * (per_position * D + 2 * per_position + 3 * per_position * D + 3 * states)


def _forward_backward(fn, kw, mask):
    gen = torch.Generator().manual_seed(0)
    # As a model gives them: (B, N, H, D) projections viewed as (B, H, N, D), not copied.
    leaves = [torch.randn(B, N, H, D, generator=gen, requires_grad=True) for _ in range(3)]
    grad_out = torch.randn(B, H, N, D, generator=gen)

    def call():
        q, k, v = (t.transpose(1, 2) for t in leaves)
        out, _ = fn(q, k, v, causal=True, key_padding_mask=mask, **kw)
        return torch.autograd.grad(out, leaves, grad_out)

    call()  # the first call fills the lag-weight tables' cache
    with KernelCounter() as counter:
        grads = call()
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    return counter


@pytest.mark.parametrize("fn, kw", [(linear_attention, {}), (momentum_attention, {"beta": 0.6, "gamma": 0.9})])
@pytest.mark.parametrize("padded", [False, True])
def test_no_pytorch_kernels_around_the_triton_kernels(monkeypatch, record_triton_launches, fn, kw, padded):
    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")
    launched = record_triton_launches()
    mask = None
    if padded:
        mask = torch.zeros(B, N, dtype=torch.bool)
        mask[1, :7] = True
    counter = _forward_backward(fn, kw, mask)
    kernels = sum(counter.kernels.values())
    assert kernels <= MAX_KERNELS, counter.summary()
    assert counter.allocated_bytes <= _allowed_bytes(kw.get("beta", 0.0)), counter.summary()
    assert tuple(launched) == TRITON_LAUNCHES * 2, launched  # two calls: the first fills the tables' cache


def test_the_counter_sees_a_kernel_put_back(monkeypatch):
    """The count above can fail: a cumsum of the normaliser put back into the host code is seen, with its bytes."""
    from lra_kit.attention.causal.triton import host

    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")
    launch = host._Launch.forward

    def with_glue(self, q, k, v, states, out, den):
        torch.cumsum(k, dim=2)  # the prefix sum of the old normaliser
        return launch(self, q, k, v, states, out, den)

    monkeypatch.setattr(host._Launch, "forward", with_glue)
    counter = _forward_backward(linear_attention, {}, None)
    assert counter.kernels["cumsum"] == 1
    assert counter.allocated_bytes > _allowed_bytes(0.0)


def test_the_counter_leaves_out_tritons_frames_wherever_the_clone_lies(monkeypatch):
    """What Triton's own files run is left out, and nothing else, whatever the path of the checkout: a clone named
    ``lra_kit`` holds its virtual environment, Triton included, under ``.../lra_kit/.venv``; the package's kernels
    lie under ``.../lra_kit/attention/causal/triton/``."""
    from lra_kit.bench import dispatch

    def run_from(filename):
        code = compile("x.add(1)", filename, "eval")  # an operator called from a frame of that file
        x = torch.zeros(3)
        with KernelCounter() as counter:
            eval(code, {"x": x})
        return sum(counter.kernels.values())

    monkeypatch.setattr(dispatch, "_triton_dir", lambda: "/home/u/lra_kit/.venv/lib/python3.11/site-packages/triton/")
    assert run_from("/home/u/lra_kit/.venv/lib/python3.11/site-packages/triton/runtime/interpreter.py") == 0
    assert run_from("/home/u/lra_kit/lra_kit/attention/causal/triton/host.py") == 1
    assert run_from("/home/u/lra_kit/lra_kit/bench/dispatch.py") == 1
