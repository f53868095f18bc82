"""``python -m lra_kit.viz.lab`` refuses to open the chapters in a JupyterLab that would show their MyST Markdown
as raw text: one without the jupyterlab-myst extension, or one whose version does not load it."""
from __future__ import annotations

import stat
from pathlib import Path

from lra_kit.viz import lab

LISTING = """JupyterLab v4.5.11
/venv/share/jupyter/labextensions
        jupyterlab-myst v2.7.0 \x1b[32menabled\x1b[0m \x1b[{colour}m{mark}\x1b[0m (python, jupyterlab_myst)
        jupyterlab-jupytext v1.4.6 \x1b[32menabled\x1b[0m \x1b[32mOK\x1b[0m (python, jupytext)
"""


def _fake_lab(folder: Path, listing: str) -> str:
    """A ``jupyter-lab`` beside a ``jupyter`` whose ``labextension list`` prints ``listing`` (to stderr, as it does)."""
    folder.mkdir()
    (folder / "listing.txt").write_text(listing)
    jupyter = folder / "jupyter"
    jupyter.write_text(f"#!/bin/sh\ncat '{folder / 'listing.txt'}' >&2\n")
    jupyter.chmod(jupyter.stat().st_mode | stat.S_IEXEC)
    return str(folder / "jupyter-lab")


def test_myst_status_reads_the_extension_listing(tmp_path):
    assert lab.myst_status(_fake_lab(tmp_path / "ok", LISTING.format(colour=32, mark="OK"))) is None
    problem = lab.myst_status(_fake_lab(tmp_path / "x", LISTING.format(colour=31, mark=" X")))
    assert problem.startswith("jupyterlab-myst is installed but this JupyterLab does not load it")
    assert "\x1b" not in problem
    none = "\n".join(line for line in LISTING.splitlines() if "myst" not in line)
    assert lab.myst_status(_fake_lab(tmp_path / "none", none)) == "jupyterlab-myst is not installed"
