"""The real casperfpga drives the simulated ``fhg_core`` through board-server (cocotb)."""

from __future__ import annotations

from pathlib import Path

from casper400g_dev import sim

COCOTB_MODULE = Path(__file__).with_name("cocotb_casperfpga_real.py")
ROOT = COCOTB_MODULE.parent.parent.parent
SCRIPT = ROOT / "tests" / "data" / "onehundredgbe_script.py"


def test_onehundredgbe_script_on_the_simulated_core(casperfpga_python: str) -> None:
    env = {
        "CASPER400G_CASPERFPGA_PYTHON": casperfpga_python,
        "CASPER400G_SCRIPT": str(SCRIPT),
        "CASPER400G_REPO": str(ROOT),
    }
    outcomes = sim.run(sim.build_core(), COCOTB_MODULE.stem, COCOTB_MODULE.parent, extra_env=env)
    sim.assert_passed(outcomes, "onehundredgbe_script_then_scapy_frame")
