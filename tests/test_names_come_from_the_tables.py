"""Attention and task names are listed in two tables only: a hand-kept list elsewhere would drift from them.

``lra_kit.attention.ATTENTIONS`` and ``lra_kit.data.TASK_TABLE`` are the one place each name is listed
(docs/adding-an-attention.md, docs/adding-a-task.md); everything else derives its lists from them (a
flag, a field, a filter). This scans every module of the package and of the tests for a tuple, list or
set literal that lists two or more different attention names, or two or more different task names:
among its own strings (``("softmax", "linear")``), or one a row in two or more of its elements — tuples,
lists, sets, calls or dicts, such as a parametrize list of ``(name, options)`` pairs
(``[("luna", {}), ("linear", {"x": 1})]``) or of ``pytest.param(name)``. It also looks for a string made
only of such names ("softmax linear", "copy, mnist") and for a dict keyed by such names whose values are
all one and the same constant or empty literal (``{"softmax": {}, "linear": {}}``), a list in a dict's
clothes. One name of each kind is fine (``get_config("copy", "linear")``, ``["--task", "copy",
"--attention", "linear"]``), so is a literal whose strings are mostly something else (the words of a text
fixture), and so are mappings keyed by name that say something about each: a row of a paper's table per
task, a test's options per attention, or a benchmark's attention and options per method, is data about
each name, not a list of names. Where a test needs options for some names, it iterates the table and
looks them up in such a mapping (``OPTIONS.get(name, {})``).

Some lists are selections of record, not lists of every attention or task: the rows timed for the CPU
budget plan (docs/budget.md: its tasks, and the attentions of each) and the three training steps of the GPU
campaign, which fill its 25-minute budget exactly. They are named below, with what they hold, so that any
other list — or a change to these — fails.
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
ROWS = (ast.Tuple, ast.List, ast.Set, ast.Call, ast.Dict)  # what an element of a list of rows can be
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp)


SELECTIONS_OF_RECORD = {
    # The rows of docs/budget.md's seconds-per-step table, from which the CPU budget plan is costed: the tasks
    # timed there (copy at cpu-20k, MNIST at cpu-12k, and of lra-cpu's LRA tasks only Text and ListOps), each
    # with the attentions timed for it.
    ("lra_kit/bench/steps.py", "copy, listops, mnist, text"),
    ("lra_kit/bench/steps.py", "linear, momentum, softmax"),
    ("lra_kit/bench/steps.py", "linear, luna, softmax"),
    # The tasks of the two-core-hour LRA preset lra-cpu-2h (docs/budget.md): the tasks the plan trains there
    # (Image has lra-cpu-long; Retrieval has no data here).
    ("lra_kit/train/paper_configs.py", "listops, pathfinder, text"),
    # The GPU campaign's three training steps, which fill its 25-minute budget.
    ("lra_kit/bench/gpu_check.py", "linear, luna, momentum"),
    # The attentions that have a lean decode step (lra_kit.attention.decode.lean_supported), each case a model
    # configuration whose tokens and states the tests compare with the modules' step.
    ("tests/test_models_decode.py", "linear, momentum, softmax"),
    # Temperature 0 on one recurrent state and one key/value cache.
    ("tests/test_models_generation.py", "linear, softmax"),
    # One generation method of each kind the benchmark times: a recurrent state, a key/value cache, the prefix re-run
    # (softmax and LSH): what the timed round draws is generate()'s.
    ("tests/test_bench_generation.py", "linear, softmax"),
    # The experiments of record whose results/ folders hold the papers' baselines' runs (copy, mnist and lra: an
    # experiment's folder, not a task list), and the records the baselines' report tests fabricate there: the runs
    # of record each page compares the baselines with.
    ("lra_kit/reports.py", "copy, mnist"),
    ("tests/test_reports_baselines.py", "copy, mnist"),
    ("tests/test_reports_baselines.py", "listops, text"),
    ("tests/test_reports_baselines.py", "linear, momentum, softmax"),
    ("tests/test_reports_baselines.py", "linear, linformer, luna, momentum, performer, softmax"),
}


def _strings(node: ast.AST) -> list[str]:
    """The strings of a literal's elements, a call's arguments or a dict's values: what one row says."""
    if isinstance(node, ast.Call):
        parts = [*node.args, *(keyword.value for keyword in node.keywords)]
    elif isinstance(node, ast.Dict):
        parts = node.values
    else:
        parts = getattr(node, "elts", ())
    return [e.value for e in parts if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def _mostly_names(strings: set[str]) -> bool:
    return 2 * len(strings & NAMES) >= len(strings)


def _operands(node: ast.AST) -> list[ast.AST]:
    """The literals and comprehensions joined by ``+`` in ``node`` (``[("linear", 0.0)] + [("momentum", b) for
    b in BETAS]``), or ``node`` itself."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _operands(node.left) + _operands(node.right)
    return [node]


def _listed(node: ast.AST) -> list[str]:
    """The names of one kind a tuple, list or set literal (or a ``+`` of them and comprehensions) lists, two or more
    different ones, either as its own strings (``("softmax", "linear")``) or as rows: two or more of its elements
    — tuples, lists, sets, calls or dicts — each holding a name (``[("luna", {}), ("linear", {})]``,
    ``[pytest.param("copy"), pytest.param("mnist")]``, ``[{"attention": "softmax"}, {"attention": "linear"}]``); a
    comprehension's element is one row."""
    found, strings, rows = [], set(), []
    for part in _operands(node):
        if isinstance(part, (ast.Tuple, ast.List, ast.Set)):
            strings |= set(_strings(part))
            rows += [set(_strings(e)) for e in part.elts if isinstance(e, ROWS)]
        elif isinstance(part, COMPREHENSIONS) and isinstance(part.elt, ROWS):
            rows.append(set(_strings(part.elt)))
    for names in KINDS_OF_NAMES:
        if len(strings & names) >= 2 and _mostly_names(strings):
            found.append(", ".join(sorted(strings & names)))
        named = set().union(*(row & names for row in rows))
        if sum(bool(row & names) for row in rows) >= 2 and len(named) >= 2 and _mostly_names(set().union(*rows)):
            found.append(", ".join(sorted(named)))
    return found


def _says_nothing(value: ast.AST) -> bool:
    """A constant, or an empty literal or ``dict()``-like call."""
    if isinstance(value, ast.Call):
        return isinstance(value.func, ast.Name) and value.func.id in ("dict", "list", "set", "tuple") and not (
            value.args or value.keywords)
    if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
        return not value.elts
    if isinstance(value, ast.Dict):
        return not value.keys
    return isinstance(value, ast.Constant)


def _keys_only(node: ast.Dict) -> list[str]:
    """The names keying a dict literal whose values are one and the same constant or empty literal
    (``{"softmax": {}, "linear": {}}``, ``{"copy": True, "mnist": True}``): it says nothing about each name."""
    if not (all(_says_nothing(v) for v in node.values) and len({ast.dump(v) for v in node.values}) == 1):
        return []
    keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return [", ".join(sorted(keys & names)) for names in KINDS_OF_NAMES if len(keys & names) >= 2]


def hand_kept_lists(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each literal in ``source`` that lists two or more registered names."""
    hits, tree = [], ast.parse(source)
    joined = {id(side) for node in ast.walk(tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)
              for side in (node.left, node.right)}
    for node in ast.walk(tree):
        if id(node) in joined:  # a part of a ``+``: read with the whole
            continue
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.BinOp)):
            hits += [(node.lineno, what) for what in _listed(node)]
        elif isinstance(node, ast.Dict):
            hits += [(node.lineno, what) for what in _keys_only(node)]
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


# One line of source each, and whether the scan reports it.
EXAMPLES = [
    # two or more different names of one kind among a literal's strings, or in a string of names only
    ('("softmax", "linear")', True),
    ('["copy", "sdpa", "mnist"]', True),
    ('{"luna", "performer"}', True),
    ('"text image"', True),
    # ... or one a row, in two or more of its rows: (name, options) pairs, parametrize cases, calls, dicts
    ('[("luna", {}), ("linear", {"x": 1})]', True),
    ('pytest.mark.parametrize("attention,opts", [("softmax", {}), ("momentum", {"beta": 0.6})])', True),
    ('[("copy", 8, "linear"), ("mnist", 16, "linear")]', True),
    ('[["--task", "copy"], ["--task", "mnist"]]', True),
    ('[pytest.param("copy", id="c"), pytest.param("mnist")]', True),
    ('[get_config("copy", "linear"), get_config("copy", attention="momentum")]', True),
    ('[{"attention": "softmax"}, {"attention": "linear"}]', True),
    # ... or across literals and comprehensions joined by +, a comprehension's element one row
    ('[("linear", 0.0)] + [("momentum", b) for b in BETAS]', True),
    ('("softmax",) + extra + ("linear",)', True),
    # ... or keying a dict that says nothing about each of them
    ('{"softmax": {}, "linear": {}}', True),
    ('{"copy": True, "mnist": True}', True),
    # one name of each kind, or one name again and again
    ('get_config("copy", "linear")', False),
    ('["--task", "copy", "--attention", "linear"]', False),
    ('("momentum", "momentum")', False),
    ('[("momentum", 0.0), ("momentum", 0.8)]', False),
    ('[("copy", "linear", 1)]', False),
    ('[("softmax", 1), ("sdpa", 2)]', False),
    ('[("momentum", b) for b in BETAS]', False),
    ('[(name, {}) for name in attention_names()] + [("momentum", {"beta": 0.1}, "adaptive")]', False),
    ('["--task", "copy"] + ["--attention", "linear"]', False),
    # strings that are mostly other words
    ('("softmax", "sdpa")', False),
    ('"softmax and linear attention"', False),
    ('["parsing", "linear", "grammar", "momentum", "corpus"]', False),
    ('[("parsing", "linear", "tree"), ("grammar", "momentum", "corpus")]', False),
    # mappings keyed by name: data about each name (its options, its row of a paper's table, a method's attention)
    ('{"copy": 1, "mnist": 2}', False),
    ('{"softmax": {}, "momentum": {"beta": 0.6}}', False),
    ('{"fast": ("softmax", {}), "slow": ("linear", {})}', False),
]


def test_the_scan_finds_what_it_looks_for():
    source = "\n".join(f"X = {code}" for code, _ in EXAMPLES)
    found = {line for line, _ in hand_kept_lists(source)}
    assert {code: i + 1 in found for i, code in enumerate(code for code, _ in EXAMPLES)} == dict(EXAMPLES)


def test_no_module_keeps_its_own_list_of_attention_or_task_names():
    hits = [f"{path.relative_to(ROOT)}:{line}: {what}"
            for path in _modules() for line, what in hand_kept_lists(path.read_text())
            if (str(path.relative_to(ROOT)), what) not in SELECTIONS_OF_RECORD]
    assert not hits, ("derive these from lra_kit.attention.ATTENTIONS / lra_kit.data.TASK_TABLE (a flag or a field "
                      "of the table, attention_names(), task_names(...); options for some names in a "
                      "mapping keyed by name):\n" + "\n".join(hits))
