"""The book's helpers: figures, trained-model figures, diagrams, kernel-free sliders, notebook tooling.

One module per kind of thing, so that a chapter imports only what it draws and matplotlib is imported
only where a figure is drawn:

- :mod:`lra_kit.viz.figures` — matplotlib figures: small multiples, slider frames, live ``ipywidgets``
  sliders, the momentum-weight plots of chapter 4;
- :mod:`lra_kit.viz.diagrams` — the book's diagrams, drawn from code as SVG;
- :mod:`lra_kit.viz.trained` — small trained copy-task models and what their heads attend to;
- :mod:`lra_kit.viz.momentum` — the float64 numbers behind chapters 4 and 5's sliders (no plotting);
- :mod:`lra_kit.viz.widgets` — those sliders as self-contained HTML; their JavaScript is ``js/sliders.js``;
- :mod:`lra_kit.viz.lsh` — the baselines chapter's LSH slider: its float64 numbers and its HTML (``js/lsh.js``);
  :mod:`lra_kit.viz.lsh_figures` draws that chapter's figures;
- :mod:`lra_kit.viz.results` — where a page finds the committed runs, and the log–log fit it reports;
- :mod:`lra_kit.viz.notebooks` — a Sphinx extension: every chapter downloadable as ``.ipynb``;
- :mod:`lra_kit.viz.lab` — ``python -m lra_kit.viz.lab``: the chapters as notebooks in JupyterLab.

Nothing is imported here: ``import lra_kit.viz.lab`` must not pay for torch or matplotlib.
"""
