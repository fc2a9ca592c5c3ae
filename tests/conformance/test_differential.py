"""`casper400g build` (the stand-in runtime) against mlib_devel's own middleware on the same
jasper.per (the example design on the VPK180, and the two-port example with a DCMAC per
block): the same devices at the same addresses, the
same top-level ports, the same instances of the overlay's modules wired the same way, the
same constraints and core_info.tab.

Where the two runtimes differ by design, each uses its own implementation of the same
thing: the bus decoder and register logic (mlib_devel: xml2vhdl's VHDL, ``cdc_synchroniser``
and its ``sys_block_counter``; the stand-in: ``fhg_axil_interconnect``, ``fhg_sw_reg`` and
``fhg_sys_block``). Those instances, and the wires only they use, are compared by what
software sees (addresses, sizes, modes), not by their wiring.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.fpg import find_gbes, parse_fpg, read_bitstream

from .conftest import STANDIN_IMAGE, MlibRun
from .hdl_text import Top, parse_top


@pytest.fixture(params=["mlib_run", "mlib_run_2port"])
def run(request: pytest.FixtureRequest) -> MlibRun:
    """Each design, one after the other (the runs are the session's)."""
    return request.getfixturevalue(request.param)


MLIB_OWN = {"axi4lite_ic_wrapper", "cdc_synchroniser", "sys_block_counter"}
STANDIN_OWN = {"fhg_axil_interconnect", "fhg_sw_reg", "fhg_sys_block"}


def _tops(run: MlibRun) -> tuple[Top, Top]:
    mlib = parse_top((run.build / "top.v").read_text())
    ours = parse_top(run.standin.top_v.read_text())
    return mlib, ours


def test_core_info_is_the_same(run: MlibRun) -> None:
    for name in ("core_info.tab", "core_info.jam.tab"):
        mine = (run.standin.build_dir / name).read_text()
        assert mine == (run.build / name).read_text(), name
    # The .fpg header's ?register lines are core_info.tab's rows (name, base, size), the
    # system block's sys_* registers included.
    header = parse_fpg(run.standin.fpg_header)
    rows = [line.split() for line in (run.build / "core_info.tab").read_text().splitlines()]
    assert {n: (int(b, 16), int(s, 16)) for n, _m, b, s in rows} == {
        n: (d.address, d.size) for n, d in header.devices.items()
    }
    assert {"sys_board_id", "sys_rev", "sys_rev_rcs", "sys_scratchpad", "sys_clkcounter"} <= set(
        header.devices
    )


def test_the_cores_registers_are_named_without_hardware(run: MlibRun) -> None:
    """mlib_devel lists each register of the core as a device (the 100GbE's gmac_reg_*
    names, the 400G additions under their own), while the bus it generates for the core is
    still the one raw device: the core's register block serves the names."""
    rows = [line.split() for line in (run.build / "core_info.tab").read_text().splitlines()]
    info = {n: (int(m), int(b, 16), int(s, 16)) for n, m, b, s in rows}
    gbes = [b.name for b in run.standin.blocks if b.tag == "xps:fourhundred_gbe"]
    bases = set()
    for gbe in gbes:
        base = info[gbe][1]
        bases.add(base)
        for d in regmap.DEVICES.values():
            mode = {"r": 1, "rw": 3}[d.mode]
            assert info[f"{gbe}_{d.name}"] == (mode, base + d.offset, d.nbytes), (gbe, d.name)
        assert f"{gbe}_gmac_reg_tx_packet_count" in info
        xml = ET.parse(run.build / "xml2vhdl_source" / f"{gbe}_memory_map.xml").getroot()
        assert [(n.get("id"), n.get("axi4lite_mode")) for n in xml] == [(gbe, "raw")]
    assert len(bases) == len(gbes)  # each core in its own window
    for top in (run.build / "top.v", run.standin.top_v):
        assert "gmac_reg" not in top.read_text()


def test_memory_map_is_the_same(run: MlibRun) -> None:
    """castro.yml's memory-mapped slaves (what mlib_devel's backend and software use)."""
    text = (run.build / "castro.yml").read_text()
    slaves = {
        m.group("name"): (int(m.group("base")), int(m.group("span")), int(m.group("mode")))
        for m in re.finditer(
            r"- !!python/object:castro\.mm_slave\n\s+base_address: (?P<base>\d+)\n"
            r"\s+high_address: \d+\n\s+mode: (?P<mode>\d)\n\s+name: (?P<name>\S+)\n"
            r"\s+span: (?P<span>\d+)",
            text,
        )
    }
    mine = {
        i.regname: (i.base, i.nbytes, {"rw": 3, "r": 1, "w": 2}[i.mode])
        for i in run.standin.interfaces
    }
    assert slaves and slaves == mine


def test_top_level_ports_are_the_same(run: MlibRun) -> None:
    mlib, ours = _tops(run)
    assert mlib.ports == ours.ports


def test_instances_and_their_wiring_are_the_same(run: MlibRun) -> None:
    mlib, ours = _tops(run)
    shared_m = {n: i for n, i in mlib.instances.items() if i.module not in MLIB_OWN}
    shared_o = {n: i for n, i in ours.instances.items() if i.module not in STANDIN_OWN}
    assert set(shared_m) == set(shared_o)
    for name, inst in shared_m.items():
        other = shared_o[name]
        assert (inst.module, inst.params) == (other.module, other.params), name
        assert inst.conns == other.conns, name
    # The runtime's own instances: one bus decoder each, one register per software
    # register, the system block's counter.
    assert sum(i.module == "axi4lite_ic_wrapper" for i in mlib.instances.values()) == 1
    assert sum(i.module == "fhg_axil_interconnect" for i in ours.instances.values()) == 1
    sw_m = {n for n, i in mlib.instances.items() if i.module == "cdc_synchroniser"}
    sw_o = {n for n, i in ours.instances.items() if i.module == "fhg_sw_reg"}
    assert sw_o == sw_m - {"sys_block_counter_cdc_inst"}


def test_assignments_are_the_same(run: MlibRun) -> None:
    """Clocks and resets (the bus decoder's own wiring and lint-only markers aside: the
    stand-in joins the platform's master to its decoder's AXI4-Lite pair, axil_ic_*)."""
    mlib, ours = _tops(run)

    def shared(top: Top) -> set[tuple[str, str]]:
        return {
            (lhs, rhs)
            for lhs, rhs in top.assigns
            if not lhs.startswith(("m_axi4lite_", "axil_ic_", "unused_"))
            and not rhs.startswith("axil_ic_")
        }

    assert shared(mlib) == shared(ours)
    assert ("user_clk", "sys_clk") in shared(ours)


def test_constraints_are_the_same(run: MlibRun) -> None:
    def lines(text: str) -> set[str]:
        return {ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")}

    mine = lines((run.standin.build_dir / "top.xdc").read_text())
    theirs = lines((run.build / "user_const.xdc").read_text())
    assert mine == theirs


def test_fpg_is_packed_the_same(run: MlibRun) -> None:
    """mlib_devel's --software step packs $bin_file (the .pdi the script copies there) with
    core_info.tab and design_info.tab: the same devices and metadata as our header."""
    [fpg] = (run.build / "outputs").glob(f"{run.model}_*.fpg")
    theirs = parse_fpg(fpg)
    ours = parse_fpg(run.standin.fpg_header)
    assert read_bitstream(fpg) == STANDIN_IMAGE
    assert {n: (d.address, d.size) for n, d in theirs.devices.items()} == {
        n: (d.address, d.size) for n, d in ours.devices.items()
    }
    # mlib_devel adds its checksums to the 77777 entry; every block's parameters are ours.
    assert {n: b.params for n, b in theirs.blocks.items() if n != "77777"} == {
        n: b.params for n, b in ours.blocks.items() if n != "77777"
    }
    gbes = sorted(b.name for b in run.standin.blocks if b.tag == "xps:fourhundred_gbe")
    assert [g.name for g in find_gbes(theirs)] == gbes == [g.name for g in find_gbes(ours)]
    assert len(gbes) == {"pktgen_400g": 1, "pktgen2x400g": 2}[run.model]
