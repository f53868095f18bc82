"""The kernels' tile autotune (``lra_kit.bench.tiles``): its candidates, its choice, the override it times through,
and the shipped tiling against a recorded choice (issue 50, item 7). The timing itself needs a GPU; here the
kernels run under Triton's interpreter only to show that every path launches with the sizes asked for."""
import importlib.util
import json
from pathlib import Path

import pytest
import torch

if importlib.util.find_spec("triton") is None:
    pytest.skip("Triton is not installed", allow_module_level=True)

from lra_kit.attention.causal.triton import host
from lra_kit.bench import tiles

BENCH = Path(__file__).resolve().parents[1] / "results" / "bench"
RECORDS = sorted(BENCH.glob("tiles-*.json"))
# the precision sweeps of the states' type: lengths 128-256 (40 seeds) and 2,048 (10 seeds)
STATES_RECORDS = [BENCH / "precision-sweep-states-cpu.json", BENCH / "precision-sweep-states-2k-cpu.json"]


@pytest.fixture(autouse=True)
def _triton_mode(monkeypatch):
    monkeypatch.setenv("LRA_KIT_TRITON", "interpret")


def test_candidates_start_with_the_shipped_one_and_stay_within_its_caps():
    first = tiles.shipped(torch.bfloat16)
    got = tiles.candidates(torch.bfloat16)
    assert got[0] == first
    assert len({tiles.name(c) for c in got}) == len(got) == 9
    assert all(c.tiling.max_chunk <= first.tiling.max_chunk and c.tiling.max_block <= first.tiling.max_block
               and c.tiling.state_block <= first.tiling.state_block and c.tiling.max_chunk >= 16 for c in got)
    assert {c.states for c in got} == {torch.float32, torch.bfloat16}
    # float16 cannot hold a state; float32's tiles are its shipped caps
    assert {c.states for c in tiles.candidates(torch.float16)} == {torch.float32}


def test_choice_is_the_least_geometric_mean_over_the_shipped_tiling():
    medians = {"a": {"x": 1.0, "y": 1.0}, "b": {"x": 0.5, "y": 2.0}, "c": {"x": 0.9, "y": 0.9}}
    got = tiles.choose(medians, "a")
    assert got["choice"] == "c" and got["speedup"] == pytest.approx(1 / 0.9)
    assert got["scores"]["b"] == pytest.approx(1.0)  # its gain at x is its loss at y
    # the fastest is not chosen where it is not eligible
    assert tiles.choose(medians, "a", eligible=["a", "b"])["choice"] == "a"
    # a tie keeps the shipped tiling
    assert tiles.choose({"a": {"x": 1.0}, "b": {"x": 1.0}}, "b")["choice"] == "b"
    with pytest.raises(ValueError, match="shipped"):
        tiles.choose(medians, "z")
    with pytest.raises(ValueError, match="medians"):
        tiles.choose({"a": {"x": 1.0}, "b": {"y": 1.0}}, "a")


def test_the_override_reaches_the_launch_and_is_restored():
    small = host.TILING[torch.bfloat16]._replace(max_chunk=32, max_block=16, state_block=16)
    q = torch.randn(1, 1, 40, 32, dtype=torch.bfloat16)
    with host.tiling(torch.bfloat16, small):
        assert host.kernel_chunk(torch.bfloat16, 64) == 32
        assert host.launch_blocks(32, 32, torch.bfloat16) == (16, 16)
        run = host._Launch(q, q, _spec(), True, None)
        assert (run.C, run.NC, run.BD, run.BM) == (32, 2, 16, 16)
    assert host.TILING[torch.bfloat16] != small
    assert host.kernel_chunk(torch.bfloat16, 64) == host.TILING[torch.bfloat16].max_chunk
    with pytest.raises(ValueError, match="max_block"):
        with host.tiling(torch.bfloat16, small._replace(max_block=24)):
            pass


def test_the_candidates_run_and_the_record_holds_each(monkeypatch):
    every = tiles.candidates(torch.bfloat16)
    two = [every[1], every[-1]]  # smaller tiles; the shipped sizes with bf16 states
    monkeypatch.setattr(tiles, "candidates", lambda dtype: two)
    got = tiles.tune(torch.bfloat16, (40,), torch.device("cpu"), B=1, H=1, D=16, repeats=1, progress=None)
    assert list(got["ms"]) == [tiles.name(c) for c in two]
    assert got["candidates"][tiles.name(every[-1])]["states"] == "bfloat16"
    assert all(c["eligible"] == (c["states"] in ("float32", "bfloat16")) for c in got["candidates"].values())
    assert all(set(row) == {"linear@40", "momentum@40"} for row in got["ms"].values())
    assert got["choice"] in got["ms"] and got["shipped"] == tiles.name(two[0])


@pytest.mark.skipif(not RECORDS, reason="no autotune recorded yet (results/bench/tiles-<gpu>.json, a GPU lease)")
@pytest.mark.parametrize("path", RECORDS, ids=[p.name for p in RECORDS])
def test_the_shipped_tiling_is_the_recorded_choice(path):
    record = json.loads(path.read_text())
    dtype = tiles.DTYPES[record["config"]["dtype"]]
    assert tiles.name(tiles.shipped(dtype)) == record["metrics"]["choice"], (
        f"{path.name} chose {record['metrics']['choice']}; the package ships {tiles.name(tiles.shipped(dtype))}")


def test_stored_states_hook_types_the_buffers_and_is_restored():
    q = torch.randn(1, 1, 40, 16, dtype=torch.bfloat16)
    with host.stored_states(torch.bfloat16, torch.bfloat16):
        s, d, z = host._Launch(q, q, _spec(beta=0.5), True, None).state_buffers(16, 16, "cpu")
        assert s.dtype == d.dtype == z.dtype == torch.bfloat16
    s, _, _ = host._Launch(q, q, _spec(beta=0.5), True, None).state_buffers(16, 16, "cpu")
    assert s.dtype == torch.float32
    with pytest.raises(ValueError, match="dtype"):
        with host.stored_states(torch.int8):
            pass


def _spec(beta=0.0):
    from lra_kit.attention import get_feature_map
    from lra_kit.attention.causal.op import Spec

    return Spec(get_feature_map("elu"), beta, 1.0, 1e-6, 64, False, False, True, torch.bfloat16)


def test_a_states_type_is_eligible_where_the_sweeps_keep_the_gradient_bound():
    """bf16 states may be chosen by the autotune only if, in every states sweep, the kernels' bf16 ∇q error with them
    stays within 2× of the PyTorch path's (issue 50, items 4 and 7: "where the oracle's error allows")."""
    records = [json.loads(path.read_text()) for path in STATES_RECORDS]
    worst = [r["metrics"]["bfloat16, states bfloat16"]["worst_ratio"]["dq"] for r in records]
    assert (torch.bfloat16 in tiles.ELIGIBLE_STATES) == all(w <= 2.0 for w in worst), worst
    assert torch.float32 in tiles.ELIGIBLE_STATES
