"""Every Python block of README.md runs as written, in a fresh namespace (a reader pastes it into a new interpreter).

The blocks are extracted from the README itself, so a block that stops working — a renamed function, a
missing import — fails here. Shapes are shrunk nowhere: the README's examples are small enough for a CPU.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), flags=re.S | re.M)


def test_readme_has_python_blocks():
    assert len(BLOCKS) >= 2, "README.md lost its Python examples (or this test's pattern no longer finds them)"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_block_runs(index):
    code = BLOCKS[index]
    exec(compile(code, f"README.md python block {index + 1}", "exec"), {"__name__": "__readme__"})


def test_readme_results_table_is_up_to_date():
    """The table of reproductions (and docs/budget.md's run costs) as results/ gives them now: regenerated in
    memory by lra_kit.reports and compared with the files. A run recorded, or a number edited by hand, since the
    last `make readme` fails here until `make readme` (`lra-kit report`) is run."""
    from lra_kit.reports import stale

    out = stale(README.parent)
    assert not out, f"out of date with results/: {', '.join(out)}; run `make readme` (or `lra-kit report`)"
