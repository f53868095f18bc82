"""The reason a data test gives when it skips: what to run, and no path of this machine."""
from __future__ import annotations

from data_helpers import missing_reason

from lra_kit.data import data_dir


def test_a_skipped_data_test_names_the_command_not_the_path(monkeypatch, tmp_path):
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "elsewhere"))
    for name in ("mnist", "imdb", "cifar10-jpeg", "listops-nangia-bowman"):
        reason = missing_reason(name)
        assert str(data_dir()) not in reason and "/" not in reason.split("(")[0], reason
    assert missing_reason("mnist") == "dataset 'mnist' is not in $LRA_KIT_DATA: `lra-kit data fetch mnist` downloads it"
    # the JPEG copy of CIFAR-10 is no bundle of `lra-kit data fetch`: the reason must not promise that it fetches it
    assert "cannot download it" in missing_reason("cifar10-jpeg") and "fetch cifar10-jpeg" not in \
        missing_reason("cifar10-jpeg")
    monkeypatch.delenv("LRA_KIT_DATA")
    assert "the data directory (~/.cache/lra_kit; $LRA_KIT_DATA)" in missing_reason("imdb")
