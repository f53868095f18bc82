"""Where a page finds the committed runs, and the fit it reports on them (no plotting).

A chapter run inside a clone reads ``results/``; one downloaded as ``.ipynb`` and run elsewhere says where
the runs are (:func:`results_hint`).
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np


RESULTS_ENV = "LRA_KIT_RESULTS"
MARK = "record.sh"  # the file that tells the repository's results/ from any other folder of that name


def results_dir() -> Path | None:
    """The repository's committed ``results/`` folder, where the recorded runs are.

    ``$LRA_KIT_RESULTS`` if set (a ValueError names it if it is not a folder); else the first ``results/``
    folder at or above the working directory that holds ``record.sh``, as the repository's does (a chapter run
    inside a clone); else None (a chapter downloaded as ``.ipynb`` and run elsewhere: it then says where the
    runs are, see :func:`results_hint`, and never that they were not recorded). Pages print paths relative to
    the repository, never this absolute path.
    """
    env = os.environ.get(RESULTS_ENV)
    if env:
        if not Path(env).is_dir():
            raise ValueError(f"{RESULTS_ENV} must name the repository's results/ folder; it names no folder: {env}")
        return Path(env)
    here = Path.cwd()
    return next((p / "results" for p in (here, *here.parents) if (p / "results" / MARK).is_file()), None)


def results_hint(what: str = "the recorded runs") -> str:
    """One line for a page that cannot find ``results/``: where the runs are and how to point at them."""
    return (f"{what} are committed in the lra_kit repository under results/; this notebook runs outside a "
            f"clone. Clone the repository and open the notebook there, or set {RESULTS_ENV} to the path of "
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


# One recorded run, part by part, as the pages cite it (``provenance(record, ("seed", "device", ...))``).
PROVENANCE_PARTS = {
    "scale": lambda r: f"scale {r['scale']}",
    "steps": lambda r: f"{r['steps']:,} steps",
    "seed": lambda r: f"seed {r['seed']}",
    "device": lambda r: str(r["device"]),
    "commit": lambda r: f"commit {(r.get('git_commit') or '?')[:10]}",
    "date": lambda r: str(r["date"])[:10],
    "minutes": lambda r: f"{r['wall_s'] / 60:.0f} min",
}


def provenance(record: dict, parts: Sequence[str] = tuple(PROVENANCE_PARTS)) -> str:
    """Where a recorded number comes from: the ``parts`` of a results record (docs/design.md §5), comma-separated.

    Words and spaces only (``seed 1, cpu, commit 8fd0892a1b, 2026-11-25``), so that a table's runs column can
    wrap inside the book's column; a page leaves out what its table's heading already says (e.g. the scale).
    """
    unknown = [p for p in parts if p not in PROVENANCE_PARTS]
    if unknown:
        raise ValueError(f"parts {unknown} unknown; allowed: {', '.join(PROVENANCE_PARTS)}")
    return ", ".join(PROVENANCE_PARTS[p](record) for p in parts)


def mean_range(s: dict, digits: int = 3) -> str:
    """A :func:`lra_kit.results.spread` as a table cell: the mean, then ``[min, max]`` when there are several
    seeds that got there, then how many never did (a threshold not reached); ``never`` if none did."""
    if s["missed"] == s["n"]:
        return "never"
    text = f"{s['mean']:.{digits}f}"
    if s["n"] - s["missed"] > 1:
        text += f" [{s['min']:.{digits}f}, {s['max']:.{digits}f}]"
    return text + (f" ({s['missed']} of {s['n']} never)" if s["missed"] else "")


def above_or_below(ratio: float, max_digits: int = 3) -> str:
    """``ratio`` = a / b as words for a table: ``9.0% above``, ``0.04% below``, or ``level with`` where it is
    exactly 1 or rounds to 0 % even at ``max_digits`` decimals. One decimal unless the difference needs more to
    show at all, so that a small difference is never written ``-0.0%``."""
    if not math.isfinite(ratio) or ratio <= 0:
        raise ValueError(f"ratio must be a finite number > 0, got {ratio}")
    if max_digits < 1:
        raise ValueError(f"max_digits must be >= 1, got {max_digits}")
    diff = 100 * (ratio - 1)
    for digits in range(1, max_digits + 1):
        text = f"{abs(diff):.{digits}f}"
        if float(text) > 0:
            return f"{text}% {'above' if diff > 0 else 'below'}"
    return "level with"


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y against log x: the measured exponent p in y ∝ xᵖ."""
    x, y = np.log(np.asarray(x, dtype=float)), np.log(np.asarray(y, dtype=float))
    if x.size < 2:
        raise ValueError("need at least two points to fit a slope")
    return float(np.polyfit(x, y, 1)[0])


