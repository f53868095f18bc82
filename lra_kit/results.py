"""Results files (docs/design.md §5 Results format): one JSON per run with the metrics and all that
is needed to trust them.

Keys: ``metrics``, ``config``, ``scale``, ``steps``, ``seed``, ``wall_s``, ``device``
(e.g. "NVIDIA H200" or "cpu"), ``torch``, ``git_commit``, ``date``, ``machine`` (:func:`machine_info`: the CPU's
model, cores and the ISA flags that change CPU timings; the GPU's name) — plus any extras (e.g. ``curves``, the
loss/accuracy curves of the run).
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
from typing import Any

import torch

from lra_kit.atomic import atomic_write

REQUIRED_KEYS = ("metrics", "config", "scale", "steps", "seed", "wall_s", "device", "torch", "git_commit", "date")


def device_name(device: Any = None) -> str:
    """A human name for the device: the GPU's name on CUDA, else ``"cpu"``."""
    device = torch.device(device) if device is not None else None
    if device is not None and device.type == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name(device)
    return "cpu" if device is None or device.type == "cpu" else str(device)


# The CPU features that change what a CPU benchmark measures: AVX-512 (and its bf16/fp16/VNNI parts) and AMX tiles,
# which oneDNN uses for matrix products when present (lscpu's / /proc/cpuinfo's flag names).
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile", "amx_bf16", "amx_int8")


def _cpu_fields(lscpu_text: str | None, cpuinfo_text: str | None) -> dict:
    """Model name and flags from ``lscpu``'s output, else from /proc/cpuinfo's first processor."""
    fields = {}
    for text, keys in ((lscpu_text, ("Model name", "Flags")), (cpuinfo_text, ("model name", "flags"))):
        for line in (text or "").splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in keys and key.lower() not in fields:
                fields[key.lower()] = value.strip()
        if "model name" in fields and "flags" in fields:
            break
    return fields


def machine_info(device: Any = None, lscpu_text: str | None = None, cpuinfo_text: str | None = None) -> dict:
    """The machine a record ran on: ``cpu_model`` (lscpu's model name), ``cpu_cores`` (logical CPUs this process
    may use), ``torch_threads``, ``isa`` (which of :data:`ISA_FLAGS` the CPU has) and, on CUDA, ``gpu``. Two
    machines both called "x86_64" gave one CPU benchmark 1.75 and 3.9 ms a pixel (issue 50, item 6)."""
    if lscpu_text is None:
        try:
            lscpu_text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10,
                                        env={**os.environ, "LC_ALL": "C"}).stdout
        except (OSError, subprocess.SubprocessError):
            lscpu_text = ""
    if cpuinfo_text is None:
        try:
            with open("/proc/cpuinfo") as f:
                cpuinfo_text = f.read(200_000)
        except OSError:
            cpuinfo_text = ""
    fields = _cpu_fields(lscpu_text, cpuinfo_text)
    flags = set(fields.get("flags", "").split())
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info = {"cpu_model": fields.get("model name") or platform.processor() or platform.machine(),
            "cpu_cores": cores, "torch_threads": torch.get_num_threads(),
            "isa": [f for f in ISA_FLAGS if f in flags]}
    device = torch.device(device) if device is not None else None
    if device is not None and device.type == "cuda" and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def git_commit(path: str | None = None) -> str | None:
    """The commit of the repository holding ``path`` (this package by default), with ``-dirty`` if a tracked file
    outside ``results/`` is modified: the records there are what runs write (a benchmark that appends a second
    run to its record would otherwise mark that run dirty), not the code that made them."""
    cwd = path or os.path.dirname(os.path.abspath(__file__))
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":(top,exclude)results"],
                               cwd=cwd, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "")


def make_results(*, metrics: dict, config: dict, scale: str, steps: int, seed: int, wall_s: float, device: Any,
                 commit: str | None = None, **extra) -> dict:
    """The results record with the keys of docs/design.md §5 (and ``extra`` after them).

    ``commit`` is the code that made the numbers, read when that code was loaded (a training run's start); by
    default the repository's commit now.
    """
    record = {"metrics": metrics, "config": config, "scale": scale, "steps": int(steps), "seed": int(seed),
              "wall_s": round(float(wall_s), 3), "device": device_name(device), "torch": torch.__version__,
              "git_commit": commit if commit is not None else git_commit(),
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    record["machine"] = machine_info(device)
    record.update(extra)
    return record


def write_results(record: dict, path: str) -> str:
    """Write ``record`` as indented JSON (atomically), checking the required keys are there."""
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise ValueError(f"results record misses keys {missing}")
    with atomic_write(path, "w") as f:
        json.dump(record, f, indent=2, default=str)
        f.write("\n")
    return path


def read_results(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def seed_records(folder: str, stem: str) -> list[dict]:
    """Every recorded seed of one run, sorted by seed: ``FOLDER/STEM.json`` (seed 0) and ``FOLDER/STEM-seedN.json``
    (the names :attr:`lra_kit.train.configs.ExperimentConfig.name` gives), each checked to hold the seed its
    name says."""
    import glob
    import re

    found = []
    seeds = glob.glob(os.path.join(folder, glob.escape(stem) + "-seed*.json"))
    for path in [os.path.join(folder, f"{stem}.json"), *seeds]:
        match = re.fullmatch(re.escape(stem) + r"(?:-seed(\d+))?\.json", os.path.basename(path))
        if match is None or not os.path.exists(path):
            continue
        record = read_results(path)
        named = int(match.group(1) or 0)
        if record["seed"] != named:
            raise ValueError(f"{path} is named for seed {named} but holds seed {record['seed']}")
        found.append(record)
    return sorted(found, key=lambda r: r["seed"])


def standard_error(p: float, n: int) -> float:
    """The standard error of an accuracy ``p`` (a fraction) measured on ``n`` independent test examples,
    √(p(1 − p)/n): the noise of the test set alone, whatever the model."""
    if not 0 <= p <= 1:
        raise ValueError(f"p must be an accuracy in [0, 1], got {p}")
    if n < 1:
        raise ValueError(f"n must be a count of test examples, at least 1, got {n}")
    return math.sqrt(p * (1 - p) / n)


def spread(values) -> dict:
    """``{"mean", "min", "max", "n"}`` of a few seeds' values (``None`` values, e.g. a threshold never reached,
    are counted in ``n`` but not in the mean; ``missed`` says how many)."""
    values = list(values)
    have = [float(v) for v in values if v is not None]
    if not values:
        raise ValueError("spread of no values")
    mean = sum(have) / len(have) if have else float("nan")
    return {"mean": mean, "min": min(have, default=float("nan")), "max": max(have, default=float("nan")),
            "n": len(values), "missed": len(values) - len(have)}


def steps_to_loss(curve: list[dict], level: float, width: int = 5) -> int | None:
    """The first logged step at which the running mean of the last ``width`` training losses of ``curve`` (the
    ``curves["train"]`` of a record) is at or below ``level``; ``None`` if it never is."""
    losses = [p["loss"] for p in curve]
    for i, point in enumerate(curve):
        window = losses[max(0, i - width + 1): i + 1]
        if sum(window) / len(window) <= level:
            return point["step"]
    return None
