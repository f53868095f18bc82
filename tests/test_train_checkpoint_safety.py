"""Checkpoints are safe to load: a planted pickle payload never runs, a corrupt file is named, files get the umask."""
from __future__ import annotations

import os
import pickle
import shutil
import stat

import pytest
import torch

from lra_kit.cli import main
from lra_kit.errors import CheckpointError
from lra_kit.train.checkpoint import load_checkpoint
from lra_kit.train.trainer import Trainer
from train_helpers import copy_datasets, quiet, tiny_copy_config


class Payload:
    """Unpickling this writes ``marker``: what a malicious checkpoint would do instead."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('ran')",)


@pytest.fixture(scope="module")
def copy_data():
    return copy_datasets()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, copy_data):
    """A complete tiny run directory (config.json, checkpoint.pt, best.pt, results.json)."""
    run_dir = tmp_path_factory.mktemp("finished") / "run"
    Trainer(tiny_copy_config(steps=4), str(run_dir), datasets=copy_data, progress=False, log=quiet).run()
    return run_dir


def plant(path, marker) -> None:
    """Replace ``path`` by a checkpoint that looks like ours but carries the payload."""
    good = torch.load(path, weights_only=True)
    good["model"] = {"weight": torch.zeros(1), "trap": Payload(marker)}
    torch.save(good, path)


def test_the_payload_would_run_under_plain_pickle(tmp_path):
    """The trap is real: an unsafe load (weights_only=False) runs it."""
    marker = tmp_path / "ran"
    pickle.loads(pickle.dumps(Payload(marker)))
    assert marker.exists()


@pytest.mark.parametrize("where", ["resume", "end of run", "eval", "generate"])
def test_a_planted_payload_never_runs(tmp_path, finished_run, copy_data, where, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    marker = tmp_path / "ran"
    name = "checkpoint.pt" if where == "resume" else "best.pt"
    plant(run_dir / name, marker)
    if where in ("resume", "end of run"):  # the run is complete: run() resumes, then tests best.pt
        with pytest.raises(CheckpointError, match=f"{name}: refused"):
            Trainer(tiny_copy_config(steps=4), str(run_dir), datasets=copy_data, progress=False, log=quiet).run()
    else:
        assert main([where, str(run_dir)]) == 1
        err = capsys.readouterr().err
        assert str(run_dir / name) in err and "refused" in err and "Traceback" not in err
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "not a dict", "foreign dict"])
def test_a_corrupt_checkpoint_is_named(tmp_path, finished_run, damage):
    path = tmp_path / "checkpoint.pt"
    shutil.copy(finished_run / "checkpoint.pt", path)
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(b"this is not a checkpoint")
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "not a dict":
        torch.save([torch.zeros(2)], path)
    else:
        torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(str(path))
    assert str(path) in str(info.value)


def test_a_corrupt_checkpoint_stops_resume_with_its_name(tmp_path, finished_run, copy_data):
    run_dir = tmp_path / "run"
    shutil.copytree(finished_run, run_dir)
    (run_dir / "checkpoint.pt").write_bytes(b"PK\x03\x04 torn")
    with pytest.raises(CheckpointError, match="checkpoint.pt: corrupt"):
        Trainer(tiny_copy_config(steps=4), str(run_dir), datasets=copy_data, progress=False, log=quiet).run()


def test_a_training_checkpoint_holds_only_plain_data(finished_run):
    """Everything (RNG states included) loads with weights_only=True, and the RNG states are restorable."""
    ckpt = torch.load(finished_run / "checkpoint.pt", weights_only=True)
    assert ckpt["format"] == 1 and {"python", "numpy", "torch"} <= set(ckpt["rng"])
    assert isinstance(ckpt["rng"]["numpy"][1], torch.Tensor) and len(ckpt["rng"]["python"][1]) == 625


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_files_written_for_the_user_get_the_umask_mode(tmp_path, copy_data, umask):
    from lra_kit.train.samples import save_image_grid

    old = os.umask(umask)
    try:
        run_dir = tmp_path / "run"
        Trainer(tiny_copy_config(steps=4), str(run_dir), datasets=copy_data, progress=False, log=quiet,
                record="modes", record_dir=str(tmp_path / "results")).run()
        save_image_grid(torch.zeros(4, 16), str(tmp_path / "grid.png"))
    finally:
        os.umask(old)
    expected = 0o666 & ~umask
    files = [run_dir / n for n in ("config.json", "checkpoint.pt", "best.pt", "log.jsonl", "results.json")]
    files += [tmp_path / "results" / "modes" / f"{tiny_copy_config().name}.json", tmp_path / "grid.png"]
    assert {str(f): oct(_mode(f)) for f in files} == {str(f): oct(expected) for f in files}
