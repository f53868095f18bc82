"""``lra-kit data fetch NAME``: download an official archive, resumably and verified.

The download goes to ``<file>.part``; an interrupted run resumes from there with an HTTP
``Range`` request. Only after the sha256 matches is the file renamed to its final name, so
a half-written or corrupt file is never left where a loader would read it.
"""
from __future__ import annotations

import os
import shutil
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm

from lra_kit.data.store.checksums import remember, sha256_file
from lra_kit.data.store.checksums import verify as check_file
from lra_kit.data.store.errors import ChecksumMismatchError
from lra_kit.data.store.paths import data_dir
from lra_kit.data.store.sources import BUNDLES, DataFile, fetch_command

_BLOCK = 1 << 16


def _download(url: str, part: Path, size: int | None, timeout: float = 60.0) -> None:
    start = part.stat().st_size if part.exists() else 0
    if size is not None and start >= size:
        return
    request = urllib.request.Request(url, headers={"User-Agent": "lra_kit"})
    if start:
        request.add_header("Range", f"bytes={start}-")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        resumed = start and response.status == 206
        if not resumed:
            start = 0  # the server ignored the Range request: start over
        total = size or (int(response.headers.get("Content-Length", 0)) + start) or None
        with open(part, "ab" if resumed else "wb") as out, tqdm(
            total=total, initial=start, unit="B", unit_scale=True, desc=part.name[:-5]
        ) as bar:
            for block in iter(lambda: response.read(_BLOCK), b""):
                out.write(block)
                bar.update(len(block))


def fetch_file(entry: DataFile, *, root: Path | None = None, name: str = "", recheck: bool = False,
               timeout: float = 60.0) -> Path:
    """Download one file into ``root`` (default ``data_dir()``) unless it is already there and valid.

    ``recheck`` hashes a present file even if it was verified before with the same size and time;
    ``timeout`` bounds the connection and each read, in seconds.
    """
    root = data_dir() if root is None else Path(root)
    target = root / entry.relpath
    fix = fetch_command(name)
    if target.is_file():
        try:
            return check_file(target, entry.sha256, fix=fix, recheck=recheck)
        except ChecksumMismatchError:
            print(f"{target}: checksum mismatch, downloading again", file=sys.stderr)
            target.unlink()
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    errors = []
    for url in entry.urls:
        try:
            _download(url, part, entry.size, timeout)
            break
        except (urllib.error.URLError, OSError) as err:
            errors.append(f"{url}: {err}")
    else:
        raise ConnectionError(f"could not download {target.name}:\n  " + "\n  ".join(errors))
    actual = sha256_file(part)
    if entry.sha256 is not None and actual != entry.sha256:
        part.unlink()  # a corrupt download is never kept, not even as a resume point
        raise ChecksumMismatchError(target, f"downloaded sha256 {actual}, expected {entry.sha256}", fix=fix)
    os.replace(part, target)
    if entry.sha256 is not None:
        remember(target, actual)  # hashed just now: the next use need not hash it again
    else:
        print(f"{target}: sha256 {actual} (no published checksum to compare with)")
    return target


def fetch(name: str, *, root: Path | None = None, verify: bool = False, timeout: float = 60.0) -> list[Path]:
    """Fetch bundle ``name`` (see ``sources.BUNDLES``) and unpack it if it is an archive to unpack.

    ``verify=True`` recomputes the sha256 of files already present (a mismatch is downloaded again);
    ``timeout`` bounds the connection and each read of a download, in seconds.
    """
    if name not in BUNDLES:
        raise ValueError(f"name must be one of {tuple(BUNDLES)}, got {name!r}")
    if not isinstance(verify, bool):
        raise TypeError(f"verify must be a bool, got {verify!r}")
    bundle = BUNDLES[name]
    root = data_dir() if root is None else Path(root)
    paths = [fetch_file(entry, root=root, name=name, recheck=verify, timeout=timeout) for entry in bundle.files]
    if bundle.extract_to is not None:
        dest = root / bundle.extract_to
        done = dest / ".extracted"
        if not done.exists():
            tmp = root / (bundle.extract_to + ".partial")
            shutil.rmtree(tmp, ignore_errors=True)
            with tarfile.open(paths[0]) as archive:
                archive.extractall(tmp, filter="data")
            # the archive has its own top folder lra_release/; keep the inner layout
            inner = tmp / bundle.extract_to
            os.replace(inner if inner.is_dir() else tmp, dest)
            shutil.rmtree(tmp, ignore_errors=True)
            done.touch()
        paths.append(dest)
    return paths
