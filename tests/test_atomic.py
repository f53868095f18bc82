"""lra_kit.atomic: all-or-nothing writes with the umask's mode, early checks of output paths, orphan cleanup."""
from __future__ import annotations

import errno
import os
import stat
import sys

import pytest

from lra_kit.atomic import atomic_write, check_writable, remove_orphans
from lra_kit.errors import OutputPathError


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic_write(path, "w") as f:
            f.write("half of the new")
            raise KeyboardInterrupt
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["results.json"]


@pytest.mark.parametrize("umask", [0o002, 0o022, 0o077])
def test_the_mode_is_what_open_would_give(tmp_path, umask):
    old = os.umask(umask)
    try:
        with atomic_write(tmp_path / "a", "w") as f:
            f.write("x")
        with open(tmp_path / "b", "w") as f:
            f.write("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == stat.S_IMODE(os.stat(tmp_path / "b").st_mode)
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o666 & ~umask


def test_a_full_disk_names_the_target(tmp_path, monkeypatch):
    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OutputPathError, match=r"cannot write .*out\.bin: No space left on device") as info:
        with atomic_write(tmp_path / "out.bin") as f:
            f.write(b"data")
    assert isinstance(info.value, OSError) and os.listdir(tmp_path) == []


def test_an_error_about_another_file_passes_through(tmp_path):
    with pytest.raises(FileNotFoundError):
        with atomic_write(tmp_path / "out.bin") as f:
            with open(tmp_path / "missing-source") as source:
                f.write(source.read().encode())


def test_a_parent_that_is_a_file(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputPathError, match="file/sub/out.json"):
        with atomic_write(tmp_path / "file" / "sub" / "out.json", "w") as f:
            f.write("{}")


def test_check_writable(tmp_path):
    (tmp_path / "file").write_text("")
    assert check_writable(tmp_path / "new" / "deeper", directory=True) == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # nothing created, no probe left
    assert sorted(os.listdir(tmp_path)) == ["file"]
    check_writable(tmp_path / "file")  # an existing file may be replaced
    with pytest.raises(OutputPathError, match="exists and is not a directory"):
        check_writable(tmp_path / "file", directory=True)
    with pytest.raises(OutputPathError, match="is a directory, not a file"):
        check_writable(tmp_path, directory=False)
    with pytest.raises(OutputPathError, match="is a file, not a directory"):
        check_writable(tmp_path / "file" / "out.json")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")
def test_check_writable_finds_a_read_only_place():
    with pytest.raises(OutputPathError, match="/proc is not writable"):
        check_writable("/proc/lra-kit/out.json")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only directories")
def test_check_writable_finds_a_read_only_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    with pytest.raises(OutputPathError, match="not writable"):
        check_writable(locked / "run", directory=True)


def test_remove_orphans_removes_only_temporaries(tmp_path):
    for name in (".checkpoint.pt.abc123.tmp", ".results.json.x.tmp", "checkpoint.pt", "user.tmp", ".lock"):
        (tmp_path / name).write_text("")
    removed = remove_orphans(tmp_path)
    assert sorted(p.name for p in removed) == [".checkpoint.pt.abc123.tmp", ".results.json.x.tmp"]
    assert sorted(os.listdir(tmp_path)) == [".lock", "checkpoint.pt", "user.tmp"]
    assert remove_orphans(tmp_path / "missing") == []
