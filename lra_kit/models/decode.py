"""The lean generation step of :class:`~lra_kit.models.causal_lm.CausalLM`: one position of the whole model —
embedding, every layer, the head and the sampler — on buffers allocated once per ``generate`` call.

Katharopoulos et al. §3.4 (eqs. 16–20): a causal linear transformer is an RNN, so generating a token costs
the same at every position. The modules' ``step`` methods (``Encoder.step``) compute that step readably;
:class:`Decoder` computes the same numbers — bit for bit on the CPU, which the tests check against
``generate(lean=False)`` — with far fewer PyTorch operations (the layers' attention steps are
:mod:`lra_kit.attention.decode`'s): no dropout calls in eval, no dtype round trips, no per-step views or
reshapes, the q/k/v projections fused, and the sampler on the device with the caller's generator
(``torch.multinomial`` on the same probabilities as before, so the generator is consumed exactly as
before).

Everything a step touches has a fixed shape and stays on the device: the tokens, a two-element position
counter that the step advances itself, the layers' states. On CUDA, :func:`generate` therefore captures
the step once as a CUDA graph (``torch.cuda.CUDAGraph``) and replays it per position; the CPU runs the
very same :meth:`Decoder.step` eagerly. The key/value cache is the one shape that grows: on the CPU each
step attends over exactly the positions so far; on CUDA over a bucket of ``CACHE_BUCKET`` positions,
the ones not yet written masked out, with one graph per bucket.
"""
from __future__ import annotations

import time
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from lra_kit.attention.decode import CacheStep, lean_step, lean_supported
from lra_kit.models.layers import Carry, TransformerLayer
from lra_kit.models.mixture import logistic_mixture_log_pmf

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
    """One :class:`TransformerLayer` on a lean attention step: the same operations as its ``step``, minus dropout
    (eval) and with the FFN's first product and ReLU in one call (``torch._addmm_activation``)."""

    def __init__(self, layer: TransformerLayer, attention):
        cfg = layer.cfg
        self.layer, self.attention = layer, attention
        self.pre, self.residual = cfg.norm == "pre", cfg.connection == "residual"
        self.norm1, self.norm2 = _norm_args(layer.norm1), _norm_args(layer.norm2)
        first, act, second = layer.ff[0], layer.ff[1], layer.ff[3]
        self.relu = isinstance(act, nn.ReLU)
        self.w1_t, self.b1 = first.weight.detach().t(), first.bias.detach()
        self.w2_t, self.b2 = second.weight.detach().t(), second.bias.detach()

    def ffn(self, h: torch.Tensor) -> torch.Tensor:
        if self.relu:
            f = torch._addmm_activation(self.b1, h, self.w1_t)
        else:
            f = F.gelu(torch.addmm(self.b1, h, self.w1_t))
        return torch.addmm(self.b2, f, self.w2_t)

    def __call__(self, x: torch.Tensor, carry: Carry, ctx: StepContext):
        v_hat = self.attention(F.layer_norm(x, *self.norm1) if self.pre else x, ctx)
        h = x + v_hat if self.residual else self.layer.connect(x, v_hat, carry)
        if self.pre:
            out = h + self.ffn(F.layer_norm(h, *self.norm2))
        else:
            h = F.layer_norm(h, *self.norm1)
            out = F.layer_norm(h + self.ffn(h), *self.norm2)
        return out, Carry(x, v_hat)


class Decoder:
    """The per-position step of ``model`` for one ``generate`` call (see the module docstring).

    ``prompt`` (batch, n0) and ``states`` (the layers' states after it, from ``Encoder.prefill``) set it up;
    :meth:`sample` draws the first new token from the prompt's last hidden state, then each :meth:`step` embeds
    the latest token, runs every layer and the head, and draws the next one into :attr:`tokens`."""

    def __init__(self, model, prompt: torch.Tensor, max_new_tokens: int, states: list, *, greedy: bool = False,
                 temperature: float = 1.0, generator: torch.Generator | None = None,
                 cache_bucket: int = 1):
        if not decoder_supported(model):
            raise ValueError("model has a layer without a lean step (see decoder_supported)")
        B, n0 = prompt.shape
        length = n0 + max_new_tokens
        self.B, self.n0, self.length = B, n0, length
        self.greedy, self.temperature, self.generator = greedy, temperature, generator
        self.tokens = prompt.new_empty(B, length)
        self.tokens[:, :n0] = prompt
        # the position of the token a step reads and of the one it writes, advanced by the step itself
        self.counter = torch.tensor([n0 - 1, n0], device=prompt.device)
        self.read, self.write = self.counter[:1], self.counter[1:]
        self.ids = prompt.new_empty(B, 1)
        self.ids_flat = self.ids.view(B)
        self._setup_embedding(model.embed)
        self.layers = [LeanLayer(layer, lean_step(layer.attn, state, batch=B, length=length))
                       for layer, state in zip(model.encoder.layers, states, strict=True)]
        self.final_norm = _norm_args(model.encoder.final_norm)
        self.head_w_t, self.head_b = model.head.weight.detach().t(), model.head.bias.detach()
        self.mixture = model.cfg.output == "logistic_mixture"
        self.components = model.cfg.mixture_components
        self.cached = any(isinstance(layer.attention, CacheStep) for layer in self.layers)
        self.cache_bucket = cache_bucket
        self.positions = torch.arange(length, device=prompt.device)[None, :]

    def _setup_embedding(self, embed) -> None:
        dtype = embed.tokens.weight.dtype
        self.token_weight, self.scale, self.position = embed.tokens.weight.detach(), embed.scale, embed.position
        if self.position == "learned":
            self.position_table = embed.positions.weight.detach()
        elif self.position in ("sinusoidal", "sinusoidal_concat"):
            self.position_table = embed.table.to(dtype)  # converted once, not per step
        if self.position == "sinusoidal_concat":
            self.row = self.position_table.new_empty(1, self.position_table.shape[1])
            self.rows = self.row.expand(self.B, -1)
        self.embed_norm = _norm_args(embed.norm)

    def embed(self) -> torch.Tensor:
        """The token at position ``read`` and its position, (batch, d) (``Embeddings.forward``)."""
        torch.index_select(self.tokens, 1, self.read, out=self.ids)
        x = torch.index_select(self.token_weight, 0, self.ids_flat)
        if self.scale != 1.0:
            x = x * self.scale
        if self.position == "learned" or self.position == "sinusoidal":
            x = x + torch.index_select(self.position_table, 0, self.read)
        elif self.position == "sinusoidal_concat":
            torch.index_select(self.position_table, 0, self.read, out=self.row)
            x = torch.cat([x, self.rows], dim=-1)
        return x if self.embed_norm is None else F.layer_norm(x, *self.embed_norm)

    def sample(self, h: torch.Tensor) -> None:
        """Head, log-probabilities and the draw (``CausalLM.log_probs`` and ``_choose``), written at position
        ``write``; then the counter moves on."""
        out = torch.addmm(self.head_b, h, self.head_w_t)
        if self.mixture:
            log_p = logistic_mixture_log_pmf(out, self.components)
        else:
            log_p = F.log_softmax(out if out.dtype == torch.float32 else out.float(), dim=-1)
        if self.greedy:
            nxt = log_p.argmax(-1, keepdim=True)
        else:
            if self.temperature != 1:
                log_p = log_p / self.temperature
            nxt = torch.multinomial(torch.softmax(log_p, dim=-1), 1, generator=self.generator)
        self.tokens.index_copy_(1, self.write, nxt)
        self.counter.add_(1)

    def span(self, t: int) -> int | None:
        """How many cache positions the step that reads position ``t`` attends over (None without a cache)."""
        if not self.cached:
            return None
        if self.cache_bucket == 1:
            return t + 1
        return min(self.length, -(-(t + 1) // self.cache_bucket) * self.cache_bucket)

    def step(self, span: int | None = None) -> None:
        """One position: embed the token at ``read``, every layer, the head, the draw into ``write``."""
        mask = None
        if self.cached and self.cache_bucket > 1:
            mask = self.positions[:, :span] <= self.read
        ctx = StepContext(self.read, span, mask)
        x, carry = self.embed(), Carry()
        for layer in self.layers:
            x, carry = layer(x, carry, ctx)
        self.sample(x if self.final_norm is None else F.layer_norm(x, *self.final_norm))


def _past(deadline: float | None, i: int, device: torch.device) -> bool:
    """Whether a benchmark's ``deadline`` (``time.perf_counter()`` seconds) has passed, asked every 8 steps from
    the 8th (on CUDA after draining the queue: only a benchmark gives a deadline; ``generate`` never syncs)."""
    if deadline is None or i % 8 or i == 0:
        return False
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() >= deadline


def run_steps(decoder: Decoder, steps: int, *, cuda_graph: bool = False, deadline: float | None = None) -> int:
    """Run up to ``steps`` steps of ``decoder`` (eagerly, or as CUDA graphs); a ``deadline`` stops them early.
    Returns the number of steps run."""
    run = _run_cuda_graphs if cuda_graph else _run_eager
    return run(decoder, steps, deadline)


def _run_eager(decoder: Decoder, steps: int, deadline: float | None = None) -> int:
    for i in range(steps):
        if _past(deadline, i, decoder.tokens.device):
            return i
        decoder.step(decoder.span(decoder.n0 + i))
    return steps


def _run_cuda_graphs(decoder: Decoder, steps: int, deadline: float | None = None) -> int:  # pragma: no cover - GPU
    """Each step shape runs once eagerly on a side stream (the warm-up capture needs), is then captured as a CUDA
    graph and replayed for every later step of that shape: one graph for the RNNs, one per cache bucket."""
    graphs, warmed = {}, set()
    pool = torch.cuda.graph_pool_handle()
    side = torch.cuda.Stream()
    for i in range(steps):
        if _past(deadline, i, decoder.tokens.device):
            return i
        span = decoder.span(decoder.n0 + i)
        graph = graphs.get(span)
        if graph is None and span not in warmed:
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                decoder.step(span)
            torch.cuda.current_stream().wait_stream(side)
            warmed.add(span)
            continue
        if graph is None:
            graph = torch.cuda.CUDAGraph()
            if decoder.generator is not None:
                graph.register_generator_state(decoder.generator)
            with torch.cuda.graph(graph, pool=pool):
                decoder.step(span)  # recorded, not run
            graphs[span] = graph
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
                      generator=generator, cache_bucket=CACHE_BUCKET if graphs else 1)
    decoder.sample(h_last)
    run_steps(decoder, max_new_tokens - 1, cuda_graph=graphs)
    return decoder.tokens


__all__ = ["CACHE_BUCKET", "Decoder", "LeanLayer", "StepContext", "decoder_supported", "generate", "run_steps"]
