"""Platform block of ``vpk180`` (AMD VPK180, Versal Premium VP1802; platforms/vpk180.yaml).

The processor side is a block design ``vpk180_cips_bd`` (:func:`cips_bd_tcl`), instantiated in
``top.v`` through its Vivado wrapper ``vpk180_cips_bd_wrapper`` as ``vpk180_cips``:

* CIPS (``versal_cips``) with ``M_AXI_FPD`` and the PL reference clock PL0 (100 MHz) and its
  fabric reset;
* a clocking wizard on PL0 making ``axil_clk`` (the register bus) and ``user_clk`` (the
  design clock, the XSG block's ``clk_rate``);
* ``proc_sys_reset`` giving ``axil_rst_n`` (PL0 reset and the wizard's lock);
* a SmartConnect from ``M_AXI_FPD`` to the external AXI4-Lite master ``M_AXI`` (32-bit address
  and data), mapped at ``mmbus_base_address`` (0xA400_0000) for ``mmbus_address_window``
  bytes: the toolflow's interconnect is its slave.

``user_rst`` is ``axil_rst_n`` low or the wizard unlocked, synchronised into ``user_clk``.
The backend writes ``top.pdi`` (``write_device_image``), which ``mkfpg`` packs into the
``.fpg``, and an ``.xsa`` for the software side. The whole Tcl runs under ``tclsh`` against a
recording stand-in for the Vivado commands in the tests (tests/test_vpk180_platform.py).
"""

from __future__ import annotations

from typing import Any

from constraints import ClockGroupConstraint

from .fhg_axi4lite import master_view
from .fhg_platform import system_block
from .yellow_block import YellowBlock

BD_NAME = "vpk180_cips_bd"
INSTANCE = "vpk180_cips"
CIPS_CELL = "versal_cips_0"
CLK_WIZ_CELL = "pl_clk_wiz"
RESET_CELL = "axil_reset"
SMARTCONNECT_CELL = "axil_smartconnect"

CIPS_VLNV = "xilinx.com:ip:versal_cips"
CLK_WIZ_VLNV = "xilinx.com:ip:clk_wizard"
RESET_VLNV = "xilinx.com:ip:proc_sys_reset"
SMARTCONNECT_VLNV = "xilinx.com:ip:smartconnect"

# The host's AXI4-Lite master (mlib_devel's M_AXI_* names; Vivado's wrapper flattens the
# interface port M_AXI into M_AXI_<signal>): (signal, direction seen from the wrapper, width).
HOST_AXIL = master_view()
# Scalar ports of the block design (all outputs of the wrapper).
CLOCK_PORTS: tuple[tuple[str, str], ...] = (
    ("axil_clk", "clk"),
    ("axil_rst_n", "rst"),
    ("user_clk", "clk"),
    ("user_clk_locked", "data"),
)


class Vpk180Error(ValueError):
    """A vpk180 platform value is invalid; the message names the key and the value."""


def _mhz(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


def _dict(props: dict[str, str]) -> str:
    body = " \\\n".join(f"  CONFIG.{k} {{{v}}}" for k, v in props.items())
    return f"[list \\\n{body} \\\n]"


def _freq(conf: dict[str, Any], key: str, lo: float, hi: float) -> float:
    try:
        value = float(conf[key])
    except KeyError:
        raise Vpk180Error(f"platform vpk180: missing {key}") from None
    except (TypeError, ValueError):
        raise Vpk180Error(f"platform vpk180: {key} {conf[key]!r} is not a number (MHz)") from None
    if not lo <= value <= hi:
        raise Vpk180Error(f"platform vpk180: {key} = {value:g} MHz is outside {lo:g}..{hi:g}")
    return value


def cips_config(conf: dict[str, Any]) -> dict[str, str]:
    """The CIPS's PS_PMC_CONFIG entries (a Tcl dict inside one CONFIG property)."""
    pl0 = _freq(conf, "pl0_ref_clk_mhz", 10.0, 400.0)
    return {
        "DESIGN_MODE": "1",
        "PS_USE_M_AXI_FPD": "1",
        "PS_USE_PMCPL_CLK0": "1",
        "PMC_CRP_PL0_REF_CTRL_FREQMHZ": _mhz(pl0),
        "PS_NUM_FABRIC_RESETS": "1",
        "PS_USE_FPD_CCI_NOC": "0",
        "PS_USE_NOC_LPD_AXI0": "0",
    }


def clk_wiz_config(conf: dict[str, Any], user_mhz: float) -> dict[str, str]:
    pl0 = _freq(conf, "pl0_ref_clk_mhz", 10.0, 400.0)
    axil = _freq(conf, "axil_clk_mhz", 10.0, 300.0)
    return {
        "PRIM_SOURCE": "No_buffer",
        "PRIM_IN_FREQ": _mhz(pl0),
        "CLKOUT_USED": "true,true",
        "CLKOUT_PORT": "axil_clk,user_clk",
        "CLKOUT_REQUESTED_OUT_FREQUENCY": f"{_mhz(axil)},{_mhz(user_mhz)}",
        "CLKOUT_DRIVES": "BUFG,BUFG",
        "USE_LOCKED": "true",
        "USE_RESET": "false",
    }


def cips_bd_tcl(conf: dict[str, Any], user_mhz: float) -> str:
    """Tcl (Vivado IP integrator) creating, wiring, addressing and wrapping ``vpk180_cips_bd``."""
    if conf.get("ddr"):
        raise Vpk180Error(
            "platform vpk180: ddr: true is not supported yet (the LPDDR4 pins of the NoC's "
            "memory controller are not wired to top.v); set ddr: false"
        )
    if not 390.625 <= user_mhz <= 600.0:
        raise Vpk180Error(f"platform vpk180: user clock {user_mhz:g} MHz is outside 390.625..600")
    base = int(conf["mmbus_base_address"])
    window = int(conf.get("mmbus_address_window") or 0)
    if window <= 0 or window & (window - 1) or base % window:
        raise Vpk180Error(
            f"platform vpk180: mmbus_address_window {window:#x} must be a power of two that "
            f"aligns mmbus_base_address {base:#x}"
        )
    axil_hz = round(_freq(conf, "axil_clk_mhz", 10.0, 300.0) * 1e6)
    user_hz = round(user_mhz * 1e6)
    pmc = " ".join(f"{k} {v}" for k, v in cips_config(conf).items())
    out: list[str] = [
        "# CIPS + PL clocks/reset + AXI4-Lite path to the PL for the VPK180, generated by",
        "# jasper_library/yellow_blocks/vpk180.py (provenance: platforms/vpk180.yaml).",
        f"create_bd_design {BD_NAME}",
        f"current_bd_design {BD_NAME}",
        "",
        "# ---- external ports (top.v's vpk180_cips instance)",
        "create_bd_port -dir O -type clk axil_clk",
        "create_bd_port -dir O -type rst axil_rst_n",
        "create_bd_port -dir O -type clk user_clk",
        "create_bd_port -dir O user_clk_locked",
        "create_bd_intf_port -mode Master -vlnv xilinx.com:interface:aximm_rtl:1.0 M_AXI",
        "set_property -dict "
        + _dict(
            {
                "PROTOCOL": "AXI4LITE",
                "ADDR_WIDTH": "32",
                "DATA_WIDTH": "32",
                "HAS_PROT": "1",
                "FREQ_HZ": str(axil_hz),
            }
        )
        + " [get_bd_intf_ports M_AXI]",
        "set_property -dict "
        + _dict(
            {"FREQ_HZ": str(axil_hz), "ASSOCIATED_BUSIF": "M_AXI", "ASSOCIATED_RESET": "axil_rst_n"}
        )
        + " [get_bd_ports axil_clk]",
        f"set_property CONFIG.FREQ_HZ {user_hz} [get_bd_ports user_clk]",
        "",
        "# ---- CIPS: M_AXI_FPD and PL0",
        f"create_bd_cell -type ip -vlnv {CIPS_VLNV} {CIPS_CELL}",
        "set_property -dict "
        + _dict(
            {
                "CLOCK_MODE": "Custom",
                "DDR_MEMORY_MODE": "Custom",
                "PS_PL_CONNECTIVITY_MODE": "Custom",
                "PS_PMC_CONFIG": pmc,
            }
        )
        + f" [get_bd_cells {CIPS_CELL}]",
        "",
        "# ---- PL clocks from PL0",
        f"create_bd_cell -type ip -vlnv {CLK_WIZ_VLNV} {CLK_WIZ_CELL}",
        f"set_property -dict {_dict(clk_wiz_config(conf, user_mhz))} [get_bd_cells {CLK_WIZ_CELL}]",
        f"connect_bd_net [get_bd_pins {CIPS_CELL}/pl0_ref_clk] "
        f"[get_bd_pins {CLK_WIZ_CELL}/clk_in1]",
        f"connect_bd_net [get_bd_pins {CLK_WIZ_CELL}/axil_clk] [get_bd_ports axil_clk] "
        f"[get_bd_pins {CIPS_CELL}/m_axi_fpd_aclk] [get_bd_pins {SMARTCONNECT_CELL}/aclk] "
        f"[get_bd_pins {RESET_CELL}/slowest_sync_clk]",
        f"connect_bd_net [get_bd_pins {CLK_WIZ_CELL}/user_clk] [get_bd_ports user_clk]",
        f"connect_bd_net [get_bd_pins {CLK_WIZ_CELL}/locked] [get_bd_ports user_clk_locked] "
        f"[get_bd_pins {RESET_CELL}/dcm_locked]",
        "",
        "# ---- register-bus reset",
        f"connect_bd_net [get_bd_pins {CIPS_CELL}/pl0_resetn] "
        f"[get_bd_pins {RESET_CELL}/ext_reset_in]",
        f"connect_bd_net [get_bd_pins {RESET_CELL}/peripheral_aresetn] [get_bd_ports axil_rst_n]",
        f"connect_bd_net [get_bd_pins {RESET_CELL}/interconnect_aresetn] "
        f"[get_bd_pins {SMARTCONNECT_CELL}/aresetn]",
        "",
        "# ---- M_AXI_FPD -> SmartConnect -> AXI4-Lite M_AXI",
        f"connect_bd_intf_net [get_bd_intf_pins {CIPS_CELL}/M_AXI_FPD] "
        f"[get_bd_intf_pins {SMARTCONNECT_CELL}/S00_AXI]",
        f"connect_bd_intf_net [get_bd_intf_pins {SMARTCONNECT_CELL}/M00_AXI] "
        "[get_bd_intf_ports M_AXI]",
        "",
        f"assign_bd_address -offset {base:#010x} -range {window:#x} "
        f"-target_address_space [get_bd_addr_spaces {CIPS_CELL}/M_AXI_FPD] "
        "[get_bd_addr_segs M_AXI/Reg] -force",
        "validate_bd_design",
        "save_bd_design",
        f"make_wrapper -files [get_files {BD_NAME}.bd] -top",
        "",
    ]
    # Cells are created before the nets that name their pins (Vivado needs that too).
    cells = [
        f"create_bd_cell -type ip -vlnv {RESET_VLNV} {RESET_CELL}",
        f"create_bd_cell -type ip -vlnv {SMARTCONNECT_VLNV} {SMARTCONNECT_CELL}",
        f"set_property -dict {_dict({'NUM_SI': '1', 'NUM_MI': '1'})} "
        f"[get_bd_cells {SMARTCONNECT_CELL}]",
    ]
    at = out.index("# ---- PL clocks from PL0")
    out[at:at] = cells
    return "\n".join(out) + "\n"


def wrapper_ports() -> list[tuple[str, str, int]]:
    """(name, direction, width) of ``vpk180_cips_bd_wrapper``."""
    ports = [(name, "out", 1) for name, _kind in CLOCK_PORTS]
    ports += [(f"M_AXI_{sig}", d, w) for sig, d, w in HOST_AXIL]
    return ports


def wrapper_stub() -> str:
    """Port-only Verilog of the block design's wrapper (a black box for lint)."""
    lines = []
    for name, d, w in wrapper_ports():
        direction = "input " if d == "in" else "output"
        rng = f"[{w - 1}:0] " if w > 1 else ""
        lines.append(f"    {direction} wire {rng}{name}")
    body = ",\n".join(lines)
    return (
        f"// Black box of the {BD_NAME} block design wrapper (jasper_library/yellow_blocks/"
        "vpk180.py).\n/* verilator lint_off UNDRIVEN */\n/* verilator lint_off UNUSEDSIGNAL */\n"
        f"(* blackbox *)\nmodule {BD_NAME}_wrapper (\n{body}\n);\nendmodule\n"
        "/* verilator lint_on UNUSEDSIGNAL */\n/* verilator lint_on UNDRIVEN */\n"
    )


def add_bd_files_tcl(bd_name: str) -> list[str]:
    """Tcl adding a block design's generated wrapper (Vivado's .gen layout) to the project."""
    return [
        f"add_files -norecurse [file join [get_property DIRECTORY [current_project]] "
        f"[current_project].gen sources_1 bd {bd_name} hdl {bd_name}_wrapper.v]",
    ]


class vpk180(YellowBlock):
    def initialize(self) -> None:
        self.provides = ["user_clk", "axil_clk", "M_AXI"]
        self.add_source("fourhundred_gbe/fhg_sync_bits.sv")

    def gen_children(self) -> list[YellowBlock]:
        return [system_block(self)]

    def _user_mhz(self) -> float:
        return float(self.platform.user_clk_rate or self.platform.conf.get("user_clk_mhz"))

    def drc(self) -> None:
        try:
            cips_bd_tcl(self.platform.conf, self._user_mhz())
        except Vpk180Error as exc:
            raise Vpk180Error(f"{self.fullpath}: {exc}") from None

    def modify_top(self, top) -> None:  # noqa: ANN001
        cips = top.get_instance(f"{BD_NAME}_wrapper", INSTANCE)
        cips.add_port("axil_clk", "axil_clk")
        cips.add_port("axil_rst_n", "axil_rst_n")
        cips.add_port("user_clk", "user_clk")
        cips.add_port("user_clk_locked", "user_clk_locked")
        for sig, _d, width in HOST_AXIL:
            cips.add_port(f"M_AXI_{sig}", f"M_AXI_{sig}", width=width)
        # axil_rst: the bus reset, active high (mlib_devel's blocks and the system block).
        top.add_signal("axil_rst")
        top.assign_signal("axil_rst", "!axil_rst_n")
        # user_rst: bus reset or an unlocked wizard, into user_clk.
        top.add_signal("user_rst_async")
        top.assign_signal("user_rst_async", "!axil_rst_n || !user_clk_locked")
        rst = top.get_instance("fhg_sync_bits", "user_rst_sync")
        rst.add_parameter("WIDTH", 1)
        rst.add_port("clk", "user_clk", parent_sig=False)
        rst.add_port("rst", "1'b0", parent_sig=False)
        rst.add_port("d", "user_rst_async")
        rst.add_port("q", "user_rst")

    def gen_constraints(self) -> list[Any]:
        # The clocks come from the block design (CIPS PL0, the wizard): Vivado derives them;
        # clock_refs in the YAML finds them for clock groups.
        return [ClockGroupConstraint("user_clk", "axil_clk", "asynchronous")]

    def gen_tcl_cmds(self) -> dict[str, list[str]]:
        conf = self.platform.conf
        init: list[str] = []
        if conf.get("use_board_part") and conf.get("board_part"):
            init.append(f"set_property board_part {conf['board_part']} [current_project]")
        init += cips_bd_tcl(conf, self._user_mhz()).splitlines()
        init += add_bd_files_tcl(BD_NAME)
        return {
            "init": init,
            "bitgen": ["write_device_image -force $here/top.pdi"],
            "post_bitgen": [
                "write_hw_platform -fixed -include_bit -force $here/top.xsa",
            ],
        }

    def lint_stubs(self) -> dict[str, str]:
        return {f"{BD_NAME}_wrapper.v": wrapper_stub()}
