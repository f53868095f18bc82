"""``load(task, split, *, scale=None, **options)``: one entry point for every task's data."""
from __future__ import annotations

import inspect

from torch.utils.data import Dataset

from lra_kit.data.tasks.copy_task import load_copy
from lra_kit.data.tasks.image import load_image
from lra_kit.data.tasks.listops import load_listops
from lra_kit.data.tasks.pathfinder import load_pathfinder
from lra_kit.data.tasks.pixel_lm import load_pixel_lm
from lra_kit.data.tasks.retrieval import load_retrieval
from lra_kit.data.splits import SPLITS
from lra_kit.scales import CPU_TASKS, get_scale
from lra_kit.data.tasks.text import load_text

_LOADERS = {
    "listops": load_listops,
    "text": load_text,
    "retrieval": load_retrieval,
    "image": load_image,
    "pathfinder": load_pathfinder,
    "copy": load_copy,
    "mnist": lambda split, **kw: load_pixel_lm("mnist", split, **kw),
    "cifar10": lambda split, **kw: load_pixel_lm("cifar10", split, **kw),
}
_OPTION_SOURCE = {"mnist": load_pixel_lm, "cifar10": load_pixel_lm}
TASKS = tuple(_LOADERS)
LRA_TASKS = ("listops", "text", "retrieval", "image", "pathfinder")
LM_TASKS = ("copy", "mnist", "cifar10")


def options_of(task: str) -> tuple[str, ...]:
    """The keyword options ``load`` accepts for ``task``."""
    loader = _OPTION_SOURCE.get(task, _LOADERS[task])
    params = inspect.signature(loader).parameters
    return tuple(name for name, p in params.items() if p.kind == p.KEYWORD_ONLY and name != "scale")


def load(task: str, split: str, *, scale: str | None = None, **options) -> Dataset:
    """The dataset of ``task`` and ``split`` at ``scale`` (default ``$LRA_KIT_SCALE`` or smoke).

    Tasks: ``listops text retrieval image pathfinder`` (classification; retrieval gives
    pairs) and ``copy mnist cifar10`` (language modelling). Splits: ``train val test``.
    Each task's options are those of its loader (``options_of(task)``).
    """
    if task not in _LOADERS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    unknown = set(options) - set(options_of(task))
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)} for task {task!r}; valid: {options_of(task)}")
    if get_scale(scale) == "cpu" and task not in CPU_TASKS:
        raise ValueError(f"scale 'cpu' is defined only for the tasks {', '.join(CPU_TASKS)}, not {task!r}")
    return _LOADERS[task](split, scale=scale, **options)
