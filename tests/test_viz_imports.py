"""Plotting is imported only where a figure is drawn (docs/design.md §1): the library and the book's
non-drawing helpers load without matplotlib. Each import runs in a fresh interpreter, so nothing a
previous test imported can hide one."""
from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = "import sys, {module}; sys.exit('matplotlib' in sys.modules)"


@pytest.mark.parametrize("module", ["lra_kit", "lra_kit.attention", "lra_kit.models", "lra_kit.train", "lra_kit.data",
                                    "lra_kit.viz", "lra_kit.viz.lab", "lra_kit.viz.momentum", "lra_kit.viz.widgets",
                                    "lra_kit.viz.results", "lra_kit.viz.notebooks"])
def test_import_does_not_load_matplotlib(module):
    proc = subprocess.run([sys.executable, "-c", CHECK.format(module=module)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"importing {module} loaded matplotlib\n{proc.stderr[-2000:]}"


def test_figures_do_load_matplotlib():
    """The check can fail: the module that draws does import it."""
    proc = subprocess.run([sys.executable, "-c", CHECK.format(module="lra_kit.viz.figures")], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr[-2000:]
