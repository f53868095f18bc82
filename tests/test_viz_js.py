"""The sliders' JavaScript (``lra_kit/viz/js/sliders.js``) run under Node against the Python oracles.

The numbers chapter 4's and chapter 5's kernel-free sliders show are computed in the page. This test
writes what :mod:`lra_kit.viz.momentum` computes for a grid of slider positions — every β of the page's
slider and every β < 0.999 whose window 1/(1 − β) is a half-integer, several γ and queries — and runs
``node --test tests/js/sliders.test.mjs``, which loads the same file the page inlines and compares.
Without ``node`` the test is skipped with the reason. The built pages are checked by ``tests/browser``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from lra_kit.viz import momentum, widgets

ROOT = Path(__file__).resolve().parents[1]
JS_TEST = ROOT / "tests" / "js" / "sliders.test.mjs"
SENTENCE = "the model reads the sentence and then reads the sentence again"


def _half_integer_betas(high: float = 0.999) -> list[float]:
    """Every β < high at which the window 1/(1 − β) is a half-integer k + ½: β = (2k − 1)/(2k + 1)."""
    return [(2 * k - 1) / (2 * k + 1) for k in range(1, 2000) if (2 * k - 1) / (2 * k + 1) < high]


def _reference() -> dict:
    slider = [round(0.01 * i, 2) for i in range(100)]  # the page's β slider: 0 … 0.99 in steps of 0.01
    betas = slider + _half_integer_betas()
    tokens, phi = momentum.sentence_match_features(SENTENCE)
    scores = momentum.causal_scores(phi, phi)
    n = len(tokens)
    rows = widgets.reweighting_data(tokens, scores)["scores"]  # the rows as the page embeds them (rounded)
    embedded = torch.zeros(n, n, dtype=torch.float64)
    for i, row in enumerate(rows):
        embedded[i, : i + 1] = torch.tensor(row, dtype=torch.float64)
    cases = [{"beta": b, "gamma": g, "query": q,
              "expected": momentum.reweighting_readouts(embedded, beta=b, gamma=g, query=q)}
             for b in slider[::7] + [0.6, 0.92, 0.99] + _half_integer_betas()[:6]
             for g in (0.25, 1.0, 1.25) for q in (0, 1, 2, 7, 20, n - 1)]
    lam = torch.linspace(0.02, 1.0, 6, dtype=torch.float64)
    e0 = torch.linspace(1.0, -0.5, 6, dtype=torch.float64)
    data = {"eigenvalues": lam.tolist(), "e0": e0.tolist(), "steps": 60, "delta": 1e-3}
    connection = [{"beta": b, "gamma": g,
                   "expected": momentum.connection_readouts(lam, e0, beta=b, gamma=g, steps=60, delta=1e-3)}
                  for b in (0.0, 0.3, 0.8, 0.95) for g in (0.05, 0.4, 0.99)]
    return {"rtol": 1e-9, "window": [[b, momentum.recent_window(b)] for b in betas],
            "reweighting": {"scores": rows, "cases": cases}, "connection": {"data": data, "cases": connection}}


def test_sliders_javascript_equals_the_python_oracles(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the sliders' JavaScript is not run (Node 20: apt-get install nodejs)")
    reference = tmp_path / "reference.json"
    reference.write_text(json.dumps(_reference()))
    env = dict(os.environ, LRA_SLIDERS_REFERENCE=str(reference))
    proc = subprocess.run([node, "--test", str(JS_TEST)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    passed = int(re.search(r"^# pass (\d+)", proc.stdout, re.M).group(1))
    skipped = int(re.search(r"^# skipped (\d+)", proc.stdout, re.M).group(1))
    assert skipped == 0 and passed == 3, proc.stdout[-3000:]


def test_widgets_inline_the_shipped_script():
    """What Node ran is what the page gets: the file's text, then one mount call per widget."""
    tokens, phi = momentum.sentence_match_features(SENTENCE)
    page = widgets.momentum_reweighting_html(tokens, momentum.causal_scores(phi, phi))
    source = (ROOT / "lra_kit" / "viz" / "js" / "sliders.js").read_text(encoding="utf-8")
    assert widgets.sliders_script() == source
    assert source in page and re.search(r'LraKitSliders\.mountReweighting\(document\.getElementById\("lrakit-', page)
    assert page.count("<script") == 2  # the JSON data and the script; nothing fetched
