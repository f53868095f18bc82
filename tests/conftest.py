"""Tests marked ``data`` whose ``task`` parameter reads an offline dataset need that dataset:
in CI (``CI=true``) its absence fails the test, elsewhere the test is skipped with the reason
(docs/design.md §4). Generated tasks (ListOps, Pathfinder, copy) need nothing; tests without a ``task``
parameter call ``data_helpers.require_shared_data`` themselves.

A test that runs the Triton kernels under Triton's interpreter is skipped, with the reason, where the installed
interpreter cannot run them (``InterpreterUnsupported``, lra_kit.attention.triton.switch.interpreter_problem): that
is a property of the Triton and NumPy installed, which the message names, not a fault of the code under test."""
import pytest
from data_helpers import require_shared_data

from lra_kit.attention.triton.switch import InterpreterUnsupported

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
