"""What the book's page "Generating digits in the browser" shows: the generator widget and the recorded numbers.

:func:`demo_html` is the widget (``_static/web/demo.mjs`` builds it in the page from the exported models); the
numbers recorded elsewhere — :mod:`lra_kit.web.measure` in headless Chromium and lra_kit's PyTorch generation of
the same models, and the Python benchmark of the papers' model size (``results/bench/generation-cpu.json``) —
are embedded in it as data, so the reader's own measurements appear beside them.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "_static" / "web"
MODELS = STATIC / "models"
RECORD = ROOT / "results" / "web" / "generation-chromium.json"
BENCH = ROOT / "results" / "bench" / "generation-cpu.json"
# panel = (model file stem, runtime method); the bench's method name for the same way of generating
PANELS = (("mnist-linear", "recurrent"), ("mnist-softmax", "kv-cache"), ("mnist-softmax", "recompute"))
BENCH_METHOD = {"recurrent": "linear", "kv-cache": "softmax-kv-cache", "recompute": "softmax"}
METHOD_LABEL = {"recurrent": "RNN state", "kv-cache": "key/value cache", "recompute": "re-run on the prefix"}


def available_panels(models: Path = MODELS) -> list[tuple[str, str]]:
    """The panels whose model is exported in ``models`` (a momentum model is shown too when it is there)."""
    panels = [p for p in PANELS if (models / f"{p[0]}.mjs").exists()]
    if (models / "mnist-momentum.mjs").exists():
        panels.insert(1, ("mnist-momentum", "recurrent"))
    return panels


def read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def bench_rows(bench: dict | None) -> dict:
    """The Python benchmark's MNIST batch-1 rows as ms per pixel, keyed like the panels' methods."""
    out = {}
    for row in (bench or {}).get("metrics", {}).get("rows", []):
        if row["task"] == "mnist" and row["batch"] == 1:
            out[row["method"]] = 1000 * row["seconds_per_image"] / row["pixels"]
    return out


def recorded_data(panels, record: dict | None, bench: dict | None) -> dict:
    """``{"chromium": {panel: {...}}, "python": {panel: {...}}, "note": ...}`` for the widget's comparison table."""
    chromium, python = {}, {}
    rows = {f"{r['model']}:{r['method']}": r for r in (record or {}).get("metrics", {}).get("rows", [])}
    bench_ms = bench_rows(bench)
    for name, method in panels:
        key = f"{name}:{method}"
        if key in rows:
            chromium[key] = {"ms_per_pixel": rows[key]["ms_per_pixel"], "ratio": rows[key]["last100_over_first100"]}
        attention = name.split("-", 1)[1]
        bench_key = BENCH_METHOD[method] if attention != "momentum" else "momentum"
        if bench_key in bench_ms:
            python[key] = {"ms_per_pixel": bench_ms[bench_key], "label": "8 layers, d 256 (the papers' size), batch 1"}
    note = None
    if record:
        note = (f"Recorded: {record['browser']['name']} {record['browser']['version']} (headless) on "
                f"{record['hardware']['cpu']}, {record['hardware']['cores']} cores, {record['date'][:10]}. "
                "The Python benchmark times the papers' model size (lra_kit.bench.generation), not these models: "
                "compare its ratios, not its milliseconds.")
    return {"chromium": chromium, "python": python, "note": note}


def demo_html(static: str = "../_static/web", models: Path = MODELS, record: dict | None = None,
              bench: dict | None = None) -> str:
    """The widget: the scripts it needs and its element (``static`` is the URL of ``_static/web`` from the page)."""
    panels = available_panels(models)
    record = read_json(RECORD) if record is None else record
    bench = read_json(BENCH) if bench is None else bench
    data = html.escape(json.dumps(recorded_data(panels, record, bench)), quote=True)
    names = sorted({name for name, _ in panels})
    scripts = [f"{static}/models/mnist-test-digits.mjs", *(f"{static}/models/{n}.mjs" for n in names),
               f"{static}/runtime.mjs", f"{static}/demo.mjs"]
    tags = "\n".join(f'<script src="{s}"></script>' for s in scripts)
    spec = ",".join(f"{n}:{m}" for n, m in panels)
    return f'<div class="lrakit-webgen" data-panels="{spec}" data-recorded="{data}"></div>\n{tags}\n'


def manifests(models: Path = MODELS) -> dict[str, dict]:
    """The exported models' manifests, by name."""
    return {p.stem: json.loads(p.read_text()) for p in sorted(models.glob("mnist-*.json")) if "digits" not in p.stem}


__all__ = ["PANELS", "available_panels", "bench_rows", "demo_html", "manifests", "recorded_data"]


def _fmt(value, digits=2) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def median_ratio(row: dict) -> float | None:
    """The median of the last 100 pixels' milliseconds over that of the first 100: unlike the means, it does not
    move when the operating system preempts the browser for a few pixels (a shared machine)."""
    series = row.get("ms_series")
    if not series or len(series) < 200:
        return None
    first, last = sorted(series[:100]), sorted(series[-100:])
    med = lambda xs: (xs[49] + xs[50]) / 2  # noqa: E731
    return med(last) / med(first) if med(first) > 0 else None


def result_markdown(record: dict | None = None, bench: dict | None = None) -> str:
    """The page's opening table: each panel's recorded ms/pixel, last-100 ÷ first-100, seconds per digit and
    bytes kept; the same models in lra_kit's PyTorch; and each method's time over linear's beside the papers'
    (Katharopoulos et al. appendix Table 5 (a), CPU) and the Python benchmark's (papers' model size)."""
    from lra_kit.paper_numbers import KATHAROPOULOS_TABLE5_MNIST as T5

    record = read_json(RECORD) if record is None else record
    bench = read_json(BENCH) if bench is None else bench
    if not record:
        return "*Not yet measured in a browser: run `python -m lra_kit.web.measure`.*"
    rows = record["metrics"]["rows"]
    python = {(r["model"], r["method"]): r for r in record["metrics"]["python_same_models"]}
    base = next((r for r in rows if r["method"] == "recurrent" and r["model"] == "mnist-linear"), None)
    py_base = python.get(("mnist-linear", "recurrent"))
    paper_row = {"recurrent": "Linear (ours)", "kv-cache": "Stateful-softmax", "recompute": "Softmax"}
    bench_ms = bench_rows(bench)
    bench_base = bench_ms.get("linear")
    lines = ["| model | ms/pixel (Chromium) | last 100 ÷ first 100: means | medians | s per digit "
             "| state kept at the end | ms/pixel (PyTorch, same model) | time ÷ linear: Chromium | PyTorch "
             "| Python bench, papers' size | Katharopoulos T5 (a) CPU |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        attention, method = r["model"].split("-", 1)[1], r["method"]
        py = python.get((r["model"], method))
        paper = T5.value(paper_row[method], "Seconds (CPU)") / T5.value("Linear (ours)", "Seconds (CPU)") \
            if attention != "momentum" else None
        bkey = "momentum" if attention == "momentum" else BENCH_METHOD[method]
        bench_ratio = bench_ms[bkey] / bench_base if bkey in bench_ms and bench_base else None
        lines.append(
            f"| {attention}, {METHOD_LABEL[method]} | {_fmt(r['ms_per_pixel'], 3)} "
            f"| {_fmt(r['last100_over_first100'])} | {_fmt(median_ratio(r))} "
            f"| {_fmt(r['wall_seconds'])} | {r['bytes_kept']:,} B "
            f"| {_fmt(py['ms_per_pixel'], 3) if py else '–'} "
            f"| {_fmt(r['ms_per_pixel'] / base['ms_per_pixel'], 1) if base else '–'} "
            f"| {_fmt(py['ms_per_pixel'] / py_base['ms_per_pixel'], 1) if py and py_base else '–'} "
            f"| {_fmt(bench_ratio, 1)} | {_fmt(paper, 1)} |")
    return "\n".join(lines)


def claims(record: dict | None = None) -> list[tuple[str, bool | None, str]]:
    """(claim, holds, what was measured) for the page's verdicts; ``holds`` is None when not measured."""
    record = read_json(RECORD) if record is None else record
    rows = {(r["model"], r["method"]): r for r in (record or {}).get("metrics", {}).get("rows", [])}
    lin, rec = rows.get(("mnist-linear", "recurrent")), rows.get(("mnist-softmax", "recompute"))
    kv = rows.get(("mnist-softmax", "kv-cache"))
    out = []
    out.append(("the RNN's cost per pixel is flat: last 100 ÷ first 100 ≤ 1.3",
                None if lin is None else lin["last100_over_first100"] <= 1.3,
                "not measured" if lin is None else f"{lin['last100_over_first100']:.2f}"))
    out.append(("softmax re-run on the prefix grows far faster: its ratio is over 3× the RNN's",
                None if rec is None or lin is None else rec["last100_over_first100"] > 3 * lin["last100_over_first100"],
                "not measured" if rec is None else f"{rec['last100_over_first100']:.1f}"))
    out.append(("the key/value cache grows with the image, the RNN's state does not",
                None if kv is None or lin is None else kv["bytes_kept"] > 10 * lin["bytes_kept"],
                "not measured" if kv is None or lin is None
                else f"{kv['bytes_kept']:,} B against {lin['bytes_kept']:,} B"))
    out.append(("a whole digit from the linear model in ≤ 5 s",
                None if lin is None else lin["wall_seconds"] <= 5.0,
                "not measured" if lin is None else f"{lin['wall_seconds']:.2f} s"))
    return out


__all__ += ["claims", "median_ratio", "result_markdown"]
