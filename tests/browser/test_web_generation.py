"""The page "Generating digits in your browser" in headless Chromium (selenium), opened from disk, offline.

Presses *generate* and *complete* and checks that each fast panel (the linear RNN, softmax with its
key/value cache) draws a full 28×28 image that is not one uniform value, that every panel recorded a
milliseconds-per-pixel series (the re-run-on-the-prefix panel needs minutes for a whole digit, so it is
stopped once the others are done) and a finished panel its end ÷ start while the stopped one reports none,
that *complete* kept the test digit's top half, that temperature 0 is greedy decoding (the page says so when
every pixel came out black), and that the page logged no error. ``make test-browser`` builds the book and
runs this file; without selenium, a Chromium or the built page it is skipped with the reason (in CI,
``CI=true``, it fails).
"""
from __future__ import annotations

import time

import pytest

from browser.chromium import HTML, require_page, start_chromium

PAGE = HTML / "notebooks" / "web_generation.html"
FAST = ("recurrent", "kv-cache")


@pytest.fixture(scope="module")
def browser():
    require_page(PAGE)
    session = start_chromium(1400, 1000, console_log=True)
    session.get(PAGE.as_uri())
    yield session
    session.quit()


def _errors(browser) -> list[str]:
    """Severe console messages from this page's scripts (the theme's own are another test's business)."""
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"
            and any(mark in e["message"] for mark in ("_static/web/", "LraWeb", "lrakit", "LRA_WEB"))]


def _press_and_wait(browser, button: str, timeout: float = 300.0, temperature: str = "1") -> dict:
    """Press a button, wait for the fast panels to finish, stop the rest; return the run's record."""
    widget = browser.find_element("css selector", ".lrakit-webgen")
    browser.execute_script(f"document.querySelector('.lrakit-temperature').value = '{temperature}';")
    before = browser.execute_script("return window.LraWebDemo.runs.length")
    widget.find_element("css selector", f"button.lrakit-{button}").click()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = {p.get_attribute("data-method") + ":" + p.get_attribute("data-model"): p.get_attribute("data-state")
                  for p in widget.find_elements("css selector", ".lrakit-panel")}
        if all(state == "done" for key, state in states.items() if key.split(":")[0] in FAST):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"the fast panels did not finish within {timeout} s: {states}")
    time.sleep(0.5)  # let the slow panel record a few more pixels
    stop = widget.find_element("css selector", "button.lrakit-stop")
    if stop.is_enabled():
        stop.click()
    while browser.execute_script("return window.LraWebDemo.runs.length") == before:
        assert time.monotonic() < deadline + 60, "the run did not stop"
        time.sleep(0.2)
    return browser.execute_script("return window.LraWebDemo.runs[window.LraWebDemo.runs.length - 1]")


def test_widget_loads_with_both_models(browser):
    widget = browser.find_element("css selector", ".lrakit-webgen")
    assert widget.get_attribute("data-state") == "ready", widget.text
    models = {p.get_attribute("data-model") for p in widget.find_elements("css selector", ".lrakit-panel")}
    assert {"mnist-linear", "mnist-softmax"} <= models
    assert _errors(browser) == []


@pytest.mark.parametrize("button", ["generate", "complete"])
def test_button_draws_full_images_and_records_the_cost(browser, button):
    run = _press_and_wait(browser, button)
    assert run["mode"] == button
    start = 392 if button == "complete" else 1
    digits = browser.execute_script("return globalThis.LRA_WEB_DIGITS")
    chosen = digits["pixels"][int(browser.find_element("css selector", ".lrakit-digit").get_attribute("value"))]
    for r in run["runs"]:
        assert r["ran"], f"{r['name']} ({r['method']}) did not run"
        assert len(r["ms"]) >= 1 and all(ms >= 0 for ms in r["ms"]), f"{r['name']}: no ms-per-pixel series"
        assert len(r["bytes"]) == len(r["ms"])
        if r["method"] in FAST:
            assert len(r["pixels"]) == 784, f"{r['name']} ({r['method']}) drew {len(r['pixels'])} pixels"
            assert len(r["ms"]) == 784 - start
            assert len(set(r["pixels"][start:])) > 1, f"{r['name']}: the generated pixels are one uniform value"
            if button == "complete":
                assert r["pixels"][:392] == chosen[:392], "complete must keep the test digit's top half"
            assert r["finished"] and r["ratio"] > 0, f"{r['name']} ({r['method']}): a finished digit has end ÷ start"
        else:  # stopped before its last pixel: its last pixels are not the digit's, so no end ÷ start
            assert not r["finished"] and r["ratio"] is None, f"{r['name']} ({r['method']}) was stopped"
    # the canvases hold the images: some pixel of each fast panel's canvas differs from its first
    for panel in browser.find_elements("css selector", ".lrakit-panel"):
        if panel.get_attribute("data-method") not in FAST:
            continue
        values = browser.execute_script(
            "const c = arguments[0].querySelector('canvas'); const d = c.getContext('2d')"
            ".getImageData(0, 0, c.width, c.height).data; const s = new Set();"
            "for (let i = 0; i < d.length; i += 4) s.add(d[i]); return s.size;", panel)
        assert values > 2, "the canvas shows no image"
    table = browser.find_element("css selector", ".lrakit-compare").text
    assert "ms/pixel here" in table
    assert _errors(browser) == []
    readouts = [p.find_element("css selector", ".lrakit-readout").text
                for p in browser.find_elements("css selector", ".lrakit-panel")
                if p.get_attribute("data-method") not in FAST]
    assert all("stopped: no end ÷ start" in text for text in readouts), readouts


def test_temperature_zero_is_greedy_decoding(browser):
    """Greedy decoding of these models from the black first pixel is black at every step (the page says so and
    the page's own cell counts it with lra_kit's generate(greedy=True)); the readout names it."""
    run = _press_and_wait(browser, "generate", temperature="0")
    assert run["temperature"] is None  # the widget's greedy: no temperature, the argmax
    for r in run["runs"]:
        if r["method"] in FAST:
            assert set(r["pixels"][1:]) == {0}, f"{r['name']}: greedy decoding drew {set(r['pixels'][1:])}"
    for panel in browser.find_elements("css selector", ".lrakit-panel"):
        assert "greedy: black was the most likely value of every pixel" in \
            panel.find_element("css selector", ".lrakit-readout").text
    assert _errors(browser) == []
