"""lra_kit.data's interface: load/TASKS, collate, errors, checksums, fetch (no network), CLI."""
import gzip
import shutil

import numpy as np
import pytest
import torch

from lra_kit.cli import main
from lra_kit.data import (LM_TASKS, LRA_TASKS, TASK_TABLE, TASKS, ChecksumMismatchError, DataMissingError,
                          DataUnreadableError, cache_dir, collate, data_dir, load, options_of, task_names, task_spec)
from lra_kit.data.store.fetch import fetch_file
from lra_kit.data.formats.mnist import read_idx
from lra_kit.data.store.sources import DataFile
from data_helpers import require_shared_data


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))


def test_tasks_and_clear_value_errors():
    assert TASKS == tuple(TASK_TABLE) == LRA_TASKS + LM_TASKS and len(LRA_TASKS) == 5  # LRA's five tasks
    assert all(task_spec(t).kind == "lm" for t in LM_TASKS) and all(task_spec(t).kind != "lm" for t in LRA_TASKS)
    with pytest.raises(ValueError, match="task must be one of .*listops"):
        task_spec("imdb")
    with pytest.raises(ValueError, match="task must be one of .*listops"):
        load("imdb", "train")
    with pytest.raises(ValueError, match="split must be one of .*'val'"):
        load("copy", "dev")
    with pytest.raises(ValueError, match="unknown option.*valid"):
        load("copy", "train", colour=True)
    with pytest.raises(ValueError, match="scale must be one of"):
        load("copy", "train", scale="huge")


def test_data_and_cache_dirs(monkeypatch, tmp_path):
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "d"))
    assert data_dir() == tmp_path / "d" and cache_dir() == tmp_path / "cache"
    monkeypatch.delenv("LRA_KIT_DATA")
    assert str(data_dir()).endswith(".cache/lra_kit")


def test_collate_classification_pads_and_masks():
    batch = collate([(torch.tensor([5, 6, 7]), 1), (torch.tensor([8]), 0)], pad_id=0)
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch["key_padding_mask"].tolist() == [[False, False, False], [False, True, True]]
    assert batch["labels"].dtype == torch.long and batch["labels"].tolist() == [1, 0]


def test_pixel_zero_is_not_padding_unless_nystromformer_compat():
    pixels = [(torch.tensor([0, 0, 7, 255]), 1), (torch.tensor([3, 0, 0, 0]), 0)]
    assert not collate(pixels, pad_id=256)["key_padding_mask"].any()
    quirk = collate(pixels, pad_id=0, mask_pad_tokens=True)["key_padding_mask"]
    assert quirk.tolist() == [[True, True, False, False], [False, True, True, True]]


def _mnist_copy(tmp_path):
    src = require_shared_data("mnist")
    dst = tmp_path / "data" / "mnist"
    dst.mkdir(parents=True)
    for f in src.glob("*.gz"):
        shutil.copy(f, dst / f.name)
    return dst


def test_missing_file_names_path_problem_and_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path))
    with pytest.raises(DataMissingError) as info:
        load("mnist", "test")
    message = str(info.value)
    assert message.startswith("missing: ") and str(tmp_path / "mnist" / "t10k-images-idx3-ubyte.gz") in message
    assert "lra-kit data fetch mnist" in message


@pytest.mark.data
def test_corrupt_file_is_a_checksum_mismatch(tmp_path, monkeypatch):
    folder = _mnist_copy(tmp_path)
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "data"))
    assert len(load("mnist", "test", scale="smoke")) == 64
    target = folder / "t10k-labels-idx1-ubyte.gz"
    target.write_bytes(target.read_bytes()[:-10])  # truncated
    with pytest.raises(ChecksumMismatchError) as info:
        load("mnist", "test", scale="smoke")
    assert str(target) in str(info.value) and "checksum mismatch" in str(info.value)
    assert "lra-kit data fetch mnist" in str(info.value)


def test_idx_reader_and_unreadable_file(tmp_path):
    good = tmp_path / "x.gz"
    payload = bytes([0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2]) + bytes(range(8))
    good.write_bytes(gzip.compress(payload))
    assert read_idx(good).tolist() == [[[0, 1], [2, 3]], [[4, 5], [6, 7]]]
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(DataUnreadableError, match="unreadable"):
        read_idx(bad)


def test_fetch_verifies_and_never_leaves_partial_files(tmp_path):
    source = tmp_path / "origin.bin"
    source.write_bytes(b"lra_kit" * 1000)
    import hashlib

    good = DataFile("x/file.bin", hashlib.sha256(source.read_bytes()).hexdigest(), None, (source.as_uri(),))
    path = fetch_file(good, root=tmp_path / "root", name="mnist")
    assert path.read_bytes() == source.read_bytes() and not list(path.parent.glob("*.part"))
    bad = DataFile("x/other.bin", "0" * 64, None, (source.as_uri(),))
    with pytest.raises(ChecksumMismatchError):
        fetch_file(bad, root=tmp_path / "root", name="mnist")
    assert not (tmp_path / "root" / "x" / "other.bin").exists()
    assert not list((tmp_path / "root" / "x").glob("*.part"))


def test_cli_generate_listops_and_stats(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "nothing"))
    assert main(["data", "generate", "listops", "--out", str(tmp_path / "lo"), "--scale", "smoke"]) == 0
    header = (tmp_path / "lo" / "basic_train.tsv").read_text().splitlines()[0]
    assert header == "Source\tTarget"
    assert main(["data", "stats", "copy", "--scale", "smoke"]) == 0
    out = capsys.readouterr().out
    assert "train" in out and "p50" in out
    assert main(["data", "stats", "retrieval"]) == 1  # not available offline: says so, no stand-in


def test_dataset_attributes_of_every_available_task(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "nothing"))
    for task in task_names(generated=True):
        dataset = load(task, "val", scale="smoke", **({"progress": False} if "progress" in options_of(task) else {}))
        for attr in ("vocab_size", "num_classes", "max_length", "pad_id", "kind", "metadata"):
            assert hasattr(dataset, attr)
        item = dataset[0]
        ids = item if dataset.kind == "lm" else item[0]
        assert ids.dtype == torch.long and int(ids.max()) < dataset.vocab_size and len(ids) <= dataset.max_length
        assert np.isscalar(len(dataset))


def test_the_task_table_checks_its_rows_and_filters():
    from lra_kit.data import TaskSpec

    row = dict(loader=lambda split, *, scale=None: None, summary="", kind="classification", length=8,
               metric="accuracy", suite="lra")
    assert TaskSpec("toy", **row).options() == ()
    for field, bad in (("kind", "seq2seq"), ("metric", "bleu"), ("suite", "glue"), ("scales", ("huge",))):
        with pytest.raises(ValueError, match=field):
            TaskSpec("toy", **{**row, field: bad})
    assert task_names(kind="retrieval") == ("retrieval",)
    assert set(task_names(metric="bits_per_dim")) <= set(LM_TASKS)
    with pytest.raises(ValueError, match="unknown TaskSpec field"):
        task_names(colour="red")
