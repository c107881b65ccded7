"""render/ reads typed views only: no lenient raw-dict access, no hidden imports, no cycles."""

from __future__ import annotations

import ast
from pathlib import Path

import pplx_export.render

RENDER = Path(pplx_export.render.__file__).parent
PACKAGE = "pplx_export.render"


def _modules() -> dict[str, ast.Module]:
    return {
        p.stem: ast.parse(p.read_text(encoding="utf-8"), filename=str(p))
        for p in sorted(RENDER.glob("*.py"))
    }


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    # `from pplx_export.render import council` names a module too.
    return [base] + [f"{base}.{a.name}" for a in node.names]


def test_render_imports_nothing_lenient() -> None:
    for name, tree in _modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                assert not any("lenient" in m for m in _imported(node)), name


def test_render_has_no_function_local_imports() -> None:
    for name, tree in _modules().items():
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                assert id(node) in top, f"render/{name}.py:{node.lineno} imports inside a body"


def test_render_modules_import_no_cycle() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, tree in modules.items():
        deps = set()
        for node in ast.walk(tree):  # function-local imports too: they only hide a cycle
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _imported(node):
                    if target.startswith(PACKAGE + "."):
                        dep = target.removeprefix(PACKAGE + ".").split(".")[0]
                        if dep in modules and dep != name:
                            deps.add(dep)
        graph[name] = deps
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, "import cycle: " + " -> ".join([*path, node])
        if node in done:
            return
        for dep in sorted(graph[node]):
            visit(dep, (*path, node))
        done.add(node)

    for name in sorted(graph):
        visit(name, ())
