"""The receiver's Python modules import each other without cycles (function-level
imports included: a cycle hidden inside a function still ties two modules together)."""

from __future__ import annotations

import ast
from pathlib import Path

import casper400g_rx

PACKAGE = Path(casper400g_rx.__file__).parent


def package_imports(path: Path) -> set[str]:
    """Modules of the package that `path` imports, anywhere in the file."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
    return {m for m in out if (PACKAGE / f"{m}.py").exists()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return [*path[path.index(n) :], n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_cycle_between_receiver_modules() -> None:
    graph = {p.stem: package_imports(p) for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert "capture" in graph and "ibv" in graph
    assert find_cycle(graph) is None, f"import cycle: {' -> '.join(find_cycle(graph) or [])}"


def test_the_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
