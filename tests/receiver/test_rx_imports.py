"""The receiver's Python modules import each other without cycles (function-level
imports included: a cycle hidden inside a function still ties two modules together), and
the library stands apart from its tools (casper400g_rx.tools)."""

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


def imported_modules(path: Path) -> set[str]:
    """Absolute names of the modules `path` (a module of the package's top level) imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = "casper400g_rx." if node.level == 1 else ""
            if node.module:
                out.add(base + node.module)
            out.update(
                f"{base}{node.module + '.' if node.module else ''}{a.name}" for a in node.names
            )
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_the_library_never_imports_its_tools() -> None:
    # The CLI is the one door to them (bench, hwcheck subcommands).
    assert (PACKAGE / "tools" / "bench.py").exists()
    for path in PACKAGE.glob("*.py"):
        if path.stem == "cli":
            continue
        tools = {m for m in imported_modules(path) if m.startswith("casper400g_rx.tools")}
        assert tools == set(), f"{path.name} imports {sorted(tools)}"


def test_the_tools_finder_sees_relative_and_absolute_imports(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("from .tools import bench\nimport casper400g_rx.tools.demo\n")
    assert {"casper400g_rx.tools.bench", "casper400g_rx.tools.demo"} <= imported_modules(mod)


def test_the_cycle_finder_finds_one() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
