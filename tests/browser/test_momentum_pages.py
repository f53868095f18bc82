"""The sliders of chapters 4 and 5, in a real browser (headless Chromium driven by selenium).

Opens the built pages, moves every slider, and asserts that the figure and the read-outs change,
that the read-outs equal the Python functions they stand for
(``lra_kit.viz.momentum.reweighting_readouts``, ``lra_kit.viz.momentum.connection_readouts``), and that the
browser logged no error. ``make test-browser`` builds the book and runs this file; without selenium, a
Chromium, or the built pages it is skipped (in CI, ``CI=true``, it fails).
"""
from __future__ import annotations

import json
import re

import pytest
import torch

from lra_kit.viz import momentum

from browser.chromium import HTML, require_page, start_chromium

PAGES = {"ch4": HTML / "book" / "04_momentum_attention.html", "ch5": HTML / "book" / "05_momentum_connection.html"}


@pytest.fixture(scope="module")
def browser():
    session = start_chromium(1400, 1000, console_log=True)
    yield session
    session.quit()


def _open(browser, page: str):
    path = require_page(PAGES[page])
    browser.get(path.as_uri())
    assert _errors(browser) == [], "the page logged errors while loading"
    return browser


def _widget(browser, kind: str):
    widgets = browser.find_elements("css selector", f".lrakit-{kind}")
    assert len(widgets) == 1, f"expected one {kind} widget on the page, found {len(widgets)}"
    return widgets[0]


def _state(widget) -> tuple[str, dict[str, str]]:
    figure = widget.find_element("css selector", ".lrakit-figure").get_attribute("innerHTML")
    readouts = {c.get_attribute("data-readout"): c.text for c in widget.find_elements("css selector", "[data-readout]")}
    return figure, readouts


def _set(browser, widget, name: str, value: float) -> None:
    """Move a slider the way a reader's drag does: set its value and fire the input event."""
    slider = widget.find_element("css selector", f'input[data-param="{name}"]')
    browser.execute_script(
        "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
        slider, str(value))


def _data(widget) -> dict:
    return json.loads(widget.find_element("css selector", ".lrakit-data").get_attribute("textContent"))


# What the book's theme logs on any page of an offline build, widget or not: sphinx-book-theme declares
# THEBE_JS_URL twice, and the theme switcher starts without a stored mode. MathJax comes with the build
# (sphinx-mathjax-offline) and the widgets fetch nothing, so a file of the build that fails to load is an error;
# only a failed load of a remote address (http, https), which the offline browser cannot reach and no widget asks
# for, is the theme's. Anything else — a widget's script failing or failing to load — fails.
THEME_NOISE = ("THEBE_JS_URL", "invalid theme mode")
REMOTE_LOAD_FAILED = re.compile(r"^https?://\S+ - Failed to load resource")


def _noise(message: str) -> bool:
    return any(noise in message for noise in THEME_NOISE) or REMOTE_LOAD_FAILED.match(message) is not None


def _errors(browser) -> list:
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE" and not _noise(e["message"])]


def test_a_file_of_the_build_that_fails_to_load_is_an_error():
    """Chromium's log lines as it writes them: the theme's remote requests are noise, a file of the build is not."""
    assert _noise("https://fonts.example.org/css - Failed to load resource: net::ERR_NAME_NOT_RESOLVED")
    assert _noise("file:///b/_static/x.js 12:3 Uncaught TypeError: THEBE_JS_URL has already been declared")
    assert not _noise("file:///b/_build/html/_static/mathjax/tex-chtml.js - Failed to load resource: "
                      "net::ERR_FILE_NOT_FOUND")
    assert not _noise("file:///b/book/04_momentum_attention.html 40:12 Uncaught ReferenceError: LraKitSliders")


def _close(shown: str, expected: float, rel: float = 0.01) -> bool:
    return float(shown) == pytest.approx(expected, rel=rel, abs=1e-3)


def test_chapter4_sliders_move_the_figure_and_match_python(browser):
    _open(browser, "ch4")
    widget = _widget(browser, "reweighting")
    figure, readouts = _state(widget)
    assert "<svg" in figure and all(v not in ("", "–") for v in readouts.values())
    data = _data(widget)
    n = len(data["tokens"])
    scores = torch.zeros(n, n, dtype=torch.float64)
    for i, row in enumerate(data["scores"]):
        scores[i, : i + 1] = torch.tensor(row, dtype=torch.float64)
    # each slider, in turn, changes the picture and the numbers it should
    moves = [("beta", 0.5, {"recent_momentum", "mean_lag_momentum", "scale"}),
             ("gamma", 0.5, {"scale"}),
             ("query", 30, {"recent_linear", "mean_lag_linear"})]
    for name, value, changed in moves:
        _set(browser, widget, name, value)
        new_figure, new_readouts = _state(widget)
        assert new_figure != figure, f"moving {name} did not change the figure"
        for key in changed:
            assert new_readouts[key] != readouts[key], f"moving {name} did not change {key}"
        figure, readouts = new_figure, new_readouts
    # γ only rescales: the row-normalised numbers do not move with it
    _set(browser, widget, "gamma", 1.2)
    assert {k: v for k, v in _state(widget)[1].items() if k != "scale"} == \
        {k: v for k, v in readouts.items() if k != "scale"}
    # the page's numbers are eq. 13 as the Python oracle computes it
    for beta, gamma, query in [(0.0, 1.0, n - 1), (0.9, 1.0, n - 1), (0.97, 0.75, 20), (0.3, 1.25, 3)]:
        for name, value in (("beta", beta), ("gamma", gamma), ("query", query)):
            _set(browser, widget, name, value)
        shown = _state(widget)[1]
        expected = momentum.reweighting_readouts(scores, beta=beta, gamma=gamma, query=query)
        for key, value in expected.items():
            assert _close(shown[key], value), (beta, gamma, query, key, shown[key], value)
    assert _errors(browser) == []


def test_chapter5_sliders_move_the_figure_and_match_python(browser):
    _open(browser, "ch5")
    widget = _widget(browser, "connection")
    figure, readouts = _state(widget)
    assert "<svg" in figure and all(v not in ("", "–") for v in readouts.values())
    data = _data(widget)
    lam, e0 = torch.tensor(data["eigenvalues"]), torch.tensor(data["e0"])
    _set(browser, widget, "beta_t", 0.3)
    new_figure, new_readouts = _state(widget)
    assert new_figure != figure and new_readouts["error"] != readouts["error"]
    assert new_readouts["beta_star"] == readouts["beta_star"]  # β* depends on the step only
    _set(browser, widget, "gamma_t", 0.4)
    last_figure, last_readouts = _state(widget)
    assert last_figure != new_figure and last_readouts["beta_star"] != new_readouts["beta_star"]
    for beta, gamma in [(0.0, 1.0), (0.8, 0.99), (0.95, 0.3), (0.5, 0.05)]:
        _set(browser, widget, "beta_t", beta)
        _set(browser, widget, "gamma_t", gamma)
        shown = _state(widget)[1]
        expected = momentum.connection_readouts(lam, e0, beta=beta, gamma=gamma, steps=data["steps"],
                                                delta=data["delta"])
        for key, value in expected.items():
            rel = 0.02 if key.startswith("error") else 0.01  # errors are shown with three digits
            assert _close(shown[key], value, rel), (beta, gamma, key, shown[key], value)
    assert _errors(browser) == []


@pytest.mark.parametrize("page", list(PAGES))
def test_page_is_small_and_self_contained(browser, page):
    _open(browser, page)
    assert PAGES[page].stat().st_size < 600_000, f"{PAGES[page].name} is {PAGES[page].stat().st_size} bytes"
    assert _errors(browser) == []
