"""The original files every task reads: where they live, where they come from, their sha256.

Each entry is a file under ``data_dir()`` (see ``store/paths.py``). ``fetch`` downloads the
official archive; the offline copies (their origin and checks: docs/data-provenance.md) are accepted too, as
alternatives with their own pinned checksums.

Checksums of the official archives are the published ones used by other loaders
(TFDS/Keras/torchvision pin the same values): aclImdb_v1.tar.gz and cifar-10-python.tar.gz;
the MNIST sums are those of the offline copy, whose files are byte-identical to the
official ones (the official md5 sums match; docs/data-provenance.md, "MNIST"). The LRA release has no published
checksum: ``fetch lra`` prints the sha256 it computed instead of checking one.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DataFile:
    """One file under ``data_dir()``: relative path, pinned sha256 (None: not published), urls."""

    relpath: str
    sha256: str | None
    size: int | None = None
    urls: tuple[str, ...] = ()
    lossy: bool = False
    note: str = ""


@dataclass(frozen=True)
class Bundle:
    """What ``lra-kit data fetch NAME`` downloads, and the offline alternatives of the same data."""

    name: str
    description: str
    files: tuple[DataFile, ...]
    offline: tuple[DataFile, ...] = field(default=())
    extract_to: str | None = None  # a folder under data_dir() to unpack an archive into
    # the offline copy is byte-identical to ``files`` (MNIST: docs/data-provenance.md), so it has no ``offline`` entry
    identical_offline_copy: bool = False

    @property
    def offline_copy(self) -> bool:
        """An offline copy of the bundle exists (docs/data-provenance.md): its ``offline`` files, or byte-identical
        official ones. The data error messages then say that $LRA_KIT_DATA may point at it (:func:`fetch_command`)."""
        return bool(self.offline) or self.identical_offline_copy


_MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",  # torchvision's mirror of the official files
    "http://yann.lecun.com/exdb/mnist/",
)


def _mnist(name: str, sha256: str, size: int) -> DataFile:
    return DataFile(f"mnist/{name}", sha256, size, tuple(m + name for m in _MNIST_MIRRORS))


BUNDLES: dict[str, Bundle] = {
    "mnist": Bundle(
        "mnist",
        "MNIST, the four official IDX files (LeCun et al. 1998)",
        (
            _mnist("train-images-idx3-ubyte.gz",
                   "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609", 9912422),
            _mnist("train-labels-idx1-ubyte.gz",
                   "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c", 28881),
            _mnist("t10k-images-idx3-ubyte.gz",
                   "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6", 1648877),
            _mnist("t10k-labels-idx1-ubyte.gz",
                   "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6", 4542),
        ),
        identical_offline_copy=True,
    ),
    "imdb": Bundle(
        "imdb",
        "aclImdb v1.0, the Large Movie Review Dataset (Maas et al. 2011): LRA Text",
        (
            DataFile(
                "imdb/aclImdb_v1.tar.gz",
                "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe",
                84125825,
                ("https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz",),
            ),
        ),
        offline=(
            DataFile(
                "imdb/aclImdb_v1_labeled.tar.gz",
                "93748be5a1e8d260e8521db8209ec1c8f9b3a4177e4da69461d8389ed611b8a6",
                28630985,
                note="offline copy without train/unsup (docs/data-provenance.md)",
            ),
        ),
    ),
    "cifar10": Bundle(
        "cifar10",
        "CIFAR-10, python version (Krizhevsky 2009): LRA Image and CIFAR-10 generation",
        (
            DataFile(
                "cifar10/cifar-10-python.tar.gz",
                "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
                170498071,
                ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",),
            ),
        ),
        offline=(
            DataFile(
                "cifar10-jpeg/CIFAR-10-images.tar.gz",
                "ee79abb3161efcdbbf627a414d1396d0f0d2f8da894f2377a5037db3c5820797",
                19438102,
                lossy=True,
                note="LOSSY JPEG copy (quality 75, PSNR ~30 dB; docs/data-provenance.md)",
            ),
        ),
    ),
    "lra": Bundle(
        "lra",
        "the Long Range Arena release (Tay et al. 2021): listops-1000, AAN pairs (tsv_data), pathfinder32..256",
        (
            DataFile(
                "lra_release.gz",
                None,  # no checksum is published for this archive
                None,
                ("https://storage.googleapis.com/long-range-arena/lra_release.gz",),
                note="about 7.7 GB",
            ),
        ),
        extract_to="lra_release",
    ),
}

# The original ListOps test set (Nangia & Bowman 2018): used only as an external check.
LISTOPS_NANGIA_BOWMAN_TEST = DataFile(
    "listops-nangia-bowman/test_d20s.tsv.gz",
    "dd84d1e7e5760d2544d1140ef541dff6936676d2a74b733c1a8d5f75a384e440",
    373271,
    ("https://raw.githubusercontent.com/nyu-mll/spinn/listops-release/python/spinn/data/listops/test_d20s.tsv",),
    note="offline copy: gzip of the original test_d20s.tsv (docs/data-provenance.md)",
)


def fetch_command(name: str) -> str:
    """The command that puts bundle ``name`` in place (quoted in error messages)."""
    if name in BUNDLES and BUNDLES[name].offline_copy:
        return f"lra-kit data fetch {name}   (or point $LRA_KIT_DATA at a folder with the offline copies)"
    return f"lra-kit data fetch {name}"


def fetch_names() -> tuple[str, ...]:
    """Names accepted by ``lra-kit data fetch``."""
    return tuple(BUNDLES)
