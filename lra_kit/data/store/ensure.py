"""``lra-kit data ensure NAME...``: make the datasets the book needs present, or say clearly that they are not.

``make book`` and ``make test`` call it before any notebook runs. For each bundle it

1. accepts the files already under ``data_dir()`` — the official ones or a complete offline copy
   (``sources.BUNDLES``), checksum-verified;
2. otherwise downloads them with ``fetch`` (progress bar, resumable, sha256-checked), unless fetching is
   off (``LRA_KIT_FETCH=0``) or the source does not answer within ``timeout`` seconds — a name that does not
   resolve, a connection that is refused or hangs all count, so an offline machine waits seconds, not minutes;
3. otherwise reports the bundle missing, and the pages that need it show :func:`missing_notice` instead of
   their live cell (the rest of each page, the recorded runs included, still renders).

It never fails the build for a missing dataset: that is the point of step 3. A corrupt file that cannot be
replaced is reported the same way, with the checksum error.
"""
from __future__ import annotations

import os
import socket
import threading
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from lra_kit.data.store.checksums import locate
from lra_kit.data.store.errors import DataError
from lra_kit.data.store.paths import DATA_ENV, data_dir
from lra_kit.data.store.sources import BUNDLES, Bundle, fetch_command

FETCH_ENV = "LRA_KIT_FETCH"  # "0": never download (offline machines, CI with its own copies)
DEFAULT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Status:
    """What :func:`ensure` found for one bundle: ``state`` is ``present``, ``fetched`` or ``missing``."""

    name: str
    state: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.state != "missing"


def _complete(name: str, files, root: Path) -> bool:
    """All of ``files`` present and verified under ``root`` (a present corrupt file raises)."""
    for entry in files:
        locate([entry], fix=fetch_command(name), root=root)
    return True


def present(name: str, root: Path | None = None) -> bool:
    """Whether bundle ``name`` is usable under ``root`` (default ``data_dir()``): every official file, or every
    file of its offline copy, there with the pinned checksum. A corrupt file raises ``ChecksumMismatchError``."""
    bundle = _bundle(name)
    root = data_dir() if root is None else Path(root)
    for files in (bundle.files, bundle.offline):
        if files and all((root / e.relpath).is_file() for e in files):
            return _complete(name, files, root)
    return False


def fetching_allowed() -> bool:
    return os.environ.get(FETCH_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def reachable(url: str, timeout: float) -> str | None:
    """``None`` if a TCP connection to ``url``'s host opens within ``timeout`` seconds, else why not.

    The name lookup runs in a thread, because ``getaddrinfo`` takes no timeout and can hang for a long time
    on a machine without a resolver.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None  # a local file:// source (tests, a mirror on disk): nothing to wait for
    host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    found: list = []
    lookup = threading.Thread(target=lambda: found.append(_resolve(host, port)), daemon=True)
    lookup.start()
    lookup.join(timeout)
    if not found:
        return f"{host}: no answer from the name lookup within {timeout:g} s"
    if isinstance(found[0], Exception):
        return f"{host}: {found[0]}"
    try:
        socket.create_connection(found[0], timeout=timeout).close()
    except OSError as err:
        return f"{host}:{port}: {err or 'connection failed'}"
    return None


def _resolve(host: str, port: int):
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        return info[0][4][:2]
    except OSError as err:
        return err


def _bundle(name: str) -> Bundle:
    if name not in BUNDLES:
        raise ValueError(f"name must be one of {tuple(BUNDLES)}, got {name!r}")
    return BUNDLES[name]


def ensure_one(name: str, *, timeout: float = DEFAULT_TIMEOUT_S, allow_fetch: bool | None = None) -> Status:
    """Make bundle ``name`` present if it can be (see the module docstring); never raises for a missing or
    unreachable dataset."""
    from lra_kit.data.store.fetch import fetch

    bundle = _bundle(name)
    if not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    try:
        if present(name):
            return Status(name, "present")
    except DataError as err:
        corrupt = str(err)
    else:
        corrupt = ""
    allow = fetching_allowed() if allow_fetch is None else allow_fetch
    if not allow:
        return Status(name, "missing", corrupt or f"fetching is off ({FETCH_ENV}=0)")
    hosts = {}  # one probe per mirror host, not per file
    for url in (url for entry in bundle.files for url in entry.urls):
        parts = urllib.parse.urlsplit(url)
        hosts.setdefault((parts.scheme, parts.netloc), url)
    problems = [p for p in (reachable(url, timeout) for url in hosts.values()) if p]
    if len(problems) == len(hosts):  # no mirror answers: do not start a download that would hang
        return Status(name, "missing", "; ".join(problems))
    try:
        fetch(name, timeout=timeout)
    except (DataError, ConnectionError, OSError) as err:
        return Status(name, "missing", str(err).splitlines()[0])
    return Status(name, "fetched")


def ensure(names, *, timeout: float = DEFAULT_TIMEOUT_S, allow_fetch: bool | None = None) -> list[Status]:
    """:func:`ensure_one` for each of ``names``."""
    return [ensure_one(name, timeout=timeout, allow_fetch=allow_fetch) for name in names]


def missing_notice(name: str) -> str | None:
    """``None`` if bundle ``name`` is present, else one Markdown paragraph for the page: which dataset is
    missing and the command that fetches it. (No path of the machine: the page may be built anywhere.)"""
    try:
        if present(name):
            return None
        problem = "is not in the data folder"
    except DataError:
        problem = "is in the data folder but fails its checksum"
    bundle = _bundle(name)
    return (f"**Not run here: {bundle.description} {problem}.** This cell needs it to train live. "
            f"Fetch it with `lra-kit data fetch {name}` (checksummed, resumable), or set `{DATA_ENV}` to a folder "
            f"that holds it, and run the page again. The recorded runs on this page do not need it.")
