"""The lean generation step (lra_kit.models.decode): the modules' step's numbers to rounding and the same tokens for
the same generator; and the kernel budget per generated pixel of the MNIST paper model."""
from __future__ import annotations

import pytest
import torch

from lra_kit.attention.decode import CacheStep, FusedStep, LinearStep, MomentumStep
from lra_kit.bench.generation import build_generator, count_ops
from lra_kit.models import ModelConfig, build_model
from lra_kit.models.decode import Decoder, decoder_supported

MOMENTUM = {"beta": 0.6, "gamma": 0.9}
# (attention, options, output head, connection, norm, activation, position): the paper models' settings (post-LN,
# ReLU, concatenated sinusoids, the mixture head) and the others the lean step also runs
CASES = [
    ("linear", {}, "logistic_mixture", "residual", "post", "relu", "sinusoidal_concat"),
    ("linear", {}, "softmax", "residual", "pre", "gelu", "learned"),
    ("momentum", MOMENTUM, "logistic_mixture", "residual", "post", "relu", "sinusoidal_concat"),
    ("momentum", MOMENTUM, "softmax", "adaptive", "pre", "gelu", "sinusoidal"),
    ("linear", {}, "softmax", "momentum", "post", "relu", "learned"),
    ("softmax", {}, "logistic_mixture", "residual", "post", "relu", "sinusoidal_concat"),
    ("softmax", {}, "softmax", "residual", "pre", "gelu", "learned"),
]
IDS = [f"{a}-{h[:7]}-{c}-{n}" for a, _, h, c, n, _, _ in CASES]


def lm(attention, options, output, connection, norm, activation, position, d_model=16):
    torch.manual_seed(0)
    cfg = ModelConfig(attention=attention, attention_options=options, layers=2, d_model=d_model, n_heads=2, d_ff=32,
                      connection=connection, connection_beta=0.5, connection_gamma=0.9, norm=norm,
                      activation=activation, position=position, output=output, mixture_components=3)
    vocab = 256 if output == "logistic_mixture" else 12
    return build_model(cfg, kind="lm", vocab_size=vocab, max_length=40, pad_id=0).eval(), vocab


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_lean_generation_gives_the_modules_tokens(case):
    """Katharopoulos §3.4: the lean step is the same RNN; greedy and sampled tokens equal generate(lean=False)'s."""
    model, vocab = lm(*case)
    assert decoder_supported(model)
    prompt = torch.randint(0, vocab, (3, 4), generator=torch.Generator().manual_seed(1))
    for greedy in (True, False):
        lean, modules = (model.generate(prompt, 30, greedy=greedy, generator=torch.Generator().manual_seed(2),
                                        lean=flag) for flag in (True, False))
        assert torch.equal(lean, modules), (greedy, (lean != modules).sum().item())
    hot = [model.generate(prompt, 12, temperature=1.7, generator=torch.Generator().manual_seed(5), lean=flag)
           for flag in (True, False)]
    assert torch.equal(*hot)
    assert not lean.is_inference()  # generate ran under inference_mode; its tokens can enter autograd later


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 2e-5), (torch.float64, 1e-12)], ids=["float32", "float64"])
@pytest.mark.parametrize("case", [CASES[i] for i in (0, 2, 3, 5)], ids=[IDS[i] for i in (0, 2, 3, 5)])
def test_lean_states_and_hidden_states_are_the_modules(case, dtype, tol):
    """Step by step, with the same tokens read (teacher forcing), the lean layers' states (s, z of eqs. 18-19;
    s, m, z of Nguyen eq. 12; the cache) and the hidden state fed to the head equal Encoder.step's to rounding:
    the fused products sum in another order, nothing else differs (1e-12 in float64)."""
    model, vocab = lm(*case)
    model = model.to(dtype)
    ids = torch.randint(0, vocab, (2, 16), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        h, states = model.encoder.prefill(model.embed(ids[:, :3]))
        decoder = Decoder(model, ids[:, :3], 13, states, greedy=True)
        decoder.tokens.copy_(ids)  # every step reads the given token
        heads, finals = [h[:, -1]], []
        decoder.sample = lambda h, t=None: heads.append(h.clone())
        for t in range(3, 15):
            decoder.step(t)
            x = model.embed(ids[:, t:t + 1], offset=t)[:, 0]
            h_t, states = model.encoder.step(x, states)
            finals.append(h_t)
    assert len(heads) == 13 and heads[1].dtype == dtype
    for got, want in zip(heads[1:], finals, strict=True):
        torch.testing.assert_close(got, want, rtol=tol, atol=tol)
    for layer, state in zip(decoder.layers, states, strict=True):
        step = layer.attention
        assert isinstance(step, (LinearStep, MomentumStep, FusedStep, CacheStep))
        lean = step.state_tuple(15) if isinstance(step, CacheStep) else step.state_tuple()
        for a, b in zip(lean, state, strict=True):
            torch.testing.assert_close(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("scale", [1.0, 2.5], ids=["unscaled", "scaled"])
@pytest.mark.parametrize("case", [CASES[0], CASES[3]], ids=[IDS[0], IDS[3]])
def test_device_positions_give_the_modules_tokens(case, scale):
    """The addressing a CUDA graph needs (graph=True: the position a step reads and writes held in a counter on
    the device, advanced by the step; the embedding gathered and summed, not an embedding_bag) gives the modules'
    tokens, with the token embedding scaled (embed_scale) or not."""
    model, vocab = lm(*case)
    model.embed.scale = scale
    prompt = torch.randint(0, vocab, (2, 3), generator=torch.Generator().manual_seed(4))
    want = model.generate(prompt, 20, generator=torch.Generator().manual_seed(7), lean=False)
    with torch.inference_mode():
        h, states = model.encoder.prefill(model.embed(prompt))
        decoder = Decoder(model, prompt, 20, states, generator=torch.Generator().manual_seed(7), graph=True)
        decoder.first(h[:, -1])
        for _ in range(19):
            decoder.step()
    assert torch.equal(decoder.tokens, want)


@pytest.mark.parametrize("greedy", [True, False], ids=["greedy", "sampled"])
def test_the_captured_cache_step_masks_what_it_has_not_written(greedy):
    """On CUDA a captured cache step attends over a fixed bucket of positions, those not yet written masked out.
    The same Decoder.step, run here with buckets of 8 and of 128 (longer than the sequence) and device positions,
    gives the modules' tokens: a masked position weighs 0, and holds 0 (a NaN left in memory the cache had not
    written made the draw fail)."""
    model, vocab = lm(*CASES[5])
    prompt = torch.randint(0, vocab, (2, 3), generator=torch.Generator().manual_seed(4))
    want = model.generate(prompt, 25, greedy=greedy, generator=torch.Generator().manual_seed(8), lean=False)
    for bucket in (8, 128):
        with torch.inference_mode():
            h, states = model.encoder.prefill(model.embed(prompt))
            decoder = Decoder(model, prompt, 25, states, greedy=greedy, generator=torch.Generator().manual_seed(8),
                              cache_bucket=bucket, graph=True)
            if bucket == 8:
                assert [decoder.span(t) for t in (3, 7, 8, 27)] == [8, 8, 16, 28]
            decoder.first(h[:, -1])
            for t in range(3, 27):
                decoder.step(None, decoder.span(t))
        assert torch.equal(decoder.tokens, want), bucket


def test_generate_runs_under_inference_mode(monkeypatch):
    seen = []
    sample = Decoder.sample

    def spy(self, h, t=None):
        seen.append(torch.is_inference_mode_enabled())
        return sample(self, h, t)

    monkeypatch.setattr(Decoder, "sample", spy)
    model, vocab = lm(*CASES[0])
    model.generate(torch.zeros(1, 1, dtype=torch.long), 3)
    assert seen == [True] * 3 and not torch.is_inference_mode_enabled()


def test_edge_lengths_and_unsupported_models():
    model, vocab = lm(*CASES[0])
    prompt = torch.randint(0, vocab, (2, 5), generator=torch.Generator().manual_seed(6))
    assert torch.equal(model.generate(prompt, 0), prompt)
    for n in (1, 2):
        assert torch.equal(model.generate(prompt, n, greedy=True), model.generate(prompt, n, greedy=True, lean=False))
    torch.manual_seed(0)
    luna = build_model(ModelConfig(attention="luna", layers=1, d_model=16, n_heads=2, d_ff=32, norm="post",
                                   luna_length=4), kind="lm", vocab_size=12, max_length=20)
    assert not decoder_supported(luna)  # generate() steps through the modules instead
    with pytest.raises(ValueError, match="lean step"):
        Decoder(luna, prompt % 12, 3, [None])


# Kernels launched per generated pixel (neither views nor allocations), MNIST paper model (8 layers, post-LN, ReLU,
# mixture head), counted as lra_kit.bench.generation.count_ops counts them. The modules' step: 363 operators for
# linear. The lean step, per layer: LayerNorm ×2, the q/k/v projection, φ (elu, +1), the state update (one
# baddbmm), the readout (one bmm), the division, the output projection with its bias and the residual, the FFN as
# two products (the second with its bias and the residual): 11 for linear, 13 for momentum (m, s and z updated
# apart), 9 for the cache (projection, cache write, SDPA, a copy, output projection); then the final LayerNorm,
# one embedding_bag (token + position) and 10 for the head, the mixture's probabilities and the draw. The issue's
# CPU target for linear is 100 (the cache's attention is one SDPA call where the RNN needs five: the cache stays
# below it).
BUDGET = {"linear": 100, "momentum": 116, "softmax-kv-cache": 84}


@pytest.mark.parametrize("method", list(BUDGET))
def test_kernels_per_generated_pixel(method):
    """The paper's MNIST model (narrowed: the count does not depend on the width) launches at most BUDGET kernels
    per generated pixel, under half the operators the modules' step dispatches, and no dropout."""
    model = build_generator("mnist", method, overrides={"d_model": 32, "d_ff": 64})
    assert model.cfg.layers == 8 and model.cfg.output == "logistic_mixture"
    lean, modules = count_ops(model, method), count_ops(model, method, lean=False)
    assert lean["kernels_per_pixel"] <= BUDGET[method], lean["by_name"]
    assert lean["ops_per_pixel"] < 0.5 * modules["ops_per_pixel"]
    assert "dropout" not in lean["by_name"] and "unflatten" not in lean["by_name"]
