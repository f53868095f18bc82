"""Causal language model for the copy task and pixel-by-pixel image generation.

Katharopoulos et al. §4.1–4.2 and Nguyen et al. §4.1–4.2: tokens → causal Encoder → a
distribution over the next token, either a softmax over the vocabulary or, for pixels, the
discretized mixture of logistics (:mod:`lra_kit.models.mixture`). Training runs the parallel
(causal-masked) form. :meth:`CausalLM.generate` reads the prompt in one parallel call that also
returns each layer's recurrent state (:meth:`~lra_kit.models.layers.Encoder.prefill`), then runs
the recurrent form — the RNN of Katharopoulos eqs. 16–20 for linear attention, Nguyen eq. 12 for
momentum attention, the fixed-size state of causal Luna (Luna §3.3), a key/value cache for
softmax — one new token at a time with memory that does not grow (except softmax's cache).
``recurrent=False`` runs the parallel model on the growing prefix instead: the tests check both
give the same tokens.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from lra_kit.attention import attention_spec
from lra_kit.models.config import ModelConfig
from lra_kit.models.decode import decoder_supported
from lra_kit.models.decode import generate as lean_generate
from lra_kit.models.embeddings import Embeddings
from lra_kit.models.layers import Encoder
from lra_kit.models.mixture import N_BINS, logistic_mixture_log_pmf


class CausalLM(nn.Module):
    """``forward(input_ids, key_padding_mask=None)`` → next-token log-probabilities (batch, n, vocab)."""

    def __init__(self, cfg: ModelConfig, *, vocab_size: int, max_length: int, pad_id: int = 0):
        super().__init__()
        cfg.validate()
        if cfg.output == "logistic_mixture" and vocab_size != N_BINS:
            raise ValueError(f"output='logistic_mixture' models 8-bit pixels (vocab_size {N_BINS}), got {vocab_size}")
        self.cfg, self.vocab_size, self.max_length = cfg, vocab_size, max_length
        self.embed = Embeddings(cfg, max(vocab_size, pad_id + 1), max_length)
        self.encoder = Encoder(cfg, causal=True, max_length=max_length)
        n_out = vocab_size if cfg.output == "softmax" else 3 * cfg.mixture_components
        self.head = nn.Linear(cfg.d_model, n_out)

    def log_probs(self, h: torch.Tensor) -> torch.Tensor:
        """Hidden states (…, d) → log P(next token) (…, vocab), in float32."""
        out = self.head(h)
        if self.cfg.output == "logistic_mixture":
            return logistic_mixture_log_pmf(out, self.cfg.mixture_components)
        return F.log_softmax(out.float(), dim=-1)

    def forward(self, input_ids: torch.Tensor, key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        h, _ = self.encoder(self.embed(input_ids), key_padding_mask)
        return self.log_probs(h)

    def loss_terms(self, input_ids, key_padding_mask=None, loss_mask=None) -> dict:
        """Sums over the predicted tokens: position t predicts token t+1 wherever that token is real
        (and marked by ``loss_mask``, e.g. the copy task's second copy). Returns ``nll`` (nats),
        ``correct`` (argmax = target) and ``count`` so that means can be reduced across batches/ranks, and
        ``seq_nll`` and ``seq_count``, the same per sequence (an image, for the pixel tasks)."""
        log_p = self(input_ids, key_padding_mask)[:, :-1]
        target = input_ids[:, 1:]
        keep = torch.ones_like(target, dtype=torch.bool)
        if key_padding_mask is not None:
            keep &= ~key_padding_mask[:, 1:]
        if loss_mask is not None:
            keep &= loss_mask[:, 1:]
        nll = -log_p.gather(-1, target.clamp(0, log_p.shape[-1] - 1)[..., None])[..., 0]
        keep_f = keep.to(nll.dtype)
        seq_nll = (nll * keep_f).sum(-1)
        return {"nll": seq_nll.sum(), "correct": ((log_p.argmax(-1) == target) & keep).sum(),
                "count": keep.sum(), "seq_nll": seq_nll, "seq_count": keep.sum(-1)}

    def _choose(self, log_p: torch.Tensor, greedy: bool, temperature: float, generator) -> torch.Tensor:
        if greedy:
            return log_p.argmax(-1)
        probs = torch.softmax(log_p / temperature, dim=-1)
        return torch.multinomial(probs, 1, generator=generator)[:, 0]

    def generate(self, prompt: torch.Tensor, max_new_tokens: int, *, greedy: bool = False, temperature: float = 1.0,
                 generator: torch.Generator | None = None, recurrent: bool = True, lean: bool = True,
                 cuda_graph: bool = True) -> torch.Tensor:
        """Continue ``prompt`` (batch, n0 ≥ 1) by ``max_new_tokens`` tokens; returns (batch, n0 + new).

        ``recurrent=True`` prefills: the prompt goes through the parallel forms in one call, which
        hands each layer's final state to the recurrent forms; these then step one new token at a
        time (constant memory per step for linear, momentum and Luna; a key/value cache for
        softmax). ``recurrent=False`` re-runs the parallel model on the whole prefix at every step
        (the O(n²) reference); an attention without a recurrent form (``ATTENTIONS[name].step`` False: LSH,
        whose sort and chunks are redone for every input, Katharopoulos et al. appendix C.1) always does this.

        ``lean=True`` (linear, momentum and softmax layers in float32/64) runs each step as
        ``lra_kit.models.decode.Decoder``: the numbers of the modules' ``step`` to rounding (the same
        tokens for the same generator, tested) in far fewer kernels, on buffers allocated once; on
        CUDA with ``cuda_graph=True`` the step is captured once as a CUDA graph and replayed per
        position. ``lean=False`` steps through the modules (``Encoder.step``),
        the readable reference. Runs under ``torch.inference_mode()``; the tokens returned are an
        ordinary tensor.

        Each new token is drawn from ``softmax(log p / temperature)`` with ``generator``;
        ``temperature=0`` (the limit of that distribution) or ``greedy=True`` takes the most likely
        token instead (argmax; nothing is drawn from ``generator``).
        """
        if prompt.dim() != 2 or prompt.shape[1] < 1:
            raise ValueError(f"prompt must have shape (batch, n0 >= 1), got {tuple(prompt.shape)}")
        if prompt.shape[1] + max_new_tokens > self.max_length:
            raise ValueError(f"prompt length + max_new_tokens must be <= max_length={self.max_length}")
        if not (math.isfinite(temperature) and temperature >= 0):
            raise ValueError(f"temperature must be a finite number >= 0 (0: greedy), got {temperature}")
        greedy = greedy or temperature == 0
        was_training = self.training
        self.eval()
        try:
            with torch.inference_mode():
                tokens = self._generate(prompt, max_new_tokens, greedy, temperature, generator, recurrent, lean,
                                        cuda_graph)
        finally:
            self.train(was_training)
        return tokens.clone()  # inference tensors cannot be saved for backward later; a clone can

    def _generate(self, prompt, max_new_tokens, greedy, temperature, generator, recurrent, lean, cuda_graph):
        tokens = prompt
        if not recurrent or not attention_spec(self.cfg.attention).step:
            for _ in range(max_new_tokens):
                nxt = self._choose(self(tokens)[:, -1], greedy, temperature, generator)
                tokens = torch.cat([tokens, nxt[:, None]], dim=1)
            return tokens
        if max_new_tokens < 1:
            return tokens
        h, states = self.encoder.prefill(self.embed(prompt))
        h = h[:, -1]
        if lean and decoder_supported(self):
            return lean_generate(self, prompt, max_new_tokens, h, states, greedy=greedy, temperature=temperature,
                                 generator=generator, cuda_graph=cuda_graph)
        for i in range(max_new_tokens):
            nxt = self._choose(self.log_probs(h), greedy, temperature, generator)
            tokens = torch.cat([tokens, nxt[:, None]], dim=1)
            if i + 1 < max_new_tokens:
                h, states = self.encoder.step(self.embed(nxt[:, None], offset=tokens.shape[1] - 1)[:, 0], states)
        return tokens


def bits_per_dim(nll_nats: float, count: int) -> float:
    """Mean negative log-likelihood per predicted value, in bits (nats / ln 2)."""
    return nll_nats / max(count, 1) / math.log(2.0)


def per_image_bits(nats_sum: float, nats_sq: float, images: int) -> dict:
    """The spread over images of each image's bits/dim, from the sum and the sum of squares of each image's mean
    NLL in nats over ``images`` images: ``{"bits_per_dim_image_std": the sample standard deviation (bits),
    "images": images}``; the standard deviation is None for fewer than two images. Its standard error,
    std / √images, is the test set's noise on a bits/dim (``lra_kit.claims.bits_noise``)."""
    if images < 2:
        return {"bits_per_dim_image_std": None, "images": int(images)}
    variance = max(0.0, (nats_sq - nats_sum ** 2 / images) / (images - 1))
    return {"bits_per_dim_image_std": math.sqrt(variance) / math.log(2.0), "images": int(images)}
