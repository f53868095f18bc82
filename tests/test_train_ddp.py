"""DDP: the same ``lra-kit train`` command under ``torchrun --nproc_per_node 2`` (gloo, CPU).

Two processes each take half of every global batch; DDP averages their gradients, which for a
mean over equally many examples is the single-process gradient. With dropout off, both runs
must end at the same parameters (up to float summation order) and the same test metrics.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from lra_kit.train.checkpoint import load_checkpoint

COMMAND = ["-m", "lra_kit", "train", "--task", "listops", "--attention", "momentum", "--scale", "smoke",
           "--no-progress", "--set", "model.dropout=0.0", "--set", "model.attention_dropout=0.0",
           "--set", "train.steps=6", "--set", "train.eval_every=3"]


def run(args, out, env):
    result = subprocess.run([sys.executable, *args, "--out", str(out)], env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.data
def test_ddp_two_cpu_processes_match_one_process(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    run(COMMAND, tmp_path / "single", env)
    log = run(["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *COMMAND],
              tmp_path / "ddp", env)
    assert "× 2 processes" in log
    single = load_checkpoint(str(tmp_path / "single" / "checkpoint.pt"))
    ddp = load_checkpoint(str(tmp_path / "ddp" / "checkpoint.pt"))
    assert single["state"]["step"] == ddp["state"]["step"] == 6
    for name, tensor in single["model"].items():
        torch.testing.assert_close(ddp["model"][name], tensor, rtol=1e-4, atol=1e-5, msg=name)
    a = single["state"]["curves"]["val"][-1]
    b = ddp["state"]["curves"]["val"][-1]
    assert a["count"] == b["count"]
    assert abs(a["loss"] - b["loss"]) < 1e-4 and abs(a["accuracy"] - b["accuracy"]) < 1e-9
