"""Attention and task names are listed in two tables only: a hand-kept list elsewhere would drift from them.

``lra_kit.attention.ATTENTIONS`` and ``lra_kit.data.TASK_TABLE`` are the one place each name is listed
(docs/adding-an-attention.md, docs/adding-a-task.md); everything else derives its lists from them (a
flag, a field, a filter). This scans every module of the package and of the tests for a tuple, list or
set literal that holds two or more different attention names, or two or more different task names, and
for a string made only of such names ("softmax linear", "copy, mnist"). One name of each kind is fine
(``get_config("copy", "linear")``, ``["--task", "copy", "--attention", "linear"]``), so is a literal
whose strings are mostly something else (the words of a text fixture), and so are mappings keyed by
name: a row of a paper's table per task, or a benchmark's options per method, is data about each name,
not a list of names.

Two lists are selections of record, not lists of every attention: the runs of the CPU budget plan
(docs/budget.md) and the three training steps of the GPU campaign, which fill its 25-minute budget
exactly. They are named below, with what they hold, so that any other list — or a change to these —
fails.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from lra_kit.attention import attention_names
from lra_kit.data import task_names

ROOT = Path(__file__).resolve().parents[1]
TABLES = {ROOT / "lra_kit" / "attention" / "registry.py", ROOT / "lra_kit" / "data" / "registry.py"}
THIS_FILE = Path(__file__).resolve()  # its examples and SELECTIONS_OF_RECORD list names on purpose
KINDS_OF_NAMES = (frozenset(attention_names()), frozenset(task_names()))
NAMES = frozenset().union(*KINDS_OF_NAMES)
SEPARATORS = re.compile(r"[\s,|/]+")


SELECTIONS_OF_RECORD = {
    ("lra_kit/bench/steps.py", "linear, momentum, softmax"),
    ("lra_kit/bench/steps.py", "linear, luna, softmax"),
    ("lra_kit/bench/gpu_check.py", "linear, luna, momentum"),
}


def _strings(node: ast.AST) -> list[str]:
    return [e.value for e in getattr(node, "elts", ()) if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def hand_kept_lists(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each literal in ``source`` that lists two or more registered names."""
    hits = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            strings = set(_strings(node))
            for names in KINDS_OF_NAMES:
                if len(strings & names) >= 2 and 2 * len(strings & NAMES) >= len(strings):
                    hits.append((node.lineno, ", ".join(sorted(strings & names))))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words = [w for w in SEPARATORS.split(node.value.strip()) if w]
            if len(set(words)) >= 2 and all(w in NAMES for w in words):
                hits.append((node.lineno, node.value))
    return hits


def _modules():
    for folder in ("lra_kit", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path not in TABLES and path != THIS_FILE and "__pycache__" not in path.parts:
                yield path


def test_the_scan_finds_what_it_looks_for():
    source = ('A = ("softmax", "linear")\nB = ["copy", "sdpa", "mnist"]\nC = {"luna", "performer"}\n'
              'D = "text image"\nE = get_config("copy", "linear")\nF = {"copy": 1, "mnist": 2}\n'
              'G = ("softmax", "sdpa")\nH = "softmax and linear attention"\nI = ["--task", "copy", "--attention", '
              '"linear"]\nJ = ("momentum", "momentum")\nK = ["parsing", "linear", "grammar", "momentum", "corpus"]\n')
    assert [line for line, _ in hand_kept_lists(source)] == [1, 2, 3, 4]


def test_no_module_keeps_its_own_list_of_attention_or_task_names():
    hits = [f"{path.relative_to(ROOT)}:{line}: {what}"
            for path in _modules() for line, what in hand_kept_lists(path.read_text())
            if (str(path.relative_to(ROOT)), what) not in SELECTIONS_OF_RECORD]
    assert not hits, ("derive these from lra_kit.attention.ATTENTIONS / lra_kit.data.TASK_TABLE (a flag or a field "
                      "of the table, attention_names(), task_names(...)):\n" + "\n".join(hits))
