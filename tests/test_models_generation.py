"""Causal LM: recurrent generation = parallel model on the growing prefix; the logistic mixture."""
from __future__ import annotations

import functools
import math

import pytest
import torch

from lra_kit.attention import KVCache, attention_names, attention_spec
from lra_kit.models import CausalLM, ModelConfig, build_model, logistic_mixture_log_pmf
from lra_kit.models.config import CONNECTIONS
from lra_kit.models.layers import returns_final_state

# Options per attention beyond the table's defaults; between layers joined by the momentum or adaptive
# connection, momentum attention takes another β, γ (Nguyen et al. Table 1: the MNIST row, then ListOps's).
OPTIONS = {"momentum": {"beta": 0.6, "gamma": 0.9}, "performer": {"n_features": 16}}
OPTIONS_WITH_CONNECTION = {**OPTIONS, "momentum": {"beta": 0.1, "gamma": 0.6}}
# Every attention with a causal form (a language model needs one), with residual connections; each one whose layer
# takes the momentum connections, with each.
CAUSAL = [name for name in attention_names() if attention_spec(name).causal]
CASES = [(name, OPTIONS.get(name, {}), "residual") for name in CAUSAL] + [
    (name, OPTIONS_WITH_CONNECTION.get(name, {}), connection) for name in CAUSAL
    if attention_spec(name).momentum_connection for connection in CONNECTIONS if connection != "residual"]
CASE_IDS = [f"{name}-{connection}" for name, _, connection in CASES]
# ... of which those with a recurrent step (LSH has none: generation re-runs the prefix, tested above)
STEPPED = [case for case in CASES if attention_spec(case[0]).step]
STEPPED_IDS = [f"{name}-{connection}" for name, _, connection in STEPPED]


def lm(attention, options, connection, **kw) -> CausalLM:
    torch.manual_seed(0)
    cfg = ModelConfig(attention=attention, attention_options=options, layers=2, d_model=16, n_heads=2, d_ff=32,
                      connection=connection, connection_beta=0.5, connection_gamma=0.9,
                      norm="post" if attention == "luna" else "pre", luna_length=4, **kw)
    return build_model(cfg, kind="lm", vocab_size=12, max_length=48, pad_id=11)


@pytest.mark.parametrize("attention,options,connection", CASES, ids=CASE_IDS)
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


@pytest.mark.parametrize("attention,options,connection", STEPPED, ids=STEPPED_IDS)
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


@pytest.mark.parametrize("attention,options,connection", STEPPED, ids=STEPPED_IDS)
@pytest.mark.parametrize("m", [1, 9, 17])
def test_prefill_then_step_equals_parallel_and_stepping(attention, options, connection, m):
    """Prefill m positions in one call, step the rest: the same log-probabilities as the parallel
    forward and as stepping every position, and the same states as stepping."""
    model = lm(attention, options, connection).eval()
    ids = torch.randint(0, 11, (2, 17), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        parallel = model(ids)
        x = model.embed(ids)
        h, states = model.encoder.prefill(x[:, :m])
        outs = [model.log_probs(h)]
        for t in range(m, 17):
            h_t, states = model.encoder.step(x[:, t], states)
            outs.append(model.log_probs(h_t)[:, None])
        stepped_states = None
        for t in range(m):
            _, stepped_states = model.encoder.step(x[:, t], stepped_states)
        prefilled = model.encoder.prefill(x[:, :m])[1]
    torch.testing.assert_close(torch.cat(outs, 1), parallel, rtol=1e-4, atol=1e-4)
    for a, b in zip(prefilled, stepped_states, strict=False):
        for u, w in zip(a, b, strict=False):
            torch.testing.assert_close(u.to(w.dtype), w, rtol=1e-4, atol=1e-5)


def counted(forward, calls):
    @functools.wraps(forward)  # keeps the signature that prefill inspects
    def wrapper(x, *args, **kwargs):
        calls.append(x.shape)
        return forward(x, *args, **kwargs)

    return wrapper


@pytest.mark.parametrize("attention", [name for name in CAUSAL if attention_spec(name).step])
def test_prefill_uses_the_parallel_form(attention, monkeypatch):
    """The prompt goes through attention in one call per layer, not one step per token."""
    model = lm(attention, {}, "residual").eval()
    assert returns_final_state(model.encoder.layers[0].attn)

    def refuse(*args, **kwargs):
        raise AssertionError("step() was called during prefill")

    prompt = torch.randint(0, 11, (2, 9), generator=torch.Generator().manual_seed(4))
    reference = model.generate(prompt, 5, greedy=True, recurrent=False)
    calls = []
    for layer in model.encoder.layers:
        monkeypatch.setattr(layer.attn, "step", refuse)
        monkeypatch.setattr(layer.attn, "forward", counted(layer.attn.forward, calls))
    with torch.no_grad():
        model.encoder.prefill(model.embed(prompt))
    assert calls == [torch.Size([2, 9, 16])] * len(model.encoder.layers)
    monkeypatch.undo()
    assert torch.equal(model.generate(prompt, 5, greedy=True), reference)


@pytest.mark.parametrize("attention", [name for name in CAUSAL if attention_spec(name).step])
def test_recurrent_state_does_not_grow_unless_it_is_a_kv_cache(attention):
    """A recurrent state (linear, momentum, Luna, Performer) has one size however long the sequence; softmax's
    key/value cache grows by exactly one key and one value per layer and position."""
    model = lm(attention, {}, "residual").eval()
    sizes = []
    states, x = None, model.embed(torch.randint(0, 11, (1, 30)))
    with torch.no_grad():
        for t in range(30):
            _, states = model.encoder.step(x[:, t], states)
            sizes.append(sum(s.numel() for st in states for s in st if isinstance(s, torch.Tensor)))
    growth = {after - before for before, after in zip(sizes, sizes[1:], strict=False)}
    if all(isinstance(st, KVCache) for st in states):
        assert growth == {sum(2 * layer.attn.n_heads * layer.attn.head_dim for layer in model.encoder.layers)}
    else:
        assert growth == {0}, attention


def test_generate_rejects_bad_arguments():
    model = lm("linear", {}, "residual")
    with pytest.raises(ValueError, match="prompt"):
        model.generate(torch.zeros(2, 0, dtype=torch.long), 3)
    with pytest.raises(ValueError, match="max_length"):
        model.generate(torch.zeros(2, 5, dtype=torch.long), 100)
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
            model.generate(torch.zeros(2, 1, dtype=torch.long), 3, temperature=bad)


@pytest.mark.parametrize("recurrent,lean", [(True, True), (True, False), (False, False)])
@pytest.mark.parametrize("attention", ["linear", "softmax"])
def test_temperature_zero_is_greedy(attention, recurrent, lean):
    """Temperature 0 is the limit of softmax(log p / T): the argmax at every step, whatever the generator."""
    model = lm(attention, {}, "residual")
    prompt = torch.tensor([[3, 1], [4, 1]])
    greedy = model.generate(prompt, 12, greedy=True, recurrent=recurrent, lean=lean)
    for seed in (0, 1):
        gen = torch.Generator().manual_seed(seed)
        cold = model.generate(prompt, 12, temperature=0.0, generator=gen, recurrent=recurrent, lean=lean)
        assert torch.equal(cold, greedy)
    # each new token is the argmax of the model's next-token distribution on its prefix
    with torch.no_grad():
        expected = model.eval()(greedy[:, :-1])[:, prompt.shape[1] - 1:].argmax(-1)
    assert torch.equal(greedy[:, prompt.shape[1]:], expected)
    sampled = model.generate(prompt, 12, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert not torch.equal(sampled, greedy)  # sampling differs: the check above is not vacuous


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
