"""The repository's four distributions, one per job, and what each ships.

* ``casper400g`` (pyproject.toml): the toolflow and the yellow block (``mlib_devel_400g``
  with ``jasper_library/``, ``jasper_runtime/`` and ``xps_library/`` inside it) and the
  digital twin (``casper400g_twin``); pure Python.
* ``casper400g-casperfpga`` (casperfpga_ext/): control from casperfpga, the client side.
* ``casper400g-board-server`` (casper400g_board_server/): the KATCP server on the board.
* ``casper400g-rx`` (receiver/): the receiver, a compiled extension.

Without building anything: each project's metadata (one version, the siblings it requires
pinned to it, its command), and what each package's code imports: only its own packages
and those of the distributions it requires (a sibling of an optional extra only inside a
function), never the checkout-only folders. Built (``python -m build``, as a user or a
release does): each wheel holds exactly the files of its packages; installed into a fresh
venv with only what it requires (the siblings from the same wheelhouse, the rest from the
package index), each imports from that venv without the packages it does not need, its
command answers, and its own tests pass against the installed copy (the toolflow also builds
the example design from it).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib
from conftest import REPO_ROOT, need_tool

ROOT = REPO_ROOT


@dataclass(frozen=True)
class Dist:
    project: str  # the folder of its pyproject.toml
    packages: dict[str, str]  # import package -> its folder in the checkout
    script: str | None  # its console script: <script> = <package>.cli:main
    requires: tuple[str, ...] = ()  # sibling distributions it needs
    optional: tuple[str, ...] = ()  # siblings of its extras: imported only inside functions
    tests: tuple[str, ...] = ()  # its own tests, run against the installed wheel alone
    test_deps: tuple[str, ...] = ()  # what those tests need beyond pytest
    noconftest: bool = False  # tests/conftest.py imports casperfpga_ext
    brings: tuple[str, ...] = ()  # third-party packages its install must bring


DISTS = {
    "casper400g": Dist(
        ".",
        {"mlib_devel_400g": "mlib_devel_400g", "casper400g_twin": "casper400g_twin"},
        "casper400g",
        requires=("casper400g-casperfpga", "casper400g-board-server"),
        tests=("tests/toolflow/test_vpk180_ip.py",),
    ),
    "casper400g-casperfpga": Dist(
        "casperfpga_ext",
        {"casperfpga_ext": "casperfpga_ext"},
        None,
        tests=(
            "tests/casperfpga_ext/test_addressing.py",
            "tests/casperfpga_ext/test_casperfpga_ext.py",
            "tests/casperfpga_ext/test_tap.py",
        ),
        test_deps=("numpy", "scapy"),
    ),
    "casper400g-board-server": Dist(
        "casper400g_board_server",
        {"casper400g_board_server": "casper400g_board_server"},
        "casper400g-board-server",
        requires=("casper400g-casperfpga",),
        tests=("tests/board_server/test_board_server.py",),
        test_deps=("pyyaml", "aiokatcp"),
    ),
    "casper400g-rx": Dist(
        "receiver",
        {"casper400g_rx": "receiver/casper400g_rx"},
        "casper400g-rx",
        optional=("casper400g-casperfpga",),
        tests=tuple(
            f"tests/receiver/test_rx_{name}.py"
            for name in ("engine", "sources", "sizing", "pcap", "imports")
        ),
        test_deps=("scapy",),
        noconftest=True,
        brings=("dask", "distributed"),  # the capture cluster, with every receiver
    ),
}
# The toolflow's library folders, which its wheel carries inside mlib_devel_400g.
LIBRARY = ("jasper_library", "jasper_runtime", "xps_library")
# Checkout-only homes: no distribution ships them, no shipped code imports them.
CHECKOUT_ONLY = ("casper400g_dev", "verification", "tests", "examples")
FIRST_PARTY = {pkg for d in DISTS.values() for pkg in d.packages} | set(CHECKOUT_ONLY)


def pyproject(dist: str) -> dict:
    with (ROOT / DISTS[dist].project / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def requirement_name(req: str) -> str:
    return re.match(r"[A-Za-z0-9._-]+", req).group(0).lower()  # type: ignore[union-attr]


def needs(dist: str) -> set[str]:
    """``dist`` and every sibling it requires, transitively."""
    out, todo = set(), [dist]
    while todo:
        d = todo.pop()
        if d not in out:
            out.add(d)
            todo.extend(DISTS[d].requires)
    return out


def tree_files(folder: Path) -> list[Path]:
    """The files of ``folder`` a commit holds (tracked, or new and not ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", "."],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return sorted(folder / p for p in listed if (folder / p).is_file())


# ------------------------------------------------------------------ without building
def test_the_tree_holds_each_distributions_folders() -> None:
    for dist, d in DISTS.items():
        assert (ROOT / d.project / "pyproject.toml").is_file(), dist
        for pkg, src in d.packages.items():
            assert (ROOT / src / "__init__.py").is_file(), f"{dist}: {pkg} ({src})"
    for home in (*LIBRARY, *CHECKOUT_ONLY):
        assert (ROOT / home).is_dir(), home


@pytest.mark.parametrize("dist", sorted(DISTS))
def test_project_metadata(dist: str) -> None:
    root = pyproject("casper400g")["project"]
    project = pyproject(dist)["project"]
    d = DISTS[dist]
    assert project["name"] == dist
    # One repository, released together: one version, siblings pinned to it.
    assert project["version"] == root["version"]
    assert project["license"] == root["license"]
    siblings = [r for r in project["dependencies"] if requirement_name(r) in DISTS]
    assert sorted(siblings) == sorted(f"{s}=={root['version']}" for s in d.requires)
    extras = project.get("optional-dependencies", {})
    in_extras = {requirement_name(r) for reqs in extras.values() for r in reqs} & set(DISTS)
    assert in_extras == set(d.optional)
    scripts = project.get("scripts", {})
    if d.script is None:
        assert scripts == {}
    else:
        (pkg,) = [p for p in d.packages if scripts.get(d.script, "").startswith(p + ".")]
        assert scripts == {d.script: f"{pkg}.cli:main"}
    # The board's and casperfpga users' Pythons (tests/project/test_python_versions.py).
    board_side = dist in ("casper400g-casperfpga", "casper400g-board-server")
    assert project["requires-python"] == (">=3.8" if board_side else ">=3.10")


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """The top-level names ``path`` imports at module level, and anywhere."""
    tree = ast.parse(path.read_text(), str(path))
    top: set[str] = set()
    every: set[str] = set()
    for node in ast.walk(tree):
        names: set[str] = set()
        if isinstance(node, ast.Import):
            names = {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = {node.module.split(".")[0]}
        every |= names
    for node in tree.body:
        if isinstance(node, ast.Import):
            top |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top.add(node.module.split(".")[0])
    return top, every


@pytest.mark.parametrize("dist", sorted(DISTS))
def test_shipped_code_imports_only_what_its_distribution_requires(dist: str) -> None:
    d = DISTS[dist]
    required = {p for s in needs(dist) for p in DISTS[s].packages}
    optional = {p for s in d.optional for o in needs(s) for p in DISTS[o].packages}
    offenders = []
    for src in d.packages.values():
        for path in tree_files(ROOT / src):
            if path.suffix != ".py":
                continue
            top, every = _imports(path)
            bad = (top & FIRST_PARTY) - required
            bad |= (every & FIRST_PARTY) - required - optional
            if bad:
                offenders.append(f"{path.relative_to(ROOT)}: {sorted(bad)}")
    assert offenders == []


def test_library_imports_nothing_above_it() -> None:
    """jasper_library/ and jasper_runtime/ run inside mlib_devel's own process: they may use
    each other and mlib_devel's runtime names, never a package of ours."""
    offenders = [
        f"{path.relative_to(ROOT)}: {sorted(_imports(path)[1] & FIRST_PARTY)}"
        for src in ("jasper_library", "jasper_runtime")
        for path in (ROOT / src).rglob("*.py")
        if _imports(path)[1] & FIRST_PARTY
    ]
    assert offenders == []


# Packages whose modules must not import each other in a circle (lazy imports included):
# every package of the checkout, shipped or not.
ACYCLIC = {
    **{pkg: src for d in DISTS.values() for pkg, src in d.packages.items()},
    "jasper_library": "jasper_library",
    "jasper_runtime": "jasper_runtime",
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
    assert {
        "casper400g_rx._core",
        "casperfpga_ext.gbe",
        "jasper_runtime.verilog",
        "casper400g_board_server.server",
        "casper400g_twin.board",
    } <= set(graph)

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
    declared = pyproject("casper400g")["project"]["license"]["text"]
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


# ------------------------------------------------------------------ built and installed
@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each distribution's wheel, built as a release builds it: the pure-Python ones through
    their sdist, the receiver straight from its tree (reusing its build folder, so an
    installed checkout recompiles nothing)."""
    if importlib.util.find_spec("build") is None:
        need_tool("the PyPI 'build' package is not installed (make venv installs it)")
    house = tmp_path_factory.mktemp("wheelhouse")
    for dist, d in DISTS.items():
        kind = ["--wheel"] if dist == "casper400g-rx" else []
        cmd = [sys.executable, "-m", "build", "--no-isolation", *kind, "--outdir", str(house)]
        done = subprocess.run(
            [*cmd, str(ROOT / d.project)], capture_output=True, text=True, timeout=3600
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = {}
    for dist in DISTS:
        (wheel,) = house.glob(dist.replace("-", "_") + "-*.whl")
        found[dist] = wheel
    return found


def wheel_files(wheel: Path) -> tuple[set[str], str, str]:
    """A wheel's files (its .dist-info apart), its METADATA and entry_points.txt."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = {n for n in names if n.split("/")[0].endswith(".dist-info")}
        (meta,) = [n for n in info if n.endswith("/METADATA")]
        points = [n for n in info if n.endswith("/entry_points.txt")]
        entry = z.read(points[0]).decode() if points else ""
        return names - info, z.read(meta).decode(), entry


def expected_files(dist: str) -> set[str]:
    d = DISTS[dist]
    homes = dict(d.packages)
    if dist == "casper400g":
        homes.update({f"mlib_devel_400g/{lib}": lib for lib in LIBRARY})
    out = set()
    for dest, src in homes.items():
        for path in tree_files(ROOT / src):
            if d.project != "." and d.project == src and path.suffix != ".py":
                continue  # the project's own files (pyproject.toml, README.md, ruff.toml)
            out.add(f"{dest}/{path.relative_to(ROOT / src).as_posix()}")
    return out


@pytest.mark.parametrize("dist", sorted(DISTS))
def test_wheel_ships_its_packages_files_exactly(dist: str, wheels: dict[str, Path]) -> None:
    files, meta, entry = wheel_files(wheels[dist])
    expected = expected_files(dist)
    if dist == "casper400g-rx":
        compiled = {f for f in files if re.fullmatch(r"casper400g_rx/_core\.[\w.-]+\.so", f)}
        assert len(compiled) == 1, sorted(files - expected)
        expected |= compiled
    assert sorted(files - expected) == []
    assert sorted(expected - files) == []
    for home in CHECKOUT_ONLY:
        assert not [f for f in files if f.split("/")[0] == home], home
    # The metadata a resolver reads: the siblings pinned, the command.
    version = pyproject("casper400g")["project"]["version"]
    requires = {
        line.split(": ", 1)[1] for line in meta.splitlines() if line.startswith("Requires-Dist: ")
    }
    for sibling in DISTS[dist].requires:
        assert f"{sibling}=={version}" in requires
    if DISTS[dist].script:
        assert re.search(rf"^{re.escape(DISTS[dist].script)} = \S+\.cli:main$", entry, re.M)


@pytest.fixture(scope="module")
def installed(wheels: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Per distribution, a fresh venv with its wheel, what it requires (siblings from the
    wheelhouse, the rest from the package index) and what its tests need: its Python."""
    pythons = {}
    for dist, d in DISTS.items():
        env_dir = tmp_path_factory.mktemp(f"venv-{dist}")
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
        python = env_dir / "bin" / "python"
        cmd = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        cmd += ["--find-links", str(wheels[dist].parent), str(wheels[dist])]
        cmd += ["pytest", *d.test_deps]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            need_tool(f"installing {wheels[dist].name} into a fresh venv: {done.stderr[-1500:]}")
        pythons[dist] = python
    return pythons


def run_in(python: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``code`` under ``python``, outside the checkout (nothing of it on sys.path)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


@pytest.mark.parametrize("dist", sorted(DISTS))
def test_installed_alone_imports_and_answers(
    dist: str, installed: dict[str, Path], tmp_path: Path
) -> None:
    python = installed[dist]
    d = DISTS[dist]
    env_dir = python.parent.parent
    present = sorted(p for s in needs(dist) for p in DISTS[s].packages)
    # (Third-party wheels may carry a top-level "tests" package: only ours are checked.)
    absent = sorted(FIRST_PARTY - set(present) - {"tests", "examples"})
    code = f"""
import importlib, importlib.util
for name in {present!r}:
    mod = importlib.import_module(name)
    assert mod.__file__.startswith({str(env_dir)!r}), (name, mod.__file__)
for name in {absent!r}:
    assert importlib.util.find_spec(name) is None, name
for name in {list(d.brings)!r}:
    importlib.import_module(name)
print("imports ok")
"""
    done = run_in(python, code, tmp_path)
    assert done.returncode == 0 and "imports ok" in done.stdout, done.stdout + done.stderr
    if d.script:
        helped = subprocess.run(
            [str(env_dir / "bin" / d.script), "--help"],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )
        assert helped.returncode == 0, helped.stderr
        assert helped.stdout.startswith(f"usage: {d.script} "), helped.stdout[:300]


def test_installed_toolflow_builds_the_example_design(
    installed: dict[str, Path], tmp_path: Path
) -> None:
    """The toolflow from its wheel alone: every HDL source a build lists comes from the
    installed package; the twin finds its harness and DCMAC model there too."""
    python = installed["casper400g"]
    env_dir = python.parent.parent
    out = tmp_path / "build"
    design = ROOT / "examples" / "pktgen_400g" / "design.yaml"
    argv = [str(env_dir / "bin" / "casper400g"), "build", str(design), "-o", str(out)]
    done = subprocess.run(
        [*argv, "--backend", "none"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in ("top.v", "jasper.per", "core_info.tab", "memory_map.json", "fpg_header.txt"):
        assert (out / name).is_file(), name
    sources = (out / "sources.txt").read_text().split()
    assert len(sources) > 40
    outside = [Path(s) for s in sources if not Path(s).is_relative_to(env_dir)]
    # Only the example design's own RTL comes from elsewhere: the checkout's examples/, or
    # the build's copy of it.
    user = (ROOT / "examples" / "pktgen_400g", out)
    assert outside and all(any(s.is_relative_to(u) for u in user) for s in outside), outside
    code = """
import json, sys
from casper400g_twin import build
print(json.dumps([str(f) for f in build._harness_files()]))
"""
    done = run_in(python, code, tmp_path)
    assert done.returncode == 0, done.stderr
    files = [Path(f) for f in json.loads(done.stdout)]
    assert {"twin_main.cpp", "dcmac_tx.h", "dcmac_rx.h"} <= {f.name for f in files}
    assert all(f.is_relative_to(env_dir) for f in files), files


@pytest.mark.parametrize("dist", sorted(DISTS))
def test_own_tests_pass_against_the_installed_wheel_alone(
    dist: str, installed: dict[str, Path], tmp_path: Path
) -> None:
    """The distribution's own tests, from the checkout, with its package and what it
    requires imported from the venv: the checkout is not on sys.path (no ``pythonpath``,
    pytest's script rather than ``python -m``, a working folder outside it)."""
    d = DISTS[dist]
    bindir = installed[dist].parent
    cmd = [str(bindir / "pytest"), "-q", "-p", "no:cacheprovider", "-o", "pythonpath="]
    cmd += ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT)]
    cmd += ["--noconftest"] if d.noconftest else []
    cmd += [str(ROOT / t) for t in d.tests]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=1800)
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, tail
    assert re.search(r"\b\d+ passed\b", done.stdout) and " failed" not in done.stdout, tail
