"""The CPU record of ``lra-kit bench attention`` beside the papers (notebooks/speed_memory.md).

The record (``results/bench/attention-cpu.json``) times one forward+backward of each attention alone and measures
what a fresh process pays for it (:func:`lra_kit.bench.measure.process_peak`), each row against its SDPA baseline
timed in the same rounds (``speedup_vs_sdpa``: SDPA's time ÷ the row's; ``memory_vs_sdpa``: the row's peak ÷
SDPA's). :func:`luna_table2` sets those ratios at 1K–4K beside Ma et al. Table 2, which reports the same two ratios
(training steps per second and peak memory, relative to the Transformer) for whole models; :func:`missing_rows`
says in one line which of the benchmark's rows a record lacks.
"""
from __future__ import annotations

from lra_kit.bench.attention import BASELINE, METHODS
from lra_kit.bench.attention_gpu_record import CPU_RECORD, length_label
from lra_kit.paper_numbers import LUNA_TABLE2

__all__ = ["CPU_RECORD", "RECORD_COMMAND", "luna_table2", "missing_rows", "paper_row"]
# Re-records the CPU table with every row: 1K-4K for Luna Table 2 (3K included), 8K and 16K for the slopes of
# Katharopoulos et al. Fig. 1; 3 rounds, so that it fits about 20 minutes of a machine whose cores run other work
# (docs/gpu.md, "CPU memory: what a process pays").
RECORD_COMMAND = ("lra-kit bench attention --device cpu --lengths 1024 2048 3072 4096 8192 16384 --repeats 3 "
                  "--json results/bench/attention-cpu.json")
# The record's rows beside the rows of Ma et al. Table 2 they come closest to (None: no row there). The paper does
# not say how many hashing rounds its Reformer used, so each of ours stands beside that one row.
TABLE2_ROWS = {"linear_causal": "Linear Trans.", "performer_causal": "Performer", "luna": "Luna-{l}",
               "momentum_causal": None, "lsh1_causal": "Reformer", "lsh4_causal": "Reformer",
               "lsh8_causal": "Reformer", "linformer": "Linformer"}
TABLE2_LENGTHS = (1024, 2048, 3072, 4096)  # the paper's 1K, 2K, 3K, 4K
TABLE2_COLUMNS = {"speedup_vs_sdpa": "Steps/s", "memory_vs_sdpa": "Memory"}
MISSING = "–"


def missing_rows(record: dict) -> str | None:
    """One line naming the benchmark's CPU rows (``METHODS``) that ``record`` has at none of its lengths, and the
    command that records them; None when it has them all."""
    ran = {r["method"] for r in record["metrics"]["rows"]}
    lacking = [m for m in METHODS if m not in ran]
    if not lacking:
        return None
    return (f"The record of {record['date'][:10]} has no {', '.join(lacking)} rows (made before the benchmark had "
            f"them): `{RECORD_COMMAND}` records them.")


def paper_row(method: str, record: dict) -> str | None:
    """The row of Ma et al. Table 2 that ``method`` of ``record`` stands beside (Luna's by the record's l)."""
    row = TABLE2_ROWS.get(method)
    if row is None:
        return None
    row = row.format(l=record["config"].get("luna_length"))
    return row if row in LUNA_TABLE2.rows else None


def luna_table2(record: dict, key: str) -> tuple[list[str], list[list[str]]]:
    """(header, rows) for :func:`lra_kit.viz.results.markdown_table`: per row of the record that Ma et al. Table 2
    has a counterpart for (``TABLE2_ROWS``, in the record's order), its ratio ``key`` (``speedup_vs_sdpa`` or
    ``memory_vs_sdpa``) at 1K, 2K, 3K, 4K, each followed by the paper's in parentheses ("–": a length the record
    lacks). The second column names the row's baseline: causal SDPA for the causal rows, SDPA for the others."""
    if key not in TABLE2_COLUMNS:
        raise ValueError(f"key must be one of {sorted(TABLE2_COLUMNS)}, got {key!r}")
    rows = {(r["length"], r["method"]): r for r in record["metrics"]["rows"]}
    methods = [m for m in dict.fromkeys(r["method"] for r in record["metrics"]["rows"]) if m in TABLE2_ROWS]
    out = []
    for m in methods:
        paper = paper_row(m, record)
        cells = []
        for n in TABLE2_LENGTHS:
            ours = rows.get((n, m), {}).get(key)
            text = MISSING if ours is None else f"{ours:.2f}"
            if paper is not None:
                text += f" ({LUNA_TABLE2.value(paper, f'{TABLE2_COLUMNS[key]} {length_label(n)}'):.2f})"
            cells.append(text)
        out.append([m, BASELINE[m], paper or MISSING, *cells])
    return ["ours", "against", "paper's row", *(length_label(n) for n in TABLE2_LENGTHS)], out
