"""Plotting is imported only where a figure is drawn (docs/design.md §1): the library and the book's
non-drawing helpers load without matplotlib.

The modules are imported one after another in one fresh interpreter, each judged right after its own import:
once a module has loaded matplotlib it stays in ``sys.modules``, so an earlier import cannot hide a later
one's, and the first module that loads it is the one reported (later ones are then not judged, and fail
saying so). One interpreter, not one per module: each would import torch again (about 2 s apiece)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

MODULES = ["lra_kit", "lra_kit.attention", "lra_kit.models", "lra_kit.train", "lra_kit.data", "lra_kit.viz",
           "lra_kit.viz.lab", "lra_kit.viz.momentum", "lra_kit.viz.widgets", "lra_kit.viz.lsh", "lra_kit.viz.results",
           "lra_kit.viz.notebooks"]

CHECK = """
import importlib, json, sys
loaded = {}
for module in sys.argv[1:]:
    importlib.import_module(module)
    loaded[module] = "matplotlib" in sys.modules
    if loaded[module]:
        break  # from here on matplotlib is loaded: no later module can be judged
print(json.dumps(loaded))
"""


def _loads_matplotlib(modules: list[str]) -> dict[str, bool]:
    proc = subprocess.run([sys.executable, "-c", CHECK, *modules], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def loaded() -> dict[str, bool]:
    return _loads_matplotlib(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_import_does_not_load_matplotlib(module, loaded):
    assert module in loaded, f"not judged: {next(m for m, v in loaded.items() if v)} loaded matplotlib before it"
    assert not loaded[module], f"importing {module} loaded matplotlib"


def test_figures_do_load_matplotlib():
    """The check can fail: the module that draws does import it, and it is the one reported."""
    assert _loads_matplotlib(["lra_kit.data", "lra_kit.viz.figures", "lra_kit.models"]) == {
        "lra_kit.data": False, "lra_kit.viz.figures": True}
