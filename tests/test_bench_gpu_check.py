"""The GPU campaign's plan, checked on a CPU: its commands, their budgets and where they write (nothing runs)."""
import re
import sys
from pathlib import Path

import pytest

from lra_kit.bench import gpu_check


def test_dry_run_lists_every_step_within_budget(tmp_path, capsys):
    out = tmp_path / "campaign"
    assert gpu_check.main(["--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    plan = gpu_check.steps(out)
    # the benchmark first (what a lease is asked for), then correctness, then a compiled training step: a lease cut
    # short keeps what matters most
    assert [s.name for s in plan] == ["c1", "t", "a1", "a2", "b", "d1", "d2", "d3", "c2", "g", "g2", "a3", "l1", "l2",
                                      "e"]
    for step in plan:
        assert f"[{step.name}]" in text
        assert step.budget_s <= gpu_check.STEP_LIMIT_S and gpu_check.timeout_s(step) <= gpu_check.STEP_LIMIT_S
    assert sum(s.budget_s for s in plan) <= gpu_check.TOTAL_LIMIT_S
    assert not out.exists()  # a dry run writes nothing


def test_every_step_writes_into_the_named_folder(tmp_path):
    out = tmp_path / "campaign"
    by_name = {s.name: " ".join(s.argv) for s in gpu_check.steps(out)}
    for name in ("a1", "c2", "d1"):
        assert str(out) in by_name[name], name
    # c1 is `lra-kit bench attention --device cuda` with its own rows (no --methods), into the record of the card
    assert "lra_kit.bench.attention --device cuda" in by_name["c1"] and "--methods" not in by_name["c1"]
    assert by_name["c1"].endswith("--json results/bench/attention-{gpu}.json") and str(out) not in by_name["c1"]
    assert "--sdpa-backend flash" in by_name["c2"] and "65536" not in by_name["c2"]
    assert "luna" in by_name["c2"] and "linear_causal" in by_name["c2"]
    # c2 runs the CPU table's rows, the papers' baselines (lsh-1/4/8, Linformer) included
    from lra_kit.bench.attention import METHODS

    assert gpu_check.PAPERS == METHODS and by_name["c2"].split("--methods ")[1].startswith(" ".join(METHODS))
    assert "compute-sanitizer --tool memcheck" in by_name["b"]
    for name in ("d1", "d2", "d3"):
        assert "train.amp=true" in by_name[name] and "train.compile=true" in by_name[name]
    # the generation benchmark: both image tasks, within 220 s, into results/bench/generation-<gpu>.json
    generation = next(s for s in gpu_check.steps(out) if s.name == "g")
    assert "--tasks mnist cifar10" in by_name["g"] and "--json" not in by_name["g"] and generation.budget_s <= 220
    assert "--repeats 3" in by_name["g"] and "--budget-s 0.5" in by_name["g"] and "--reference" in by_name["g"]
    dtypes = {dict(s.env).get("LRA_KIT_GPU_TEST_DTYPE") for s in gpu_check.steps(out) if s.name.startswith("a")}
    assert dtypes == {"float32", "bfloat16", "float16"}


def test_the_benchmark_fits_one_lease_before_anything_else(tmp_path):
    """`make gpu-check` runs with --time-limit 480: the benchmark is first, and its margin fits in that too."""
    plan = gpu_check.steps(tmp_path)
    assert plan[0].name == "c1" and 1.25 * plan[0].budget_s <= gpu_check.LEASE_LIMIT_S
    assert gpu_check.timeout_s(plan[0], left_s=gpu_check.LEASE_LIMIT_S) == int(1.25 * plan[0].budget_s)
    slow_first = [gpu_check.Step("x", "slow", ("true",), 400), *plan[1:3]]
    with pytest.raises(ValueError, match="first step, x, may need 500 s"):
        gpu_check.check_budget(slow_first)
    gpu_check.check_budget([plan[1], gpu_check.Step("x", "the same, later", ("true",), 400)])
    # and `make gpu-check` passes that limit
    makefile = (Path(__file__).parents[1] / "Makefile").read_text()
    recipe = makefile[makefile.index("\ngpu-check:"):].split("\n\n")[0]
    assert "lra_kit.bench.gpu_check" in recipe and "--time-limit $(TIME_LIMIT)" in recipe
    assert re.search(r"^TIME_LIMIT \?= (\d+)$", makefile, re.M).group(1) == str(gpu_check.LEASE_LIMIT_S)


def test_budget_over_the_limit_names_the_step():
    long = gpu_check.Step("x", "too long", ("true",), gpu_check.STEP_LIMIT_S + 1)
    with pytest.raises(ValueError, match="step x"):
        gpu_check.check_budget([long])
    many = [gpu_check.Step(f"s{i}", "", ("true",), 380) for i in range(8)]  # 3,040 s > 45 minutes
    with pytest.raises(ValueError, match="add up"):
        gpu_check.check_budget(many)


def test_only_rejects_unknown_steps(tmp_path):
    with pytest.raises(SystemExit):
        gpu_check.main(["--out", str(tmp_path), "--only", "z9", "--dry-run"])


def test_without_cuda_it_says_so(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert gpu_check.main(["--out", str(tmp_path / "c"), "--only", "b"]) == 2
    assert "needs a CUDA device" in capsys.readouterr().err


def test_only_runs_the_steps_in_the_order_named_and_refuses_unknown_ones(tmp_path):
    plan = gpu_check.steps(tmp_path)
    assert [s.name for s in gpu_check.order(plan, ["c1", "a2", "c1"])] == ["c1", "a2"]
    assert gpu_check.order(plan, None) == plan
    with pytest.raises(ValueError, match="unknown steps.*zz"):
        gpu_check.order(plan, ["a1", "zz"])


def test_a_step_is_cut_to_the_time_the_run_has_left(tmp_path):
    plan = gpu_check.steps(tmp_path, lengths=(1024, 4096, 32768))
    c1, c2 = (next(s for s in plan if s.name == name) for name in ("c1", "c2"))
    assert c1.argv[c1.argv.index("--lengths") + 1:][:4] == ("1024", "4096", "32768", "--no-prefill")
    assert c2.argv[c2.argv.index("--lengths") + 1:][:3] == ("1024", "4096", "--sdpa-backend")  # up to 16K
    assert gpu_check.timeout_s(c1) == int(1.25 * c1.budget_s)
    assert gpu_check.timeout_s(c1, left_s=100.7) == 100


def test_a_step_stopped_at_its_limit_keeps_the_output_it_printed(tmp_path):
    code = "print('halfway', flush=True); import time; time.sleep(30)"
    step = gpu_check.Step("x", "prints, then outlives its limit", (sys.executable, "-c", code), 60)
    record = gpu_check.run_step(step, tmp_path, left_s=2)
    assert record["rc"] == 124
    assert "halfway" in record["output_tail"] and "timed out after 2 s" in record["output_tail"]
    assert "halfway" in (tmp_path / "x.log").read_text()
    assert {"scale", "device", "git_commit", "config"} <= set(record)  # what every record under results/ carries


def test_summary_reads_each_step_and_counts_its_tests(tmp_path):
    import json

    (tmp_path / "a1.json").write_text(json.dumps({"step": "a1", "what": "tests", "rc": 1, "wall_s": 5.0}))
    (tmp_path / "a1-tests-float32.xml").write_text(
        '<testsuites><testsuite><testcase classname="tests.test_x" name="ok"/>'
        '<testcase classname="tests.test_y" name="bad"><failure message="no"/></testcase>'
        '<testcase classname="tests.test_x" name="later"><skipped/></testcase></testsuite></testsuites>')
    (tmp_path / "c1.json").write_text(json.dumps({"step": "c1", "skipped": "10 s left of --time-limit"}))
    (tmp_path / "copy-linear-cpu.json").write_text(json.dumps({"metrics": {}}))  # a training record: not a step
    assert gpu_check.summary(tmp_path) == [{"step": "a1", "what": "tests", "rc": 1, "wall_s": 5.0, "passed": 1,
                                            "failed": 1, "skipped": 1, "failed_in": ["test_y"],
                                            "skipped_in": ["test_x"]}]


def test_every_finished_step_of_record_ran_within_its_budget():
    """The budgets are the recorded campaigns' wall times with a margin: no finished step of results/gpu-check/
    took longer than the budget it has now (a step stopped at its limit, rc 124, is not a finished run)."""
    campaigns = sorted(p for p in (Path(__file__).parents[1] / "results" / "gpu-check").glob("*") if p.is_dir())
    if not campaigns:
        pytest.skip("no GPU campaign recorded")
    budget = {s.name: s.budget_s for s in gpu_check.steps(Path("out"))}
    checked = 0
    for folder in campaigns:
        for row in gpu_check.summary(folder):
            if row["rc"] == 124 or row["step"] not in budget:
                continue
            assert row["wall_s"] <= budget[row["step"]], (folder.name, row["step"], row["wall_s"])
            checked += 1
    assert checked >= 10


def test_the_cuda_test_steps_name_tests_that_exist(tmp_path):
    """Every file and test a1-a3 name is there (a renamed test would otherwise be skipped silently on the card)."""
    root = Path(__file__).resolve().parent.parent
    for step in gpu_check.steps(tmp_path):
        if not step.name.startswith("a"):
            continue
        named = [a for a in step.argv if a.startswith("tests/")]
        assert named, step.name
        for arg in named:
            path, _, test = arg.partition("::")
            assert (root / path).is_file(), arg
            if test:
                assert re.search(rf"^def {re.escape(test)}\w*\(", (root / path).read_text(), re.M), arg
