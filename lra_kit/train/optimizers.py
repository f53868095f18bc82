"""The papers' optimizers by name, as data: ``optim.name`` → how to build it.

* ``adamw`` — the Momentum paper's LRA code (Nyströmformer ``run_tasks.py``: ``torch.optim.AdamW``).
* ``adam``  — Luna's LRA runs (fairseq ``--optimizer adam``); fairseq's Adam decouples the weight
  decay from the gradient, which is what ``AdamW`` computes, so the two names build the same thing.
* ``radam`` — the copy and image-generation tasks (Katharopoulos et al. §4.1–4.2: RAdam of Liu et
  al.), with decoupled weight decay as the authors' code applies it.
"""
from __future__ import annotations

import torch

OPTIMIZERS = {
    "adamw": (torch.optim.AdamW, {}),
    "adam": (torch.optim.AdamW, {}),
    "radam": (torch.optim.RAdam, {"decoupled_weight_decay": True}),
}


def build_optimizer(params, optim_cfg) -> torch.optim.Optimizer:
    """The optimizer of an :class:`lra_kit.train.configs.OptimConfig` over ``params``."""
    if optim_cfg.name not in OPTIMIZERS:
        raise ValueError(f"optim.name must be one of {tuple(OPTIMIZERS)}, got {optim_cfg.name!r}")
    cls, extra = OPTIMIZERS[optim_cfg.name]
    return cls(params, lr=optim_cfg.lr, betas=tuple(optim_cfg.betas), eps=optim_cfg.eps,
               weight_decay=optim_cfg.weight_decay, **extra)


__all__ = ["OPTIMIZERS", "build_optimizer"]
