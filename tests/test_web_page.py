"""What the page "Generating digits in your browser" computes from the recorded run (``lra_kit.web.page``).

A digit's growth in cost is judged by :func:`lra_kit.web.page.block_ratio` (blocks of 50 pixels, the fastest of
the last three over the fastest of the first three), which the timer's 0.1 ms tick cannot decide; a stopped run
has none. The widget computes the same in JavaScript (``LraWeb.blockRatio``): ``node --test
tests/js/web_stats.test.mjs`` checks it against this module on the series below (:func:`stats_reference`, which
tests/js_references.py writes for it). Without ``node`` that part is skipped with the reason.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from lra_kit.web import page

ROOT = Path(__file__).resolve().parents[1]


def _series(first: float, last: float, n: int = 783, tick: float = 0.1, seed: int = 0) -> list[float]:
    """A digit's per-pixel times growing linearly from ``first`` to ``last`` ms, read off a clock of ``tick`` ms
    stamped once between pixels (so the readings of a stretch add up to one interval of the clock)."""
    rng = random.Random(seed)
    t, start, out = 0.0, rng.uniform(0, tick), []
    stamp = lambda x: tick * int(x / tick)  # noqa: E731
    for i in range(n):
        before = stamp(start + t)
        t += first + (last - first) * i / (n - 1)
        out.append(stamp(start + t) - before)
    return out


def _row(model: str, method: str, ms: list[float], **extra) -> dict:
    return {"model": model, "method": method, "ms_per_pixel": sum(ms) / len(ms), "wall_seconds": 0.4,
            "bytes_kept": 1000, "ms_series": ms, **extra}


def _record(linear: list[float], recompute: list[float], linear_seconds: float = 0.4) -> dict:
    return {"metrics": {"rows": [
        _row("mnist-linear", "recurrent", linear, wall_seconds=linear_seconds),
        _row("mnist-softmax", "kv-cache", _series(0.25, 0.9), bytes_kept=10**6),
        _row("mnist-softmax", "recompute", recompute)],
        "python_same_models": []}}


def test_a_block_is_one_interval_of_the_clock_so_the_tick_cannot_decide_flatness():
    # a flat RNN step of 0.25 ms, two or three ticks: single pixels read 0.2 or 0.3, and their medians can
    # differ by half; the blocks of 50 are a hundred ticks long and read the same to a tick
    flat = _series(0.25, 0.25)
    assert {round(x, 6) for x in flat} == {0.2, 0.3}
    assert page.block_ratio(flat) == pytest.approx(1.0, abs=0.02)
    # growing from 0.25 to 0.5 ms: the fastest of the last three blocks is the 13th (pixels 600-649), of the
    # first three the first (0-49); each block's mean is the step at its middle pixel
    step = lambda i: 0.25 + 0.25 * i / 782  # noqa: E731
    assert page.block_ratio(_series(0.25, 0.5)) == pytest.approx(step(624.5) / step(24.5), rel=0.01)


def test_the_fastest_block_of_each_end_ignores_an_interruption():
    ms = _series(0.25, 0.25)
    ms[20] += 5.0  # the operating system took the core for 5 ms in the first block
    assert sum(ms[-101:-1]) / sum(ms[:100]) == pytest.approx(0.83, abs=0.02)  # the means of 100 pixels move
    assert page.block_ratio(ms) == pytest.approx(1.0, abs=0.02)


def test_each_block_is_the_fastest_of_the_runs_so_a_shared_machine_cannot_decide_it():
    runs = [_series(0.1, 0.1, seed=s) for s in range(3)]
    # interruptions of 12 ms in the last three blocks: the first run in each, the others in some, never all three
    # runs in the same block
    for k, hit in enumerate(({12, 13, 14}, {13, 14}, {12})):
        for block in hit:
            runs[k][50 * block + 10 * k + 5] += 12.0
    assert page.block_ratio(runs[0]) > 3  # one run alone: each of its last blocks was hit
    row = {"model": "mnist-linear", "method": "recurrent", "ms_runs": runs}
    assert page.end_over_start(row) == pytest.approx(1.0, abs=0.03)
    assert page.fastest_blocks(runs)[:2] == [min(page.block_times(r)[j] for r in runs) for j in range(2)]
    assert page.end_over_start({**row, "finished": False}) is None
    with pytest.raises(ValueError, match="at least one series"):
        page.fastest_blocks([])


def test_a_stopped_or_short_run_has_no_ratio():
    ms = _series(0.25, 0.25)
    assert page.block_ratio(ms, finished=False) is None
    assert page.block_ratio(ms[:299]) is None  # five full blocks: fewer than three at each end
    assert page.end_over_start(_row("mnist-linear", "recurrent", ms, finished=False)) is None
    assert page.end_over_start({"model": "mnist-linear", "method": "recurrent"}) is None
    with pytest.raises(ValueError, match="block must be"):
        page.block_times(ms, 0)
    with pytest.raises(ValueError, match="ends must be"):
        page.block_ratio(ms, ends=0)


def test_page_verdicts_follow_the_record():
    good = _record(_series(0.25, 0.26), _series(1.0, 300.0))
    assert all(holds for _, holds, _ in page.claims(good))
    bad = _record(_series(0.25, 0.5), _series(1.0, 2.0), linear_seconds=7.5)
    assert [holds for _, holds, _ in page.claims(bad)] == [False, False, True, False]
    assert all(holds is None for _, holds, _ in page.claims({}))
    stopped = _record(_series(0.25, 0.26), _series(1.0, 300.0)[:300])
    stopped["metrics"]["rows"][2]["finished"] = False
    assert [holds for _, holds, _ in page.claims(stopped)][:2] == [True, None]


def test_the_opening_tables_are_narrow():
    text = page.result_markdown(_record(_series(0.25, 0.26), _series(1.0, 300.0)), bench={})
    tables = [block for block in text.split("\n\n") if block.startswith("|")]
    assert len(tables) == 2 and all(block.count("\n") == 4 for block in tables)
    assert all(len(line.split("|")) - 2 <= 6 for block in tables for line in block.splitlines())
    assert "re-run on the prefix" in text


def test_outside_a_clone_the_table_says_where_the_record_is(tmp_path, monkeypatch):
    monkeypatch.delenv("LRA_KIT_RESULTS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert page.recorded("web/generation-chromium.json") is None
    assert "LRA_KIT_RESULTS" in page.result_markdown()
    monkeypatch.setenv("LRA_KIT_RESULTS", str(ROOT / "results"))
    assert page.recorded("web/generation-chromium.json") is not None


def stats_reference() -> dict:
    """Python's block times and ratios on the series below: what tests/js/web_stats.test.mjs compares against
    (it has tests/js_references.py write them)."""
    cases = []
    for name, ms, finished in [("flat", _series(0.25, 0.25), True), ("cache", _series(0.25, 0.9, seed=3), True),
                               ("re-run", _series(1.0, 300.0, tick=0.1, seed=5), True),
                               ("stopped", _series(0.25, 0.25)[:400], False), ("short", _series(0.25, 0.3)[:299], True),
                               ("completion", _series(0.3, 0.3, n=392, seed=7), True)]:
        cases.append({"name": name, "ms": ms, "block": page.BLOCK, "ends": page.ENDS, "finished": finished,
                      "block_times": page.block_times(ms), "ratio": page.block_ratio(ms, finished=finished)})
    return {"cases": cases}


def test_javascript_statistic_equals_the_page(node_tests):
    """tests/js/web_stats.test.mjs, run as a user runs it (``node --test``; the ``node_tests`` fixture): its
    comparison with :func:`stats_reference` and its other tests passed."""
    results = node_tests.results()
    for name in ("blockTimes and blockRatio equal lra_kit.web.page's on every series of the reference",
                 "temperature 0 (or none) is greedy: the argmax, and the generator is not drawn from",
                 "a block's time is the sum of its pixels; a stopped or short run has no end ÷ start"):
        assert results.get(name) == "ok", (name, results.get(name), node_tests.tail())
