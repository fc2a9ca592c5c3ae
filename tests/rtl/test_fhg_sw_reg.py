"""fhg_sw_reg (the stand-in runtime's software register) under Verilator, both directions."""

from __future__ import annotations

from pathlib import Path

import pytest

from casper400g_dev import sim
from mlib_devel_400g import paths

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_sw_reg.py")
SOURCES = [
    paths.FHG_HDL / "cdc" / "fhg_sync_bits.sv",
    paths.FHG_HDL / "cdc" / "fhg_cdc_snapshot.sv",
    paths.FHG_HDL / "cdc" / "fhg_cfg_sync.sv",
    paths.RUNTIME_HDL / "fhg_toolflow" / "fhg_axil_regport.sv",
    paths.RUNTIME_HDL / "fhg_toolflow" / "fhg_sw_reg.sv",
]
PORTS = [
    "input wire axil_clk",
    "input wire axil_rst_n",
    "input wire user_clk",
    "input wire [31:0] user_data_in",
    "output wire [31:0] user_data_out",
]
INIT_VAL = 0x5A5A0F0F
ADDR_W = 2


@pytest.mark.parametrize(
    ("to_processor", "testcase"),
    [(0, "from_processor_drives_the_user_side"), (1, "to_processor_reads_the_user_side")],
)
def test_sw_reg(to_processor: int, testcase: str) -> None:
    init = INIT_VAL if not to_processor else 0
    params = {"TO_PROCESSOR": f"1'b{to_processor}", "INIT_VAL": f"32'h{init:08x}", "ADDR_W": 2}
    dut = sim.build_axil_flat("fhg_sw_reg", SOURCES, PORTS, ADDR_W, params)
    env = {"SW_INIT_VAL": hex(init)}
    outcomes = sim.run(dut, COCOTB_MODULE.stem, COCOTB_MODULE.parent, testcase, extra_env=env)
    sim.assert_passed(outcomes, testcase)
