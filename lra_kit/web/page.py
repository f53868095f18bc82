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

from lra_kit.viz.results import results_dir, results_hint

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "_static" / "web"
MODELS = STATIC / "models"
RECORD = ROOT / "results" / "web" / "generation-chromium.json"  # where lra_kit.web.measure writes by default
BENCH = ROOT / "results" / "bench" / "generation-cpu.json"
# A digit's cost is compared in blocks of BLOCK pixels: the fastest of its last ENDS blocks over the fastest of its
# first ENDS (block_ratio; the widget computes the same for the reader's run, LraWeb.blockRatio in runtime.mjs).
BLOCK, ENDS = 50, 3
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


def recorded(name: str) -> dict | None:
    """A record of the committed ``results/`` (``"web/generation-chromium.json"``, ``"bench/generation-cpu.json"``),
    found by :func:`lra_kit.viz.results.results_dir`; None where it is not there (e.g. outside a clone)."""
    folder = results_dir()
    return None if folder is None else read_json(folder / name)


def block_times(ms: list[float], block: int = BLOCK) -> list[float]:
    """The milliseconds of ``ms`` (one number per pixel) summed over blocks of ``block`` consecutive pixels, full
    blocks only. The page stamps its clock once between pixels, so a block's sum is one interval of the clock,
    timed to a tick or two (0.1 ms in Chromium) where a single pixel of the RNN is a tick or three long."""
    if not (isinstance(block, int) and block >= 1):
        raise ValueError(f"block must be an integer >= 1, got {block!r}")
    return [sum(ms[i:i + block]) for i in range(0, len(ms) - block + 1, block)]


def fastest_blocks(runs: list[list[float]], block: int = BLOCK) -> list[float]:
    """Block by block (:func:`block_times`), the fastest of several runs of the same digit (``runs``: one series
    of per-pixel milliseconds each). An interruption by the operating system only ever adds time, and on a
    shared machine it rarely hits the same block in every run."""
    if not runs:
        raise ValueError("runs must hold at least one series")
    times = [block_times(ms, block) for ms in runs]
    return [min(t[j] for t in times) for j in range(min(len(t) for t in times))]


def ratio_of_blocks(blocks: list[float], ends: int = ENDS) -> float | None:
    """The fastest of the last ``ends`` ``blocks`` over the fastest of the first ``ends``; None with fewer than
    ``2 * ends`` blocks."""
    if not (isinstance(ends, int) and ends >= 1):
        raise ValueError(f"ends must be an integer >= 1, got {ends!r}")
    if len(blocks) < 2 * ends:
        return None
    first, last = min(blocks[:ends]), min(blocks[-ends:])
    return last / first if first > 0 else None


def block_ratio(ms: list[float], block: int = BLOCK, ends: int = ENDS, finished: bool = True) -> float | None:
    """How one run's cost per pixel changed from the start of the digit to its end (:func:`ratio_of_blocks` of
    its :func:`block_times`): what the widget shows for the reader's run (``LraWeb.blockRatio``). None for a run
    that was stopped (``finished`` false: its last pixels are not the digit's last)."""
    blocks = block_times(ms, block)
    return ratio_of_blocks(blocks, ends) if finished else None


def end_over_start(row: dict) -> float | None:
    """A recorded panel's (a row of ``metrics.rows``) end ÷ start: :func:`ratio_of_blocks` of the
    :func:`fastest_blocks` of its runs (``ms_runs``; a record of one run has ``ms_series``). None for a stopped
    run or a row without its series."""
    runs = row.get("ms_runs") or ([row["ms_series"]] if row.get("ms_series") else [])
    if not runs or not row.get("finished", True):
        return None
    return ratio_of_blocks(fastest_blocks(runs))


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
            chromium[key] = {"ms_per_pixel": rows[key]["ms_per_pixel"], "ratio": end_over_start(rows[key])}
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
    record = recorded("web/generation-chromium.json") if record is None else record
    bench = recorded("bench/generation-cpu.json") if bench is None else bench
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


def _fmt(value, digits=2) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _label(row: dict) -> str:
    return f"{row['model'].split('-', 1)[1]}, {METHOD_LABEL[row['method']]}"


def result_markdown(record: dict | None = None, bench: dict | None = None) -> str:
    """The page's opening tables. First each panel in headless Chromium: ms/pixel, its end ÷ start
    (:func:`end_over_start`), seconds for the digit and the bytes of state kept at the end. Then each method's
    time over linear's in each runtime: Chromium, lra_kit's PyTorch on the same models (with its ms/pixel), the
    Python benchmark of the papers' model size, and the papers' own (Katharopoulos et al. appendix Table 5 (a),
    CPU)."""
    from lra_kit.paper_numbers import KATHAROPOULOS_TABLE5_MNIST as T5

    if record is None and results_dir() is None:
        return "*" + results_hint("The browser's timings (results/web/generation-chromium.json)") + "*"
    record = recorded("web/generation-chromium.json") if record is None else record
    bench = recorded("bench/generation-cpu.json") if bench is None else bench
    if not record:
        return "*Not yet measured in a browser: run `python -m lra_kit.web.measure`.*"
    rows = record["metrics"]["rows"]
    python = {(r["model"], r["method"]): r for r in record["metrics"]["python_same_models"]}
    base = next((r for r in rows if r["method"] == "recurrent" and r["model"] == "mnist-linear"), None)
    py_base = python.get(("mnist-linear", "recurrent"))
    paper_row = {"recurrent": "Linear (ours)", "kv-cache": "Stateful-softmax", "recompute": "Softmax"}
    bench_ms = bench_rows(bench)
    bench_base = bench_ms.get("linear")
    browser = ["| model | runs | ms/pixel | end ÷ start | s per digit | state kept |", "|---|---|---|---|---|---|"]
    ratios = ["| model | PyTorch ms/pixel | Chromium | PyTorch | benchmark, papers' size | paper, T5 (a) CPU |",
              "|---|---|---|---|---|---|"]
    for r in rows:
        attention, method = r["model"].split("-", 1)[1], r["method"]
        py = python.get((r["model"], method))
        paper = T5.value(paper_row[method], "Seconds (CPU)") / T5.value("Linear (ours)", "Seconds (CPU)") \
            if attention != "momentum" else None
        bkey = "momentum" if attention == "momentum" else BENCH_METHOD[method]
        bench_ratio = bench_ms[bkey] / bench_base if bkey in bench_ms and bench_base else None
        browser.append(f"| {_label(r)} | {len(r.get('ms_runs') or [1])} | {_fmt(r['ms_per_pixel'], 3)} "
                       f"| {_fmt(end_over_start(r))} "
                       f"| {_fmt(r['wall_seconds'])} | {r['bytes_kept'] / 1024:,.1f} KiB |")
        ratios.append(f"| {_label(r)} | {_fmt(py['ms_per_pixel'], 3) if py else '–'} "
                      f"| {_fmt(r['ms_per_pixel'] / base['ms_per_pixel'], 1) if base else '–'} "
                      f"| {_fmt(py['ms_per_pixel'] / py_base['ms_per_pixel'], 1) if py and py_base else '–'} "
                      f"| {_fmt(bench_ratio, 1)} | {_fmt(paper, 1)} |")
    return ("**In headless Chromium**: each panel generated the same digit *runs* times; milliseconds per pixel "
            f"(the mean over the runs); *end ÷ start*, the digit in blocks of {BLOCK} pixels, each block the fastest "
            f"of the runs, and the fastest of the last {ENDS} blocks over the fastest of the first {ENDS}; seconds "
            "for the digit (the median run); the bytes of attention state kept at the end\n\n" + "\n".join(browser)
            + "\n\n**Time ÷ linear**: each method's milliseconds per pixel over the linear RNN's, in each runtime\n\n"
            + "\n".join(ratios))


FLAT = 1.3  # the RNN's end ÷ start at most this: its cost per pixel is flat


def claims(record: dict | None = None) -> list[tuple[str, bool | None, str]]:
    """(claim, holds, what was measured) for the page's verdicts; ``holds`` is None when not measured. Growth is
    judged by :func:`end_over_start`, which the timer's 0.1 ms tick cannot decide (blocks of 50 pixels)."""
    record = recorded("web/generation-chromium.json") if record is None else record
    rows = {(r["model"], r["method"]): r for r in (record or {}).get("metrics", {}).get("rows", [])}
    lin, rec = rows.get(("mnist-linear", "recurrent")), rows.get(("mnist-softmax", "recompute"))
    kv = rows.get(("mnist-softmax", "kv-cache"))
    r_lin = None if lin is None else end_over_start(lin)
    r_rec = None if rec is None else end_over_start(rec)
    out = []
    out.append((f"the RNN's cost per pixel is flat: end ÷ start ≤ {FLAT}",
                None if r_lin is None else r_lin <= FLAT, _fmt(r_lin) if r_lin is not None else "not measured"))
    out.append(("softmax re-run on the prefix grows far faster: its end ÷ start is over 3× the RNN's",
                None if r_rec is None or r_lin is None else r_rec > 3 * r_lin,
                "not measured" if r_rec is None else _fmt(r_rec, 1)))
    out.append(("the key/value cache grows with the image, the RNN's state does not",
                None if kv is None or lin is None else kv["bytes_kept"] > 10 * lin["bytes_kept"],
                "not measured" if kv is None or lin is None
                else f"{kv['bytes_kept']:,} B against {lin['bytes_kept']:,} B"))
    out.append(("a whole digit from the linear model in ≤ 5 s",
                None if lin is None else lin["wall_seconds"] <= 5.0,
                "not measured" if lin is None else f"{lin['wall_seconds']:.2f} s"))
    return out


__all__ = ["BLOCK", "ENDS", "FLAT", "PANELS", "available_panels", "bench_rows", "block_ratio", "block_times", "claims",
           "demo_html", "end_over_start", "fastest_blocks", "manifests", "ratio_of_blocks", "recorded",
           "recorded_data", "result_markdown"]
