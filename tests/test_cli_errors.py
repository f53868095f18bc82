"""How ``lra-kit`` reports errors: a user's mistake is one line and exit status 1, found before the run
starts; a bug (out of memory, a shape mismatch) keeps its traceback."""
from __future__ import annotations

import errno
import sys

import pytest
import torch

from lra_kit.cli import main
from lra_kit.train import trainer as trainer_module

SMOKE = ["train", "--task", "copy", "--attention", "linear", "--scale", "smoke", "--no-progress"]


@pytest.fixture(autouse=True)
def no_debug(monkeypatch):
    monkeypatch.delenv("LRA_KIT_DEBUG", raising=False)


@pytest.fixture
def no_training(monkeypatch):
    """Fail loudly if a Trainer is built: the error must come before any data is read."""
    def refuse(*args, **kwargs):
        raise AssertionError("the Trainer was built before the bad input was found")

    monkeypatch.setattr(trainer_module.Trainer, "__init__", refuse)


def one_line_error(capsys, *words) -> str:
    err = capsys.readouterr().err
    first, *rest = err.strip().splitlines()
    assert first.startswith("lra-kit ") and ": error: " in first, err
    assert rest == ["(set LRA_KIT_DEBUG=1 for the traceback)"], err
    for word in words:
        assert word in first, (word, first)
    return first


@pytest.mark.parametrize("override,words", [
    ("data.batch_size=-4", ["data.batch_size", "-4"]),
    ("train.eval_every=0", ["train.eval_every", "0"]),
    ("train.steps=abc", ["train.steps", "abc"]),
    ("train.steps=2.5", ["train.steps", "2.5"]),
    ("optim.lr=nan", ["optim.lr", "nan"]),
])
def test_bad_config_values_are_one_line_before_the_run(tmp_path, override, words, capsys, no_training):
    assert main([*SMOKE, "--out", str(tmp_path / "run"), "--set", override]) == 1
    one_line_error(capsys, *words)
    assert not (tmp_path / "run").exists()


def test_out_that_is_a_file(tmp_path, capsys, no_training):
    target = tmp_path / "a-file"
    target.write_text("")
    assert main([*SMOKE, "--out", str(target)]) == 1
    one_line_error(capsys, str(target), "not a directory")
    assert main([*SMOKE, "--out", str(target / "run")]) == 1
    one_line_error(capsys, str(target / "run"), "is a file")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_read_only_out_and_record_dir_are_found_before_the_run(tmp_path, capsys, no_training):
    assert main([*SMOKE, "--out", "/proc/lra-kit-run"]) == 1  # /proc takes no new files, even from root
    one_line_error(capsys, "/proc/lra-kit-run", "not writable")
    assert main([*SMOKE, "--out", str(tmp_path / "run"), "--record", "x", "--record-dir", "/proc/results"]) == 1
    one_line_error(capsys, "/proc/results/x/copy-linear-smoke.json", "not writable")


def test_missing_or_malformed_config_file(tmp_path, capsys, no_training):
    assert main([*SMOKE, "--config", str(tmp_path / "nope.json")]) == 1
    one_line_error(capsys, "nope.json", "No such file")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main([*SMOKE, "--config", str(bad)]) == 1
    one_line_error(capsys, "bad.json", "not valid JSON")


def test_bad_data_options_are_one_line(tmp_path, capsys):
    assert main([*SMOKE, "--out", str(tmp_path / "run"), "--set", "data.options.colour=1"]) == 1
    one_line_error(capsys, "data.options", "colour")


@pytest.mark.parametrize("device", ["gpu", "cpu:0", "cuda:x"])
def test_bad_device(tmp_path, device, capsys):
    assert main([*SMOKE, "--out", str(tmp_path / "run"), "--device", device]) == 1
    one_line_error(capsys, "--device", device)


def test_a_full_disk_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("lra_kit.train.checkpoint.torch.save", full)
    run_dir = tmp_path / "run"
    assert main([*SMOKE, "--out", str(run_dir), "--set", "train.steps=2", "--set", "train.eval_every=2"]) == 1
    one_line_error(capsys, str(run_dir / "best.pt"), "No space left on device")  # the first file written


@pytest.mark.parametrize("error", [torch.OutOfMemoryError("CUDA out of memory"),
                                   RuntimeError("mat1 and mat2 shapes cannot be multiplied")])
def test_a_bug_keeps_its_traceback(tmp_path, monkeypatch, error):
    def run(self):
        raise error

    monkeypatch.setattr(trainer_module.Trainer, "run", run)
    with pytest.raises(type(error)):
        main([*SMOKE, "--out", str(tmp_path / "run")])


def test_ctrl_c_says_how_to_resume(tmp_path, monkeypatch, capsys):
    def run(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(trainer_module.Trainer, "run", run)
    assert main([*SMOKE, "--out", str(tmp_path / "run")]) == 130
    assert "interrupted (run the same command again to resume" in capsys.readouterr().err


@pytest.mark.parametrize("option,value", [("--n", "0"), ("--prompt", "0"), ("--temperature", "-1"),
                                          ("--temperature", "nan"), ("--show", "-1")])
def test_generate_checks_its_options_first(tmp_path, option, value, capsys):
    assert main(["generate", str(tmp_path), option, value]) == 1
    one_line_error(capsys, option)
