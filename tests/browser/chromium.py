"""Headless Chromium for the browser tests, offline: one way to find it and start it (selenium).

Every host name fails to resolve and every proxied request goes nowhere, so a page that needs the network
shows it. Where no Chromium/chromedriver is installed, or it cannot start here, the calling test is skipped
with the reason (an environment limit, never a pass).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

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


def start_chromium(width: int = 1400, height: int = 1000, *, console_log: bool = False):
    """A headless Chromium session at ``width`` × ``height``, offline; skips the test where there is none."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (make test-browser)")
    chromium, driver = _binary("chromium", "chromium-browser", "google-chrome"), _binary("chromedriver")
    if chromium is None or driver is None:
        pytest.skip("no Chromium and chromedriver (Debian: apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", f"--window-size={width},{height}",
                 *OFFLINE):
        options.add_argument(flag)
    if console_log:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        session = webdriver.Chrome(service=Service(driver), options=options)
    except Exception as err:  # a browser that cannot start here is an environment limit, not a pass
        pytest.skip(f"Chromium did not start: {err}")
    session.set_window_size(width, height)
    return session
