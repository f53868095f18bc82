"""``lra-kit data ensure``: what ``make book`` and ``make test`` run before any notebook. A present dataset is
kept, a missing one is fetched when a source answers, and an offline machine is told so within seconds and
goes on (the pages then show a notice) — both paths, against local servers only."""
from __future__ import annotations

import hashlib
import http.server
import socket
import threading
import time

import pytest

from lra_kit.cli import main
from lra_kit.data.store import ensure as ensure_module
from lra_kit.data.store.ensure import ensure_one, missing_notice, present
from lra_kit.data.store.errors import ChecksumMismatchError
from lra_kit.data.store.sources import BUNDLES, Bundle, DataFile

PAYLOAD = b"an official archive, " * 1000


@pytest.fixture(autouse=True)
def _own_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("LRA_KIT_FETCH", raising=False)


@pytest.fixture
def server():
    """A local HTTP server holding PAYLOAD at /toy.bin; ``server.requests`` counts what it was asked."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the name http.server calls)
            httpd.requests += 1
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAYLOAD)))
            self.end_headers()
            self.wfile.write(PAYLOAD)

        def log_message(self, *args):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    httpd.requests = 0
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _toy(monkeypatch, url: str, sha256: str | None = None) -> Bundle:
    entry = DataFile("toy/toy.bin", sha256 or hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD), (url,))
    bundle = Bundle("toy", "a toy archive", (entry,))
    monkeypatch.setitem(BUNDLES, "toy", bundle)
    return bundle


def test_a_missing_dataset_is_fetched_and_verified(tmp_path, monkeypatch, server):
    _toy(monkeypatch, f"http://127.0.0.1:{server.server_port}/toy.bin")
    assert not present("toy") and missing_notice("toy") is not None
    status = ensure_one("toy", timeout=5)
    assert (status.state, status.ok) == ("fetched", True)
    assert (tmp_path / "data" / "toy" / "toy.bin").read_bytes() == PAYLOAD
    assert present("toy") and missing_notice("toy") is None
    assert ensure_one("toy", timeout=5).state == "present" and server.requests == 1  # not fetched twice


def test_fetching_off_makes_no_request(monkeypatch, server):
    _toy(monkeypatch, f"http://127.0.0.1:{server.server_port}/toy.bin")
    monkeypatch.setenv("LRA_KIT_FETCH", "0")
    status = ensure_one("toy", timeout=5)
    assert status.state == "missing" and "LRA_KIT_FETCH=0" in status.detail
    assert server.requests == 0


def test_a_source_that_never_answers_gives_up_within_seconds(monkeypatch):
    silent = socket.socket()  # accepts connections (the kernel's backlog) and never sends a byte
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        _toy(monkeypatch, f"http://127.0.0.1:{silent.getsockname()[1]}/toy.bin")
        start = time.perf_counter()
        status = ensure_one("toy", timeout=1)
        assert status.state == "missing" and time.perf_counter() - start < 5
    finally:
        silent.close()


def test_a_host_that_does_not_resolve_is_reported(monkeypatch):
    _toy(monkeypatch, "http://lra-kit-test.invalid/toy.bin")  # .invalid never resolves (RFC 2606)
    start = time.perf_counter()
    status = ensure_one("toy", timeout=2)
    assert status.state == "missing" and "lra-kit-test.invalid" in status.detail
    assert time.perf_counter() - start < 5


def test_a_corrupt_file_is_named_by_the_notice(tmp_path, monkeypatch):
    _toy(monkeypatch, "http://lra-kit-test.invalid/toy.bin")
    target = tmp_path / "data" / "toy" / "toy.bin"
    target.parent.mkdir(parents=True)
    target.write_bytes(PAYLOAD[:-1] + b"!")
    with pytest.raises(ChecksumMismatchError):
        present("toy")
    assert "fails its checksum" in missing_notice("toy")
    assert ensure_one("toy", timeout=1, allow_fetch=False).state == "missing"


def test_the_notice_names_the_dataset_and_the_command_and_no_path(tmp_path):
    notice = missing_notice("mnist")  # LRA_KIT_DATA is an empty folder here
    assert "MNIST" in notice and "`lra-kit data fetch mnist`" in notice and "LRA_KIT_DATA" in notice
    assert str(tmp_path) not in notice


def test_an_offline_copy_counts_as_present(tmp_path, monkeypatch):
    official = DataFile("toy/official.tar.gz", "0" * 64, 10, ("http://lra-kit-test.invalid/x",))
    offline = DataFile("toy/copy.tar.gz", hashlib.sha256(PAYLOAD).hexdigest(), len(PAYLOAD))
    monkeypatch.setitem(BUNDLES, "toy", Bundle("toy", "a toy archive", (official,), offline=(offline,)))
    assert not present("toy")
    (tmp_path / "data" / "toy").mkdir(parents=True)
    (tmp_path / "data" / "toy" / "copy.tar.gz").write_bytes(PAYLOAD)
    assert present("toy") and ensure_one("toy", allow_fetch=False).state == "present"


def test_cli_ensure_exits_0_and_says_what_is_missing(capsys):
    assert main(["data", "ensure", "mnist", "imdb", "--offline"]) == 0
    out = capsys.readouterr().out
    assert "mnist: not available" in out and "imdb: not available" in out and "lra-kit data fetch mnist" in out


def test_ensure_checks_its_arguments():
    with pytest.raises(ValueError, match="name must be one of"):
        ensure_one("nope")
    with pytest.raises(ValueError, match="timeout must be a positive"):
        ensure_one("mnist", timeout=0)
    assert ensure_module.fetching_allowed()
