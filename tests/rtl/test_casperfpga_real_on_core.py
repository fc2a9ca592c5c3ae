"""The real casperfpga drives the simulated ``fhg_core`` through board-server (cocotb): a
100GbE script, and a script reading the core's registers by name after traffic."""

from __future__ import annotations

from pathlib import Path

from casper400g_dev import sim

COCOTB_MODULE = Path(__file__).with_name("cocotb_casperfpga_real.py")
NAMED_MODULE = Path(__file__).with_name("cocotb_casperfpga_named.py")
ROOT = COCOTB_MODULE.parent.parent.parent
SCRIPT = ROOT / "tests" / "data" / "onehundredgbe_script.py"
NAMES_SCRIPT = ROOT / "tests" / "data" / "named_registers_script.py"


def test_onehundredgbe_script_on_the_simulated_core(casperfpga_python: str) -> None:
    env = {
        "CASPER400G_CASPERFPGA_PYTHON": casperfpga_python,
        "CASPER400G_SCRIPT": str(SCRIPT),
        "CASPER400G_REPO": str(ROOT),
    }
    outcomes = sim.run(sim.build_core(), COCOTB_MODULE.stem, COCOTB_MODULE.parent, extra_env=env)
    sim.assert_passed(outcomes, "onehundredgbe_script_then_scapy_frame")


def test_counters_by_name_on_the_simulated_core_after_traffic(casperfpga_python: str) -> None:
    """casperfpga's read_uint('gbe0_gmac_reg_*') gives what read_counters() and
    get_gbe_core_details() report, and what the traffic gives (cocotb_casperfpga_named)."""
    env = {
        "CASPER400G_CASPERFPGA_PYTHON": casperfpga_python,
        "CASPER400G_SCRIPT": str(NAMES_SCRIPT),
        "CASPER400G_REPO": str(ROOT),
    }
    outcomes = sim.run(sim.build_core(), NAMED_MODULE.stem, NAMED_MODULE.parent, extra_env=env)
    sim.assert_passed(outcomes, "counters_by_name_after_traffic")
