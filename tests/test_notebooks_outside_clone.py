"""The reproduction pages, downloaded as notebooks and run outside a clone, tell the truth about the recorded runs.

Run from a folder outside the repository with ``LRA_KIT_RESULTS`` unset, a page cannot find ``results/``: every
cell still runs, the page says once where the records are and how to point at them (``results_hint``), and no
cell says that a run was "not recorded yet", that "the CPU time ran out" or that a benchmark was "not yet
measured" — the runs exist, they are just not here. With ``LRA_KIT_RESULTS`` naming the repository's
``results/``, the same pages render the records.

To stay cheap, the pages run in one kernel per case, and the cells that train or time something live (the same
at either place, and run by ``make nbval``) are left out.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# page -> (a cell left out when its source matches this: live training or timing; text only a rendered record shows)
PAGES = {
    "notebooks/image_generation.md": (r"Trainer\(|bench\.run\(", "seed 0, cpu, commit"),
    "notebooks/copy_task.md": (r"fresh_run\(", "steps to loss"),
    "notebooks/speed_memory.md": (r"interleaved_times\(|bench_training\.run\(", "recorded: "),
    "notebooks/web_generation.md": (r"\.generate\(", "In headless Chromium"),
}
HINT = "set LRA_KIT_RESULTS to the path of its results/ folder"
FALSE_WHEN_ELSEWHERE = ("not recorded yet", "the CPU time ran out", "Not yet measured", "not yet measured")


def _notebook(results: Path):
    """One notebook: the pages one after another with LRA_KIT_RESULTS unset, then again with it naming ``results``,
    each page after a cell that names it and the case, live cells left out."""
    jupytext = pytest.importorskip("jupytext")
    nbformat = pytest.importorskip("nbformat")
    cells = [nbformat.v4.new_code_cell("import os\nos.environ['LRA_KIT_SCALE'] = 'smoke'")]
    for case, setup in (("elsewhere", "os.environ.pop('LRA_KIT_RESULTS', None)"),
                        ("with LRA_KIT_RESULTS", f"os.environ['LRA_KIT_RESULTS'] = {str(results)!r}")):
        cells.append(nbformat.v4.new_code_cell(setup))
        for page, (live, _) in PAGES.items():
            code = [c for c in jupytext.read(ROOT / page).cells if c.cell_type == "code"]
            kept = [c for c in code if not re.search(live, c.source)]
            assert len(kept) < len(code), f"{page}: no cell matches {live!r}; update the test's PAGES"
            cells.append(nbformat.v4.new_code_cell(f"print('=== {case}: {page}')"))
            cells += [nbformat.v4.new_code_cell(c.source) for c in kept]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _outputs_by_page(nb) -> dict[tuple[str, str], str]:
    pages, current = {}, None
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "") + "".join(str(v) for k, v in out.get("data", {}).items()
                                                 if k in ("text/plain", "text/markdown", "text/html"))
            if text.startswith("=== "):
                current = tuple(text[4:].strip().split(": ", 1))
                pages[current] = ""
            elif current:
                pages[current] += text + "\n"
    return pages


@pytest.mark.slow
def test_each_page_outside_a_clone_and_with_lra_kit_results(tmp_path, monkeypatch):
    nbclient = pytest.importorskip("nbclient")
    folder = tmp_path / "downloads"  # where a reader saved the notebooks: no results/ at or above it
    folder.mkdir()
    monkeypatch.delenv("LRA_KIT_RESULTS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    nb = _notebook(ROOT / "results")
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}}).execute()  # raises on a failing cell
    outputs = _outputs_by_page(nb)
    assert sorted(outputs) == sorted((case, page) for case in ("elsewhere", "with LRA_KIT_RESULTS") for page in PAGES)
    for (case, page), text in outputs.items():
        assert str(tmp_path) not in text and str(ROOT) not in text, f"{page} ({case}): prints a path of this machine"
        if case == "elsewhere":
            assert HINT in text, f"{page}: does not say where the recorded runs are"
            said = [phrase for phrase in FALSE_WHEN_ELSEWHERE if phrase in text]
            assert not said, f"{page}: says {said} outside a clone, where the runs exist but are not here"
            assert PAGES[page][1] not in text, f"{page}: renders a record it cannot have found"
        else:
            assert HINT not in text, f"{page}: says the runs are not here, with LRA_KIT_RESULTS set"
            assert PAGES[page][1] in text, f"{page}: did not render its records"
            said = [phrase for phrase in ("not recorded yet", "see the top of the page") if phrase in text]
            assert not said, f"{page}: says {said} with the records at hand"
