"""LRA ListOps: generated (seeded) or official ``listops-1000/basic_*.tsv``, one loading path.

Generated sets are written in the official TSV format to the cache and then read by the
same loader as the official files, so both take the same path. Tokens are the LRA ones
(``listops_format``); sequences are at most 2,000 tokens (LRA ``max_length``).

``source``: ``"official"`` (``$LRA_KIT_DATA/lra_release/listops-1000``), ``"generated"``,
or ``"auto"`` (official when present, else generated); ``metadata["source"]`` says which.
Scales: ``paper`` = 96,000 / 2,000 / 2,000 of LRA's lengths (500 < L < 2000); ``book`` =
4,000 / 500 / 500 of the same distribution; ``smoke`` = 256 / 64 / 64 short trees
(20 < L < 200), generated in about a second. From official files, smoke/book take a seeded
subset.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from lra_kit.data.formats import listops as fmt
from lra_kit.data.base import SequenceClassificationDataset
from lra_kit.data.store.cache import discard, entry_dir, fingerprint, load_npz
from lra_kit.data.store.errors import DataMissingError
from lra_kit.data.generators.listops import ListOpsConfig, generate
from lra_kit.atomic import atomic_write
from lra_kit.data.store.paths import lra_release_roots
from lra_kit.data.store.ragged import Ragged
from lra_kit.data.store.sources import fetch_command
from lra_kit.data.splits import check_split, scale_size, subset_indices
from lra_kit.scales import get_scale

MAX_LENGTH = 2000
SOURCES = ("auto", "official", "generated")
TSV_NAMES = {split: f"basic_{split}.tsv" for split in ("train", "val", "test")}
SIZES_NAME = "sizes.json"  # byte size of each generated TSV when written: a truncated file is noticed


def scale_config(scale: str | None = None, seed: int = 0) -> ListOpsConfig:
    """Generator parameters of a scale (see the module docstring)."""
    scale = get_scale(scale)
    if scale == "paper":
        return ListOpsConfig(seed=seed)
    if scale == "book":
        return ListOpsConfig(num_train=4000, num_val=500, num_test=500, seed=seed)
    sizes = [scale_size("smoke", s) for s in ("train", "val", "test")]
    return ListOpsConfig(*sizes, min_length=20, max_length=200, seed=seed)


def official_dir() -> Path | None:
    """The folder with the official ``basic_*.tsv`` files, if the LRA release is present."""
    for root in lra_release_roots():
        folder = root / "listops-1000"
        if all((folder / name).is_file() for name in TSV_NAMES.values()):
            return folder
    return None


def write_generated(cfg: ListOpsConfig, out_dir: Path, *, workers: int | None = None, progress: bool = True) -> dict:
    """Generate and write ``basic_{train,val,test}.tsv`` in the official format; return timing info."""
    out_dir = Path(out_dir)
    start = time.perf_counter()
    splits = generate(cfg, workers=workers, progress=progress)
    for split, rows in splits.items():
        with atomic_write(out_dir / TSV_NAMES[split], "w") as handle:
            fmt.write_tsv(handle, rows)
    return {"seconds": time.perf_counter() - start, "sizes": {k: len(v) for k, v in splits.items()}}


def generated_dir(cfg: ListOpsConfig, *, workers: int | None = None, progress: bool = True) -> Path:
    """The cache folder holding the generated set of ``cfg`` (generated at first use)."""
    folder = entry_dir("listops-generated", **cfg.as_dict())
    if not _generated_complete(folder):
        write_generated(cfg, folder, workers=workers, progress=progress)
        sizes = {name: (folder / name).stat().st_size for name in TSV_NAMES.values()}
        with atomic_write(folder / SIZES_NAME, "w") as handle:
            json.dump(sizes, handle, sort_keys=True)
    return folder


def _generated_complete(folder: Path) -> bool:
    """All three TSV files present with the sizes recorded when they were written (a truncated one is rebuilt)."""
    paths = [folder / name for name in TSV_NAMES.values()]
    if not all(p.is_file() for p in paths):
        return False
    try:
        sizes = json.loads((folder / SIZES_NAME).read_text())
    except (OSError, ValueError):
        return False  # written before sizes were recorded, or the record itself is damaged: regenerate
    for p in paths:
        if sizes.get(p.name) != p.stat().st_size:
            discard(p, f"{p.stat().st_size:,} bytes, {sizes.get(p.name)} when written")
            return False
    return True


def tokenized(tsv: Path, *, max_length: int = MAX_LENGTH) -> tuple[Ragged, np.ndarray]:
    """Token ids and labels of one TSV file, cached as ``.npz`` next to nothing in ``data_dir()``."""
    folder = entry_dir("listops-tokenized", source=fingerprint(tsv), max_length=max_length)
    cached = folder / "tokens.npz"
    arrays = load_npz(cached, keys=("values", "offsets", "labels"))
    if arrays is not None:
        ragged, extra = Ragged.from_arrays(arrays)
        return ragged, extra["labels"]
    expressions, labels = fmt.read_tsv(tsv)
    ragged = Ragged.from_sequences([fmt.tokenize(e)[:max_length] for e in expressions], dtype=np.int8)
    with atomic_write(cached) as handle:
        ragged.save(handle, labels=labels)
    return ragged, labels


def load_listops(split: str, *, scale: str | None = None, source: str = "auto", seed: int = 0,
                 max_length: int = MAX_LENGTH, workers: int | None = None, progress: bool = True,
                 ) -> SequenceClassificationDataset:
    """The ListOps ``split`` as a classification dataset (10 classes, vocabulary of 16)."""
    check_split(split)
    scale = get_scale(scale)
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    folder = official_dir() if source in ("auto", "official") else None
    if source == "official" and folder is None:
        expected = [root / "listops-1000" / TSV_NAMES[split] for root in lra_release_roots()[:2]]
        raise DataMissingError(expected, "the official LRA ListOps files are not present",
                               fix=f"{fetch_command('lra')}, or use source='generated'")
    metadata = {"task": "listops", "scale": scale, "max_length": max_length}
    if folder is not None:
        ragged, labels = tokenized(folder / TSV_NAMES[split], max_length=max_length)
        keep = subset_indices(len(labels), scale_size(scale, split))
        ragged, labels = ragged.take(keep), labels[keep]
        metadata.update(source="official", files=[str(folder / TSV_NAMES[split])])
    else:
        cfg = scale_config(scale, seed)
        folder = generated_dir(cfg, workers=workers, progress=progress)
        ragged, labels = tokenized(folder / TSV_NAMES[split], max_length=max_length)
        metadata.update(source="generated", generator=cfg.as_dict(), files=[str(folder / TSV_NAMES[split])])
    return SequenceClassificationDataset(
        ragged, labels, task="listops", split=split, vocab_size=fmt.VOCAB_SIZE, num_classes=fmt.NUM_CLASSES,
        max_length=max_length, pad_id=fmt.PAD_ID, metadata=metadata)
