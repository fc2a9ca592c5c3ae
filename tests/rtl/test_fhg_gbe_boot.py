"""fhg_gbe_boot under Verilator with FABRIC_ENABLE_ON_START (the example design's top,
simulated in test_toolflow_top.py, covers it without)."""

from __future__ import annotations

from pathlib import Path

from casper400g_dev import sim
from mlib_devel_400g import paths

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_gbe_boot.py")
# The AXI4-Lite struct pair its two sides are packed into, then the module.
SOURCES = [paths.FHG_HDL / "common" / "fhg_bus_pkg.sv", paths.FHG_HDL / "fhg_gbe_boot.sv"]
PARAMS = {
    "FABRIC_MAC": "48'h02000a00000a",
    "FABRIC_IP": "32'h0a00000a",
    "FABRIC_GATEWAY": "32'h0a000001",
    "FABRIC_NETMASK": "32'hffffff00",
    "FABRIC_PORT": "16'd7148",
    "FABRIC_TTL": "8'd32",
    "FABRIC_CTRL": "32'h4c",
}


def test_boot_sequence() -> None:
    params = {**PARAMS, "FABRIC_ENABLE_ON_START": "1'b1"}
    dut = sim.build("fhg_gbe_boot", SOURCES, "fhg_gbe_boot", parameters=params)
    outcomes = sim.run(
        dut, COCOTB_MODULE.stem, COCOTB_MODULE.parent, extra_env={"BOOT_ENABLE": "1"}
    )
    sim.assert_passed(outcomes, "writes_the_mask_values_then_passes_through")
