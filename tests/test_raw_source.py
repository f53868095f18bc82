"""The browser test's raw-source finders (tests/browser/raw_source.py), without a browser: they must find what a
broken build leaves on a page, and nothing on a page that rendered."""
from __future__ import annotations

from browser.raw_source import raw_myst, raw_tex

# What notebooks/lra.md's stray fence left: the heading and the hidden cell shown in one code block.
SWALLOWED = """### Learning curves

Training loss (every 10 steps, a window average) of each attention on each task.

```{code-cell} ipython3
:tags: [hide-input]
fig, axes = plt.subplots(2, len(TASKS), figsize=(3.4 * len(TASKS), 5.2), sharex="col")
"""


def test_a_cell_shown_as_text_is_raw_myst():
    assert raw_myst("", SWALLOWED) == [":tags:", "```{code-cell}"]
    assert raw_myst("", "{code-cell} ipython3") == ["{code-cell}"]


def test_a_role_or_directive_left_in_prose_is_raw_myst():
    assert raw_myst("post-LN layers need a smaller rate {cite:p}", "") == ["{cite:p}"]
    assert raw_myst("as in {eq} and {numref}", "") == ["{eq}", "{numref}"]
    assert raw_myst("", "```{admonition} Note") == ["```{admonition}"]


def test_a_rendered_page_has_no_raw_source():
    prose = "The sum over j of the scores, as in (3.2) [Katharopoulos et al., 2020]; a set {0, 1}."
    code = 'print(f"{value:g} {beta:g}")\ndef f(x: dict) -> set:\n    return {x}\n'
    assert raw_myst(prose, prose + code) == []
    assert raw_tex(prose) == []


def test_raw_tex_is_found():
    assert raw_tex(r"the map \phi and $$x$$") == ["$$", r"\phi"]
