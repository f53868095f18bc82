"""The CPU record of the attention benchmark beside Ma et al. Table 2 (notebooks/speed_memory.md), from a made-up
record: 1K, 2K and 4K (no 3K), and the papers' baselines at 1K only."""
from pathlib import Path

import pytest

from lra_kit.bench.attention import METHODS
from lra_kit.bench.attention_cpu_record import RECORD_COMMAND, luna_table2, missing_rows, paper_row
from lra_kit.paper_numbers import LUNA_TABLE2


def fake_record(methods=("sdpa_causal", "linear_causal", "sdpa", "luna"), luna_length=16) -> dict:
    rows = []
    for n, speed in ((1024, 1.5), (2048, 3.0), (4096, 6.0)):
        for m in methods:
            base = m.startswith("sdpa")
            rows.append({"length": n, "method": m, "median_s": 1.0, "speedup_vs_sdpa": None if base else speed,
                         "memory_vs_sdpa": None if base else 1 / speed})
    rows += [{"length": 1024, "method": m, "median_s": 1.0, "speedup_vs_sdpa": 0.25, "memory_vs_sdpa": 2.0}
             for m in ("lsh4_causal", "linformer")]
    return {"date": "2026-12-01T00:00:00+00:00", "config": {"luna_length": luna_length, "lengths": [1024, 2048, 4096]},
            "metrics": {"rows": rows}}


def test_table2_sets_ours_beside_the_papers_row_at_each_length():
    header, rows = luna_table2(fake_record(), "speedup_vs_sdpa")
    assert header == ["ours", "against", "paper's row", "1K", "2K", "3K", "4K"]
    by = {r[0]: r for r in rows}
    ran = dict.fromkeys(r["method"] for r in fake_record()["metrics"]["rows"])
    assert list(by) == [m for m in ran if not m.startswith("sdpa")]  # the record's order; no SDPA rows
    paper = [LUNA_TABLE2.value("Linear Trans.", f"Steps/s {n}") for n in ("1K", "2K", "3K", "4K")]
    assert by["linear_causal"] == ["linear_causal", "sdpa_causal", "Linear Trans.", f"1.50 ({paper[0]:.2f})",
                                   f"3.00 ({paper[1]:.2f})", f"– ({paper[2]:.2f})", f"6.00 ({paper[3]:.2f})"]
    assert by["luna"][1:3] == ["sdpa", "Luna-16"]
    assert by["lsh4_causal"][1:4] == ["sdpa_causal", "Reformer", "0.25 (0.50)"] and by["lsh4_causal"][4].startswith("–")
    assert by["linformer"][1:4] == ["sdpa", "Linformer", "0.25 (1.20)"]
    _, memory = luna_table2(fake_record(), "memory_vs_sdpa")
    assert memory[0][3] == f"0.67 ({LUNA_TABLE2.value('Linear Trans.', 'Memory 1K'):.2f})"
    with pytest.raises(ValueError, match="key must be one of"):
        luna_table2(fake_record(), "median_s")


def test_luna_stands_beside_the_papers_row_of_its_own_length_only():
    assert paper_row("luna", fake_record(luna_length=128)) == "Luna-128"
    assert paper_row("luna", fake_record(luna_length=32)) is None  # the paper has no Luna-32
    _, rows = luna_table2(fake_record(luna_length=32), "speedup_vs_sdpa")
    assert next(r for r in rows if r[0] == "luna")[2:4] == ["–", "1.50"]
    assert paper_row("momentum_causal", fake_record()) is None


def test_missing_rows_names_what_the_record_lacks_and_how_to_record_it():
    line = missing_rows(fake_record())
    lacking = [m for m in METHODS if m not in ("sdpa_causal", "linear_causal", "sdpa", "luna", "lsh4_causal",
                                                 "linformer")]
    assert line.startswith(f"The record of 2026-12-01 has no {', '.join(lacking)} rows") and RECORD_COMMAND in line
    assert "\n" not in line
    assert missing_rows(fake_record(methods=METHODS)) is None


def test_the_recording_command_is_the_one_the_docs_give():
    docs = (Path(__file__).parent.parent / "docs" / "gpu.md").read_text()
    assert RECORD_COMMAND in " ".join(docs.replace("\\\n", " ").split())


def test_every_row_beside_table2_is_a_row_of_the_benchmark_and_every_baseline_has_its_row():
    from lra_kit.bench.attention import PAPERS_BASELINES
    from lra_kit.bench.attention_cpu_record import TABLE2_ROWS

    assert set(TABLE2_ROWS) <= set(METHODS) and set(PAPERS_BASELINES) <= set(TABLE2_ROWS)
    for method, row in TABLE2_ROWS.items():
        assert row is None or row.format(l=16) in LUNA_TABLE2.rows, (method, row)
