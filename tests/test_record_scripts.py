"""The shell scripts that queue the long recorded runs (results/record.sh, results/lra/record.sh): each RUN name
becomes the right `lra-kit train` command, a seed other than 0 goes into the run's folder and record name, and a
run whose record exists is skipped. `python` is replaced by a stub that prints the arguments it was given."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lra_kit.attention import attention_names
from lra_kit.train.configs import get_config

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _run(script: str, args: list[str], cwd: Path, env: dict | None = None) -> list[list[str]]:
    stub = cwd / "stub-python"
    stub.write_text('#!/bin/sh\necho "[lra-kit] $*"\n')
    stub.chmod(0o755)
    done = subprocess.run(["bash", str(ROOT / script), *args], cwd=cwd, capture_output=True, text=True, check=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHON": str(stub), **(env or {})})
    return [line.split()[1:] for line in done.stdout.splitlines() if line.startswith("[lra-kit]")]


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_copy_and_mnist_runs_carry_their_seed_and_connection(tmp_path):
    calls = _run("results/record.sh", ["cpu-20k", "copy", "linear", "momentum+adaptive@2"], tmp_path)
    assert [(_option(c, "--attention"), _option(c, "--connection"), _option(c, "--set"), _option(c, "--out"))
            for c in calls] == [
        ("linear", "residual", "train.seed=0", "runs/cpu-20k/copy-linear"),
        ("momentum", "adaptive", "train.seed=2", "runs/cpu-20k/copy-momentum+adaptive-seed2")]


def test_lra_runs_carry_their_seed(tmp_path):
    calls = _run("results/lra/record.sh", ["text", "softmax", "adaptive@1"], tmp_path, {"PRESET": "lra-cpu-2h"})
    assert [(_option(c, "--attention"), _option(c, "--set"), _option(c, "--out"), _option(c, "--preset"))
            for c in calls] == [
        ("softmax", "train.seed=0", "runs/lra-cpu-2h/lra/text-softmax", "lra-cpu-2h"),
        ("momentum", "train.seed=1", "runs/lra-cpu-2h/lra/text-adaptive-seed1", "lra-cpu-2h")]
    assert _option(calls[1], "--connection") == "adaptive"


def test_lra_controls_run_at_a_longer_preset(tmp_path):
    calls = _run("results/lra/record.sh", ["image", "unnormalised", "pixel0-padding"], tmp_path,
                 {"PRESET": "lra-cpu-long"})
    assert [(_option(c, "--attention"), _option(c, "--set"), _option(c, "--out"), _option(c, "--record-dir"))
            for c in calls] == [
        ("linear", "train.seed=0", "runs/lra-cpu-long/unnormalised/image-linear", "results/lra/controls"),
        ("linear", "train.seed=0", "runs/lra-cpu-long/pixel0-padding/image-linear", "results/lra/controls")]
    assert [c[c.index("--set", c.index("--set") + 1) + 1] for c in calls] == [
        "model.attention_options.compat=nystromformer", "data.options.compat=nystromformer"]
    luna = _run("results/lra/record.sh", ["text", "p-pooling"], tmp_path, {"PRESET": "lra-cpu-2h"})
    assert [(_option(c, "--attention"), _option(c, "--record")) for c in luna] == [("luna", "p-pooling")]
    assert "model.pooling=p_mean" in luna[0]


def _record_name(task, attention, connection, preset, seed):
    """The record name the library gives the run (ExperimentConfig.name), which the scripts must predict."""
    cfg = get_config(task, attention, connection=connection, preset=preset)
    cfg.train.seed = seed
    return cfg.name


@pytest.mark.parametrize("script, head, env, folder, task, preset", [
    ("results/record.sh", ["cpu-20k", "copy"], {}, "results/copy", "copy", "cpu-20k"),
    ("results/lra/record.sh", ["text"], {"PRESET": "lra-cpu-2h"}, "results/lra", "text", "lra-cpu-2h"),
])
def test_a_recorded_run_is_skipped(tmp_path, script, head, env, folder, task, preset):
    recorded, other = attention_names()[:2]
    (tmp_path / folder).mkdir(parents=True)
    (tmp_path / folder / f"{_record_name(task, recorded, 'residual', preset, 1)}.json").write_text("{}")
    calls = _run(script, [*head, f"{recorded}@1", other], tmp_path, env)
    assert [_option(c, "--attention") for c in calls] == [other]


def test_an_mnist_run_of_record_keeps_its_samples(tmp_path):
    """A finished MNIST run whose folder is here gets its samples and completions drawn beside its record, once;
    without its folder (a run recorded on another machine) nothing is drawn, and a copy run never draws."""
    record = tmp_path / "results" / "mnist" / "mnist-linear-cpu-12k-seed1.json"
    record.parent.mkdir(parents=True)
    record.write_text("{}")
    assert _run("results/record.sh", ["cpu-12k", "mnist", "linear@1"], tmp_path) == []  # no run folder
    (tmp_path / "runs" / "cpu-12k" / "mnist-linear-seed1").mkdir(parents=True)
    calls = _run("results/record.sh", ["cpu-12k", "mnist", "linear@1"], tmp_path)
    assert calls == [["-m", "lra_kit", "generate", "runs/cpu-12k/mnist-linear-seed1", "--pictures", "results/mnist"]]
    (tmp_path / "results" / "mnist" / "mnist-linear-cpu-12k-seed1-pictures.json").write_text("{}")
    assert _run("results/record.sh", ["cpu-12k", "mnist", "linear@1"], tmp_path) == []  # drawn already
    copy = tmp_path / "results" / "copy" / "copy-linear-cpu-20k.json"
    copy.parent.mkdir(parents=True)
    copy.write_text("{}")
    (tmp_path / "runs" / "cpu-20k" / "copy-linear").mkdir(parents=True)
    assert _run("results/record.sh", ["cpu-20k", "copy", "linear"], tmp_path) == []
