import shutil
import subprocess

import pytest

from lra_kit.results import git_commit

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "pkg" / "code.py").write_text("x = 1\n")
    (tmp_path / "results" / "record.json").write_text("{}\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "start")
    return tmp_path


def test_a_record_written_under_results_leaves_the_commit_clean(repo):
    (repo / "results" / "record.json").write_text('{"rows": []}\n')  # a benchmark appending its second run
    commit = git_commit(str(repo / "pkg"))
    assert len(commit) == 40 and not commit.endswith("-dirty")


def test_modified_code_marks_the_commit_dirty(repo):
    (repo / "pkg" / "code.py").write_text("x = 2\n")
    assert git_commit(str(repo / "pkg")).endswith("-dirty")
