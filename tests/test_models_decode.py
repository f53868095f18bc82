"""The lean generation step (lra_kit.models.decode): the modules' step's numbers, bit for bit on the CPU, so the same
tokens for the same generator; and the operator budget per generated pixel of the MNIST paper model."""
from __future__ import annotations

import pytest
import torch

from lra_kit.attention.decode import CacheStep, LinearStep, MomentumStep
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


@pytest.mark.parametrize("case,width", [(CASES[0], 16), (CASES[0], 64), (CASES[2], 16), (CASES[2], 64), (CASES[5], 16)],
                         ids=["linear", "linear-64", "momentum", "momentum-64", "cache"])
def test_lean_states_and_hidden_states_are_the_modules_bit_for_bit(case, width):
    """Step by step, the lean layers' states (s, z of eqs. 18-19; s, m, z of Nguyen eq. 12; the cache) and the
    hidden state fed to the head equal Encoder.step's exactly, not merely closely; at width 16 φ maps q and k in
    copied blocks, at 64 in one call (LinearStep.feature_map)."""
    model, vocab = lm(*case, d_model=width)
    if case[0] != "softmax":
        assert model.encoder.layers[0].attn.head_dim * 2 == width
    ids = torch.randint(0, vocab, (2, 16), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        h, states = model.encoder.prefill(model.embed(ids[:, :3]))
        decoder = Decoder(model, ids[:, :3], 13, states, greedy=True)
        decoder.tokens.copy_(ids)  # teacher forcing: every step reads the given token
        if case[0] != "softmax":
            assert decoder.layers[0].attention.one_call == (width == 64)
        heads, finals = [], []
        decoder.sample = lambda h: (heads.append(h.clone()), decoder.counter.add_(1))
        decoder.sample(h[:, -1])
        for t in range(3, 15):
            decoder.step(decoder.span(t))
            x = model.embed(ids[:, t:t + 1], offset=t)[:, 0]
            h_t, states = model.encoder.step(x, states)
            finals.append(h_t)
    for got, want in zip(heads[1:], finals, strict=True):
        assert torch.equal(got, want)
    for layer, state in zip(decoder.layers, states, strict=True):
        step = layer.attention
        lean = step.state(15) if isinstance(step, CacheStep) else step.state()
        assert isinstance(step, (LinearStep, MomentumStep, CacheStep))
        for a, b in zip(lean, state, strict=True):
            assert torch.equal(a, b)


def test_the_captured_cache_step_masks_what_it_has_not_written():
    """On CUDA a captured cache step attends over a fixed bucket of positions, those not yet written masked out.
    The same Decoder.step, run here with buckets of 8, gives the modules' greedy tokens (its attention sums over
    masked zeros, so the last bits may differ: the tokens are compared, not the bits)."""
    model, vocab = lm(*CASES[5])
    prompt = torch.randint(0, vocab, (2, 3), generator=torch.Generator().manual_seed(4))
    want = model.generate(prompt, 25, greedy=True, lean=False)
    with torch.inference_mode():
        h, states = model.encoder.prefill(model.embed(prompt))
        decoder = Decoder(model, prompt, 25, states, greedy=True, cache_bucket=8)
        assert [decoder.span(t) for t in (3, 7, 8, 27)] == [8, 8, 16, 28]
        decoder.sample(h[:, -1])
        for t in range(3, 27):
            decoder.step(decoder.span(t))
    assert torch.equal(decoder.tokens, want)


def test_generate_runs_under_inference_mode(monkeypatch):
    seen = []
    sample = Decoder.sample

    def spy(self, h):
        seen.append(torch.is_inference_mode_enabled())
        return sample(self, h)

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


# Operators dispatched per generated pixel, MNIST paper model (8 layers, post-LN, ReLU, mixture head), counted as
# lra_kit.bench.generation.count_ops counts them. The modules' step: 363 for linear, 387 momentum, 259 the cache.
# The lean step: 18 per layer for linear (projection; φ: elu, +1; outer product, s += , z += ; readout: bmm,
# φ(q)·z as a product and a sum, + ε, divide; output projection; residual, LayerNorm, FFN as two calls, residual,
# LayerNorm), 21 for momentum, 10 for the cache (its attention is one SDPA call), and 52 for the embedding, the
# head's mixture of logistics over 256 values and the draw.
BUDGET = {"linear": 196, "momentum": 220, "softmax-kv-cache": 156}


@pytest.mark.parametrize("method", list(BUDGET))
def test_operators_per_generated_pixel(method):
    """The paper's MNIST model (narrowed: the count does not depend on the width) dispatches at most BUDGET
    operators per generated pixel, about half what the modules' step dispatches."""
    model = build_generator("mnist", method, overrides={"d_model": 32, "d_ff": 64})
    assert model.cfg.layers == 8 and model.cfg.output == "logistic_mixture"
    lean, modules = count_ops(model, method), count_ops(model, method, lean=False)
    assert lean["ops_per_pixel"] <= BUDGET[method], lean["by_name"]
    assert lean["ops_per_pixel"] < 0.62 * modules["ops_per_pixel"]
    assert "dropout" not in lean["by_name"] and "unflatten" not in lean["by_name"]
    if method == "linear":  # fewer than the cache took through the modules
        cache = count_ops(build_generator("mnist", "softmax-kv-cache", overrides={"d_model": 32, "d_ff": 64}),
                          "softmax-kv-cache", lean=False)
        assert lean["ops_per_pixel"] < cache["ops_per_pixel"]
