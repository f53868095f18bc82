"""Data for every experiment: LRA's five tasks, the copy task, MNIST and CIFAR-10 (docs/design.md §4).

``load(task, split, *, scale=None, **options)`` returns a ``torch.utils.data.Dataset`` with
``vocab_size``, ``num_classes``, ``max_length``, ``pad_id``, ``kind`` and ``metadata``; the tasks are the
rows of ``TASK_TABLE`` (one ``TaskSpec`` each);
``collate`` (or ``dataset.collate``) pads a batch and builds ``key_padding_mask``.
Original files are read from ``data_dir()`` (``$LRA_KIT_DATA``); generated and processed
files go to ``cache_dir()`` (``$LRA_KIT_CACHE``). This package knows nothing of
``lra_kit.models`` or ``lra_kit.train`` (docs/design.md §1).
"""
from lra_kit.data.base import KINDS, TaskDataset, bind_collate
from lra_kit.data.collate import collate
from lra_kit.data.store.errors import ChecksumMismatchError, DataError, DataMissingError, DataUnreadableError
from lra_kit.data.store.fetch import fetch
from lra_kit.data.store.paths import cache_dir, data_dir
from lra_kit.data.registry import (LM_TASKS, LRA_TASKS, TASK_TABLE, TASKS, TaskSpec, load, options_of, task_names,
                                   task_spec)
from lra_kit.data.splits import SPLITS

__all__ = [
    "TASK_TABLE", "TaskSpec", "task_names", "task_spec", "TASKS", "LRA_TASKS", "LM_TASKS", "SPLITS", "KINDS", "load",
    "options_of", "collate", "bind_collate",
    "TaskDataset", "data_dir", "cache_dir", "fetch",
    "DataError", "DataMissingError", "ChecksumMismatchError", "DataUnreadableError",
]
