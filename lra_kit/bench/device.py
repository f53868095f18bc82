"""What the benchmarks know of a GPU: a short name for file names, and the memory bandwidth its bound is taken from.

The least time a memory-bound operation can take is the bytes it must move through HBM ÷ the card's bandwidth.
The bandwidth comes from :data:`BANDWIDTH`, keyed by :func:`gpu_slug` of the device name, where the card is
there; otherwise from a device-to-device copy timed in the same process (:func:`measure_copy_bandwidth`).
:func:`bandwidth` always times the copy on CUDA and returns both numbers, with the one it used named, so that a
record says which bound it holds.
"""
from __future__ import annotations

import re
import statistics

import torch

# bytes/s per slug, and where each number comes from. The H200's is what a device-to-device copy reaches
# there (bytes read plus written), about 90 % of its 4.8 TB/s datasheet peak; the H100 SXM's is its datasheet
# peak. Cards not named here get the copy measured in the run.
BANDWIDTH = {
    "h200": (4.3e12, "device-to-device copy measured on an H200, bytes read plus written"),
    "h100": (3.35e12, "H100 SXM datasheet peak"),
}
VENDOR_WORDS = frozenset({"nvidia", "geforce", "tesla"})
COPY_BYTES = 2**30


def gpu_slug(name: str) -> str:
    """A device name as a file-name part: lower case, the vendor's words and the memory's size and type left out,
    the rest joined by dashes. ``"NVIDIA H100 80GB HBM3"`` → ``"h100"``, ``"NVIDIA H200"`` → ``"h200"``,
    ``"NVIDIA H100 PCIe"`` → ``"h100-pcie"``, ``"cpu"`` → ``"cpu"``."""
    if not isinstance(name, str):
        raise ValueError(f"name must be a device name (str), got {name!r}")
    words = re.findall(r"[a-z0-9]+", name.lower())
    kept = [w for w in words if w not in VENDOR_WORDS and not re.fullmatch(r"\d+gb|hbm\d*e?", w)]
    return "-".join(kept) or "gpu"


def table_bandwidth(name: str) -> tuple[float, str] | None:
    """(bytes/s, source) from :data:`BANDWIDTH` for the device named ``name``, or None for a card not listed."""
    return BANDWIDTH.get(gpu_slug(name))


def measure_copy_bandwidth(device: torch.device, nbytes: int = COPY_BYTES, repeats: int = 5) -> float:
    """Bytes/s of a device-to-device copy of ``nbytes`` (bytes read plus bytes written), median of ``repeats``."""
    from lra_kit.bench.timing import interleaved_times

    device = torch.device(device)
    if device.type != "cuda":
        raise ValueError(f"device must be a CUDA device, got {device}")
    if nbytes < 1:
        raise ValueError(f"nbytes must be >= 1, got {nbytes}")

    def copies() -> list[float]:
        src = torch.empty(nbytes, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        return interleaved_times({"copy": lambda: dst.copy_(src)}, device, repeats=repeats)["copy"]

    times = copies()
    torch.cuda.empty_cache()  # the two buffers, freed on return, go back to the device
    return 2 * nbytes / statistics.median(times)


def choose_bandwidth(name: str, measured: float | None) -> dict:
    """``{"bytes_per_s", "source", "measured_copy"}`` for the card named ``name``: the table's number where the card
    is in :data:`BANDWIDTH`, else ``measured`` (a copy timed in the run), with the one used named in ``source``."""
    listed = table_bandwidth(name)
    if listed is not None:
        return {"bytes_per_s": listed[0], "source": f"table: {listed[1]}", "measured_copy": measured}
    if measured is None:
        return {"bytes_per_s": None, "source": None, "measured_copy": None}
    return {"bytes_per_s": measured, "source": f"measured: device-to-device copy of {COPY_BYTES // 2**20} MiB "
                                               "in this run, bytes read plus written", "measured_copy": measured}


def bandwidth(device: torch.device) -> dict:
    """:func:`choose_bandwidth` for ``device``, the copy timed on it now (on a CPU: all None, no bound)."""
    device = torch.device(device)
    if device.type != "cuda":
        return choose_bandwidth("cpu", None)
    return choose_bandwidth(torch.cuda.get_device_name(device), measure_copy_bandwidth(device))
