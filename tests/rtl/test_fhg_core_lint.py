"""`verilator --lint-only -Wall` of the 400GbE block straight from its one source list.

The list (`fhg_core.f`) is what the yellow block, the simulations and the Yosys estimate
read; Verilator takes it as is with `-F` (paths relative to the list). The core is held to
-Wall with the toolflow's documented waivers for it (`toolflow.CORE_LINT_WAIVERS`), nothing
more.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from casper400g_dev import sim
from mlib_devel_400g import paths
from mlib_devel_400g.toolflow import CORE_LINT_WAIVERS


@pytest.mark.parametrize("top", ["fhg_core", "fhg_gbe_boot", "fhg_link_bringup"])
def test_block_lints_clean_from_its_file_list(top: str, tmp_path: Path) -> None:
    sim.setup_verilator_env()
    cmd = [
        "verilator",
        "--lint-only",
        "-Wall",
        *(f"-Wno-{rule}" for rule in CORE_LINT_WAIVERS),
        "-F",
        str(paths.CORE_FILE_LIST),
        "--top-module",
        top,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "%Warning" not in proc.stderr, proc.stderr[-4000:]


def test_file_list_names_every_block_source_once() -> None:
    listed = paths.core_sources()
    assert len(listed) == len(set(listed))
    # Every SystemVerilog file of the block is in it; link/fhg_dcmac_vpk180.v (synthesis
    # only: the vendor IP's wrapper) is added by the VPK180 block instead.
    on_disk = {p.resolve() for p in paths.FHG_HDL.rglob("*.sv")}
    assert set(listed) == on_disk
