"""The pages that read a dataset still run without it (a new user's machine, offline): the cell that needs the
data shows one notice naming the dataset and the command that fetches it, and the rest of the page — the
recorded runs — still runs. ``make nbval`` and ``make book`` run the same pages with the data (CI has it)."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# page -> (the bundle it reads, text that only the offline path prints, text that only the rest of the page prints)
PAGES = {
    "notebooks/image_generation.md": ("mnist", "lra-kit data fetch mnist",
                                      "test bits/dim, mean [min, max] over the seeds"),
    "book/08_authors_code.md": ("imdb", "lra-kit data fetch imdb", "parallel vs recurrent"),
}


def _outputs(nb) -> list[str]:
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts.append(out.get("text", "") + "".join(str(v) for v in out.get("data", {}).values()))
    return texts


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PAGES))
def test_a_page_runs_without_its_dataset(page, tmp_path, monkeypatch):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    _, offline_text, later_text = PAGES[page]
    # the page reads its own source and ../results: run it from a mirror of the repository made of links
    for entry in ROOT.iterdir():
        if entry.name not in ("book", "notebooks"):
            (tmp_path / entry.name).symlink_to(entry)
    folder = tmp_path / Path(page).parent
    folder.mkdir()
    for entry in (ROOT / Path(page).parent).iterdir():
        (folder / entry.name).symlink_to(entry)
    empty = tmp_path / "no-data"
    empty.mkdir()
    monkeypatch.setenv("LRA_KIT_DATA", str(empty))
    monkeypatch.setenv("LRA_KIT_FETCH", "0")
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LRA_KIT_SCALE", "smoke")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as the Makefile's notebook kernels (NOTEBOOK_THREADS): see there why
    nb = jupytext.read(ROOT / page)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}}).execute()  # raises on a failing cell
    outputs = _outputs(nb)
    notices = [text for text in outputs if offline_text in text]
    assert len(notices) == 1, f"expected one notice naming `{offline_text}`, found {len(notices)}"
    rest = "\n".join(outputs).replace(notices[0], "")  # everything the page printed but the notice
    assert later_text in rest, "the rest of the page (the recorded runs) did not render"
    assert not any(str(empty) in text for text in outputs), "an output prints the machine's data path"
