"""casperfpga_ext on the Pythons its users run: 3.8 (mlib_devel m2021a) to 3.13 (casperfpga).

For each pyenv Python a small venv (pytest and NumPy only, cached under .cache/) imports
the package and runs the tests that need nothing else: the address parser, the
FourHundredGbe contract, the .fpg parser and the transports (mmap and KATCP).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT, cached_venv, need_tool, pyenv_pythons

MINORS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
SUBSET = ["tests/test_addressing.py", "tests/test_casperfpga_ext.py"]
PYTHONS = pyenv_pythons(MINORS)


@pytest.mark.parametrize("minor", MINORS)
def test_casperfpga_ext_under(minor: str) -> None:
    python = PYTHONS.get(minor)
    if python is None:
        need_tool(f"no pyenv Python {minor}")
    version = Path(python).parent.parent.name
    venv_python = cached_venv(f"py{version}-casperfpga_ext", python, ["pytest", "numpy"])
    imported = subprocess.run(
        [str(venv_python), "-c", "import casperfpga_ext, casperfpga_ext.board_server, sys; "
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
