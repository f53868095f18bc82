"""The one timer of the benchmarks: median of synchronised repeats, interleaved across callables."""
import time

import pytest

from lra_kit.bench.timing import interleaved_times, median_time


def test_median_time_is_the_median_of_the_repeats():
    durations = iter([0.0, 0.001, 0.03, 0.006])  # one warm-up, then three timed calls

    def fn():
        time.sleep(next(durations))

    median = median_time(fn, repeats=3, warmup=1, device="cpu")
    # the middle sleep is 6 ms; a loaded machine only adds time, and never 24 ms of it to every call
    assert 0.006 <= median < 0.03


def test_interleaved_times_runs_rounds_after_warmups():
    calls = []
    fns = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}
    times = interleaved_times(fns, "cpu", repeats=3, warmup=2)
    assert calls == ["a", "a", "b", "b"] + ["a", "b"] * 3
    assert {name: len(ts) for name, ts in times.items()} == {"a": 3, "b": 3}
    assert all(t >= 0 for ts in times.values() for t in ts)


@pytest.mark.parametrize("kwargs, match", [({"repeats": 0}, "repeats"), ({"warmup": -1}, "warmup"),
                                           ({"repeats": 2.5}, "repeats")])
def test_bad_counts_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        median_time(lambda: None, **kwargs)


def test_warm_up_seconds_are_reported_per_callable():
    """The first call of a GPU method compiles and autotunes its kernels: the warm-up is where a run's time can go."""
    calls = {"slow": 0}

    def slow_first():
        calls["slow"] += 1
        if calls["slow"] == 1:
            time.sleep(0.2)

    warmup_s = {}
    times = interleaved_times({"slow": slow_first, "fast": lambda: None}, repeats=3, warmup_s=warmup_s)
    assert set(warmup_s) == {"slow", "fast"} and warmup_s["slow"] >= 0.2 > warmup_s["fast"]
    assert max(times["slow"]) < 0.2  # the warm-up call is not among the timed ones


class _FakeEvent:
    """Stands in for a CUDA event: records when it was recorded in a shared log, on a fake clock."""

    def __init__(self, log, clock):
        self.log, self.clock, self.at = log, clock, None

    def record(self):
        self.at = self.clock[0]
        self.log.append("record")

    def synchronize(self):
        self.log.append("wait")

    def elapsed_time(self, end):
        return (end.at - self.at) * 1e3  # milliseconds, as CUDA's


def test_pipelined_times_flush_before_each_call_and_wait_once():
    """do_bench's structure: flush, event, call, event — back to back — and the host waits once, at the end."""
    from lra_kit.bench.timing import pipelined_times

    log, clock = [], [0.0]
    durations = iter([0.5] + [0.001 * (i + 1) for i in range(20)])  # one warm-up, then 20 calls

    def fn():
        log.append("call")
        clock[0] += next(durations)

    times = pipelined_times(fn, "cpu", repeats=20, warmup=1, flush=lambda: log.append("flush"),
                            event=lambda: _FakeEvent(log, clock))
    assert log[0] == "call"  # the warm-up
    assert log[1:] == ["flush", "record", "call", "record"] * 20 + ["wait"]
    assert times == pytest.approx([0.001 * (i + 1) for i in range(20)])


def test_summary_is_the_median_with_its_spread():
    from lra_kit.bench.timing import summary

    s = summary([5.0, 1.0, 2.0, 4.0, 3.0, 100.0])
    assert s["median_s"] == 3.5 and s["min_s"] == 1.0 and s["max_s"] == 100.0 and s["count"] == 6
    assert s["p20_s"] == pytest.approx(2.0) and s["p80_s"] == pytest.approx(5.0)
