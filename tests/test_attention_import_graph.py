"""The modules of ``lra_kit.attention`` import one another without a circle.

Every import statement counts, including one inside a function: an import deferred to call time hides a circle
from Python but not from a reader, and it is how the circles this package once had were kept alive. A package's
``__init__`` counts as the module it is; the implicit import of a parent package does not (every submodule
would otherwise depend on the ``__init__`` that re-exports it)."""
import ast
from pathlib import Path

import pytest

import lra_kit.attention

ROOT = Path(lra_kit.attention.__file__).parent
PACKAGE = "lra_kit.attention"


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((PACKAGE, *parts))


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """{module: the modules of the package it imports}, from the source text (nothing is imported)."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph = {}
    for name, path in files.items():
        is_package = path.name == "__init__.py"
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package upwards
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            else:
                continue
            edges.update(t for t in targets if t in files and t != name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports as [a, b, …, a], or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_attention_package_has_no_import_circle():
    graph = import_graph()
    assert len(graph) > 10 and f"{PACKAGE}.causal.triton.host" in graph  # the walk found the subpackage
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


@pytest.mark.parametrize("deferred", [False, True])
def test_a_circle_is_found_even_when_one_import_is_deferred(tmp_path, deferred):
    """The check itself: a two-module circle, one side importing at call time, is reported."""
    (tmp_path / "__init__.py").write_text("")
    (tmp_path / "a.py").write_text("from lra_kit.attention import b\n")
    body = "def f():\n    from lra_kit.attention.a import x\n" if deferred else "from . import a\n"
    (tmp_path / "b.py").write_text(body)
    (tmp_path / "c.py").write_text("from lra_kit.attention import a\n")
    cycle = find_cycle(import_graph(tmp_path))
    assert cycle is not None and set(cycle) == {f"{PACKAGE}.a", f"{PACKAGE}.b"}



def lra_kit_imports(path: Path) -> set[str]:
    """The lra_kit modules a file imports by absolute name, every import statement counted."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.add(node.module or "")
    return {name for name in found if name.split(".")[0] == "lra_kit"}


def test_outside_itself_the_attention_package_imports_only_the_table_constructor():
    """docs/design.md §1: attention knows nothing of the rest of lra_kit but lra_kit.tables, which imports none."""
    outside = {module_name(path): {name for name in lra_kit_imports(path) if not name.startswith(PACKAGE)}
               for path in sorted(ROOT.rglob("*.py"))}
    assert set().union(*outside.values()) <= {"lra_kit.tables"}, {m: names for m, names in outside.items() if names}
    assert lra_kit_imports(ROOT.parent / "tables.py") == set()


def test_the_causal_op_has_one_folder_and_its_paths_do_not_import_each_other():
    """The causal op's folder holds the op, the chunked path, the Triton path and the oracle; the Triton side
    imports neither the chunked (CPU) path nor the op above it, and no two files share the name causal_product.py."""
    graph = import_graph()
    folder = f"{PACKAGE}.causal"
    for part in ("op", "chunked", "naive", "state", "chunking", "triton", "triton.host", "triton.kernels"):
        assert f"{folder}.{part}" in graph, part
    triton_side = {m for m in graph if m.startswith(f"{folder}.triton")}
    for module in triton_side:
        reached = _reachable(graph, module)
        assert f"{folder}.chunked" not in reached and f"{folder}.op" not in reached, (module, sorted(reached))
    assert not list(ROOT.rglob("causal_product.py"))


def _reachable(graph, start):
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen
