"""``node --test tests/js`` alone runs every JavaScript test: none skipped, none passed for want of a reference.

Each file under tests/js has lra_kit write the reference it compares against (tests/js/reference.mjs runs
tests/js_references.py), so no other step is needed, and a reference cannot be stale. A file that would skip
without something handed in (an environment variable, a file pytest writes) fails here.
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_node_test_alone_runs_every_javascript_test(node_tests):
    results = node_tests.results()
    assert node_tests.returncode == 0, node_tests.tail()
    skipped = sorted(name for name, status in results.items() if status in ("skipped", "todo"))
    assert not skipped, f"skipped when run alone: {skipped}"
    assert node_tests.summary("skipped") == node_tests.summary("todo") == node_tests.summary("fail") == 0
    assert node_tests.summary("pass") == len(results) >= 23, node_tests.tail()
    assert len(list((ROOT / "tests" / "js").glob("*.test.mjs"))) >= 2


def test_a_file_that_cannot_get_its_reference_fails_instead_of_skipping(tmp_path):
    """Where Python cannot write the reference (here: an interpreter that exits 1), node reports the file as
    failed, with Python's message; nothing is skipped."""
    import os
    import shutil
    import subprocess

    import pytest

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (Node 20: apt-get install nodejs)")
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'no lra_kit here' >&2\nexit 1\n")
    broken.chmod(0o755)
    env = dict(os.environ, LRA_KIT_PYTHON=str(broken))
    proc = subprocess.run([node, "--test", "tests/js/sliders.test.mjs"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode != 0
    assert "did not write the reference" in proc.stdout and "no lra_kit here" in proc.stdout, proc.stdout[-3000:]
    assert "# skipped 0" in proc.stdout
