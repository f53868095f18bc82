"""``lra-kit data stats TASK``: split sizes, length percentiles and label balance."""
from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from lra_kit.data.registry import load
from lra_kit.data.splits import SPLITS
from lra_kit.scales import get_scale

PERCENTILES = (0, 50, 90, 99, 100)


def split_stats(dataset) -> dict:
    """Size, length percentiles and label counts of one dataset."""
    lengths = np.asarray(dataset.lengths())
    out = {"n": len(dataset),
           "length_percentiles": {p: float(np.percentile(lengths, p)) for p in PERCENTILES} if len(lengths) else {}}
    labels = dataset.labels()
    if labels is not None:
        values, counts = np.unique(labels, return_counts=True)
        out["labels"] = {int(v): int(c) for v, c in zip(values, counts, strict=True)}
    return out


def task_stats(task: str, *, scale: str | None = None, **options) -> dict:
    """Stats of the three splits of ``task`` plus the first dataset's attributes and metadata."""
    scale = get_scale(scale)
    result, first = {"task": task, "scale": scale, "splits": {}}, None
    for split in tqdm(SPLITS, desc=f"stats {task}", unit="split", leave=False):
        dataset = load(task, split, scale=scale, **options)
        first = first or dataset
        result["splits"][split] = split_stats(dataset)
    result.update(vocab_size=first.vocab_size, num_classes=first.num_classes, max_length=first.max_length,
                  pad_id=first.pad_id, kind=first.kind, metadata=first.metadata)
    return result


def format_stats(stats: dict) -> str:
    """A small text table of ``task_stats``."""
    lines = [f"task {stats['task']}  (scale: {stats['scale']})  kind={stats['kind']}  vocab_size={stats['vocab_size']}"
             f"  num_classes={stats['num_classes']}  max_length={stats['max_length']}  pad_id={stats['pad_id']}"]
    meta = stats["metadata"]
    for key in ("source", "copy", "source_file", "lossy", "preset", "val_source", "difficulty"):
        if key in meta:
            lines.append(f"  {key}: {meta[key]}")
    head = "  split        n   " + "  ".join(f"p{p:<5}" for p in PERCENTILES) + "  labels (count)"
    lines.append(head)
    for split, s in stats["splits"].items():
        pct = "  ".join(f"{s['length_percentiles'].get(p, float('nan')):<6.0f}" for p in PERCENTILES)
        labels = s.get("labels")
        balance = " ".join(f"{k}:{v}" for k, v in labels.items()) if labels else "-"
        lines.append(f"  {split:<6} {s['n']:>7,}   {pct}  {balance}")
    return "\n".join(lines)
