"""LRA Pathfinder-32: generated (seeded) or official ``pathfinder32/<difficulty>/``, one loading path.

Official layout (LRA release; read by the LRA TFDS builder, Nystromformer and S4,
docs/reference-implementations.md §4, §6, §7): ``pathfinder32/<difficulty>/metadata/<batch>.npy``, each an array of rows
``[subdir, filename, index, label, ...generator parameters]`` (strings), with the image at
``<difficulty>/<subdir>/<filename>`` (``imgs/<batch>/sample_<k>.png``, 8-bit gray 32x32).
Difficulties: ``easy`` = ``curv_baseline``, ``medium`` = ``curv_contour_length_9``,
``hard`` = ``curv_contour_length_14`` (the one LRA reports, the default here). Empty or
unreadable PNGs are skipped, as S4 does for the one known empty image.

Splits: 80 / 10 / 10 of each difficulty folder, by a seeded permutation (``split_seed``;
the Nystromformer code shuffles without a seed). Generated sets are written in the official
layout by ``write_layout`` (``lra-kit data generate pathfinder``) and read back by the same
reader; the dataset itself caches generated images as arrays. Scales: ``paper`` = 200,000
images per difficulty (160k/20k/20k), ``book`` = 5,000, ``smoke`` = 320.

Tokens: pixels 0..255 in raster order, vocabulary 256; never padded (see ``pixels``).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from PIL import Image
from tqdm.auto import tqdm

from lra_kit.data.base import SequenceClassificationDataset
from lra_kit.data.store.cache import entry_dir, load_npz
from lra_kit.data.store.errors import DataMissingError, DataUnreadableError
from lra_kit.atomic import atomic_write
from lra_kit.data.store.paths import lra_release_roots
from lra_kit.data.generators.pathfinder import DIFFICULTIES, PathfinderConfig, generate
from lra_kit.data.formats.pixels import VOCAB_SIZE, compat_options
from lra_kit.data.store.ragged import Ragged
from lra_kit.data.store.sources import fetch_command
from lra_kit.data.splits import check_split
from lra_kit.scales import get_scale

SOURCES = ("auto", "official", "generated")
SCALE_COUNTS = {"smoke": 320, "book": 5000, "paper": 200_000}
FRACTIONS = (0.8, 0.1, 0.1)
BATCH = 1000  # images per imgs/<batch>/ folder in the written layout
LENGTH = 1024


def check_difficulty(difficulty: str) -> str:
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {tuple(DIFFICULTIES)}, got {difficulty!r}")
    return difficulty


def split_indices(n: int, split: str, *, split_seed: int = 0) -> np.ndarray:
    """Seeded 80/10/10 indices of ``split`` among ``n`` images."""
    perm = np.random.default_rng(split_seed).permutation(n)
    a, b = int(round(n * FRACTIONS[0])), int(round(n * (FRACTIONS[0] + FRACTIONS[1])))
    return np.sort({"train": perm[:a], "val": perm[a:b], "test": perm[b:]}[check_split(split)])


def write_layout(images: np.ndarray, labels: np.ndarray, out_dir: Path, difficulty: str,
                 cfg: PathfinderConfig | None = None) -> Path:
    """Write images in the official ``pathfinder32/<difficulty>/`` layout under ``out_dir``."""
    folder = Path(out_dir) / "pathfinder32" / DIFFICULTIES[check_difficulty(difficulty)][0]
    cfg = cfg or PathfinderConfig(contour_length=DIFFICULTIES[difficulty][1])
    for batch_start in tqdm(range(0, len(labels), BATCH), desc="writing PNGs", unit="batch", leave=False):
        batch = batch_start // BATCH
        (folder / "imgs" / str(batch)).mkdir(parents=True, exist_ok=True)
        rows = []
        for k, i in enumerate(range(batch_start, min(batch_start + BATCH, len(labels)))):
            name = f"sample_{k}.png"
            with atomic_write(folder / "imgs" / str(batch) / name) as handle:
                Image.fromarray(images[i], mode="L").save(handle, format="PNG")
            # the official rows: subdir, filename, index, label, then the generator's parameters
            rows.append([f"imgs/{batch}", name, str(k), str(int(labels[i])), str(cfg.max_turn_deg),
                         str(cfg.contour_length), str(cfg.n_distractor_paddles), str(cfg.paddle_length),
                         str(cfg.thickness), str(cfg.paddle_gap), "1"])
        (folder / "metadata").mkdir(parents=True, exist_ok=True)
        with atomic_write(folder / "metadata" / f"{batch}.npy") as handle:
            np.save(handle, np.array(rows, dtype=str))
    return folder


def read_layout(folder: Path, *, progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Images and labels of one ``pathfinder32/<difficulty>/`` folder (official or generated)."""
    folder = Path(folder)
    meta_files = sorted((folder / "metadata").glob("*.npy"), key=lambda p: (len(p.stem), p.stem))
    if not meta_files:
        raise DataMissingError(folder / "metadata" / "0.npy", fix=fetch_command("lra"))
    images, labels = [], []
    for meta in tqdm(meta_files, desc=f"reading {folder.name}", unit="file", disable=not progress, leave=False):
        try:
            rows = np.load(meta, allow_pickle=False)
        except ValueError as err:
            raise DataUnreadableError(meta, f"not a metadata array of strings: {err}",
                                      fix=fetch_command("lra")) from err
        for row in np.atleast_2d(rows):
            path = folder / str(row[0]) / str(row[1])
            try:
                with Image.open(path) as img:
                    pixels = np.asarray(img.convert("L"), dtype=np.uint8)
            except (OSError, ValueError):
                continue  # the official set has an empty PNG (S4 blacklists it); skip unreadable ones
            if pixels.shape != (32, 32):
                raise DataUnreadableError(path, f"expected a 32x32 image, got {pixels.shape}")
            images.append(pixels)
            labels.append(int(float(row[3])))
    return np.stack(images), np.asarray(labels, dtype=np.int64)


def official_dir(difficulty: str) -> Path | None:
    name = DIFFICULTIES[check_difficulty(difficulty)][0]
    for root in lra_release_roots():
        folder = root / "pathfinder32" / name
        if (folder / "metadata").is_dir():
            return folder
    return None


def generated_arrays(difficulty: str, n: int, seed: int = 0, *, workers: int | None = None,
                     progress: bool = True) -> tuple[np.ndarray, np.ndarray, PathfinderConfig]:
    """``n`` generated images of ``difficulty`` (cached as arrays after the first call)."""
    cfg = PathfinderConfig(contour_length=DIFFICULTIES[check_difficulty(difficulty)][1], seed=seed)
    cached = entry_dir("pathfinder-generated", n=n, **cfg.as_dict()) / "images.npz"
    data = load_npz(cached, keys=("images", "labels"))
    if data is None:
        images, labels = generate(cfg, n, workers=workers, progress=progress)
        with atomic_write(cached) as handle:
            np.savez(handle, images=images, labels=labels)
        return images, labels, cfg
    return data["images"], data["labels"], cfg


def official_arrays(folder: Path, *, progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    from lra_kit.data.store.cache import fingerprint

    meta = sorted((folder / "metadata").glob("*.npy"))
    cached = entry_dir("pathfinder-official", folder=str(folder.resolve()),
                       metadata=[fingerprint(p) for p in meta]) / "images.npz"
    data = load_npz(cached, keys=("images", "labels"))
    if data is None:
        images, labels = read_layout(folder, progress=progress)
        with atomic_write(cached) as handle:
            np.savez(handle, images=images, labels=labels)
        return images, labels
    return data["images"], data["labels"]


def load_pathfinder(split: str, *, scale: str | None = None, difficulty: str = "hard", source: str = "auto",
                    seed: int = 0, split_seed: int = 0, compat: str | None = None, root: str | Path | None = None,
                    workers: int | None = None, progress: bool = True,
                    count: int | None = None) -> SequenceClassificationDataset:
    """Pathfinder-32 ``split`` as pixel sequences (label 1 = the two markers are connected).

    ``root``: a folder in the official layout to read (e.g. written by ``generate``);
    otherwise ``source`` chooses between the LRA release and the generator.
    ``count``: how many images to split 80/10/10 (default the scale's, ``SCALE_COUNTS``); generated
    images depend only on their index, so ``count`` images are the first ``count`` of any larger set.
    """
    check_split(split)
    scale = get_scale(scale)
    check_difficulty(difficulty)
    if count is None:
        count = SCALE_COUNTS[scale]
    elif isinstance(count, bool) or not isinstance(count, int) or count < 10:
        raise ValueError(f"count must be an int >= 10 (images to split 80/10/10), got {count!r}")
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    options = compat_options(compat)
    metadata = {"task": "pathfinder", "scale": scale, "difficulty": difficulty, "split_seed": split_seed,
                "count": count, "compat": compat, "lossy": False}
    folder = None
    if root is not None:
        folder = Path(root) / "pathfinder32" / DIFFICULTIES[difficulty][0]
        if not (folder / "metadata").is_dir():
            raise DataMissingError(folder / "metadata", fix="lra-kit data generate pathfinder --out DIR")
    elif source in ("auto", "official"):
        folder = official_dir(difficulty)
        if folder is None and source == "official":
            expected = [r / "pathfinder32" / DIFFICULTIES[difficulty][0] / "metadata" for r in lra_release_roots()[:2]]
            raise DataMissingError(expected, "the official Pathfinder images are not present",
                                   fix=f"{fetch_command('lra')}, or use source='generated'")
    if folder is not None:
        images, labels = official_arrays(folder, progress=progress)
        n = min(len(labels), count)
        images, labels = images[:n], labels[:n]
        metadata.update(source="official" if root is None else "layout", folder=str(folder))
    else:
        images, labels, cfg = generated_arrays(difficulty, count, seed, workers=workers,
                                               progress=progress)
        metadata.update(source="generated", generator=cfg.as_dict())
    keep = split_indices(len(labels), split, split_seed=split_seed)
    return SequenceClassificationDataset(
        Ragged.from_dense(images[keep].reshape(len(keep), LENGTH)), labels[keep], task="pathfinder", split=split,
        vocab_size=VOCAB_SIZE, num_classes=2, max_length=LENGTH, metadata=metadata, **options)


def generate_layout(out_dir: Path, *, difficulty: str = "hard", n: int | None = None, scale: str | None = None,
                    seed: int = 0, workers: int | None = None) -> dict:
    """``lra-kit data generate pathfinder``: generate and write the official layout; return timing."""
    n = SCALE_COUNTS[get_scale(scale)] if n is None else n
    cfg = PathfinderConfig(contour_length=DIFFICULTIES[check_difficulty(difficulty)][1], seed=seed)
    start = time.perf_counter()
    images, labels = generate(cfg, n, workers=workers)
    generated = time.perf_counter() - start
    folder = write_layout(images, labels, out_dir, difficulty, cfg)
    return {"folder": str(folder), "n": n, "generate_s": generated, "total_s": time.perf_counter() - start}


def sample_grid(images: np.ndarray, labels: np.ndarray, path: Path, *, title: str = "", columns: int = 8) -> Path:
    """Save a grid of images with their labels (1 = connected) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = -(-len(labels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(1.6 * columns, 1.8 * rows + 0.4), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, image, label in zip(axes.flat, images, labels, strict=False):
        ax.imshow(image.reshape(32, 32), cmap="gray", vmin=0, vmax=255, interpolation="nearest")
        ax.set_title("connected" if label else "not connected", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
