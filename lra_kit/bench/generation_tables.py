"""Image-generation speed beside the papers': the tables of notebooks/image_generation.md, built from the records.

Katharopoulos et al. report images generated per second with the speed-up over the softmax transformer beside
it ("142.8 (317×)", Tables 1-2, §4.2), with Reformer's LSH attention at 1 and 4 rounds of hashing beside them
(LSH-1, LSH-4), add the key/value cache ("stateful-softmax", appendix Table 4, §C.1) and the seconds to generate one
image at batch 1 on a CPU and on a GPU (appendix Table 5, §C.2); Nguyen et al. repeat the images/s of softmax and
linear attention and add momentum (Tables 2-3, §4.2). :func:`speed_rows` sets these beside every record of
``lra-kit bench generation`` (``results/bench/generation-*.json``, one per device, read by
:func:`generation_records`) at batch 1 and at the largest batch the record timed. A speed-up is computed within
one row of the table: one paper table, or one record at one batch setting (images/s ÷ the softmax's images/s
there, and for the constant-state RNNs ÷ the key/value cache's), eager against eager; a record that also replayed
the lean steps as CUDA graphs has a row of its own for them, where the speed-ups compare graph with graph. Where a
record timed only a prefix of an image (its ``extrapolation``), the images/s and every speed-up built from them
carry a mark: "≤" at most, "≥" at least, "~" an estimate. A baseline a record has not timed (the LSH rows of a record
made before they were added) reads "no record yet".
"""
from __future__ import annotations

import glob
import json
import math
from dataclasses import dataclass
from pathlib import Path

from lra_kit import paper_numbers as pn
from lra_kit.bench.generation import GROWING, LEAN, LSH_ROUNDS, METHODS, PAPER_ROW

LABELS = {"softmax": "softmax", "softmax-kv-cache": "key/value cache", "linear": "linear", "momentum": "momentum",
          "lsh-1": "LSH-1", "lsh-4": "LSH-4"}
CACHE = "softmax-kv-cache"  # the second reference of the speed-ups
RNNS = tuple(m for m in METHODS if not GROWING[m])  # a state of constant size: their speed-up over the cache too
BASELINES = tuple(LSH_ROUNDS)  # the papers' baselines: a record made before they were timed has none
OURS = tuple(m for m in METHODS if m not in BASELINES)  # the methods the papers propose or time as theirs
# The papers' rows for our methods in Nguyen et al. Tables 2-3 (Katharopoulos et al.'s: PAPER_ROW).
NGUYEN_ROW = {"softmax": "Standard softmax transformer", "linear": "Linear transformer",
              "momentum": "Momentum transformer"}
# Per task: its title, Katharopoulos et al.'s main table and appendix Tables 4 and 5, Nguyen et al.'s table.
PAPERS = {
    "mnist": ("MNIST", pn.KATHAROPOULOS_TABLE1, pn.KATHAROPOULOS_TABLE4_MNIST, pn.KATHAROPOULOS_TABLE5_MNIST,
              pn.MOMENTUM_TABLE2),
    "cifar10": ("CIFAR-10", pn.KATHAROPOULOS_TABLE2, pn.KATHAROPOULOS_TABLE4_CIFAR10,
                pn.KATHAROPOULOS_TABLE5_CIFAR10, pn.MOMENTUM_TABLE3),
}
NOT_RECORDED = "not recorded"
NO_RECORD_YET = "no record yet"  # a baseline (LSH) that a record holding the other methods has not timed
EAGER_ONLY = "eager only"  # a graph row's cell for a method that runs no CUDA graph (the uncached ones)
NOT_HERE = "not here"  # a page run outside a clone: the records exist, but not where it runs
NOT_IN_PAPER = "—"
# A record's extrapolation is about the time per image: a lower bound on it is an upper bound on images/s.
SPEED_MARK = {"none": "", "lower bound": "≤", "estimate": "~"}
_INVERSE = {"": "", "≤": "≥", "≥": "≤", "~": "~"}


@dataclass(frozen=True)
class Speed:
    """Images/s with its mark ("", "≤", "≥", "~"), and the batch it was timed at (None: the paper's, unstated)."""

    images_per_s: float
    mark: str = ""
    batch: int | None = None


def ratio_mark(numerator: str, denominator: str) -> str:
    """The mark of a ÷ b from those of a and b: at most ÷ exact is at most, exact ÷ at most is at least, and
    where the two bounds do not point the same way (or one is an estimate) the ratio is an estimate."""
    for mark in (numerator, denominator):
        if mark not in _INVERSE:
            raise ValueError(f"a mark must be one of {sorted(_INVERSE)}, got {mark!r}")
    a, b = numerator, _INVERSE[denominator]
    if not a or not b or a == b:
        return a or b
    return "~"


@dataclass(frozen=True)
class Cell:
    """One method in one row: its speed, and its speed-ups over the softmax and the key/value cache of the row
    (None where the row has no such reference, or where it would be the method itself)."""

    speed: Speed
    over_softmax: tuple[float, str] | None
    over_cache: tuple[float, str] | None


@dataclass(frozen=True)
class Row:
    """A row of a task's table: where it comes from, and a :class:`Cell` per method (None: the paper has no such
    row; the string :data:`NOT_RECORDED`: the record has none)."""

    source: str
    cells: dict


def _cells(speeds: dict[str, Speed | str | None]) -> dict:
    """The cells of one row from its speeds: each speed-up over the softmax and the cache of the same row."""
    def over(method: str, reference: str) -> tuple[float, str] | None:
        a, b = speeds[method], speeds.get(reference)
        if not isinstance(a, Speed) or not isinstance(b, Speed) or method == reference:
            return None
        return a.images_per_s / b.images_per_s, ratio_mark(a.mark, b.mark)

    return {m: Cell(s, over(m, "softmax"), over(m, CACHE) if m in RNNS else None) if isinstance(s, Speed) else s
            for m, s in speeds.items()}


def _check_task(task: str) -> None:
    if task not in PAPERS:
        raise ValueError(f"task must be one of {', '.join(PAPERS)}, got {task!r}")


def paper_rows(task: str) -> list[Row]:
    """The papers' rows for ``task``: Katharopoulos et al.'s images/s (their main table with appendix Table 4's
    key/value cache), Nguyen et al.'s, and appendix Table 5's seconds per image at batch 1 as 1 ÷ seconds, CPU
    and GPU; each names the table and what the paper says of the machine (:func:`lra_kit.paper_numbers.
    timing_machine`)."""
    _check_task(task)
    _, main, table4, table5, nguyen = PAPERS[task]
    rows = []
    k4 = {m: Speed(table4.value(PAPER_ROW[m], "Images/sec")) if m in PAPER_ROW else None for m in METHODS}
    for m in PAPER_ROW:  # the appendix repeats the main table, with one more row (tested in tests/)
        if PAPER_ROW[m] in main.rows and main.value(PAPER_ROW[m], "Images/sec") != k4[m].images_per_s:
            raise ValueError(f"{table4.table} and {main.table} disagree on {PAPER_ROW[m]!r}")
    machine = pn.timing_machine(table4, "Images/sec").describe(section=False)
    rows.append(Row(f"Katharopoulos {main.table}, {table4.table}: {machine}", _cells(k4)))
    ng = {m: Speed(nguyen.value(NGUYEN_ROW[m], "Images/sec")) if m in NGUYEN_ROW else None for m in METHODS}
    machine = pn.timing_machine(nguyen, "Images/sec").describe(section=False)
    rows.append(Row(f"Nguyen {nguyen.table}: {machine}", _cells(ng)))
    for column in table5.columns:
        t5 = {m: Speed(1.0 / table5.value(PAPER_ROW[m], column), batch=1) if m in PAPER_ROW else None
              for m in METHODS}
        machine = pn.timing_machine(table5, column).describe(section=False)
        rows.append(Row(f"Katharopoulos {table5.table}, batch 1: {machine}", _cells(t5)))
    return rows


def machine_label(record: dict) -> str:
    """The machine a record names: its GPU ("NVIDIA H200"), or "CPU (Intel Xeon …, AVX-512, AMX, 1 thread)" from its
    ``machine`` (:func:`lra_kit.results.machine_info`; older records: its processor) and the threads of its runs."""
    device = str(record.get("device", "?"))
    if device != "cpu":
        return device
    config = record.get("config", {})
    threads = sorted({run.get("threads") for run in config.get("runs", [config]) if run.get("threads")})
    machine = record.get("machine") or {}
    if machine.get("cpu_model"):
        isa = machine.get("isa", [])
        parts = [machine["cpu_model"]] + [name for name, flag in (("AVX-512", "avx512f"), ("AMX", "amx_tile"))
                                          if flag in isa]
    else:
        parts = [record["processor"]] if record.get("processor") else []
    if threads:
        parts.append("-".join(map(str, threads)) + (" thread" if threads == [1] else " threads"))
    return "CPU" + (f" ({', '.join(parts)})" if parts else "")


def _largest(rows: list[dict]) -> dict[str, dict]:
    """Per method, its row at the largest batch (a row of the largest-batch search first where batches tie)."""
    best: dict[str, dict] = {}
    for r in rows:
        key = (r["batch"], r.get("batch_search") == "largest")
        if r["method"] not in best or key > (best[r["method"]]["batch"], best[r["method"]].get("batch_search")
                                              == "largest"):
            best[r["method"]] = r
    return best


def timed_apart(record: dict) -> bool:
    """Whether ``record`` timed its steps apart from the prompt pass and the set-up, in rounds, eager against eager
    (``config.timing``, in the record's config or in each of its runs'); records made before did not."""
    config = record.get("config", {})
    runs = config.get("runs", [config])
    return bool(runs) and all("timing" in run for run in runs)


def _missing(method: str) -> str:
    return NO_RECORD_YET if method in BASELINES else NOT_RECORDED


def record_rows(task: str, name: str, record: dict) -> list[Row]:
    """A record's rows for ``task``: batch 1, and the largest batch it timed (each method's, where they differ), each
    eager; then the same for the CUDA graph replay (``graph``) where the record has it. A method the record has not
    timed reads :data:`NOT_RECORDED` (a baseline: :data:`NO_RECORD_YET`); a graph row's uncached methods
    :data:`EAGER_ONLY`."""
    _check_task(task)
    label = f"ours, {machine_label(record)}"
    rows = [r for r in record["metrics"]["rows"] if r["task"] == task and r["method"] in METHODS]
    if not rows:
        return [Row(label, {m: _missing(m) for m in METHODS})]

    def cell(method: str, by_method: dict, part: str | None) -> Speed | str:
        r = by_method.get(method)
        if part is not None and (r is None or part not in r):
            return EAGER_ONLY if method not in LEAN else NOT_RECORDED
        if r is None:
            return _missing(method)
        if part is not None:
            r = dict(r[part], batch=r["batch"])
        if r["extrapolation"] not in SPEED_MARK:
            raise ValueError(f"record {name!r}: unknown extrapolation {r['extrapolation']!r}")
        return Speed(r["images_per_s"], SPEED_MARK[r["extrapolation"]], r["batch"])

    def speeds(by_method: dict, part: str | None) -> dict:
        return {m: cell(m, by_method, part) for m in METHODS}

    ones = [r for r in rows if r["batch"] == 1]
    one = {r["method"]: r for r in sorted(ones, key=lambda r: r.get("batch_search") == "largest", reverse=True)}
    largest = _largest(rows)
    batches = {r["batch"] for r in largest.values()}
    graphs = [None] + (["graph"] if any("graph" in r for r in rows) else [])
    out = []
    for part in graphs:
        how = ", CUDA graphs" if part else ""
        if one:
            out.append(Row(f"{label}, batch 1{how}", _cells(speeds(one, part))))
        if max(batches) > 1:
            each = f"batch {next(iter(batches))}" if len(batches) == 1 else "the largest batch of each"
            out.append(Row(f"{label}, {each}{how}", _cells(speeds(largest, part))))
    return out


def generation_records(results: Path | str | None) -> dict[str, dict]:
    """Every ``results/bench/generation-*.json``, by the name after ``generation-`` ("cpu", "h200"), the CPU's
    first; {} where ``results`` is None or holds none."""
    if results is None:
        return {}
    paths = glob.glob(str(Path(results) / "bench" / "generation-*.json"))
    names = {Path(p).stem.removeprefix("generation-"): p for p in paths}
    return {n: json.loads(Path(names[n]).read_text()) for n in sorted(names, key=lambda n: (n != "cpu", n))}


def speed_rows(task: str, records: dict[str, dict], here: bool = True) -> list[Row]:
    """The papers' rows for ``task`` (:func:`paper_rows`), then each record's (:func:`record_rows`); where there is
    no record, one row of :data:`NOT_RECORDED`, or of :data:`NOT_HERE` where the results are not ``here``."""
    rows = paper_rows(task)
    for name, record in records.items():
        rows += record_rows(task, name, record)
    if not records:
        rows.append(Row("ours", {m: NOT_RECORDED if here else NOT_HERE for m in METHODS}))
    return rows


def _num(x: float) -> str:
    """Three significant digits, or a whole number from 100 on (a speed-up of 4,462)."""
    if x >= 100:
        return f"{x:,.0f}"
    if x <= 0:
        return f"{x:.3g}"
    return f"{x:.{max(0, 2 - math.floor(math.log10(x)))}f}"


def _speed_text(speed: Speed, paper: bool) -> str:
    return speed.mark + (f"{speed.images_per_s:g}" if paper and speed.batch is None else _num(speed.images_per_s))


def format_cell(cell, *, paper: bool = False, batch: bool = False) -> str:
    """"142.8 (317×; 18.9×)": images/s, then the speed-ups over the row's softmax and key/value cache; a paper's
    images/s as printed; ``batch``: the batch first ("batch 16: …"); :data:`NOT_IN_PAPER` for None."""
    if cell is None:
        return NOT_IN_PAPER
    if isinstance(cell, str):
        return cell
    ups = [f"{up[1]}{_num(up[0])}×" for up in (cell.over_softmax, cell.over_cache) if up is not None]
    if cell.over_softmax is None and cell.over_cache is not None:
        ups.insert(0, "–")
    text = _speed_text(cell.speed, paper) + (f" ({'; '.join(ups)})" if ups else "")
    return f"batch {cell.speed.batch}: {text}" if batch else text


def speed_table(task: str, records: dict[str, dict], here: bool = True,
                methods: tuple[str, ...] = METHODS) -> tuple[list[str], list[list[str]]]:
    """The header and rows of ``task``'s table (:func:`speed_rows`), for :func:`lra_kit.viz.results.markdown_table`:
    a row per source, a column per method of ``methods`` (the page splits :data:`OURS` from :data:`BASELINES`,
    so that each table fits the column at 1280 px)."""
    if not methods or any(m not in METHODS for m in methods):
        raise ValueError(f"methods must be a non-empty selection of {', '.join(METHODS)}, got {methods!r}")
    header = ["source, machine, batch"] + [LABELS[m] for m in methods]
    table = []
    papers = len(paper_rows(task))
    for i, row in enumerate(speed_rows(task, records, here)):
        each = "the largest batch of each" in row.source
        table.append([row.source] + [format_cell(row.cells[m], paper=i < papers, batch=each) for m in methods])
    return header, table


def speed_caption(task: str) -> str:
    """What a cell of ``task``'s table says, and where the papers' rows come from."""
    _check_task(task)
    title, main, table4, table5, nguyen = PAPERS[task]
    return (f"**{title}**: images generated per second; in parentheses the speed-up over the softmax transformer of "
            f"the same row and, for the RNNs ({', '.join(LABELS[m] for m in RNNS)}), over its key/value cache. "
            f"{' and '.join(LABELS[m] for m in BASELINES)} are Reformer's LSH attention with 1 and 4 rounds of "
            f"hashing, which re-run the whole prefix for every pixel, as the softmax transformer does. "
            f"The papers' rows: Katharopoulos et al. {main.table} ({main.section}) with the key/value cache "
            f"(\"stateful-softmax\") of {table4.table} ({table4.section}), Nguyen et al. {nguyen.table} "
            f"({nguyen.section}), and {table5.table}'s seconds per image at batch 1 ({table5.section}), as "
            f"1 ÷ seconds. A record made since the steps are timed alone (the notes below say which) times every "
            f"method eagerly, the prompt pass and the set-up apart; a row marked \"CUDA graphs\" holds its lean "
            f"steps replayed as CUDA graphs, compared with each other only.")


def speed_notes(records: dict[str, dict]) -> str:
    """The marks, the machines the papers name (and for what), and how each record's largest batch was chosen."""
    k_gpu = pn.timing_machine(pn.KATHAROPOULOS_TABLE4_MNIST, "Images/sec")
    ng = pn.timing_machine(pn.MOMENTUM_TABLE2, "Images/sec")
    lines = ["≤ at most, ≥ at least, ~ an estimate: the record timed only a prefix of the image (its "
             f"`extrapolation`); {NOT_IN_PAPER}: no such row in the paper; {NOT_RECORDED}: no such row in the "
             f"record; {NO_RECORD_YET}: a baseline the record was made without; {EAGER_ONLY}: a method that "
             "replays no CUDA graph (it re-runs the prefix). A speed-up at the largest batch compares each method "
             "at its own largest batch.",
             f"The papers' machines: Katharopoulos et al. timed on a {k_gpu.kind} ({k_gpu.section}) whose card "
             f"they do not name: {k_gpu.context}. Nguyen et al. do not say where they timed: {ng.context}. "
             "Neither paper states the batch of its images/s; Katharopoulos et al.'s linear model generates "
             "10,000 MNIST images at once on one GPU (§4.2.1)."]
    for name, record in records.items():
        config = record.get("config", {})
        runs = config.get("runs", [config])
        caps = sorted({run.get("largest_batch", {}).get("max_batch") for run in runs} - {None})
        searched = any(run.get("largest_batch", {}).get("searched") for run in runs)
        loads = [v for run in runs for v in (run.get("load_average_1min") or {}).values() if v is not None]
        commits = sorted({str(run.get("git_commit") or record.get("git_commit") or "?")[:10] for run in runs})
        line = (f"Record `generation-{name}.json` ({machine_label(record)}, torch {record.get('torch', '?')}, "
                f"{len(runs)} run{'s' if len(runs) != 1 else ''}, commit{'s' if len(commits) > 1 else ''} "
                f"{', '.join(commits)}, {str(record.get('date', '?'))[:10]})")
        if searched and caps:
            line += (f": the largest batch found by doubling up to {', '.join(map(str, caps))}"
                     + (" (on a CPU, memory does not bound it: the cap does)" if record.get("device") == "cpu" else ""))
        if loads:
            line += f"; 1-minute load average before and after its runs {min(loads):g}–{max(loads):g}"
        line += "; " + timing_sentence(record)
        lines.append(line + ".")
    return "\n".join(f"- {line}" for line in lines)


def timing_sentence(record: dict) -> str:
    """What ``record``'s times are: the steps alone, medians of rounds, eager against eager (:func:`timed_apart`), or
    what a record made before that timed."""
    if not timed_apart(record):
        gpu = record.get("device", "cpu") != "cpu"
        return ("made before the steps were timed apart: its spans include the prompt pass and set-up"
                + (" and CUDA-graph capture, its lean rows replayed CUDA graphs while softmax ran eagerly (so its "
                   "ratios to linear set eager against graph)" if gpu else "") + ", and most rows are one sample")
    runs = record["config"].get("runs", [record["config"]])
    rounds = sorted({run.get("repeats", 1) for run in runs})
    return (f"the steps timed apart from the prompt pass and set-up, medians of {'-'.join(map(str, rounds))} "
            f"round{'s' if rounds != [1] else ''}, every ratio eager ÷ eager"
            + (" (graph ÷ graph in the CUDA-graph rows)" if any("graph" in r for r in record["metrics"]["rows"])
               else ""))


def lean_step_sentence(record: dict, task: str, batch: int = 1) -> str | None:
    """One sentence on what the lean step (:mod:`lra_kit.models.decode`) changed in ``record`` at ``batch``: the
    operators per pixel and the milliseconds per pixel through the modules' step and through the lean step, on the
    same pixels (the rows timed with ``--reference``); None where the record has no such rows."""
    _check_task(task)
    rows = [r for r in record["metrics"]["rows"] if r["task"] == task and r["batch"] == batch
            and "modules" in r and "modules_ops_per_pixel" in r and "ops_per_pixel" in r]
    # kernels (neither views nor allocations) where the record counted them, else every operator
    kernels = bool(rows) and all("modules_kernels_per_pixel" in r and "kernels_per_pixel" in r for r in rows)
    count, what = ("kernels_per_pixel", "kernels launched") if kernels else ("ops_per_pixel", "operators dispatched")
    rows.sort(key=lambda r: METHODS.index(r["method"]) if r["method"] in METHODS else len(METHODS))
    if not rows:
        return None

    def pairs(before, after, digits: int, named: bool) -> str:
        items = [f"{before(r):.{digits}f} to {after(r):.{digits}f}"
                 + (f" ({LABELS.get(r['method'], r['method'])})" if named else "") for r in rows]
        return ", ".join(items[:-1]) + (" and " if len(items) > 1 else "") + items[-1]

    rounds = sorted({len(r.get("rounds_s", [])) or 1 for r in rows})
    medians = "one round" if rounds == [1] else f"medians of {'-'.join(map(str, rounds))} rounds"
    if all("launches_per_pixel" in r for r in rows):  # the fused RNN steps' Triton kernels counted beside ATen's
        what += " (Triton's included)"
    return (f"On {PAPERS[task][0]} at batch {batch}, on the {machine_label(record)}, the lean step in place of the "
            f"modules' step took the {what} per pixel from "
            f"{pairs(lambda r: r['modules_' + count], lambda r: r.get('launches_per_pixel', r[count]), 0, True)}, "
            f"and the milliseconds per pixel from "
            f"{pairs(lambda r: r['modules']['ms_per_pixel'], lambda r: r['ms_per_pixel'], 2, False)} "
            f"in the same order ({medians}, over the same pixels).")


def bound_sentence(record: dict, task: str) -> str | None:
    """How far ``record``'s lean rows for ``task`` at their largest batch are from the least time their bytes allow
    (``times_bound``: the time ÷ ``bound_ms_per_pixel``, :mod:`lra_kit.bench.generation_bound`); None where the record
    has no bound (a CPU's, or one made before the bound was recorded)."""
    _check_task(task)
    rows = [r for r in _largest([r for r in record["metrics"]["rows"] if r["task"] == task]).values()
            if "times_bound" in r or "times_bound" in r.get("graph", {})]
    if not rows:
        return None
    rows.sort(key=lambda r: METHODS.index(r["method"]) if r["method"] in METHODS else len(METHODS))
    # the CUDA graph replay where the record has it (what generate() runs on CUDA), else the row's own time
    bounded = [(r, r["graph"], "CUDA graphs") if "times_bound" in r.get("graph", {})
               else (r, r, "eager" if timed_apart(record) else "") for r in rows]
    parts = [f"{LABELS.get(r['method'], r['method'])} {b['times_bound']:.1f}× at batch {r['batch']} "
             f"(bound {b['bound_ms_per_pixel']:.3f} ms a pixel{'; ' + how if how else ''})" for r, b, how in bounded]
    return (f"On {PAPERS[task][0]}, on the {machine_label(record)}, the time of a pixel ÷ the least time its bytes "
            f"allow: " + ", ".join(parts) + ".")


HOLDS, CONTRADICTED, UNDECIDED = "holds", "contradicted", "not decided (a prefix's bound points the wrong way)"


def _verdict(ratio: float, mark: str, above: float = 1.0) -> str:
    """Whether a ratio with its mark is above ``above``: it holds where the measured value is and the true one can
    only be larger (no mark, or "≥"), is contradicted where it is not and the true one can only be smaller, and is
    not decided otherwise."""
    if ratio > above and mark in ("", "≥"):
        return HOLDS
    if ratio <= above and mark in ("", "≤"):
        return CONTRADICTED
    return UNDECIDED


def _both(verdicts: list[str]) -> str:
    if CONTRADICTED in verdicts:
        return CONTRADICTED
    return HOLDS if all(v == HOLDS for v in verdicts) else UNDECIDED


def appendix_c_claims(record: dict) -> list[list[str]]:
    """Katharopoulos et al. appendix §C's claims that a record can check at batch 1, each as [claim, measured,
    verdict] (:data:`HOLDS`, :data:`CONTRADICTED`, :data:`UNDECIDED` or :data:`NO_RECORD_YET`): the uncached softmax
    is the slowest of the four methods of Table 4 and Nguyen et al.; the key/value cache is slower than the linear RNN,
    the more so the longer the image (CIFAR-10's 3,072 pixels against MNIST's 784), since its cost per pixel grows
    with the prefix; momentum costs about what linear does (images/s within a factor 1.25 either way: Nguyen et al.
    Tables 2-3); and LSH-1 and LSH-4, which re-run the prefix (§C.1), are slower than linear. Each ratio of images/s
    carries the mark of the rows it divides (:func:`ratio_mark`); an RNN's estimate (constant cost per step) counts
    as a measurement."""
    def speed(task: str, method: str) -> Speed | None:
        rows = [r for r in record["metrics"]["rows"] if (r["task"], r["batch"], r["method"]) == (task, 1, method)]
        if not rows:
            return None
        r = min(rows, key=lambda r: r.get("batch_search") == "largest")  # the row of batch 1 asked for, if any
        return Speed(r["images_per_s"], SPEED_MARK[r["extrapolation"]].replace("~", ""), 1)

    def over(task: str, a: str, b: str) -> tuple[float, str] | None:
        x, y = speed(task, a), speed(task, b)
        if x is None or y is None:
            return None
        return x.images_per_s / y.images_per_s, ratio_mark(x.mark, y.mark)

    def text(pair: tuple[float, str]) -> str:
        return f"{pair[1]}{pair[0]:.2f}"

    tasks = [t for t in PAPERS if speed(t, "linear") is not None]
    title = {t: PAPERS[t][0] for t in tasks}
    claims = []
    others = LEAN  # the ways with a step (a cache or a state), each against the prefix re-run of softmax
    parts, verdicts = [], []
    for t in tasks:
        pairs = {m: over(t, m, "softmax") for m in others}
        pairs = {m: x for m, x in pairs.items() if x is not None}
        parts.append(f"{title[t]}: " + ", ".join(f"{LABELS[m]} {text(x)}" for m, x in pairs.items()))
        verdicts += [_verdict(*x) for x in pairs.values()]
    claims.append(["the uncached softmax is the slowest of softmax, the key/value cache, linear and momentum",
                   "images/s ÷ softmax's: " + "; ".join(parts), _both(verdicts)])
    leads = {t: over(t, "linear", CACHE) for t in tasks}
    leads = {t: x for t, x in leads.items() if x is not None}
    verdicts = [_verdict(*x) for x in leads.values()]
    measured = "linear ÷ key/value cache images/s: " + ", ".join(f"{title[t]} {text(x)}" for t, x in leads.items())
    if len(leads) == 2:
        (m, mm), (c, cm) = leads["mnist"], leads["cifar10"]
        verdicts.append(_verdict(c / m, ratio_mark(cm, mm)))
    claims.append(["the key/value cache is slower than linear, more so on CIFAR-10 than on MNIST", measured,
                   _both(verdicts) if len(leads) == 2 else UNDECIDED])
    mom = {t: over(t, "momentum", "linear") for t in tasks}
    mom = {t: x for t, x in mom.items() if x is not None}
    within = [HOLDS if 1 / 1.25 < x[0] < 1.25 else CONTRADICTED for x in mom.values()]
    claims.append(["momentum costs about what linear does (within a factor 1.25)",
                   "momentum ÷ linear images/s: " + ", ".join(f"{title[t]} {text(x)}" for t, x in mom.items()),
                   _both(within)])
    for method in BASELINES:
        slower = {t: over(t, "linear", method) for t in tasks}
        slower = {t: x for t, x in slower.items() if x is not None}
        claims.append([f"{LABELS[method]}, which re-runs the prefix, is slower than linear",
                       f"linear ÷ {LABELS[method]} images/s: " + ", ".join(f"{title[t]} {text(x)}"
                                                                          for t, x in slower.items())
                       if slower else "–",
                       _both([_verdict(*x) for x in slower.values()]) if slower else NO_RECORD_YET])
    return claims


def compile_sentence(results: Path | str | None) -> str | None:
    """What ``torch.compile`` of the RNN step did on the CPU, from ``results/bench/decode-profile-cpu.json``
    (``lra-kit bench decode-profile --compile``): the range of its time over the eager step's, and whether every
    comparison drew the same tokens; None where that record, or its comparison, is not there."""
    path = None if results is None else Path(results) / "bench" / "decode-profile-cpu.json"
    if path is None or not path.is_file():
        return None
    record = json.loads(path.read_text())
    rows = [r for r in record["metrics"]["rows"] if "compile" in r]
    if not rows:
        return None
    ratios = [r["compile"]["compiled_over_eager"] for r in rows]
    tasks = " and ".join(dict.fromkeys(PAPERS[r["task"]][0] for r in rows if r["task"] in PAPERS))
    batches = " and ".join(map(str, sorted({r["batch"] for r in rows})))
    methods = " and ".join(dict.fromkeys(LABELS.get(r["method"], r["method"]) for r in rows))
    same = "the same tokens each time" if all(r["compile"]["same_tokens"] for r in rows) else "different tokens"
    return (f"On the {machine_label(record)}, `torch.compile` of the RNN step took "
            f"{min(ratios):.2f}–{max(ratios):.2f}× the eager step's time ({len(rows)} comparisons: {tasks}, batch "
            f"{batches}, {methods}; {same}), " + ("so `generate` runs the step eagerly on a CPU." if min(ratios) > 1
                                                  else f"faster in {sum(x < 1 for x in ratios)} of them."))


def launch_table(counts: dict) -> tuple[list[str], list[list[str]]]:
    """:func:`lra_kit.bench.generation.launch_counts` as a table: per method, the kernels one generated pixel launches
    on the CPU's path (ATen) and on the GPU's (ATen + Triton = all launches)."""
    rows = []
    for method, both in counts.items():
        gpu = both["gpu"]
        fused = f"{gpu['kernels_per_pixel']:.0f}"
        if "launches_per_pixel" in gpu:
            fused += f" + {gpu['triton_kernels_per_pixel']:.0f} = {gpu['launches_per_pixel']:.0f}"
        rows.append([LABELS.get(method, method), f"{both['cpu']['kernels_per_pixel']:.0f}", fused])
    return ["method", "CPU path: ATen kernels", "GPU path: ATen + Triton kernels"], rows


def live_table(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """A short live benchmark (``generation.run``) as a table that fits the page: per method, the pixels timed,
    ms per pixel, time ÷ linear (with the row's mark where only a prefix was timed) and kernels per pixel."""
    mark = {"none": "", "lower bound": "≥ ", "estimate": "~ "}
    cells = [[r["method"], f"{r['pixels_timed']}/{r['pixels']}", f"{r['ms_per_pixel']:.2f}",
              f"{mark[r['extrapolation']]}{r['time_over_linear']:.2f}",
              f"{r['kernels_per_pixel']:.0f}" if "kernels_per_pixel" in r else "—"] for r in rows]
    return ["method", "pixels timed", "ms/pixel", "÷ linear", "kernels/pixel"], cells


__all__ = ["LABELS", "PAPERS", "NOT_RECORDED", "NOT_HERE", "NOT_IN_PAPER", "NO_RECORD_YET", "EAGER_ONLY", "BASELINES",
           "HOLDS", "CONTRADICTED", "UNDECIDED", "Speed", "Cell", "Row", "ratio_mark", "timed_apart", "timing_sentence",
           "appendix_c_claims",
           "paper_rows", "record_rows", "generation_records", "speed_rows", "format_cell", "speed_table",
           "speed_caption", "speed_notes", "machine_label", "lean_step_sentence", "launch_table", "bound_sentence",
           "compile_sentence", "live_table"]
