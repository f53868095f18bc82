"""Sphinx extension: every executed chapter downloadable as a Jupyter notebook (.ipynb).

Jupyter Book 1.x's download menu offers a MyST chapter as .md and .pdf only. MyST-NB already
writes each executed chapter, outputs included, to ``<build>/jupyter_execute/<docname>.ipynb``;
this extension copies it next to the chapter's HTML page (``<build>/html/<docname>.ipynb``) when the
build finishes and puts a "Download this chapter as a notebook" link at the top of the page.
Nothing is committed: the notebooks exist only in the build output.

It also sets up the kernels that execute the chapters, before the first one starts:

* their PyTorch threads: :func:`lra_kit.threads.kernel_environment` exports ``LRA_KIT_THREADS`` (default 1) as
  ``OMP_NUM_THREADS``, so that ``jupyter-book build .`` run by hand uses what ``make book`` uses;
* their transport: the kernels run over local TCP, and ipykernel warns on each start ("Kernel is running over TCP
  without encryption") unless the kernel manager provisions CurveZMQ keys. jupyter_client does that only when
  asked (``KernelManager.transport_encryption``, default ``"disabled"``), and neither MyST-NB nor nbclient passes
  a setting through, so :func:`encrypt_kernels` makes ``"auto"`` the default where libzmq has CURVE: the kernel
  (whose kernelspec declares ``supported_encryption: curve``) then runs encrypted, and has nothing to warn about.

Enabled by ``sphinx: extra_extensions: [lra_kit.viz.notebooks]`` in ``_config.yml``.
"""
from __future__ import annotations

import os
import shutil

LINK = ('<p class="chapter-notebook-download"><a href="{name}" download>'
        "Download this chapter as a notebook (.ipynb), with its outputs</a></p>\n")


def executed_notebook(app, docname: str) -> str:
    """Where MyST-NB left the executed notebook of ``docname`` (it may not exist)."""
    return os.path.join(os.path.dirname(app.outdir), "jupyter_execute", docname + ".ipynb")


def add_link(app, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Prepend the download link to chapters that are notebooks (code cells were executed)."""
    if doctree is None or "body" not in context or not os.path.exists(executed_notebook(app, pagename)):
        return
    context["body"] = LINK.format(name=os.path.basename(pagename) + ".ipynb") + context["body"]


def copy_notebooks(app, exception) -> None:
    """Copy each executed chapter notebook beside its HTML page."""
    if exception is not None or app.builder.format != "html":
        return
    for docname in app.env.found_docs:
        src = executed_notebook(app, docname)
        if os.path.exists(src):
            dst = os.path.join(app.outdir, docname + ".ipynb")
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(src, dst)


def encrypt_kernels() -> bool:
    """Make jupyter_client's kernel managers provision CurveZMQ keys by default (``transport_encryption="auto"``:
    for kernels whose kernelspec declares support). Returns whether it could (libzmq built with CURVE)."""
    import zmq
    from jupyter_client.manager import KernelManager

    if not zmq.has("curve"):
        return False
    KernelManager.transport_encryption.default_value = "auto"  # AsyncKernelManager, nbclient's, inherits it
    return True


def setup(app) -> dict:
    from lra_kit.threads import kernel_environment

    kernel_environment()
    encrypt_kernels()
    app.connect("html-page-context", add_link)
    app.connect("build-finished", copy_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
