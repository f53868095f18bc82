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


FENCE = re.compile(r"^(`{3,}|~{3,})(.*)$")


def fenced_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Each fenced block of a Markdown page, as CommonMark reads it: (its info string, its lines).

    A fence closes only at a line of the same character, at least as long, with nothing after it; until then
    every line is the block's text. So a stray ``` before a ```{code-cell} opens a raw block that swallows the
    cell: the reader sees its source as text, and it is not a cell (the page builds, showing the code)."""
    blocks, block, info, fence = [], None, "", ""
    for line in text.splitlines():
        match = FENCE.match(line)
        if block is None:
            if match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
                block, info, fence = [], match.group(2).strip(), match.group(1)
        elif match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                and not match.group(2).strip():
            blocks.append((info, block))
            block = None
        else:
            block.append(line)
    if block is not None:  # an unclosed fence runs to the end of the page
        blocks.append((info, block))
    return blocks


def raw_cells(text: str) -> list[list[str]]:
    """Blocks that are not cells but hold a cell's opening line: MyST shown to the reader as text."""
    return [lines for info, lines in fenced_blocks(text)
            if not info.startswith("{code-cell}") and any(line.startswith("```{code-cell}") for line in lines)]


def code_cells(text: str) -> list[tuple[set[str], list[str]]]:
    """Each ```{code-cell} of a MyST text notebook: (its tags, its code lines), options header removed."""
    cells = []
    for info, lines in fenced_blocks(text):
        if not info.startswith("{code-cell}"):
            continue
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
    """Non-blank code lines in the cells a reader sees expanded, and in cells shown as raw text (whatever their
    tags say: a raw block is not a cell, so nothing hides it)."""
    cells = sum(sum(1 for line in lines if line.strip()) for tags, lines in code_cells(text) if not tags & HIDDEN)
    return cells + sum(sum(1 for line in lines if line.strip()) for lines in raw_cells(text))


def test_code_cells_are_parsed_with_their_tags():
    page = ("```{code-cell} ipython3\n:tags: [hide-input]\nhidden = 1\n```\n\n"
            "```{code-cell} ipython3\n---\ntags: [remove-cell]\nmystnb:\n  x: 1\n---\nremoved = 1\n```\n\n"
            "```{code-cell} ipython3\nshown = 1\n\nassert shown\n```\n")
    assert [sorted(t) for t, _ in code_cells(page)] == [["hide-input"], ["remove-cell"], []]
    assert visible_lines(page) == 2


def test_a_cell_swallowed_by_a_stray_fence_is_not_hidden_code():
    """A stray ``` before a hidden cell (notebooks/lra.md once had one) shows the cell's source as text: it is not
    a cell, and its lines count as visible code."""
    cell = "```{code-cell} ipython3\n:tags: [hide-input]\nhidden = 1\n```\n"
    assert visible_lines(cell) == 0 and len(code_cells(cell)) == 1
    swallowed = "```\n\n### Heading\n\n" + cell
    assert code_cells(swallowed) == [] and len(raw_cells(swallowed)) == 1
    assert visible_lines(swallowed) == 4  # the heading, the cell's opening and options lines and its code: all shown
    longer = "````{admonition} Note\n```{code-cell} ipython3\nx = 1\n```\n````\n"  # a longer fence holds it
    assert code_cells(longer) == [] and len(raw_cells(longer)) == 1


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_cell_of_a_page_is_found(page):
    text = page.read_text(encoding="utf-8")
    raw = raw_cells(text)
    assert not raw, f"{len(raw)} cell(s) shown as raw text (a stray fence before them): {raw[0][:3]}"
    assert len(code_cells(text)) == text.count("```{code-cell}")


def test_the_visible_code_of_the_book_fits_its_budget():
    counts = {p.relative_to(ROOT).as_posix(): visible_lines(p.read_text(encoding="utf-8")) for p in PAGES}
    total = sum(counts.values())
    assert total <= VISIBLE_LINES, (f"{total} visible lines of cell code (budget {VISIBLE_LINES}): move harness into "
                                    f"lra_kit; by page: {counts}")
