"""The sliders' JavaScript (``lra_kit/viz/js/sliders.js``) run under Node against the Python oracles.

The numbers chapter 4's and chapter 5's kernel-free sliders show are computed in the page. This test runs
``node --test tests/js/sliders.test.mjs``, which has tests/js_references.py write what
:mod:`lra_kit.viz.momentum` computes for a grid of slider positions — every β of the page's slider and every
β < 0.999 whose window 1/(1 − β) is a half-integer, several γ and queries — then loads the same file the page
inlines and compares.
Without ``node`` the test is skipped with the reason. The built pages are checked by ``tests/browser``.
"""
from __future__ import annotations

import re
from pathlib import Path

from js_references import SENTENCE

from lra_kit.viz import momentum, widgets

ROOT = Path(__file__).resolve().parents[1]


def test_sliders_javascript_equals_the_python_oracles(node_tests):
    """``node --test tests/js/sliders.test.mjs``, run as a user runs it (the ``node_tests`` fixture): its three
    comparisons ran and passed."""
    results = node_tests.results()
    for name in ("the recent window is Python's recent_window at every β of the grid, half-integers included",
                 "chapter 4's read-outs equal reweighting_readouts", "chapter 5's read-outs equal connection_readouts"):
        assert results.get(name) == "ok", (name, results.get(name), node_tests.tail())


def test_widgets_inline_the_shipped_script():
    """What Node ran is what the page gets: the file's text, then one mount call per widget."""
    tokens, phi = momentum.sentence_match_features(SENTENCE)
    page = widgets.momentum_reweighting_html(tokens, momentum.causal_scores(phi, phi))
    source = (ROOT / "lra_kit" / "viz" / "js" / "sliders.js").read_text(encoding="utf-8")
    assert widgets.sliders_script() == source
    assert source in page and re.search(r'LraKitSliders\.mountReweighting\(document\.getElementById\("lrakit-', page)
    assert page.count("<script") == 2  # the JSON data and the script; nothing fetched
