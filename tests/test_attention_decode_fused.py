"""The fused decode step (lra_kit.attention.decode.FusedStep: one Triton kernel a layer for φ, the state update, the
readout and the normaliser) run under Triton's interpreter on the CPU: the ATen step's numbers to rounding, the
modules' tokens, and fewer launches per generated pixel than the key/value cache. The same compiled on CUDA, and
generation replayed as CUDA graphs (``gpu``: the GPU campaign runs them; skipped without a GPU)."""
from __future__ import annotations

import pytest
import torch

from lra_kit.attention.causal.triton.switch import disabled, interpreted, interpreter_problem
from lra_kit.attention.decode import FusedStep, LinearStep, MomentumStep, fused_supported, lean_step
from lra_kit.attention.linear import LinearState
from lra_kit.attention.modules import LinearAttention, MomentumAttention, SoftmaxAttention
from lra_kit.attention.momentum import MomentumState
from lra_kit.bench.generation import launch_counts
from lra_kit.models.decode import Decoder

pytest.importorskip("triton")

MOMENTUM = {"beta": 0.6, "gamma": 0.9}
# the attentions with a fused step: each one's options and the output head its generation test uses
FUSED = {"linear": ({}, "logistic_mixture"), "momentum": (MOMENTUM, "softmax")}


@pytest.fixture
def interpreter():
    """CPU tensors take the Triton path, under Triton's interpreter (skipped where it cannot run the kernels)."""
    if (problem := interpreter_problem()) is not None:
        pytest.skip(problem)
    with interpreted():
        yield


@pytest.fixture
def cuda_float32():
    """A CUDA device (skipped without one), float32 products without TF32 (the ATen step's references)."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = tf32


def _attention(kind, D, H, eps=0.25):
    """ε far above its default 1e-6, so that a normaliser without it fails the comparison."""
    torch.manual_seed(0)
    cls = MomentumAttention if kind == "momentum" else LinearAttention
    return cls(D * H, H, causal=True, eps=eps, **FUSED[kind][0]).eval()


def _state(kind, B, H, D, seed=1, device="cpu"):
    gen = torch.Generator().manual_seed(seed)
    s = 0.1 * torch.randn(B, H, D, D, generator=gen)
    z = 1 + torch.rand(B, H, D, generator=gen)
    if kind == "momentum":
        return MomentumState(s.to(device), 0.1 * torch.randn(B, H, D, D, generator=gen).to(device), z.to(device))
    return LinearState(s.to(device), z.to(device))


# D 12: rows and columns past the head masked (a tile of 16); D 128: four blocks of 32 columns, each with its own z
@pytest.mark.parametrize("D,H", [(12, 2), (32, 2), (128, 1)], ids=["D12", "D32", "D128-four-blocks"])
@pytest.mark.parametrize("kind", list(FUSED))
def test_the_fused_step_is_the_aten_step(interpreter, kind, D, H):
    """Katharopoulos eqs. 18-20 / Nguyen eq. 12 in one kernel: outputs (with the residual) and states equal the ATen
    step's (LinearStep, MomentumStep) position by position, and the caller's state is left as it was."""
    _compare_steps(kind, D, H, "cpu")


def _compare_steps(kind, D, H, device, B=3):
    attn, state = _attention(kind, D, H).to(device), _state(kind, B, H, D, device=device)
    before = [t.clone() for t in state]
    aten = (MomentumStep if kind == "momentum" else LinearStep)(attn, state, batch=B)
    fused = lean_step(attn, state, batch=B, length=0)
    assert isinstance(fused, FusedStep)
    gen = torch.Generator().manual_seed(2)
    for _ in range(5):
        x, r = (torch.randn(B, D * H, generator=gen).to(device) for _ in range(2))
        torch.testing.assert_close(fused(x, None, r).clone(), aten(x, None, r).clone(), rtol=1e-5, atol=1e-5)
    for got, want in zip(fused.state_tuple(), aten.state_tuple(), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    for got, want in zip(state, before, strict=True):
        assert torch.equal(got, want)


def _lm(attention, options, output):
    from lra_kit.models import ModelConfig, build_model

    torch.manual_seed(0)
    cfg = ModelConfig(attention=attention, attention_options=options, layers=2, d_model=16, n_heads=2, d_ff=32,
                      norm="post", activation="relu", position="sinusoidal_concat", output=output,
                      mixture_components=3)
    vocab = 256 if output == "logistic_mixture" else 12
    return build_model(cfg, kind="lm", vocab_size=vocab, max_length=40, pad_id=0).eval(), vocab


@pytest.mark.parametrize("graph", [False, True], ids=["host-positions", "device-positions"])
@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "sampled"])
@pytest.mark.parametrize("attention", list(FUSED))
def test_fused_generation_gives_the_modules_tokens(interpreter, attention, greedy, graph):
    """Generating through the fused steps (host positions, or the device counter a CUDA graph replays) draws the
    modules' tokens for the same generator."""
    model, vocab = _lm(attention, *FUSED[attention])
    prompt = torch.randint(0, vocab, (2, 3), generator=torch.Generator().manual_seed(4))
    want = model.generate(prompt, 12, greedy=greedy, generator=torch.Generator().manual_seed(7), lean=False)
    assert not torch.equal(want[:, 3:], torch.zeros_like(want[:, 3:]))
    with torch.inference_mode():
        decoder = Decoder.after_prompt(model, prompt, 12, greedy=greedy, generator=torch.Generator().manual_seed(7),
                                       graph=graph)
        assert all(isinstance(layer.attention, FusedStep) for layer in decoder.layers)
        for t in range(3, 14):
            decoder.step(None if graph else t)
    assert torch.equal(decoder.tokens, want)


def test_which_attention_runs_fused(interpreter):
    """Float32 linear and momentum attention with φ = elu + 1 on the Triton path; not float64, another feature map,
    softmax (the cache), or with the path turned off."""
    assert fused_supported(_attention("linear", 8, 2)) and fused_supported(_attention("momentum", 8, 2))
    assert not fused_supported(_attention("linear", 8, 2).double())
    assert not fused_supported(LinearAttention(16, 2, causal=True, feature_map="relu"))
    assert not fused_supported(SoftmaxAttention(16, 2, causal=True))
    assert fused_supported(_attention("linear", 256, 1)) and not fused_supported(_attention("linear", 264, 1))
    with disabled():
        assert not fused_supported(_attention("linear", 8, 2))
        assert isinstance(lean_step(_attention("linear", 8, 2), _state("linear", 1, 2, 8), batch=1, length=0),
                          LinearStep)


def test_the_gpu_path_launches_fewer_kernels_a_pixel_than_the_cache(interpreter):
    """The issue's count, for the path a CUDA run takes: the MNIST paper model (8 layers), one generated pixel. The
    fused RNNs launch one Triton kernel a layer and 60 ATen kernels (the ATen step: 100 for linear, 116 for momentum),
    68 in all, below the key/value cache's 84, which has no fused path (its count is the same on both)."""
    counts = launch_counts("mnist")
    cache = counts["softmax-kv-cache"]
    assert cache["gpu"]["kernels_per_pixel"] == cache["cpu"]["kernels_per_pixel"]
    assert "triton_kernels_per_pixel" not in cache["gpu"]
    for method in FUSED:
        cpu, gpu = counts[method]["cpu"], counts[method]["gpu"]
        assert "triton_kernels_per_pixel" not in cpu
        assert gpu["triton_kernels_per_pixel"] == 8, gpu  # one a layer
        assert gpu["launches_per_pixel"] <= 68, gpu["by_name"]
        assert gpu["launches_per_pixel"] < cache["gpu"]["kernels_per_pixel"]
        assert gpu["launches_per_pixel"] < cpu["kernels_per_pixel"] - 30


@pytest.mark.gpu
@pytest.mark.parametrize("D,H", [(32, 8), (128, 2)], ids=["D32", "D128-four-blocks"])
@pytest.mark.parametrize("kind", list(FUSED))
def test_cuda_fused_step_is_the_aten_step(cuda_float32, kind, D, H):
    """Compiled for the card: the ATen step's outputs and states (both on CUDA, float32 products without TF32)."""
    _compare_steps(kind, D, H, "cuda", B=5)


@pytest.mark.gpu
@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "sampled"])
@pytest.mark.parametrize("attention", list(FUSED))
def test_cuda_graph_generation_gives_the_modules_tokens(cuda_float32, attention, greedy):
    """generate() on CUDA: the fused steps captured once as a CUDA graph and replayed per position draw the modules'
    tokens (generate(lean=False), eager) for the same generator."""
    model, vocab = _lm(attention, *FUSED[attention])
    model = model.cuda()
    prompt = torch.randint(0, vocab, (2, 3), generator=torch.Generator().manual_seed(4)).cuda()
    tokens = {}
    for lean in (False, True):
        gen = torch.Generator(device="cuda").manual_seed(7)
        tokens[lean] = model.generate(prompt, 24, greedy=greedy, generator=gen, lean=lean, cuda_graph=True)
    assert torch.equal(tokens[True], tokens[False])

