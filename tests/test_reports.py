"""lra_kit.reports: the README's table of reproductions and docs/budget.md's run costs, generated from results/.

The staleness check itself is in tests/test_readme.py; here, the pieces: the markers, the verdicts' short forms, a
hand edit caught and undone, a new record picked up, every attention in the early-budget ranges, short cells.
"""
from __future__ import annotations

import glob
import json
import shutil
from pathlib import Path

import pytest

from lra_kit import reports
from lra_kit.claims import lower, verdict, within
from lra_kit.cli import main
from lra_kit.data import LRA_TASKS
from lra_kit.results import spread

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"


def _clone(tmp_path: Path) -> Path:
    """The generated files and results/ (linked) in a temporary repository."""
    (tmp_path / "docs").mkdir()
    for name in reports.PARTS:
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "results").symlink_to(RESULTS, target_is_directory=True)
    return tmp_path


def test_replace_between_and_part_round_trip():
    start, end = reports.markers("results-table")
    text = f"# title\n\n{start}\nold\n{end}\n\nafter\n"
    new = reports.replace_between(text, "results-table", "| a |\n|---|\n| 1 |\n")
    assert reports.part(new, "results-table") == "| a |\n|---|\n| 1 |"
    assert new.startswith("# title\n\n") and new.endswith(f"{end}\n\nafter\n")
    # a start marker written by hand, without the generator's note, is found as well
    assert reports.part("<!-- results-table:start -->\nx\n<!-- results-table:end -->", "results-table") == "x"


@pytest.mark.parametrize("text", ["no markers\n", "<!-- t:start -->\n<!-- t:start -->\n<!-- t:end -->\n",
                                  "<!-- t:end -->\n<!-- t:start -->\n"])
def test_markers_missing_twice_or_out_of_order_are_an_error_naming_the_file(text):
    with pytest.raises(reports.ReportError, match="README.md: needs exactly one line '<!-- t:start"):
        reports.replace_between(text, "t", "x", "README.md")


def test_markers_name_is_checked():
    with pytest.raises(ValueError, match="name must be"):
        reports.markers("Results Table")


def test_short_verdict_of_every_verdict_form():
    one, many = spread([1.0]), spread([1.0, 1.2])
    assert reports.short_verdict(verdict(True, (3, 3))) == "holds"
    assert reports.short_verdict(verdict(False, (3, 1))) == "does not hold (one seed)"
    assert reports.short_verdict(lower(spread([1.0, 2.0]), spread([1.5, 3.0]))) == "not decided"
    assert reports.short_verdict(within(many, one)) in {"holds (one seed)", "not decided"}
    assert reports.short_verdict("no order to test: the paper's gap is under 0.5 points") == "no order to test"
    assert reports.short_verdict("waits for: linear") == "waits"
    with pytest.raises(ValueError, match="none of lra_kit.claims' verdicts"):
        reports.short_verdict("probably")


# The LRA runs of record: each task's preset (Retrieval has no data here).
OF_RECORD = {"text": "lra-cpu-2h", "listops": "lra-cpu-2h", "pathfinder": "lra-cpu-2h", "image": "lra-cpu-long"}


def test_lra_budget_is_the_preset_of_record():
    assert {task: reports.lra_budget(task) for task in reports.lra_tasks_of_record()} == OF_RECORD
    with pytest.raises(ValueError, match="retrieval"):
        reports.lra_budget("retrieval")


def test_a_number_edited_by_hand_is_caught_and_regenerated(tmp_path):
    root = _clone(tmp_path)
    assert reports.stale(root) == []
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    table = reports.part(text, "results-table")
    # adaptive momentum's mean test loss over its seeds, as the records give it, edited by hand
    losses = [json.loads(Path(p).read_text())["metrics"]["test"]["loss"]
              for p in glob.glob(str(RESULTS / "copy" / "copy-momentum+adaptive-cpu-20k*.json"))]
    shown = f"adaptive momentum {sum(losses) / len(losses):.4f} ({len(losses)})"
    assert shown in table
    readme.write_text(text.replace(shown, "adaptive momentum 0.1234 (3)"), encoding="utf-8")
    assert reports.stale(root) == ["README.md: results-table"]
    assert main(["report", "--check", "--root", str(root)]) == 1
    assert main(["report", "--root", str(root)]) == 0
    assert readme.read_text(encoding="utf-8") == text and reports.stale(root) == []


def test_budget_costs_edited_by_hand_are_caught(tmp_path):
    root = _clone(tmp_path)
    budget = root / "docs" / "budget.md"
    text = budget.read_text(encoding="utf-8")
    costs = reports.part(text, "run-costs")
    budget.write_text(text.replace(costs, costs.replace(" s (3)", " s (4)", 1)), encoding="utf-8")
    assert reports.stale(root) == ["docs/budget.md: run-costs"]


def test_a_new_record_is_picked_up(tmp_path):
    """A Text momentum run at lra-cpu-2h, recorded after the README was written, appears in its row."""
    lra = tmp_path / "lra"
    lra.mkdir()
    for path in glob.glob(str(RESULTS / "lra" / "text-*-lra-cpu-2h*.json")):
        if not Path(path).name.startswith("text-momentum-lra-cpu-2h"):  # momentum lands below
            shutil.copy(path, lra)
    before = reports.lra_row(tmp_path, "text")[1]
    assert "not recorded: momentum" in before and "momentum 63.2" not in before
    record = json.loads((lra / "text-linear-lra-cpu-2h.json").read_text())
    record["config"]["model"]["attention"] = "momentum"
    record["metrics"]["test"]["accuracy"] = 0.6321
    (lra / "text-momentum-lra-cpu-2h.json").write_text(json.dumps(record))
    after = reports.lra_row(tmp_path, "text")[1]
    assert "momentum 63.2," in after and "not recorded" not in after


def test_the_early_budget_ranges_cover_every_recorded_attention():
    """Image at lra-cpu: the range's low end is the lowest of all recorded attentions (Luna's), not of some."""
    cell = reports.lra_early_row(RESULTS)[1]
    for task in LRA_TASKS:
        accs = [json.loads(Path(p).read_text())["metrics"]["test"]["accuracy"]
                for p in glob.glob(str(RESULTS / "lra" / f"{task}-*-lra-cpu.json"))]
        if not accs:
            assert f"{task} not run" in cell
            continue
        low, high = f"{100 * min(accs):.1f}", f"{100 * max(accs):.1f}"
        assert f"{task} {low}" + ("" if low == high else f"–{high}") in cell, task


def test_verdicts_are_named_where_decided_and_counted_where_not():
    cell = reports._verdicts([("a above b", "holds"), ("c above d", "not decided"), ("e above f", "holds"),
                              ("g above h", "does not hold (one seed)"), ("i above j", "not decided"),
                              ("k above l", "waits")])
    assert cell == ("holds: a above b, e above f; does not hold (one seed): g above h; not decided: 2; "
                    "waiting for runs: 1")


# The README is a front door (tests/test_readme.py): a row of its table is the headline numbers and the verdicts,
# a few hundred characters, where the rows were 488 to 1,120 before the reading moved to the pages.
ROW_CHARACTERS = 460


def test_cells_stay_short():
    """The README's table gives headline numbers and verdicts; the reading lives on the pages."""
    table = reports.part((ROOT / "README.md").read_text(encoding="utf-8"), "results-table")
    for line in table.splitlines()[2:]:
        assert len(line) <= ROW_CHARACTERS, f"{len(line)} characters: {line[:80]}"
        assert line.count(" | ") == 2, line[:80]


def copied_gpu_attention_record(tmp_path):
    """results/bench copied under tmp_path, its GPU attention records and the first one read (skips without one)."""
    bench = tmp_path / "bench"
    shutil.copytree(RESULTS / "bench", bench)
    gpus = [p for p in bench.glob("attention-*.json") if p.name != "attention-cpu.json"]
    if not gpus:
        pytest.skip("no GPU record of the attention benchmark")
    return bench, gpus, json.loads(gpus[0].read_text())


def test_the_gpu_records_give_the_speed_and_generation_rows_their_headlines(tmp_path):
    """The speed row reads each results/bench/attention-<gpu>.json (linear ÷ fla over the lengths, the targets met),
    the appendix Table 5 row each generation-<gpu>.json beside the paper's GPU column; a changed record changes
    them."""
    from lra_kit.paper_numbers import KATHAROPOULOS_TABLE5_MNIST as T5

    bench, gpus, record = copied_gpu_attention_record(tmp_path)
    card = record["device_detail"].removeprefix("NVIDIA ")
    result, verdicts = reports.speed_row(tmp_path)[1:]
    assert f"{card}, {record['config']['dtype']}: linear ÷ fla's time" in result
    judged = [t for t in record["metrics"]["targets"] if t["met"] is not None]
    fair = "not fla as its users call it" not in record["config"]["definitions"]["fla_chunk_linear"]
    if fair:
        assert f"{card}: {sum(t['met'] for t in judged)} of {len(judged)} targets met" in verdicts
    else:  # the 2026-11-28 record fed fla a float32 φ: its ratios are said to be to that row, no target judged
        assert "(to fla fed a float32 φ, per-call latency)" in result and "targets not judged" in verdicts
    record["config"]["definitions"]["fla_chunk_linear"] = "fla.ops.linear_attn.chunk_linear_attn(F.elu(q) + 1, ...)"
    first = min(record["metrics"]["ratios"], key=lambda r: r["length"])
    first["linear_over_fla"] = 0.01  # below every other length's
    for t in record["metrics"]["targets"]:
        t["met"] = True if t["met"] is not None else None
    gpus[0].write_text(json.dumps(record))
    result, verdicts = reports.speed_row(tmp_path)[1:]
    assert "linear ÷ fla's time 0.01–" in result and f"{len(judged)} of {len(judged)} targets met" in verdicts

    generation = [p for p in bench.glob("generation-*.json") if p.name != "generation-cpu.json"]
    if generation:
        record = json.loads(generation[0].read_text())
        softmax = next(r for r in record["metrics"]["rows"]
                       if r["task"] == "mnist" and r["method"] == "softmax" and r["batch"] == 1)
        softmax["time_over_linear"] = 123.0
        generation[0].write_text(json.dumps(record))
        cell = reports.generation_bench_row(tmp_path)[1]
        assert ("timing" in record["config"]) != ("(before the fused step" in cell)
        gpu_part = cell.split(f"{record['device'].removeprefix('NVIDIA ')}")[1].split(": ", 1)[1]
        paper = T5.value("Softmax", "Seconds (GPU)") / T5.value("Linear (ours)", "Seconds (GPU)")
        assert gpu_part.startswith(f"softmax 123 ({reports._sig(paper)})")


def test_a_gpu_attention_record_must_say_what_its_fla_row_ran(tmp_path):
    """A record whose fla row is not defined gives no headline (the README cannot say what it compared with)."""
    bench, gpus, record = copied_gpu_attention_record(tmp_path)
    del record["config"]["definitions"]
    gpus[0].write_text(json.dumps(record))
    with pytest.raises(ValueError, match="what its fla row ran"):
        reports.speed_row(tmp_path)



def test_a_cpu_attention_record_gives_no_gpu_headline_even_with_a_targets_list(tmp_path):
    """The CPU record lists its (empty) targets as a GPU record does, and has no fla row: the speed row takes it as
    the CPU's, never as a card's whose fla row is undefined."""
    bench = tmp_path / "bench"
    bench.mkdir()
    record = json.loads((RESULTS / "bench" / "attention-cpu.json").read_text())
    record["metrics"]["targets"] = []
    record["config"].pop("definitions", None)
    (bench / "attention-cpu.json").write_text(json.dumps(record))
    assert reports._gpu_attention_headline(bench / "attention-cpu.json") is None
    result = reports.speed_row(tmp_path)[1]
    assert "linear ÷ fla" not in result
