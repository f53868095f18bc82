"""Every page of the built book, as a reader sees it: headless Chromium, a 1280 px window, no network.

Fails on what a reader would meet on the page:

* **raw TeX** — math left as source (``\\frac``, ``$$`` …) because the renderer did not load; the renderer
  must come with the build (``_static/mathjax``), never from a CDN;
* **raw MyST** — a cell, directive or role left as text (``{code-cell}``, ``:tags:``, ``{cite:p}`` …), as a
  stray fence before a cell leaves it (browser/raw_source.py);
* **a code block that scrolls sideways** — a cell, its output or an included listing wider than the
  column (hidden cells are opened first, so their code counts too); likewise **a displayed equation**
  wider than the column (the reader would have to scroll it, or it runs under the margin), and an
  **inline formula** that runs past the column's right edge (MathJax does not break inline math);
* **a machine path** — an absolute path of the machine that built the book (``/home/…``, ``/root/…``) in
  any text of the page;
* **a slider read-out that differs from the Python function** — chapter 4's read-outs on the whole β grid
  of its slider (every half-integer window included) against ``lra_kit.viz.momentum.reweighting_readouts``.

``make test-browser`` builds the book and runs this folder; ``.ci/run`` runs it in CI. Without
selenium, a Chromium or the built pages, the tests are skipped with the reason — never passed — and in CI
(``CI=true``) they fail (browser/chromium.py, ``unavailable``).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from lra_kit.viz import momentum

from browser.chromium import HTML, require_page, start_chromium, unavailable
from browser.raw_source import raw_myst, raw_tex

PAGES = sorted([*HTML.glob("book/*.html"), *HTML.glob("notebooks/*.html")])
WIDTH = 1280

# An absolute path of the building machine (a user's home, root's, a scratch or checkout folder).
MACHINE_PATH = re.compile(r"(?<![\w.:/])/(home|root|tmp|Users|work|mnt|opt|var/folders|private)/[\w.-]+")


@pytest.fixture(scope="module")
def browser():
    if not PAGES:
        unavailable(f"the book is not built under {HTML} (make test-browser builds it)")
    session = start_chromium(WIDTH, 1000)
    yield session
    session.quit()


def _load(browser, page: Path) -> None:
    browser.get(page.as_uri())
    # wait for MathJax to finish typesetting, if the page loaded it at all
    browser.set_script_timeout(60)
    browser.execute_async_script("""
        var done = arguments[arguments.length - 1];
        var start = Date.now();
        (function wait() {
          if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
            MathJax.startup.promise.then(function () { done(true); }, function () { done(false); });
          } else if (Date.now() - start > 15000 || document.querySelectorAll('script[src*="mathjax"]').length === 0) {
            done(false);
          } else { setTimeout(wait, 100); }
        })();""")
    # open every hidden cell (sphinx-togglebutton's <details>), so that its code is measured too
    browser.execute_script("document.querySelectorAll('details').forEach(function (d) { d.open = true; });")


# A table (a result table of a page, or a Markdown table in a chapter) wider than the text column, or scrolling
# sideways in the theme's wrapper: the reader would have to scroll to read a row.
WIDE_TABLES = """
    var out = [];
    document.querySelectorAll('main table').forEach(function (t) {
      var column = t.closest('article') || t.closest('main'), box = t.parentElement;
      var width = t.getBoundingClientRect().width;
      if (column.clientWidth > 0 && (width > column.clientWidth + 1 || box.scrollWidth > box.clientWidth + 1))
        out.push(Math.round(width) + ' > ' + column.clientWidth + ': '
                 + t.textContent.replace(/\\s+/g, ' ').trim().slice(0, 60));
    });
    return out;"""


@pytest.mark.parametrize("page", PAGES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_page_reads_offline(browser, page):
    _load(browser, page)
    mathjax = browser.execute_script(
        "return Array.prototype.map.call(document.querySelectorAll('script[src*=\"athjax\"]'), s => s.src);")
    assert all(src.startswith("file:") for src in mathjax), f"math renderer loaded from the network: {mathjax}"
    text = browser.execute_script("""
        var main = document.querySelector('main') || document.body, clone = main.cloneNode(true);
        clone.querySelectorAll('pre, code, script, style, mjx-container, mjx-assistive-mml, .lrakit-data')
             .forEach(function (e) { e.remove(); });
        return clone.textContent;""")
    raw = raw_tex(text)
    assert not raw, f"raw TeX on the page (the math did not render): {raw[:10]}"
    shown = browser.execute_script("""
        var main = document.querySelector('main') || document.body, clone = main.cloneNode(true);
        clone.querySelectorAll('script, style, mjx-container, mjx-assistive-mml, .lrakit-data')
             .forEach(function (e) { e.remove(); });
        return clone.textContent;""")
    myst = raw_myst(text, shown)
    assert not myst, f"raw MyST on the page (a cell, directive or role left as text): {myst[:10]}"
    wide = browser.execute_script("""
        var out = [];
        document.querySelectorAll('div.highlight pre, div.cell_output pre, div.output pre, .literal-block-wrapper pre')
          .forEach(function (e) {
            if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
              out.push(e.scrollWidth + ' > ' + e.clientWidth + ': ' + e.textContent.split('\\n')[0].slice(0, 60));
          });
        return out;""")
    assert not wide, f"{len(wide)} code block(s) scroll sideways at {WIDTH} px: {wide[:5]}"
    wide_tables = browser.execute_script(WIDE_TABLES)
    assert not wide_tables, f"{len(wide_tables)} table(s) wider than the column at {WIDTH} px: {wide_tables[:5]}"
    wide_math = browser.execute_script("""
        var out = [];
        document.querySelectorAll('mjx-container[display="true"]').forEach(function (e) {
          var math = e.querySelector('mjx-math'), label = e.closest('.math') || e.parentElement;
          var width = math ? math.getBoundingClientRect().width : 0;
          if (e.clientWidth > 0 && width > e.clientWidth + 1)
            out.push(Math.round(width) + ' > ' + e.clientWidth + ': ' + (label.id || label.textContent.slice(0, 40)));
        });
        return out;""")
    assert not wide_math, f"{len(wide_math)} equation(s) wider than the column at {WIDTH} px: {wide_math[:5]}"
    # MathJax 3 does not break inline math across lines: a long one runs past the column's right edge
    past_edge = browser.execute_script("""
        var out = [];
        document.querySelectorAll('mjx-container:not([display="true"])').forEach(function (e) {
          var block = e.closest('p, li, dd, td, th, .admonition, article') || e.parentElement;
          var over = e.getBoundingClientRect().right - block.getBoundingClientRect().right;
          if (e.getClientRects().length === 1 && over > 1)
            out.push(Math.round(over) + ' px past: ' + block.textContent.replace(/\\s+/g, ' ').slice(0, 60));
        });
        return out;""")
    assert not past_edge, f"{len(past_edge)} inline formula(s) run past the column at {WIDTH} px: {past_edge[:5]}"
    everything = browser.execute_script("return document.body.innerText;")
    paths = sorted({m.group(0) for m in MACHINE_PATH.finditer(everything)})
    assert not paths, f"a path of the building machine on the page: {paths[:5]}"


def test_math_renders_somewhere(browser):
    """The first check is only meaningful if MathJax ran: at least one chapter has typeset equations."""
    page = require_page(HTML / "book" / "03_causal_rnn.html")
    _load(browser, page)
    assert browser.execute_script("return document.querySelectorAll('mjx-container').length;") > 10


def _slider_grid() -> list[float]:
    """The β slider's positions (0 … 0.99, step 0.01): the half-integer windows on it are β = 0.6 and 0.92."""
    return [round(0.01 * i, 2) for i in range(100)]


def test_chapter4_readouts_on_the_whole_beta_grid(browser):
    page = require_page(HTML / "book" / "04_momentum_attention.html")
    _load(browser, page)
    widget = browser.find_element("css selector", ".lrakit-reweighting")
    data = json.loads(widget.find_element("css selector", ".lrakit-data").get_attribute("textContent"))
    n = len(data["tokens"])
    scores = torch.zeros(n, n, dtype=torch.float64)
    for i, row in enumerate(data["scores"]):
        scores[i, : i + 1] = torch.tensor(row, dtype=torch.float64)
    queries = [n - 1, 20, 3]
    shown = browser.execute_script("""
        var root = arguments[0], betas = arguments[1], queries = arguments[2], out = [];
        function set(name, value) {
          var s = root.querySelector('input[data-param="' + name + '"]');
          s.value = String(value); s.dispatchEvent(new Event('input', {bubbles: true}));
        }
        set('gamma', 1);
        queries.forEach(function (q) {
          set('query', q);
          betas.forEach(function (b) {
            set('beta', b);
            var r = {beta: b, query: q};
            root.querySelectorAll('[data-readout]').forEach(function (c) { r[c.dataset.readout] = c.textContent; });
            out.push(r);
          });
        });
        return out;""", widget, _slider_grid(), queries)
    assert len(shown) == len(_slider_grid()) * len(queries)
    for r in shown:
        beta = float(r["beta"])
        expected = momentum.reweighting_readouts(scores, beta=beta, gamma=1.0, query=int(r["query"]))
        assert int(r["window"]) == int(expected["window"]), (beta, r["query"], r["window"], expected["window"])
        for key in ("recent_linear", "recent_momentum"):
            assert float(r[key]) == pytest.approx(expected[key], abs=1e-3 + 1e-9), (beta, r["query"], key)
