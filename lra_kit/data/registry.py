"""The one table of tasks, and ``load(task, split, *, scale=None, **options)`` on top of it.

Every place that accepts a task by name — ``load``, the training configs, ``lra-kit train --task`` and
``lra-kit data``, the benchmarks, the book's tables, the tests — reads :data:`TASK_TABLE` (or
:func:`task_names`, :func:`task_spec`), so adding a task is one row here (see
``docs/adding-a-task.md``). The attention table is its twin, :mod:`lra_kit.attention.registry`.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from torch.utils.data import Dataset

from lra_kit.data.base import KINDS
from lra_kit.data.splits import SPLITS
from lra_kit.data.tasks import copy_task, listops, pathfinder, pixel_lm, retrieval, text
from lra_kit.data.tasks import image as image_task
from lra_kit.scales import SCALES, get_scale
from lra_kit.tables import name_table

SUITES = ("lra", "copy", "pixels")
METRICS = ("accuracy", "loss", "bits_per_dim")


@dataclass(frozen=True, eq=False)
class TaskSpec:
    """One task: how to load it and what a caller needs to know without loading it.

    ``loader(split, *, scale, **options)`` returns the dataset; ``kind`` is what its items are and which
    model reads them (``"classification"``: one sequence, a label; ``"retrieval"``: a pair of sequences,
    a label, for a dual encoder; ``"lm"``: one sequence, modelled autoregressively). ``length`` is the
    longest sequence (per side of a pair) at the ``paper`` scale. ``metric`` is the number the papers
    report for it. ``suite`` is the family of the papers' experiments it belongs to (the Long Range
    Arena, the copy task, image generation): one suite shares one recipe of the training configs and
    one row per scale of their table of shrunk values. ``scales`` are the scales it is defined at.
    ``generated``: the package's own generator makes its data, so it loads with no files present.
    ``lra_layout``: ``lra-kit data generate`` writes it in the official LRA release's file layout.
    """

    name: str
    loader: Callable[..., Dataset]
    summary: str
    kind: str
    length: int
    metric: str
    suite: str
    scales: tuple[str, ...] = tuple(s for s in SCALES if s != "cpu")
    generated: bool = False
    lra_layout: bool = False

    def __post_init__(self):
        for field_name, value, allowed in (("kind", self.kind, KINDS), ("metric", self.metric, METRICS),
                                           ("suite", self.suite, SUITES)):
            if value not in allowed:
                raise ValueError(f"TaskSpec {self.name!r}: {field_name} must be one of {allowed}, got {value!r}")
        if not set(self.scales) <= set(SCALES):
            raise ValueError(f"TaskSpec {self.name!r}: scales must be among {SCALES}, got {self.scales!r}")

    def options(self) -> tuple[str, ...]:
        """The keyword options its loader accepts (besides ``scale``)."""
        params = inspect.signature(self.loader).parameters
        return tuple(name for name, p in params.items() if p.kind == p.KEYWORD_ONLY and name != "scale")


TASK_TABLE: Mapping[str, TaskSpec] = name_table(
    # The Long Range Arena (Tay et al. 2021), in the order of its tables.
    TaskSpec("listops", listops.load_listops, "ListOps: the value of a nested list expression (10 classes)",
             kind="classification", length=listops.MAX_LENGTH, metric="accuracy", suite="lra", generated=True,
             lra_layout=True),
    TaskSpec("text", text.load_text, "IMDB reviews as bytes: positive or negative", kind="classification",
             length=text.PRESETS["lra"]["max_length"], metric="accuracy", suite="lra"),
    TaskSpec("retrieval", retrieval.load_retrieval, "AAN: do two papers (as bytes) cite one another",
             kind="retrieval", length=retrieval.MAX_LENGTH, metric="accuracy", suite="lra"),
    TaskSpec("image", image_task.load_image, "CIFAR-10 as a sequence of gray pixels (10 classes)",
             kind="classification", length=image_task.LENGTH, metric="accuracy", suite="lra"),
    TaskSpec("pathfinder", pathfinder.load_pathfinder, "Pathfinder-32: are two dots joined by a path",
             kind="classification", length=pathfinder.LENGTH, metric="accuracy", suite="lra", generated=True,
             lra_layout=True),
    # Katharopoulos et al. §4.1 (Nguyen et al. §4.1).
    TaskSpec("copy", copy_task.load_copy, "the copy task: 0 w 0 w, predict the second copy of w", kind="lm",
             length=copy_task.MAX_LENGTH, metric="loss", suite="copy", scales=SCALES, generated=True),
    # Katharopoulos et al. §4.2 (Nguyen et al. §4.2): image generation pixel by pixel.
    TaskSpec("mnist", functools.partial(pixel_lm.load_pixel_lm, "mnist"), "MNIST digits, pixel by pixel",
             kind="lm", length=pixel_lm.LENGTHS["mnist"], metric="bits_per_dim", suite="pixels", scales=SCALES),
    TaskSpec("cifar10", functools.partial(pixel_lm.load_pixel_lm, "cifar10"),
             "CIFAR-10 images, pixel by pixel (R, G, B per pixel)", kind="lm", length=pixel_lm.LENGTHS["cifar10"],
             metric="bits_per_dim", suite="pixels", scales=SCALES),
)


def task_names(**where) -> tuple[str, ...]:
    """Registered task names in the table's order; ``where`` keeps the rows whose fields equal the values
    given, e.g. ``task_names(suite="lra")``, ``task_names(kind="lm")``, ``task_names(generated=True)``."""
    fields = {f for f in TaskSpec.__dataclass_fields__}
    unknown = set(where) - fields
    if unknown:
        raise ValueError(f"unknown TaskSpec field(s) {sorted(unknown)}; valid: {', '.join(sorted(fields))}")
    return tuple(name for name, spec in TASK_TABLE.items()
                 if all(getattr(spec, key) == value for key, value in where.items()))


def task_spec(name: str) -> TaskSpec:
    """The table row of ``name``; an unknown name is a ValueError that lists the valid ones."""
    if not isinstance(name, str) or name not in TASK_TABLE:
        raise ValueError(f"task must be one of {TASKS}, got {name!r}")
    return TASK_TABLE[name]


TASKS = task_names()
LRA_TASKS = task_names(suite="lra")
LM_TASKS = task_names(kind="lm")


def options_of(task: str) -> tuple[str, ...]:
    """The keyword options ``load`` accepts for ``task``."""
    return task_spec(task).options()


def load(task: str, split: str, *, scale: str | None = None, **options) -> Dataset:
    """The dataset of ``task`` and ``split`` at ``scale`` (default ``$LRA_KIT_SCALE`` or smoke).

    Tasks: the rows of ``TASK_TABLE`` (``task_names()``). Splits: ``train val test``. Each task's
    options are those of its loader (``options_of(task)``).
    """
    spec = task_spec(task)
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    unknown = set(options) - set(spec.options())
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)} for task {task!r}; valid: {spec.options()}")
    scale_name = get_scale(scale)
    if scale_name not in spec.scales:
        have = task_names_at(scale_name)
        raise ValueError(f"scale {scale_name!r} is defined only for the tasks {', '.join(have)}, not {task!r}")
    return spec.loader(split, scale=scale, **options)


def task_names_at(scale: str) -> tuple[str, ...]:
    """The tasks defined at ``scale``."""
    return tuple(name for name, spec in TASK_TABLE.items() if scale in spec.scales)
