"""Register block (fhg_regs) under Verilator: one simulation, one pytest result per cocotb test."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_regs.py")
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    dut = sim.build_regs()
    return sim.run(dut, COCOTB_MODULE.stem, COCOTB_MODULE.parent)


def test_every_cocotb_test_was_collected() -> None:
    assert len(NAMES) >= 8


@pytest.mark.parametrize("name", NAMES)
def test_regs(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
