"""README.md is a front door, and its examples run.

Every Python block of README.md and of docs/package.md runs as written, in a fresh namespace (a reader pastes it
into a new interpreter): a block that stops working — a renamed function, a missing import — fails here. Shapes are
shrunk nowhere: the examples are small enough for a CPU. The README stays short (its sections in the order a new
user needs them), names every attention the package registers, and its generated table is current.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCUMENTS = (README, ROOT / "docs" / "package.md")
BLOCKS = [(path.relative_to(ROOT).as_posix(), block) for path in DOCUMENTS
          for block in re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), flags=re.S | re.M)]
WORDS = 1500  # the README's budget of words, its generated table included (link targets are not words a reader reads)
SECTIONS = ["The two commands", "An example", "Results", "Links"]


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_readme_has_python_blocks():
    where = [name for name, _ in BLOCKS]
    assert where.count("README.md") >= 1 and where.count("docs/package.md") >= 2, \
        "README.md or docs/package.md lost its Python examples (or this test's pattern no longer finds them)"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index):
    name, code = BLOCKS[index]
    exec(compile(code, f"{name} python block {index + 1}", "exec"), {"__name__": "__readme__"})


def test_readme_is_a_front_door():
    """What this is, the two commands with their times, a ten-line example, the results, the links, in that order,
    within the word budget; the rest lives in docs/."""
    text = _text()
    headings = re.findall(r"^## (.+)$", text, flags=re.M)
    assert headings == SECTIONS, headings
    words = len(re.sub(r"\]\([^)]*\)", "]", text).split())
    assert words <= WORDS, f"README.md has {words} words, over its budget of {WORDS}: move the detail to docs/"
    example = re.search(r"^## An example\n.*?^```python\n(.*?)^```", text, flags=re.S | re.M).group(1)
    assert len(example.strip().splitlines()) <= 10, "the README's example is more than ten lines"
    commands = text.split("## The two commands")[1].split("## An example")[0]
    # the measured times: one line naming the commit they were measured at and a time for each command
    timed = [line for line in commands.splitlines() if line.startswith("Measured ")]
    assert len(timed) == 1 and re.search(r"\bat [0-9a-f]{7,40}\b", timed[0]), timed
    assert re.search(r"`make test` [\d,]+ s", timed[0]) and re.search(r"`make book` [\d,]+ s", timed[0]), timed
    for path in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / path).is_file(), f"README.md links to {path}, which does not exist"


def test_readme_names_every_registered_attention():
    """The README's list of attentions is the registry's: an attention added to the package gets its line."""
    from lra_kit.attention import attention_names

    listed = re.findall(r"^- `([a-z0-9_-]+)`:", _text(), flags=re.M)
    assert listed == list(attention_names()), (listed, attention_names())


def test_readme_examples_write_no_record():
    """An example that writes JSON writes to a scratch path: results/ holds the records the book reads."""
    from lra_kit.cli import EPILOG

    texts = {path.name: path.read_text(encoding="utf-8") for path in (README, ROOT / "docs" / "running.md",
                                                                      ROOT / "docs" / "package.md")}
    texts["lra-kit --help"] = EPILOG
    found = 0
    for name, text in texts.items():
        for target in re.findall(r"^\s*lra-kit .*--json\s+['\"]?(\S+?)['\"]?(?:\s|$)", text, flags=re.M):
            found += 1
            assert not target.startswith("results/"), f"{name}: an example writes the record {target}"
    assert found, "no example writes JSON any more (or this test's pattern no longer finds them)"


def test_readme_results_table_is_up_to_date():
    """The table of reproductions (and docs/budget.md's run costs) as results/ gives them now: regenerated in
    memory by lra_kit.reports and compared with the files. A run recorded, or a number edited by hand, since the
    last `make readme` fails here until `make readme` (`lra-kit report`) is run."""
    from lra_kit.reports import stale

    out = stale(README.parent)
    assert not out, f"out of date with results/: {', '.join(out)}; run `make readme` (or `lra-kit report`)"
