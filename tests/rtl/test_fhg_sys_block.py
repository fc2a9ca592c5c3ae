"""fhg_sys_block (the stand-in runtime's system block) under Verilator."""

from __future__ import annotations

from pathlib import Path

from casper400g_dev import sim
from mlib_devel_400g import paths

COCOTB_MODULE = Path(__file__).with_name("cocotb_fhg_sys_block.py")
SOURCES = [
    paths.FHG_HDL / "cdc" / "fhg_sync_bits.sv",
    paths.FHG_HDL / "cdc" / "fhg_cdc_snapshot.sv",
    paths.FHG_HDL / "cdc" / "fhg_cfg_sync.sv",
    paths.RUNTIME_HDL / "fhg_toolflow" / "fhg_axil_regport.sv",
    paths.RUNTIME_HDL / "fhg_toolflow" / "fhg_sys_block.sv",
]
PORTS = ["input wire axil_clk", "input wire axil_rst", "input wire user_clk", "input wire user_rst"]
IDENTITY = {"BOARD_ID": 0x180, "REV": 0x00010002, "REV_RCS": 0x7}
ADDR_W = 5


def test_sys_block() -> None:
    params = {k: f"32'h{v:08x}" for k, v in IDENTITY.items()}
    params["ADDR_W"] = ADDR_W
    dut = sim.build_axil_flat("fhg_sys_block", SOURCES, PORTS, ADDR_W, params)
    env = {f"SYS_{k}": hex(v) for k, v in IDENTITY.items()}
    outcomes = sim.run(dut, COCOTB_MODULE.stem, COCOTB_MODULE.parent, extra_env=env)
    for name in ("registers_at_mlib_devels_offsets", "clock_counter_gives_the_user_clock"):
        sim.assert_passed(outcomes, name)
