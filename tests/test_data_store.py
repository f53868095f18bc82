"""The data store under damage: in-place corruption found by ``fetch --verify``, unreadable cache files
rebuilt with a warning, temporary files of killed writes removed (docs/design.md §4)."""
from __future__ import annotations

import hashlib
import os
import time

import numpy as np
import pytest

from lra_kit.data import load
from lra_kit.data.formats import listops as fmt
from lra_kit.data.generators.listops import ListOpsConfig
from lra_kit.data.store import fetch as fetch_module
from lra_kit.data.store.cache import ORPHAN_AGE_S, CacheRebuildWarning, entry_dir, load_npz, remove_orphans
from lra_kit.data.store.fetch import fetch_file
from lra_kit.data.store.sources import BUNDLES, Bundle, DataFile, fetch_command
from lra_kit.data.tasks.listops import SIZES_NAME, TSV_NAMES, generated_dir, tokenized


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))


def _truncate(path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _corrupt_in_place(path) -> None:
    """Flip one byte, keeping the file's size and modification time."""
    stat = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns


def test_fetch_verify_finds_a_file_altered_without_a_change_of_size_or_time(tmp_path):
    source = tmp_path / "official" / "archive.bin"
    source.parent.mkdir()
    good = np.random.default_rng(0).bytes(200_000)
    source.write_bytes(good)
    entry = DataFile("bundle/archive.bin", hashlib.sha256(good).hexdigest(), len(good), (source.as_uri(),))
    root = tmp_path / "data"
    target = fetch_file(entry, root=root, name="test")
    assert target.read_bytes() == good

    _corrupt_in_place(target)
    # without --verify the record of the earlier check (path, size, time) is trusted: nothing is noticed
    assert fetch_file(entry, root=root, name="test").read_bytes() != good
    # with it the file is hashed, found altered and downloaded again
    assert fetch_file(entry, root=root, name="test", recheck=True).read_bytes() == good


def test_cli_fetch_verify_passes_through(monkeypatch):
    from lra_kit.cli import main

    calls = []
    monkeypatch.setattr(fetch_module, "fetch", lambda name, **kw: calls.append((name, kw)) or [])
    assert main(["data", "fetch", "mnist", "--verify"]) == 0
    assert main(["data", "fetch", "mnist"]) == 0
    assert calls == [("mnist", {"verify": True}), ("mnist", {"verify": False})]


def test_fetch_verify_must_be_a_bool():
    with pytest.raises(TypeError, match="verify"):
        fetch_module.fetch("mnist", verify="yes")


def test_load_npz_discards_truncated_and_incomplete_files(tmp_path):
    path = tmp_path / "a.npz"
    assert load_npz(path) is None  # absent: build it
    np.savez(path, x=np.arange(10_000), y=np.ones(3))
    assert np.array_equal(load_npz(path, keys=("x", "y"))["x"], np.arange(10_000))
    with pytest.warns(CacheRebuildWarning, match="no array named z"):
        assert load_npz(path, keys=("x", "z")) is None
    assert not path.exists()
    np.savez(path, x=np.arange(10_000))
    _truncate(path)
    with pytest.warns(CacheRebuildWarning, match=str(path)):
        assert load_npz(path, keys=("x",)) is None
    assert not path.exists()


def test_truncated_token_cache_is_rebuilt_with_a_warning(tmp_path):
    tsv = tmp_path / "basic_val.tsv"
    fmt.write_tsv(tsv, [(f"( ( [MAX {i} ) 3 ) ] )", max(i, 3)) for i in range(10)])
    ragged, labels = tokenized(tsv)
    cached = next((tmp_path / "cache").rglob("tokens.npz"))
    _truncate(cached)
    with pytest.warns(CacheRebuildWarning):
        again, labels_again = tokenized(tsv)
    assert np.array_equal(again.values, ragged.values) and np.array_equal(labels_again, labels)
    assert load_npz(cached, keys=("values", "offsets", "labels")) is not None  # written again, whole


def test_truncated_generated_listops_file_is_regenerated_with_a_warning():
    cfg = ListOpsConfig(num_train=8, num_val=4, num_test=4, min_length=5, max_length=40, seed=3)
    folder = generated_dir(cfg, workers=1, progress=False)
    assert (folder / SIZES_NAME).is_file()
    train = folder / TSV_NAMES["train"]
    whole = train.read_bytes()
    _truncate(train, keep=0.6)
    with pytest.warns(CacheRebuildWarning, match="basic_train.tsv"):
        assert generated_dir(cfg, workers=1, progress=False) == folder
    assert train.read_bytes() == whole  # seeded: the same file again


def test_training_data_survives_a_truncated_cache_file():
    """The end-to-end case: ``load`` (what training calls) after a cache file was truncated."""
    first = load("listops", "train", scale="smoke", workers=1, progress=False)
    from lra_kit.data.store.paths import cache_dir

    cached = sorted(cache_dir().rglob("tokens.npz"))
    assert cached
    for path in cached:
        _truncate(path)
    with pytest.warns(CacheRebuildWarning):
        second = load("listops", "train", scale="smoke", workers=1, progress=False)
    assert len(first) == len(second) and all(np.array_equal(first[i][0], second[i][0]) for i in range(len(first)))


def test_orphan_temporary_files_are_removed_when_the_entry_is_opened():
    folder = entry_dir("test-orphans", a=1)
    old = folder / ".tokens.npz.abc123.tmp"
    fresh = folder / ".tokens.npz.def456.tmp"
    old.write_bytes(b"half a write")
    fresh.write_bytes(b"a write in progress")
    past = time.time() - ORPHAN_AGE_S - 60
    os.utime(old, (past, past))
    assert entry_dir("test-orphans", a=1) == folder
    assert not old.exists()
    assert fresh.exists()  # may belong to another process writing right now
    assert remove_orphans(folder, min_age_s=0) == [fresh] and not fresh.exists()
    with pytest.raises(ValueError, match="min_age_s"):
        remove_orphans(folder, min_age_s=-1)


def test_the_fetch_hint_names_the_offline_copies_where_one_exists():
    """Bundle.offline_copy: an ``offline`` entry, or MNIST's byte-identical copy; the LRA release has none."""
    assert {name for name, bundle in BUNDLES.items() if bundle.offline_copy} == set(BUNDLES) - {"lra"}
    for name in BUNDLES:
        assert ("LRA_KIT_DATA" in fetch_command(name)) == BUNDLES[name].offline_copy
    official = DataFile("toy/a.gz", None)
    assert not Bundle("toy", "a toy", (official,)).offline_copy
    assert Bundle("toy", "a toy", (official,), offline=(DataFile("toy/b.gz", None),)).offline_copy
