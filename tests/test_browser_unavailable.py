"""The browser tests (tests/browser) cannot pass vacuously in CI, and ``make chromium`` installs a missing driver.

Where selenium, Chromium, chromedriver or the built book is missing, a browser test skips with the reason on a
reader's machine and fails under ``CI=true`` (``browser.chromium.unavailable``): CI installs all of them, and
a run in which every browser test skipped once passed CI having opened no page (Chromium present, no
chromedriver). ``make test-browser`` runs ``make chromium``, which installs chromium and chromium-driver when
either is missing.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.outcomes import Failed, Skipped

from browser import chromium

ROOT = Path(__file__).resolve().parents[1]


def _outcome(call, *args) -> tuple[str, str]:
    """("failed" | "skipped" | "returned", message) of ``call(*args)``; a skip is caught, so that a skip where a
    failure is wanted fails this test instead of skipping it."""
    try:
        call(*args)
    except Failed as err:
        return "failed", str(err)
    except Skipped as err:
        return "skipped", str(err)
    return "returned", ""


def _only_chromium(*names: str) -> str | None:
    """``chromium._binary`` on a machine that has Chromium but no chromedriver."""
    return "/usr/bin/chromium" if "chromium" in names else None


@pytest.mark.parametrize("ci", ["true", "1"])
def test_in_ci_a_missing_driver_fails(monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(chromium, "_binary", _only_chromium)
    outcome, message = _outcome(chromium.find_browser)
    assert outcome == "failed" and "no chromedriver" in message, (outcome, message)


def test_elsewhere_a_missing_driver_skips_with_the_reason(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(chromium, "_binary", _only_chromium)
    outcome, message = _outcome(chromium.find_browser)
    assert outcome == "skipped" and "no chromedriver" in message, (outcome, message)
    assert "apt-get install chromium chromium-driver" in message


def test_in_ci_no_browser_at_all_fails_naming_both(monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(chromium, "_binary", lambda *names: None)
    outcome, message = _outcome(chromium.find_browser)
    assert outcome == "failed" and "no Chromium and no chromedriver" in message, (outcome, message)


def test_in_ci_missing_selenium_or_page_fails(monkeypatch, tmp_path):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setitem(sys.modules, "selenium", None)  # import selenium raises ImportError
    outcome, message = _outcome(chromium.start_chromium)
    assert outcome == "failed" and "selenium is not installed" in message, (outcome, message)
    outcome, message = _outcome(chromium.require_page, tmp_path / "missing.html")
    assert outcome == "failed" and "missing.html is not built" in message, (outcome, message)
    monkeypatch.setenv("CI", "false")
    outcome, message = _outcome(chromium.require_page, tmp_path / "missing.html")
    assert outcome == "skipped" and "missing.html is not built" in message, (outcome, message)


def test_a_found_browser_is_returned(monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(chromium, "_binary", lambda *names: f"/usr/bin/{names[0]}")
    assert chromium.find_browser() == ("/usr/bin/chromium", "/usr/bin/chromedriver")


def _make_chromium(tmp_path: Path, **variables: str) -> list[str]:
    """Run ``make chromium`` with a fake apt-get that logs its arguments; the lines it logged."""
    log = tmp_path / "apt.log"
    fake = tmp_path / "apt-get"
    fake.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    fake.chmod(0o755)
    args = [f"{k}={v}" for k, v in {"APT_GET": str(fake), "SUDO": "", **variables}.items()]
    proc = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "chromium", *args],
                          capture_output=True, text=True, timeout=60, env=dict(os.environ, MAKEFLAGS=""))
    assert proc.returncode == 0, proc.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_make_chromium_installs_the_driver_when_only_it_is_missing(tmp_path):
    present = sys.executable  # a command that exists, standing in for the browser
    assert _make_chromium(tmp_path, CHROMIUM=present, CHROMEDRIVER="lra-kit-no-such-chromedriver") == [
        "update -qq", "install -y -qq chromium chromium-driver"]


def test_make_chromium_installs_nothing_when_both_are_there(tmp_path):
    assert _make_chromium(tmp_path, CHROMIUM=sys.executable, CHROMEDRIVER=sys.executable) == []
    assert _make_chromium(tmp_path, CHROMIUM="lra-kit-no-such-chromium", CHROMEDRIVER=sys.executable) == [
        "update -qq", "install -y -qq chromium chromium-driver"]


def test_every_browser_test_goes_through_unavailable():
    """No browser test skips on its own (``pytest.skip``, ``importorskip``, a skip mark): each missing piece goes
    through ``unavailable``, so that CI fails on it."""
    own = []
    for path in sorted((ROOT / "tests" / "browser").glob("*.py")):
        text = path.read_text()
        if path.name == "chromium.py":
            text = text.replace("    pytest.skip(reason)\n", "", 1)  # unavailable's own skip, outside CI
        own += [f"{path.name}: {word}" for word in ("pytest.skip(", "importorskip(", "mark.skip") if word in text]
    assert not own, own
