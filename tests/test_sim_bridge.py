"""The cocotb/pytest bridge reports failures (a broken test must not pass silently)."""

from __future__ import annotations

from pathlib import Path

from casper400g_dev import sim

FAILING_MODULE = """
import cocotb
from cocotb.triggers import Timer


@cocotb.test()
async def passes(dut):
    await Timer(10, unit="ns")


@cocotb.test()
async def fails(dut):
    await Timer(10, unit="ns")
    assert int(dut.rst_n.value) == 42, "deliberate failure"
"""


def test_failures_are_reported(tmp_path: Path) -> None:
    module = tmp_path / "cocotb_bridge_probe.py"
    module.write_text(FAILING_MODULE)
    assert sim.cocotb_test_names(module) == ["passes", "fails"]
    outcomes = sim.run(sim.build_regs(), module.stem, tmp_path, work_dir=tmp_path / "run")
    assert outcomes["passes"].passed
    assert not outcomes["fails"].passed
    assert "deliberate failure" in outcomes["fails"].message
