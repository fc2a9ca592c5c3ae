"""Vivado block design Tcl for the VPK180's DCMAC + GTM transceivers (400GE on DCMAC port 0).

:func:`dcmac_gtm_tcl` returns the Tcl that creates the block design ``fhg_dcmac_bd``: the DCMAC
(Coupled MAC+PCS, 391 MHz up to 6 ports, 400GAUI-4, RS(544) CL119, GTM, 156.25 MHz
reference, port 0 only, FCS inserted on TX), two ``gt_quad_base`` GTM quads (PAM4
106.25 Gb/s, half density, LCPLL), the reference clock buffer (``IBUFDS_GTME5``), a
``BUFG_GT`` and a clocking wizard making the 782.06 MHz DCMAC core clock and the 391.03 MHz
AXI4-Stream clock. Its external ports (:func:`bd_wrapper_ports`) are what the HDL wrapper
``fhg_dcmac_vpk180`` connects to; :func:`bd_wrapper_stub` writes a port-only Verilog module of
the same name for linting without Vivado.

Sources: the IP configuration names and values are those of docs/design/core.md §5 (public
VPK180 and AMD example designs, PG369/PG331 names). Values marked UNCONFIRMED in
:data:`UNCONFIRMED` are assumptions this code cannot check without Vivado or the board: the
DCMAC site and the QSFP-DD lane -> (quad, channel) map, the GT pin names used for loopback
and the serdes user clocks, and the FCS-strip choice. Everything is a field of
:class:`DcmacGtmParams` so a yellow block can override it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .fhg_axi4lite import RAW_DEVICE_SIGNALS

BD_NAME = "fhg_dcmac_bd"
DCMAC_CELL = "dcmac_0"
QUAD_CELLS = ("gtm_quad_0", "gtm_quad_1")
REFCLK_BUF_CELL = "refclk_ibufds"
REFCLK_BUFG_CELL = "refclk_bufg_gt"
CLK_WIZ_CELL = "dcmac_clk_wiz"

DCMAC_VLNV = "xilinx.com:ip:dcmac"
GT_QUAD_VLNV = "xilinx.com:ip:gt_quad_base"
UTIL_DS_BUF_VLNV = "xilinx.com:ip:util_ds_buf"
CLK_WIZ_VLNV = "xilinx.com:ip:clk_wizard"

GTM_PRESET = "GTM-PAM4_Ethernet_106G"
LINE_RATE_GBPS = 106.25
SEGMENTS = 8
NUM_LANES = 4

# Names docs/design/core.md §5 gives for the DCMAC and the quads (checked by the tests).
SPEC_DCMAC_CONFIG: dict[str, str] = {
    "DCMAC_MODE_C0": "Coupled MAC+PCS",
    "DCMAC_DATA_PATH_INTERFACE_C0": "391MHz Upto 6 Ports",
    "MAC_PORT0_CONFIG_C0": "400GAUI-4",
    "FEC_SLICE0_CFG_C0": "RS(544) CL119",
    "GT_TYPE_C0": "GTM",
    "GT_REF_CLK_FREQ_C0": "156.25",
}

UNCONFIRMED: dict[str, str] = {
    "dcmac_location": "DCMAC site wired to the QSFP-DD cage's quads (VPK180 schematic not public)",
    "lane_map": "DCMAC lane -> (quad, channel): docs/design/core.md says ch0/ch2 of each quad; "
    "the order across the cage's lanes is not confirmed",
    "rx_strip_fcs": "whether the DCMAC strips the RX FCS by default",
    "gt_pin_names": "gt_quad_base pin names for loopback (chN_loopback), power good "
    "(gtpowergood) and the user clocks (chN_txoutclk/chN_rxoutclk)",
    "serdes_clocks": "DCMAC tx/rx serdes clocks from the GT user clocks through BUFG_GT",
}


def cage_resources(cage: int, conf: dict) -> list:
    """The exclusive resources of cage ``cage`` (its platform values ``conf``) that the
    platform names, as yellow-block requirement names: the cage, its DCMAC site, its GTM
    quad sites and its refclk pin group. The vpk180 platform block provides them, each
    400GbE block requires its own exclusively (mlib_devel's design rule check)."""
    out = [f"qsfpdd{cage}"]
    if conf.get("dcmac_location"):
        out.append(f"dcmac:{conf['dcmac_location']}")
    out += [f"gtm_quad:{site}" for site in conf.get("quad_sites") or []]
    if conf.get("refclk_pin"):
        out.append(f"gt_refclk:{conf['refclk_pin']}")
    return out


@dataclass(frozen=True)
class DcmacGtmParams:
    """Build parameters of the DCMAC/GTM block design (defaults: VPK180, QSFP-DD cage 0)."""

    refclk_mhz: float = 156.25
    core_clk_mhz: float = 782.06
    axis_clk_mhz: float = 391.03
    # The register (AXI4-Lite) clock: DCMAC s_axi and the GT quads' APB3 port run on it; must
    # match fhg_dcmac_vpk180's AXIL_CLK_HZ. The quads' APB3 limit is UNCONFIRMED.
    axil_clk_mhz: float = 250.0
    dcmac_location: str = ""  # e.g. "DCMAC_X0Y1"; empty: Vivado's default (UNCONFIRMED)
    # DCMAC lane k -> (quad index, channel): half density uses channels 0 and 2.
    lane_map: tuple[tuple[int, int], ...] = ((0, 0), (0, 2), (1, 0), (1, 2))
    rx_strip_fcs: bool = True  # UNCONFIRMED default of the hardware; our RX path takes both
    bd_name: str = BD_NAME
    extra_dcmac_config: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("refclk_mhz", "core_clk_mhz", "axis_clk_mhz", "axil_clk_mhz"):
            value = getattr(self, name)
            if not 0 < value < 2000:
                raise ValueError(f"{name} = {value} MHz is not a usable clock frequency")
        # PG369: the AXIS clock must cover 390.625 MHz + 100 ppm and half the core clock.
        if self.axis_clk_mhz < 390.625 * (1 + 100e-6):
            raise ValueError(
                f"axis_clk_mhz = {self.axis_clk_mhz} is below 390.625 MHz + 100 ppm (PG369)"
            )
        if self.axis_clk_mhz < self.core_clk_mhz / 2:
            raise ValueError(
                f"axis_clk_mhz = {self.axis_clk_mhz} is below half the core clock "
                f"({self.core_clk_mhz} MHz)"
            )
        if len(self.lane_map) != NUM_LANES:
            raise ValueError(f"lane_map needs {NUM_LANES} entries, got {len(self.lane_map)}")
        if len(set(self.lane_map)) != NUM_LANES:
            raise ValueError(f"lane_map {self.lane_map} uses a GT channel twice")
        for quad, ch in self.lane_map:
            if quad not in (0, 1) or ch not in (0, 1, 2, 3):
                raise ValueError(f"lane_map entry ({quad}, {ch}) is not (quad 0..1, channel 0..3)")
        if self.dcmac_location and not re.fullmatch(r"DCMAC_X\d+Y\d+", self.dcmac_location):
            raise ValueError(f"dcmac_location {self.dcmac_location!r} is not DCMAC_X<n>Y<n>")
        if not re.fullmatch(r"[A-Za-z_]\w*", self.bd_name):
            raise ValueError(f"bd_name {self.bd_name!r} is not a valid design name")
        for key, value in self.extra_dcmac_config.items():
            if not re.fullmatch(r"[A-Z][A-Z0-9_]*", key) or re.search(r"[{}\[\]\n\\$]", value):
                raise ValueError(f"extra DCMAC setting {key}={value!r} is not a plain CONFIG value")


def _mhz(value: float) -> str:
    return f"{value:.6f}".rstrip("0").rstrip(".")


def dcmac_config(p: DcmacGtmParams) -> dict[str, str]:
    """Every CONFIG property set on the DCMAC."""
    cfg = {
        "DCMAC_CONFIGURATION_TYPE": "Static Configuration",
        **SPEC_DCMAC_CONFIG,
        "GT_REF_CLK_FREQ_C0": _mhz(p.refclk_mhz),
        "MAC_PORT0_ENABLE_C0": "1",
        "MAC_PORT0_TX_INSERT_C0": "1",  # FCS inserted on TX
        "MAC_PORT0_RX_STRIP_C0": "1" if p.rx_strip_fcs else "0",
        "MAC_PORT0_TX_FLOW_C0": "0",
        "MAC_PORT0_RX_FLOW_C0": "0",
        "MAC_PORT0_ENABLE_TIME_STAMPING_C0": "0",
        "MAC_PORT0_ENABLE_AN_LT_C0": "0",
        **{f"MAC_PORT{k}_ENABLE_C0": "0" for k in range(1, 6)},
    }
    if p.dcmac_location:
        cfg["DCMAC_LOCATION_C0"] = p.dcmac_location
    cfg.update(p.extra_dcmac_config)
    return cfg


def gtm_lane_settings(p: DcmacGtmParams) -> dict[str, str]:
    """The PROT0 line-rate settings of each quad (key/value pairs of PROT0_LR0_SETTINGS)."""
    rate = _mhz(LINE_RATE_GBPS)
    ref = _mhz(p.refclk_mhz)
    return {
        "PRESET": GTM_PRESET,
        "GT_TYPE": "GTM",
        "GT_DIRECTION": "DUPLEX",
        "TX_PAM_SEL": "PAM4",
        "RX_PAM_SEL": "PAM4",
        "TX_HD_EN": "1",
        "RX_HD_EN": "1",
        "TX_LINE_RATE": rate,
        "RX_LINE_RATE": rate,
        "TX_PLL_TYPE": "LCPLL",
        "RX_PLL_TYPE": "LCPLL",
        "TX_REFCLK_FREQUENCY": ref,
        "RX_REFCLK_FREQUENCY": ref,
        "TX_REFCLK_SOURCE": "R0",
        "RX_REFCLK_SOURCE": "R0",
    }


def quad_config(p: DcmacGtmParams, quad: int) -> dict[str, str]:
    """Every CONFIG property set on GTM quad `quad`."""
    lr = " ".join(f"{k} {v}" for k, v in gtm_lane_settings(p).items())
    used = sorted(ch for q, ch in p.lane_map if q == quad)
    cfg = {
        "GT_TYPE": "GTM",
        "PROT0_ENABLE": "true",
        "PROT0_GT_DIRECTION": "DUPLEX",
        "PROT0_NO_OF_LANES": str(len(used)),
        "PROT0_LR0_SETTINGS": lr,
        "PROT0_TX_MASTERCLK_SRC": f"TX{used[0]}" if used else "",
        "PROT0_RX_MASTERCLK_SRC": f"RX{used[0]}" if used else "",
        "APB3_CLK_FREQUENCY": _mhz(p.axil_clk_mhz),
    }
    for ch in range(4):
        sel = "PROT0" if ch in used else "unconnected"
        cfg[f"TX{ch}_LANE_SEL"] = sel
        cfg[f"RX{ch}_LANE_SEL"] = sel
    return cfg


def clk_wiz_config(p: DcmacGtmParams) -> dict[str, str]:
    return {
        "PRIM_SOURCE": "No_buffer",
        "PRIM_IN_FREQ": _mhz(p.refclk_mhz),
        "CLKOUT_USED": "true,true",
        "CLKOUT_PORT": "core_clk,axis_clk",
        "CLKOUT_REQUESTED_OUT_FREQUENCY": f"{_mhz(p.core_clk_mhz)},{_mhz(p.axis_clk_mhz)}",
        "CLKOUT_DRIVES": "BUFG,BUFG",
        "USE_LOCKED": "true",
        "USE_RESET": "false",
    }


@dataclass(frozen=True)
class Port:
    """One scalar/vector port of the block design (and of its generated HDL wrapper)."""

    name: str
    direction: str  # "I" or "O"
    width: int = 1
    pin: str = ""  # cell/pin it connects to; empty: handled explicitly
    kind: str = "data"  # data, clk, rst

    def verilog(self) -> str:
        d = "input " if self.direction == "I" else "output"
        rng = f"[{self.width - 1}:0] " if self.width > 1 else ""
        return f"{d} wire {rng}{self.name}"


def _client_ports() -> list[Port]:
    ports = [
        Port("tx_axis_tvalid_0", "I", pin=f"{DCMAC_CELL}/tx_axis_tvalid_0"),
        Port("tx_axis_tready_0", "O", pin=f"{DCMAC_CELL}/tx_axis_tready_0"),
        Port("tx_axis_taf_0", "O", pin=f"{DCMAC_CELL}/tx_axis_taf_0"),
        Port("tx_preamblein_0", "I", 56, pin=f"{DCMAC_CELL}/tx_preamblein_0"),
        Port("rx_axis_tvalid_0", "O", pin=f"{DCMAC_CELL}/rx_axis_tvalid_0"),
        Port("rx_preambleout_0", "O", 56, pin=f"{DCMAC_CELL}/rx_preambleout_0"),
    ]
    for d, direction in (("tx", "I"), ("rx", "O")):
        for s in range(SEGMENTS):
            for sig, width in (
                ("tdata", 128),
                ("tuser_ena", 1),
                ("tuser_sop", 1),
                ("tuser_eop", 1),
                ("tuser_err", 1),
                ("tuser_mty", 4),
            ):
                name = f"{d}_axis_{sig}{s}"
                ports.append(Port(name, direction, width, pin=f"{DCMAC_CELL}/{name}"))
    return ports


def _control_ports() -> list[Port]:
    ports = [
        Port("s_axi_aclk", "I", kind="clk"),
        Port("s_axi_aresetn", "I", kind="rst"),
        Port("axis_clk", "O", kind="clk"),
        Port("clk_locked", "O"),
        Port("tx_core_reset", "I", pin=f"{DCMAC_CELL}/tx_core_reset", kind="rst"),
        Port("rx_core_reset", "I", pin=f"{DCMAC_CELL}/rx_core_reset", kind="rst"),
        Port("tx_serdes_reset", "I", 6, pin=f"{DCMAC_CELL}/tx_serdes_reset", kind="rst"),
        Port("rx_serdes_reset", "I", 6, pin=f"{DCMAC_CELL}/rx_serdes_reset", kind="rst"),
        Port("gt_loopback", "I", 3),
        Port("gtpowergood", "O"),
    ]
    for k in range(NUM_LANES):
        for name, direction in (
            (f"gt_reset_tx_datapath_in_{k}", "I"),
            (f"gt_reset_rx_datapath_in_{k}", "I"),
            (f"gt_tx_reset_done_out_{k}", "O"),
            (f"gt_rx_reset_done_out_{k}", "O"),
        ):
            ports.append(Port(name, direction, pin=f"{DCMAC_CELL}/{name}"))
    return ports


# Interface ports and the wrapper signals Vivado makes of them (<port>_<signal>): the
# DCMAC design's register port is an AXI4-Lite slave without protection bits.
AXI_LITE_SIGNALS: tuple[tuple[str, str, int], ...] = tuple(
    (name, "I" if d == "in" else "O", w) for name, d, w in RAW_DEVICE_SIGNALS
)


def _intf_ports(p: DcmacGtmParams) -> list[Port]:
    ports = [Port(f"s_axi_{s}", d, w) for s, d, w in AXI_LITE_SIGNALS]
    ports += [Port("gt_refclk_clk_p", "I"), Port("gt_refclk_clk_n", "I")]
    for q in range(len(QUAD_CELLS)):
        for sig, d in (("grx_p", "I"), ("grx_n", "I"), ("gtx_p", "O"), ("gtx_n", "O")):
            ports.append(Port(f"gtm_serial_{q}_{sig}", d, 4))
    return ports


def bd_ports(p: DcmacGtmParams) -> list[Port]:
    """Scalar/vector ports the Tcl creates with create_bd_port."""
    return _client_ports() + _control_ports()


def bd_wrapper_ports(p: DcmacGtmParams) -> list[Port]:
    """Every port of the generated ``<bd>_wrapper`` module (interface ports flattened)."""
    return bd_ports(p) + _intf_ports(p)


def bd_wrapper_stub(p: DcmacGtmParams | None = None) -> str:
    """Port-only Verilog of ``<bd>_wrapper`` (a black box for linting the HDL wrapper)."""
    p = p or DcmacGtmParams()
    ports = ",\n".join(f"    {port.verilog()}" for port in bd_wrapper_ports(p))
    return (
        f"// Black box of the {p.bd_name} block design wrapper, generated by "
        "jasper_library/yellow_blocks/vpk180_ip.py.\n"
        "/* verilator lint_off UNDRIVEN */\n/* verilator lint_off UNUSEDSIGNAL */\n"
        f"(* blackbox *)\nmodule {p.bd_name}_wrapper (\n{ports}\n);\nendmodule\n"
        "/* verilator lint_on UNUSEDSIGNAL */\n/* verilator lint_on UNDRIVEN */\n"
    )


def _dict(props: dict[str, str]) -> str:
    body = " \\\n".join(f"  CONFIG.{k} {{{v}}}" for k, v in props.items())
    return f"[list \\\n{body} \\\n]"


def dcmac_gtm_tcl(p: DcmacGtmParams | None = None) -> str:
    """Tcl (Vivado IP integrator) creating, wiring and wrapping the DCMAC/GTM block design."""
    p = p or DcmacGtmParams()
    dc = DCMAC_CELL
    out: list[str] = [
        "# DCMAC (400GE, port 0) + two GTM quads for the VPK180, generated by",
        "# jasper_library/yellow_blocks/vpk180_ip.py; UNCONFIRMED values: see there.",
        f"create_bd_design {p.bd_name}",
        f"current_bd_design {p.bd_name}",
        "",
        "# ---- external ports (the HDL wrapper fhg_dcmac_vpk180 connects to these)",
    ]
    for port in bd_ports(p):
        rng = f" -from {port.width - 1} -to 0" if port.width > 1 else ""
        typ = f" -type {port.kind}" if port.kind != "data" else ""
        out.append(f"create_bd_port -dir {port.direction}{rng}{typ} {port.name}")
    out += [
        "",
        "# ---- reference clock: IBUFDS_GTME5 -> quads; ODIV2 -> BUFG_GT -> clocking wizard",
        "create_bd_intf_port -mode Slave -vlnv xilinx.com:interface:diff_clock_rtl:1.0 gt_refclk",
        f"set_property CONFIG.FREQ_HZ {round(p.refclk_mhz * 1e6)} [get_bd_intf_ports gt_refclk]",
        f"create_bd_cell -type ip -vlnv {UTIL_DS_BUF_VLNV} {REFCLK_BUF_CELL}",
        f"set_property -dict {_dict({'C_BUF_TYPE': 'IBUFDS_GTME5'})} "
        f"[get_bd_cells {REFCLK_BUF_CELL}]",
        "connect_bd_intf_net [get_bd_intf_ports gt_refclk] "
        f"[get_bd_intf_pins {REFCLK_BUF_CELL}/CLK_IN_D]",
        f"create_bd_cell -type ip -vlnv {UTIL_DS_BUF_VLNV} {REFCLK_BUFG_CELL}",
        f"set_property -dict {_dict({'C_BUF_TYPE': 'BUFG_GT'})} [get_bd_cells {REFCLK_BUFG_CELL}]",
        f"connect_bd_net [get_bd_pins {REFCLK_BUF_CELL}/IBUF_DS_ODIV2] "
        f"[get_bd_pins {REFCLK_BUFG_CELL}/BUFG_GT_I]",
        f"create_bd_cell -type ip -vlnv {CLK_WIZ_VLNV} {CLK_WIZ_CELL}",
        f"set_property -dict {_dict(clk_wiz_config(p))} [get_bd_cells {CLK_WIZ_CELL}]",
        f"connect_bd_net [get_bd_pins {REFCLK_BUFG_CELL}/BUFG_GT_O] "
        f"[get_bd_pins {CLK_WIZ_CELL}/clk_in1]",
        "",
        "# ---- GTM quads: PAM4 106.25 Gb/s, half density, LCPLL",
    ]
    for q, quad in enumerate(QUAD_CELLS):
        out += [
            f"create_bd_cell -type ip -vlnv {GT_QUAD_VLNV} {quad}",
            f"set_property -dict {_dict(quad_config(p, q))} [get_bd_cells {quad}]",
            f"connect_bd_net [get_bd_pins {REFCLK_BUF_CELL}/IBUF_OUT] "
            f"[get_bd_pins {quad}/GT_REFCLK0]",
            f"connect_bd_net [get_bd_ports s_axi_aclk] [get_bd_pins {quad}/apb3clk]",
            "create_bd_intf_port -mode Master -vlnv xilinx.com:interface:gt_rtl:1.0 "
            f"gtm_serial_{q}",
            f"connect_bd_intf_net [get_bd_intf_pins {quad}/GT_Serial] "
            f"[get_bd_intf_ports gtm_serial_{q}]",
        ]
    out += [
        "",
        "# ---- DCMAC",
        f"create_bd_cell -type ip -vlnv {DCMAC_VLNV} {dc}",
        f"set_property -dict {_dict(dcmac_config(p))} [get_bd_cells {dc}]",
        "create_bd_intf_port -mode Slave -vlnv xilinx.com:interface:aximm_rtl:1.0 s_axi",
        "set_property -dict [list CONFIG.PROTOCOL {AXI4LITE} CONFIG.ADDR_WIDTH {32} "
        "CONFIG.DATA_WIDTH {32}] [get_bd_intf_ports s_axi]",
        f"connect_bd_intf_net [get_bd_intf_ports s_axi] [get_bd_intf_pins {dc}/s_axi]",
        "",
        "# ---- external ports to the DCMAC",
    ]
    for port in bd_ports(p):
        if port.pin:
            out.append(f"connect_bd_net [get_bd_ports {port.name}] [get_bd_pins {port.pin}]")
    out += [
        f"connect_bd_net [get_bd_ports s_axi_aclk] [get_bd_pins {dc}/s_axi_aclk]",
        f"connect_bd_net [get_bd_ports s_axi_aresetn] [get_bd_pins {dc}/s_axi_aresetn]",
        "",
        "# ---- DCMAC lanes -> GT channels (lane_map; UNCONFIRMED order across the cage)",
    ]
    for lane, (q, ch) in enumerate(p.lane_map):
        quad = QUAD_CELLS[q]
        for d in ("tx", "rx"):
            out.append(
                f"connect_bd_intf_net [get_bd_intf_pins {dc}/gtm_{d}_serdes_interface_{lane}] "
                f"[get_bd_intf_pins {quad}/{d.upper()}{ch}_GT_IP_Interface]"
            )
    out += [
        "",
        "# ---- clocks: core 782.06 MHz, AXIS/macif 391.03 MHz, serdes clocks from the GTs",
        f"connect_bd_net [get_bd_pins {CLK_WIZ_CELL}/core_clk] "
        f"[get_bd_pins {dc}/tx_core_clk] [get_bd_pins {dc}/rx_core_clk]",
        f"connect_bd_net [get_bd_pins {CLK_WIZ_CELL}/axis_clk] [get_bd_ports axis_clk] "
        f"[get_bd_pins {dc}/tx_axi_clk] [get_bd_pins {dc}/rx_axi_clk] "
        f"[get_bd_pins {dc}/tx_macif_clk] [get_bd_pins {dc}/rx_macif_clk]",
        f"connect_bd_net [get_bd_pins {CLK_WIZ_CELL}/locked] [get_bd_ports clk_locked]",
    ]
    # The DCMAC's serdes clocks come from the master channel's user clocks (UNCONFIRMED pin
    # names; AMD's designs divide them in a BUFG_GT per direction).
    master_q, master_ch = p.lane_map[0]
    mq = QUAD_CELLS[master_q]
    for d in ("tx", "rx"):
        buf = f"{d}_serdes_bufg_gt"
        out += [
            f"create_bd_cell -type ip -vlnv {UTIL_DS_BUF_VLNV} {buf}",
            f"set_property -dict {_dict({'C_BUF_TYPE': 'BUFG_GT'})} [get_bd_cells {buf}]",
            f"connect_bd_net [get_bd_pins {mq}/ch{master_ch}_{d}outclk] "
            f"[get_bd_pins {buf}/BUFG_GT_I]",
            f"connect_bd_net [get_bd_pins {buf}/BUFG_GT_O] [get_bd_pins {dc}/{d}_serdes_clk] "
            f"[get_bd_pins {dc}/{d}_alt_serdes_clk]",
        ]
    loopback_pins = " ".join(
        f"[get_bd_pins {QUAD_CELLS[q]}/ch{ch}_loopback]" for q, ch in p.lane_map
    )
    out += [
        f"connect_bd_net [get_bd_ports gt_loopback] {loopback_pins}",
        f"connect_bd_net [get_bd_pins {QUAD_CELLS[0]}/gtpowergood] [get_bd_ports gtpowergood]",
        "",
        "assign_bd_address",
        "validate_bd_design",
        "save_bd_design",
        # make_wrapper names the file it writes (Verilog or VHDL: the project's language).
        f"add_files -norecurse [make_wrapper -files [get_files {p.bd_name}.bd] -top]",
        "",
    ]
    return "\n".join(out) + "\n"
