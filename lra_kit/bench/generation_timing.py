"""One round of generating images, timed in its parts: the steps apart from the prompt pass and the set-up.

Katharopoulos et al. appendix Table 5 gives the seconds to generate an image, and Tables 1-2 and 4 the images a
second: the cost of the steps that draw the pixels. What comes before the first step — the prompt pass, allocating
the decoder's buffers, capturing CUDA graphs — is paid once per call whatever the image's length, so it is timed
apart (``prefill_s``, ``setup_s``) and left out of the milliseconds per pixel, which are the steps' alone.

A round generates up to ``pixels`` new pixels of ``batch`` images (the first pixel given, 0; the rest sampled at
temperature 1 with a generator seeded 0) in one of four ways (:data:`WAYS`):

``uncached``  every pixel re-runs the model on the whole prefix (``CausalLM.generate(recurrent=False)``), in chunks
              of :data:`CHUNK` pixels between budget checks: the papers' softmax and LSH rows (LSH has no recurrent
              form: its sort and chunks are redone for every input, Katharopoulos et al. appendix C.1). No prompt
              pass and nothing to set up: every pixel is a step, and ``prefill_s`` and ``setup_s`` are None.
``eager``     ``generate()``'s lean step (:class:`lra_kit.models.decode.Decoder`) run eagerly: the prompt pass
              (``Encoder.prefill`` and the draw of the first new pixel) is ``prefill_s``, building the decoder on its
              preallocated buffers ``setup_s``, then one step per further pixel.
``graph``     the same, its steps replayed as CUDA graphs (CUDA only): each graph's warm-up step and capture are
              ``setup_s`` too (:class:`lra_kit.models.decode.SetupClock`), and the warm-up steps, run eagerly, are
              not counted among the timed steps.
``modules``   the modules' step (``Encoder.step``, the readable reference, as ``generate(lean=False)`` runs it): the
              prompt pass is ``prefill_s``; nothing is set up (``setup_s`` 0).

A budget stops the steps once it has passed (checked after each chunk, or every 8 steps); the prompt pass and the
set-up are not charged to it. The tokens drawn are those of ``generate`` with the same generator (tested), so what
is timed is generation, not a stand-in for it.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field

import torch

from lra_kit.bench.timing import synchronize

WAYS = ("uncached", "eager", "graph", "modules")
CHUNK = 8  # pixels per generate() call of an uncached round, between budget checks


@dataclass(frozen=True)
class Round:
    """One timed round: ``steps`` steps took ``steps_s`` seconds; ``pixels`` new pixels were generated (the steps',
    the prompt pass's first and, for CUDA graphs, the warm-up steps'); ``prefill_s`` and ``setup_s`` as in the module
    docstring (None where a way has none). ``tokens``, the images drawn, are kept for tests, not recorded."""

    steps_s: float
    steps: int
    pixels: int
    prefill_s: float | None
    setup_s: float | None
    tokens: torch.Tensor | None = field(default=None, repr=False, compare=False)

    @property
    def ms_per_pixel(self) -> float:
        """Milliseconds per step: each step draws one pixel of every image of the batch."""
        return 1e3 * self.steps_s / self.steps

    def record(self) -> dict:
        """What a benchmark row keeps of the round: every field but the tokens."""
        out = asdict(self)
        del out["tokens"]
        return out


def check_round(way: str, pixels: int, budget_s: float | None) -> None:
    """Clear errors for :func:`time_round`'s arguments."""
    if way not in WAYS:
        raise ValueError(f"way must be one of {', '.join(WAYS)}, got {way!r}")
    least = 1 if way == "uncached" else 2  # the lean ways' first pixel comes from the prompt pass: no step
    if not isinstance(pixels, int) or isinstance(pixels, bool) or pixels < least:
        raise ValueError(f"pixels must be an int >= {least} for the {way} way, got {pixels!r}")
    if budget_s is not None and not (isinstance(budget_s, (int, float)) and budget_s > 0):
        raise ValueError(f"budget_s must be a positive number of seconds or None, got {budget_s!r}")


def time_round(model, way: str, batch: int, pixels: int, device="cpu", *, budget_s: float | None = None) -> Round:
    """Generate up to ``pixels`` new pixels of ``batch`` images with ``model`` (a :class:`~lra_kit.models.causal_lm.
    CausalLM`) the ``way`` named, the steps stopped once ``budget_s`` has passed; see the module docstring."""
    check_round(way, pixels, budget_s)
    device = torch.device(device)
    if way == "graph" and device.type != "cuda":
        raise ValueError(f"the graph way replays CUDA graphs: device must be cuda, got {device}")
    prompt = torch.zeros(batch, 1, dtype=torch.long, device=device)
    generator = torch.Generator(device=device).manual_seed(0)
    with torch.inference_mode():
        if way == "uncached":
            return _uncached(model, prompt, pixels, generator, budget_s)
        if way == "modules":
            return _modules(model, prompt, pixels, generator, budget_s)
        return _lean(model, prompt, pixels, generator, budget_s, graph=way == "graph")


def _uncached(model, prompt, pixels, generator, budget_s) -> Round:
    device = prompt.device
    tokens, done = prompt, 0
    synchronize(device)
    start = time.perf_counter()
    while done < pixels:
        n = min(CHUNK, pixels - done)
        tokens = model.generate(tokens, n, recurrent=False, generator=generator)
        done += n
        synchronize(device)
        if budget_s is not None and time.perf_counter() - start >= budget_s:
            break
    return Round(time.perf_counter() - start, done, done, None, None, tokens)


def _lean(model, prompt, pixels, generator, budget_s, *, graph: bool) -> Round:
    """``Decoder.after_prompt`` and ``run_steps`` (what ``generate`` runs), with a clock between the parts."""
    from lra_kit.models.decode import CACHE_BUCKET, Decoder, SetupClock, run_steps

    device = prompt.device
    marks = [_now(device)]
    h, states = model.encoder.prefill(model.embed(prompt))
    marks.append(_now(device))
    decoder = Decoder(model, prompt, pixels, states, generator=generator,
                      cache_bucket=CACHE_BUCKET if graph else 1, graph=graph)
    marks.append(_now(device))
    decoder.first(h[:, -1])
    marks.append(_now(device))
    clock = SetupClock()
    # every round checks a deadline (an infinite one without a budget), so that on CUDA every round drains the queue
    # at the same steps
    deadline = marks[-1] + (math.inf if budget_s is None else budget_s)
    ran = run_steps(decoder, pixels - 1, deadline=deadline, clock=clock)
    end = _now(device)
    steps = ran - clock.steps
    if steps < 1:
        raise ValueError(f"pixels={pixels} left no step to time after the CUDA graphs' warm-up steps; give more")
    prefill = (marks[1] - marks[0]) + (marks[3] - marks[2])
    return Round(end - marks[3] - clock.seconds, steps, 1 + ran, prefill, marks[2] - marks[1] + clock.seconds,
                 decoder.tokens.clone())


def _modules(model, prompt, pixels, generator, budget_s) -> Round:
    """The recurrent loop of ``CausalLM.generate(lean=False)``, with a clock after the prompt pass."""
    device = prompt.device
    start = _now(device)
    h, states = model.encoder.prefill(model.embed(prompt))
    nxt = model._choose(model.log_probs(h[:, -1]), False, 1.0, generator)
    tokens = torch.cat([prompt, nxt[:, None]], dim=1)
    prefilled = _now(device)
    budget = math.inf if budget_s is None else budget_s  # checked every 8 steps either way, as the lean ways are
    steps = 0
    while steps < pixels - 1:
        if steps and steps % 8 == 0 and _now(device) - prefilled >= budget:
            break
        h, states = model.encoder.step(model.embed(nxt[:, None], offset=tokens.shape[1] - 1)[:, 0], states)
        nxt = model._choose(model.log_probs(h), False, 1.0, generator)
        tokens = torch.cat([tokens, nxt[:, None]], dim=1)
        steps += 1
    return Round(_now(device) - prefilled, steps, 1 + steps, prefilled - start, 0.0, tokens)


def _now(device: torch.device) -> float:
    synchronize(device)
    return time.perf_counter()


__all__ = ["CHUNK", "WAYS", "Round", "check_round", "time_round"]
