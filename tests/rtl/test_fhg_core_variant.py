"""fhg_core with USE_TAF=1, the FCS on the RX bus and a short rate window: one build, one
result per cocotb test."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_core_variant.py")
NAMES = sim.cocotb_test_names(COCOTB_MODULE)
PARAMETERS = {"USE_TAF": 1, "AXIL_CLK_HZ": 5000, "RX_FCS_ON_BUS": 1}


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    dut = sim.build_core(parameters=PARAMETERS, variant="taf_rates")
    return sim.run(
        dut,
        COCOTB_MODULE.stem,
        COCOTB_MODULE.parent,
        extra_env={"CASPER400G_RX_FCS_ON_BUS": "1"},
    )


@pytest.mark.parametrize("name", NAMES)
def test_core_variant(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
