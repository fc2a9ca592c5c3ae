"""Platform block of ``generic400g`` (board-less; see platforms/generic400g.yaml).

Provides the signals every platform block must (jasper_library/README.md): ``user_clk``
and ``user_rst`` (the design's clock, from port ``user_clk``), ``axil_clk``/``axil_rst_n``/
``axil_rst`` (ports) and the host bus ``M_AXI_*`` (a 32-bit AXI4-Lite slave port).
"""

from constraints import ClockConstraint, ClockGroupConstraint

from .fhg_axi4lite import AXIL_SIGNALS
from .fhg_platform import system_block, user_reset_sync
from .yellow_block import YellowBlock

# The host's AXI4-Lite master arrives as top-level ports (the slave's view).
HOST_AXIL = AXIL_SIGNALS


class generic400g(YellowBlock):
    def initialize(self) -> None:
        self.provides = ["user_clk", "axil_clk", "M_AXI"]
        self.add_source("fourhundred_gbe/cdc/fhg_sync_bits.sv")

    def gen_children(self) -> list[YellowBlock]:
        return [system_block(self)]

    def modify_top(self, top) -> None:  # noqa: ANN001
        top.add_port("user_clk", "in")
        top.add_port("axil_clk", "in")
        top.add_port("axil_rst_n", "in")
        for sig, direction, width in HOST_AXIL:
            top.add_port(f"M_AXI_{sig}", direction, width)
        top.add_signal("axil_rst")
        top.assign_signal("axil_rst", "!axil_rst_n")
        user_reset_sync(top, "axil_rst")

    def gen_constraints(self) -> list:
        user_mhz = float(self.platform.user_clk_rate or 390.625)
        return [
            ClockConstraint("user_clk", "user_clk", freq=user_mhz),
            ClockConstraint("axil_clk", "axil_clk", freq=self.platform.axil_clk_mhz),
            ClockGroupConstraint("user_clk", "axil_clk", "asynchronous"),
        ]
