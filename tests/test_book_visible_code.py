"""The code a reader of the book sees stays short: the visible cells (no hide-input, remove-input or remove-cell
tag) of every chapter and reproduction page hold at most VISIBLE_LINES lines of code in all. The pages show the
math and the checks; harness (plotting, tables, timing) is hidden or lives in lra_kit, and checks are never hidden
to meet this budget."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([*ROOT.glob("book/*.md"), *ROOT.glob("notebooks/*.md")])
VISIBLE_LINES = 960  # 900 before chapter 9 (the baselines), whose checks add 69 visible lines
HIDDEN = {"hide-input", "remove-input", "remove-cell", "hide-cell"}


def code_cells(text: str) -> list[tuple[set[str], list[str]]]:
    """Each ```{code-cell} of a MyST text notebook: (its tags, its code lines), options header removed."""
    cells = []
    for body in re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```\s*$", text, flags=re.M | re.S):
        lines = body.splitlines()
        tags: set[str] = set()
        if lines and lines[0].strip() == "---":  # a YAML options block, closed by the next ---
            end = lines.index("---", 1)
            header, lines = lines[1:end], lines[end + 1:]
        else:  # short options: ':key: value' lines
            n = 0
            while n < len(lines) and lines[n].startswith(":"):
                n += 1
            header, lines = [line[1:] for line in lines[:n]], lines[n:]
        for line in header:
            if line.strip().startswith("tags:"):
                tags |= {t.strip() for t in line.split(":", 1)[1].strip(" []").split(",") if t.strip()}
        cells.append((tags, lines))
    return cells


def visible_lines(text: str) -> int:
    """Non-blank code lines in the cells a reader sees expanded."""
    return sum(sum(1 for line in lines if line.strip()) for tags, lines in code_cells(text) if not tags & HIDDEN)


def test_code_cells_are_parsed_with_their_tags():
    page = ("```{code-cell} ipython3\n:tags: [hide-input]\nhidden = 1\n```\n\n"
            "```{code-cell} ipython3\n---\ntags: [remove-cell]\nmystnb:\n  x: 1\n---\nremoved = 1\n```\n\n"
            "```{code-cell} ipython3\nshown = 1\n\nassert shown\n```\n")
    assert [sorted(t) for t, _ in code_cells(page)] == [["hide-input"], ["remove-cell"], []]
    assert visible_lines(page) == 2


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_cell_of_a_page_is_found(page):
    text = page.read_text(encoding="utf-8")
    assert len(code_cells(text)) == text.count("```{code-cell}")


def test_the_visible_code_of_the_book_fits_its_budget():
    counts = {p.relative_to(ROOT).as_posix(): visible_lines(p.read_text(encoding="utf-8")) for p in PAGES}
    total = sum(counts.values())
    assert total <= VISIBLE_LINES, (f"{total} visible lines of cell code (budget {VISIBLE_LINES}): move harness into "
                                    f"lra_kit; by page: {counts}")
