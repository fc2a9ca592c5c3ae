"""The toolflow: the example design's build tree, its address map in every output, the
.fpg header through casperfpga_ext, design rule checks, the design frontend's errors, and
the mlib_devel overlay installer."""

from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from conftest import fake_vivado

from casper400g_dev import checkout
from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.fpg import find_gbes, parse_fpg, parse_fpg_header, read_bitstream
from casperfpga_ext.fpga import Fpga
from casperfpga_ext.transport import MmapTransport
from mlib_devel_400g import paths
from mlib_devel_400g.design import Design, DesignError
from mlib_devel_400g.mlib_install import TAG, InstallError, install
from mlib_devel_400g.toolflow import (
    BuildResult,
    Toolflow,
    ToolflowError,
    core_info_entries,
    jasper_imports,
    lint,
    mkfpg,
)

EXAMPLE = checkout.ROOT / "examples" / "pktgen_400g" / "design.yaml"
BASE = 0xA4000000
SW_REGS = [
    "pkt_ctrl",
    "pkt_period",
    "pkt_size",
    "pkt_count",
    "pkt_dest_ip",
    "pkt_dest_port",
    "pkt_mode",
    "tone_step",
    "tone_shape",
    "pkt_sent",
    "spead_ctrl",
    "spead_channel",
    "spead_ts_step",
    "dest_tbl_ip",
    "dest_tbl_port",
    "dest_tbl_count",
    "dest_tbl_ctrl",
    "dest_tbl_status",
    "dest_tbl_switch",
    "dest_tbl_sent",
]
TO_PROCESSOR = ("pkt_sent", "dest_tbl_status", "dest_tbl_switch", "dest_tbl_sent")


def build(design: Path, out: Path, platform_dirs: list[Path] | None = None) -> BuildResult:
    per = Design(design, platform_dirs).to_jasper_per(out)
    return Toolflow(per, out, platform_dirs, progress=None).run(backend="none")


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> BuildResult:
    return build(EXAMPLE, tmp_path_factory.mktemp("pktgen"))


# ----------------------------------------------------------------- the build tree
def test_build_tree(example: BuildResult):
    out = example.build_dir
    for name in (
        "jasper.per",
        "top.v",
        "top.xdc",
        "core_info.tab",
        "memory_map.json",
        "fpg_header.txt",
        "sources.txt",
        "vivado/build.tcl",
        "user/pktgen_400g.v",
    ):
        assert (out / name).is_file(), name
    per = yaml.safe_load((out / "jasper.per").read_text())
    gbe = per["yellow_blocks"]["pktgen_400g/gbe0"]
    assert (gbe["tag"], gbe["fullpath"], gbe["fab_ip"]) == (
        "xps:fourhundred_gbe",
        "pktgen_400g/gbe0",
        "10.0.0.10",
    )
    assert per["yellow_blocks"]["pktgen_400g/XSG"]["hw_sys"].startswith("generic400g:")
    ports = per["user_modules"]["pktgen_400g"]["ports"]
    assert "pktgen_400g_gbe0_tx_data" in ports and "pktgen_400g_pkt_sent_user_data_in" in ports
    tcl = (out / "vivado/build.tcl").read_text()
    stages = re.findall(r"^stage (\w+)", tcl, re.M)
    assert stages[:4] == ["init", "create_bd", "pre_synth", "synth"] and stages[-1] == "done"
    # mlib_devel's backend variables, which blocks' Tcl uses, are defined as in its script.
    for var in ("impl_dir", "bin_file", "bit_file", "xsa_file", "jbd_name"):
        assert re.search(rf"^set {var} ", tcl, re.M), var
    assert "write_device_image" in tcl  # a Versal part


def test_top_passes_verilator_lint_wall(example: BuildResult):
    proc = lint(example.build_dir)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "%Warning" not in proc.stderr


def test_top_wires_the_gbe_by_gateway_names(example: BuildResult):
    top = example.top_v.read_text()
    assert re.search(r"fhg_core #\(.*?\) pktgen_400g_gbe0_core \(", top, re.S)
    assert ".tx_data(pktgen_400g_gbe0_tx_data)" in top
    assert re.search(r"wire \[1023:0\] pktgen_400g_gbe0_tx_data;", top)
    # Mask parameters reach the start-up configuration as HDL parameters.
    assert ".FABRIC_IP(32'h0a00000a)" in top
    assert ".FABRIC_MAC(48'h02000a00000a)" in top
    assert ".FABRIC_PORT(16'h1bec)" in top
    assert f".REG_IP('h{regmap.REGISTERS['ip'].offset:x})" in top
    assert ".FABRIC_ENABLE_ON_START(1'b0)" in top
    # The external MAC attachment: the DCMAC client bus leaves the top level.
    assert "output wire [127:0] fhg0_tx_axis_tdata7" in top
    assert "input wire fhg0_tx_axis_tready_0" in top


# ----------------------------------------------------------------- addresses agree
def _core_info(path: Path) -> dict[str, tuple[int, int, int, int]]:
    """core_info.jam.tab: name, mode (1 r, 2 w, 3 rw), base, size, typecode."""
    out = {}
    for line in path.read_text().splitlines():
        name, rw, addr, size, typecode = line.split()
        out[name] = (int(rw), int(addr, 16), int(size, 16), int(typecode, 16))
    return out


SYS_REGS = {"board_id": 0x0, "rev": 0x4, "rev_rcs": 0xC, "scratchpad": 0x10, "clkcounter": 0x14}


def test_addresses_agree_everywhere(example: BuildResult):
    out = example.build_dir
    info = _core_info(out / "core_info.jam.tab")
    # core_info.tab is the same table without the typecode (mlib_devel's two files).
    plain = [line.split() for line in (out / "core_info.tab").read_text().splitlines()]
    assert {row[0]: (int(row[1]), int(row[2], 16), int(row[3], 16)) for row in plain} == {
        k: v[:3] for k, v in info.items()
    }
    header = parse_fpg(out / "fpg_header.txt")
    mm = {d["name"]: d for d in json.loads((out / "memory_map.json").read_text())}
    sys_aliases = {f"sys_{r}" for r in SYS_REGS}
    # The core's registers and regions, each a device of its own (docs/registers.md).
    gbe_names = {f"gbe0_{d.name}": d for d in regmap.DEVICES.values()}
    assert set(info) == set(header.devices) == set(mm) | sys_aliases | set(gbe_names)
    assert set(mm) == {"gbe0", "sys", *SW_REGS}
    for name, (rw, addr, size, typecode) in info.items():
        dev = header.devices[name]
        assert (dev.address, dev.size) == (addr, size)
        if name in mm:
            assert (addr, size) == (mm[name]["base"], mm[name]["size"])
        assert addr % size == 0 and addr >= BASE
        if name in gbe_names:
            d = gbe_names[name]
            assert (addr, size) == (BASE + d.offset, d.nbytes)
            assert (rw, typecode) == ({"r": 1, "rw": 3}[d.mode], 1)
            continue
        read_only = name in (*TO_PROCESSOR, "sys") or (
            name in sys_aliases and name != "sys_scratchpad"
        )
        assert rw == (1 if read_only else 3)
        is_sys = name == "sys" or name in sys_aliases
        assert typecode == (1 if name == "gbe0" else 3 if is_sys else 0)
    # The casperfpga-compatible registers under the 100GbE block's names.
    for reg, suffix in (
        ("tx_packet_counter", "gmac_reg_tx_packet_count"),
        ("ip", "gmac_reg_local_ip_address"),
        ("count_reset", "gmac_reg_count_reset"),
        ("tx_frames", "tx_frames"),
    ):
        r = regmap.REGISTERS[reg]
        assert info[f"gbe0_{suffix}"][1:3] == (BASE + r.offset, r.nbytes), reg
    # casperfpga's system registers at mlib_devel's offsets in the 32-byte sys device.
    for reg, offset in SYS_REGS.items():
        assert info[f"sys_{reg}"][1:3] == (info["sys"][1] + offset, 4)
    # Largest first from the platform base; the software registers share one region, one
    # word each in block order (mlib_devel's layout); no two devices overlap.
    assert info["gbe0"][1] == BASE and info["gbe0"][2] == regmap.BLOCK_SIZE
    sw = sorted(SW_REGS)
    assert [info[n][1] for n in sw] == [info[sw[0]][1] + 4 * k for k in range(len(sw))]
    spans = sorted((a, a + s) for n, (_rw, a, s, _t) in info.items() if n in mm)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    # Every register and region of the core under its device name, at base + its offset
    # in the generated Python map.
    regs = {r["name"]: r for r in mm["gbe0"]["registers"]}
    assert set(regs) == set(regmap.DEVICES)
    targets = {d.target: regs[d.name] for d in regmap.DEVICES.values()}
    assert set(targets) == set(regmap.REGISTERS) | set(regmap.REGIONS)
    for name, reg in regmap.REGISTERS.items():
        assert targets[name]["address"] == BASE + reg.offset
        assert targets[name]["nbytes"] == reg.nbytes
        assert targets[name]["mode"] == ("r" if reg.sw == "r" else "rw")
        assert targets[name]["default"] == reg.reset
        assert targets[name]["ram"] is False
    for name, region in regmap.REGIONS.items():
        got = targets[name]
        assert (got["address"], got["nbytes"]) == (BASE + region.offset, region.size)
        assert got["ram"] is True


def test_fpg_header_round_trips_through_casperfpga_ext(example: BuildResult, tmp_path: Path):
    out = example.build_dir
    text = (out / "fpg_header.txt").read_bytes()
    assert text.startswith(b"#!/bin/kcpfpg\n?uploadbin\n") and text.endswith(b"?quit\n")
    assert b"?register\tgbe0\t0xa4000000\t0x10000\n" in text
    assert b"?meta\tpkt_ctrl\txps:sw_reg\tio_dir\tFrom\\_Processor\n" in text
    header = parse_fpg_header(text, "fpg_header.txt")
    [gbe] = find_gbes(header)
    assert (gbe.name, gbe.address, gbe.size) == ("gbe0", BASE, regmap.BLOCK_SIZE)
    assert (gbe.meta["fab_ip"], gbe.meta["fab_mac"], gbe.meta["fab_udp"]) == (
        "10.0.0.10",
        "02:00:0a:00:00:0a",
        "7148",
    )
    # casperfpga builds a register's fields from these (Register._process_info_current).
    assert header.blocks["pkt_ctrl"].params == {
        "io_dir": "From Processor",
        "init_val": "0",
        "mode": "one value",
        "names": "reg",
        "bitwidths": "32",
        "arith_types": "0",
        "bin_pts": "0",
    }
    # mkfpg packs header + gzipped image; casperfpga_ext reads both back.
    image = tmp_path / "top.pdi"
    image.write_bytes(bytes(range(256)) * 8)
    fpg = mkfpg(out, image, progress=None)
    assert read_bitstream(fpg) == image.read_bytes()
    assert gzip.decompress(fpg.read_bytes()[len(text) :]) == image.read_bytes()
    # The design's .fpg drives a board: a file standing in for the bus at the base.
    bus = tmp_path / "bus.bin"
    span = max(d.address + d.size for d in header.devices.values()) - BASE
    bus.write_bytes(bytes(span))
    devs = {d.name: (d.address - BASE, d.size) for d in header.devices.values()}
    with MmapTransport(bus, devs) as t:
        fpga = Fpga(t, fpg)
        assert list(fpga.gbes) == ["gbe0"]
        core = fpga.gbes.gbe0
        core.configure_core(gbe.meta["fab_mac"], gbe.meta["fab_ip"], 7148)
        raw = bus.read_bytes()
        ip_at = regmap.REGISTERS["ip"].offset
        assert int.from_bytes(raw[ip_at : ip_at + 4], "little") == 0x0A00000A
        fpga.write_int("pkt_size", 4096)
        at = devs["pkt_size"][0]
        assert int.from_bytes(bus.read_bytes()[at : at + 4], "little") == 4096


# ----------------------------------------------------------------- design rule checks
def _design(tmp_path: Path, edit: dict | None = None, blocks: dict | None = None) -> Path:
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["user_module"]["sources"] = [str(EXAMPLE.parent / f) for f in doc["user_module"]["sources"]]
    if blocks:
        doc["blocks"].update(blocks)
    for key, value in (edit or {}).items():
        node = doc
        *path, last = key.split(".")
        for p in path:
            node = node[p]
        node[last] = value
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("edit", "blocks", "message"),
    [
        (
            {"platform": "no_such_board"},
            None,
            r"unknown platform 'no_such_board' \(known: .*generic400g",
        ),
        (
            {"blocks.gbe0.port": 7},
            None,
            r"gbe0 .*port \(QSFP-DD cage\) 7 is not on platform generic400g; cages: 0, 1",
        ),
        (
            {"blocks.gbe0.fab_mac": "02:00:0a:00:0a"},
            None,
            r"fab_mac '02:00:0a:00:0a' is not a MAC address",
        ),
        (
            {"blocks.gbe0.fab_mac": "03:00:00:00:00:01"},
            None,
            r"fab_mac '03:00:00:00:00:01' is a multicast address",
        ),
        ({"blocks.gbe0.fab_ip": "10.0.0.256"}, None, r"fab_ip '10.0.0.256' is not an IPv4 address"),
        (
            {"blocks.gbe0.fab_ip": "224.0.0.5"},
            None,
            r"fab_ip '224.0.0.5' cannot be a host's own address",
        ),
        ({"blocks.gbe0.fab_udp": 70000}, None, r"fab_udp 70000 is outside 1..65535"),
        (
            {"blocks.gbe0.fab_netmask": "255.0.255.0"},
            None,
            r"fab_netmask '255.0.255.0' is not a contiguous mask",
        ),
        (
            {"clock_mhz": 250.0},
            None,
            r"user clock 250 MHz is too slow for 400 Gb/s at 1024 bits per cycle "
            r"\(needs at least 390.625 MHz\)",
        ),
        (
            {
                "blocks.pkt_ctrl.names": "[a b]",
                "blocks.pkt_ctrl.mode": "fields of equal size",
                "blocks.pkt_ctrl.bitwidths": 17,
            },
            None,
            r"fields '\[a b\]' need 34 bits, more than 32",
        ),
        (
            {"blocks.pkt_ctrl.io_dir": "Sideways"},
            None,
            r"pkt_ctrl .*io_dir 'Sideways' is not one of",
        ),
    ],
)
def test_drc_messages(tmp_path: Path, edit: dict, blocks: dict | None, message: str):
    with pytest.raises(ToolflowError, match=message):
        build(_design(tmp_path, edit, blocks), tmp_path / "out")


def test_cage_used_twice(tmp_path: Path):
    per = Design(_design(tmp_path)).to_jasper_per(tmp_path / "out")
    doc = yaml.safe_load(per.read_text())
    second = dict(
        doc["yellow_blocks"]["pktgen_400g/gbe0"], name="gbe1", fullpath="pktgen_400g/gbe1"
    )
    doc["yellow_blocks"]["pktgen_400g/gbe1"] = second
    per.write_text(yaml.safe_dump(doc))
    with pytest.raises(
        ToolflowError,
        match=r"qsfpdd0 is used by both pktgen_400g/gbe0 and pktgen_400g/gbe1",
    ):
        Toolflow(per, tmp_path / "out", progress=None).run(backend="none")


def test_typo_key_says_which_and_where(tmp_path: Path):
    path = _design(tmp_path)
    text = path.read_text().replace("fab_udp:", "fab_upd:")
    path.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "fab_upd:" in t)
    with pytest.raises(
        DesignError,
        match=rf"design\.yaml:{line}: blocks\.gbe0: unknown key 'fab_upd' "
        r"\(did you mean 'fab_udp'\?\)",
    ):
        Design(path).to_jasper_per(tmp_path / "out")
    text = text.replace("fab_upd:", "fab_udp:").replace("user_module:", "user_modul:")
    path.write_text(text)
    with pytest.raises(
        DesignError, match=r"unknown key 'user_modul' \(did you mean 'user_module'\?\)"
    ):
        Design(path)


def test_unknown_gateway_in_user_ports(tmp_path: Path):
    path = _design(tmp_path, {"user_module.ports.tx_data": "gbe0/tx_dta"})
    with pytest.raises(
        DesignError, match=r"block gbe0 has no port 'tx_dta' \(did you mean 'tx_data'\?\)"
    ):
        Design(path).to_jasper_per(tmp_path / "out")
    path = _design(tmp_path, {"user_module.ports.tx_data": "gbe9/tx_data"})
    with pytest.raises(DesignError, match=r"no block 'gbe9'"):
        Design(path).to_jasper_per(tmp_path / "out")


def test_address_packing_is_power_of_two_largest_first():
    jasper_imports()
    from verilog import VerilogError, VerilogModule

    top = VerilogModule("top")
    for name, size in (("a", 4), ("b", 0x3000), ("c", 0x100), ("d", 0x10000), ("e", 8)):
        top.add_axi4lite_interface(name, nbytes=size)
    ifaces = {i.regname: i for i in top.assign_addresses(0x1000_0100)}
    assert ifaces["d"].base == 0x1001_0000 and ifaces["d"].size == 0x10000
    assert ifaces["b"].size == 0x4000 and ifaces["b"].base == 0x1002_0000
    assert [ifaces[n].base for n in "cea"] == [0x1002_4000, 0x1002_4100, 0x1002_4108]
    with pytest.raises(VerilogError, match=r"need 0x[0-9a-f]+ bytes, more than the platform"):
        top.assign_addresses(0x1000_0000, window=0x10000)
    with pytest.raises(VerilogError, match=r"two memory-mapped devices are called 'a'"):
        top.add_axi4lite_interface("a")


def test_core_info_lists_the_maps_devices_hold_after_the_bus_took_its_own():
    """mlib_devel's rule: the bus takes the map of a raw, software-register or RAM device
    (which then is one entry), a register-level device keeps its map, and what a block
    puts in a map afterwards (finalize_top) is listed as <device>_<register>."""
    jasper_imports()
    from memory import Register
    from verilog import VerilogModule

    top = VerilogModule("top")
    raw = top.add_axi4lite_interface(
        "core", nbytes=0x100, memory_map=[Register("core", nbytes=0x100, axi4lite_mode="raw")]
    )
    top.add_axi4lite_interface(
        "regs", nbytes=8, memory_map=[Register("a"), Register("b", offset=4, mode="rw")],
        axi4lite_mode="",
    )  # fmt: skip
    top.add_axi4lite_interface("swr", nbytes=4, memory_map=[Register("swr")], typecode=0)
    top.hand_maps_to_bus()
    assert [r.name for r in raw.bus_map] == ["core"] and raw.memory_map == []
    raw.memory_map = [Register("x", offset=0x10), Register("wide", nbytes=8, offset=0x20)]
    entries = core_info_entries(top.assign_addresses(0x1000))
    assert [(n, m, b, s) for n, m, b, s, _t, _a in entries] == [
        ("core", 3, 0x1000, 0x100),
        ("core_x", 1, 0x1010, 4),
        ("core_wide", 1, 0x1020, 8),
        ("regs", 3, 0x1100, 8),
        ("regs_a", 1, 0x1100, 4),
        ("regs_b", 3, 0x1104, 4),
        ("swr", 3, 0x1108, 4),
    ]
    # A device whose name is another's register name.
    top.add_axi4lite_interface("core_x", nbytes=4, axi4lite_mode="")
    with pytest.raises(ToolflowError, match=r"two memory-mapped devices are called core_x"):
        core_info_entries(top.assign_addresses(0x1000))
    raw.memory_map = [Register("late", nbytes=8, offset=0xFC)]
    with pytest.raises(ToolflowError, match=r"core: register late at 0xfc\+0x8 lies outside"):
        core_info_entries(top.assign_addresses(0x1000))


@contextlib.contextmanager
def _extra_blocks(tmp_path: Path, modules: dict[str, str]):
    """Yellow-block modules in a scratch directory on the yellow_blocks package path."""
    jasper_imports()
    import yellow_blocks

    where = tmp_path / "extra_blocks"
    where.mkdir(parents=True)
    for name, text in modules.items():
        (where / f"{name}.py").write_text(text)
    yellow_blocks.__path__.append(str(where))
    try:
        yield
    finally:
        yellow_blocks.__path__.remove(str(where))
        for name in modules:
            sys.modules.pop(f"yellow_blocks.{name}", None)


FACTORY_BLOCK = """
from .yellow_block import YellowBlock


class probe_tcl(YellowBlock):
    @staticmethod
    def factory(blk, plat, hdl_root=None):
        return probe_tcl_versal(blk, plat, hdl_root) if plat.family == "versal" else None


class probe_tcl_versal(probe_tcl):
    def gen_tcl_cmds(self):
        return {"pre_synth": ["puts {probe pre_synth}"], STAGE: ["puts {probe post}"]}
"""


def test_factory_blocks_and_tcl_stages(tmp_path: Path):
    per = Design(_design(tmp_path)).to_jasper_per(tmp_path / "out")
    doc = yaml.safe_load(per.read_text())
    doc["yellow_blocks"]["pktgen_400g/probe"] = {
        "name": "probe",
        "fullpath": "pktgen_400g/probe",
        "tag": "xps:probe_tcl",
    }
    per.write_text(yaml.safe_dump(doc))
    with _extra_blocks(tmp_path, {"probe_tcl": FACTORY_BLOCK.replace("STAGE", '"post_impl"')}):
        res = Toolflow(per, tmp_path / "out", progress=None).run(backend="none")
    probe = next(b for b in res.blocks if b.tag == "xps:probe_tcl")
    assert type(probe).__name__ == "probe_tcl_versal"  # the factory's pick
    tcl = res.script.read_text().splitlines()
    assert tcl[tcl.index("stage pre_synth") + 1] == "puts {probe pre_synth}"
    assert tcl[tcl.index("stage post_impl") + 1] == "puts {probe post}"
    with (
        _extra_blocks(tmp_path / "b", {"probe_tcl": FACTORY_BLOCK.replace("STAGE", '"late"')}),
        pytest.raises(ToolflowError, match=r"pktgen_400g/probe: Tcl stage 'late' is not one of"),
    ):
        Toolflow(per, tmp_path / "out", progress=None).run(backend="none")
    doc["yellow_blocks"]["pktgen_400g/probe"]["tag"] = "xps:no_such_block"
    per.write_text(yaml.safe_dump(doc))
    with pytest.raises(ToolflowError, match=r"no yellow block for tag 'xps:no_such_block'"):
        Toolflow(per, tmp_path / "out", progress=None).run(backend="none")


def test_cage_leds_from_platform_pins(tmp_path: Path):
    plat = yaml.safe_load((paths.JASPER_RUNTIME / "platforms/generic400g.yaml").read_text())
    plat["name"] = "testboard"
    plat["pins"] = {"led_up0": {"loc": ["AB12"], "iostd": "LVCMOS18"}}
    plat["fourhundred_gbe"]["cages"] = {0: {"leds": {"up": "led_up0"}}}
    pdir = tmp_path / "plats"
    pdir.mkdir()
    (pdir / "testboard.yaml").write_text(yaml.safe_dump(plat))
    design = _design(tmp_path, {"platform": "testboard"})
    # A platform needs its platform block: generic400g's under the new name, found on the
    # yellow_blocks package path as a board port's own file would be.
    src = (paths.JASPER_RUNTIME / "yellow_blocks" / "generic400g.py").read_text()
    with _extra_blocks(
        tmp_path, {"testboard": src.replace("class generic400g(", "class testboard(")}
    ):
        res = build(design, tmp_path / "out", [pdir])
    xdc = (res.build_dir / "top.xdc").read_text()
    assert "set_property PACKAGE_PIN AB12 [get_ports {fhg0_led_up}]" in xdc
    assert "set_property IOSTANDARD LVCMOS18 [get_ports {fhg0_led_up}]" in xdc
    assert "assign fhg0_led_up = pktgen_400g_gbe0_led_up;" in res.top_v.read_text()


# ----------------------------------------------------------------- mlib_devel overlay
DESIGN_INFO_M = """function gen_xps_add_design_info(sysname, mssge_paths, slash)
    tags = {'xps:bram', 'xps:sw_reg', 'xps:ten_gbe', 'xps:forty_gbe', 'xps:onehundred_gbe'};
end
"""


def _scratch_mlib(root: Path) -> Path:
    (root / "jasper_library/yellow_blocks").mkdir(parents=True)
    (root / "jasper_library/yellow_blocks/yellow_block.py").write_text("# mlib_devel\n")
    (root / "xps_library").mkdir()
    (root / "xps_library/gen_xps_add_design_info.m").write_text(DESIGN_INFO_M)
    return root


def test_installer_is_idempotent(tmp_path: Path):
    root = _scratch_mlib(tmp_path / "mlib_devel")
    planned = install(root, dry_run=True, say=None)
    assert not (root / "jasper_library/yellow_blocks/fourhundred_gbe.py").exists()
    first = install(root, say=None)
    assert first == planned
    assert "add jasper_library/yellow_blocks/fourhundred_gbe.py" in first
    assert "add jasper_library/hdl_sources/fourhundred_gbe/fhg_core.sv" in first
    assert "add jasper_library/yellow_blocks/fourhundred_gbe_regmap.py" in first
    m = (root / "xps_library/gen_xps_add_design_info.m").read_text()
    assert m.count(f"'{TAG}'") == 1
    assert "'xps:onehundred_gbe', 'xps:fourhundred_gbe'}" in m
    regmap_copy = root / "jasper_library/yellow_blocks/fourhundred_gbe_regmap.py"
    assert regmap_copy.read_text() == (paths.CASPERFPGA_EXT / "fhg_regmap.py").read_text()
    assert install(root, say=None) == []
    # A changed file is updated, and only that one.
    core = root / "jasper_library/hdl_sources/fourhundred_gbe/fhg_core.sv"
    core.write_text("stale")
    assert install(root, say=None) == [
        "update jasper_library/hdl_sources/fourhundred_gbe/fhg_core.sv"
    ]


def test_installer_refuses_other_directories(tmp_path: Path):
    with pytest.raises(
        InstallError,
        match=r"is not an mlib_devel checkout "
        r"\(missing jasper_library/yellow_blocks/yellow_block.py",
    ):
        install(tmp_path, say=None)
    root = _scratch_mlib(tmp_path / "m")
    (root / "xps_library/gen_xps_add_design_info.m").write_text("function x()\nend\n")
    with pytest.raises(InstallError, match=r"found no list of block tags"):
        install(root, say=None)


def test_installed_block_imports_with_mlib_devel_conventions(tmp_path: Path):
    """In the checkout the block takes the installed register-map copy, imports with
    mlib_devel's conventions (jasper_library on sys.path, blocks as a package) and builds
    its memory map there; the runtime modules stand in for mlib_devel's own."""
    import subprocess
    import sys

    root = _scratch_mlib(tmp_path / "mlib_devel")
    install(root, say=None)
    lib = root / "jasper_library"
    for name in ("memory.py", "constraints.py", "verilog.py", "hw_platform.py"):
        shutil.copy(paths.JASPER_RUNTIME / name, lib / name)
    for name in ("__init__.py", "yellow_block.py", "yellow_block_typecodes.py"):
        shutil.copy(paths.JASPER_RUNTIME / "yellow_blocks" / name, lib / "yellow_blocks" / name)
    code = (
        "import yellow_blocks.fourhundred_gbe as m\n"
        "assert m.regmap.__name__ == 'yellow_blocks.fourhundred_gbe_regmap', m.regmap\n"
        "print(m.fourhundred_gbe.PARAMETERS['fab_udp'], len(m.regmap.REGISTERS))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=lib,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(lib), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["10000", str(len(regmap.REGISTERS))]


def test_cli_build_shows_stages_and_takes_jasper_per(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from mlib_devel_400g.cli import main

    out = tmp_path / "b1"
    assert main(["build", str(EXAMPLE), "-o", str(out), "--backend", "none"]) == 0
    text = capsys.readouterr().out
    stages = [line.split("]")[0] + "]" for line in text.splitlines() if line.startswith("[")]
    assert stages == ["[design]", "[blocks]", "[top]", "[sw]", "[xdc]", "[backend]"]
    assert "ready to run: cd " in text and "casper400g mkfpg" in text
    # The jasper.per it wrote builds the same tree on its own (MATLAB's frontend's path).
    again = tmp_path / "b2"
    assert main(["build", str(out / "jasper.per"), "-o", str(again), "--backend", "none"]) == 0
    capsys.readouterr()
    for name in ("top.v", "core_info.tab", "fpg_header.txt", "top.xdc"):
        assert (again / name).read_bytes() == (out / name).read_bytes(), name
    # Without Vivado, asking for it is an error that says so; mkfpg needs an image.
    if shutil.which("vivado") is None:
        assert main(["build", str(EXAMPLE), "-o", str(out), "--backend", "vivado"]) == 1
        assert "no `vivado` on PATH" in capsys.readouterr().err
    assert main(["mkfpg", str(out)]) == 1
    assert "no top.bin, top.pdi or top.bit" in capsys.readouterr().err
    assert main(["build", str(tmp_path / "nope.yaml")]) == 1
    assert "no such design file" in capsys.readouterr().err


def test_backend_runs_vivado_and_packs_the_fpg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """The orchestration around Vivado (not Vivado itself): a stand-in `vivado` on PATH
    checks it was handed build.tcl, reports its stages and leaves a device image."""
    from mlib_devel_400g.cli import main

    fake = fake_vivado(
        tmp_path,
        monkeypatch,
        '[ "$1 $2 $3 $4 $5" = "-mode batch -nojournal -source build.tcl" ] || exit 3\n'
        "grep -q '^write_device_image -force $impl_dir/top.pdi$' build.tcl || exit 4\n"
        "for s in $(sed -n 's/^stage //p' build.tcl); do echo \"casper400g-stage: $s\"; done\n"
        "printf 'PDI-IMAGE' > top.pdi\n",
    )
    out = tmp_path / "b"
    assert main(["build", str(EXAMPLE), "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "          init\n" in text and "          done\n" in text
    [fpg] = out.glob("pktgen_400g_*.fpg")
    assert read_bitstream(fpg) == b"PDI-IMAGE"
    assert [g.name for g in find_gbes(parse_fpg(fpg))] == ["gbe0"]
    fake.write_text("#!/bin/sh\nexit 1\n")
    assert main(["build", str(EXAMPLE), "-o", str(out)]) == 1
    assert "Vivado failed; see" in capsys.readouterr().err
