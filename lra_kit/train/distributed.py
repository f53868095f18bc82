"""DistributedDataParallel set-up: the same command under ``torchrun --nproc_per_node N``.

torchrun sets ``RANK``, ``LOCAL_RANK`` and ``WORLD_SIZE``; with them a run joins a process
group (nccl on CUDA, gloo on CPU), wraps the model in DDP, and each rank reads its own
1/N of every global batch. Only rank 0 writes logs, checkpoints and results.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from lra_kit.errors import ConfigError


@dataclass
class DistInfo:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device: torch.device) -> DistInfo:
    """Join the process group torchrun describes in the environment (no-op for a single process)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return DistInfo()
    info = DistInfo(int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        dist.init_process_group(backend=backend)
    return info


def local_device(requested: str, info: DistInfo) -> torch.device:
    """``auto`` → cuda:LOCAL_RANK when CUDA is present, else cpu; ``cpu``, ``cuda`` and ``cuda:N`` as given."""
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    kind, _, index = str(requested).partition(":")
    if kind not in ("cpu", "cuda") or (index and (kind == "cpu" or not index.isdigit())):
        raise ConfigError(f"--device must be auto, cpu, cuda or cuda:N, got {requested!r}")
    device = torch.device(requested)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"--device {requested} asked for, but torch.cuda.is_available() is False")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ConfigError(f"--device {requested}: this machine has {torch.cuda.device_count()} CUDA device(s)")
        if device.index is None:
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    return device


def all_reduce_sum(values: list[float], info: DistInfo, device: torch.device) -> list[float]:
    """Sum a few numbers over the ranks (evaluation counts)."""
    if not info.enabled:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def barrier(info: DistInfo) -> None:
    if info.enabled:
        dist.barrier()


def cleanup(info: DistInfo) -> None:
    if info.enabled and dist.is_initialized():
        dist.destroy_process_group()
