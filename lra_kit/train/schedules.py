"""Learning-rate schedules of the papers, as factors of the peak lr for ``torch.optim.lr_scheduler.LambdaLR``.

* ``constant``      — lr (MNIST/CIFAR-10 generation: RAdam at a fixed lr).
* ``linear``        — linear warmup from lr·warmup_start to lr over ``warmup_steps``, then linear
                      decay to lr·final_ratio at ``steps`` (the Momentum paper's LRA code uses
                      ``OneCycleLR(anneal_strategy="linear")``: warmup_start 1/25, final 1/(25·10⁴);
                      its cycling of Adam's β1 is not reproduced).
* ``step``          — lr, multiplied by ``decay_factor`` at each of ``decay_steps`` (copy task:
                      1e-3 → 1e-4 after 3,000 updates).
* ``inverse_sqrt``  — fairseq's: linear warmup from the absolute lr ``warmup_start`` (1e-7) to lr,
                      then lr·sqrt(warmup_steps / step) (Luna's LRA runs).
"""
from __future__ import annotations

import math
from collections.abc import Callable

SCHEDULES = ("constant", "linear", "step", "inverse_sqrt")


def lr_factor(schedule: str, *, lr: float, steps: int, warmup_steps: int = 0, warmup_start: float = 0.0,
              final_ratio: float = 0.0, decay_steps=(), decay_factor: float = 0.1) -> Callable[[int], float]:
    """``f(step) -> factor`` with step = the number of updates done so far (0 for the first update)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if warmup_steps < 0 or steps < 1:
        raise ValueError(f"need steps >= 1 and warmup_steps >= 0, got steps={steps}, warmup_steps={warmup_steps}")
    if schedule == "constant":
        return lambda step: 1.0
    if schedule == "step":
        bounds = sorted(int(s) for s in decay_steps)
        return lambda step: decay_factor ** sum(step >= b for b in bounds)
    if schedule == "linear":
        def linear(step: int) -> float:
            if step < warmup_steps:
                return warmup_start + (1.0 - warmup_start) * step / warmup_steps
            span = max(steps - warmup_steps, 1)
            done = min(step - warmup_steps, span) / span
            return 1.0 - (1.0 - final_ratio) * done
        return linear
    start = warmup_start / lr  # inverse_sqrt: warmup_start is an absolute lr, as in fairseq

    def inverse_sqrt(step: int) -> float:
        if step < warmup_steps:
            return start + (1.0 - start) * step / warmup_steps
        return math.sqrt(max(warmup_steps, 1) / max(step, 1))
    return inverse_sqrt


def build_scheduler(optimizer, optim_cfg, steps: int):
    """A ``LambdaLR`` for an :class:`lra_kit.train.configs.OptimConfig`."""
    import torch

    f = lr_factor(optim_cfg.schedule, lr=optim_cfg.lr, steps=steps, warmup_steps=optim_cfg.warmup_steps,
                  warmup_start=optim_cfg.warmup_start, final_ratio=optim_cfg.final_ratio,
                  decay_steps=optim_cfg.decay_steps, decay_factor=optim_cfg.decay_factor)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, f)
