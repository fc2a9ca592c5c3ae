"""The real mlib_devel (the reference tree, branch m2021a-dev) running the overlay.

The session fixture :func:`mlib_run` does what a CASPER user does, with no change to
mlib_devel: copy the reference tree (a scratch checkout), ``casper400g install-mlib-devel``
into it, and run mlib_devel's own ``exec_flow.py --middleware --backend`` under Python 3.8
(m2021a's) on the example design's ``jasper.per`` for the VPK180. Vivado is not installed:
a ``vivado`` on PATH runs the backend's generated script (``gogogo.tcl``) under ``tclsh``
against the recording Vivado stand-in (tests/tcl/vivado_bd_stub.tcl), so the run goes up
to the point where Vivado would start and the whole script is checked by Tcl itself; a
placeholder image where Vivado writes top.pdi lets mlib_devel's ``--software`` step pack
the .fpg from what the script makes of it.

The 3.8 venv (mlib_devel's requirements.txt from PyPI, xml2vhdl from the reference tree)
is cached under ``.cache/`` by a hash of what it is built from. Outside CI a missing
reference tree, pyenv 3.8 or tclsh skips; under ``CI=true`` it fails.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import cached_venv, need_tool, pyenv_pythons, reference_tree

from casper400g_dev import checkout
from mlib_devel_400g import mlib_install
from mlib_devel_400g.design import Design
from mlib_devel_400g.toolflow import BuildResult, Toolflow

EXAMPLE = checkout.ROOT / "examples" / "pktgen_400g" / "design.yaml"
# Two 400GbE blocks, a DCMAC each (the issue of several blocks in one design).
TWO_PORT = checkout.ROOT / "examples" / "pktgen2x400g" / "design.yaml"
STUB = checkout.ROOT / "tests" / "tcl" / "vivado_bd_stub.tcl"
MODEL = "pktgen_400g"


def requirements(mlib: Path) -> list[str]:
    """mlib_devel's PyPI requirements (its requirements.txt without the editable git
    install of xml2vhdl, which comes from the reference tree instead)."""
    out = []
    for line in (mlib / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            out.append(line)
    return out


def mlib_python() -> Path:
    """A cached Python 3.8 venv with what mlib_devel's middleware imports."""
    mlib = reference_tree("mlib_devel")
    xml2vhdl = reference_tree("xml2vhdl") / "scripts" / "python" / "xml2vhdl-ox"
    py = pyenv_pythons(["3.8"]).get("3.8")
    if py is None:
        need_tool("no Python 3.8 from pyenv")
        raise AssertionError("unreachable")
    reqs = requirements(mlib)
    key = hashlib.sha256()
    for part in [py, *reqs]:
        key.update(part.encode())
    for f in sorted(p for p in xml2vhdl.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        key.update(f.read_bytes())
    # pip builds in the tree it installs from: cached_venv installs xml2vhdl from a copy.
    return cached_venv(f"mlib_devel_py38-{key.hexdigest()[:12]}", py, reqs, xml2vhdl)


@dataclass
class MlibRun:
    """mlib_devel's run of a design, and this project's own build of it."""

    model: str  # the design's name (the build's .slx)
    checkout: Path  # the scratch mlib_devel with the overlay installed
    changed: list[Path]  # files of the reference tree the install changed
    added: list[Path]  # files the install added
    build: Path  # mlib_devel's compile directory
    log: str  # exec_flow.py's output
    vivado_log: Path  # the stand-in's record of gogogo.tcl
    standin: BuildResult  # `casper400g build` of the same jasper.per


# The reference snapshot has no working jasper_library/cit2csl.py (upstream it is a link to
# sw/jam/util/cit2csl.py, which the snapshot leaves out), which write_core_jam_info runs to
# convert core_info.jam.tab into .bin/.mem copies that no AXI4-Lite platform reads. The
# scratch checkout gets an empty stand-in for it; nothing here looks at those two files.
CIT2CSL_STANDIN = "import sys\n\nsys.exit(0)\n"
# What the stand-in Vivado leaves as the device image (mlib_devel packs it into the .fpg).
STANDIN_IMAGE = b"VERSAL-PDI-PLACEHOLDER"


@pytest.fixture(scope="session")
def mlib_run(tmp_path_factory: pytest.TempPathFactory) -> MlibRun:
    """The example design (one 400GbE block)."""
    return run_mlib_devel(tmp_path_factory, EXAMPLE, MODEL)


@pytest.fixture(scope="session")
def mlib_run_2port(tmp_path_factory: pytest.TempPathFactory) -> MlibRun:
    """The two-port example design (two 400GbE blocks, a DCMAC each)."""
    return run_mlib_devel(tmp_path_factory, TWO_PORT, "pktgen2x400g")


def run_mlib_devel(tmp_path_factory: pytest.TempPathFactory, design: Path, model: str) -> MlibRun:
    """mlib_devel's middleware, backend and software steps on ``design`` for the VPK180
    (and the stand-in's build of the same jasper.per)."""
    tclsh = shutil.which("tclsh")
    if tclsh is None:
        need_tool("tclsh not found (Debian package tcl)")
    python = mlib_python()
    root = tmp_path_factory.mktemp("mlib")
    checkout = root / "mlib_devel"
    shutil.copytree(reference_tree("mlib_devel"), checkout, symlinks=True)
    for p in checkout.rglob("*"):
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)
    mlib_install.install(checkout, say=None)
    cit2csl = checkout / "jasper_library" / "cit2csl.py"
    # A snapshot may carry the link as a file holding its target's path: no script either.
    if not cit2csl.exists() or re.fullmatch(r"[\w./-]+", cit2csl.read_text().strip()):
        cit2csl.write_text(CIT2CSL_STANDIN)
    changed, added = _differences(reference_tree("mlib_devel"), checkout)

    # The stand-in runtime builds the design first: its jasper.per is what MATLAB's
    # frontend would write, and its build tree is the differential reference.
    standin_dir = root / "standin"
    per = Design(design, platform="vpk180").to_jasper_per(standin_dir)
    standin = Toolflow(per, standin_dir, progress=None).run(backend="none")

    build = root / "build"
    build.mkdir()
    # What MATLAB's frontend writes beside jasper.per: the build tree has the same files.
    for name in ("jasper.per", "design_info.tab", "git_info.tab"):
        shutil.copyfile(standin_dir / name, build / name)
    (build / f"{model}.slx").write_bytes(b"")  # exec_flow names the build after a model
    fakebin = root / "bin"
    fakebin.mkdir()
    vivado = fakebin / "vivado"
    # The implementation run's image is a placeholder this stand-in leaves where Vivado
    # writes top.pdi; the script's own post_bitgen copy makes it mlib_devel's $bin_file.
    vivado.write_text(
        "#!/bin/sh\n# The backend runs: vivado -jou .. -log .. -mode batch -source <script>\n"
        'for a; do last="$a"; done\n'
        'impl=$(sed -n \'s/^set impl_dir "\\(.*\\)"$/\\1/p\' "$last")\n'
        '[ -n "$impl" ] || exit 3\n'
        'mkdir -p "$impl" && printf %s "$FHG_STANDIN_IMAGE" > "$impl/top.pdi"\n'
        f'VIVADO_STUB_ANY=1 exec {tclsh} {STUB} "$last" "$(dirname "$last")/vivado_stub.log"\n'
    )
    vivado.chmod(0o755)
    env = {
        "PATH": f"{fakebin}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(root),
        "MLIB_DEVEL_PATH": str(checkout),
        "HDL_ROOT": str(checkout / "jasper_library" / "hdl_sources"),
        # Set, so exec_flow does not source a vivado_config.local for Xilinx's paths.
        "XILINX_PATH": str(root / "no-xilinx"),
        "FHG_STANDIN_IMAGE": STANDIN_IMAGE.decode(),
    }
    got = subprocess.run(
        [
            str(python),
            "exec_flow.py",
            "--middleware",
            "--backend",
            "--software",
            "-m",
            str(build / f"{model}.slx"),
            "-c",
            str(build),
        ],
        cwd=checkout / "jasper_library",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    log = got.stdout + got.stderr
    assert got.returncode == 0, f"exec_flow.py failed ({got.returncode}):\n{log[-6000:]}"
    return MlibRun(model, checkout, changed, added, build, log, build / "vivado_stub.log", standin)


def _differences(ref: Path, checkout: Path) -> tuple[list[Path], list[Path]]:
    changed, added = [], []
    for f in sorted(p for p in checkout.rglob("*") if p.is_file()):
        rel = f.relative_to(checkout)
        orig = ref / rel
        if not orig.is_file():
            added.append(rel)
        elif orig.read_bytes() != f.read_bytes():
            changed.append(rel)
    return changed, added
