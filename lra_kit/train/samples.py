"""Pictures from a trained image model: unconditional samples and completions of occluded test images.

Katharopoulos et al. Fig. 3 (and appendix Figs. 6-7) show MNIST samples drawn pixel by pixel and
completions of test digits whose lower part is hidden; Nguyen et al. Fig. 3 shows samples of softmax,
linear and adaptive momentum. :func:`sample_pictures` draws both from one model with the recurrent
generation of :meth:`lra_kit.models.causal_lm.CausalLM.generate` and returns the pixel arrays;
:func:`save_pictures` writes them as PNG grids (:func:`save_image_grid`, which ``lra-kit generate`` uses too)
with a JSON saying where they came from. :func:`record_pictures` does both for a finished run
(``lra-kit generate RUN_DIR --pictures DIR``): the pictures beside each recorded run in ``results/mnist/``,
which ``notebooks/image_generation.md`` shows.
"""
from __future__ import annotations

import json
import math
import os

import numpy as np
import torch

from lra_kit.atomic import atomic_write
from lra_kit.errors import RunDirectoryError
from lra_kit.results import read_results


def sample_pictures(model, test, *, n: int = 16, n_completions: int = 8, keep_rows: int = 14, seed: int = 0,
                    temperature: float = 1.0) -> dict:
    """``samples`` (n, H·W): images from one given black first pixel; ``completions`` (3·m, H·W): m test
    images with only their top ``keep_rows`` rows kept (rest grey), the model's completions, the originals."""
    length = test.max_length
    side = round(length ** 0.5)
    if side * side != length:
        raise ValueError(f"test images must be square single-channel sequences, got length {length}")
    if not 1 <= keep_rows < side:
        raise ValueError(f"keep_rows must be in [1, {side - 1}], got {keep_rows}")
    if n < 1 or n_completions < 1 or n_completions > len(test):
        raise ValueError(f"n and n_completions must be >= 1 (n_completions <= {len(test)}), got {n}, {n_completions}")
    device = next(model.parameters()).device
    gen = torch.Generator(device=device).manual_seed(seed)
    start = torch.zeros(n, 1, dtype=torch.long, device=device)
    samples = model.generate(start, length - 1, temperature=temperature, generator=gen).cpu()
    originals = torch.stack([test[i] for i in range(n_completions)])
    kept = keep_rows * side
    completed = model.generate(originals[:, :kept].to(device), length - kept, temperature=temperature,
                               generator=gen).cpu()
    occluded = originals.clone()
    occluded[:, kept:] = 128
    return {"samples": samples, "completions": torch.cat([occluded, completed, originals]),
            "n_completions": n_completions, "keep_rows": keep_rows, "seed": seed, "temperature": temperature}


def save_image_grid(pixels, path: str, *, channels: int = 1, columns: int = 0) -> None:
    """Write (n, H·W·channels) 8-bit pixel sequences as one PNG grid (atomically)."""
    from PIL import Image

    arr = pixels.clamp(0, 255).to(dtype=torch.uint8).numpy()
    n = arr.shape[0]
    side = round(math.sqrt(arr.shape[1] // channels))
    images = arr.reshape(n, side, side, channels)
    cols = columns or math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    grid = np.zeros((rows * (side + 2), cols * (side + 2), channels), dtype=np.uint8)
    for i in range(n):
        r, c = divmod(i, cols)
        grid[r * (side + 2) + 1: r * (side + 2) + 1 + side, c * (side + 2) + 1: c * (side + 2) + 1 + side] = images[i]
    with atomic_write(path, "wb") as f:
        Image.fromarray(grid[..., 0] if channels == 1 else grid).save(f, format="PNG")


def save_pictures(pictures: dict, out_dir: str, name: str, provenance: dict) -> dict:
    """Write ``<name>-samples.png`` and ``<name>-completions.png`` (rows: occluded, completed, original) and
    ``<name>-pictures.json`` (the provenance given, e.g. the run's results keys) under ``out_dir``."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {"samples": os.path.join(out_dir, f"{name}-samples.png"),
             "completions": os.path.join(out_dir, f"{name}-completions.png")}
    save_image_grid(pictures["samples"], paths["samples"], columns=8)
    save_image_grid(pictures["completions"], paths["completions"], columns=pictures["n_completions"])
    record = dict(provenance, files={k: os.path.basename(v) for k, v in paths.items()},
                  keep_rows=pictures["keep_rows"], seed=pictures["seed"], temperature=pictures["temperature"],
                  layout="completions: row 1 occluded test images (hidden part grey), row 2 the model's completion, "
                         "row 3 the original")
    with atomic_write(os.path.join(out_dir, f"{name}-pictures.json"), "w") as f:
        json.dump(record, f, indent=2, default=str)
        f.write("\n")
    return record


def record_pictures(trainer, checkpoint: str, out_dir: str, *, n: int = 16, seed: int = 0,
                    temperature: float = 1.0) -> dict:
    """Samples and completions of a finished run's model, written by :func:`save_pictures` under the run's name
    with its provenance: the keys of its ``results.json`` that say which run it was (experiment, scale, steps,
    seed, device, commit, date), the checkpoint drawn from, and the test bits/dim."""
    path = trainer.path("results.json")
    if not os.path.isfile(path):
        raise RunDirectoryError(f"{trainer.out_dir} has no results.json: pictures are recorded for a finished run")
    results = read_results(path)
    provenance = {key: results[key] for key in ("experiment", "scale", "steps", "seed", "device", "git_commit", "date")}
    provenance.update(checkpoint=checkpoint, test_bits_per_dim=results["metrics"]["test"].get("bits_per_dim"))
    pictures = sample_pictures(trainer.model, trainer.datasets["test"], n=n, seed=seed, temperature=temperature)
    return save_pictures(pictures, out_dir, results["experiment"], provenance)


__all__ = ["record_pictures", "sample_pictures", "save_image_grid", "save_pictures"]
