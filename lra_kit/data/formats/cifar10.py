"""Reading CIFAR-10 (Krizhevsky 2009) from either copy, into ``uint8 (N, 32, 32, 3)`` arrays.

* Official ``cifar-10-python.tar.gz``: pickled batches ``data_batch_1..5`` (train, in that
  order) and ``test_batch``; ``b"data"`` rows are 3,072 bytes, the red, green, then blue
  32x32 planes; ``b"labels"`` 0-9.
* Offline ``CIFAR-10-images.tar.gz`` (docs/data-provenance.md, "CIFAR-10 as JPEG"):
  ``CIFAR-10-images/{train,test}/<class>/NNNN.jpg``, JPEG quality 75, LOSSY (PSNR ~30 dB);
  ``NNNN`` is the index within the class in the official order, but the interleaving of
  classes is lost, so images come here class by class.
The first call decodes the archive and caches the arrays under ``cache_dir()``.
"""
from __future__ import annotations

import io
import pickle
import re
import tarfile

import numpy as np
from PIL import Image
from tqdm.auto import tqdm

from lra_kit.data.store.cache import entry_dir, fingerprint, load_npz
from lra_kit.data.store.checksums import locate
from lra_kit.data.store.errors import DataUnreadableError
from lra_kit.atomic import atomic_write
from lra_kit.data.store.sources import BUNDLES, fetch_command

CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
_JPEG = re.compile(r"CIFAR-10-images/(train|test)/([a-z]+)/(\d+)\.jpg$")
_SIZES = {"train": 50_000, "test": 10_000}


def read_python_archive(path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    batches = {}
    with tarfile.open(path, "r:gz") as archive:
        for member in archive:
            name = member.name.rsplit("/", 1)[-1]
            if name.startswith("data_batch_") or name == "test_batch":
                batches[name] = pickle.load(archive.extractfile(member), encoding="bytes")
    out = {}
    for split, names in (("train", [f"data_batch_{i}" for i in range(1, 6)]), ("test", ["test_batch"])):
        data = np.concatenate([np.asarray(batches[n][b"data"], dtype=np.uint8) for n in names])
        labels = np.concatenate([np.asarray(batches[n][b"labels"], dtype=np.int64) for n in names])
        out[split] = (data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy(), labels)
    return out


def read_jpeg_archive(path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    rows = {"train": [], "test": []}
    with tarfile.open(path, "r:gz") as archive:
        for member in tqdm(archive, desc="decoding CIFAR-10 JPEGs", unit="img", leave=False):
            match = _JPEG.search(member.name)
            if match and member.isfile():
                split, cls, index = match.groups()
                image = Image.open(io.BytesIO(archive.extractfile(member).read())).convert("RGB")
                rows[split].append((CLASSES.index(cls), int(index), np.asarray(image, dtype=np.uint8)))
    out = {}
    for split, items in rows.items():
        items.sort(key=lambda r: (r[0], r[1]))
        out[split] = (np.stack([r[2] for r in items]), np.array([r[0] for r in items], dtype=np.int64))
    return out


def cifar10_arrays(split: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(images uint8 (N,32,32,3), labels, info)`` of ``train``/``test``; info names the copy used.

    The official archive is preferred when present; otherwise the lossy JPEG copy is read
    and ``info["lossy"]`` is True.
    """
    bundle = BUNDLES["cifar10"]
    path, entry = locate(bundle.files + bundle.offline, fix=fetch_command("cifar10"))
    official = entry in bundle.files
    info = {"source_file": str(path), "copy": "official python" if official else "offline JPEG (lossy)",
            "lossy": entry.lossy}
    folder = entry_dir("cifar10-arrays", source=fingerprint(path))
    cached = folder / f"{split}.npz"
    data = load_npz(cached, keys=("images", "labels"))
    if data is None:
        try:
            arrays = read_python_archive(path) if official else read_jpeg_archive(path)
        except (tarfile.TarError, OSError, EOFError, KeyError, pickle.UnpicklingError) as err:
            raise DataUnreadableError(path, f"cannot read CIFAR-10 from it: {err!r}",
                                      fix=fetch_command("cifar10")) from err
        for name, (images, labels) in arrays.items():
            if len(labels) != _SIZES[name]:
                raise DataUnreadableError(path, f"expected {_SIZES[name]:,} {name} images, found {len(labels):,}",
                                          fix=fetch_command("cifar10"))
            with atomic_write(folder / f"{name}.npz") as handle:
                np.savez(handle, images=images, labels=labels)
        data = {"images": arrays[split][0], "labels": arrays[split][1]}
    return data["images"], data["labels"], info
