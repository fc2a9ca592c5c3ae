"""fhg_tx_icrc (the RoCEv2 ICRC engine) under Verilator, against zlib's CRC-32 of the
masked packet (verification/models/roce.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim
from mlib_devel_400g import paths

HERE = Path(__file__).parent
COCOTB_MODULE = HERE / "cocotb_fhg_tx_icrc.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    tx = paths.FHG_HDL / "tx"
    sources = [
        paths.FHG_HDL / "common" / "fhg_bus_pkg.sv",
        tx / "fhg_icrc_pkg.sv",
        tx / "fhg_tx_icrc.sv",
        HERE / "hdl" / "fhg_tx_icrc_tb.sv",
    ]
    dut = sim.build("fhg_tx_icrc_tb", sources, "fhg_tx_icrc_tb")
    return sim.run(dut, COCOTB_MODULE.stem, HERE)


@pytest.mark.parametrize("name", NAMES)
def test_tx_icrc(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
