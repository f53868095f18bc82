"""Where a page finds the committed runs, and the fit it reports on them (no plotting).

A chapter run inside a clone reads ``results/``; one downloaded as ``.ipynb`` and run elsewhere says where
the runs are (:func:`results_hint`).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def results_dir() -> Path | None:
    """The repository's committed ``results/`` folder, where the recorded runs are.

    ``$LRA_KIT_RESULTS`` if set; else the first ``results/`` folder at or above the working directory
    (a chapter run inside a clone); else None (a chapter downloaded as ``.ipynb`` and run elsewhere: it
    then says where the runs are, see :func:`results_hint`). Pages print paths relative to the repository,
    never this absolute path.
    """
    env = os.environ.get("LRA_KIT_RESULTS")
    if env:
        return Path(env)
    return next((p / "results" for p in (Path.cwd(), *Path.cwd().parents) if (p / "results").is_dir()), None)


def results_hint(what: str = "the recorded runs") -> str:
    """One line for a page that cannot find ``results/``: where the runs are and how to point at them."""
    return (f"{what} are committed in the lra_kit repository under results/; this notebook runs outside a "
            "clone. Clone the repository and open the notebook there, or set LRA_KIT_RESULTS to the path of "
            "its results/ folder, then re-run.")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table for ``IPython.display.Markdown``: a page's results as a rendered table, not printed text.

    Each cell is written with ``str``; a ``|`` inside a cell is escaped and a newline becomes a space, so that
    neither can split a cell or a row.
    """
    width = len(header)
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"rows[{i}] has {len(row)} cells; the header has {width}")

    def line(cells) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"

    return "\n".join([line(header), "|" + "---|" * width, *map(line, rows)])


def markdown_list(text: str, sep: str = "; ") -> str:
    """``text`` (e.g. a preset's ``shrunk``) as a Markdown bullet list, one item per ``sep`` outside brackets."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char == "(") - (char == ")")
        if depth == 0 and text.startswith(sep, i):
            items.append(text[start:i])
            start = i + len(sep)
    items.append(text[start:])
    return "\n".join(f"- {item}" for item in items if item)


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y against log x: the measured exponent p in y ∝ xᵖ."""
    x, y = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if x.size < 2:
        raise ValueError("need at least two points to fit a slope")
    return float(np.polyfit(x, y, 1)[0])


