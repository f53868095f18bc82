"""The LRA page downloaded as a notebook and run outside a clone (no ``results/`` at or above it): it says once
where the recorded runs are and how to point at them, runs to the end, and never calls a run "not recorded" when
it cannot see the records at all; its outputs are text and tables, never a MyST role left raw (``{ref}`...```)."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "notebooks" / "lra.md"
HINT = "The recorded LRA runs (results/lra/) are committed in the lra_kit repository under results/"
MYST_ROLE = re.compile(r"\{(ref|numref|cite|cite:p|cite:t|eq|doc|term|math)\}`")


def _outputs(nb) -> list[str]:
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                raise AssertionError(f"{out['ename']}: {out['evalue']}")
            texts.append(out.get("text", "") + "".join(str(v) for k, v in out.get("data", {}).items()
                                                      if k.startswith("text/")))
    return texts


def _run(folder: Path, monkeypatch, tmp_path: Path, results: Path | None) -> list[str]:
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    if results is None:
        monkeypatch.delenv("LRA_KIT_RESULTS", raising=False)
    else:
        monkeypatch.setenv("LRA_KIT_RESULTS", str(results))
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "no-data"))
    monkeypatch.setenv("LRA_KIT_FETCH", "0")
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LRA_KIT_SCALE", "smoke")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    nb = jupytext.read(PAGE)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(folder)}}).execute()
    return _outputs(nb)


@pytest.mark.slow
def test_the_lra_page_outside_a_clone_says_where_the_runs_are(tmp_path, monkeypatch):
    folder = tmp_path / "downloads"  # a folder with no results/ at or above it
    folder.mkdir()
    assert not any((p / "results").is_dir() for p in (folder, *folder.parents))
    outputs = _run(folder, monkeypatch, tmp_path, results=None)
    text = "\n".join(outputs)
    assert sum(HINT in t for t in outputs) == 1, "the page should say once where the recorded runs are"
    assert "not recorded" not in text, "a run is called not recorded where the page cannot see the records"
    assert "records not here" in text
    assert not MYST_ROLE.search(text), MYST_ROLE.search(text)
    assert str(tmp_path) not in text, "an output prints a path of this machine"


@pytest.mark.slow
def test_the_lra_page_reads_the_records_wherever_lra_kit_results_points(tmp_path, monkeypatch):
    """LRA_KIT_RESULTS names the results folder itself, whatever it is called; the page then finds every run."""
    copy = tmp_path / "a-copy-of-the-runs"
    shutil.copytree(ROOT / "results" / "lra", copy / "lra")
    folder = tmp_path / "downloads"
    folder.mkdir()
    outputs = _run(folder, monkeypatch, tmp_path, results=copy)
    text = "\n".join(outputs)
    assert not any(HINT in t for t in outputs) and "records not here" not in text
    assert "24 of 24 runs recorded at lra-cpu" in text
    assert not MYST_ROLE.search(text), MYST_ROLE.search(text)
    assert str(tmp_path) not in text, "an output prints a path of this machine"
