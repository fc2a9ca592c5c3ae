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
STUB = Path(__file__).with_name("tcl") / "vivado_bd_stub.tcl"
PLATFORM_YAML = paths.JASPER_LIBRARY / "platforms" / "vpk180.yaml"

jasper_imports()
from yellow_blocks import vpk180, vpk180_ip  # noqa: E402  (jasper's import convention)


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
    assert sorted(init.designs) == sorted([vpk180.BD_NAME, vpk180_ip.BD_NAME])
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
    d = vpk180_ip.BD_NAME
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
        f"lint/stubs/{vpk180_ip.BD_NAME}_wrapper.v",
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


def test_top_joins_the_dcmac_wrapper_to_the_core(example: BuildResult) -> None:
    top = (example.build_dir / "top.v").read_text()
    cips = re.search(r"vpk180_bd vpk180_bd_inst \((.*?)\);", top, re.S)
    assert cips is not None
    for sig in ("awaddr", "rdata", "bresp"):
        assert f".M_AXI_{sig}(M_AXI_{sig})" in cips.group(1)
    assert ".axil_clk(axil_clk)" in cips.group(1) and ".sys_clk(sys_clk)" in cips.group(1)
    # The XSG block's clock source is the platform's sys_clk: user_clk is driven from it.
    assert "assign user_clk = sys_clk;" in top
    m = re.search(
        r"fhg_dcmac_vpk180 #\(\s*\.AXIL_CLK_HZ\(100000000\)\s*\) (\w+) \((.*?)\);", top, re.S
    )
    assert m is not None and m.group(1) == "pktgen_400g_gbe0_dcmac"
    mac = dict(re.findall(r"\.(\w+)\(([^()]*)\)", m.group(2)))
    core_m = re.search(r"fhg_core #\(.*?\) pktgen_400g_gbe0_core \((.*?)\);", top, re.S)
    assert core_m is not None
    core = dict(re.findall(r"\.(\w+)\(([^()]*)\)", core_m.group(1)))
    jasper_imports()
    from yellow_blocks.fourhundred_gbe_hdl import module_ports

    core_ports = module_ports(paths.FHG_HDL / "fhg_core.sv", "fhg_core")
    link = [p for p in core_ports if p.startswith("link_")] + ["gt_powergood"]
    assert len(link) == 16
    for p in link + [p for p in core_ports if re.match(r"(tx|rx)_axis_", p)]:
        assert core[p] == mac[p], p  # the same wire on both
    for core_port, mac_port in (
        ("tx_mac_clk", "mac_clk"),
        ("rx_mac_clk", "mac_clk"),
        ("tx_mac_rst", "mac_rst"),
        ("rx_mac_rst", "mac_rst"),
        ("mac_link_up", "link_up"),
    ):
        assert core[core_port] == mac[mac_port], core_port
    assert mac["gt_refclk_p"] == "fhg0_gt_refclk_p" and mac["gtm_q1_tx_n"] == "fhg0_gtm_q1_tx_n"
    assert mac["axil_clk"] == core["axil_clk"] == "axil_clk"


def test_top_lints_with_the_block_designs_black_boxed(example: BuildResult) -> None:
    proc = lint(example.build_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "%Warning" not in proc.stderr, proc.stderr


def test_lint_needs_the_black_boxes(example: BuildResult, tmp_path: Path) -> None:
    copy = tmp_path / "b"
    shutil.copytree(example.build_dir, copy)
    (copy / "lint" / "stubs" / f"{vpk180_ip.BD_NAME}_wrapper.v").unlink()
    proc = lint(copy)
    assert proc.returncode != 0 and f"{vpk180_ip.BD_NAME}_wrapper" in proc.stderr


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
    d = vpk180_ip.BD_NAME
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


def test_one_dcmac_per_design(tmp_path: Path) -> None:
    doc = yaml.safe_load(_design(tmp_path).read_text())
    doc["blocks"]["gbe1"] = {"type": "fourhundred_gbe", "port": 1, "fab_ip": "10.0.0.11"}
    opts = {"fourhundred_gbe": {"cages": {1: {"refclk_mhz": 156.25}}}}
    plat = yaml.safe_load(PLATFORM_YAML.read_text())
    opts["provides"] = [*plat["provides"], "qsfpdd1"]
    doc["platform_options"] = opts
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ToolflowError, match="a second 400GbE block on the VPK180"):
        build(path, tmp_path / "b", platform=None)


def test_clk_src_must_be_the_block_designs_clock(tmp_path: Path) -> None:
    """The XSG block drives user_clk from the platform's clk_src: a source the block design
    does not make would leave user_clk undriven, so it is refused by name."""
    doc = yaml.safe_load(_design(tmp_path).read_text())
    doc["platform_options"] = {"clk_src": "user_clk"}
    path = tmp_path / "src.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    with pytest.raises(ToolflowError, match="clk_src 'user_clk' is not the clock its block"):
        build(path, tmp_path / "b", platform=None)
