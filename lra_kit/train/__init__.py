"""Training: configurations as data, schedules, the resumable (DDP-ready) trainer, the CLI.

Depends on :mod:`lra_kit.models` and :mod:`lra_kit.data`, never the other way round.
"""
from lra_kit.train.configs import (
    DataConfig,
    ExperimentConfig,
    OptimConfig,
    TASKS,
    TrainConfig,
    apply_overrides,
    format_config,
    from_dict,
    get_config,
    validate,
)

__all__ = ["DataConfig", "ExperimentConfig", "OptimConfig", "TASKS", "TrainConfig", "Trainer", "apply_overrides",
           "format_config", "from_dict", "get_config", "validate"]


def __getattr__(name):  # the trainer imports torch's DataLoader & tqdm: load it on first use
    if name == "Trainer":
        from lra_kit.train.trainer import Trainer

        return Trainer
    raise AttributeError(name)
