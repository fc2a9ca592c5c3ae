"""The vpk180 platform: the example design built for it (``build --platform vpk180``).

* The build script's whole init stage (project, CIPS block design, DCMAC/GTM block design,
  wrappers added to the project) runs under tclsh against the recording Vivado stand-in
  (tests/tcl/vivado_bd_stub.tcl). `test_lists_every_ip_property` prints every property of
  every cell of both block designs (run with -s to see it) and the other tests check the
  CIPS/NoC/AXI values that matter, the clocks, resets and the address window.
* The build tree: top.v with the CIPS wrapper and fhg_dcmac_vpk180 joined to fhg_core, the
  XDC with the refclk and GT pin locations, the .fpg header naming the gbe at 0xA400_0000,
  the .pdi backend; top.v lints with Verilator with the block designs black-boxed.
* Overrides from the design (`platform_options`) and the errors for bad values.
"""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from conftest import fake_vivado

from casper400g_dev import checkout
from casperfpga_ext.fpg import find_gbes, parse_fpg, parse_fpg_header, read_bitstream
from mlib_devel_400g import paths
from mlib_devel_400g.design import Design, DesignError
from mlib_devel_400g.toolflow import BuildResult, Toolflow, ToolflowError, jasper_imports, lint

EXAMPLE = checkout.ROOT / "examples" / "pktgen_400g" / "design.yaml"
TWO_PORT = checkout.ROOT / "examples" / "pktgen2x400g" / "design.yaml"
STUB = checkout.ROOT / "tests" / "tcl" / "vivado_bd_stub.tcl"
PLATFORM_YAML = paths.JASPER_LIBRARY / "platforms" / "vpk180.yaml"

jasper_imports()
from yellow_blocks import vpk180, vpk180_dcmac, vpk180_ip  # noqa: E402  (jasper's import convention)

# The example's one block is on cage 0: its DCMAC block design.
BD0 = vpk180_dcmac.bd_name(0)


def build(design: Path, out: Path, platform: str | None = "vpk180") -> BuildResult:
    per = Design(design, platform=platform).to_jasper_per(out)
    return Toolflow(per, out, progress=None).run(backend="none")


def _design(tmp_path: Path, **top: object) -> Path:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["user_module"]["sources"] = [str(EXAMPLE.parent / f) for f in doc["user_module"]["sources"]]
    doc["platform"] = "vpk180"
    doc.update(top)
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    return build(EXAMPLE, tmp_path_factory.mktemp("vpk180"))


# ----------------------------------------------------------------- the Tcl under tclsh
def _tclsh() -> str:
    exe = shutil.which("tclsh") or shutil.which("tclsh8.6")
    if exe is None:
        pytest.fail("tclsh not found: install the Debian package 'tcl' (make sysdeps does)")
    return exe


def stage(tcl: str, name: str) -> list[str]:
    lines = tcl.splitlines()
    start = lines.index(f"stage {name}") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("stage "))
    return lines[start:end]


class Recorded:
    """The stub's log, per block design: cells, ports, properties, nets, commands."""

    def __init__(self, log: str) -> None:
        self.designs: list[str] = []
        self.cells: dict[str, dict[str, str]] = defaultdict(dict)
        self.ports: dict[str, dict[str, tuple[str, int]]] = defaultdict(dict)
        self.intf_ports: dict[str, dict[str, str]] = defaultdict(dict)
        self.props: dict[str, dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
        self.nets: dict[str, list[list[str]]] = defaultdict(list)
        self.intf_nets: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.cmds: list[tuple[str, list[str]]] = []
        d = ""
        for line in log.splitlines():
            rec = line.split("\t")
            kind = rec[0]
            if kind == "design":
                d = rec[1]
                self.designs.append(d)
            elif kind == "current":
                d = rec[1]
            elif kind == "cell":
                self.cells[d][rec[1]] = rec[2]
            elif kind == "port":
                self.ports[d][rec[1]] = (rec[2], int(rec[3]))
            elif kind == "intf_port":
                self.intf_ports[d][rec[1]] = rec[3]
            elif kind == "prop":
                self.props[d][rec[1]][rec[2]] = rec[3]
            elif kind == "net":
                self.nets[d].append(rec[1:])
            elif kind == "intf_net":
                self.intf_nets[d].append((rec[1], rec[2]))
            elif kind == "cmd":
                self.cmds.append((rec[1], rec[2:]))

    def config(self, design: str, obj: str) -> dict[str, str]:
        return {
            k.removeprefix("CONFIG."): v
            for k, v in self.props[design][obj].items()
            if k.startswith("CONFIG.")
        }

    def connected(self, design: str, *objs: str) -> bool:
        return any(all(o in net for o in objs) for net in self.nets[design])


def run_stub(lines: list[str], tmp_path: Path) -> Recorded:
    script = tmp_path / "init.tcl"
    log = tmp_path / "init.log"
    script.write_text("set here /build/vivado\n" + "\n".join(lines) + "\n")
    res = subprocess.run(
        [_tclsh(), str(STUB), str(script), str(log)], capture_output=True, text=True, timeout=60
    )
    if res.returncode != 0:
        raise AssertionError(f"tclsh failed ({res.returncode}): {res.stderr.strip()}")
    return Recorded(log.read_text())


@pytest.fixture(scope="module")
def init(example: BuildResult, tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    tcl = (example.build_dir / "vivado" / "build.tcl").read_text()
    # The block designs exist after init (the DCMAC's) and create_bd (the platform's, which
    # the script creates in init as mlib_devel's backend does).
    return run_stub(
        ["set jbd_name vpk180_bd", *stage(tcl, "init"), *stage(tcl, "create_bd")],
        tmp_path_factory.mktemp("init"),
    )


def _tcl_dict(text: str) -> dict[str, str]:
    words = text.split()
    assert len(words) % 2 == 0, text
    return dict(zip(words[::2], words[1::2], strict=True))


def test_lists_every_ip_property(init: Recorded) -> None:
    lines = []
    for d in init.designs:
        lines.append(f"== block design {d}")
        for obj in [f"intf_port:{p}" for p in init.intf_ports[d]] + [
            f"port:{p}" for p in init.ports[d]
        ]:
            for k, v in init.config(d, obj).items():
                lines.append(f"  {obj}: {k} = {v}")
        for cell, vlnv in init.cells[d].items():
            lines.append(f"  {cell} ({vlnv})")
            for key, value in init.config(d, f"cell:{cell}").items():
                if key in ("PS_PMC_CONFIG", "PROT0_LR0_SETTINGS"):
                    lines.append(f"      {key}:")
                    lines += [f"          {k} = {v}" for k, v in _tcl_dict(value).items()]
                else:
                    lines.append(f"      {key} = {value}")
    print("\n" + "\n".join(lines))
    assert sorted(init.designs) == sorted([vpk180.BD_NAME, BD0])
    assert init.cells[vpk180.BD_NAME] == {
        vpk180.CIPS_CELL: "xilinx.com:ip:versal_cips",
        vpk180.RESET_CELL: "xilinx.com:ip:proc_sys_reset",
        vpk180.SMARTCONNECT_CELL: "xilinx.com:ip:smartconnect",
        vpk180.CLK_WIZ_CELL: "xilinx.com:ip:clk_wizard",
    }
    # Every configured cell of either design is listed with its properties.
    for d in init.designs:
        for cell in init.cells[d]:
            if cell != vpk180.RESET_CELL:  # proc_sys_reset keeps its defaults
                assert init.config(d, f"cell:{cell}"), (d, cell)


def test_cips_m_axi_fpd_and_pl0(init: Recorded) -> None:
    d = vpk180.BD_NAME
    cfg = init.config(d, f"cell:{vpk180.CIPS_CELL}")
    pmc = _tcl_dict(cfg["PS_PMC_CONFIG"])
    assert pmc["PS_USE_M_AXI_FPD"] == "1"
    assert pmc["PS_USE_PMCPL_CLK0"] == "1"
    assert pmc["PMC_CRP_PL0_REF_CTRL_FREQMHZ"] == "100"
    assert pmc["PS_NUM_FABRIC_RESETS"] == "1"
    assert cfg["PS_PL_CONNECTIVITY_MODE"] == "Custom"
    wiz = init.config(d, f"cell:{vpk180.CLK_WIZ_CELL}")
    assert wiz["PRIM_IN_FREQ"] == "100"
    assert wiz["CLKOUT_PORT"] == "axil_clk,sys_clk,sys_clk90,sys_clk180,sys_clk270"
    # the design's clock_mhz, in four phases
    assert wiz["CLKOUT_REQUESTED_OUT_FREQUENCY"] == "100,390.625,390.625,390.625,390.625"
    assert wiz["CLKOUT_REQUESTED_PHASE"] == "0.000,0.000,90.000,180.000,270.000"
    cips, wz, rst, sc = (
        vpk180.CIPS_CELL,
        vpk180.CLK_WIZ_CELL,
        vpk180.RESET_CELL,
        vpk180.SMARTCONNECT_CELL,
    )
    assert init.connected(d, f"pin:{cips}/pl0_ref_clk", f"pin:{wz}/clk_in1")
    assert init.connected(
        d,
        f"pin:{wz}/axil_clk",
        "port:axil_clk",
        f"pin:{cips}/m_axi_fpd_aclk",
        f"pin:{sc}/aclk",
        f"pin:{rst}/slowest_sync_clk",
    )
    for ph in vpk180.PHASES:
        assert init.connected(d, f"pin:{wz}/sys_clk{ph}", f"port:sys_clk{ph}")
    assert init.connected(d, f"pin:{wz}/locked", f"pin:{rst}/dcm_locked", "port:clk_locked")
    assert init.connected(d, f"pin:{cips}/pl0_resetn", f"pin:{rst}/ext_reset_in")
    assert init.connected(d, f"pin:{rst}/peripheral_aresetn", "port:axil_rst_n")
    assert init.connected(d, f"pin:{rst}/interconnect_aresetn", f"pin:{sc}/aresetn")


def test_axi4lite_path_and_address_window(init: Recorded) -> None:
    d = vpk180.BD_NAME
    cips, sc = vpk180.CIPS_CELL, vpk180.SMARTCONNECT_CELL
    assert init.intf_ports[d] == {"M_AXI": "xilinx.com:interface:aximm_rtl:1.0"}
    m = init.config(d, "intf_port:M_AXI")
    assert (m["PROTOCOL"], m["ADDR_WIDTH"], m["DATA_WIDTH"], m["HAS_PROT"]) == (
        "AXI4LITE",
        "32",
        "32",
        "1",
    )
    assert m["FREQ_HZ"] == "100000000"
    assert init.config(d, "port:axil_clk")["ASSOCIATED_BUSIF"] == "M_AXI"
    assert init.config(d, f"cell:{sc}") == {"NUM_SI": "1", "NUM_MI": "1"}
    assert (f"intf_pin:{cips}/M_AXI_FPD", f"intf_pin:{sc}/S00_AXI") in init.intf_nets[d]
    assert (f"intf_pin:{sc}/M00_AXI", "intf_port:M_AXI") in init.intf_nets[d]
    [assign] = [
        args
        for c, args in init.cmds
        if c == "assign_bd_address" and f"addr_space:{cips}/M_AXI_FPD" in args
    ]
    opts = dict(zip(assign[:-2:2], assign[1:-2:2], strict=False))
    assert int(opts["-offset"], 16) == 0xA4000000
    assert int(opts["-range"], 16) == 0x4000000
    assert opts["-target_address_space"] == f"addr_space:{cips}/M_AXI_FPD"
    assert "addr_seg:M_AXI/Reg" in assign
    # The design's ports are what top.v connects (scalar ports + M_AXI flattened).
    scalar = {n: (("O", 1)) for n, _k in vpk180.CLOCK_PORTS}
    assert init.ports[d] == scalar
    assert {name for name, _d, _w in vpk180.bd_ports()} == {
        *scalar,
        *(f"M_AXI_{sig}" for sig, _d, _w in vpk180.HOST_AXIL),
    }


def test_dcmac_block_design_takes_the_cage_and_clocks(init: Recorded) -> None:
    d = BD0
    dc = init.config(d, f"cell:{vpk180_ip.DCMAC_CELL}")
    for key, value in vpk180_ip.SPEC_DCMAC_CONFIG.items():
        assert dc[key] == value, key
    assert "DCMAC_LOCATION_C0" not in dc  # the platform leaves the site to Vivado
    for quad in vpk180_ip.QUAD_CELLS:
        assert init.config(d, f"cell:{quad}")["APB3_CLK_FREQUENCY"] == "100"  # axil_clk
    wiz = init.config(d, f"cell:{vpk180_ip.CLK_WIZ_CELL}")
    assert wiz["CLKOUT_REQUESTED_OUT_FREQUENCY"] == "782.06,391.03"
    # The DCMAC design's wrapper (make_wrapper's file) is added once the design is saved;
    # the platform's design is generated by the backend before synthesis.
    added = [" ".join(args) for c, args in init.cmds if c == "add_files"]
    assert f"-norecurse /project/wrappers/{d}_wrapper.v" in added


# ----------------------------------------------------------------- the build tree
def test_build_tree(example: BuildResult) -> None:
    out = example.build_dir
    for rel in (
        "top.v",
        "top.xdc",
        "vivado/build.tcl",
        "core_info.tab",
        "memory_map.json",
        "fpg_header.txt",
        f"lint/stubs/{vpk180.BD_NAME}.v",
        f"lint/stubs/{BD0}_wrapper.v",
    ):
        assert (out / rel).is_file(), rel
    tcl = (out / "vivado/build.tcl").read_text()
    assert "create_project -force pktgen_400g $here/project -part xcvp1802-lsvc4072-2MP-e-S" in tcl
    assert stage(tcl, "bitgen") == ["write_device_image -force $impl_dir/top.pdi"]
    # mlib_devel's $bin_file is the image its mkfpg packs: the .pdi, copied.
    assert stage(tcl, "post_bitgen") == [
        "file copy -force [file join $impl_dir top.pdi] $bin_file",
        "write_hw_platform -fixed -include_bit -force $xsa_file",
    ]
    # The platform's block design, as mlib_devel's backend handles $jbd_name.
    assert stage(tcl, "pre_synth")[:4] == [
        "current_bd_design [get_bd_designs $jbd_name]",
        "save_bd_design",
        "validate_bd_design",
        "generate_target all [get_files $jbd_name.bd]",
    ]
    assert "write_bitstream" not in tcl


def test_xdc_has_refclk_and_gt_locations(example: BuildResult) -> None:
    xdc = (example.build_dir / "top.xdc").read_text()
    plat = yaml.safe_load(PLATFORM_YAML.read_text())
    pins = plat["pins"]
    assert (
        "create_clock -period 6.400 -name fhg0_gt_refclk -waveform {0.000 3.200} "
        "[get_ports {fhg0_gt_refclk_p}]"
    ) in xdc
    [refclk] = pins["qsfpdd0_refclk0_p"]["loc"]
    assert f"set_property PACKAGE_PIN {refclk} [get_ports {{fhg0_gt_refclk_p}}]" in xdc
    placed = re.findall(
        r"set_property PACKAGE_PIN (\w+) \[get_ports \{(fhg0_gtm_q\d_\w+)\[(\d)\]\}\]", xdc
    )
    assert len(placed) == 16
    for q in (0, 1):
        for d in ("rx", "tx"):
            locs = pins[f"qsfpdd0_quad{q}_{d}_p"]["loc"]
            got = [loc for loc, port, _ch in placed if port == f"fhg0_gtm_q{q}_{d}_p"]
            assert got == locs, (q, d)
    # The core's three clock domains are asynchronous to each other; the block design's
    # clocks are found through the platform's clock_refs.
    ref_user = plat["clock_refs"]["user_clk"]
    ref_axil = plat["clock_refs"]["axil_clk"]
    refclk_group = "[get_clocks -include_generated_clocks {fhg0_gt_refclk}]"
    for a, b in ((ref_user, ref_axil), (ref_user, refclk_group), (ref_axil, refclk_group)):
        assert f"set_clock_groups -asynchronous -group {a} -group {b}" in xdc


def _instance(top: str, module: str, name: str) -> dict[str, str]:
    m = re.search(rf"{module} (?:#\(.*?\) )?{name} \((.*?)\);", top, re.S)
    assert m is not None, (module, name)
    return dict(re.findall(r"\.(\w+)\(([^()]*)\)", m.group(1)))


def test_top_joins_the_dcmac_to_the_core(example: BuildResult) -> None:
    top = (example.build_dir / "top.v").read_text()
    cips = _instance(top, "vpk180_bd", "vpk180_bd_inst")
    for sig in ("awaddr", "rdata", "bresp"):
        assert cips[f"M_AXI_{sig}"] == f"M_AXI_{sig}"
    assert cips["axil_clk"] == "axil_clk" and cips["sys_clk"] == "sys_clk"
    # The XSG block's clock source is the platform's sys_clk: user_clk is driven from it.
    assert "assign user_clk = sys_clk;" in top
    assert re.search(r"fhg_dcmac_vpk180 #\(\s*\.AXIL_CLK_HZ\(100000000\)\s*\) ", top)
    link = _instance(top, "fhg_dcmac_vpk180", "pktgen_400g_gbe0_dcmac")
    bd = _instance(top, f"{BD0}_wrapper", "pktgen_400g_gbe0_dcmac_bd")
    core = _instance(top, "fhg_core", "pktgen_400g_gbe0_core")
    jasper_imports()
    from yellow_blocks.fourhundred_gbe_hdl import module_ports

    core_ports = module_ports(paths.FHG_HDL / "fhg_core.sv", "fhg_core")
    status = [p for p in core_ports if p.startswith("link_")] + ["gt_powergood"]
    assert len(status) == 16
    for p in status:
        assert core[p] == link[p], p  # the same wire on both
    client = [p for p in core_ports if re.match(r"(tx|rx)_axis_", p)]
    assert client
    for p in client:
        assert core[p] == bd[p], p  # the client ports go straight to the DCMAC
    # The MAC clock is the block design's axis_clk; reset and link from the link control.
    mac_clk = bd["axis_clk"]
    assert core["tx_mac_clk"] == core["rx_mac_clk"] == link["mac_clk"] == mac_clk
    for core_port, link_port in (
        ("tx_mac_rst", "mac_rst"),
        ("rx_mac_rst", "mac_rst"),
        ("mac_link_up", "link_up"),
    ):
        assert core[core_port] == link[link_port], core_port
    # The link control drives the DCMAC's register port, resets and GT handshakes.
    shared = set(link) & set(bd)
    assert {"s_axi_awaddr", "tx_core_reset", "gt_reset_rx_datapath_in_3", "clk_locked"} <= shared
    for p in shared:
        assert link[p] == bd[p] == f"pktgen_400g_gbe0_bd_{p}", p
    assert bd["s_axi_aclk"] == link["axil_clk"] == core["axil_clk"] == "axil_clk"
    assert bd["tx_preamblein_0"] == "56'h55555555555555"
    assert bd["gt_refclk_clk_p"] == "fhg0_gt_refclk_p"
    assert bd["gtm_serial_1_gtx_n"] == "fhg0_gtm_q1_tx_n"


def test_top_lints_with_the_block_designs_black_boxed(example: BuildResult) -> None:
    proc = lint(example.build_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "%Warning" not in proc.stderr, proc.stderr


def test_lint_needs_the_black_boxes(example: BuildResult, tmp_path: Path) -> None:
    copy = tmp_path / "b"
    shutil.copytree(example.build_dir, copy)
    (copy / "lint" / "stubs" / f"{BD0}_wrapper.v").unlink()
    proc = lint(copy)
    assert proc.returncode != 0 and f"{BD0}_wrapper" in proc.stderr


def test_fpg_names_the_gbe_at_the_platform_base(example: BuildResult, tmp_path: Path) -> None:
    from mlib_devel_400g.toolflow import mkfpg

    text = (example.build_dir / "fpg_header.txt").read_bytes()
    header = parse_fpg_header(text, "fpg_header.txt")
    [gbe] = find_gbes(header)
    assert (gbe.name, gbe.address, gbe.size) == ("gbe0", 0xA4000000, 0x10000)
    assert gbe.meta["fab_ip"] == "10.0.0.10"
    image = tmp_path / "top.pdi"
    image.write_bytes(b"PDI" + bytes(range(256)) * 4)
    fpg = mkfpg(example.build_dir, image, progress=None)
    assert read_bitstream(fpg) == image.read_bytes()
    assert gzip.decompress(fpg.read_bytes()[len(text) :]) == image.read_bytes()


def test_cli_platform_and_backend_pack_the_pdi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`build --platform vpk180` with a stand-in `vivado` that checks the .pdi and .xsa
    steps and leaves a device image: the .fpg carries it."""
    from mlib_devel_400g.cli import main

    fake_vivado(
        tmp_path,
        monkeypatch,
        "grep -q '^write_device_image -force $impl_dir/top.pdi$' build.tcl || exit 4\n"
        "grep -q '^write_hw_platform -fixed -include_bit -force $xsa_file$' build.tcl "
        "|| exit 5\n"
        "grep -q '^create_bd_design $jbd_name$' build.tcl || exit 6\n"
        "grep -q '^file copy -force \\[file join $impl_dir top.pdi\\] $bin_file$' build.tcl "
        "|| exit 7\n"
        "printf 'VERSAL-PDI' > top.pdi\n"
        "cp top.pdi top.bin\n",
    )
    out = tmp_path / "b"
    assert main(["build", str(EXAMPLE), "--platform", "vpk180", "-o", str(out)]) == 0
    assert "platform vpk180 (xcvp1802-lsvc4072-2MP-e-S)" in capsys.readouterr().out
    [fpg] = out.glob("pktgen_400g_*.fpg")
    assert read_bitstream(fpg) == b"VERSAL-PDI"
    assert [(g.name, g.address) for g in find_gbes(parse_fpg(fpg))] == [("gbe0", 0xA4000000)]
    per = tmp_path / "b" / "jasper.per"
    assert main(["build", str(per), "--platform", "vpk180"]) == 1
    assert "--platform applies to a design YAML" in capsys.readouterr().err


# ----------------------------------------------------------------- overrides and errors
def test_platform_options_override_unconfirmed_values(tmp_path: Path) -> None:
    opts = {
        "axil_clk_mhz": 125.0,
        "fourhundred_gbe": {
            "cages": {
                0: {
                    "dcmac_location": "DCMAC_X0Y1",
                    "lane_map": [[1, 2], [1, 0], [0, 2], [0, 0]],
                    "quad_sites": ["GTM_QUAD_X0Y3", "GTM_QUAD_X0Y4"],
                }
            }
        },
    }
    res = build(_design(tmp_path, platform_options=opts), tmp_path / "b", platform=None)
    top = res.top_v.read_text()
    assert "fhg_dcmac_vpk180 #(\n        .AXIL_CLK_HZ(125000000)" in top
    core = re.search(r"fhg_core #\((.*?)\) pktgen_400g_gbe0_core", top, re.S)
    assert core is not None and ".AXIL_CLK_HZ(125000000)" in core.group(1)
    tcl = (res.build_dir / "vivado" / "build.tcl").read_text()
    rec = run_stub(
        ["set jbd_name vpk180_bd", *stage(tcl, "init"), *stage(tcl, "create_bd")], tmp_path
    )
    d = BD0
    assert rec.config(d, f"cell:{vpk180_ip.DCMAC_CELL}")["DCMAC_LOCATION_C0"] == "DCMAC_X0Y1"
    assert (
        f"intf_pin:{vpk180_ip.DCMAC_CELL}/gtm_tx_serdes_interface_0",
        f"intf_pin:{vpk180_ip.QUAD_CELLS[1]}/TX2_GT_IP_Interface",
    ) in rec.intf_nets[d]
    wiz = rec.config(vpk180.BD_NAME, f"cell:{vpk180.CLK_WIZ_CELL}")
    assert wiz["CLKOUT_REQUESTED_OUT_FREQUENCY"] == "125,390.625,390.625,390.625,390.625"
    xdc = (res.build_dir / "top.xdc").read_text()
    assert "set_property LOC GTM_QUAD_X0Y4 [get_cells" in xdc
    # The override is recorded in jasper.per, so a rebuild from it is the same design.
    per = yaml.safe_load((res.build_dir / "jasper.per").read_text())
    xsg = per["yellow_blocks"]["pktgen_400g/XSG"]
    assert xsg["platform_options"]["axil_clk_mhz"] == 125.0
    again = Toolflow(res.build_dir / "jasper.per", tmp_path / "again", progress=None).run("none")
    assert again.top_v.read_text() == top
    assert (tmp_path / "again" / "top.xdc").read_text() == xdc


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        ({"axil_clk_mhx": 100}, r"platform_options\.axil_clk_mhx: no such platform key"),
        (
            {"fourhundred_gbe": {"cages": {0: {"lane_mapp": []}}}},
            r"platform_options\.fourhundred_gbe\.cages\.0\.lane_mapp: no such platform key",
        ),
        ({"ddr": True}, "ddr: true is not supported yet"),
        ({"name": "other"}, "platform_options cannot change 'name'"),
        (
            {"fourhundred_gbe": {"cages": {0: {"lane_map": [[0, 0], [0, 0], [1, 0], [1, 2]]}}}},
            "cage 0: lane_map .* uses a GT channel twice",
        ),
        (
            {"fourhundred_gbe": {"cages": {0: {"refclk_pin": "nosuch"}}}},
            "refclk_pin names pin group 'nosuch'",
        ),
        (
            {"fourhundred_gbe": {"cages": {0: {"quad_sites": ["X0Y1", "X0Y2"]}}}},
            r"quad_sites\[0\] 'X0Y1' is not GTM_QUAD_X<n>Y<n>",
        ),
        ({"mmbus_address_window": 0x3000000}, "must be a power of two"),
    ],
)
def test_bad_platform_values_are_named(tmp_path: Path, opts: dict, message: str) -> None:
    with pytest.raises((DesignError, ToolflowError), match=message):
        build(_design(tmp_path, platform_options=opts), tmp_path / "b", platform=None)


def _two_blocks(tmp_path: Path, port1: int, **cage1: object) -> Path:
    doc = yaml.safe_load(_design(tmp_path).read_text())
    doc["blocks"]["gbe1"] = {"type": "fourhundred_gbe", "port": port1, "fab_ip": "10.0.1.10"}
    if cage1:
        doc["platform_options"] = {"fourhundred_gbe": {"cages": {port1: cage1}}}
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_every_cage_is_provided_and_claimed_once(tmp_path: Path) -> None:
    """The platform block provides each cage, DCMAC site, quad site and refclk pin group
    once; each block requires its own cage's exclusively."""
    plat = yaml.safe_load(PLATFORM_YAML.read_text())
    cages = plat["fourhundred_gbe"]["cages"]
    assert plat["provides"] == [f"qsfpdd{c}" for c in cages]
    res = build(_two_blocks(tmp_path, 2), tmp_path / "b", platform=None)
    [platform] = [b for b in res.blocks if b.tag == "xps:vpk180"]
    provided = platform.provides
    for cage, values in cages.items():
        for r in vpk180_ip.cage_resources(cage, values):
            assert provided.count(r) == 1, r
    gbes = {b.name: b for b in res.blocks if b.tag == "xps:fourhundred_gbe"}
    assert gbes["gbe0"].exc_requires == ["qsfpdd0", "gt_refclk:qsfpdd0_refclk0_p"]
    assert gbes["gbe1"].exc_requires == [
        "qsfpdd2",
        "dcmac:DCMAC_X1Y5",
        "gtm_quad:GTM_QUAD_X1Y19",
        "gtm_quad:GTM_QUAD_X1Y20",
    ]


@pytest.mark.parametrize(
    ("port1", "cage1", "message"),
    [
        (0, {}, r"qsfpdd0 is used by both pktgen_400g/gbe0 and pktgen_400g/gbe1"),
        (
            1,
            {"dcmac_location": "DCMAC_X1Y5"},
            r"dcmac:DCMAC_X1Y5 is used by both pktgen_400g/gbe0 and pktgen_400g/gbe1",
        ),
        (
            1,
            {"refclk_pin": "qsfpdd0_refclk0_p"},
            r"gt_refclk:qsfpdd0_refclk0_p is used by both pktgen_400g/gbe0 and "
            r"pktgen_400g/gbe1",
        ),
        (
            1,
            {"quad_sites": ["GTM_QUAD_X1Y20", "GTM_QUAD_X0Y20"]},
            r"gtm_quad:GTM_QUAD_X1Y20 is used by both",
        ),
        (3, {}, r"gbe1 .*port \(QSFP-DD cage\) 3 is not on platform vpk180; cages: 0, 1, 2"),
    ],
)
def test_shared_cage_resources_are_refused_by_name(
    tmp_path: Path, port1: int, cage1: dict, message: str
) -> None:
    path = _two_blocks(tmp_path, port1, **cage1)
    if cage1.get("dcmac_location") or cage1.get("quad_sites"):
        # gbe0 on cage 0 gets the site it then shares with gbe1 on cage 1.
        doc = yaml.safe_load(path.read_text())
        doc["platform_options"]["fourhundred_gbe"]["cages"][0] = {
            "dcmac_location": "DCMAC_X1Y5",
            "quad_sites": ["GTM_QUAD_X1Y20", "GTM_QUAD_X1Y21"],
        }
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises((ToolflowError, DesignError), match=message):
        build(path, tmp_path / "b", platform=None)


def test_two_port_design_has_a_dcmac_per_block(tmp_path: Path) -> None:
    """examples/pktgen2x400g on the VPK180: a DCMAC block design per block (named after its
    cage), each with its cage's site and quads, each joined to its own core and link
    control; the script's init stage runs under tclsh; top.v lints."""
    res = build(TWO_PORT, tmp_path / "b")
    tcl = (res.build_dir / "vivado" / "build.tcl").read_text()
    rec = run_stub(
        ["set jbd_name vpk180_bd", *stage(tcl, "init"), *stage(tcl, "create_bd")], tmp_path
    )
    bd0, bd1 = vpk180_dcmac.bd_name(0), vpk180_dcmac.bd_name(1)
    assert sorted(rec.designs) == sorted([vpk180.BD_NAME, bd0, bd1])
    dc0 = rec.config(bd0, f"cell:{vpk180_ip.DCMAC_CELL}")
    dc1 = rec.config(bd1, f"cell:{vpk180_ip.DCMAC_CELL}")
    assert "DCMAC_LOCATION_C0" not in dc0 and dc1["DCMAC_LOCATION_C0"] == "DCMAC_X0Y6"
    for d in (bd0, bd1):
        assert set(rec.cells[d]) == set(rec.cells[bd0])  # the same design, once per cage
    added = [" ".join(args) for c, args in rec.cmds if c == "add_files"]
    for d in (bd0, bd1):
        assert f"-norecurse /project/wrappers/{d}_wrapper.v" in added
    top = res.top_v.read_text()
    for k, d in ((0, bd0), (1, bd1)):
        link = _instance(top, "fhg_dcmac_vpk180", f"pktgen2x400g_gbe{k}_dcmac")
        bd = _instance(top, f"{d}_wrapper", f"pktgen2x400g_gbe{k}_dcmac_bd")
        core = _instance(top, "fhg_core", f"pktgen2x400g_gbe{k}_core")
        clk = f"pktgen2x400g_gbe{k}_mac_clk"
        assert core["tx_mac_clk"] == link["mac_clk"] == bd["axis_clk"] == clk
        assert core["tx_axis_tdata0"] == bd["tx_axis_tdata0"]
        assert link["s_axi_wdata"] == bd["s_axi_wdata"] == f"pktgen2x400g_gbe{k}_bd_s_axi_wdata"
        assert bd["gt_refclk_clk_p"] == f"fhg{k}_gt_refclk_p"
    xdc = (res.build_dir / "top.xdc").read_text()
    assert "set_property PACKAGE_PIN J40 [get_ports {fhg0_gt_refclk_p}]" in xdc
    for q, site in enumerate(("GTM_QUAD_X0Y19", "GTM_QUAD_X0Y20")):
        assert (
            f"set_property LOC {site} [get_cells -hierarchical -filter "
            f'{{NAME =~ "pktgen2x400g_gbe1_dcmac_bd/*/gtm_quad_{q}/*" && REF_NAME =~ "GTM_QUAD*"}}]'
        ) in xdc
    assert "fhg1_gt_refclk" in xdc and "PACKAGE_PIN" not in xdc.split("fhg1_gt_refclk", 1)[1]
    proc = lint(res.build_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "%Warning" not in proc.stderr, proc.stderr
    header = parse_fpg_header((res.build_dir / "fpg_header.txt").read_bytes(), "fpg_header.txt")
    assert [(g.name, g.meta["fab_ip"]) for g in find_gbes(header)] == [
        ("gbe0", "10.0.0.10"),
        ("gbe1", "10.0.1.10"),
    ]


def test_every_cage_value_has_its_provenance() -> None:
    """Each value of each cage is marked CONFIRMED (with its source) or UNCONFIRMED;
    docs/hardware.md lists every UNCONFIRMED one."""
    plat = yaml.safe_load(PLATFORM_YAML.read_text())
    hardware = (checkout.ROOT / "docs" / "hardware.md").read_text()
    for cage, values in plat["fourhundred_gbe"]["cages"].items():
        prov = values["provenance"]
        assert set(prov) == set(values) - {"provenance"}, cage
        for key, text in prov.items():
            assert re.match(r"(CONFIRMED|UNCONFIRMED): \S|GTM_QUAD_\w+ .*CONFIRMED", text), (
                cage,
                key,
            )
            if "UNCONFIRMED" in text:
                assert f"| {cage} | `{key}` |" in hardware, (cage, key)


def test_clk_src_must_be_the_block_designs_clock(tmp_path: Path) -> None:
    """The XSG block drives user_clk from the platform's clk_src: a source the block design
    does not make would leave user_clk undriven, so it is refused by name."""
    doc = yaml.safe_load(_design(tmp_path).read_text())
    doc["platform_options"] = {"clk_src": "user_clk"}
    path = tmp_path / "src.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ToolflowError, match="clk_src 'user_clk' is not the clock its block"):
        build(path, tmp_path / "b", platform=None)
