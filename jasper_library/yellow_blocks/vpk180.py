"""Platform block of ``vpk180`` (AMD VPK180, Versal Premium VP1802; platforms/vpk180.yaml),
written for mlib_devel's Vivado backend and run the same way by the stand-in runtime.

The processor side is mlib_devel's platform block design ``$jbd_name`` (``vpk180_bd``:
the backend creates it in the init stage and saves, validates, generates and wraps it
before synthesis); this block fills it in the ``create_bd`` stage (:func:`cips_bd_tcl`) and
instantiates it in ``top.v`` as ``vpk180_bd_inst`` (module ``vpk180_bd``, as mlib_devel's
Zynq platforms do):

* CIPS (``versal_cips``) with ``M_AXI_FPD`` and the PL reference clock PL0 (100 MHz) and its
  fabric reset;
* a clocking wizard on PL0 making ``axil_clk`` (the register bus) and ``sys_clk`` with its
  90/180/270-degree phases ``sys_clk90``/``sys_clk180``/``sys_clk270`` (the design clock at
  the XSG block's ``clk_rate``; the XSG block, whose ``clk_src`` is ``sys_clk``, drives
  ``user_clk*`` from them), and ``clk_locked``;
* ``proc_sys_reset`` giving ``axil_rst_n`` (PL0 reset and the wizard's lock);
* a SmartConnect from ``M_AXI_FPD`` to the external AXI4-Lite master ``M_AXI`` (32-bit address
  and data), mapped at ``mmbus_base_address`` (0xA400_0000) for ``mmbus_address_window``
  bytes: the toolflow's interconnect is its slave.

``axil_rst`` is ``axil_rst_n`` inverted; ``user_rst`` is ``axil_rst_n`` low or the wizard
unlocked, synchronised into ``user_clk``. The system block is this block's child
(``gen_children``). The implementation run writes ``top.pdi`` into ``$impl_dir``;
``post_bitgen`` copies it to ``$bin_file`` (``top.bin``, the image mlib_devel's ``mkfpg``
packs) and writes ``$xsa_file`` for the software side. The whole Tcl runs under ``tclsh``
against a recording stand-in for the Vivado commands in the tests
(tests/toolflow/test_vpk180_platform.py, tests/conformance/).
"""

from __future__ import annotations

import os
from typing import Any

from . import vpk180_ip
from .fhg_axi4lite import master_view
from .fhg_platform import clock_groups, system_block, user_reset_sync
from .yellow_block import YellowBlock

# mlib_devel's platform block design: $jbd_name = <platform name>_bd.
BD_NAME = "vpk180_bd"
INSTANCE = "vpk180_bd_inst"
CIPS_CELL = "versal_cips_0"
CLK_WIZ_CELL = "pl_clk_wiz"
RESET_CELL = "axil_reset"
SMARTCONNECT_CELL = "axil_smartconnect"

CIPS_VLNV = "xilinx.com:ip:versal_cips"
CLK_WIZ_VLNV = "xilinx.com:ip:clk_wizard"
RESET_VLNV = "xilinx.com:ip:proc_sys_reset"
SMARTCONNECT_VLNV = "xilinx.com:ip:smartconnect"

# The host's AXI4-Lite master (mlib_devel's M_AXI_* names; the block design's module
# flattens its interface port M_AXI into M_AXI_<signal>): (signal, direction seen from the
# block design, width).
HOST_AXIL = master_view()
# The design clock and its phases, as mlib_devel's XSG block requires them of clk_src.
PHASES = ("", "90", "180", "270")
CLK_SRC = "sys_clk"
# Scalar ports of the block design (all outputs).
CLOCK_PORTS: tuple[tuple[str, str], ...] = (
    ("axil_clk", "clk"),
    ("axil_rst_n", "rst"),
    *((f"{CLK_SRC}{ph}", "clk") for ph in PHASES),
    ("clk_locked", "data"),
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
    """axil_clk, then sys_clk at 0/90/180/270 degrees (UNCONFIRMED until the first Vivado
    run: the CLKOUT_REQUESTED_PHASE name of the Versal clocking wizard's phase property)."""
    pl0 = _freq(conf, "pl0_ref_clk_mhz", 10.0, 400.0)
    axil = _freq(conf, "axil_clk_mhz", 10.0, 300.0)
    outs = [("axil_clk", axil, 0)] + [(f"{CLK_SRC}{ph}", user_mhz, int(ph or 0)) for ph in PHASES]
    return {
        "PRIM_SOURCE": "No_buffer",
        "PRIM_IN_FREQ": _mhz(pl0),
        "CLKOUT_USED": ",".join("true" for _o in outs),
        "CLKOUT_PORT": ",".join(name for name, _f, _ph in outs),
        "CLKOUT_REQUESTED_OUT_FREQUENCY": ",".join(_mhz(f) for _n, f, _ph in outs),
        "CLKOUT_REQUESTED_PHASE": ",".join(f"{ph:.3f}" for _n, _f, ph in outs),
        "CLKOUT_DRIVES": ",".join("BUFG" for _o in outs),
        "USE_LOCKED": "true",
        "USE_RESET": "false",
    }


def cips_bd_tcl(conf: dict[str, Any], user_mhz: float) -> str:
    """Tcl (Vivado IP integrator) filling, wiring and addressing the platform block design
    ``$jbd_name`` (created, saved, validated and wrapped by the backend around it)."""
    if conf.get("ddr"):
        raise Vpk180Error(
            "platform vpk180: ddr: true is not supported yet (the LPDDR4 pins of the NoC's "
            "memory controller are not wired to top.v); set ddr: false"
        )
    lo, hi = (float(x) for x in conf.get("user_clk_range_mhz") or (390.625, 600.0))
    if not lo <= user_mhz <= hi:
        raise Vpk180Error(f"platform vpk180: user clock {user_mhz:g} MHz is outside {lo:g}..{hi:g}")
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
        "current_bd_design [get_bd_designs $jbd_name]",
        "",
        f"# ---- external ports (top.v's {INSTANCE} instance)",
        *(
            f"create_bd_port -dir O{' -type ' + kind if kind != 'data' else ''} {name}"
            for name, kind in CLOCK_PORTS
        ),
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
        *(f"set_property CONFIG.FREQ_HZ {user_hz} [get_bd_ports {CLK_SRC}{ph}]" for ph in PHASES),
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
        *(
            f"connect_bd_net [get_bd_pins {CLK_WIZ_CELL}/{CLK_SRC}{ph}] "
            f"[get_bd_ports {CLK_SRC}{ph}]"
            for ph in PHASES
        ),
        f"connect_bd_net [get_bd_pins {CLK_WIZ_CELL}/locked] [get_bd_ports clk_locked] "
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


def bd_ports() -> list[tuple[str, str, int]]:
    """(name, direction, width) of the block design's module ``vpk180_bd``."""
    ports = [(name, "out", 1) for name, _kind in CLOCK_PORTS]
    ports += [(f"M_AXI_{sig}", d, w) for sig, d, w in HOST_AXIL]
    return ports


def bd_stub() -> str:
    """Port-only Verilog of the block design (a black box for lint)."""
    lines = []
    for name, d, w in bd_ports():
        direction = "input " if d == "in" else "output"
        rng = f"[{w - 1}:0] " if w > 1 else ""
        lines.append(f"    {direction} wire {rng}{name}")
    body = ",\n".join(lines)
    return (
        f"// Black box of the {BD_NAME} block design (jasper_library/yellow_blocks/vpk180.py).\n"
        "/* verilator lint_off UNDRIVEN */\n/* verilator lint_off UNUSEDSIGNAL */\n"
        f"(* blackbox *)\nmodule {BD_NAME} (\n{body}\n);\nendmodule\n"
        "/* verilator lint_on UNUSEDSIGNAL */\n/* verilator lint_on UNDRIVEN */\n"
    )


class vpk180(YellowBlock):
    def initialize(self) -> None:
        self.provides = [
            *(f"{CLK_SRC}{ph}" for ph in PHASES),
            "axil_clk",
            "axil_rst_n",
            "axil_rst",
            "user_rst",
            "M_AXI",
            *self.cage_resources(),
        ]
        self.add_source("fourhundred_gbe/cdc/fhg_sync_bits.sv")
        # mlib_devel's software registers and system block cross clocks with its
        # cdc_synchroniser, which each platform adds (the stand-in runtime has its own RTL).
        if os.path.isfile(os.path.join(self.hdl_root or "", "utils", "cdc_synchroniser.vhd")):
            self.add_source("utils/cdc_synchroniser.vhd")

    def gen_children(self) -> list[YellowBlock]:
        return [system_block(self)]

    def cage_resources(self) -> list[str]:
        """What the board's QSFP-DD cages hold, each once (``vpk180_ip.cage_resources``):
        a 400GbE block requires its cage's exclusively, so two blocks on one cage, DCMAC
        site, GTM quad or reference clock fail the design rule check."""
        out: list[str] = []
        cages = (self.platform.conf.get("fourhundred_gbe") or {}).get("cages") or {}
        for cage, values in cages.items():
            for res in vpk180_ip.cage_resources(int(cage), values or {}):
                if res not in out:
                    out.append(res)
        return out

    def _user_mhz(self) -> float:
        return float(self.platform.user_clk_rate or self.platform.conf.get("user_clk_mhz"))

    def drc(self) -> None:
        src = self.platform.conf.get("clk_src")
        if src != CLK_SRC:
            raise Vpk180Error(
                f"{self.fullpath}: platform vpk180: clk_src {src!r} is not the clock its block "
                f"design provides ({CLK_SRC!r})"
            )
        try:
            cips_bd_tcl(self.platform.conf, self._user_mhz())
        except Vpk180Error as exc:
            raise Vpk180Error(f"{self.fullpath}: {exc}") from None

    def modify_top(self, top) -> None:  # noqa: ANN001
        self.drc()  # mlib_devel calls no drc(): the values are checked before anything is added
        bd = top.get_instance(BD_NAME, INSTANCE)
        for name, _kind in CLOCK_PORTS:
            bd.add_port(name, name)
        for sig, _d, width in HOST_AXIL:
            bd.add_port(f"M_AXI_{sig}", f"M_AXI_{sig}", width=width)
        # axil_rst: the bus reset, active high (the system block and software registers).
        top.add_signal("axil_rst")
        top.assign_signal("axil_rst", "~axil_rst_n")
        # user_rst: bus reset or an unlocked wizard, into user_clk.
        top.add_signal("user_rst_async")
        top.assign_signal("user_rst_async", "~axil_rst_n | ~clk_locked")
        user_reset_sync(top, "user_rst_async")

    def finalize_top(self, top):  # noqa: ANN001, ANN201 - mlib_devel's contract: return top
        return top

    def gen_constraints(self) -> list[Any]:
        # The clocks come from the block design (CIPS PL0, the wizard): Vivado derives them;
        # clock_refs in the YAML finds them.
        return clock_groups(self.platform, ["user_clk", "axil_clk"])

    def gen_tcl_cmds(self) -> dict[str, list[str]]:
        conf = self.platform.conf
        init: list[str] = []
        if conf.get("use_board_part") and conf.get("board_part"):
            init.append(f"set_property board_part {conf['board_part']} [current_project]")
        return {
            "init": init,
            "create_bd": cips_bd_tcl(conf, self._user_mhz()).splitlines(),
            # The implementation run writes top.pdi; mlib_devel's mkfpg packs $bin_file.
            "post_bitgen": [
                "file copy -force [file join $impl_dir top.pdi] $bin_file",
                "write_hw_platform -fixed -include_bit -force $xsa_file",
            ],
        }

    def lint_stubs(self) -> dict[str, str]:
        return {f"{BD_NAME}.v": bd_stub()}
