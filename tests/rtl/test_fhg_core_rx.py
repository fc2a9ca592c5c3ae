"""fhg_core receive path under Verilator: one simulation, one pytest result per cocotb test.

`--long` runs the accounting mix with a million frames instead of 20 000.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_core_rx.py")
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest) -> dict[str, sim.TestOutcome]:
    frames = 1_000_000 if request.config.getoption("--long") else 20_000
    return sim.run(
        sim.build_core(),
        COCOTB_MODULE.stem,
        COCOTB_MODULE.parent,
        extra_env={"CASPER400G_RX_FRAMES": str(frames)},
    )


@pytest.mark.parametrize("name", NAMES)
def test_core_rx(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
