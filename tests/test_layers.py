"""The layers a newcomer sees are the layers the code has: no module of attn_tui imports itself back through
others, and what can be asked (`ask`) loads without torch.

The graph is grimp's (the one import-linter checks the contracts in pyproject.toml with), built from the
sources, not from what happens to be imported. It holds every import a module makes at run time, at its top or
inside a function: a lazy import that closes a loop is still a loop a reader has to untangle. Imports made only
for the type checker (under `if TYPE_CHECKING:`) count too, as they do in the contracts: a type hint that points
up a layer is a loop the type checker, and the reader, still walk. The runtime graph (without them) is checked
on its own as well, so a failure says which kind of import closed the loop.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Set
from pathlib import Path

import grimp
import pytest

from tests.limits import limit

ROOT = Path(__file__).resolve().parent.parent


def _graph(exclude_type_checking: bool) -> dict[str, set[str]]:
    # No cache: grimp's cache does not tell a graph with type-only imports from one without.
    graph = grimp.build_graph("attn_tui", exclude_type_checking_imports=exclude_type_checking, cache_dir=None)
    return {module: {m for m in graph.find_modules_directly_imported_by(module) if m in graph.modules}
            for module in graph.modules}


@pytest.fixture(scope="module")
def runtime() -> dict[str, set[str]]:
    return _graph(exclude_type_checking=True)


def cycles(graph: Mapping[str, Set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The finder itself: a loop of three is found, a chain and a self-contained module are not."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_module_imports_itself_back(runtime: dict[str, set[str]]) -> None:
    assert len(runtime) > 100  # the whole package was read, not an empty graph
    assert cycles(runtime) == []


def test_type_only_imports_close_no_loop_either(runtime: dict[str, set[str]]) -> None:
    """With the imports under `if TYPE_CHECKING:` added back, still no loop."""
    typed = _graph(exclude_type_checking=False)
    assert any(typed[module] - runtime[module] for module in typed)  # there are type-only imports, and they count
    assert cycles(typed) == []


@pytest.mark.parametrize("module", ["attn_tui.ask.options", "attn_tui.ask.settings", "attn_tui.ask.models",
                                    "attn_tui.ask.model_request"])
def test_what_can_be_asked_loads_without_torch(module: str) -> None:
    """The command line's options, the asks and the model catalog are read before torch is (the first frame)."""
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit(60),
                            check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def _private_reaches() -> list[str]:
    """Each place a module of the package reads another module's private name (`from m import _x`, `m._x`);
    gettext's `_` is the one public name that starts with an underscore."""
    import ast

    found = []
    for path in sorted((ROOT / "attn_tui").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attn_tui"):
                found += [f"{path.name}:{node.lineno} {a.name}" for a in node.names
                          if a.name.startswith("_") and a.name != "_" and not a.name.startswith("__")]
                modules |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                modules |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("attn_tui")}
        found += [f"{path.name}:{node.lineno} {node.value.id}.{node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                  and node.attr.startswith("_") and not node.attr.startswith("__")]
    return found


def test_no_module_reads_another_modules_private_names() -> None:
    assert _private_reaches() == []
