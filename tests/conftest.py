"""Tests marked ``data`` whose ``task`` parameter reads an offline dataset need that dataset:
in CI (``CI=true``) its absence fails the test, elsewhere the test is skipped with the reason
(docs/design.md §4). Generated tasks (ListOps, Pathfinder, copy) need nothing; tests without a ``task``
parameter call ``data_helpers.require_shared_data`` themselves."""
from data_helpers import require_shared_data

# task -> folder of the offline copies (docs/data-provenance.md) it reads, under LRA_KIT_DATA
OFFLINE_FOLDERS = {"text": "imdb", "image": "cifar10-jpeg", "cifar10": "cifar10-jpeg", "mnist": "mnist"}


def pytest_runtest_setup(item):
    if item.get_closest_marker("data") is None:
        return
    task = getattr(getattr(item, "callspec", None), "params", {}).get("task")
    if task in OFFLINE_FOLDERS:
        require_shared_data(OFFLINE_FOLDERS[task])
