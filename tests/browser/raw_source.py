"""Source that the build should have turned into something else, found in a page's text as a reader sees it.

* **raw TeX** — math left as source (``\\frac``, ``$$`` …) because MathJax did not run;
* **raw MyST** — a cell, directive or role left as text: ``{code-cell}``, a ``:tags:`` line, a ```` ```{…} ````
  fence or a ``{cite:p}``-like role name. A stray fence before a cell shows the cell's source in a code block
  (notebooks/lra.md once lost its "Learning curves" figure so), so the MyST markers are looked for in code blocks
  too; role names, which a reader would meet in prose, only outside them.

Pure functions of text, so that tests/test_raw_source.py checks them without a browser.
"""
from __future__ import annotations

import re

# TeX that MathJax would have turned into math: a command of the book's equations, or a display delimiter.
RAW_TEX = re.compile(r"\\(frac|sum|mathbf|mathcal|operatorname|begin\{|end\{|phi|beta|gamma|sqrt|top|le|odot|R)\b"
                     r"|\$\$|\\\(|\\\[")
# MyST that the parser would have consumed, anywhere on the page (code blocks included): a cell or directive
# opening, or a cell's option line.
RAW_MYST_BLOCK = re.compile(r"\{code-cell\}|^[ \t]*:(tags|label|name|caption|class|linenos|lines|dedent):[ \t]"
                            r"|```\{[a-z][\w:-]*\}", re.M)
# A role the book uses ({cite:p}`…`, {eq}`…` …) or any domain:role, left as text in prose.
RAW_MYST_ROLE = re.compile(r"\{(cite(:[pt])?|eq|numref|ref|doc|math|term|download|abbr|sub|sup|prf:ref|"
                           r"[a-z]+:[a-z]{2,})\}")


def raw_tex(prose: str) -> list[str]:
    """The raw TeX in ``prose`` (the page's text without code blocks and typeset math), sorted, distinct."""
    return sorted({m.group(0) for m in RAW_TEX.finditer(prose)})


def raw_myst(prose: str, everything: str) -> list[str]:
    """The raw MyST on a page: markers in ``everything`` (all its text, code blocks included), roles in ``prose``."""
    found = {m.group(0).strip() for m in RAW_MYST_BLOCK.finditer(everything)}
    return sorted(found | {m.group(0) for m in RAW_MYST_ROLE.finditer(prose)})
