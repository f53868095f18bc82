"""The parts of ``README.md`` and ``docs/budget.md`` that report recorded runs, generated from ``results/``.

    lra-kit report            # rewrite the generated parts of README.md and docs/budget.md
    lra-kit report --check    # exit 1, naming each part, where a file differs from what results/ gives now

Each generated part sits between two HTML comments, ``<!-- NAME:start ... -->`` and ``<!-- NAME:end -->``;
everything outside them is prose and is left alone. The numbers and verdicts come from the functions the book's
reproduction pages use on the same records — :func:`lra_kit.results.seed_records` and
:func:`lra_kit.results.spread`, the claims of :mod:`lra_kit.claims`, the web page's :func:`lra_kit.web.page.claims`
— and the papers' numbers from :mod:`lra_kit.paper_numbers`, so the README cannot say other than the pages.

The README is a front door: its table has one row per paper's table or figure (the LRA one per task) and three
short cells, the page and what it reproduces, the headline numbers (the mean over the seeds, their count where
several), and the claims that hold or do not hold by name, the others counted. The ranges, the papers' numbers,
the runs of record and the reading of every verdict live on the page each row links to. An attention added to
:data:`LRA_NAMES` (or a variant to the copy and MNIST names) gets its number in its rows at the next report. The
papers' baselines (Reformer as lsh-X, Linformer: :func:`baselines`) join a row, and docs/budget.md's costs, once
some record of them exists, and are named nowhere before that: they are not planned on every task.

A run recorded later (another seed, another attention, a control) appears at the next ``lra-kit report``.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path

from lra_kit.errors import LraKitError

ROOT = Path(__file__).resolve().parents[1]  # the repository, for an editable install or a clone


class ReportError(LraKitError, ValueError):
    """A file whose generated part cannot be found (a marker missing, twice, or out of order)."""


# ------------------------------------------------------------------------------------------------------------
# Markers

def markers(name: str) -> tuple[str, str]:
    """The two comments around the generated part ``name``."""
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name or ""):
        raise ValueError(f"name must be lower-case letters, digits and dashes, got {name!r}")
    return (f"<!-- {name}:start: generated from results/ by `make readme` (lra_kit/reports.py); "
            "edit that, not this part -->", f"<!-- {name}:end -->")


def _span(text: str, name: str, where: str) -> tuple[int, int, int, int]:
    """Where ``name``'s start marker line begins and ends, and where its end marker line begins and ends."""
    end = markers(name)[1]
    starts = list(re.finditer(rf"^<!-- {re.escape(name)}:start\b.*-->$", text, re.M))
    stops = list(re.finditer(rf"^{re.escape(end)}$", text, re.M))
    if len(starts) != 1 or len(stops) != 1 or stops[0].start() < starts[0].end():
        raise ReportError(f"{where}: needs exactly one line '<!-- {name}:start ... -->' followed by one line "
                          f"'{end}' (found {len(starts)} and {len(stops)})")
    return starts[0].start(), starts[0].end(), stops[0].start(), stops[0].end()


def replace_between(text: str, name: str, body: str, where: str = "text") -> str:
    """``text`` with the part between ``name``'s markers replaced by ``body``; ``where`` names the file in errors."""
    begin, _, stop, _ = _span(text, name, where)
    return text[:begin] + markers(name)[0] + "\n" + body.strip("\n") + "\n" + text[stop:]


def part(text: str, name: str, where: str = "text") -> str:
    """The generated part ``name`` of ``text`` as it stands, without its markers."""
    _, after_start, stop, _ = _span(text, name, where)
    return text[after_start:stop].strip("\n")


# ------------------------------------------------------------------------------------------------------------
# Verdicts, shortened

def short_verdict(verdict: str) -> str:
    """One of :mod:`lra_kit.claims`' verdicts as a few words: ``holds``, ``does not hold``, ``not decided``,
    ``no order to test`` or ``waits``, with ``(one seed)`` where a side has one seed."""
    if not isinstance(verdict, str):
        raise TypeError(f"verdict must be a str, got {type(verdict).__name__}")
    text = verdict.replace("**", "")
    for start, word in (("holds", "holds"), ("does not hold", "does not hold"), ("not decided", "not decided"),
                        ("no order to test", "no order to test"), ("waits for", "waits")):
        if text.startswith(start):
            return (word + (" (one seed)" if "(one seed" in text else "")
                    + (" (at the lr drop)" if "the learning-rate drop sets" in text else ""))
    raise ValueError(f"verdict {verdict!r} is none of lra_kit.claims' verdicts")


def _claim_name(claim: str) -> str:
    """A claim without its parentheses (the paper's numbers, the level) and without "converges"."""
    return re.sub(r" \([^()]*\)", "", claim).replace(" converges ", " ")


def _sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, never in scientific notation (0.376, 3.35, 155)."""
    if not math.isfinite(x) or x == 0:
        return f"{x:g}"
    return f"{x:,.{max(0, digits - 1 - math.floor(math.log10(abs(x))))}f}"


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}"


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _page(name: str, title: str) -> str:
    return f"[{title}](notebooks/{name}.md)"


# ------------------------------------------------------------------------------------------------------------
# The README's rows. Labels are the pages' (and lra_kit.claims'); each maps to the name of its records.

def _copy_names() -> dict[str, str]:
    from lra_kit.claims import LINEAR, MOMENTUM_VARIANTS, SOFTMAX

    return {SOFTMAX: "softmax", LINEAR: "linear",
            **dict(zip(MOMENTUM_VARIANTS, ("momentum", "momentum+momentum", "momentum+adaptive"), strict=True))}


MNIST_NAMES = {"softmax": "softmax", "linear": "linear", "momentum": "momentum",
               "adaptive momentum": "momentum+adaptive"}
LRA_NAMES = {"softmax": "softmax", "linear": "linear", "performer": "performer", "momentum": "momentum",
             "adaptive momentum": "momentum+adaptive", "luna": "luna"}
COPY_BUDGET, MNIST_BUDGET = "cpu-20k", "cpu-12k"


def baselines(experiment: str) -> tuple[str, ...]:
    """The papers' baselines of ``experiment`` ("copy", "mnist" or "lra"), by label, which is also the name in
    their records' file names (``lsh-4``): :mod:`lra_kit.claims`' ``LSH_COPY``, ``LSH_MNIST``, ``LRA_BASELINES``."""
    from lra_kit.claims import LRA_BASELINES, LSH_COPY, LSH_MNIST

    table = {"copy": LSH_COPY, "mnist": tuple(LSH_MNIST), "lra": LRA_BASELINES}
    if experiment not in table:
        raise ValueError(f"experiment must be one of {sorted(table)}, got {experiment!r}")
    return table[experiment]


def recorded_runs(folder: Path, task: str, preset: str, names: dict[str, str],
                  extra: tuple[str, ...] = ()) -> dict[str, list[dict]]:
    """Every recorded seed of ``task`` at ``preset`` under ``folder``, by label: each of ``names`` (label → the
    name in its records' file names; empty where none is recorded), then each of ``extra`` (labels that are
    their records' names, the baselines) only where some seed of it is recorded."""
    from lra_kit.results import seed_records

    runs = {label: seed_records(str(folder), f"{task}-{name}-{preset}") for label, name in names.items()}
    for label in extra:
        if found := seed_records(str(folder), f"{task}-{label}-{preset}"):
            runs[label] = found
    return runs
# The LRA budgets of record, longest first: each task's runs of record are at the first that trains it.
LRA_BUDGETS, LRA_EARLY = ("lra-cpu-2h", "lra-cpu-long"), "lra-cpu"
LRA_TITLES = {"text": "Text", "listops": "ListOps", "image": "Image", "pathfinder": "Pathfinder"}


def _mean(spread_: dict, digits: int) -> str:
    """A :func:`lra_kit.results.spread`'s mean and, where more than one seed, their count: ``0.0184 (3)``."""
    return f"{spread_['mean']:.{digits}f}" + (f" ({spread_['n']})" if spread_["n"] > 1 else "")


def _verdicts(items: list[tuple[str, str]]) -> str:
    """``(claim, short verdict)`` pairs as one short cell: the claims that hold or do not hold by name, the others
    counted (``holds: a, b; does not hold: c; not decided: 2``); the page gives each in full."""
    named: dict[str, list[str]] = {}
    counted: dict[str, int] = {}
    for claim, word in items:
        if word.startswith(("holds", "does not hold")):
            named.setdefault(word, []).append(claim)
        else:
            key = "waiting for runs" if word == "waits" else word
            counted[key] = counted.get(key, 0) + 1
    parts = [f"{word}: {', '.join(claims)}" for word, claims in named.items()]
    parts += [f"{word}: {n}" for word, n in counted.items()]
    return "; ".join(parts) if parts else "none measured yet"


def _row(title: str, page: tuple[str, str], result: str, verdicts: str) -> list[str]:
    return [f"{_page(*page)}: {title}", result, verdicts]


def copy_row(results: Path) -> list[str]:
    """Katharopoulos Fig. 2, Nguyen Fig. 1: the mean test loss per variant at ``cpu-20k`` and the claims of
    :func:`lra_kit.claims.measure_copy` ("faster": in steps to an early and a late loss level)."""
    from lra_kit.claims import measure_copy

    runs = recorded_runs(results / "copy", "copy", COPY_BUDGET, _copy_names(), baselines("copy"))
    have = {label: rs for label, rs in runs.items() if rs}
    title = "Katharopoulos Fig. 2, Nguyen Fig. 1"
    if not have:
        return _row(title, ("copy_task", "copy task"), "not recorded yet", "—")
    m = measure_copy(have)  # the baselines' runs too: "softmax converges fastest" is over every recorded curve
    loss = ", ".join(f"{label} {_mean(m['loss'][label], 4)}" for label in have if label not in baselines("copy"))
    return _row(title, ("copy_task", "copy task"), f"test loss, `{COPY_BUDGET}`: {loss}",
                _verdicts(_copy_items(m["claims"])))


def _copy_items(claims: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """The copy task's ``(claim, measured, verdict)`` rows as ``(claim, short verdict)``, a claim decided alike at
    both loss levels once, with its levels in parentheses."""
    levels: dict[tuple[str, str], list[str]] = {}  # (claim, verdict): the loss levels it has that verdict at
    for claim, _, verdict in claims:
        found = re.search(r"\((early|late)\b", claim)
        key = (_claim_name(claim).split(". ", 1)[-1], short_verdict(verdict))
        levels.setdefault(key, []).extend([found.group(1)] if found else [])
    return [(claim + (f" ({', '.join(at)})" if at else ""), word) for (claim, word), at in levels.items()]


def mnist_row(results: Path) -> list[str]:
    """Katharopoulos Table 1, Nguyen Table 2: the mean test bits/dim per variant at ``cpu-12k`` and the verdicts
    of :func:`lra_kit.claims.mnist_claims`."""
    from lra_kit.claims import mnist_claims
    from lra_kit.results import spread

    runs = recorded_runs(results / "mnist", "mnist", MNIST_BUDGET, MNIST_NAMES, baselines("mnist"))
    have = {label: rs for label, rs in runs.items() if rs}
    title = "Katharopoulos Table 1, Nguyen Table 2 (MNIST bits/dim)"
    if not have:
        return _row(title, ("image_generation", "image generation"), "not recorded yet", "—")
    ours = ", ".join(f"{label} {_mean(spread(r['metrics']['test']['bits_per_dim'] for r in rs), 3)}"
                     for label, rs in have.items() if label not in baselines("mnist"))
    items = [(_claim_name(c), short_verdict(v)) for c, _, v in mnist_claims(have)]
    return _row(title, ("image_generation", "image generation"), f"test bits/dim, `{MNIST_BUDGET}`: {ours}",
                _verdicts(items))


def _generation_over_linear(record: dict, column: str, task: str = "mnist") -> str:
    """Seconds per image at batch 1 ÷ linear attention's on ``task``, with appendix Table 5's ratio from ``column``
    ("Seconds (CPU)" or "Seconds (GPU)") in parentheses beside each method the paper has."""
    from lra_kit.bench.generation import PAPER_ROW
    from lra_kit.paper_numbers import KATHAROPOULOS_TABLE5_CIFAR10, KATHAROPOULOS_TABLE5_MNIST

    label = {"softmax": "softmax", "softmax-kv-cache": "key/value cache", "momentum": "momentum", "lsh-1": "LSH-1",
             "lsh-4": "LSH-4"}
    table = {"mnist": KATHAROPOULOS_TABLE5_MNIST, "cifar10": KATHAROPOULOS_TABLE5_CIFAR10}[task]
    base = table.value(PAPER_ROW["linear"], column)
    cells = []
    for r in (r for r in record["metrics"]["rows"] if r["task"] == task and r["batch"] == 1):
        if r["method"] not in label:
            continue
        bound = {"none": "", "lower bound": "≥ ", "estimate": "~"}[r["extrapolation"]]
        paper = (f" ({_sig(table.value(PAPER_ROW[r['method']], column) / base)})" if r["method"] in PAPER_ROW
                 else "")
        cells.append(f"{label[r['method']]} {bound}{_sig(r['time_over_linear'])}{paper}")
    return ", ".join(cells)


def _generation_caveat(record: dict) -> str:
    """What a GPU generation record's ratios are, where it was made before generation was timed apart from its set-up
    (no ``config.timing``: :func:`lra_kit.bench.generation_tables.timed_apart`): the 2026-11-28 H200 record, whose
    softmax ran eager and the others as CUDA graphs. A record made since divides eager by eager."""
    from lra_kit.bench.generation_tables import timed_apart

    if record.get("device", "cpu") == "cpu" or timed_apart(record):
        return ""
    return " (before the fused step; softmax eager, the rest graph replay)"


def generation_bench_row(results: Path) -> list[str]:
    """Katharopoulos appendix Table 5: seconds per generated MNIST image over linear attention's, at batch 1, on one
    CPU thread (``results/bench/generation-cpu.json``) and on each GPU recorded (``generation-<gpu>.json``), the
    paper's ratio in parentheses. CIFAR-10 and the largest batches are on the page."""
    bench = results / "bench"
    records = [("CPU", _read(bench / "generation-cpu.json"), "Seconds (CPU)")]
    records += [(_read(p)["device"].removeprefix("NVIDIA "), _read(p), "Seconds (GPU)")
                for p in (sorted(bench.glob("generation-*.json")) if bench.is_dir() else [])
                if p.name != "generation-cpu.json"]
    have = [(where, record, column) for where, record, column in records if record is not None]
    title = "Katharopoulos appendix Table 5 (seconds per image)"
    if not have:
        return _row(title, ("image_generation", "image generation"), "not recorded yet: `lra-kit bench generation`",
                    "—")
    text = "; ".join(f"{where}{_generation_caveat(record)}: {_generation_over_linear(record, column)}"
                     for where, record, column in have)
    return _row(title, ("image_generation", "image generation"),
                f"MNIST, time per image ÷ linear's at batch 1 (paper): {text}", "numbers only; the page compares")


def web_row(results: Path) -> list[str]:
    """Katharopoulos §3.4 in the browser: the recorded Chromium run (``results/web/generation-chromium.json``)
    and the verdicts of :func:`lra_kit.web.page.claims`."""
    from lra_kit.web import page

    record = _read(results / "web" / "generation-chromium.json")
    title = "Katharopoulos §3.4 (generation as an RNN, in the browser)"
    where = ("web_generation", "generation in the browser")
    if record is None:
        return _row(title, where, "not measured yet: `python -m lra_kit.web.measure`", "—")
    rows = {r["method"]: r for r in record["metrics"]["rows"]}
    label = {"recurrent": "linear as an RNN", "kv-cache": "softmax with a key/value cache",
             "recompute": "softmax re-run"}
    cells = ", ".join(f"{label[m]} {_sig(r['ms_per_pixel'])}" for m, r in rows.items() if m in label)
    checks = page.claims(record)
    held = sum(1 for _, holds, _ in checks if holds)
    return _row(title, where, f"ms per pixel in Chromium: {cells}", f"the page's checks: {held} of {len(checks)} hold")


def lra_tasks_of_record() -> list[str]:
    """The LRA tasks (``lra_kit.data.LRA_TASKS``, in its order) that some preset of :data:`LRA_BUDGETS` trains."""
    from lra_kit.data import LRA_TASKS
    from lra_kit.train.configs import PRESETS

    return [task for task in LRA_TASKS if any(task in PRESETS[preset]["tasks"] for preset in LRA_BUDGETS)]


def lra_budget(task: str) -> str:
    """The preset of record of an LRA ``task``: the first of :data:`LRA_BUDGETS` that trains it."""
    from lra_kit.train.configs import PRESETS

    for preset in LRA_BUDGETS:
        if task in PRESETS[preset]["tasks"]:
            return preset
    raise ValueError(f"task {task!r} is trained by none of {LRA_BUDGETS}")


def lra_runs(results: Path, task: str, preset: str) -> dict[str, list[dict]]:
    """Every recorded seed of ``task`` at ``preset``, by attention label: those of :data:`LRA_NAMES`, then the
    baselines (``lsh-2``, ``linformer``) where recorded."""
    return recorded_runs(results / "lra", task, preset, LRA_NAMES, baselines("lra"))


def lra_row(results: Path, task: str) -> list[str]:
    """One LRA task at its preset of record: the mean test accuracy per attention (seeds in parentheses where
    more than one), and the orders of the papers' tables measured by :func:`lra_kit.claims.lra_claims`."""
    from lra_kit.claims import lra_claims
    from lra_kit.results import spread

    preset = lra_budget(task)
    runs = lra_runs(results, task, preset)
    have = {label: rs for label, rs in runs.items() if rs}
    title = f"Nguyen Table 4, Luna Table 1 ({LRA_TITLES[task]})"
    if not have:
        return _row(title, ("lra", "Long Range Arena"), f"`{preset}`: not recorded yet", "—")
    cells = ", ".join(f"{label} {_mean(spread(100 * r['metrics']['test']['accuracy'] for r in rs), 1)}"
                      for label, rs in have.items() if label in LRA_NAMES)
    missing = [label for label in LRA_NAMES if not runs[label]]
    text = f"test accuracy %, `{preset}`: {cells}" + (f"; not recorded: {', '.join(missing)}" if missing else "")
    items = [(_claim_name(c), short_verdict(v)) for c, _, v in lra_claims(task, have)]
    return _row(title, ("lra", "Long Range Arena"), text, _verdicts(items))


def _merge_baselines(items: list[tuple[str, str]], labels: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(claim, short verdict)`` pairs with the claims that differ only in the one baseline they name, and have the
    same verdict, as one that names them all: "linear reaches a lower loss than lsh-1/lsh-8" (a claim named twice,
    by two papers' tables, once)."""
    pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, labels)) + r")(?![\w-])")
    groups: dict[tuple[str, str], list[str]] = {}
    for claim, word in items:
        found = pattern.findall(claim)
        key = (pattern.sub("\0", claim) if len(found) == 1 else claim, word)
        names = groups.setdefault(key, [])
        if len(found) == 1 and found[0] not in names:
            names.append(found[0])
    return [(claim.replace("\0", "/".join(names)), word) for (claim, word), names in groups.items()]


def baseline_rows(results: Path) -> list[list[str]]:
    """The papers' baselines, a row for each page where some is recorded: copy lsh-X (claims 4 and 5 of
    :func:`lra_kit.claims.measure_copy`), MNIST LSH-1 and LSH-4 (:func:`lra_kit.claims.mnist_baseline_claims`) and
    each LRA task's Reformer (lsh-2) and Linformer (:func:`lra_kit.claims.lra_baseline_claims`), the numbers of
    the baselines alone (the page's row of the same runs has the others'); then one row naming the baselines of the
    pages that have none recorded yet."""
    from lra_kit.claims import lra_baseline_claims, measure_copy, mnist_baseline_claims
    from lra_kit.results import spread

    rows, waiting = [], []
    runs = {k: v for k, v in recorded_runs(results / "copy", "copy", COPY_BUDGET, _copy_names(),
                                           baselines("copy")).items() if v}
    lsh = [label for label in baselines("copy") if label in runs]
    if lsh:
        m = measure_copy(runs)
        rows.append(_row("Katharopoulos Fig. 2, Nguyen Fig. 1 (the Reformer baseline)", ("copy_task", "copy task"),
                         f"test loss, `{COPY_BUDGET}`: " + ", ".join(f"{x} {_mean(m['loss'][x], 4)}" for x in lsh),
                         _verdicts(_merge_baselines(_copy_items(m["baseline_claims"]), baselines("copy")))))
    else:
        waiting.append(("copy_task", "copy task", baselines("copy"), COPY_BUDGET))
    runs = {k: v for k, v in recorded_runs(results / "mnist", "mnist", MNIST_BUDGET, MNIST_NAMES,
                                           baselines("mnist")).items() if v}
    lsh = [label for label in baselines("mnist") if label in runs]
    if lsh:
        ours = ", ".join(f"{x} {_mean(spread(r['metrics']['test']['bits_per_dim'] for r in runs[x]), 3)}"
                         for x in lsh)
        items = [(_claim_name(c), short_verdict(v)) for c, _, v in mnist_baseline_claims(runs)]
        rows.append(_row("Katharopoulos Table 1, Fig. 5a (MNIST, the Reformer baseline)",
                         ("image_generation", "image generation"), f"test bits/dim, `{MNIST_BUDGET}`: {ours}",
                         _verdicts(_merge_baselines(items, baselines("mnist")))))
    else:
        waiting.append(("image_generation", "image generation", baselines("mnist"), MNIST_BUDGET))
    lra = 0
    for task in lra_tasks_of_record():
        preset = lra_budget(task)
        runs = {k: v for k, v in lra_runs(results, task, preset).items() if v}
        have = [label for label in baselines("lra") if label in runs]
        if not have:
            continue
        lra += 1
        cells = ", ".join(f"{x} {_mean(spread(100 * r['metrics']['test']['accuracy'] for r in runs[x]), 1)}"
                          for x in have)
        items = [(_claim_name(c), short_verdict(v)) for c, _, v in lra_baseline_claims(task, runs)]
        rows.append(_row(f"Nguyen Table 4, Luna Table 1 ({LRA_TITLES[task]}: Reformer, Linformer)",
                         ("lra", "Long Range Arena"), f"test accuracy %, `{preset}`: {cells}",
                         _verdicts(_merge_baselines(items, baselines("lra")))))
    if not lra:
        waiting.append(("lra", "Long Range Arena", baselines("lra"), None))
    if waiting:
        rows.append([", ".join(_page(name, title) for name, title, *_ in waiting) + ": the papers' baselines "
                     "(Reformer as lsh-X, Linformer)", "not recorded yet: " + "; ".join(
                         f"{title} {', '.join(labels)} " + (f"(`{preset}`)" if preset else "(each task's budget)")
                         for _, title, labels, preset in waiting), "—"])
    return rows


def lra_early_row(results: Path) -> list[str]:
    """The earlier LRA budget, ``lra-cpu`` (500 steps, one seed): each task's range of test accuracy over the
    attentions, and how many controls are recorded under ``results/lra/controls/``."""
    from lra_kit.data import LRA_TASKS
    from lra_kit.results import read_results

    ranges = []
    for task in LRA_TASKS:
        accs = {}
        for label, name in LRA_NAMES.items():
            path = results / "lra" / f"{task}-{name}-{LRA_EARLY}.json"
            if path.is_file():
                accs[label] = read_results(str(path))["metrics"]["test"]["accuracy"]
        if accs:
            low, high = _pct(min(accs.values())), _pct(max(accs.values()))
            ranges.append(f"{task} {low}" + ("" if low == high else f"–{high}"))
        else:
            ranges.append(f"{task} not run")
    folder = results / "lra" / "controls"
    controls = sum(1 for p in folder.glob("*") if p.is_dir() and any(p.glob("*.json"))) if folder.is_dir() else 0
    return _row("Nguyen Table 4, Luna Tables 1, 3 (the earlier budget, controls)", ("lra", "Long Range Arena"),
                f"test accuracy % over the attentions, `{LRA_EARLY}` (500 steps): " + ", ".join(ranges),
                f"early training, far below the papers; {controls} controls on the page")


def _gpu_attention_headline(path: Path) -> tuple[str, str] | None:
    """A GPU record of ``lra-kit bench attention`` (``results/bench/attention-<gpu>.json``) in two short parts:
    linear attention's time ÷ flash-linear-attention's over the lengths, and the benchmark's targets met (``None``
    for any other record)."""
    from lra_kit.bench.attention_gpu_record import length_label as _length

    record = _read(path)
    if (not path.name.startswith("attention-") or record is None or record.get("device") == "cpu"
            or "targets" not in record.get("metrics", {})):
        return None  # a CPU record has its own row (speed_row) and no fla row; it may still list (no) targets
    card = str(record.get("device_detail", record["device"])).removeprefix("NVIDIA ")
    have = sorted((r["length"], r["linear_over_fla"]) for r in record["metrics"]["ratios"]
                  if r.get("linear_over_fla") is not None)
    number = ""
    if have:
        lo, hi = min(v for _, v in have), max(v for _, v in have)
        values = f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}"
        number = f"{card}, {record['config']['dtype']}: linear ÷ fla's time {values} at {_length(have[0][0])}–" \
                 f"{_length(have[-1][0])}"
    judged = [t for t in record["metrics"]["targets"] if t["met"] is not None]
    fla = record["config"].get("definitions", {}).get("fla_chunk_linear")
    if fla is None:
        raise ValueError(f"{path.name}: config.definitions does not say what its fla row ran")
    if "not fla as its users call it" in fla:  # the 2026-11-28 record: fla fed a float32 φ (docs/gpu.md)
        return (f"{number} (to fla fed a float32 φ, per-call latency)" if number else "",
                f"{card}: targets not judged, its fla row was not fla as its users call it")
    return number, f"{card}: {sum(1 for t in judged if t['met'])} of {len(judged)} targets met"


def speed_row(results: Path) -> list[str]:
    """Katharopoulos Fig. 1, Luna Table 2: the recorded benchmarks' headline ratios, CPU then each GPU."""
    from lra_kit.paper_numbers import LUNA_TABLE2

    bench = results / "bench"
    attention, training = _read(bench / "attention-cpu.json"), _read(bench / "training-cpu.json")
    parts, verdicts = [], []
    if attention is not None:
        ratios = sorted(attention["metrics"]["ratios"], key=lambda r: r["length"])
        first, last = ratios[0], ratios[-1]
        mom = [r["momentum_over_linear"] for r in ratios]
        parts.append(f"CPU, one thread: SDPA ÷ linear time {first['sdpa_over_linear']:.1f} at {first['length']:,}, "
                     f"{last['sdpa_over_linear']:.1f} at {last['length']:,}; momentum ÷ linear "
                     f"{min(mom):.2f}–{max(mom):.2f}")
    if training is not None:
        longest = max(training["config"]["lengths"])
        linear = next((r for r in training["metrics"]["rows"] if r["length"] == longest and r["method"] == "linear"),
                      None)
        label = f"{longest // 1024}K" if longest % 1024 == 0 else str(longest)
        if linear is not None:
            text = f"LRA training step at {longest:,}: linear {linear['speed_vs_softmax_materialised']:.1f}× softmax's"
            if f"Steps/s {label}" in LUNA_TABLE2.columns:
                text += f" (paper {LUNA_TABLE2.value('Linear Trans.', f'Steps/s {label}'):.1f}×)"
            parts.append(text)
    gpus = [_gpu_attention_headline(p) for p in sorted(bench.glob("attention-*.json"))] if bench.is_dir() else []
    for number, verdict in (g for g in gpus if g is not None):
        if number:
            parts.append(number)
        verdicts.append(verdict)
    return _row("Katharopoulos Fig. 1, Luna Table 2 (speed, memory)", ("speed_memory", "speed and memory"),
                "; ".join(parts) or "not recorded yet", "; ".join(verdicts) or "numbers only; the page compares")


CIFAR_ROW = _row("Katharopoulos Table 2, Nguyen Table 3 (CIFAR-10 bits/dim)", ("image_generation", "image generation"),
                 "not run: days of GPU in the papers, and only a lossy JPEG copy of the data offline", "—")


def readme_table(results: Path | str | None = None) -> str:
    """The README's table of reproductions, one row per paper's table or figure (the LRA one row per task)."""
    from lra_kit.viz.results import markdown_table

    results = Path(results) if results is not None else ROOT / "results"
    rows = [copy_row(results), mnist_row(results), CIFAR_ROW, generation_bench_row(results), web_row(results),
            *(lra_row(results, task) for task in lra_tasks_of_record()), *baseline_rows(results),
            lra_early_row(results), speed_row(results)]
    return markdown_table(["page: paper, table or figure", "result (mean over seeds; seeds, where several)",
                           "the papers' claims"], rows)


# ------------------------------------------------------------------------------------------------------------
# docs/budget.md: what the recorded runs cost

def _budget_experiments(results: Path) -> list[tuple[str, str, str, dict[str, list[dict]]]]:
    """(title, task, preset, runs by label) of every budget of record."""
    generation = {"copy": ("copy", COPY_BUDGET, _copy_names()), "mnist": ("MNIST", MNIST_BUDGET, MNIST_NAMES)}
    out = [(title, task, preset, recorded_runs(results / task, task, preset, names, baselines(task)))
           for task, (title, preset, names) in generation.items()]
    for task in lra_tasks_of_record():
        preset = lra_budget(task)
        out.append((f"LRA {LRA_TITLES[task]}", task, preset, lra_runs(results, task, preset)))
    return out


def run_costs(results: Path | str | None = None) -> str:
    """docs/budget.md's table of what each budget of record cost: per attention, the median over its seeds of
    ``wall_s ÷ steps`` and the seeds recorded; per budget, the core-hours of all its runs (one thread each). A
    baseline (lsh-X, linformer) has a column once some budget has a record of it."""
    from lra_kit.viz.results import markdown_table

    results = Path(results) if results is not None else ROOT / "results"
    experiments = _budget_experiments(results)
    labels = list(dict.fromkeys(label for *_, runs in experiments for label in runs))
    extra = {label for experiment in ("copy", "mnist", "lra") for label in baselines(experiment)}
    labels = [label for label in labels if label not in extra] + [label for label in labels if label in extra]
    rows = []
    for title, _, preset, runs in experiments:
        cells, total = [], 0.0
        for label in labels:
            rs = runs.get(label, [])
            if not rs:
                cells.append("—")
                continue
            per_step = sorted(r["wall_s"] / r["steps"] for r in rs)
            mid = len(per_step) // 2
            median = per_step[mid] if len(per_step) % 2 else (per_step[mid - 1] + per_step[mid]) / 2
            cells.append(f"{median:.2f} s ({len(rs)})")
            total += sum(r["wall_s"] for r in rs)
        rows.append([f"{title} (`{preset}`)", *cells, f"{total / 3600:.1f}"])
    return markdown_table(["budget (preset)", *labels, "core-hours, all runs"], rows)


def step_timings(results: Path | str | None = None) -> str:
    """The dedicated timing of ``lra-kit bench steps`` (``results/bench/steps-cpu.json``) where recorded."""
    from lra_kit.viz.results import markdown_table

    results = Path(results) if results is not None else ROOT / "results"
    record = _read(results / "bench" / "steps-cpu.json")
    if record is None:
        return ("No dedicated timing is recorded yet: `lra-kit bench steps --json results/bench/steps-cpu.json` "
                "times each budget's step alone, one thread, and this part shows it once it is there.")
    rows = [[r["row"], "–" if r.get("median_s") is None else f"{r['median_s']:.3f} s", r.get("note", "")]
            for r in record["metrics"]["rows"]]
    return (f"`lra-kit bench steps` ({record['device']}, torch {record['torch']}, commit "
            f"{(record.get('git_commit') or '?')[:10]}, {str(record['date'])[:10]}): the median seconds of one "
            "training step, one thread\n\n" + markdown_table(["task:preset:attention", "median", "note"], rows))


# ------------------------------------------------------------------------------------------------------------
# The files and their parts

PARTS: dict[str, dict[str, Callable[[Path], str]]] = {
    "README.md": {"results-table": readme_table},
    "docs/budget.md": {"run-costs": run_costs, "step-timings": step_timings},
}


def render(root: Path | str | None = None) -> dict[str, tuple[str, str]]:
    """Each file of :data:`PARTS` under ``root`` (the repository): ``{file: (as it is, as results/ gives it)}``."""
    root = Path(root) if root is not None else ROOT
    out = {}
    for name, parts in PARTS.items():
        path = root / name
        if not path.is_file():
            raise ReportError(f"{path} not found: root must be the repository holding {', '.join(PARTS)}")
        old = new = path.read_text(encoding="utf-8")
        for marker, build in parts.items():
            new = replace_between(new, marker, build(root / "results"), name)
        out[name] = (old, new)
    return out


def stale(root: Path | str | None = None) -> list[str]:
    """``FILE: PART`` for each generated part that differs from what ``results/`` gives now."""
    root = Path(root) if root is not None else ROOT
    out = []
    for name, (old, new) in render(root).items():
        for marker in PARTS[name]:
            if part(old, marker, name) != part(new, marker, name):
                out.append(f"{name}: {marker}")
    return out


def write(root: Path | str | None = None) -> list[str]:
    """Rewrite the generated parts under ``root``; returns the files that changed."""
    root = Path(root) if root is not None else ROOT
    changed = []
    for name, (old, new) in render(root).items():
        if new != old:
            (root / name).write_text(new, encoding="utf-8")
            changed.append(name)
    return changed


def _main(args) -> int:
    root = Path(args.root) if args.root else ROOT
    if args.check:
        out = stale(root)
        for item in out:
            print(f"stale: {item} (run `make readme`, or `lra-kit report`)", file=sys.stderr)
        return 1 if out else 0
    changed = write(root)
    print("[lra-kit] rewrote " + ", ".join(changed) if changed else "[lra-kit] README.md and docs/budget.md are "
          "up to date with results/")
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="regenerate the README's table of reproductions and docs/budget.md's "
                              "costs from results/", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each stale part")
    p.add_argument("--root", help="the repository (default: the one lra_kit is installed from)")
    p.set_defaults(func=_main)


__all__ = ["PARTS", "ReportError", "baseline_rows", "baselines", "copy_row", "lra_budget", "lra_early_row",
           "lra_row", "markers", "mnist_row", "part", "readme_table", "recorded_runs", "render", "replace_between",
           "run_costs", "short_verdict", "speed_row", "stale", "step_timings", "web_row", "write"]
