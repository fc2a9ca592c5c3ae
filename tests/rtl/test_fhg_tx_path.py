"""fhg_tx_path under Verilator with a test source on its ARP-reply input."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim
from mlib_devel_400g import paths

HERE = Path(__file__).parent
COCOTB_MODULE = HERE / "cocotb_fhg_tx_path.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    sources = [
        p for p in sim.core_sources() if p.name != "fhg_core.sv" and p.parent != paths.REGS_DIR
    ]
    dut = sim.build(
        "fhg_tx_path_tb", [*sources, HERE / "hdl" / "fhg_tx_path_tb.sv"], "fhg_tx_path_tb"
    )
    return sim.run(dut, COCOTB_MODULE.stem, HERE)


@pytest.mark.parametrize("name", NAMES)
def test_tx_path(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
