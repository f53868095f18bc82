"""Reading the official MNIST IDX files (LeCun et al. 1998).

IDX format (http://yann.lecun.com/exdb/mnist/): a big-endian magic number whose third
byte is the data type (0x08 = unsigned byte) and fourth the number of dimensions, then one
big-endian int32 per dimension, then the data. Images are 28x28, 60,000 train / 10,000 test.
"""
from __future__ import annotations

import gzip

import numpy as np

from lra_kit.data.store.checksums import locate
from lra_kit.data.store.errors import DataUnreadableError
from lra_kit.data.store.sources import BUNDLES, fetch_command

_FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
          "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def read_idx(path) -> np.ndarray:
    """The array stored in a (gzipped) IDX file of unsigned bytes."""
    try:
        with gzip.open(path, "rb") as handle:
            data = handle.read()
    except (OSError, EOFError) as err:
        raise DataUnreadableError(path, f"not a readable gzip file: {err}", fix=fetch_command("mnist")) from err
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise DataUnreadableError(path, "not an IDX file of unsigned bytes", fix=fetch_command("mnist"))
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(shape)):
        raise DataUnreadableError(path, f"header says {shape}, body has {body.size} bytes", fix=fetch_command("mnist"))
    return body.reshape(shape)


def mnist_arrays(split: str) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(images uint8 (N,28,28), labels, info)`` of ``train``/``test``."""
    entries = {e.relpath.rsplit("/", 1)[-1]: e for e in BUNDLES["mnist"].files}
    image_name, label_name = _FILES[split]
    image_path, _ = locate([entries[image_name]], fix=fetch_command("mnist"))
    label_path, _ = locate([entries[label_name]], fix=fetch_command("mnist"))
    info = {"source_file": [str(image_path), str(label_path)], "copy": "official IDX", "lossy": False}
    return read_idx(image_path), read_idx(label_path).astype(np.int64), info
