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
