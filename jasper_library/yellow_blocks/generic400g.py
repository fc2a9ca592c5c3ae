"""Platform block of ``generic400g`` (board-less; see platforms/generic400g.yaml).

Provides the signals every platform block must (jasper_library/README.md): ``user_clk``
and ``user_rst`` (the design's clock, from port ``user_clk``), ``axil_clk``/``axil_rst_n``/
``axil_rst`` (ports) and the host bus ``M_AXI_*`` (a 32-bit AXI4-Lite slave port).
"""

from constraints import ClockConstraint, ClockGroupConstraint

from .yellow_block import YellowBlock

HOST_AXIL = (
    ("awaddr", "in", 32),
    ("awprot", "in", 3),
    ("awvalid", "in", 1),
    ("awready", "out", 1),
    ("wdata", "in", 32),
    ("wstrb", "in", 4),
    ("wvalid", "in", 1),
    ("wready", "out", 1),
    ("bresp", "out", 2),
    ("bvalid", "out", 1),
    ("bready", "in", 1),
    ("araddr", "in", 32),
    ("arprot", "in", 3),
    ("arvalid", "in", 1),
    ("arready", "out", 1),
    ("rdata", "out", 32),
    ("rresp", "out", 2),
    ("rvalid", "out", 1),
    ("rready", "in", 1),
)


class generic400g(YellowBlock):
    def initialize(self) -> None:
        self.provides = ["user_clk", "axil_clk", "M_AXI"]
        self.add_source("fourhundred_gbe/fhg_sync_bits.sv")
        self.add_source("fhg_toolflow/fhg_axil_interconnect.sv")

    def modify_top(self, top) -> None:  # noqa: ANN001
        top.add_port("user_clk", "in")
        top.add_port("axil_clk", "in")
        top.add_port("axil_rst_n", "in")
        for sig, direction, width in HOST_AXIL:
            top.add_port(f"M_AXI_{sig}", direction, width)
        top.add_signal("axil_rst")
        top.assign_signal("axil_rst", "!axil_rst_n")
        rst = top.get_instance("fhg_sync_bits", "user_rst_sync")
        rst.add_parameter("WIDTH", 1)
        rst.add_port("clk", "user_clk", parent_sig=False)
        rst.add_port("rst", "1'b0", parent_sig=False)
        rst.add_port("d", "axil_rst")
        rst.add_port("q", "user_rst")

    def finalize_top(self, top) -> None:  # noqa: ANN001
        users = [
            i
            for i in top.instances.values()
            if i.name != "user_rst_sync" and any(p.signal == "user_rst" for p in i.ports.values())
        ]
        if not users and not any("user_rst" in rhs for _l, rhs in top.assignments):
            # Nothing needs the user-domain reset: leave no dangling synchroniser.
            del top.instances["user_rst_sync"]
            del top.signals["user_rst"]
            top.assignments.remove(("axil_rst", "!axil_rst_n"))
            if not any(
                p.signal == "axil_rst" for i in top.instances.values() for p in i.ports.values()
            ):
                del top.signals["axil_rst"]
            else:
                top.assign_signal("axil_rst", "!axil_rst_n")

    def gen_constraints(self) -> list:
        user_mhz = float(self.platform.user_clk_rate or 390.625)
        return [
            ClockConstraint("user_clk", "user_clk", freq=user_mhz),
            ClockConstraint("axil_clk", "axil_clk", freq=self.platform.axil_clk_mhz),
            ClockGroupConstraint("user_clk", "axil_clk", "asynchronous"),
        ]
