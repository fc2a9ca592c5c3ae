"""The extension's type stubs (_core.pyi) name everything the built module offers, so a
binding added without regenerating them fails here."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import casper400g_rx
from casper400g_rx import _core

STUB = Path(casper400g_rx.__file__).parent / "_core.pyi"


def stub_names() -> tuple[set[str], dict[str, set[str]]]:
    tree = ast.parse(STUB.read_text())
    top: set[str] = set()
    members: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            top.add(node.name)
            members[node.name] = {
                n.name for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            } | {
                t.id
                for n in node.body
                if isinstance(n, ast.Assign | ast.AnnAssign)
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Name)
            }
        elif isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            top.update(t.id for t in targets if isinstance(t, ast.Name))
    return top, members


def test_stubs_cover_every_public_name_and_member() -> None:
    top, members = stub_names()
    public = {n for n in dir(_core) if not n.startswith("_")}
    assert public - top == set()
    for name in public:
        obj = getattr(_core, name)
        if not inspect.isclass(obj) or issubclass(obj, BaseException):
            continue
        own = {m for m in vars(obj) if not m.startswith("_")}
        assert own - members[name] == set(), name


def test_stubs_are_valid_python() -> None:
    compile(STUB.read_text(), str(STUB), "exec")
