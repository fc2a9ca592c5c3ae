"""casperfpga_ext's FourHundredGbe against fhg_core under Verilator (the core's build)."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim

COCOTB_MODULE = Path(__file__).with_name("cocotb_casperfpga_ext.py")
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    return sim.run(sim.build_core(), COCOTB_MODULE.stem, COCOTB_MODULE.parent)


@pytest.mark.parametrize("name", NAMES)
def test_casperfpga_ext_on_core(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
