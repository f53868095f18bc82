"""The LSH slider of the baselines chapter, in a real browser (headless Chromium driven by selenium).

Opens the built page, moves the rounds and buckets sliders, and asserts that the LSH heat map and the read-outs
change, that softmax's heat map does not, that the read-outs equal :func:`lra_kit.viz.lsh.lsh_readouts` on the
data the page embeds, and that the browser logged no error. ``make test-browser`` builds the book and runs this
file; without selenium, a Chromium, or the built page it is skipped (in CI, ``CI=true``, it fails).
"""
from __future__ import annotations

import json

import pytest

from lra_kit.viz import lsh

from browser.chromium import HTML, require_page, start_chromium
from browser.test_momentum_pages import _errors

PAGE = HTML / "book" / "09_baselines.html"
SHOWN = {"keys_seen": 2, "mass_seen": 3, "total_variation": 3, "max_abs": 3}  # the decimals the page prints


@pytest.fixture(scope="module")
def browser():
    session = start_chromium(1400, 1000, console_log=True)
    yield session
    session.quit()


def _widget(browser):
    browser.get(require_page(PAGE).as_uri())
    assert _errors(browser) == [], "the page logged errors while loading"
    widgets = browser.find_elements("css selector", ".lrakit-lsh")
    assert len(widgets) == 1, f"expected one LSH widget on the page, found {len(widgets)}"
    return widgets[0]


def _state(widget) -> tuple[str, str, dict[str, str]]:
    softmax = widget.find_element("css selector", ".heat-softmax").get_attribute("innerHTML")
    lsh_map = widget.find_element("css selector", ".heat-lsh").get_attribute("innerHTML")
    readouts = {c.get_attribute("data-readout"): c.text for c in widget.find_elements("css selector", "[data-readout]")}
    return softmax, lsh_map, readouts


def _set(browser, widget, name: str, value: int) -> None:
    """Move a slider the way a reader's drag does: set its value and fire the input event."""
    slider = widget.find_element("css selector", f'input[data-param="{name}"]')
    browser.execute_script(
        "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}));",
        slider, str(value))


def _matches(shown: dict[str, str], data: dict, rounds: int, buckets: int) -> bool:
    """The page's read-outs are lsh_readouts on the embedded data, to the digits shown (JavaScript's toFixed
    rounds a tie such as 36.125 up, Python's format to even: either side of a tie is accepted)."""
    qk, rotations = lsh.embedded(data)
    numbers = lsh.lsh_readouts(qk, rotations, rounds=rounds, n_buckets=buckets, chunk_size=data["chunk_size"])
    assert set(shown) == set(numbers)
    return all(abs(float(shown[key]) - value) <= 0.5 * 10 ** -SHOWN[key] + 1e-9 for key, value in numbers.items())


def test_lsh_sliders_move_the_heat_map_and_match_python(browser):
    widget = _widget(browser)
    data = json.loads(widget.find_element("css selector", ".lrakit-data").get_attribute("textContent"))
    softmax, heat, readouts = _state(widget)
    assert "<rect" in softmax and "<rect" in heat and all(v not in ("", "–") for v in readouts.values())
    shown_rounds = int(widget.find_element("css selector", 'input[data-param="rounds"]').get_attribute("value"))
    shown_buckets = int(widget.find_element("css selector", 'input[data-param="buckets"]').get_attribute("value"))
    assert _matches(readouts, data, shown_rounds, shown_buckets)
    for name, value in (("rounds", 4), ("rounds", 8), ("buckets", 16), ("buckets", 2)):
        _set(browser, widget, name, value)
        new_softmax, new_heat, new_readouts = _state(widget)
        assert new_softmax == softmax, f"moving {name} changed softmax's matrix"
        assert new_heat != heat, f"moving {name} to {value} did not change the LSH heat map"
        assert new_readouts != readouts, f"moving {name} to {value} did not change the read-outs"
        heat, readouts = new_heat, new_readouts
    for rounds, buckets in ((1, 8), (4, 8), (8, 8), (8, 32), (3, 2)):
        _set(browser, widget, "rounds", rounds)
        _set(browser, widget, "buckets", buckets)
        assert _matches(_state(widget)[2], data, rounds, buckets), (rounds, buckets, _state(widget)[2])
    assert _errors(browser) == []


def test_page_is_small_and_self_contained(browser):
    _widget(browser)
    assert PAGE.stat().st_size < 600_000, f"{PAGE.name} is {PAGE.stat().st_size} bytes"
    assert _errors(browser) == []
