"""The GPU record of ``lra-kit bench attention --device cuda`` as two compact tables (notebooks/speed_memory.md).

A GPU record (``results/bench/attention-<gpu>.json``, :func:`gpu_records`) holds per length a row per method
(``metrics.rows``: ``median_s``, ``bound_ms``), the ratios the GPU path is judged by (``metrics.ratios``) and the
targets' verdicts (``metrics.targets``). :func:`gpu_tables` sets them out in two tables of at most six columns:
the milliseconds of every method of the run, and, for ours, the time over the bound (``median_s`` ÷
``bound_ms``: 1 is the floor, the least HBM traffic of a forward+backward ÷ the card's bandwidth) with
linear ÷ fla, cuDNN ÷ linear and momentum ÷ linear, each ratio a target judges marked ✓ (met) or ✗ (missed).
"""
from __future__ import annotations

from pathlib import Path

CPU_RECORD = "attention-cpu.json"
NO_GPU_RECORD = "no GPU record yet: `make gpu-check` writes results/bench/attention-<gpu>.json"
# (header, key of metrics.ratios) of the ratio table, after the two "× bound" columns of ours.
RATIO_COLUMNS = (("linear ÷ fla", "linear_over_fla"), ("cuDNN ÷ linear", "cudnn_over_linear"),
                 ("momentum ÷ linear", "momentum_over_linear"))
MISSING = "–"


def gpu_records(bench: Path) -> list[Path]:
    """The GPU records of the attention benchmark in ``bench`` (results/bench/): every ``attention-<gpu>.json``
    but the CPU's, sorted by name."""
    bench = Path(bench)
    if not bench.is_dir():
        raise ValueError(f"bench must be a folder (results/bench/), got {bench}")
    return sorted(p for p in bench.glob("attention-*.json") if p.name != CPU_RECORD)


def length_label(n: int) -> str:
    """A sequence length as the tables print it: 4096 → "4K", 1000 → "1,000"."""
    return f"{n // 1024}K" if n % 1024 == 0 else f"{n:,}"


def _ms(x: float | None) -> str:
    return MISSING if x is None else f"{x:.3g}" if x < 1000 else f"{x:.0f}"


def _ratio(x: float | None, met: bool | None) -> str:
    if x is None:
        return MISSING
    return f"{x:.2f}" + ("" if met is None else " ✓" if met else " ✗")


def gpu_tables(record: dict) -> dict:
    """The two tables of a GPU attention record, as ``{"device", "bandwidth", "times", "ratios", "targets",
    "unavailable"}``: ``times`` and ``ratios`` are (header, rows) for
    :func:`lra_kit.viz.results.markdown_table`; ``targets`` the labels of the targets that gave a verdict;
    ``unavailable`` one line per method that could not run (its first reason).

    ``times``: length, then the median ms of each method of the run ("unavailable" where it could not run).
    ``ratios``: length, ours' ``× bound`` (``median_s`` in ms ÷ ``bound_ms``, plain linear then momentum, the
    rows the record's ratios name), then :data:`RATIO_COLUMNS` from ``metrics.ratios``, each with ✓/✗ where a
    target of ``metrics.targets`` judges it at that length.
    """
    # a CUDA record's "device" is the card's name (lra_kit.results.device_name: "NVIDIA H200"), a CPU's "cpu"
    if not isinstance(record, dict) or record.get("device") in (None, "cpu"):
        raise ValueError("record must be a CUDA record of lra-kit bench attention (its 'device' is "
                         f"{record.get('device') if isinstance(record, dict) else type(record).__name__!r})")
    metrics = record.get("metrics", {})
    missing = [k for k in ("rows", "ratios", "targets") if k not in metrics]
    if missing:
        raise ValueError(f"record lacks metrics.{', metrics.'.join(missing)}: not a GPU attention record of "
                         "this version (rows, ratios, targets)")
    rows = {(r["length"], r["method"]): r for r in metrics["rows"]}
    gone = {(u["length"], u["method"]): u["unavailable"] for u in metrics.get("unavailable", [])}
    methods = list(dict.fromkeys([*record.get("config", {}).get("methods", []),
                                  *(m for _, m in rows), *(m for _, m in gone)]))
    lengths = sorted({n for n, _ in rows} | {n for n, _ in gone})
    verdicts = {(v["ratio"], v["length"]): v["met"] for v in metrics["targets"]}

    def times_cell(n, m):
        if (n, m) in rows:
            return _ms(rows[(n, m)]["median_s"] * 1e3)
        return "unavailable" if (n, m) in gone else MISSING

    def over_bound(n, m):
        r = rows.get((n, m))
        if r is None or not r.get("bound_ms"):
            return MISSING
        return f"{r['median_s'] * 1e3 / r['bound_ms']:.1f}"

    ratio_rows = []
    for r in sorted(metrics["ratios"], key=lambda r: r["length"]):
        n = r["length"]
        ratio_rows.append([length_label(n), over_bound(n, r.get("linear")), over_bound(n, r.get("momentum")),
                           *(_ratio(r.get(k), verdicts.get((k, n))) for _, k in RATIO_COLUMNS)])
    first_why = {}
    for (_, m), why in gone.items():
        first_why.setdefault(m, why if len(why) <= 120 else why[:117] + "...")
    bw = record.get("config", {}).get("bandwidth") or {}
    return {
        "device": record.get("device_detail", record["device"]),
        "bandwidth": (f"{bw['bytes_per_s'] / 1e12:.2f} TB/s ({bw['source']})" if bw.get("bytes_per_s")
                      else None),
        "times": (["N", *methods], [[length_label(n), *(times_cell(n, m) for m in methods)] for n in lengths]),
        "ratios": (["N", "linear × bound", "momentum × bound", *(h for h, _ in RATIO_COLUMNS)], ratio_rows),
        "targets": list(dict.fromkeys(v["target"] for v in metrics["targets"] if v["met"] is not None)),
        "unavailable": [f"{m}: {why}" for m, why in first_why.items()],
    }
