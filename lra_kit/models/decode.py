"""The lean generation step of :class:`~lra_kit.models.causal_lm.CausalLM`: one position of the whole model —
embedding, every layer, the head and the sampler — on buffers allocated once per ``generate`` call.

Katharopoulos et al. §3.4 (eqs. 16–20): a causal linear transformer is an RNN, so generating a token costs
the same at every position. The modules' ``step`` methods (``Encoder.step``) compute that step readably;
:class:`Decoder` computes the same numbers, to rounding, in about a hundred PyTorch kernels a position for
the MNIST paper model (the modules' step: about 350):

* each layer's attention is a handful of fused operations (:mod:`lra_kit.attention.decode`);
* every bias rides on a constant-1 column of the buffer its product reads
  (:func:`~lra_kit.attention.decode.with_bias_row`), and the residual enters the same product
  (``addmm(x, [f 1], [W₂ᵀ; b₂])`` is x + FFN(x)): no separate additions;
* no dropout calls (eval), no dtype round trips, no reshapes that copy;
* the mixture-of-logistics head is sampled from its probabilities
  (:class:`~lra_kit.models.mixture.MixtureProbabilities`: nine operations where the log-pmf takes thirty),
  on the device, with the caller's generator and ``torch.multinomial`` as before.

The tokens are the modules' tokens — the tests compare them exactly, greedy and sampled, for every
attention and head — since a draw changes only when the generator's number falls within the rounding
(about 1e-7) of a boundary between two values' probabilities.

On the CPU the step runs eagerly and addresses the position it reads with a Python int (views of the
token and position tables, nothing launched for it). On CUDA, :func:`generate` captures the step once as a
CUDA graph (``torch.cuda.CUDAGraph``) and replays it per position: every buffer then has a fixed address,
and the position is a two-element counter on the device that the step advances itself. The key/value
cache is the one shape that grows: on the CPU each step attends over exactly the positions so far; on CUDA
over a bucket of ``CACHE_BUCKET`` positions, the ones not yet written masked out, one graph per bucket.
"""
from __future__ import annotations

import time
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from lra_kit.attention.decode import CacheStep, lean_step, lean_supported, with_bias_row
from lra_kit.models.layers import Carry, TransformerLayer
from lra_kit.models.mixture import MixtureProbabilities

CACHE_BUCKET = 128  # on CUDA, a captured cache step attends over a multiple of this many positions


class StepContext(NamedTuple):
    """What a step's attention needs beyond its input: the position of the token it reads (a one-element
    tensor on the device), how many cache positions to attend over and the mask of those not yet written."""

    position: torch.Tensor
    span: int | None = None
    mask: torch.Tensor | None = None


def decoder_supported(model) -> bool:
    """Whether :class:`Decoder` runs ``model``: every layer a :class:`TransformerLayer` whose attention has a
    lean step (:func:`lra_kit.attention.decode.lean_supported`: linear, momentum, softmax with a cache)."""
    return all(type(layer) is TransformerLayer and lean_supported(layer.attn) for layer in model.encoder.layers)


def _norm_args(norm: nn.Module):
    """``F.layer_norm``'s arguments for a LayerNorm; None for an identity."""
    if isinstance(norm, nn.Identity):
        return None
    return norm.normalized_shape, norm.weight, norm.bias, norm.eps


class LeanLayer:
    """One :class:`TransformerLayer` on a lean attention step, dropout left out (eval): attention, connection,
    FFN and the two LayerNorms, with the residual additions and the biases inside the products."""

    def __init__(self, layer: TransformerLayer, attention, batch: int):
        cfg = layer.cfg
        self.layer, self.attention = layer, attention
        self.pre, self.residual = cfg.norm == "pre", cfg.connection == "residual"
        self.norm1, self.norm2 = _norm_args(layer.norm1), _norm_args(layer.norm2)
        first, act, second = layer.ff[0], layer.ff[1], layer.ff[3]
        self.relu = isinstance(act, nn.ReLU)
        self.w1_t, self.b1 = first.weight.detach().t(), first.bias.detach()
        self.w2_aug = with_bias_row(second.weight, second.bias)
        self.hidden = self.b1.new_ones(batch, self.b1.shape[0] + 1)  # [f 1]
        self.f = self.hidden[:, :-1]

    def ffn(self, h: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        """residual + W₂ act(W₁h + b₁) + b₂."""
        if self.relu:
            torch._addmm_activation(self.b1, h, self.w1_t, out=self.f)
        else:
            torch.addmm(self.b1, h, self.w1_t, out=self.f)
            torch.ops.aten.gelu_(self.f)
        return torch.addmm(residual, self.hidden, self.w2_aug)

    def __call__(self, x: torch.Tensor, carry: Carry, ctx: StepContext):
        a = F.layer_norm(x, *self.norm1) if self.pre else x
        if self.residual:
            h, carry = self.attention(a, ctx, residual=x), Carry()  # x + V̂
        else:
            v_hat = self.attention(a, ctx)
            h, carry = self.layer.connect(x, v_hat, carry), Carry(x, v_hat)
        if self.pre:
            return self.ffn(F.layer_norm(h, *self.norm2), h), carry
        h = F.layer_norm(h, *self.norm1)
        return F.layer_norm(self.ffn(h, h), *self.norm2), carry


class Decoder:
    """The per-position step of ``model`` for one ``generate`` call (see the module docstring).

    ``prompt`` (batch, n0) and ``states`` (the layers' states after it, from ``Encoder.prefill``) set it up;
    :meth:`sample` draws the first new token from the prompt's last hidden state, then each :meth:`step` embeds
    the latest token, runs every layer and the head, and draws the next one into :attr:`tokens`.

    ``graph=True`` (for CUDA graphs) addresses positions through the device counter; otherwise :meth:`step`
    and :meth:`sample` take the position read, ``t``, as a Python int."""

    def __init__(self, model, prompt: torch.Tensor, max_new_tokens: int, states: list, *, greedy: bool = False,
                 temperature: float = 1.0, generator: torch.Generator | None = None,
                 cache_bucket: int = 1, graph: bool = False):
        if not decoder_supported(model):
            raise ValueError("model has a layer without a lean step (see decoder_supported)")
        B, n0 = prompt.shape
        length = n0 + max_new_tokens
        self.B, self.n0, self.length, self.graph = B, n0, length, graph
        self.greedy, self.temperature, self.generator = greedy, temperature, generator
        self.positions = torch.arange(length, device=prompt.device)
        # graph: the position of the token a step reads and of the one it writes, advanced by the step itself
        self.counter = torch.tensor([n0 - 1, n0], device=prompt.device)
        self.read, self.write = self.counter[:1], self.counter[1:]
        self._setup_embedding(model.embed, prompt)
        self.layers = [LeanLayer(layer, lean_step(layer.attn, state, batch=B, length=length), B)
                       for layer, state in zip(model.encoder.layers, states, strict=True)]
        self.final_norm = _norm_args(model.encoder.final_norm)
        self.mixture = model.cfg.output == "logistic_mixture"
        weight, bias = model.head.weight.detach(), model.head.bias.detach()
        if self.mixture:
            K = model.cfg.mixture_components
            sign = torch.ones_like(bias)
            sign[2 * K:] = -1  # the head gives −log s_k, which MixtureProbabilities takes
            weight, bias = weight * sign[:, None], bias * sign
            self.probabilities = MixtureProbabilities(B, K, dtype=bias.dtype, device=bias.device)
            self.split = K
        self.head_w_t, self.head_b = weight.t(), bias
        self.cached = any(isinstance(layer.attention, CacheStep) for layer in self.layers)
        self.cache_bucket = cache_bucket

    @classmethod
    def after_prompt(cls, model, prompt: torch.Tensor, max_new_tokens: int, **kwargs) -> Decoder:
        """The prompt through the parallel forms (``Encoder.prefill``), then a decoder continuing from its states
        with its first new token drawn (:meth:`first`); ``kwargs`` as for the constructor."""
        h, states = model.encoder.prefill(model.embed(prompt))
        decoder = cls(model, prompt, max_new_tokens, states, **kwargs)
        decoder.first(h[:, -1])
        return decoder

    def _setup_embedding(self, embed, prompt: torch.Tensor) -> None:
        """The token and position tables as one table of V + length rows, so that one ``embedding_bag`` (sum)
        of the two rows (token, V + position) is ``Embeddings.forward``'s token × scale + position, or
        [token, position] for concatenated sinusoids (each table padded with zeros to the other's columns)."""
        tokens = embed.tokens.weight.detach()
        V, d_tok = tokens.shape
        if embed.position == "learned":
            positions = embed.positions.weight.detach()[:self.length]
        elif embed.position in ("sinusoidal", "sinusoidal_concat"):
            positions = embed.table[:self.length].to(tokens.dtype)
        else:
            positions = tokens.new_zeros(self.length, d_tok)
        if embed.position == "sinusoidal_concat":
            tokens = F.pad(tokens, (0, positions.shape[1]))
            positions = F.pad(positions, (d_tok, 0))
        self.table = torch.cat([tokens, positions])
        self.weights = tokens.new_tensor([embed.scale, 1.0]).repeat(self.B) if embed.scale != 1.0 else None
        self.offsets = torch.arange(0, 2 * self.B, 2, device=prompt.device)
        # (position, batch, [token, V + position]): the lookup of position t is the view lookup[t]
        self.lookup = prompt.new_empty(self.length, self.B, 2)
        self.lookup[:self.n0, :, 0] = prompt.t()
        self.lookup[:, :, 1] = V + self.positions[:, None]
        self.ids = self.lookup[self.n0 - 1].clone()  # graph: the lookup the step reads, advanced in place
        self.rows = self.table.new_empty(2 * self.B, self.table.shape[1])
        self.embed_norm = _norm_args(embed.norm)

    @property
    def tokens(self) -> torch.Tensor:
        """The prompt and the tokens drawn so far, (batch, length) (a view)."""
        return self.lookup[:, :, 0].t()

    def embed(self, t: int | None = None) -> torch.Tensor:
        """The token at position ``t`` (the counter's ``read`` when None) and its position, (batch, d)
        (``Embeddings.forward``, dropout left out)."""
        if t is not None:
            x = F.embedding_bag(self.lookup[t].view(-1), self.table, self.offsets, mode="sum",
                                per_sample_weights=self.weights)
        else:  # the two rows gathered and summed: kernels a captured graph is known to take (no host sync)
            torch.index_select(self.table, 0, self.ids.view(-1), out=self.rows)
            if self.weights is not None:
                self.rows.mul_(self.weights[:, None])
            x = torch.sum(self.rows.view(self.B, 2, -1), 1)
        return x if self.embed_norm is None else F.layer_norm(x, *self.embed_norm)

    def sample(self, h: torch.Tensor, t: int | None = None) -> None:
        """Head, probabilities and the draw (``CausalLM.log_probs`` and ``_choose``), written at position
        ``t + 1`` (the counter's ``write`` when None, which then moves on)."""
        out = torch.addmm(self.head_b, h, self.head_w_t)
        chosen = (self.ids if t is None else self.lookup[t + 1])[:, :1]
        if self.mixture:
            K = self.split
            p = self.probabilities(out[:, :K], out[:, K:2 * K], out[:, 2 * K:])
            if self.greedy:
                torch.argmax(p, -1, keepdim=True, out=chosen)
            else:
                if self.temperature != 1:
                    p = p.pow(1.0 / self.temperature)
                torch.multinomial(p, 1, generator=self.generator, out=chosen)
        elif self.greedy:
            torch.argmax(out, -1, keepdim=True, out=chosen)
        else:
            logits = out if out.dtype == torch.float32 else out.float()
            if self.temperature != 1:
                logits = logits / self.temperature
            torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=self.generator, out=chosen)
        if t is None:
            self.lookup[..., 0].index_copy_(0, self.write, chosen.t())
            self.counter.add_(1)
            self.ids[:, 1].add_(1)

    def first(self, h_last: torch.Tensor) -> None:
        """Draw the first new token, at position n0, from the prompt's last hidden state (batch, d)."""
        self.sample(h_last, None if self.graph else self.n0 - 1)

    def span(self, t: int) -> int | None:
        """How many cache positions the step that reads position ``t`` attends over (None without a cache)."""
        if not self.cached:
            return None
        if self.cache_bucket == 1:
            return t + 1
        return min(self.length, -(-(t + 1) // self.cache_bucket) * self.cache_bucket)

    def step(self, t: int | None = None, span: int | None = None) -> None:
        """One position: embed the token at ``t`` (the counter's ``read`` when None), every layer, the head,
        the draw into the next position."""
        mask = None
        if self.cached and self.cache_bucket > 1:
            mask = self.positions[None, :span] <= self.read
        position = self.read if t is None else self.positions[t:t + 1]
        ctx = StepContext(position, span if span is not None or t is None else self.span(t), mask)
        x, carry = self.embed(t), Carry()
        for layer in self.layers:
            x, carry = layer(x, carry, ctx)
        self.sample(x if self.final_norm is None else F.layer_norm(x, *self.final_norm), t)


def _past(deadline: float | None, i: int, device: torch.device) -> bool:
    """Whether a benchmark's ``deadline`` (``time.perf_counter()`` seconds) has passed, asked every 8 steps from
    the 8th (on CUDA after draining the queue: only a benchmark gives a deadline; ``generate`` never syncs)."""
    if deadline is None or i % 8 or i == 0:
        return False
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() >= deadline


class SetupClock:
    """What :func:`run_steps` spent setting CUDA graphs up, for a benchmark that times the steps apart from it:
    ``seconds`` of warm-up steps and captures (the device drained before and after each, which ``generate`` never
    does), and ``steps``, the steps among them that generated a position (the warm-ups: a capture only records)."""

    def __init__(self):
        self.seconds, self.steps = 0.0, 0

    def start(self, device: torch.device) -> float:
        torch.cuda.synchronize(device)
        return time.perf_counter()

    def stop(self, device: torch.device, started: float, *, stepped: bool) -> None:
        torch.cuda.synchronize(device)
        self.seconds += time.perf_counter() - started
        self.steps += stepped


def run_steps(decoder: Decoder, steps: int, *, deadline: float | None = None, clock: SetupClock | None = None) -> int:
    """Run up to ``steps`` steps of ``decoder``: eagerly, or as CUDA graphs for a decoder built with
    ``graph=True``; a ``deadline`` stops them early. Returns the number of steps run. ``clock`` (a
    :class:`SetupClock`) collects the time of the graphs' warm-ups and captures (eager steps have none)."""
    if decoder.graph:
        return _run_cuda_graphs(decoder, steps, deadline, clock)
    return _run_eager(decoder, steps, deadline)


def _run_eager(decoder: Decoder, steps: int, deadline: float | None = None) -> int:
    for i in range(steps):
        if _past(deadline, i, decoder.tokens.device):
            return i
        decoder.step(decoder.n0 + i)
    return steps


def _run_cuda_graphs(decoder: Decoder, steps: int, deadline: float | None = None,  # pragma: no cover - GPU
                     clock: SetupClock | None = None) -> int:
    """Each step shape runs once eagerly on a side stream (the warm-up capture needs), is then captured as a CUDA
    graph and replayed for every later step of that shape: one graph for the RNNs, one per cache bucket."""
    graphs, warmed = {}, set()
    pool = torch.cuda.graph_pool_handle()
    side = torch.cuda.Stream()
    device = decoder.tokens.device
    for i in range(steps):
        if _past(deadline, i, device):
            return i
        span = decoder.span(decoder.n0 + i)
        graph = graphs.get(span)
        if graph is None and span not in warmed:
            started = clock.start(device) if clock is not None else 0.0
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                decoder.step(None, span)
            torch.cuda.current_stream().wait_stream(side)
            warmed.add(span)
            if clock is not None:
                clock.stop(device, started, stepped=True)
            continue
        if graph is None:
            started = clock.start(device) if clock is not None else 0.0
            graph = torch.cuda.CUDAGraph()
            if decoder.generator is not None:
                graph.register_generator_state(decoder.generator)
            with torch.cuda.graph(graph, pool=pool):
                decoder.step(None, span)  # recorded, not run
            graphs[span] = graph
            if clock is not None:
                clock.stop(device, started, stepped=False)
        graph.replay()
    return steps


def generate(model, prompt: torch.Tensor, max_new_tokens: int, h_last: torch.Tensor, states: list, *,
             greedy: bool = False, temperature: float = 1.0, generator: torch.Generator | None = None,
             cuda_graph: bool = True) -> torch.Tensor:
    """Continue ``prompt`` by ``max_new_tokens`` ≥ 1 tokens from the prefill's last hidden state ``h_last``
    (batch, d) and layer ``states``; returns the tokens (batch, n0 + new). On CUDA with ``cuda_graph`` the
    steps replay captured graphs; elsewhere they run eagerly (the same :meth:`Decoder.step`)."""
    graphs = cuda_graph and prompt.device.type == "cuda"
    decoder = Decoder(model, prompt, max_new_tokens, states, greedy=greedy, temperature=temperature,
                      generator=generator, cache_bucket=CACHE_BUCKET if graphs else 1, graph=graphs)
    decoder.first(h_last)
    run_steps(decoder, max_new_tokens - 1)
    return decoder.tokens


__all__ = ["CACHE_BUCKET", "Decoder", "LeanLayer", "SetupClock", "StepContext", "decoder_supported", "generate",
           "run_steps"]
