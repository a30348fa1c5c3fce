"""One explainer per op kind, in one explicit registry; explainer modules share helpers through common only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import attn_tui.explain as package
from attn_tui.explain import cell
from attn_tui.trace import ops

FOLDER = Path(package.__file__).parent


def _every_op() -> set[type[ops.Op]]:
    """Every op class: the shared ones and each variant's own (declared in its package, which the registry imports)."""
    found: set[type[ops.Op]] = set()
    todo = list(ops.Op.__subclasses__())
    while todo:
        kind = todo.pop()
        found.add(kind)
        todo += kind.__subclasses__()
    return found


def test_every_op_kind_has_exactly_one_explainer() -> None:
    kinds = _every_op()
    assert len(kinds) > 40  # the shared ops and every variant's own, not an empty walk
    assert set(cell.EXPLAINERS) == kinds
    assert sum(len(module.EXPLAINERS) for module in cell.MODULES) == len(kinds)  # none explained twice


def test_an_op_explained_twice_is_refused() -> None:
    class Twice:
        __name__ = "attn_tui.explain.twice"
        EXPLAINERS = {ops.Dot: cell.EXPLAINERS[ops.Dot]}

    with pytest.raises(TypeError, match="Dot is explained twice"):
        cell._registry((*cell.MODULES, Twice()))  # type: ignore[arg-type]


def _imports(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.module or "", alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            for alias in node.names]


def test_explainer_modules_import_no_private_name_and_each_other_not_at_all() -> None:
    explainers = {module.__name__ for module in cell.MODULES}
    for path in FOLDER.glob("*.py"):
        for module, name in _imports(path):
            if module.startswith("attn_tui."):
                assert name == "_" or not name.startswith("_"), (path.name, module, name)  # `_` is gettext
            if path.stem != "cell":  # only the registry gathers the explainer modules
                assert module not in explainers and module != "attn_tui.explain.cell", (path.name, module)


def test_no_explainer_module_registers_itself_on_import() -> None:
    """A module's explainers are a dict it declares; nothing at module level calls into the registry."""
    for module in cell.MODULES:
        tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
        calls = [node for node in tree.body if isinstance(node, (ast.Expr, ast.For))
                 and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]  # a docstring
        assert not calls, (module.__name__, [ast.unparse(c)[:60] for c in calls])
