"""The image-generation speed tables (lra_kit.bench.generation_tables): the papers' speed-ups come out as the papers
print them, ours are each record's own images/s ÷ its own softmax's, bounds keep their direction, and what no record
holds reads "not recorded"."""
from __future__ import annotations

import json

import pytest

from lra_kit import paper_numbers as pn
from lra_kit.bench import generation_tables as gt
from lra_kit.bench.generation import LEAN, METHODS

SOFTMAX, CACHE = "softmax", gt.CACHE
RNN = gt.RNNS[0]
LSH = gt.BASELINES


def _row(task, method, batch, images_per_s, extrapolation="none", **extra):
    return {"task": task, "method": method, "batch": batch, "images_per_s": images_per_s,
            "extrapolation": extrapolation, **extra}


def _record(device, rows, **extra):
    return {"device": device, "metrics": {"rows": rows}, "config": {"threads": 1}, "torch": "x", "date": "2026",
            **extra}


def _speeds(task, base):
    """A row per method at batch 1: images/s base × (1, 2, 3, …) in METHODS' order."""
    return [_row(task, m, 1, base * (i + 1)) for i, m in enumerate(METHODS)]


def test_the_papers_speed_ups_are_the_ones_they_print():
    """The "(N×)" the papers print beside images/s and seconds (not stored: recomputed here from the tables)."""
    printed = {  # (task, row of paper_rows, method): the speed-up over softmax as printed
        ("mnist", 0, "linear"): 317, ("mnist", 0, CACHE): 16.8, ("mnist", 1, "momentum"): 310,
        ("cifar10", 0, "linear"): 4462, ("cifar10", 0, CACHE): 80, ("cifar10", 1, "momentum"): 4380,
        ("mnist", 2, "linear"): 13.2, ("cifar10", 2, "linear"): 191.8,  # Table 5: softmax's seconds ÷ linear's
    }
    for (task, i, method), value in printed.items():
        up, mark = gt.paper_rows(task)[i].cells[method].over_softmax
        assert up == pytest.approx(value, rel=0.002) and mark == ""  # the papers round to 3-4 digits


def test_the_paper_rows_name_their_table_and_machine():
    rows = gt.paper_rows("mnist")
    assert [r.source.split(":")[0] for r in rows] == [
        "Katharopoulos Table 1, Table 4 (a)", "Nguyen Table 2", "Katharopoulos Table 5 (a), batch 1",
        "Katharopoulos Table 5 (a), batch 1"]
    assert [r.source.split(": ")[1] for r in rows] == ["GPU, card not named", "machine not stated",
                                                       "CPU, model not named", "GPU, card not named"]
    assert rows[1].cells[CACHE] is None and gt.format_cell(rows[1].cells[CACHE]) == gt.NOT_IN_PAPER


def test_timing_machine_knows_every_generation_timing_and_nothing_else():
    for table in (pn.KATHAROPOULOS_TABLE1, pn.KATHAROPOULOS_TABLE2, pn.KATHAROPOULOS_TABLE4_MNIST,
                  pn.KATHAROPOULOS_TABLE4_CIFAR10, pn.MOMENTUM_TABLE2, pn.MOMENTUM_TABLE3):
        assert pn.timing_machine(table, "Images/sec").card is None  # neither paper names the card that timed
        with pytest.raises(ValueError, match="Bits/dim"):
            pn.timing_machine(table, "Bits/dim")
    for table in (pn.KATHAROPOULOS_TABLE5_MNIST, pn.KATHAROPOULOS_TABLE5_CIFAR10):
        assert [pn.timing_machine(table, c).kind for c in table.columns] == ["CPU", "GPU"]
    with pytest.raises(ValueError, match="table must be a PaperTable"):
        pn.timing_machine("Table 1", "Images/sec")
    with pytest.raises(ValueError, match="not a generation timing"):
        pn.timing_machine(pn.LUNA_TABLE2, "Steps/s 1K")


def test_each_record_divides_by_its_own_softmax():
    records = {"cpu": _record("cpu", _speeds("mnist", 0.01), processor="x86_64"),
               "h200": _record("NVIDIA H200", _speeds("mnist", 1.0))}
    ours = gt.speed_rows("mnist", records)[len(gt.paper_rows("mnist")):]
    assert [r.source for r in ours] == ["ours, CPU (x86_64, 1 thread), batch 1", "ours, NVIDIA H200, batch 1"]
    for row, record in zip(ours, records.values(), strict=True):
        ips = {r["method"]: r["images_per_s"] for r in record["metrics"]["rows"]}
        for m in METHODS:
            cell = row.cells[m]
            assert cell.speed.images_per_s == ips[m]
            assert cell.over_softmax == (None if m == SOFTMAX else (pytest.approx(ips[m] / ips[SOFTMAX]), ""))
            assert cell.over_cache == ((pytest.approx(ips[m] / ips[CACHE]), "") if m in gt.RNNS else None)
    header, table = gt.speed_table("mnist", records)
    assert header[1:] == [gt.LABELS[m] for m in METHODS]
    i = METHODS.index(RNN)
    assert table[-1][1 + i] == f"{i + 1:.2f} ({i + 1:.2f}×; {(i + 1) / (METHODS.index(CACHE) + 1):.2f}×)"


def test_what_no_record_holds_is_not_recorded():
    rows = [r for r in _speeds("mnist", 1.0) if r["method"] != RNN]
    records = {"cpu": _record("cpu", rows)}
    header, table = gt.speed_table("mnist", records)
    assert table[-1][1 + METHODS.index(RNN)] == gt.NOT_RECORDED
    _, table = gt.speed_table("cifar10", records)  # the record has no CIFAR-10 row at all
    assert table[-1] == ["ours, CPU (1 thread)"] + [gt.NO_RECORD_YET if m in LSH else gt.NOT_RECORDED
                                                    for m in METHODS]
    _, table = gt.speed_table("cifar10", {})
    assert table[-1] == ["ours"] + [gt.NOT_RECORDED] * len(METHODS)
    _, table = gt.speed_table("cifar10", {}, here=False)  # outside a clone: the records exist elsewhere
    assert table[-1] == ["ours"] + [gt.NOT_HERE] * len(METHODS)
    no_softmax = {"cpu": _record("cpu", [r for r in _speeds("mnist", 1.0) if r["method"] != SOFTMAX])}
    assert gt.speed_table("mnist", no_softmax)[1][-1][1 + METHODS.index(RNN)].startswith(f"{METHODS.index(RNN) + 1}")
    assert "(–; " in gt.speed_table("mnist", no_softmax)[1][-1][1 + METHODS.index(RNN)]


def test_a_timed_prefix_marks_the_speed_and_every_ratio_built_from_it():
    rows = _speeds("mnist", 1.0)
    rows[METHODS.index(SOFTMAX)]["extrapolation"] = "lower bound"  # its time at least: its images/s at most
    rows[METHODS.index(CACHE)]["extrapolation"] = "lower bound"
    rows[METHODS.index(RNN)]["extrapolation"] = "estimate"
    cells = gt.record_rows("mnist", "cpu", _record("cpu", rows))[0].cells
    assert cells[SOFTMAX].speed.mark == "≤"
    assert cells[CACHE].over_softmax[1] == "~"  # at most ÷ at most: no direction
    assert cells[RNN].over_softmax[1] == cells[RNN].over_cache[1] == "~"
    exact = next(m for m in gt.RNNS if m != RNN)
    assert cells[exact].over_softmax[1] == cells[exact].over_cache[1] == "≥"
    assert gt.format_cell(cells[exact]).startswith(f"{METHODS.index(exact) + 1:.2f} (≥")
    assert gt.format_cell(cells[SOFTMAX]) == "≤1.00"


@pytest.mark.parametrize("a,b,expected", [("", "", ""), ("≤", "", "≤"), ("", "≤", "≥"), ("≥", "≤", "≥"),
                                          ("≤", "≤", "~"), ("~", "", "~"), ("", "~", "~"), ("≥", "≥", "~")])
def test_ratio_marks(a, b, expected):
    assert gt.ratio_mark(a, b) == expected


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="a mark"):
        gt.ratio_mark("<", "")
    with pytest.raises(ValueError, match="task must be one of"):
        gt.speed_rows("copy", {})
    bad = _record("cpu", [_row("mnist", m, 1, 1.0, "guess") for m in METHODS])
    with pytest.raises(ValueError, match="unknown extrapolation 'guess'"):
        gt.record_rows("mnist", "cpu", bad)


def test_the_largest_batch_is_each_methods_own():
    rows = _speeds("mnist", 1.0) + [_row("mnist", m, 16, 10.0 * (i + 1), batch_search="largest")
                                    for i, m in enumerate(METHODS)]
    out = gt.record_rows("mnist", "cpu", _record("cpu", rows))
    assert [r.source.rsplit(", ", 1)[1] for r in out] == ["batch 1", "batch 16"]
    assert out[1].cells[CACHE].over_softmax[0] == pytest.approx(2.0)
    rows[-1]["batch"] = 1024  # one method fits a larger batch (a GPU)
    out = gt.record_rows("mnist", "gpu", _record("NVIDIA H100", rows))
    assert out[1].source.endswith("the largest batch of each")
    last = gt.speed_table("mnist", {"gpu": _record("NVIDIA H100", rows)})[1][-1]
    assert last[1 + METHODS.index(METHODS[-1])].startswith("batch 1024: ")
    assert last[1 + METHODS.index(SOFTMAX)].startswith("batch 16: ")


def test_every_generation_record_is_read_the_cpu_first(tmp_path):
    (tmp_path / "bench").mkdir()
    for name, device in (("a100", "NVIDIA A100"), ("cpu", "cpu"), ("h200", "NVIDIA H200")):
        (tmp_path / "bench" / f"generation-{name}.json").write_text(json.dumps(_record(device, [])))
    (tmp_path / "bench" / "attention-cpu.json").write_text("{}")
    assert list(gt.generation_records(tmp_path)) == ["cpu", "a100", "h200"]
    assert gt.generation_records(None) == {}


def test_a_record_without_the_lsh_rows_says_no_record_yet():
    """A record made before the LSH baselines were timed: their cells read "no record yet", the rest as before; the
    papers' rows have LSH-1 and LSH-4 (Katharopoulos Tables 1, 4, 5), Nguyen et al.'s none."""
    old = _record("cpu", [r for r in _speeds("mnist", 1.0) if r["method"] not in LSH])
    new = _record("cpu", _speeds("mnist", 1.0))
    for records, expected in (({"cpu": old}, gt.NO_RECORD_YET), ({"cpu": new}, None)):
        header, table = gt.speed_table("mnist", records)
        for method in LSH:
            cell = table[-1][header.index(gt.LABELS[method])]
            if expected:
                assert cell == expected
            else:  # images/s, with its speed-up over the row's softmax
                assert cell.startswith(f"{METHODS.index(method) + 1:.2f} (") and "no record" not in cell
    papers = gt.paper_rows("mnist")
    for method in LSH:
        assert papers[0].cells[method].speed.images_per_s == pn.KATHAROPOULOS_TABLE4_MNIST.value(
            method.upper(), "Images/sec")
        assert papers[1].cells[method] is None  # Nguyen et al. have no LSH row
        assert papers[2].cells[method].speed.images_per_s == pytest.approx(
            1 / pn.KATHAROPOULOS_TABLE5_MNIST.value(method.upper(), "Seconds (CPU)"))
    assert gt.NO_RECORD_YET in gt.speed_notes({"cpu": old})


def test_graph_rows_compare_graph_with_graph():
    """A GPU record's lean rows hold the CUDA graph replay: a row of its own, where the uncached methods read
    "eager only" and the speed-ups are graph ÷ graph; the eager row divides eager by eager."""
    rows = _speeds("mnist", 1.0)
    for i, r in enumerate(rows):
        if r["method"] in LEAN:
            r["graph"] = {"images_per_s": 100.0 * (i + 1), "extrapolation": "none"}
    out = gt.record_rows("mnist", "h200", _record("NVIDIA H200", rows, config={"timing": {}}))
    assert [r.source for r in out] == ["ours, NVIDIA H200, batch 1", "ours, NVIDIA H200, batch 1, CUDA graphs"]
    eager, graph = out[0].cells, out[1].cells
    i, c = METHODS.index(RNN), METHODS.index(CACHE)
    assert eager[RNN].over_softmax[0] == pytest.approx((i + 1) / (METHODS.index(SOFTMAX) + 1))
    assert eager[RNN].over_cache[0] == pytest.approx((i + 1) / (c + 1))
    assert graph[RNN].speed.images_per_s == 100.0 * (i + 1)
    assert graph[RNN].over_softmax is None and graph[RNN].over_cache[0] == pytest.approx((i + 1) / (c + 1))
    for method in (SOFTMAX, *LSH):
        assert graph[method] == gt.EAGER_ONLY
    assert "graph ÷ graph" in gt.timing_sentence(_record("NVIDIA H200", rows, config={"timing": {}}))


def test_a_record_says_how_it_was_timed():
    old = _record("NVIDIA H200", _speeds("mnist", 1.0))
    assert not gt.timed_apart(old) and "eager against graph" in gt.timing_sentence(old)
    assert "eager against graph" not in gt.timing_sentence(_record("cpu", _speeds("mnist", 1.0)))
    new = _record("cpu", _speeds("mnist", 1.0), config={"runs": [{"timing": {}, "repeats": 3},
                                                                 {"timing": {}, "repeats": 5}]})
    assert gt.timed_apart(new) and "medians of 3-5 rounds, every ratio eager ÷ eager" in gt.timing_sentence(new)
    mixed = _record("cpu", [], config={"runs": [{"timing": {}}, {}]})  # merged with a run made before
    assert not gt.timed_apart(mixed)


def _claims_record(marks: dict | None = None, drop=()):
    """Batch-1 rows of both tasks at images/s that make every claim of appendix §C hold (softmax slowest, linear
    ahead of the cache by more on CIFAR-10, momentum near linear, LSH slower than linear)."""
    ips = {"mnist": {"softmax": 0.1, "softmax-kv-cache": 0.7, "linear": 1.0, "momentum": 0.9, "lsh-1": 0.2,
                     "lsh-4": 0.1},
           "cifar10": {"softmax": 0.01, "softmax-kv-cache": 0.05, "linear": 0.1, "momentum": 0.09, "lsh-1": 0.02,
                       "lsh-4": 0.01}}
    marks = marks or {}
    return _record("cpu", [_row(t, m, 1, v, marks.get((t, m), "none")) for t, by in ips.items()
                           for m, v in by.items() if m not in drop])


def test_the_appendix_c_claims_respect_each_prefix_bound():
    verdicts = [v for _, _, v in gt.appendix_c_claims(_claims_record())]
    assert verdicts == [gt.HOLDS] * 5
    # the CIFAR-10 cache timed only a prefix: its images/s at most, so linear's lead over it at least
    cut = _claims_record({("cifar10", CACHE): "lower bound"})
    assert [v for _, _, v in gt.appendix_c_claims(cut)][1] == gt.HOLDS
    # a lead that only a bound makes small is not a contradiction: the true lead can only be larger
    short = _claims_record({("cifar10", CACHE): "lower bound"})
    next(r for r in short["metrics"]["rows"] if (r["task"], r["method"]) == ("cifar10", CACHE))["images_per_s"] = 0.09
    claims = gt.appendix_c_claims(short)
    assert claims[1][2] == gt.UNDECIDED and "CIFAR-10 ≥1.11" in claims[1][1]
    # measured whole, the same numbers contradict the claim, and the page's check fails on that
    whole = _claims_record()
    next(r for r in whole["metrics"]["rows"] if (r["task"], r["method"]) == ("cifar10", CACHE))["images_per_s"] = 0.09
    assert gt.appendix_c_claims(whole)[1][2] == gt.CONTRADICTED
    # an LSH row faster than linear, whole, contradicts; a record without LSH rows has no record yet
    fast = _claims_record()
    next(r for r in fast["metrics"]["rows"] if (r["task"], r["method"]) == ("mnist", "lsh-1"))["images_per_s"] = 2.0
    assert gt.appendix_c_claims(fast)[3][2] == gt.CONTRADICTED
    assert [v for _, _, v in gt.appendix_c_claims(_claims_record(drop=LSH))][3:] == [gt.NO_RECORD_YET] * 2
    far = _claims_record()  # momentum at half linear's speed: not "about what linear costs"
    next(r for r in far["metrics"]["rows"] if (r["task"], r["method"]) == ("mnist", "momentum"))["images_per_s"] = 0.5
    assert gt.appendix_c_claims(far)[2][2] == gt.CONTRADICTED


def test_the_lean_step_sentence_reads_the_record():
    lean = list(LEAN)
    rows = [_row("mnist", m, 1, 1.0, ops_per_pixel=100 + i, modules_ops_per_pixel=200 + i, ms_per_pixel=1.0 + i,
                 modules={"ms_per_pixel": 2.5 + i}, rounds_s=[{}, {}, {}]) for i, m in enumerate(lean)]
    sentence = gt.lean_step_sentence(_record("cpu", rows), "mnist")
    first = rows[0]
    assert f"from 200 to 100 ({gt.LABELS[first['method']]})" in sentence
    assert "milliseconds per pixel from 2.50 to 1.00, 3.50 to 2.00 and 4.50 to 3.00" in sentence
    assert "medians of 3 rounds" in sentence
    assert gt.lean_step_sentence(_record("cpu", rows), "cifar10") is None
    assert "operators dispatched" in sentence
    for i, row in enumerate(rows):  # a record that counted kernels (neither views nor allocations) says so
        row.update(kernels_per_pixel=90 + i, modules_kernels_per_pixel=150 + i)
    sentence = gt.lean_step_sentence(_record("cpu", rows), "mnist")
    assert "kernels launched per pixel" in sentence and f"from 150 to 90 ({gt.LABELS[first['method']]})" in sentence
    for i, row in enumerate(rows):  # the fused steps' Triton kernels counted too (a GPU's record)
        row.update(launches_per_pixel=60 + i, triton_kernels_per_pixel=8)
    sentence = gt.lean_step_sentence(_record("NVIDIA H200", rows), "mnist")
    assert "(Triton's included)" in sentence and f"from 150 to 60 ({gt.LABELS[first['method']]})" in sentence


def test_the_bound_sentence_reads_the_largest_batch():
    lean = list(LEAN)
    rows = [_row("mnist", m, b, 1.0, times_bound=10.0 * b + i, bound_ms_per_pixel=0.5)
            for i, m in enumerate(lean) for b in (1, 4)]
    sentence = gt.bound_sentence(_record("NVIDIA H200", rows), "mnist")
    assert f"{gt.LABELS[lean[0]]} 40.0× at batch 4 (bound 0.500 ms a pixel)" in sentence
    assert "at batch 1" not in sentence and "NVIDIA H200" in sentence
    assert gt.bound_sentence(_record("cpu", [_row("mnist", lean[0], 1, 1.0)]), "mnist") is None
    for r in rows:  # a record with the graph replay: its times_bound, said to be the graph's
        r["graph"] = {"times_bound": 2.0, "bound_ms_per_pixel": 0.25}
    sentence = gt.bound_sentence(_record("NVIDIA H200", rows, config={"timing": {}}), "mnist")
    assert f"{gt.LABELS[lean[0]]} 2.0× at batch 4 (bound 0.250 ms a pixel; CUDA graphs)" in sentence


def test_live_table_marks_prefix_times_and_misses_no_method():
    from lra_kit.bench.generation import METHODS
    from lra_kit.bench.generation_tables import live_table

    first, second = METHODS[:2]
    rows = [{"method": first, "pixels_timed": 16, "pixels": 783, "ms_per_pixel": 2.0, "extrapolation": "estimate",
             "time_over_linear": 1.0, "ops_per_pixel": 196.0, "kernels_per_pixel": 100.0},
            {"method": second, "pixels_timed": 16, "pixels": 783, "ms_per_pixel": 9.0,
             "extrapolation": "lower bound", "time_over_linear": 4.5}]
    header, cells = live_table(rows)
    assert len(header) == len(cells[0]) == 5
    assert cells[0] == [first, "16/783", "2.00", "~ 1.00", "100"]
    assert cells[1][3] == "≥ 4.50" and cells[1][4] == "—"


def test_the_compile_sentence_reads_the_cpu_profile(tmp_path):
    lean = list(LEAN)
    rows = [{"task": "mnist", "method": m, "batch": b, "compile": {"compiled_over_eager": 1.1 + i / 10 + b / 100,
                                                                    "same_tokens": True}}
            for i, m in enumerate(lean[1:]) for b in (1, 16)]
    (tmp_path / "bench").mkdir()
    path = tmp_path / "bench" / "decode-profile-cpu.json"
    assert gt.compile_sentence(tmp_path) is None and gt.compile_sentence(None) is None
    path.write_text(json.dumps(_record("cpu", rows + [{"task": "mnist", "method": lean[0], "batch": 1}])))
    sentence = gt.compile_sentence(tmp_path)
    assert "took 1.11–1.36× the eager step's time (4 comparisons: MNIST, batch 1 and 16" in sentence
    assert "the same tokens each time" in sentence and "runs the step eagerly" in sentence
    rows[0]["compile"].update(compiled_over_eager=0.9, same_tokens=False)
    path.write_text(json.dumps(_record("cpu", rows)))
    sentence = gt.compile_sentence(tmp_path)
    assert "faster in 1 of them" in sentence and "different tokens" in sentence


def test_the_page_splits_the_speed_table_into_the_papers_methods_and_the_baselines():
    """Two narrower tables with the same rows (one of seven columns scrolled sideways at 1280 px); every method in
    exactly one of them; a method not benchmarked is refused by name."""
    records = {"cpu": _record("cpu", _speeds("mnist", 1.0))}
    assert set(gt.OURS) | set(gt.BASELINES) == set(METHODS) and not set(gt.OURS) & set(gt.BASELINES)
    whole = gt.speed_table("mnist", records)
    ours, lsh = (gt.speed_table("mnist", records, True, m) for m in (gt.OURS, gt.BASELINES))
    assert [r[0] for r in ours[1]] == [r[0] for r in lsh[1]] == [r[0] for r in whole[1]]
    for part, methods in ((ours, gt.OURS), (lsh, gt.BASELINES)):
        assert part[0][1:] == [gt.LABELS[m] for m in methods]
        for row, full in zip(part[1], whole[1], strict=True):
            assert row[1:] == [full[1 + METHODS.index(m)] for m in methods]
    with pytest.raises(ValueError, match="methods must be"):
        gt.speed_table("mnist", records, True, ("transformer",))
