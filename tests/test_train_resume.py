"""Checkpoint/resume: a run stopped at any step and restarted reaches the same final state, bit for bit (CPU)."""
from __future__ import annotations

import json
import os

import pytest

from lra_kit.errors import RunDirectoryError
from lra_kit.results import REQUIRED_KEYS
from lra_kit.train.trainer import Trainer
from train_helpers import assert_same_final_state, copy_datasets, final_state, quiet, tiny_copy_config


@pytest.fixture(scope="module")
def copy_data():
    return copy_datasets()


class Killed(BaseException):
    """Stands for a SIGKILL in-process: nothing after it runs (a BaseException, like KeyboardInterrupt)."""


def kill_after(monkeypatch, updates: int) -> None:
    """Make the next trainer die just before update ``updates + 1``, as if killed there."""
    original = Trainer.train_step

    def train_step(self, batches):
        if self.state["step"] >= updates:
            raise Killed
        original(self, batches)

    monkeypatch.setattr(Trainer, "train_step", train_step)


def bucketed(bucket: int):
    cfg = tiny_copy_config()
    cfg.data.bucket = bucket  # batches grouped by length (lra_kit.train.batches), pools of `bucket` batches
    return cfg


# between checkpoints, right at one, and with batches grouped by length
@pytest.mark.parametrize("stop_after,bucket", [(5, 0), (8, 0), (5, 2)])
def test_resume_is_bit_identical(tmp_path, copy_data, stop_after, bucket, monkeypatch):
    cfg = bucketed(bucket)
    ref = Trainer(cfg, str(tmp_path / "ref"), datasets=copy_data, progress=False, log=quiet).run()

    run_dir = str(tmp_path / "killed")
    with monkeypatch.context() as patch:
        kill_after(patch, stop_after)
        with pytest.raises(Killed):
            Trainer(bucketed(bucket), run_dir, datasets=copy_data, progress=False, log=quiet).run()
    with open(os.path.join(run_dir, "log.jsonl"), "a") as f:
        f.write('{"step": 99, "split": "tr')  # a line torn by the kill
    messages = []
    resumed = Trainer(bucketed(bucket), run_dir, datasets=copy_data, progress=False, log=messages.append).run()
    assert any("resuming from the checkpoint at step" in m for m in messages)

    a, b = final_state(str(tmp_path / "ref")), final_state(run_dir)
    assert a["state"]["step"] == cfg.train.steps
    assert_same_final_state(a, b)
    strip = lambda curves: [{k: v for k, v in r.items() if k != "tokens_per_s"} for r in curves]  # noqa: E731
    assert strip(ref["curves"]["train"]) == strip(resumed["curves"]["train"])
    assert ref["curves"]["val"] == resumed["curves"]["val"]
    assert ref["metrics"]["test"] == resumed["metrics"]["test"]
    # the log has each step once: what the killed run wrote after its last checkpoint was dropped
    with open(os.path.join(run_dir, "log.jsonl")) as f:
        lines = [json.loads(ln) for ln in f]
    train_steps = [r["step"] for r in lines if r["split"] == "train"]
    assert train_steps == sorted(set(train_steps)) == list(range(2, 13, 2))


def test_run_directory_holds_config_log_checkpoints_results(tmp_path, copy_data):
    run_dir = str(tmp_path / "run")
    cfg = tiny_copy_config("linear", "residual")
    Trainer(cfg, run_dir, datasets=copy_data, progress=False, log=quiet, record="unit-test",
            record_dir=str(tmp_path / "results")).run()
    assert {"config.json", "checkpoint.pt", "best.pt", "log.jsonl", "results.json"} <= set(os.listdir(run_dir))
    with open(os.path.join(run_dir, "results.json")) as f:
        results = json.load(f)
    assert set(REQUIRED_KEYS) <= set(results)
    assert results["device"] == "cpu" and results["scale"] == "smoke" and results["steps"] == 12
    assert results["config"]["model"]["attention"] == "linear"
    assert len(results["curves"]["train"]) == 6 and len(results["curves"]["val"]) == 3
    assert os.path.exists(tmp_path / "results" / "unit-test" / f"{cfg.name}.json")
    # a different config in the same directory is refused, not silently mixed
    other = tiny_copy_config("linear", "residual")
    other.model.layers = 1
    with pytest.raises(RunDirectoryError, match="different config"):
        Trainer(other, run_dir, datasets=copy_data, progress=False, log=quiet).run()


def test_record_names_the_code_each_process_trained_with(tmp_path, copy_data, monkeypatch):
    """The commit is read when a process starts training, not when the record is written: a long run outlives
    commits made meanwhile. A resumed run lists one commit per process, from the step it started at."""
    import lra_kit.results
    import lra_kit.train.trainer as trainer_module

    now = {"commit": "first"}
    monkeypatch.setattr(trainer_module, "git_commit", lambda: now["commit"])
    monkeypatch.setattr(lra_kit.results, "git_commit", lambda: now["commit"])
    run_dir = str(tmp_path / "run")
    with monkeypatch.context() as patch:
        kill_after(patch, 5)
        with pytest.raises(Killed):
            Trainer(tiny_copy_config(), run_dir, datasets=copy_data, progress=False, log=quiet).run()
    now["commit"] = "second"  # committed while the run was stopped
    resumed = Trainer(tiny_copy_config(), run_dir, datasets=copy_data, progress=False, log=quiet)
    now["commit"] = "moved on"  # and again while the resumed process trains
    results = resumed.run()
    assert results["git_commit"] == "second"
    assert results["commits"] == [{"from_step": 0, "commit": "first"}, {"from_step": 4, "commit": "second"}]


def _stopped_run_with_saved_config(run_dir, copy_data, monkeypatch, edit) -> None:
    """A tiny run stopped after its step-4 checkpoint, whose saved config ``edit`` then changes in place (as code
    of another version would have saved it)."""
    from lra_kit.train.checkpoint import atomic_save, load_checkpoint

    with monkeypatch.context() as patch:
        kill_after(patch, 5)
        with pytest.raises(Killed):
            Trainer(tiny_copy_config(), run_dir, datasets=copy_data, progress=False, log=quiet).run()
    path = os.path.join(run_dir, "checkpoint.pt")
    ckpt = load_checkpoint(path)
    edit(ckpt["config"])
    atomic_save(ckpt, path)


def test_a_checkpoint_from_before_a_config_field_resumes(tmp_path, copy_data, monkeypatch):
    """A run checkpointed by code that had no ``data.bucket`` resumes (the field's default is what it did); one
    checkpointed with another value of it is refused."""
    run_dir = str(tmp_path / "old")
    _stopped_run_with_saved_config(run_dir, copy_data, monkeypatch, lambda config: config["data"].pop("bucket"))
    messages = []
    Trainer(tiny_copy_config(), run_dir, datasets=copy_data, progress=False, log=messages.append).run()
    assert any("resuming from the checkpoint at step 4" in m for m in messages)

    with pytest.raises(RunDirectoryError, match="different config"):
        Trainer(bucketed(2), run_dir, datasets=copy_data, progress=False, log=quiet).run()


def test_a_reworded_source_resumes(tmp_path, copy_data, monkeypatch):
    """``source`` says where the values come from; a run checkpointed before its wording changed resumes."""
    run_dir = str(tmp_path / "run")
    _stopped_run_with_saved_config(run_dir, copy_data, monkeypatch,
                                   lambda config: config.update(source="an older wording of where values come from"))
    messages = []
    Trainer(tiny_copy_config(), run_dir, datasets=copy_data, progress=False, log=messages.append).run()
    assert any("resuming from the checkpoint at step 4" in m for m in messages)
