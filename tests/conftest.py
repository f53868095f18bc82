"""Tests marked ``data`` whose ``task`` parameter reads an offline dataset need that dataset:
in CI (``CI=true``) its absence fails the test, elsewhere the test is skipped with the reason
(docs/design.md §4). Generated tasks (ListOps, Pathfinder, copy) need nothing; tests without a ``task``
parameter call ``data_helpers.require_shared_data`` themselves.

A test that runs the Triton kernels under Triton's interpreter is skipped, with the reason, where the installed
interpreter cannot run them (``InterpreterUnsupported``,
lra_kit.attention.causal.triton.switch.interpreter_problem): that is a property of the Triton and NumPy installed,
which the message names, not a fault of the code under test.

``node_tests`` runs the JavaScript tests once per session, exactly as ``node --test tests/js`` does (each file
has lra_kit write its own reference: tests/js_references.py); tests/test_export_web.py, tests/test_viz_js.py and
tests/test_js_alone.py read its report.

One intra-op thread (``OMP_NUM_THREADS=1`` unless set, for this process and every process a test starts): the
tests' models are small, and when anything else runs on the machine two OpenMP threads wait on each other at
every small op. Measured on 2 busy cores: the copy-task learning test, softmax, 65 s with two threads against
7 s with one (the Makefile's NOTEBOOK_THREADS says the same of the notebooks)."""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch is imported, so that its OpenMP pool starts at 1

import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402
from data_helpers import require_shared_data  # noqa: E402

from lra_kit.attention.causal.triton.switch import InterpreterUnsupported  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))  # in case torch was imported before this file

# task -> folder of the offline copies (docs/data-provenance.md) it reads, under LRA_KIT_DATA
OFFLINE_FOLDERS = {"text": "imdb", "image": "cifar10-jpeg", "cifar10": "cifar10-jpeg", "mnist": "mnist"}


def pytest_runtest_setup(item):
    if item.get_closest_marker("data") is None:
        return
    task = getattr(getattr(item, "callspec", None), "params", {}).get("task")
    if task in OFFLINE_FOLDERS:
        require_shared_data(OFFLINE_FOLDERS[task])


def _interpreter_unsupported(exc: BaseException | None) -> InterpreterUnsupported | None:
    seen = set()
    while exc is not None and id(exc) not in seen:  # torch.compile may wrap the error raised inside it
        if isinstance(exc, InterpreterUnsupported):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    found = _interpreter_unsupported(call.excinfo.value) if call.excinfo is not None else None
    if found is not None and report.failed:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {found}")


@dataclass
class NodeRun:
    """What ``node --test`` reported: its exit status, output, and the TAP line of every top-level test."""
    returncode: int
    stdout: str
    stderr: str

    def results(self) -> dict[str, str]:
        """{test name: "ok" | "not ok" | "skipped" | "todo"} for every top-level test (and every file that failed
        to load, named by its path)."""
        out = {}
        for status, name, directive in re.findall(r"^(ok|not ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$", self.stdout,
                                                  re.M):
            out[name] = {"SKIP": "skipped", "TODO": "todo"}.get(directive, status)
        return out

    def summary(self, key: str) -> int:
        return int(re.search(rf"^# {key} (\d+)", self.stdout, re.M).group(1))

    def tail(self) -> str:
        return self.stdout[-6000:] + self.stderr[-2000:]


@pytest.fixture(scope="session")
def node_tests() -> NodeRun:
    """``node --test`` on every tests/js/*.test.mjs (what ``node --test tests/js`` runs), with no reference handed
    in: each file must write its own. Skipped, with the reason, where node is not installed."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the JavaScript tests are not run (Node 20: apt-get install nodejs)")
    root = Path(__file__).resolve().parents[1]
    files = sorted(str(p.relative_to(root)) for p in (root / "tests" / "js").glob("*.test.mjs"))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_REFERENCE")}  # nothing handed in
    env["LRA_KIT_PYTHON"] = sys.executable  # this interpreter writes the references
    proc = subprocess.run([node, "--test", *files], cwd=root, env=env, capture_output=True, text=True, timeout=900)
    return NodeRun(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def record_triton_launches(monkeypatch):
    """A function that starts recording the names of the Triton kernels the causal op's host launches (it looks each
    up once a launch) and returns the list they are appended to; each call starts a new list."""
    from lra_kit.attention.causal.triton import host, kernels_for

    def start() -> list[str]:
        names = []

        class Recorder:
            def __init__(self, real):
                self.real = real

            def __getattr__(self, name):
                names.append(name)
                return getattr(self.real, name)

        monkeypatch.setattr(host, "kernels_for", lambda tensor: Recorder(kernels_for(tensor)))
        return names

    return start
