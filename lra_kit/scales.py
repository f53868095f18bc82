"""Run scales (docs/design.md §3 Scales): how big every experiment is.

``smoke``  seconds on a CPU: what CI and nbval run.
``book``   what the book build runs: a page's live runs in about a minute or less on 2 CPU cores, one
           thread (LRA 61 s, copy task 29 s, measured at 801a61e).
``cpu``    the named reduced scale of the runs recorded on a 2-core CPU (copy task, image generation
           only): the papers' data and sequence lengths with a smaller model and fewer steps, each
           shrunk value listed in ``lra_kit.train.paper_configs.SMALL``; the pixel tasks evaluate on
           seeded subsets of 1,000 validation and 1,000 test images (``lra_kit.data.splits``).
``paper``  the papers' exact configurations (a GPU).

The scale comes from an explicit argument, else from ``LRA_KIT_SCALE``, else ``smoke``.
"""
from __future__ import annotations

import os

from lra_kit.errors import ConfigError

SCALES = ("smoke", "book", "cpu", "paper")
ENV_VAR = "LRA_KIT_SCALE"


def get_scale(scale: str | None = None) -> str:
    """Return the scale to use: ``scale`` if given, else ``$LRA_KIT_SCALE``, else ``"smoke"``."""
    value = scale if scale is not None else os.environ.get(ENV_VAR, "smoke")
    if value not in SCALES:
        source = "scale" if scale is not None else f"${ENV_VAR}"
        raise ConfigError(f"{source} must be one of {SCALES}, got {value!r}")
    return value

