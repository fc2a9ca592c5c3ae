"""The CPU buffers (fhg_tx_cpu, fhg_rx_cpu) under Verilator against their contracts: the
packer's and the lane's sides modelled, software's big-endian word view checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim
from mlib_devel_400g import paths

HERE = Path(__file__).parent
COCOTB_MODULE = HERE / "cocotb_fhg_cpu_buffers.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    hdl = paths.FHG_HDL
    sources = [
        hdl / "common" / "fhg_bus_pkg.sv",
        hdl / "common" / "fhg_ram_tdp.sv",
        hdl / "cdc" / "fhg_sync_bits.sv",
        hdl / "cdc" / "fhg_pulse_sync.sv",
        hdl / "tx" / "fhg_tx_cpu.sv",
        hdl / "rx" / "fhg_rx_cpu.sv",
        HERE / "hdl" / "fhg_cpu_buffers_tb.sv",
    ]
    dut = sim.build("fhg_cpu_buffers_tb", sources, "fhg_cpu_buffers_tb")
    return sim.run(dut, COCOTB_MODULE.stem, HERE)


@pytest.mark.parametrize("name", NAMES)
def test_cpu_buffers(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
