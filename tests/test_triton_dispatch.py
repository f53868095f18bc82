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


def test_float16_attention_stays_finite_on_the_triton_path(monkeypatch):
    """The unnormalised numerator outgrows float16 (here ~1e5 by position 700): the attention keeps it in float32,
    so the float16 output is as finite, and as close to float64, as the PyTorch path's."""
    gen = torch.Generator().manual_seed(5)
    q, k = (torch.rand(1, 1, 700, 16, generator=gen) * 4 + 1 for _ in range(2))
    v = torch.rand(1, 1, 700, 4, generator=gen)
    ref, _ = linear_attention(*(t.half().double() for t in (q, k, v)), causal=True)
    half = [t.half() for t in (q, k, v)]
    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")
    out, _ = linear_attention(*half, causal=True)
    mom, _ = momentum_attention(*half, beta=0.9, gamma=1.0, causal=True)
    assert out.dtype == torch.float16 and torch.isfinite(out).all() and torch.isfinite(mom).all()
    torch.testing.assert_close(out.double(), ref, rtol=2e-3, atol=2e-3)


def test_disabled_runs_the_pytorch_path(monkeypatch):
    """``disabled()`` is how a reference is computed beside the kernels: no Triton call inside it."""
    from lra_kit.attention.causal import triton as gpu
    from lra_kit.attention.causal.triton import host as triton_path

    q, k, v, _ = _inputs(2)
    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")

    def refuse(*args, **kwargs):
        raise AssertionError("the Triton path was called inside disabled()")

    monkeypatch.setattr(triton_path, "forward", refuse)  # the Triton path's entry in the causal op
    with gpu.disabled():
        assert not gpu.available(q)
        linear_attention(q, k, v, causal=True)
        causal_product(q.abs(), k.abs(), v, beta=0.6)
    assert gpu.available(q)
    with pytest.raises(AssertionError, match="disabled"):
        linear_attention(q, k, v, causal=True)


def test_interpreted_kernels_run_after_compiled_ones_were_imported(tmp_path):
    """A process that imported the compiled kernels first (as a GPU test session does) can still run the
    interpreter on CPU tensors: the kernels are chosen per tensor, not bound at first import."""
    import subprocess
    import sys

    from lra_kit.attention.causal.triton.switch import interpreter_problem

    if (problem := interpreter_problem()) is not None:
        pytest.skip(problem)
    code = """
import os, torch
os.environ.pop("TRITON_INTERPRET", None)
import lra_kit.attention.causal.triton.kernels  # compiled bindings, as after a compiled-kernel test
from lra_kit.attention import linear_attention
from lra_kit.attention.causal import triton as gpu
q, k, v = (torch.randn(1, 1, 40, 8) for _ in range(3))
with gpu.disabled():
    ref, _ = linear_attention(q, k, v, causal=True)
os.environ["LRA_KIT_TRITON"] = "interpret"
torch.testing.assert_close(linear_attention(q, k, v, causal=True)[0], ref, rtol=1e-4, atol=1e-5)
print("ok")
"""
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("TRITON_INTERPRET", "LRA_KIT_TRITON")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-3000:]


def test_torch_compile_over_the_triton_path(monkeypatch):
    """torch.compile around momentum attention on the Triton path: the kernels run outside the graph (Dynamo
    cannot trace Triton's interpreter), φ and the normaliser compiled; outputs and gradients as eager's."""
    from lra_kit.attention.causal import triton as gpu

    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")
    q, k, v, _ = _inputs(3)
    leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    torch._dynamo.reset()
    compiled = torch.compile(lambda q, k, v: momentum_attention(q, k, v, beta=0.6, gamma=0.9, causal=True)[0])
    out = compiled(*leaves)
    out.square().sum().backward()
    ref_leaves = [t.clone().requires_grad_() for t in (q, k, v)]
    with gpu.disabled():
        ref, _ = momentum_attention(*ref_leaves, beta=0.6, gamma=0.9, causal=True)
    ref.square().sum().backward()
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    for a, b in zip(leaves, ref_leaves, strict=True):
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-4)


def test_an_interpreter_that_cannot_run_the_kernels_is_named_not_met_midway(monkeypatch):
    """Where Triton's interpreter cannot loop to a run-time bound (Triton 3.6 with NumPy >= 2.4), the attention says
    so, naming the versions, instead of failing inside a kernel with NumPy's message."""
    from lra_kit.attention.causal.triton import switch

    import triton

    if tuple(int(x) for x in triton.__version__.split(".")[:2]) >= (3, 9):
        # an interpreter known to run the kernels passes the probe: a probe that always failed would skip them all
        assert switch.interpreter_problem() is None

    class Probe:  # the probe kernel as Triton 3.6's interpreter runs it under NumPy >= 2.4
        def __getitem__(self, grid):
            def launch(out, n):
                raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
            return launch

    monkeypatch.setattr(switch, "_kernels", lambda interpret: type("Kernels", (), {"loop_bound_probe_kernel": Probe()}))
    problem = switch.interpreter_problem.__wrapped__()
    assert "cannot loop to a run-time bound" in problem and "LRA_KIT_TRITON=0" in problem
    monkeypatch.setattr(switch, "interpreter_problem", lambda: problem)
    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")
    q, k, v, _ = _inputs(4)
    with pytest.raises(switch.InterpreterUnsupported, match="cannot loop to a run-time bound"):
        linear_attention(q, k, v, causal=True)
