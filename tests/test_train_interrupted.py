"""Runs stopped by SIGKILL (between writes and inside a checkpoint write), SIGTERM, Ctrl-C or a full disk
resume bit-identical to an uninterrupted run; a second trainer on the same directory is refused.

The killed run is a child process that stops itself (SIGSTOP) at a chosen point, so the signal lands
exactly there, not wherever a timer happens to fall.
"""
from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

from lra_kit.errors import OutputPathError, RunDirectoryError
from lra_kit.train.lock import run_directory_lock
from lra_kit.train.trainer import Trainer
from train_helpers import assert_same_final_state, copy_datasets, final_state, quiet, tiny_copy_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "tests")

CHILD = textwrap.dedent("""
    import os, signal, sys
    # SIGINT reaches exactly one thread, and the kernel may pick any thread that does not block it: here also
    # tqdm's monitor thread. Python then runs the KeyboardInterrupt handler at the main thread's next check,
    # wherever that falls — possibly inside a __del__, where the exception is printed and dropped, and the run
    # goes on to exit 0 (the intermittent failure of this case). So SIGINT is blocked before any thread
    # starts (every later thread inherits the mask) and unblocked only in the main thread at its stop point.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    import torch
    torch.set_num_threads(1)
    # A shell starts background jobs with SIGINT ignored, and Python then installs no Ctrl-C handler:
    # restore it, so that the SIGINT case tests the trainer and not how the test run was launched.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def stop_here():
        # stop; a SIGINT sent meanwhile is handled by this thread as soon as it continues, in this frame
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        os.kill(os.getpid(), signal.SIGSTOP)
    from lra_kit.train import checkpoint, trainer
    from train_helpers import copy_datasets, quiet, tiny_copy_config

    run_dir, where, step = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if where == "between":  # stop before update step + 1, after the checkpoint of step (if any)
        original_step = trainer.Trainer.train_step

        def train_step(self, batches):
            if self.state["step"] == step:
                stop_here()
            original_step(self, batches)

        trainer.Trainer.train_step = train_step
    else:  # stop in the middle of writing the checkpoint of `step`: half a file on disk
        original_save = torch.save

        def save(obj, f, *args, **kwargs):
            if isinstance(obj, dict) and "optimizer" in obj and obj["state"]["step"] == step:
                f.write(b"PK\\x03\\x04 half a checkpoint")
                f.flush()
                stop_here()
            return original_save(obj, f, *args, **kwargs)

        checkpoint.torch.save = save
    trainer.Trainer(tiny_copy_config(), run_dir, datasets=copy_datasets(), progress=False, log=quiet).run()
""")


@pytest.fixture(scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the child runs on one thread: the same reduction order, the same bits
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def copy_data():
    return copy_datasets()


@pytest.fixture(scope="module")
def reference(tmp_path_factory, copy_data, one_thread):
    run_dir = tmp_path_factory.mktemp("reference") / "run"
    results = Trainer(tiny_copy_config(), str(run_dir), datasets=copy_data, progress=False, log=quiet).run()
    return final_state(str(run_dir)), results


def run_child_until_stopped(run_dir, where: str, step: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, TESTS]), OMP_NUM_THREADS="1")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(run_dir), where, str(step)], env=env,
                             stderr=subprocess.PIPE)
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    if not os.WIFSTOPPED(status):
        raise AssertionError(f"the child ended before its stop point: {child.stderr.read().decode()[-2000:]}")
    return child


@pytest.mark.parametrize("sig,where,step", [
    (signal.SIGKILL, "between", 5),      # between two checkpoints (4 and 8)
    (signal.SIGKILL, "in_write", 8),     # inside the write of checkpoint 8: checkpoint 4 must survive
    (signal.SIGTERM, "between", 6),
    (signal.SIGINT, "in_write", 4),      # Ctrl-C inside the first checkpoint write: nothing to resume
])
def test_a_killed_run_resumes_bit_identical(tmp_path, copy_data, reference, sig, where, step):
    run_dir = tmp_path / "run"
    child = run_child_until_stopped(run_dir, where, step)
    os.kill(child.pid, sig)
    os.kill(child.pid, signal.SIGCONT)  # a stopped process acts on SIGTERM/SIGINT once continued
    assert child.wait(timeout=60) != 0
    orphans = [n for n in os.listdir(run_dir) if n.endswith(".tmp")]
    if where == "in_write" and sig == signal.SIGKILL:
        assert orphans, "the killed write should have left its temporary file"

    messages = []
    results = Trainer(tiny_copy_config(), str(run_dir), datasets=copy_data, progress=False,
                      log=messages.append).run()
    assert not [n for n in os.listdir(run_dir) if n.endswith(".tmp")]  # orphans removed at the start
    assert all(any(f"removed {run_dir / n}" in m for m in messages) for n in orphans)
    expected, ref_results = reference
    assert_same_final_state(expected, final_state(str(run_dir)))
    assert results["metrics"]["test"] == ref_results["metrics"]["test"]


def test_a_full_disk_stops_the_run_and_it_resumes_bit_identical(tmp_path, copy_data, reference, monkeypatch):
    run_dir = tmp_path / "run"
    original = torch.save

    def full_disk(obj, f, *args, **kwargs):
        if isinstance(obj, dict) and "optimizer" in obj and obj["state"]["step"] == 8:
            f.write(b"PK\x03\x04 half")
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(obj, f, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr("lra_kit.train.checkpoint.torch.save", full_disk)
        with pytest.raises(OutputPathError, match="checkpoint.pt: No space left on device"):
            Trainer(tiny_copy_config(), str(run_dir), datasets=copy_data, progress=False, log=quiet).run()
    assert final_state(str(run_dir))["state"]["step"] == 4  # the last good checkpoint is intact
    assert not [n for n in os.listdir(run_dir) if n.endswith(".tmp")]
    Trainer(tiny_copy_config(), str(run_dir), datasets=copy_data, progress=False, log=quiet).run()
    assert_same_final_state(reference[0], final_state(str(run_dir)))


def test_a_second_trainer_on_the_same_directory_is_refused(tmp_path, copy_data):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with run_directory_lock(str(run_dir)):
        with pytest.raises(RunDirectoryError, match=f"in use by another trainer \\(pid {os.getpid()}\\)"):
            Trainer(tiny_copy_config(), str(run_dir), datasets=copy_data, progress=False, log=quiet).run()
    assert not (run_dir / "log.jsonl").exists() and not (run_dir / "config.json").exists()


def test_a_killed_trainer_does_not_leave_the_lock_stuck(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    code = ("import os, signal, sys; from lra_kit.train.lock import run_directory_lock\n"
            "with run_directory_lock(sys.argv[1]):\n    os.kill(os.getpid(), signal.SIGKILL)")
    env = dict(os.environ, PYTHONPATH=ROOT)
    assert subprocess.run([sys.executable, "-c", code, str(run_dir)], env=env).returncode == -signal.SIGKILL
    assert (run_dir / ".lock").exists()
    with run_directory_lock(str(run_dir)):  # the kernel released the dead process's lock
        pass
