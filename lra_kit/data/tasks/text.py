"""LRA Text: byte-level IMDB sentiment classification from aclImdb (Maas et al. 2011).

* Source: ``$LRA_KIT_DATA/imdb/aclImdb_v1.tar.gz`` (official, ``lra-kit data fetch imdb``)
  or the offline ``imdb/aclImdb_v1_labeled.tar.gz`` (the same 50,000 labelled reviews);
  label 1 = ``pos``, 0 = ``neg``; 25,000 train / 25,000 test, as TFDS ``imdb_reviews``
  that LRA reads.
* Tokens: bytes + 1, padding 0, vocabulary 257 (``byte_tokenizer``), truncated to
  ``max_length``.
* Presets (``preset=``): ``"lra"`` (default) = 4,000 bytes, the LRA paper's setting;
  ``"nystromformer"`` = 1,000 bytes padded to 1,024, what the Nystromformer/Momentum code
  feeds the model (docs/reference-implementations.md §4; Nystromformer issues #13, #18). An explicit
  ``max_length`` overrides the preset's.
* Dev split (``val_source=``): ``"test"`` (default) = the test set, as LRA, Nystromformer
  and S4 do (docs/reference-implementations.md §6, §7): there is no separate IMDB dev set in LRA; ``"holdout"`` = a
  seeded 2,500 reviews of train (train keeps 22,500), for model selection without the
  test set.
* ``smoke`` scale: 256 / 64 / 64 reviews and ``max_length`` 512 unless given.
"""
from __future__ import annotations

import re
import tarfile

import numpy as np
from tqdm.auto import tqdm

from lra_kit.data.formats import byte_tokenizer as bt
from lra_kit.data.base import SequenceClassificationDataset
from lra_kit.data.store.cache import entry_dir, fingerprint, load_npz
from lra_kit.data.store.checksums import locate
from lra_kit.data.store.errors import DataUnreadableError
from lra_kit.atomic import atomic_write
from lra_kit.data.store.ragged import Ragged
from lra_kit.data.store.sources import BUNDLES, fetch_command
from lra_kit.data.splits import check_split, holdout_split, scale_size, subset_indices
from lra_kit.scales import get_scale

PRESETS = {"lra": {"max_length": 4000, "pad_to": None}, "nystromformer": {"max_length": 1000, "pad_to": 1024}}
VAL_SOURCES = ("test", "holdout")
HOLDOUT_SIZE = 2500
SMOKE_MAX_LENGTH = 512
_MEMBER = re.compile(r"aclImdb/(train|test)/(pos|neg)/(\d+)_(\d+)\.txt$")


def read_archive(path) -> dict[str, tuple[Ragged, np.ndarray]]:
    """``{"train": (bytes, labels), "test": ...}`` from an aclImdb tarball, in (label, id) order."""
    found = {"train": [], "test": []}
    try:
        with tarfile.open(path, "r:gz") as archive:
            for member in tqdm(archive, desc="reading aclImdb", unit="file", leave=False):
                match = _MEMBER.search(member.name)
                if match and member.isfile():
                    split, polarity, ident, _rating = match.groups()
                    data = archive.extractfile(member).read()
                    found[split].append((polarity == "pos", int(ident), data))
    except (tarfile.TarError, OSError, EOFError) as err:
        raise DataUnreadableError(path, f"not a readable aclImdb tar.gz: {err}", fix=fetch_command("imdb")) from err
    out = {}
    for split, rows in found.items():
        if len(rows) != 25_000:
            raise DataUnreadableError(path, f"expected 25,000 labelled {split} reviews, found {len(rows):,}",
                                      fix=fetch_command("imdb"))
        rows.sort(key=lambda r: (r[0], r[1]))
        ragged = Ragged.from_sequences([np.frombuffer(r[2], dtype=np.uint8) for r in rows], dtype=np.uint8)
        out[split] = (ragged, np.array([int(r[0]) for r in rows], dtype=np.int64))
    return out


def imdb_arrays(split: str) -> tuple[Ragged, np.ndarray, dict]:
    """Raw bytes and labels of aclImdb ``train``/``test``, cached after the first read."""
    bundle = BUNDLES["imdb"]
    path, entry = locate(bundle.files + bundle.offline, fix=fetch_command("imdb"))
    folder = entry_dir("imdb-bytes", source=fingerprint(path))
    info = {"source_file": str(path), "copy": "official" if entry in bundle.files else "offline", "lossy": False}
    cached = folder / f"{split}.npz"
    arrays = load_npz(cached, keys=("values", "offsets", "labels"))
    if arrays is None:
        for name, (ragged, labels) in read_archive(path).items():
            with atomic_write(folder / f"{name}.npz") as handle:
                ragged.save(handle, labels=labels)
            if name == split:
                arrays = {"values": ragged.values, "offsets": ragged.offsets, "labels": labels}
    ragged, extra = Ragged.from_arrays(arrays)
    return ragged, extra["labels"], info


def load_text(split: str, *, scale: str | None = None, preset: str = "lra", max_length: int | None = None,
              val_source: str = "test", seed: int = 0) -> SequenceClassificationDataset:
    """IMDB ``split`` as byte sequences (see the module docstring for presets and dev split)."""
    check_split(split)
    scale = get_scale(scale)
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {preset!r}")
    if val_source not in VAL_SOURCES:
        raise ValueError(f"val_source must be one of {VAL_SOURCES}, got {val_source!r}")
    if max_length is None:
        max_length = PRESETS[preset]["max_length"]
        if scale == "smoke":
            max_length = min(SMOKE_MAX_LENGTH, max_length)
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    pad_to = PRESETS[preset]["pad_to"]
    if pad_to is not None:  # Nystromformer appends a fixed 24 padding tokens after the text
        pad_to = max_length + (pad_to - PRESETS[preset]["max_length"])
    source_split = "train" if split == "train" or (split == "val" and val_source == "holdout") else "test"
    ragged, labels, info = imdb_arrays(source_split)
    if val_source == "holdout" and source_split == "train":
        train_idx, val_idx = holdout_split(len(labels), HOLDOUT_SIZE, seed=seed)
        keep = val_idx if split == "val" else train_idx
        ragged, labels = ragged.take(keep), labels[keep]
    # val and test are the same reviews when val_source="test"; their smoke subsets differ in seed
    keep = subset_indices(len(labels), scale_size(scale, split), seed=0 if split != "val" else 1)
    ragged, labels = ragged.take(keep), labels[keep]
    metadata = dict(info, task="text", scale=scale, preset=preset, max_length=max_length, pad_to=pad_to,
                    val_source=val_source, source_split=source_split)
    return SequenceClassificationDataset(
        ragged, labels, id_offset=bt.ID_OFFSET, truncate=max_length, task="text", split=split,
        vocab_size=bt.VOCAB_SIZE, num_classes=2, max_length=pad_to or max_length, pad_id=bt.PAD_ID,
        pad_to=pad_to, metadata=metadata)
