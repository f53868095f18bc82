"""The repository cites only the papers, public code and its own docs/: no document a reader cannot open.

The Makefile alone may name the optional offline-data folder beside the checkout.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("lra_kit", "tests", "book", "notebooks", "docs", ".ci")
FILES = ("README.md", "pyproject.toml", "_config.yml", "_toc.yml", "references.bib", "environment.yml")
SUFFIXES = {".py", ".md", ".yml", ".yaml", ".toml", ".bib", ".txt", ".cfg", ""}
# Built from pieces so that this file does not match itself.
_NOTES = r"\bno" + "tes"
OUTSIDE = re.compile("|".join([r"\.\./" + "shared", "GUI" + "DE", _NOTES + " §", _NOTES + "/", "design " + "guide",
                               "key " + "finding"]))


def _sources():
    for name in FILES:
        if (ROOT / name).exists():
            yield ROOT / name
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts:
                yield path


def test_nothing_cites_documents_outside_the_repository():
    hits = []
    for path in _sources():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not hits, "cite the papers, public code or docs/ instead:\n" + "\n".join(hits)


def test_the_makefile_names_the_shared_data_only_as_an_optional_default():
    lines = [line for line in (ROOT / "Makefile").read_text().splitlines() if OUTSIDE.search(line)]
    assert all("wildcard" in line or "LRA_KIT_DATA ?=" in line for line in lines), lines
