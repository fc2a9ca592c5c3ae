"""The packages that run in users' CASPER environments, on the Pythons those have:
casperfpga_ext from 3.8 (mlib_devel m2021a) to 3.13 (casperfpga), and the board server on
the same range (a board's Python).

For each pyenv Python a small venv (pytest and NumPy only, cached under .cache/) imports
both packages and runs the tests that need nothing else: the address parser, the
FourHundredGbe contract, the .fpg parser and the transports (mmap and KATCP); and
``casper400g-board-server`` runs under it, serving a design from a file to a KATCP client.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    FPG_DEVICES,
    GBE_BLOCK,
    REPO_ROOT,
    board_server,
    cached_venv,
    need_tool,
    pyenv_pythons,
)

from casperfpga_ext.fpg import write_fpg
from casperfpga_ext.transport import KatcpTransport

MINORS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
SUBSET = ["tests/casperfpga_ext/test_addressing.py", "tests/casperfpga_ext/test_casperfpga_ext.py"]
PYTHONS = pyenv_pythons(MINORS)


def _venv_python(minor: str) -> Path:
    python = PYTHONS.get(minor)
    if python is None:
        need_tool(f"no pyenv Python {minor}")
    version = Path(python).parent.parent.name
    return cached_venv(f"py{version}-casperfpga_ext", python, ["pytest", "numpy"])


@pytest.mark.parametrize("minor", MINORS)
def test_casperfpga_ext_under(minor: str) -> None:
    venv_python = _venv_python(minor)
    imported = subprocess.run(
        [str(venv_python), "-c", "import casperfpga_ext, casper400g_board_server, sys; "
         "print(casperfpga_ext.CASPERFPGA_REGISTERED, sys.version_info[:2])"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr[-2000:]
    major, micro = (int(x) for x in minor.split("."))
    assert imported.stdout.strip() == f"False {(major, micro)}"  # no casperfpga in this venv
    tests = subprocess.run(
        [str(venv_python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUBSET],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout and " failed" not in tests.stdout


@pytest.mark.parametrize("minor", MINORS)
def test_board_server_under(minor: str, tmp_path: Path) -> None:
    venv_python = _venv_python(minor)
    fpg, mem = tmp_path / "design.fpg", tmp_path / "mem"
    write_fpg(fpg, FPG_DEVICES, [GBE_BLOCK], b"")
    mem.write_bytes(bytes(max(d.address + d.size for d in FPG_DEVICES)))
    with board_server(fpg, mem, 0, 60.0, python=str(venv_python), cwd=REPO_ROOT) as (port, out):
        assert b"2 devices of" in out, out
        with KatcpTransport("127.0.0.1", port, timeout=10.0) as t:
            assert t.listdev() == [d.name for d in FPG_DEVICES]
            t.blindwrite("sys_scratch", bytes.fromhex("0a0b0c0d"))
            assert t.read("sys_scratch", 4) == bytes.fromhex("0a0b0c0d")
    # The word went to the file as the server's mmap wrote it: in host order.
    assert int.from_bytes(mem.read_bytes()[:4], sys.byteorder) == 0x0A0B0C0D
