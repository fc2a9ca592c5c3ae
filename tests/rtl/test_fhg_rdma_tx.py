"""fhg_rdma_tx (the RDMA mode's transmit chain: store-and-forward, framer, writer) under
Verilator, its buffer and reader modelled, its packets against scapy's RoCE layers."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim

HERE = Path(__file__).parent
COCOTB_MODULE = HERE / "cocotb_fhg_rdma_tx.py"
NAMES = sim.cocotb_test_names(COCOTB_MODULE)


@pytest.fixture(scope="module")
def outcomes() -> dict[str, sim.TestOutcome]:
    dut = sim.build(
        "fhg_rdma_tx_tb",
        [*sim.block_sources(), HERE / "hdl" / "fhg_rdma_tx_tb.sv"],
        "fhg_rdma_tx_tb",
    )
    return sim.run(dut, COCOTB_MODULE.stem, HERE)


@pytest.mark.parametrize("name", NAMES)
def test_rdma_tx(outcomes: dict[str, sim.TestOutcome], name: str) -> None:
    sim.assert_passed(outcomes, name)
