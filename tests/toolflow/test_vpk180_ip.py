"""The DCMAC/GTM block-design Tcl, run under tclsh against a Vivado command stub that records
every call (tests/tcl/vivado_bd_stub.tcl).

`test_lists_every_ip_property` prints the whole IP configuration (run with -s to see it); the
other tests check the values docs/design/core.md §5 names, the lane wiring, the ports the HDL
wrapper uses and the parameter checks.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import REPO_ROOT

from mlib_devel_400g.toolflow import jasper_imports

jasper_imports()
from yellow_blocks import vpk180_ip as ip  # noqa: E402 - after jasper_imports()

STUB = REPO_ROOT / "tests" / "tcl" / "vivado_bd_stub.tcl"


def _tclsh() -> str:
    exe = shutil.which("tclsh") or shutil.which("tclsh8.6")
    if exe is None:
        pytest.fail("tclsh not found: install the Debian package 'tcl' (make sysdeps does)")
    return exe


def run_stub(tcl: str, tmp_path: Path) -> list[list[str]]:
    script = tmp_path / "bd.tcl"
    log = tmp_path / "bd.log"
    script.write_text(tcl)
    res = subprocess.run(
        [_tclsh(), str(STUB), str(script), str(log)], capture_output=True, text=True, timeout=60
    )
    if res.returncode != 0:
        raise AssertionError(f"tclsh failed ({res.returncode}): {res.stderr.strip()}")
    return [line.split("\t") for line in log.read_text().splitlines()]


class Recorded:
    def __init__(self, records: list[list[str]]) -> None:
        self.cells: dict[str, str] = {}
        self.ports: dict[str, tuple[str, int]] = {}
        self.intf_ports: dict[str, str] = {}
        self.props: dict[str, dict[str, str]] = defaultdict(dict)
        self.nets: list[list[str]] = []
        self.intf_nets: list[tuple[str, str]] = []
        self.cmds: list[str] = []
        for rec in records:
            kind = rec[0]
            if kind == "cell":
                self.cells[rec[1]] = rec[2]
            elif kind == "port":
                self.ports[rec[1]] = (rec[2], int(rec[3]))
            elif kind == "intf_port":
                self.intf_ports[rec[1]] = rec[3]
            elif kind == "prop":
                self.props[rec[1]][rec[2]] = rec[3]
            elif kind == "net":
                self.nets.append(rec[1:])
            elif kind == "intf_net":
                self.intf_nets.append((rec[1], rec[2]))
            elif kind == "cmd":
                self.cmds.append(rec[1])

    def cell_config(self, cell: str) -> dict[str, str]:
        return {
            k.removeprefix("CONFIG."): v
            for k, v in self.props[f"cell:{cell}"].items()
            if k.startswith("CONFIG.")
        }

    def connected(self, a: str, b: str) -> bool:
        return any(a in net and b in net for net in self.nets)


@pytest.fixture(scope="module")
def default(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return Recorded(run_stub(ip.dcmac_gtm_tcl(), tmp_path_factory.mktemp("bd")))


def test_lists_every_ip_property(default: Recorded) -> None:
    lines = []
    for cell, vlnv in default.cells.items():
        lines.append(f"{cell} ({vlnv})")
        for key, value in default.cell_config(cell).items():
            if key == "PROT0_LR0_SETTINGS":
                pairs = value.split()
                lines.append(f"    {key}:")
                lines += [
                    f"        {k} = {v}" for k, v in zip(pairs[::2], pairs[1::2], strict=True)
                ]
            else:
                lines.append(f"    {key} = {value}")
    print("\n" + "\n".join(lines))
    # Every configured cell is listed with at least one property.
    assert set(default.cells) == {
        ip.DCMAC_CELL,
        *ip.QUAD_CELLS,
        ip.REFCLK_BUF_CELL,
        ip.REFCLK_BUFG_CELL,
        ip.CLK_WIZ_CELL,
        "tx_serdes_bufg_gt",
        "rx_serdes_bufg_gt",
    }
    assert all(default.cell_config(c) for c in default.cells)


def test_dcmac_configuration_is_the_spec(default: Recorded) -> None:
    assert default.cells[ip.DCMAC_CELL] == "xilinx.com:ip:dcmac"
    cfg = default.cell_config(ip.DCMAC_CELL)
    assert cfg["DCMAC_MODE_C0"] == "Coupled MAC+PCS"
    assert cfg["DCMAC_DATA_PATH_INTERFACE_C0"] == "391MHz Upto 6 Ports"
    assert cfg["MAC_PORT0_CONFIG_C0"] == "400GAUI-4"
    assert cfg["FEC_SLICE0_CFG_C0"] == "RS(544) CL119"
    assert cfg["GT_TYPE_C0"] == "GTM"
    assert cfg["GT_REF_CLK_FREQ_C0"] == "156.25"
    assert cfg["MAC_PORT0_ENABLE_C0"] == "1"
    assert cfg["MAC_PORT0_TX_INSERT_C0"] == "1"  # FCS inserted on TX
    assert [cfg[f"MAC_PORT{k}_ENABLE_C0"] for k in range(1, 6)] == ["0"] * 5  # port 0 only


def test_gtm_quads_are_pam4_106g_half_density_lcpll(default: Recorded) -> None:
    for q, quad in enumerate(ip.QUAD_CELLS):
        assert default.cells[quad] == "xilinx.com:ip:gt_quad_base"
        cfg = default.cell_config(quad)
        pairs = cfg["PROT0_LR0_SETTINGS"].split()
        lr = dict(zip(pairs[::2], pairs[1::2], strict=True))
        assert lr["PRESET"] == "GTM-PAM4_Ethernet_106G"
        assert lr["TX_LINE_RATE"] == lr["RX_LINE_RATE"] == "106.25"
        assert lr["TX_PAM_SEL"] == lr["RX_PAM_SEL"] == "PAM4"
        assert lr["TX_HD_EN"] == lr["RX_HD_EN"] == "1"
        assert lr["TX_PLL_TYPE"] == lr["RX_PLL_TYPE"] == "LCPLL"
        assert lr["TX_REFCLK_FREQUENCY"] == lr["RX_REFCLK_FREQUENCY"] == "156.25"
        assert cfg["GT_TYPE"] == "GTM" and cfg["PROT0_NO_OF_LANES"] == "2"
        # Half density: channels 0 and 2 carry the lanes.
        assert [cfg[f"TX{ch}_LANE_SEL"] for ch in range(4)] == [
            "PROT0",
            "unconnected",
            "PROT0",
            "unconnected",
        ]
        assert default.connected(f"pin:{ip.REFCLK_BUF_CELL}/IBUF_OUT", f"pin:{quad}/GT_REFCLK0")
        assert (f"intf_pin:{quad}/GT_Serial", f"intf_port:gtm_serial_{q}") in default.intf_nets


def test_refclk_buffer_and_clocks(default: Recorded) -> None:
    assert default.cell_config(ip.REFCLK_BUF_CELL) == {"C_BUF_TYPE": "IBUFDS_GTME5"}
    assert default.cell_config(ip.REFCLK_BUFG_CELL) == {"C_BUF_TYPE": "BUFG_GT"}
    assert default.props["intf_port:gt_refclk"]["CONFIG.FREQ_HZ"] == "156250000"
    wiz = default.cell_config(ip.CLK_WIZ_CELL)
    assert wiz["PRIM_IN_FREQ"] == "156.25"
    assert wiz["CLKOUT_REQUESTED_OUT_FREQUENCY"] == "782.06,391.03"
    dc = ip.DCMAC_CELL
    core = f"pin:{ip.CLK_WIZ_CELL}/core_clk"
    axis = f"pin:{ip.CLK_WIZ_CELL}/axis_clk"
    for pin in ("tx_core_clk", "rx_core_clk"):
        assert default.connected(core, f"pin:{dc}/{pin}")
    for pin in ("tx_axi_clk", "rx_axi_clk", "tx_macif_clk", "rx_macif_clk"):
        assert default.connected(axis, f"pin:{dc}/{pin}")
    assert default.connected(axis, "port:axis_clk")


def test_lanes_follow_the_lane_map(default: Recorded) -> None:
    lane_map = ip.DcmacGtmParams().lane_map
    for lane, (q, ch) in enumerate(lane_map):
        for d in ("tx", "rx"):
            pair = (
                f"intf_pin:{ip.DCMAC_CELL}/gtm_{d}_serdes_interface_{lane}",
                f"intf_pin:{ip.QUAD_CELLS[q]}/{d.upper()}{ch}_GT_IP_Interface",
            )
            assert pair in default.intf_nets


def test_every_wrapper_port_is_created_and_connected(default: Recorded) -> None:
    p = ip.DcmacGtmParams()
    for port in ip.bd_ports(p):
        assert default.ports[port.name] == (port.direction, port.width), port.name
        assert any(f"port:{port.name}" in net for net in default.nets), port.name
    # Client ports keep the DCMAC's pin names, so fhg_core's ports map one to one.
    for s in range(ip.SEGMENTS):
        for name in (f"tx_axis_tdata{s}", f"rx_axis_tuser_mty{s}"):
            assert default.connected(f"port:{name}", f"pin:{ip.DCMAC_CELL}/{name}")
    assert default.intf_ports == {
        "gt_refclk": "xilinx.com:interface:diff_clock_rtl:1.0",
        "gtm_serial_0": "xilinx.com:interface:gt_rtl:1.0",
        "gtm_serial_1": "xilinx.com:interface:gt_rtl:1.0",
        "s_axi": "xilinx.com:interface:aximm_rtl:1.0",
    }
    # The design is saved, wrapped, and the wrapper (make_wrapper's file) added last.
    assert default.cmds[-4:] == [
        "validate_bd_design",
        "save_bd_design",
        "make_wrapper",
        "add_files",
    ]


def test_parameters_reach_the_tcl(tmp_path: Path) -> None:
    p = ip.DcmacGtmParams(
        dcmac_location="DCMAC_X1Y1",
        lane_map=((1, 2), (1, 0), (0, 2), (0, 0)),
        rx_strip_fcs=False,
        axis_clk_mhz=400.0,
    )
    rec = Recorded(run_stub(ip.dcmac_gtm_tcl(p), tmp_path))
    cfg = rec.cell_config(ip.DCMAC_CELL)
    assert cfg["DCMAC_LOCATION_C0"] == "DCMAC_X1Y1"
    assert cfg["MAC_PORT0_RX_STRIP_C0"] == "0"
    assert rec.cell_config(ip.CLK_WIZ_CELL)["CLKOUT_REQUESTED_OUT_FREQUENCY"] == "782.06,400"
    assert (
        f"intf_pin:{ip.DCMAC_CELL}/gtm_tx_serdes_interface_0",
        f"intf_pin:{ip.QUAD_CELLS[1]}/TX2_GT_IP_Interface",
    ) in rec.intf_nets


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"axis_clk_mhz": 390.0}, "axis_clk_mhz = 390.0 is below 390.625 MHz"),
        ({"core_clk_mhz": 900.0}, "below half the core clock"),
        ({"lane_map": ((0, 0), (0, 0), (1, 0), (1, 2))}, "uses a GT channel twice"),
        ({"lane_map": ((0, 0), (0, 2), (1, 0))}, "lane_map needs 4 entries, got 3"),
        ({"lane_map": ((0, 0), (0, 2), (2, 0), (1, 2))}, r"entry \(2, 0\)"),
        ({"dcmac_location": "X1Y1"}, "dcmac_location 'X1Y1' is not DCMAC_X<n>Y<n>"),
        ({"extra_dcmac_config": {"FOO": "a}b"}}, "extra DCMAC setting FOO"),
        ({"refclk_mhz": 0.0}, "refclk_mhz = 0.0 MHz is not a usable clock"),
    ],
)
def test_bad_parameters_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ip.DcmacGtmParams(**kwargs)


def test_stub_rejects_unknown_cells(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="no cell nosuch"):
        run_stub(
            "create_bd_design x\nconnect_bd_net [get_bd_pins nosuch/a] [get_bd_ports b]\n", tmp_path
        )


def test_wrapper_stub_has_every_port() -> None:
    stub = ip.bd_wrapper_stub()
    assert stub.count("\n    input ") + stub.count("\n    output") == len(
        ip.bd_wrapper_ports(ip.DcmacGtmParams())
    )
    assert "module fhg_dcmac_bd_wrapper (" in stub
    assert "input  wire [127:0] tx_axis_tdata7" in stub
    assert "output wire [3:0] gtm_serial_1_gtx_p" in stub
