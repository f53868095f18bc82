"""LRA Retrieval: AAN citation pairs (Radev et al. 2013) for a byte-level dual encoder.

Format of the official files ``lra_release/tsv_data/new_aan_pairs.{train,eval,test}.tsv``
(google-research/long-range-arena ``lra_benchmarks/matching/input_pipeline.py``): no
header, tab-separated columns ``label, id1, id2, text1, text2``, the label read as a float
(``0``/``1``; written ``0.0``/``1.0`` in some copies), no quoting. Each text is cut to its
first 10,000 bytes, byte-encoded (id = byte + 1, padding 0, vocabulary 257) and truncated
to 4,000 tokens. Split sizes: 147,086 / 18,090 / 17,437 (Nystromformer config, docs/reference-implementations.md §8).

The AAN corpus is NOT available offline. Without the LRA release this loader raises
``DataMissingError``; no stand-in data is ever presented as AAN. The tests run the
loader on a small fixture in the exact official format.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lra_kit.data.formats import byte_tokenizer as bt
from lra_kit.data.base import PairClassificationDataset
from lra_kit.data.store.cache import entry_dir, fingerprint, load_npz
from lra_kit.data.store.errors import DataMissingError, DataUnreadableError
from lra_kit.atomic import atomic_write
from lra_kit.data.store.paths import lra_release_roots
from lra_kit.data.store.ragged import Ragged
from lra_kit.data.store.sources import fetch_command
from lra_kit.data.splits import check_split, scale_size, subset_indices
from lra_kit.scales import get_scale

MAX_LENGTH = 4000
TEXT_CUT = 10_000
FILE_NAMES = {"train": "new_aan_pairs.train.tsv", "val": "new_aan_pairs.eval.tsv", "test": "new_aan_pairs.test.tsv"}
PUBLISHED_SIZES = {"train": 147_086, "val": 18_090, "test": 17_437}


def read_pairs(path: Path) -> tuple[Ragged, Ragged, np.ndarray, list[tuple[str, str]]]:
    """Raw bytes of both documents (cut to 10,000 bytes), labels and id pairs of one TSV file."""
    first, second, labels, ids = [], [], [], []
    with open(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip(b"\r\n")
            if not line:
                continue
            parts = line.split(b"\t")
            try:
                if len(parts) != 5:
                    raise ValueError(f"{len(parts)} columns")
                label = float(parts[0])
                if label not in (0.0, 1.0):
                    raise ValueError(f"label {parts[0]!r}")
            except ValueError as err:
                raise DataUnreadableError(
                    path, f"line {number}: expected 'label<TAB>id1<TAB>id2<TAB>text1<TAB>text2' ({err})",
                    fix=fetch_command("lra")) from None
            labels.append(int(label))
            ids.append((parts[1].decode("utf-8", "replace"), parts[2].decode("utf-8", "replace")))
            first.append(np.frombuffer(parts[3][:TEXT_CUT], dtype=np.uint8))
            second.append(np.frombuffer(parts[4][:TEXT_CUT], dtype=np.uint8))
    return (Ragged.from_sequences(first, dtype=np.uint8), Ragged.from_sequences(second, dtype=np.uint8),
            np.asarray(labels, dtype=np.int64), ids)


def find_file(split: str, root: Path | None = None) -> Path:
    """The official pair file of ``split`` under ``root`` or the LRA release folders."""
    roots = [Path(root)] if root is not None else [r / "tsv_data" for r in lra_release_roots()[:2]]
    candidates = [r / FILE_NAMES[split] for r in roots]
    for path in candidates:
        if path.is_file():
            return path
    raise DataMissingError(candidates, "the AAN corpus is not in the offline data; it comes only with the LRA release",
                           fix=fetch_command("lra"))


def load_retrieval(split: str, *, scale: str | None = None, max_length: int = MAX_LENGTH,
                   root: str | Path | None = None) -> PairClassificationDataset:
    """AAN ``split`` as pairs of byte sequences; ``root`` = a folder with the three TSV files."""
    check_split(split)
    scale = get_scale(scale)
    path = find_file(split, root)
    folder = entry_dir("aan-bytes", source=fingerprint(path))
    cached = folder / "pairs.npz"
    data = load_npz(cached, keys=("v1", "o1", "v2", "o2", "labels"))
    if data is not None:
        first, second, labels = Ragged(data["v1"], data["o1"]), Ragged(data["v2"], data["o2"]), data["labels"]
    else:
        first, second, labels, _ = read_pairs(path)
        with atomic_write(cached) as handle:
            np.savez(handle, v1=first.values, o1=first.offsets, v2=second.values, o2=second.offsets, labels=labels)
    keep = subset_indices(len(labels), scale_size(scale, split))
    first, second, labels = first.take(keep), second.take(keep), labels[keep]
    metadata = {"task": "retrieval", "scale": scale, "source_file": str(path), "lossy": False,
                "max_length": max_length, "published_size": PUBLISHED_SIZES[split]}
    return PairClassificationDataset(
        first, second, labels, id_offset=bt.ID_OFFSET, truncate=max_length, task="retrieval", split=split,
        vocab_size=bt.VOCAB_SIZE, num_classes=2, max_length=max_length, pad_id=bt.PAD_ID, metadata=metadata)
