"""``python -m lra_kit.viz.lab``: open the book's chapters in JupyterLab as notebooks, in one command.

The chapters are MyST text notebooks (``book/*.md``, ``notebooks/*.md``). With jupytext installed (it comes
with ``lra_kit[book]``, as does JupyterLab) JupyterLab can open them as notebooks; this command makes that
the default for Markdown files *of this session only* — the setting is written to a settings folder inside
the repository (``.jupyter-lab-settings/``, git-ignored by its own ``.gitignore``), never to your own
JupyterLab settings — and starts JupyterLab at the book's introduction. Their Markdown cells are MyST:
roles such as ``{ref}`` and ``{cite:t}``, directives, labelled equations. JupyterLab renders them with the
``jupyterlab-myst`` extension (also in ``lra_kit[book]``, which pins a JupyterLab it loads in); without it a
reader would see the roles as raw text, so the command refuses to start and says what to install. Run it
from a clone, in the environment that ``make book`` creates::

    .venv/bin/python -m lra_kit.viz.lab            # or: make book first, if .venv does not exist yet

Cells run against the installed ``lra_kit``; the momentum chapters' live ipywidgets sliders recompute
on every move there, on the PyTorch threads ``LRA_KIT_THREADS`` names (default 1: lra_kit.threads).
Extra arguments are passed to ``jupyter lab`` (e.g. ``--no-browser``).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from lra_kit.threads import kernel_environment

VIEWERS = {"markdown": "Jupytext Notebook", "myst": "Jupytext Notebook"}
MYST = "jupyterlab-myst"  # the lab extension that renders MyST Markdown (roles, directives) in notebook cells


def settings_dir(root: Path) -> Path:
    """A repository-local JupyterLab user-settings folder: Markdown opens as a notebook, and nothing is saved
    unless the reader saves it (JupyterLab's autosave would rewrite a chapter's jupytext header, its kernel
    name and its blank lines, as soon as it is opened)."""
    folder = root / ".jupyter-lab-settings"
    target = folder / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"defaultViewers": VIEWERS, "autosave": False}, indent=2))
    (folder / ".gitignore").write_text("*\n")
    return folder


def myst_status(lab: str) -> str | None:
    """``None`` if JupyterLab (the ``jupyter-lab`` at ``lab``) loads :data:`MYST`; else what is wrong, in words.

    ``jupyter labextension list`` marks each extension OK, or X where it was built for another JupyterLab (it
    then does not load: jupyterlab-myst 2.x needs a JupyterLab older than 4.6)."""
    jupyter = Path(lab).with_name("jupyter")
    try:
        listing = subprocess.run([str(jupyter) if jupyter.exists() else "jupyter", "labextension", "list"],
                                 capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"could not list JupyterLab's extensions ({err})"
    text = re.sub(r"\x1b\[[0-9;]*m", "", listing.stdout + listing.stderr)  # its colours
    line = next((ln for ln in text.splitlines() if ln.strip().startswith(MYST + " ")), None)
    if line is None:
        return f"{MYST} is not installed"
    if " OK" not in line:
        return f"{MYST} is installed but this JupyterLab does not load it: {' '.join(line.split())}"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path.cwd()
    while not (root / "_toc.yml").exists():
        if root.parent == root:
            print("lra_kit.viz.lab: run it from the lra_kit repository (no _toc.yml here or above)", file=sys.stderr)
            return 2
        root = root.parent
    lab = shutil.which("jupyter-lab", path=str(Path(sys.executable).parent)) or shutil.which("jupyter-lab")
    try:
        import jupytext  # noqa: F401
    except ImportError:
        lab = None
    if lab is None:
        print("lra_kit.viz.lab: JupyterLab and jupytext are not installed here; "
              f"run: {sys.executable} -m pip install -e '.[book]'", file=sys.stderr)
        return 2
    problem = myst_status(lab)
    if problem is not None:
        print(f"lra_kit.viz.lab: {problem}; the chapters' MyST Markdown would read as raw text. "
              f"Run: {sys.executable} -m pip install -e '.[book]'", file=sys.stderr)
        return 2
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings_dir(root)))
    kernel_environment(env)  # the kernels' PyTorch threads: LRA_KIT_THREADS, default 1 (lra_kit.threads)
    args = [lab, f"--notebook-dir={root}", "book/intro.md", *argv]
    if os.name == "posix":  # the lab becomes this process: a signal to it (Ctrl-C, a terminate) reaches the server,
        os.chdir(root)      # which as a child would outlive it
        os.execve(lab, args, env)
    return subprocess.call(args, cwd=root, env=env)


if __name__ == "__main__":
    raise SystemExit(main())
