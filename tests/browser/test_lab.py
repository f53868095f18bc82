"""``python -m lra_kit.viz.lab`` as a reader meets it: JupyterLab opens a chapter as a notebook and its MyST Markdown
reads as text (roles such as ``{cite:t}`` rendered by jupyterlab-myst, not shown raw), in headless Chromium.

The versions that load together are pinned in pyproject.toml's ``book`` extra: an extension built for another
JupyterLab is listed as installed yet fails in the browser, which only this test sees. The chapter is a copy in a
temporary folder, so that nothing JupyterLab saves can touch the repository. Without selenium, a Chromium,
JupyterLab, jupytext or jupyterlab-myst the test is skipped with the reason (in CI, ``CI=true``, it fails:
browser/chromium.py, ``unavailable``).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from browser.chromium import start_chromium, unavailable

ROOT = Path(__file__).resolve().parents[2]
PAGE = "notebooks/copy_task.md"  # opens with {cite:t} roles
RAW_ROLES = ("{cite", "{ref}", "{numref}", "{eq}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The lab command serving a copy of the book's table of contents, introduction and ``PAGE``."""
    for module in ("jupyterlab", "jupytext", "jupyterlab_myst"):
        if importlib.util.find_spec(module) is None:
            unavailable(f"{module} is not installed (pip install -e '.[book]')")
    root = tmp_path_factory.mktemp("lab")
    for name in ("_toc.yml", "book/intro.md", PAGE):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, root / name)
    port = _free_port()
    env = dict(os.environ, JUPYTERLAB_WORKSPACES_DIR=str(root / "workspaces"), JUPYTER_RUNTIME_DIR=str(root / "rt"))
    args = [sys.executable, "-m", "lra_kit.viz.lab", "--no-browser", f"--port={port}", "--ServerApp.token=",
            "--ServerApp.password=", "--LabApp.expose_app_in_browser=True",
            *(["--ServerApp.allow_root=True"] if hasattr(os, "geteuid") and os.geteuid() == 0 else [])]
    proc = subprocess.Popen(args, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the lab command exited {proc.returncode}: {proc.stdout.read()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.5)
    else:
        proc.terminate()
        pytest.fail("JupyterLab did not start listening within 120 s")
    yield root, f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)
    # the server stopped with the command that started it, rather than living on as an orphan
    deadline = time.monotonic() + 30
    while _listening(port) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _listening(port), "JupyterLab still serves after the lab command was terminated"


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _chromium():
    # offline, except for the lab this test serves on 127.0.0.1
    return start_chromium(1280, 1000, console_log=True,
                          offline=("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",))


def test_a_chapter_opens_as_a_notebook_with_its_myst_rendered(lab):
    root, url = lab
    before = (root / PAGE).read_text()
    session = _chromium()
    try:
        session.get(f"{url}/lab/tree/{PAGE}")
        deadline, texts = time.monotonic() + 180, []
        while time.monotonic() < deadline:
            texts = session.execute_script(
                "return Array.from(document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown, "
                ".jp-MarkdownCell .myst')).map(e => e.innerText)")
            if len(texts) >= 3 and any(t.strip() for t in texts):
                break
            time.sleep(1)
        factory = session.execute_script(
            f"return window.jupyterapp.docRegistry.defaultWidgetFactory('{PAGE}').name")
        failed = [e["message"][:300] for e in session.get_log("browser")
                  if "Failed to create module" in e["message"] or "Failed to set default viewer" in e["message"]]
    finally:
        session.quit()
    assert factory == "Jupytext Notebook", f"{PAGE} opens with {factory!r}, not as a notebook"
    assert not failed, f"a JupyterLab extension did not load (pinned versions?): {failed}"
    assert len(texts) >= 3, f"the notebook's Markdown cells did not render: {texts[:2]}"
    raw = [t[:200] for t in texts if any(role in t for role in RAW_ROLES)]
    assert not raw, f"MyST roles shown as raw text (jupyterlab-myst not active?): {raw}"
    assert "katharopoulos2020transformers" in "\n".join(texts)  # the role's target, rendered
    assert (root / PAGE).read_text() == before, "JupyterLab rewrote the chapter it opened (autosave)"
