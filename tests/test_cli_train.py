"""``lra-kit train | eval | generate`` end to end at smoke scale (in-process)."""
from __future__ import annotations

import json
import os

import pytest

from lra_kit.cli import main
from data_helpers import require_shared_data


def test_help_lists_the_commands_with_examples(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for command in ("train", "eval", "generate"):
        assert command in out
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "--record copy-task" in out and "torchrun" in out


@pytest.mark.parametrize("flag,value,valid", [("--task", "imdb", "listops"), ("--attention", "nystrom", "performer"),
                                              ("--scale", "huge", "smoke")])
def test_unknown_names_list_the_valid_ones(flag, value, valid, capsys):
    args = {"--task": "copy", "--attention": "linear"}
    args[flag] = value
    with pytest.raises(SystemExit) as exit_info:
        main(["train", *[x for kv in args.items() for x in kv]])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and valid in err


@pytest.mark.data
def test_train_resume_eval_generate_copy(tmp_path, capsys):
    run_dir = str(tmp_path / "copy-run")
    config = tmp_path / "partial.json"
    config.write_text(json.dumps({"train": {"steps": 6, "eval_every": 3}}))
    argv = ["train", "--task", "copy", "--attention", "momentum", "--connection", "adaptive", "--scale", "smoke",
            "--out", run_dir, "--config", str(config), "--set", "model.layers=1", "--no-progress",
            "--record", "cli-test", "--record-dir", str(tmp_path / "results")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert '"connection": "adaptive"' in out and "copy-momentum+adaptive-smoke" in out  # the config is printed
    saved = json.loads(open(os.path.join(run_dir, "config.json")).read())
    assert saved["train"]["steps"] == 6 and saved["model"]["layers"] == 1
    results = json.loads(open(os.path.join(run_dir, "results.json")).read())
    assert results["steps"] == 6 and results["curves"]["val"]
    assert os.path.exists(tmp_path / "results" / "cli-test" / "copy-momentum+adaptive-smoke.json")

    assert main(argv) == 0  # the same command again resumes (here: finds the run complete) and says so
    assert "resuming from the checkpoint at step 6/6" in capsys.readouterr().out

    assert main(["eval", run_dir, "--split", "val"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["split"] == "val" and 0.0 <= report["accuracy"] <= 1.0 and report["scale"] == "smoke"

    assert main(["generate", run_dir, "--n", "4", "--show", "1"]) == 0
    out = capsys.readouterr().out
    assert "copy_accuracy" in out
    assert main(["generate", run_dir, "--pictures", str(tmp_path / "pictures")]) == 1
    assert "--pictures draws images: it needs an image task, not 'copy'" in capsys.readouterr().err


@pytest.mark.data
def test_generate_writes_a_png_grid_for_mnist(tmp_path, capsys):
    from PIL import Image

    require_shared_data("mnist")
    run_dir = str(tmp_path / "mnist-run")
    assert main(["train", "--task", "mnist", "--attention", "linear", "--scale", "smoke", "--out", run_dir,
                 "--no-progress", "--set", "train.steps=2", "--set", "train.eval_every=2"]) == 0
    assert main(["generate", run_dir, "--n", "4", "--prompt", "28"]) == 0
    png = os.path.join(run_dir, "samples.png")
    assert "wrote 4 samples" in capsys.readouterr().out
    assert Image.open(png).size == (2 * 30, 2 * 30)

    # --pictures: samples and completions with the run's provenance, as results/mnist/ holds them
    pictures = tmp_path / "pictures"
    assert main(["generate", run_dir, "--n", "2", "--pictures", str(pictures)]) == 0
    assert "mnist-linear-smoke-pictures.json" in capsys.readouterr().out
    record = json.loads((pictures / "mnist-linear-smoke-pictures.json").read_text())
    results = json.loads(open(os.path.join(run_dir, "results.json")).read())
    assert {k: record[k] for k in ("experiment", "steps", "git_commit")} == \
        {k: results[k] for k in ("experiment", "steps", "git_commit")}
    assert record["checkpoint"] == "best.pt" and record["keep_rows"] == 14
    assert record["test_bits_per_dim"] == results["metrics"]["test"]["bits_per_dim"]
    assert Image.open(pictures / record["files"]["completions"]).size == (8 * 30, 3 * 30)  # occluded, drawn, original


@pytest.mark.parametrize("command", ["eval", "generate"])
def test_eval_and_generate_reject_non_run_dirs(tmp_path, command, capsys):
    assert main([command, str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "not a run directory (no config.json)" in err and str(tmp_path) in err and "Traceback" not in err


def test_user_errors_print_a_message_not_a_traceback(tmp_path, monkeypatch, capsys):
    """A missing dataset through the CLI: exit status 1 and the fix, without a traceback."""
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "empty"))
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LRA_KIT_DEBUG", raising=False)
    assert main(["train", "--task", "mnist", "--attention", "linear", "--scale", "smoke",
                 "--out", str(tmp_path / "run"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "error" in err and "mnist" in err and "Traceback" not in err


def test_the_baselines_train_through_the_cli(tmp_path, capsys):
    """The papers' baselines from the command line: LSH with its rounds named as the papers write them (lsh-2), and
    Linformer; a record named after each. --n-hashes with another attention is an error."""
    for argv, name in ((["--task", "listops", "--attention", "lsh", "--n-hashes", "2"], "listops-lsh-2-smoke"),
                       (["--task", "listops", "--attention", "linformer"], "listops-linformer-smoke")):
        assert main(["train", *argv, "--scale", "smoke", "--out", str(tmp_path / name), "--set", "train.steps=3",
                     "--set", "train.eval_every=3", "--no-progress", "--record", "cli-test", "--record-dir",
                     str(tmp_path / "results")]) == 0
        record = json.loads((tmp_path / "results" / "cli-test" / f"{name}.json").read_text())
        assert record["steps"] == 3 and record["config"]["attention"] in name
    assert record["config"]["model"]["attention_options"]["k"] == 256
    capsys.readouterr()
    assert main(["train", "--task", "listops", "--attention", "linear", "--n-hashes", "2", "--scale", "smoke",
                 "--out", str(tmp_path / "x")]) == 1  # a ConfigError: exit status 1, the message on stderr
    assert "--n-hashes" in capsys.readouterr().err
