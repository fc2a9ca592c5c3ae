"""fhg_link_bringup (DCMAC/GT bring-up sequencer) against the DCMAC register/GT model under
Verilator: one build with short timing parameters, one pytest result per cocotb test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from casper400g_dev import sim
from mlib_devel_400g import paths

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_link_bringup.py")
NAMES = sim.cocotb_test_names(COCOTB_MODULE)
HDL = paths.FHG_HDL
SOURCES = [HDL / "cdc/fhg_sync_bits.sv", HDL / "link/fhg_link_bringup.sv"]

# Cycle counts scaled down from the hardware defaults so every scenario takes a few thousand
# cycles; the sequence and its decisions are the same.
PARAMS = {
    "NUM_LANES": 4,
    "GT_RESET_CYCLES": 8,
    "GT_READY_TIMEOUT": 100,
    "DCMAC_RESET_CYCLES": 8,
    "RX_RESET_CYCLES": 8,
    "SETTLE_CYCLES": 20,
    "ALIGN_POLLS": 3,
    "MONITOR_CYCLES": 60,
    "AXI_TIMEOUT": 40,
}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    dut = sim.build("fhg_link_bringup", SOURCES, "fhg_link_bringup", parameters=PARAMS)
    return sim.run(
        dut,
        COCOTB_MODULE.stem,
        COCOTB_MODULE.parent,
        extra_env={"LINK_BRINGUP_PARAMS": json.dumps(PARAMS)},
    )


def test_every_cocotb_test_was_collected() -> None:
    assert len(NAMES) >= 8


@pytest.mark.parametrize("name", NAMES)
def test_link_bringup(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
