"""lra_kit.threads: the command line and the book's kernels use the threads LRA_KIT_THREADS names, default 1."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from lra_kit import threads
from lra_kit.cli import main
from lra_kit.errors import ConfigError


@pytest.fixture
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_order_of_the_sources():
    assert threads.get_threads(environ={}) == threads.DEFAULT == 1
    assert threads.get_threads(environ={"OMP_NUM_THREADS": "3"}) == 3
    assert threads.get_threads(environ={"OMP_NUM_THREADS": "3", "LRA_KIT_THREADS": "2"}) == 2
    assert threads.get_threads(4, environ={"LRA_KIT_THREADS": "2"}) == 4


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_bad_values_name_their_source(value):
    with pytest.raises(ConfigError, match=r"\$LRA_KIT_THREADS must be a whole number of threads >= 1"):
        threads.get_threads(environ={"LRA_KIT_THREADS": value})


@pytest.mark.parametrize(("argv", "env", "expected"), [([], {}, 1), ([], {"LRA_KIT_THREADS": "2"}, 2),
                                                       (["--threads", "3"], {"LRA_KIT_THREADS": "2"}, 3)])
def test_the_command_line_sets_torch_threads(monkeypatch, restore_threads, argv, env, expected):
    """A command runs on the threads chosen, whatever torch started with (here: a number no source names)."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("LRA_KIT_THREADS", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    torch.set_num_threads(5)
    seen = []
    monkeypatch.setattr("lra_kit.reports._main", lambda args: seen.append(torch.get_num_threads()) or 0)
    assert main([*argv, "report", "--check"]) == 0
    assert seen == [expected]


def test_a_bad_thread_count_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("LRA_KIT_THREADS", "0")
    assert main(["report", "--check"]) == 1
    assert "$LRA_KIT_THREADS must be a whole number of threads >= 1, got '0'" in capsys.readouterr().err


def test_the_book_kernels_inherit_the_choice():
    """The Sphinx extension exports the choice before the kernels start; a process started after it (as a kernel
    is) runs torch on that many threads. Without LRA_KIT_THREADS the default, 1, wins over torch's own default."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "LRA_KIT_THREADS")}
    probe = [sys.executable, "-c", "import torch; print(torch.get_num_threads())"]
    for setting, expected in ((None, 1), ("2", 2)):
        child = dict(env, **({"LRA_KIT_THREADS": setting} if setting else {}))
        assert threads.kernel_environment(child) == expected
        assert subprocess.run(probe, env=child, capture_output=True, text=True, check=True).stdout.strip() == \
            str(expected)


def test_the_book_extension_calls_it(monkeypatch):
    from lra_kit.viz import notebooks

    monkeypatch.setenv("LRA_KIT_THREADS", "2")
    monkeypatch.setenv("OMP_NUM_THREADS", "7")

    class App:
        def connect(self, *args):
            pass

    monkeypatch.setattr(notebooks, "encrypt_kernels", lambda: True)  # tested below, in a process of its own
    notebooks.setup(App())
    assert os.environ["OMP_NUM_THREADS"] == "2"


KERNEL_RUN = """
import sys, nbformat
from jupyter_cache.executors.utils import single_nb_execution
if sys.argv[1] == "encrypted":
    from lra_kit.viz.notebooks import encrypt_kernels
    assert encrypt_kernels(), "libzmq without CURVE"
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
result = single_nb_execution(nb, cwd=None, timeout=120, allow_errors=False)
assert result.err is None and nb.cells[0].outputs[0]["text"] == "42\\n", (result.err, nb.cells[0].outputs)
"""


def test_the_book_kernels_start_without_the_transport_warning():
    """ipykernel warns on every start over plain TCP; with the keys the extension asks for it runs encrypted and
    says nothing (and still runs the cell). The plain start is run too, so that the test fails if it stops warning
    for another reason (then this workaround can go)."""
    pytest.importorskip("jupyter_cache")
    zmq = pytest.importorskip("zmq")
    if not zmq.has("curve"):
        pytest.skip("libzmq without CURVE: kernels cannot be encrypted here")
    warning = "without encryption"
    runs = {mode: subprocess.run([sys.executable, "-c", KERNEL_RUN, mode], capture_output=True, text=True,
                                 timeout=300) for mode in ("plain", "encrypted")}
    for mode, run in runs.items():
        assert run.returncode == 0, (mode, run.stderr[-2000:])
    assert warning in runs["plain"].stderr
    assert warning not in runs["encrypted"].stderr, runs["encrypted"].stderr[-2000:]
