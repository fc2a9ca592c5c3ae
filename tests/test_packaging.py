"""What the wheel ships, and that the shipped toolflow runs outside a checkout.

The wheel's contents come from ``[tool.scikit-build.wheel.packages]`` in pyproject.toml.
These tests check that list against the tree (the toolflow, its library files, the control
library and the receiver ship; the developer tools, the verification code and the tests do
not), lay the shipped files out the way the wheel installs them, and run the `casper400g`
CLI from that copy with the checkout off ``sys.path``: a design builds, and a developer
command says clearly that it needs a checkout.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = {
    "mlib_devel_400g": "mlib_devel_400g",
    "mlib_devel_400g/jasper_library": "jasper_library",
    "mlib_devel_400g/jasper_runtime": "jasper_runtime",
    "mlib_devel_400g/xps_library": "xps_library",
    "casperfpga_ext": "casperfpga_ext",
    "casper400g_rx": "receiver/casper400g_rx",
}
# Checkout-only homes: none of the shipped code may import them.
NOT_SHIPPED = ("casper400g_dev", "verification", "tests")


def wheel_packages() -> dict[str, str]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["tool"]["scikit-build"]["wheel"]["packages"]


def shipped_files(src: Path) -> list[Path]:
    return [
        p
        for p in sorted(src.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".so")
    ]


def test_wheel_ships_the_toolflow_library_and_receiver_only() -> None:
    packages = wheel_packages()
    assert packages == SHIPPED
    for dest, src in packages.items():
        assert (ROOT / src).is_dir(), f"{src} (shipped as {dest}) is not in the tree"
    sources = {Path(src).parts[0] for src in packages.values()}
    for home in NOT_SHIPPED:
        assert home not in sources, f"{home}/ must stay out of the wheel"
        assert (ROOT / home).is_dir(), f"{home}/ is missing from the checkout"
    # The verification models live in verification/, nowhere the wheel takes files from.
    for src in packages.values():
        assert not list((ROOT / src).rglob("models/dcmac_tx.py")), src


def _imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_shipped_code_imports_no_checkout_only_package() -> None:
    offenders = []
    for src in wheel_packages().values():
        for path in shipped_files(ROOT / src):
            if path.suffix == ".py":
                bad = _imported_roots(path) & set(NOT_SHIPPED)
                if bad:
                    offenders.append(f"{path.relative_to(ROOT)}: {sorted(bad)}")
    # The CLI reaches the developer tools through paths.require_source_tree(), which puts
    # the checkout on sys.path first and says what is missing in an installed wheel.
    allowed = {"mlib_devel_400g/cli.py: ['casper400g_dev']"}
    assert sorted(set(offenders) - allowed) == []


def test_library_imports_nothing_above_it() -> None:
    """jasper_library/ and jasper_runtime/ run inside mlib_devel's own process: they may use
    each other and mlib_devel's runtime names, never the toolflow, the control library, the
    receiver or the checkout-only packages."""
    above = {"mlib_devel_400g", "casperfpga_ext", "casper400g_rx", *NOT_SHIPPED}
    offenders = [
        f"{path.relative_to(ROOT)}: {sorted(_imported_roots(path) & above)}"
        for src in ("jasper_library", "jasper_runtime")
        for path in (ROOT / src).rglob("*.py")
        if _imported_roots(path) & above
    ]
    assert offenders == []


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped files laid out as the wheel installs them (no compiled extension)."""
    site = tmp_path_factory.mktemp("site")
    for dest, src in wheel_packages().items():
        for path in shipped_files(ROOT / src):
            target = site / dest / path.relative_to(ROOT / src)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return site


def _run_isolated(site: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with ``site`` and the venv's site-packages only on sys.path.

    ``-S`` skips site.py, so the editable install's path hooks (which point back into
    the checkout) are not loaded.
    """
    purelib = sysconfig.get_paths()["purelib"]
    prelude = f"import sys; sys.path[:] = [{str(site)!r}, {purelib!r}] + sys.path[1:]\n"
    return subprocess.run(
        [sys.executable, "-S", "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_installed_toolflow_builds_outside_a_checkout(installed: Path, tmp_path: Path) -> None:
    design = ROOT / "examples" / "pktgen_400g" / "design.yaml"
    out = tmp_path / "build"
    proc = _run_isolated(
        installed,
        f"""
        import importlib.util
        from mlib_devel_400g import cli, paths
        assert paths.JASPER_LIBRARY == paths.PACKAGE_DIR / "jasper_library", paths.JASPER_LIBRARY
        assert str(paths.PACKAGE_DIR).startswith({str(installed)!r}), paths.PACKAGE_DIR
        for name in {list(NOT_SHIPPED)!r}:
            assert importlib.util.find_spec(name) is None, name
        rc = cli.main(["build", {str(design)!r}, "-o", {str(out)!r}, "--backend", "none"])
        print("build rc", rc)
        rc = cli.main(["demo"])
        print("demo rc", rc)
        """,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "build rc 0" in proc.stdout, proc.stdout + proc.stderr
    for name in ("top.v", "jasper.per", "core_info.tab", "memory_map.json"):
        assert (out / name).is_file(), name
    # Every HDL source the build lists comes from the installed copy, not the checkout.
    sources = (out / "sources.txt").read_text().split()
    assert sources
    assert not [s for s in sources if not s.startswith(str(installed)) and "pktgen" not in s]
    assert "demo rc 1" in proc.stdout
    assert "needs a casper400g source checkout" in proc.stderr


# Packages whose modules must not import each other in a circle (lazy imports included):
# every package of the checkout, shipped or not.
ACYCLIC = {
    "mlib_devel_400g": "mlib_devel_400g",
    "jasper_library": "jasper_library",
    "jasper_runtime": "jasper_runtime",
    "casperfpga_ext": "casperfpga_ext",
    "casper400g_rx": "receiver/casper400g_rx",
    "casper400g_dev": "casper400g_dev",
    "verification": "verification",
}


def _module_graph() -> dict[str, set[str]]:
    modules: dict[str, Path] = {}
    for pkg, src in ACYCLIC.items():
        # A compiled extension is a module too: its type stub (``_core.pyi``) names it.
        for path in [*(ROOT / src).rglob("*.py"), *(ROOT / src).rglob("*.pyi")]:
            parts = [pkg, *path.relative_to(ROOT / src).with_suffix("").parts]
            modules.setdefault(".".join(p for p in parts if p != "__init__"), path)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        if path.suffix == ".pyi":
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                # ``from pkg import mod`` imports the module, not (beyond what Python
                # runs anyway) the package's __init__; ``from pkg import name`` does.
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets = subs if len(subs) == len(node.names) else [base, *subs]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def test_no_import_cycles() -> None:
    graph = _module_graph()
    assert len(graph) > 80
    assert {"casper400g_rx._core", "casperfpga_ext.gbe", "jasper_runtime.verilog"} <= set(graph)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph[node])
        return False

    # A package's __init__ importing its own modules is not a cycle of the code.
    cycles = [
        f"{a} <-> {b}"
        for a in graph
        for b in graph[a]
        if reaches(b, a) and not a.startswith(b + ".") and not b.startswith(a + ".")
    ]
    assert cycles == []


def test_every_rtl_file_carries_the_declared_licence() -> None:
    # The licence line is what a reader of a lone RTL file (copied into a Vivado project)
    # has to go by; generated files carry it too, so it must match pyproject.toml.
    with (ROOT / "pyproject.toml").open("rb") as f:
        declared = tomllib.load(f)["project"]["license"]["text"]
    listed = subprocess.run(
        ["git", "ls-files", "*.sv", "*.v", "*.svh"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert listed, "git lists no RTL file"
    wrong = [
        name
        for name in listed
        if not (ROOT / name).read_text().startswith(f"// SPDX-License-Identifier: {declared}\n")
    ]
    assert wrong == []
