"""``xps:sys_block``: the system block every CASPER platform carries (its platform block
creates it in ``gen_children``, as mlib_devel's platforms do).

One AXI4-Lite device ``sys`` of 32 bytes with mlib_devel's register names and offsets:
``board_id`` (0x00), ``rev`` (0x04, major << 16 | minor), ``rev_rcs`` (0x0C),
``scratchpad`` (0x10, read/write) and ``clkcounter`` (0x14, user_clk edges). The build
lists them as ``sys_board_id`` ... ``sys_clkcounter`` in ``core_info.tab`` and the .fpg,
where casperfpga's ``get_system_information``, ``test_connection`` and
``estimate_fpga_clock`` find them. HDL: ``fhg_sys_block`` (this runtime's; inside
mlib_devel, mlib_devel's own sys_block is used).
"""

from __future__ import annotations

from typing import Any

from memory import Register

from .yellow_block import YellowBlock
from .yellow_block_typecodes import TYPECODE_SYSBLOCK

REGNAME = "sys"
NBYTES = 32


def _word(blk: dict[str, Any], key: str, default: int = 0) -> int:
    value = blk.get(key, default)
    try:
        word = int(str(value), 0)
    except ValueError:
        raise ValueError(f"sys_block: {key} {value!r} is not an integer") from None
    if not 0 <= word <= 0xFFFFFFFF:
        raise ValueError(f"sys_block: {key} {word} does not fit 32 unsigned bits")
    return word


class sys_block(YellowBlock):
    def initialize(self) -> None:
        self.typecode = TYPECODE_SYSBLOCK
        self.board_id = _word(self.blk, "board_id")
        rev_maj = _word(self.blk, "rev_maj")
        rev_min = _word(self.blk, "rev_min")
        if rev_maj > 0xFFFF or rev_min > 0xFFFF:
            raise self.error(f"rev_maj {rev_maj} / rev_min {rev_min} must fit 16 bits each")
        self.rev = rev_maj << 16 | rev_min
        self.rev_rcs = _word(self.blk, "rev_rcs")
        self.scratchpad = _word(self.blk, "scratchpad")
        self.memory_map = [
            Register("board_id", mode="r", offset=0x00, default_val=self.board_id),
            Register("rev", mode="r", offset=0x04, default_val=self.rev),
            Register("rev_rcs", mode="r", offset=0x0C, default_val=self.rev_rcs),
            Register("scratchpad", mode="rw", offset=0x10, default_val=self.scratchpad),
            Register("clkcounter", mode="r", offset=0x14),
        ]
        self.add_source("fhg_toolflow/fhg_sys_block.sv")
        self.add_source("fhg_toolflow/fhg_axil_regport.sv")
        self.add_source("fourhundred_gbe/common/fhg_bus_pkg.sv")
        self.add_source("fourhundred_gbe/cdc/fhg_cfg_sync.sv")
        self.add_source("fourhundred_gbe/cdc/fhg_cdc_snapshot.sv")
        self.add_source("fourhundred_gbe/cdc/fhg_sync_bits.sv")

    def modify_top(self, top) -> None:  # noqa: ANN001
        # Register-level (not raw): the build lists every register as sys_<name>.
        top.add_axi4lite_interface(
            REGNAME,
            mode="r",
            nbytes=NBYTES,
            memory_map=self.memory_map,
            typecode=self.typecode,
            axi4lite_mode="",
        )
        inst = top.get_instance("fhg_sys_block", "sys_block_inst")
        inst.add_parameter("BOARD_ID", f"32'h{self.board_id:08x}")
        inst.add_parameter("REV", f"32'h{self.rev:08x}")
        inst.add_parameter("REV_RCS", f"32'h{self.rev_rcs:08x}")
        inst.add_parameter("SCRATCHPAD_INIT", f"32'h{self.scratchpad:08x}")
        inst.add_parameter("ADDR_W", (NBYTES - 1).bit_length())
        # The platform's resets, as mlib_devel's sys_block uses them.
        inst.add_port("axil_clk", "axil_clk", parent_sig=False)
        inst.add_port("axil_rst", "axil_rst", parent_sig=False)
        inst.add_axi4lite_slave(REGNAME)
        inst.add_port("user_clk", "user_clk", parent_sig=False)
        inst.add_port("user_rst", "user_rst", parent_sig=False)

    def meta(self) -> dict[str, str]:
        # casperfpga adds the sys_* registers itself; the block has no ?meta of its own.
        return {}
