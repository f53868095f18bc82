"""The parts of ``README.md`` and ``docs/budget.md`` that report recorded runs, generated from ``results/``.

    lra-kit report            # rewrite the generated parts of README.md and docs/budget.md
    lra-kit report --check    # exit 1, naming each part, where a file differs from what results/ gives now

Each generated part sits between two HTML comments, ``<!-- NAME:start ... -->`` and ``<!-- NAME:end -->``;
everything outside them is prose and is left alone. The numbers and verdicts come from the functions the book's
reproduction pages use on the same records — :func:`lra_kit.results.seed_records` and
:func:`lra_kit.results.spread`, :func:`lra_kit.viz.results.mean_range`, the claims of :mod:`lra_kit.claims`,
the web page's :func:`lra_kit.web.page.claims` — and the papers' numbers from :mod:`lra_kit.paper_numbers`, so the
README cannot say other than the pages. A cell gives the headline numbers (mean [min, max] over the seeds) and
the verdicts; the reading of them lives on the page it links to.

A run recorded later (another seed, another attention, a control) appears at the next ``lra-kit report``.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Mapping
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
                    + (" (at a level the learning-rate drop sets)" if "the learning-rate drop sets" in text else ""))
    raise ValueError(f"verdict {verdict!r} is none of lra_kit.claims' verdicts")


def _claim_name(claim: str) -> str:
    """A claim without its parentheses (the paper's numbers, the level) and without "converges"."""
    return re.sub(r" \([^()]*\)", "", claim).replace(" converges ", " ")


def _sig(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, never in scientific notation (0.376, 3.35, 155)."""
    if not math.isfinite(x) or x == 0:
        return f"{x:g}"
    return f"{x:,.{max(0, digits - 1 - math.floor(math.log10(abs(x))))}f}"


def _group_verdicts(claims: list[tuple[str, str, str]]) -> str:
    """``claim`` rows grouped by their short verdict: ``holds: a, b; not decided: c``; waiting rows counted."""
    groups: dict[str, list[str]] = {}
    waiting = 0
    for claim, _, verdict in claims:
        word = short_verdict(verdict)
        if word == "waits":
            waiting += 1
            continue
        groups.setdefault(word, []).append(_claim_name(claim))
    parts = [f"{word}: {', '.join(names)}" for word, names in groups.items()]
    if waiting:
        parts.append(f"{waiting} wait for attentions not recorded at this budget")
    return "; ".join(parts) if parts else "none measured yet"


def _pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}"


def _seeds(n: int) -> str:
    return "1 seed" if n == 1 else f"{n} seeds"


def _seed_counts(runs: Mapping[str, list]) -> str:
    counts = {label: len(rs) for label, rs in runs.items() if rs}
    if not counts:
        return "none recorded yet"
    if len(set(counts.values())) == 1:
        return f"{_seeds(next(iter(counts.values())))} of each of {len(counts)} variants"
    return "seeds: " + ", ".join(f"{label} {n}" for label, n in counts.items())


def _recipe(runs: Mapping[str, list[dict]], model: bool = False) -> str:
    """How the recorded ``runs`` were trained, read from their records: ``12,000 steps at batch 10`` (with
    ``model``: ``2 layers d 64, `` first); values that differ between runs are joined with ``/``."""
    records = [r for rs in runs.values() for r in rs]
    if not records:
        return "none recorded yet"

    def values(get) -> str:
        return "/".join(f"{v:,}" for v in sorted({get(r) for r in records}))

    text = f"{values(lambda r: r['steps'])} steps at batch {values(lambda r: r['config']['data']['batch_size'])}"
    if model:
        text = (f"{values(lambda r: r['config']['model']['layers'])} layers d "
                f"{values(lambda r: r['config']['model']['d_model'])}, " + text)
    return text


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
COPY_BUDGET, COPY_EARLY = "cpu-20k", "cpu"
MNIST_BUDGET, MNIST_EARLY = "cpu-12k", "cpu"
# The LRA budgets of record, longest first: each task's runs of record are at the first that trains it.
LRA_BUDGETS, LRA_EARLY = ("lra-cpu-2h", "lra-cpu-long"), "lra-cpu"
LRA_TITLES = {"text": "Text", "listops": "ListOps", "image": "Image", "pathfinder": "Pathfinder"}
LRA_TEST_SET = {"text": "reviews", "listops": "expressions", "image": "images", "pathfinder": "images"}


def copy_row(results: Path) -> list[str]:
    """Katharopoulos Fig. 2, Nguyen Fig. 1: test loss per variant at ``cpu-20k`` and the claims of
    :func:`lra_kit.claims.measure_copy`."""
    from lra_kit.claims import measure_copy
    from lra_kit.results import seed_records
    from lra_kit.viz.results import mean_range

    names = _copy_names()
    runs = {label: seed_records(str(results / "copy"), f"copy-{name}-{COPY_BUDGET}") for label, name in names.items()}
    early = {label: seed_records(str(results / "copy"), f"copy-{name}-{COPY_EARLY}") for label, name in names.items()}
    scale = (f"`{COPY_BUDGET}` ({_recipe(runs, model=True)}; `results/copy/`): {_seed_counts(runs)}; an earlier "
             f"budget, `{COPY_EARLY}` ({_recipe(early)}): {_seed_counts(early)}")
    have = {label: rs for label, rs in runs.items() if rs}
    if not have:
        return ["Katharopoulos Fig. 2, Nguyen Fig. 1 (copy task)", _page("copy_task", "copy task"), scale,
                "not recorded yet"]
    m = measure_copy(have)
    loss = ", ".join(f"{label} {mean_range(m['loss'][label], 4)}" for label in have)
    by_claim: dict[str, list[str]] = {}
    for claim, _, verdict in m["claims"]:
        found = re.search(r"\((early|late)\b", claim)
        key, when = _claim_name(claim), found.group(1) if found else ""
        by_claim.setdefault(key, []).append(short_verdict(verdict) + (f" ({when})" if when else ""))
    verdicts = "; ".join(f"{claim}: {', '.join(v)}" for claim, v in by_claim.items())
    return ["Katharopoulos Fig. 2, Nguyen Fig. 1 (copy task)", _page("copy_task", "copy task"), scale,
            f"test loss, mean [min, max] over the seeds: {loss}. The papers' claims (`lra_kit.claims`; "
            f"\"faster\" in steps to an early and a late loss level): {verdicts}"]


def mnist_row(results: Path) -> list[str]:
    """Katharopoulos Table 1, Nguyen Table 2: bits/dim per variant at ``cpu-12k``, the papers' numbers and the
    verdicts of :func:`lra_kit.claims.mnist_claims`."""
    from lra_kit.claims import mnist_claims
    from lra_kit.paper_numbers import KATHAROPOULOS_TABLE1 as K1
    from lra_kit.paper_numbers import MOMENTUM_TABLE2 as N2
    from lra_kit.results import seed_records, spread
    from lra_kit.viz.results import mean_range

    runs, early = ({label: seed_records(str(results / "mnist"), f"mnist-{name}-{budget}")
                    for label, name in MNIST_NAMES.items()} for budget in (MNIST_BUDGET, MNIST_EARLY))
    have = {label: rs for label, rs in runs.items() if rs}
    scale = (f"`{MNIST_BUDGET}` ({_recipe(runs, model=True)}; `results/mnist/`): {_seed_counts(runs)}; "
             f"an earlier budget, `{MNIST_EARLY}` ({_recipe(early)}): {_seed_counts(early)}")
    ours = ", ".join(f"{label} {mean_range(spread(r['metrics']['test']['bits_per_dim'] for r in rs), 3)}"
                     for label, rs in have.items()) or "not recorded yet"
    papers = (f"Katharopoulos {K1.table}, 8 layers after 250 epochs: softmax {K1.value('Softmax', 'Bits/dim'):.3f}, "
              f"linear {K1.value('Linear (ours)', 'Bits/dim'):.3f}; Nguyen {N2.table}: linear "
              f"{N2.value('Linear transformer', 'Bits/dim'):.2f}, momentum "
              f"{N2.value('Momentum transformer', 'Bits/dim'):.2f}, adaptive momentum "
              f"{N2.value('Adaptive momentum transformer', 'Bits/dim'):.2f}")
    claims = "; ".join(f"{_claim_name(c)}: {short_verdict(v)}" + (f" ({m})" if "%" in m else "")
                       for c, m, v in mnist_claims(have))
    return ["Katharopoulos Tables 1, 4, Fig. 3; Nguyen Table 2 (MNIST bits/dim, samples)",
            _page("image_generation", "image generation"), scale,
            f"test bits/dim, mean [min, max] over the seeds: {ours} (papers: {papers}). The papers' claims "
            f"(`lra_kit.claims.mnist_claims`): {claims}"]


def _generation_over_linear(record: dict, column: str) -> str:
    """Seconds per image at batch 1 ÷ linear attention's, per task, with appendix Table 5's ratio from ``column``
    ("Seconds (CPU)" or "Seconds (GPU)") beside each method the paper has."""
    from lra_kit.bench.generation import PAPER_ROW
    from lra_kit.paper_numbers import KATHAROPOULOS_TABLE5_CIFAR10, KATHAROPOULOS_TABLE5_MNIST

    label = {"softmax": "softmax", "softmax-kv-cache": "key/value cache", "momentum": "momentum"}
    parts = []
    tables = {"mnist": ("MNIST", KATHAROPOULOS_TABLE5_MNIST), "cifar10": ("CIFAR-10", KATHAROPOULOS_TABLE5_CIFAR10)}
    for task, (title, table) in tables.items():
        base = table.value(PAPER_ROW["linear"], column)
        cells = []
        for r in (r for r in record["metrics"]["rows"] if r["task"] == task and r["batch"] == 1):
            if r["method"] not in label:
                continue
            bound = {"none": "", "lower bound": "≥ ", "estimate": "~"}[r["extrapolation"]]
            paper = (f" (paper {_sig(table.value(PAPER_ROW[r['method']], column) / base)})"
                     if r["method"] in PAPER_ROW else "")
            cells.append(f"{label[r['method']]} {bound}{_sig(r['time_over_linear'])}{paper}")
        if cells:
            parts.append(f"{title}: " + ", ".join(cells))
    return "; ".join(parts)


def _generation_largest(record: dict) -> str:
    """Linear attention's images/s at the largest batch searched, per task, and the key/value cache's time per
    image ÷ linear's there ("~" an estimate; "≤"/"≥" where a prefix of the image was timed)."""
    titles = {"mnist": "MNIST", "cifar10": "CIFAR-10"}
    largest = {(r["task"], r["method"]): r for r in record["metrics"]["rows"] if r.get("batch_search") == "largest"}
    cells = []
    for task, title in titles.items():
        lin, cache = largest.get((task, "linear")), largest.get((task, "softmax-kv-cache"))
        if lin is None:
            continue
        mark = {"none": "", "lower bound": "≤ ", "estimate": "~"}[lin["extrapolation"]]
        text = f"{title} {mark}{_sig(lin['images_per_s'])} at batch {lin['batch']:,}"
        if cache is not None and cache["batch"] == lin["batch"]:
            bound = {"none": "", "lower bound": "≥ ", "estimate": "~"}[cache["extrapolation"]]
            text += f" ({bound}{_sig(cache['time_over_linear'])})"
        cells.append(text)
    if not cells:
        return ""
    cap = record["config"].get("largest_batch", {}).get("max_batch")
    return ("linear attention's images/s at the largest batch searched" + (f" (up to {cap:,})" if cap else "")
            + ", and the key/value cache's time ÷ linear's there: " + ", ".join(cells))


def generation_bench_row(results: Path) -> list[str]:
    """Katharopoulos appendix Table 5: seconds per generated image over linear attention's, at batch 1, beside the
    paper's CPU column (``results/bench/generation-cpu.json``) and its GPU column (each
    ``results/bench/generation-<gpu>.json``, with linear attention's images/s at the largest batch searched)."""
    bench = results / "bench"
    cpu = _read(bench / "generation-cpu.json")
    gpus = sorted(p for p in bench.glob("generation-*.json") if p.name != "generation-cpu.json") \
        if bench.is_dir() else []
    runs = ["the papers' model sizes: one CPU thread (`results/bench/generation-cpu.json`)"]
    runs += [f"the {_read(p)['device']} (`results/bench/{p.name}`)" for p in gpus]
    head = ["Katharopoulos appendix Table 5 (seconds per image, batch 1, CPU and GPU)",
            _page("image_generation", "image generation"), "; ".join(runs)]
    if cpu is None and not gpus:
        return [*head, "not recorded yet: `lra-kit bench generation`"]
    parts = []
    if cpu is not None:
        parts.append("time per image ÷ linear attention's: " + _generation_over_linear(cpu, "Seconds (CPU)"))
    for path in gpus:
        record = _read(path)
        text = f"on the {record['device']}, against the paper's GPU column: " + _generation_over_linear(
            record, "Seconds (GPU)")
        largest = _generation_largest(record)
        parts.append(text + (f"; {largest}" if largest else ""))
    return [*head, "; ".join(parts) + " (≥: a lower bound, a prefix of the image timed; ~: an estimate)"]


def web_row(results: Path) -> list[str]:
    """Katharopoulos §3.4 in the browser: the recorded Chromium run (``results/web/generation-chromium.json``)
    and the verdicts of :func:`lra_kit.web.page.claims`."""
    from lra_kit.web import page

    record = _read(results / "web" / "generation-chromium.json")
    head = ["Katharopoulos §3.4, Tables 1–2 (generation as an RNN), live in the reader's browser",
            _page("web_generation", "generation in the browser"),
            "the `cpu-12k` linear and softmax MNIST models, exported by `lra-kit export-web`, run by "
            "`_static/web/runtime.mjs` (equal to `CausalLM.generate()`, `node --test`), timed in headless "
            "Chromium (`results/web/generation-chromium.json`)"]
    if record is None:
        return [*head, "not measured yet: `python -m lra_kit.web.measure`"]
    rows = {r["method"]: r for r in record["metrics"]["rows"]}
    label = {"recurrent": "linear as an RNN", "kv-cache": "softmax with a key/value cache",
             "recompute": "softmax re-run on the prefix"}
    cells = [f"{label[m]} {_sig(r['ms_per_pixel'])} ms/pixel, {_sig(r['wall_seconds'])} s a digit, end ÷ start "
             f"(blocks of {page.BLOCK} pixels) {_sig(g) if (g := page.end_over_start(r)) is not None else '–'}"
             for m, r in rows.items() if m in label]
    checks = page.claims(record)
    held = sum(1 for _, holds, _ in checks if holds)
    return [*head, "; ".join(cells) + f"; peak JS heap {record['metrics']['peak_js_heap_bytes'] / 2**20:.1f} MiB. "
            f"The page's checks (`lra_kit.web.page.claims`): {held} of {len(checks)} hold"]


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


def _lra_papers() -> dict[str, list[tuple[object, str]]]:
    from lra_kit.paper_numbers import LUNA_TABLE1, MOMENTUM_TABLE4

    return {"softmax": [(MOMENTUM_TABLE4, "Softmax"), (LUNA_TABLE1, "Transformer")],
            "linear": [(MOMENTUM_TABLE4, "Linear"), (LUNA_TABLE1, "Linear Trans.")],
            "performer": [(MOMENTUM_TABLE4, "Performer"), (LUNA_TABLE1, "Performer")],
            "momentum": [(MOMENTUM_TABLE4, "Momentum transformer")],
            "adaptive momentum": [(MOMENTUM_TABLE4, "Adaptive momentum transformer")],
            "luna": [(LUNA_TABLE1, "Luna-16")]}


def lra_runs(results: Path, task: str, preset: str) -> dict[str, list[dict]]:
    """Every recorded seed of ``task`` at ``preset``, by attention label (the LRA page's ``budget_runs``)."""
    from lra_kit.results import seed_records

    return {label: seed_records(str(results / "lra"), f"{task}-{name}-{preset}") for label, name in LRA_NAMES.items()}


def lra_row(results: Path, task: str) -> list[str]:
    """One LRA task at its preset of record: test accuracy per attention with the papers' numbers, and the orders
    of the papers' tables measured by :func:`lra_kit.claims.lra_claims`."""
    from lra_kit.claims import lra_claims
    from lra_kit.results import spread
    from lra_kit.viz.results import mean_range

    preset = lra_budget(task)
    runs = lra_runs(results, task, preset)
    have = {label: rs for label, rs in runs.items() if rs}
    title = LRA_TITLES[task]
    counts = {r["metrics"]["test"]["count"] for rs in have.values() for r in rs}
    tested = f", {'/'.join(f'{c:,}' for c in sorted(counts))} test {LRA_TEST_SET[task]}" if counts else ""
    scale = f"`{preset}` ({_recipe(have)}{tested}; `results/lra/`)"
    papers = _lra_papers()
    cells = []
    for label, rs in have.items():
        acc = spread(100 * r["metrics"]["test"]["accuracy"] for r in rs)
        paper = " / ".join(f"{table.value(row, next(c for c in table.columns if c.lower().startswith(task))):.2f}"
                           for table, row in papers[label])
        cells.append(f"{label} {mean_range(acc, 1)}, {_seeds(len(rs))} ({paper})")
    text = ("test accuracy %, mean [min, max] over the seeds (papers: Nguyen et al. Table 4 / Ma et al. Table 1): "
            + ("; ".join(cells) if cells else "not recorded yet"))
    missing = [label for label in runs if not runs[label]]
    if missing and cells:
        text += f"; not recorded at this budget: {', '.join(missing)}"
    if task == "listops":
        rule = _read(results / "lra" / "baselines" / f"listops-first-token-{preset}.json")
        if rule is not None:
            test = rule["metrics"]["test"]
            text += (f". Without a model: one answer for every expression {_pct(test['majority'])} %, the "
                     f"first-token rule (`lra_kit.baselines`) {_pct(test['accuracy'])} %")
    if have:
        text += f". The papers' orders (`lra_kit.claims.lra_claims`): {_group_verdicts(lra_claims(task, have))}"
    return [f"Nguyen Table 4, Luna Table 1: LRA {title}", _page("lra", "Long Range Arena"), scale, text]


def lra_early_row(results: Path) -> list[str]:
    """The earlier LRA budget, ``lra-cpu`` (500 steps, one seed): each task's range over the attentions, and the
    controls recorded under ``results/lra/controls/``."""
    from lra_kit.data import LRA_TASKS
    from lra_kit.results import read_results

    ranges, records = [], []
    for task in LRA_TASKS:
        accs = {}
        for label, name in LRA_NAMES.items():
            path = results / "lra" / f"{task}-{name}-{LRA_EARLY}.json"
            if path.is_file():
                records.append(read_results(str(path)))
                accs[label] = records[-1]["metrics"]["test"]["accuracy"]
        if accs:
            low, high = min(accs, key=accs.get), max(accs, key=accs.get)
            if _pct(accs[low]) == _pct(accs[high]):
                ranges.append(f"{task} {_pct(accs[low])} % (all {len(accs)})")
            else:
                ranges.append(f"{task} {_pct(accs[low])} % ({low}) to {_pct(accs[high])} % ({high})")
        else:
            ranges.append(f"{task} not run" + (" (needs the LRA release's AAN corpus)" if task == "retrieval" else ""))
    controls = []
    folder = results / "lra" / "controls"
    for sub in sorted(p for p in folder.glob("*") if p.is_dir()) if folder.is_dir() else []:
        made = sorted({(r["scale"], path.name.split("-")[0]) for path in sub.glob("*.json")
                       if not path.name.endswith("-agreement.json") for r in [read_results(str(path))]})
        if made:
            by_preset: dict[str, list[str]] = {}
            for preset, task in made:
                by_preset.setdefault(preset, []).append(task)
            controls.append(f"{sub.name} (" + "; ".join(f"{', '.join(t)} at `{p}`" for p, t in by_preset.items())
                            + ")")
    return ["Nguyen Table 4, Luna Tables 1 and 3 (LRA): the earlier budget and the controls",
            _page("lra", "Long Range Arena"),
            f"`{LRA_EARLY}` (the Momentum paper's model, {_recipe({'': records})}, "
            f"{'/'.join(f'{c:,}' for c in sorted({r['metrics']['test']['count'] for r in records}))} test examples): "
            f"{len(records)} runs, seed {'/'.join(str(s) for s in sorted({r['seed'] for r in records}))}; "
            "controls under `results/lra/controls/`",
            "early training, far below the papers: test accuracy over the attentions, " + "; ".join(ranges)
            + ". Controls: " + ("; ".join(controls) if controls else "none recorded yet")]


def _gpu_attention_headline(path: Path) -> str:
    """`` (H200, bfloat16, forward + backward: ...)``: the headline of a GPU record of ``lra-kit bench attention``
    (``results/bench/attention-<gpu>.json``): linear attention's time and peak memory ÷ fla's over the lengths,
    cuDNN SDPA's time ÷ linear's where its target judges it, momentum's ÷ linear's, and the targets met; "" for any
    other record."""
    from lra_kit.bench.attention_gpu_record import length_label as _length

    record = _read(path)
    if not path.name.startswith("attention-") or record is None or "targets" not in record.get("metrics", {}):
        return ""
    ratios = sorted(record["metrics"]["ratios"], key=lambda r: r["length"])

    def span(key: str) -> str | None:
        have = [(r["length"], r[key]) for r in ratios if r.get(key) is not None]
        if not have:
            return None
        lo, hi = min(v for _, v in have), max(v for _, v in have)
        values = f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}"
        return f"{values} at {_length(have[0][0])}–{_length(have[-1][0])}"

    cells = []
    if (time := span("linear_over_fla")) is not None:
        memory = span("linear_memory_vs_fla")
        cells.append(f"linear ÷ fla's time {time}" + (f", peak memory {memory}" if memory else ""))
    judged = [t for t in record["metrics"]["targets"] if t["met"] is not None]
    cudnn = next((t for t in judged if t["ratio"] == "cudnn_over_linear"), None)
    if cudnn is not None:
        cells.append(f"cuDNN SDPA ÷ linear {cudnn['value']:.2f} at {_length(cudnn['length'])}")
    if (momentum := span("momentum_over_linear")) is not None:
        cells.append(f"momentum ÷ linear {momentum}")
    missed = [f"{t['target'].split(',')[0]} at {_length(t['length'])}: {t['value']:.2f}"
              for t in judged if not t["met"]]
    cells.append(f"{len(judged) - len(missed)} of {len(judged)} targets met"
                 + (f" (missed: {', '.join(missed)})" if missed else ""))
    card = str(record.get("device_detail", record["device"])).removeprefix("NVIDIA ")
    return f" ({card}, {record['config']['dtype']}, forward + backward: {'; '.join(cells)})"


def speed_row(results: Path) -> list[str]:
    """Katharopoulos Fig. 1, Luna Table 2: the recorded CPU benchmarks' headline ratios."""
    from lra_kit.paper_numbers import LUNA_TABLE2

    bench = results / "bench"
    attention, training = _read(bench / "attention-cpu.json"), _read(bench / "training-cpu.json")
    parts = []
    if attention is not None:
        ratios = sorted(attention["metrics"]["ratios"], key=lambda r: r["length"])
        first, last = ratios[0], ratios[-1]
        mom = [r["momentum_over_linear"] for r in ratios]
        parts.append(f"attention alone, causal, forward + backward, one thread: SDPA's time ÷ linear's "
                     f"{first['sdpa_over_linear']:.1f} at N = {first['length']:,}, {last['sdpa_over_linear']:.1f} at "
                     f"{last['length']:,}; momentum ÷ linear {min(mom):.2f}–{max(mom):.2f}; peak memory linear ÷ SDPA "
                     f"{first['linear_memory_vs_sdpa']:.2f} at {first['length']:,}, "
                     f"{last['linear_memory_vs_sdpa']:.2f} at {last['length']:,}")
    if training is not None:
        longest = max(training["config"]["lengths"])
        rows = {r["method"]: r for r in training["metrics"]["rows"] if r["length"] == longest}
        paper = {"linear": "Linear Trans.", "performer": "Performer", "luna-16": "Luna-16", "luna-128": "Luna-128",
                 "luna-256": "Luna-256"}
        label = f"{longest // 1024}K" if longest % 1024 == 0 else str(longest)
        cells = []
        for method, r in rows.items():
            if method.startswith("softmax"):  # the two baselines
                continue
            text = f"{method} {r['speed_vs_softmax_materialised']:.1f}×, {r['memory_vs_softmax_materialised']:.2f}×"
            if method in paper and f"Steps/s {label}" in LUNA_TABLE2.columns:
                text += (f" (paper {LUNA_TABLE2.value(paper[method], f'Steps/s {label}'):.1f}×, "
                         f"{LUNA_TABLE2.value(paper[method], f'Memory {label}'):.2f}×)")
            cells.append(text)
        parts.append(f"a training step of the LRA model at N = {longest:,}, steps/s and peak memory over the "
                     "materialised softmax Transformer's: " + ", ".join(cells))
    gpu = sorted(p.name for p in bench.glob("*.json") if not p.stem.endswith("-cpu")) if bench.is_dir() else []
    parts.append("GPU timings: " + (", ".join(f"`results/bench/{g}`" + _gpu_attention_headline(bench / g)
                                              for g in gpu) if gpu else "none recorded yet"))
    return ["Katharopoulos Fig. 1, Luna Table 2 and Fig. 1 (speed, memory)", _page("speed_memory", "speed and memory"),
            "`results/bench/attention-cpu.json`, `results/bench/training-cpu.json`", "; ".join(parts)]


CIFAR_ROW = ["Katharopoulos Table 2; Nguyen Table 3 (CIFAR-10 bits/dim)", _page("image_generation", "image generation"),
             "not run: the papers train for days on GPUs, and only a lossy JPEG copy of the data is available offline",
             "—"]


def readme_table(results: Path | str | None = None) -> str:
    """The README's table of reproductions, one row per paper's table or figure (the LRA one row per task)."""
    from lra_kit.viz.results import markdown_table

    results = Path(results) if results is not None else ROOT / "results"
    rows = [copy_row(results), mnist_row(results), CIFAR_ROW, generation_bench_row(results), web_row(results),
            *(lra_row(results, task) for task in lra_tasks_of_record()),
            lra_early_row(results), speed_row(results)]
    return markdown_table(["paper, table or figure", "page", "runs of record", "result"], rows)


# ------------------------------------------------------------------------------------------------------------
# docs/budget.md: what the recorded runs cost

def _budget_experiments(results: Path) -> list[tuple[str, str, str, dict[str, list[dict]]]]:
    """(title, task, preset, runs by label) of every budget of record."""
    from lra_kit.results import seed_records

    generation = {"copy": ("copy", COPY_BUDGET, _copy_names()), "mnist": ("MNIST", MNIST_BUDGET, MNIST_NAMES)}
    out = [(title, task, preset, {label: seed_records(str(results / task), f"{task}-{name}-{preset}")
                                  for label, name in names.items()})
           for task, (title, preset, names) in generation.items()]
    for task in lra_tasks_of_record():
        preset = lra_budget(task)
        out.append((f"LRA {LRA_TITLES[task]}", task, preset, lra_runs(results, task, preset)))
    return out


def run_costs(results: Path | str | None = None) -> str:
    """docs/budget.md's table of what each budget of record cost: per attention, the median over its seeds of
    ``wall_s ÷ steps`` and the seeds recorded; per budget, the core-hours of all its runs (one thread each)."""
    from lra_kit.viz.results import markdown_table

    results = Path(results) if results is not None else ROOT / "results"
    experiments = _budget_experiments(results)
    labels = list(dict.fromkeys(label for *_, runs in experiments for label in runs))
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


__all__ = ["PARTS", "ReportError", "copy_row", "lra_budget", "lra_early_row", "lra_row", "markers", "mnist_row",
           "part", "readme_table", "render", "replace_between", "run_costs", "short_verdict", "speed_row", "stale",
           "step_timings", "web_row", "write"]
