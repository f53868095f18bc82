"""Causal LM: recurrent generation = parallel model on the growing prefix; the logistic mixture."""
from __future__ import annotations

import math

import pytest
import torch

from lra_kit.models import CausalLM, ModelConfig, build_model, logistic_mixture_log_pmf

CASES = [
    ("softmax", {}, "residual"),
    ("linear", {}, "residual"),
    ("momentum", {"beta": 0.6, "gamma": 0.9}, "residual"),
    ("momentum", {"beta": 0.1, "gamma": 0.6}, "momentum"),
    ("momentum", {"beta": 0.1, "gamma": 0.6}, "adaptive"),
    ("luna", {}, "residual"),
    ("performer", {"n_features": 16}, "residual"),
]


def lm(attention, options, connection, **kw) -> CausalLM:
    torch.manual_seed(0)
    cfg = ModelConfig(attention=attention, attention_options=options, layers=2, d_model=16, n_heads=2, d_ff=32,
                      connection=connection, connection_beta=0.5, connection_gamma=0.9,
                      norm="post" if attention == "luna" else "pre", luna_length=4, **kw)
    return build_model(cfg, kind="lm", vocab_size=12, max_length=48, pad_id=11)


@pytest.mark.parametrize("attention,options,connection", CASES)
def test_recurrent_generation_equals_parallel(attention, options, connection):
    model = lm(attention, options, connection)
    prompt = torch.randint(0, 11, (3, 6), generator=torch.Generator().manual_seed(1))
    fast = model.generate(prompt, 30, greedy=True)
    slow = model.generate(prompt, 30, greedy=True, recurrent=False)
    assert torch.equal(fast, slow)
    # sampled tokens agree too when both draw from the same generator
    fast = model.generate(prompt, 20, generator=torch.Generator().manual_seed(3))
    slow = model.generate(prompt, 20, generator=torch.Generator().manual_seed(3), recurrent=False)
    assert torch.equal(fast, slow)


@pytest.mark.parametrize("attention,options,connection", CASES)
def test_step_outputs_match_parallel_outputs(attention, options, connection):
    model = lm(attention, options, connection).eval()
    ids = torch.randint(0, 11, (2, 17))
    with torch.no_grad():
        parallel = model(ids)
        states, steps = None, []
        x = model.embed(ids)
        for t in range(ids.shape[1]):
            h, states = model.encoder.step(x[:, t], states)
            steps.append(model.log_probs(h))
    torch.testing.assert_close(torch.stack(steps, 1), parallel, rtol=1e-4, atol=1e-4)


def test_recurrent_state_does_not_grow_for_linear_momentum_luna():
    for attention, options in (("linear", {}), ("momentum", {"beta": 0.5}), ("luna", {}), ("performer", {})):
        model = lm(attention, options, "residual").eval()
        sizes = []
        states, x = None, model.embed(torch.randint(0, 11, (1, 30)))
        with torch.no_grad():
            for t in range(30):
                _, states = model.encoder.step(x[:, t], states)
                sizes.append(sum(s.numel() for st in states for s in st if isinstance(s, torch.Tensor)))
        assert len(set(sizes[1:])) == 1, attention


def test_generate_rejects_bad_arguments():
    model = lm("linear", {}, "residual")
    with pytest.raises(ValueError, match="prompt"):
        model.generate(torch.zeros(2, 0, dtype=torch.long), 3)
    with pytest.raises(ValueError, match="max_length"):
        model.generate(torch.zeros(2, 5, dtype=torch.long), 100)


def test_logistic_mixture_is_a_distribution_and_learns():
    g = torch.Generator().manual_seed(0)
    params = torch.randn(4, 5, 30, generator=g) * 3
    log_p = logistic_mixture_log_pmf(params, 10)
    assert log_p.shape == (4, 5, 256)
    torch.testing.assert_close(log_p.logsumexp(-1), torch.zeros(4, 5), atol=1e-4, rtol=0)
    # a single sharp component puts (almost) all its mass on the bin of its mean
    sharp = torch.zeros(1, 3)
    sharp[0, 1] = 2 * 100 / 255 - 1
    sharp[0, 2] = -7.0
    assert logistic_mixture_log_pmf(sharp, 1).argmax().item() == 100
    # edge bins take the tails
    far = torch.tensor([[0.0, -5.0, -1.0]])
    assert logistic_mixture_log_pmf(far, 1)[0, 0] > math.log(0.99)


def test_causal_lm_with_mixture_head_trains_and_reports_bits_per_dim():
    torch.manual_seed(0)
    cfg = ModelConfig(attention="linear", layers=1, d_model=16, n_heads=2, d_ff=32, output="logistic_mixture",
                      mixture_components=3, dropout=0.0)
    model = build_model(cfg, kind="lm", vocab_size=256, max_length=16)
    ids = torch.randint(0, 256, (4, 16))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = None
    for _ in range(20):
        t = model.loss_terms(ids)
        loss = t["nll"] / t["count"]
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < first
    assert model.generate(ids[:, :2], 5).max() < 256
    with pytest.raises(ValueError, match="vocab_size"):
        build_model(cfg, kind="lm", vocab_size=12, max_length=16)
