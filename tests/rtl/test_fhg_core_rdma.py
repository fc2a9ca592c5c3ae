"""The RDMA mode of fhg_core under Verilator: frames against scapy's RoCE layers, flow
control, goodput at 4096-byte MTU (one simulation, one pytest result per cocotb test)."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_core_rdma.py")
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    return sim.run(sim.build_core(), COCOTB_MODULE.stem, COCOTB_MODULE.parent)


@pytest.mark.parametrize("name", NAMES)
def test_core_rdma(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
