"""Headless Chromium for the browser tests, offline: one way to find it and start it (selenium).

Every host name fails to resolve and every proxied request goes nowhere, so a page that needs the network
shows it. Where selenium, Chromium, chromedriver or the built page is missing, or Chromium cannot start here,
the calling test is skipped with the reason (an environment limit, never a pass) — except in CI
(``CI=true``), where the same reason fails it: CI installs all of them (``make test-browser``), so a missing
one there is a broken setup, and 27 skipped browser tests would let CI pass having checked no page.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = Path(os.environ.get("LRA_KIT_BOOK_HTML", ROOT / "_build" / "html"))
OFFLINE = ("--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>")


def _binary(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
        if found:
            return found
    return None


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(reason: str) -> NoReturn:
    """A browser test cannot run here for ``reason``: fail in CI (``CI=true``), skip with the reason elsewhere."""
    if in_ci():
        pytest.fail(f"{reason} — in CI (CI={os.environ['CI']}) a browser test that cannot run fails", pytrace=False)
    pytest.skip(reason)


def require_page(path: Path) -> Path:
    """``path`` of the built book, or :func:`unavailable` when it is not built."""
    if not path.exists():
        unavailable(f"{path.name} is not built under {HTML} (make test-browser builds the book)")
    return path


def find_browser() -> tuple[str, str]:
    """The Chromium binary and its chromedriver, or :func:`unavailable` naming what is missing."""
    chromium, driver = _binary("chromium", "chromium-browser", "google-chrome"), _binary("chromedriver")
    missing = [name for name, found in (("Chromium", chromium), ("chromedriver", driver)) if found is None]
    if missing:
        unavailable(f"no {' and no '.join(missing)} (Debian: apt-get install chromium chromium-driver)")
    return chromium, driver


def start_chromium(width: int = 1400, height: int = 1000, *, console_log: bool = False,
                   offline: tuple[str, ...] = OFFLINE):
    """A headless Chromium session at ``width`` × ``height``, offline (``offline``: the flags that cut it off;
    a page served on this machine passes its own); :func:`unavailable` where there is none."""
    try:
        from selenium import webdriver
    except ImportError:
        unavailable("selenium is not installed (make test-browser installs it)")
    chromium, driver = find_browser()
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", f"--window-size={width},{height}",
                 *offline):
        options.add_argument(flag)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        session = webdriver.Chrome(service=Service(driver), options=options)
    except Exception as err:  # a browser that cannot start here is an environment limit, not a pass
        unavailable(f"Chromium did not start: {err}")
    session.set_window_size(width, height)
    return session
