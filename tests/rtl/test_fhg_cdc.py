"""Clock-crossing and RAM primitives under Verilator: one build of the test top, one pytest
result per cocotb test."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim
from mlib_devel_400g import paths

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_cdc.py")
NAMES = sim.cocotb_test_names(COCOTB_MODULE)
HDL = paths.FHG_HDL
SOURCES = [
    HDL / "cdc/fhg_sync_bits.sv",
    HDL / "cdc/fhg_pulse_sync.sv",
    HDL / "cdc/fhg_async_fifo.sv",
    HDL / "common/fhg_ram_sdp.sv",
    HDL / "common/fhg_ram_tdp.sv",
    HDL / "cdc/fhg_cdc_delta.sv",
    HDL / "cdc/fhg_cfg_sync.sv",
    Path(__file__).with_name("hdl") / "fhg_cdc_tb.sv",
]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    dut = sim.build("fhg_cdc_tb", SOURCES, "fhg_cdc_tb")
    return sim.run(dut, COCOTB_MODULE.stem, COCOTB_MODULE.parent)


def test_every_cocotb_test_was_collected() -> None:
    assert len(NAMES) >= 12


@pytest.mark.parametrize("name", NAMES)
def test_cdc(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
