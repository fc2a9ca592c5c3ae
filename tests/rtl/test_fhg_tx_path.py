"""fhg_tx_path under Verilator with a test source on its ARP-reply input."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim

HERE = Path(__file__).parent
COCOTB_MODULE = HERE / "cocotb_fhg_tx_path.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    dut = sim.build(
        "fhg_tx_path_tb",
        [*sim.block_sources(), HERE / "hdl" / "fhg_tx_path_tb.sv"],
        "fhg_tx_path_tb",
    )
    return sim.run(dut, COCOTB_MODULE.stem, HERE)


@pytest.mark.parametrize("name", NAMES)
def test_tx_path(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
