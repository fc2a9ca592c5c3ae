"""fhg_rx_lane (one receive lane: realignment, filter, verdict) under Verilator, against the
scapy-based filter model of verification/models/rx_expect.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim
from mlib_devel_400g import paths

HERE = Path(__file__).parent
COCOTB_MODULE = HERE / "cocotb_fhg_rx_lane.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    rx = paths.FHG_HDL / "rx"
    sources = [
        rx / "fhg_rx_pkg.sv",
        paths.FHG_HDL / "common" / "fhg_bus_pkg.sv",
        rx / "fhg_rx_lane_fifo.sv",
        rx / "fhg_rx_lane.sv",
        HERE / "hdl" / "fhg_rx_lane_tb.sv",
    ]
    dut = sim.build("fhg_rx_lane_tb", sources, "fhg_rx_lane_tb")
    return sim.run(dut, COCOTB_MODULE.stem, HERE)


@pytest.mark.parametrize("name", NAMES)
def test_rx_lane(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
