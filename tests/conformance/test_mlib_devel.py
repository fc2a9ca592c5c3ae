"""The overlay inside the real mlib_devel: installed unchanged into a scratch checkout, run
by mlib_devel's own middleware and Vivado backend under Python 3.8 for the VPK180
(conftest.py), with the generated top linted by Verilator (Vivado IP as black boxes)."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conftest import reference_tree

from casper400g_dev import sim
from mlib_devel_400g import mlib_install
from mlib_devel_400g.toolflow import CORE_LINT_WAIVERS

from .conftest import CIT2CSL_STANDIN, MlibRun, mlib_python
from .hdl_text import parse_top, vhdl_blackbox

PHASES = ("", "90", "180", "270")


def _stub_log(run: MlibRun) -> list[list[str]]:
    return [line.split("\t") for line in run.vivado_log.read_text().splitlines()]


def test_only_the_overlay_is_added_to_mlib_devel(mlib_run: MlibRun) -> None:
    """No patch to mlib_devel: every file of the reference tree is unchanged except the
    design-info tag list the installer edits; what is new is exactly the overlay (and the
    empty stand-in for the script the snapshot omits or holds only as its link's path)."""
    ref = reference_tree("mlib_devel")
    plan = mlib_install._plan(mlib_run.checkout)
    overlay = {dst.relative_to(mlib_run.checkout) for _s, dst in plan}
    changed, added = mlib_run.changed, mlib_run.added
    stand_in = Path("jasper_library/cit2csl.py")
    assert [p for p in changed if p != stand_in] == [Path(mlib_install.DESIGN_INFO)]
    extra = set(added) - overlay
    assert extra <= {stand_in}
    if extra or stand_in in changed:
        assert (mlib_run.checkout / stand_in).read_text() == CIT2CSL_STANDIN
    # The overlay's files replace none of mlib_devel's own.
    assert not {rel for rel in overlay if (ref / rel).exists()} - {Path(mlib_install.DESIGN_INFO)}


def test_middleware_and_backend_ran_to_vivado(mlib_run: MlibRun) -> None:
    b = mlib_run.build
    for name in ("top.v", "castro.yml", "core_info.tab", "user_const.xdc", "gogogo.tcl"):
        assert (b / name).is_file(), name
    assert "Traceback" not in mlib_run.log
    cmds = [rec[1] for rec in _stub_log(mlib_run) if rec[0] == "cmd"]
    # The whole script ran: synthesis, implementation and the image steps were reached.
    for step in ("launch_runs", "wait_on_run", "open_run", "write_hw_platform"):
        assert step in cmds, step


def test_top_drives_every_clock_once(mlib_run: MlibRun) -> None:
    top = parse_top((mlib_run.build / "top.v").read_text())
    assert all(lhs != rhs for lhs, rhs in top.assigns), "a signal is assigned to itself"
    drivers = Counter(lhs for lhs, _rhs in top.assigns)
    rhs = dict(top.assigns)
    bd = top.instances["vpk180_bd_inst"]
    assert bd.module == "vpk180_bd"
    for ph in PHASES:
        # The XSG block drives user_clk* from the platform's sys_clk*, once each; the block
        # design drives sys_clk*.
        assert drivers[f"user_clk{ph}"] == 1 and rhs[f"user_clk{ph}"] == f"sys_clk{ph}"
        assert bd.conns[f"sys_clk{ph}"] == f"sys_clk{ph}"
        assert f"sys_clk{ph}" not in drivers
    assert {f"M_AXI_{s}" for s in ("awaddr", "rdata", "bready")} <= set(bd.conns)
    for name in ("axil_clk", "axil_rst_n", "clk_locked"):
        assert bd.conns[name] == name
    # Mask parameters reached the HDL as numbers (normalised in initialize()).
    boot = top.instances["pktgen_400g_gbe0_boot"].params
    assert boot["FABRIC_MAC"] == "48'h02000a00000a" and boot["FABRIC_IP"] == "32'h0a00000a"
    assert top.instances["pktgen_400g_gbe0_core"].module == "fhg_core"
    assert top.instances["pktgen_400g_gbe0_dcmac"].module == "fhg_dcmac_vpk180"
    assert top.instances["pktgen_400g_gbe0_dcmac_bd"].module == "fhg_dcmac_bd_c0_wrapper"
    # The system block is mlib_devel's own, on the platform's user_rst.
    assert top.instances["sys_block_counter_inst"].conns["user_rst"] == "user_rst"


def test_backend_script_is_right_for_the_vpk180(mlib_run: MlibRun) -> None:
    designs: list[str] = []
    cells: dict[str, dict[str, str]] = defaultdict(dict)
    cmds: list[tuple[str, list[str]]] = []
    d = ""
    for rec in _stub_log(mlib_run):
        if rec[0] in ("design", "current"):
            d = rec[1]
            designs += [d] if rec[0] == "design" else []
        elif rec[0] == "cell":
            cells[d][rec[1]] = rec[2]
        elif rec[0] == "cmd":
            cmds.append((rec[1], rec[2:]))
    names = [c for c, _a in cmds]
    # No board part (the YAML has no `board`): mlib_devel would set the board's name as one.
    assert "board_part" not in " ".join(" ".join(a) for _c, a in cmds)
    # mlib_devel's platform block design holds the CIPS path, not an empty wrapper.
    assert designs == ["vpk180_bd", "fhg_dcmac_bd_c0"]
    assert set(cells["vpk180_bd"].values()) >= {
        "xilinx.com:ip:versal_cips",
        "xilinx.com:ip:clk_wizard",
        "xilinx.com:ip:proc_sys_reset",
        "xilinx.com:ip:smartconnect",
    }
    assert "xilinx.com:ip:dcmac" in set(cells["fhg_dcmac_bd_c0"].values())
    [assign] = [a for c, a in cmds if c == "assign_bd_address" and "-offset" in a]
    opts = dict(zip(assign[0:-2:2], assign[1:-2:2], strict=True))
    assert (int(opts["-offset"], 16), int(opts["-range"], 16)) == (0xA4000000, 0x4000000)
    wrapped = [a for c, a in cmds if c == "make_wrapper"]
    assert any("fhg_dcmac_bd_c0.bd" in " ".join(a) for a in wrapped)
    assert any("vpk180_bd.bd" in " ".join(a) for a in wrapped)
    assert ["-norecurse", "/project/wrappers/fhg_dcmac_bd_c0_wrapper.v"] in [
        a for c, a in cmds if c == "add_files"
    ]
    # The image: the implementation run's .pdi becomes mlib_devel's $bin_file (top.bin).
    impl = mlib_run.build / "myproj" / "myproj.runs" / "impl_1"
    assert ("file", ["copy", "-force", f"{impl}/top.pdi", f"{impl}/top.bin"]) in cmds
    xsa = [a for c, a in cmds if c == "write_hw_platform"]
    assert xsa and xsa[0][-1] == f"{impl}/top.xsa"
    assert names.index("file") > names.index("launch_runs")


def test_two_blocks_each_get_a_dcmac(mlib_run_2port: MlibRun) -> None:
    """Inside mlib_devel, the two-port design's script creates a DCMAC block design per
    block (named after its cage) and top.v joins each to its own core and link control."""
    designs = [rec[1] for rec in _stub_log(mlib_run_2port) if rec[0] == "design"]
    assert designs == ["vpk180_bd", "fhg_dcmac_bd_c0", "fhg_dcmac_bd_c1"]
    added = [rec[2:] for rec in _stub_log(mlib_run_2port) if rec[:2] == ["cmd", "add_files"]]
    for d in designs[1:]:
        assert ["-norecurse", f"/project/wrappers/{d}_wrapper.v"] in added
    top = parse_top((mlib_run_2port.build / "top.v").read_text())
    for k in (0, 1):
        core = top.instances[f"pktgen2x400g_gbe{k}_core"]
        link = top.instances[f"pktgen2x400g_gbe{k}_dcmac"]
        bd = top.instances[f"pktgen2x400g_gbe{k}_dcmac_bd"]
        assert (core.module, link.module, bd.module) == (
            "fhg_core",
            "fhg_dcmac_vpk180",
            f"fhg_dcmac_bd_c{k}_wrapper",
        )
        clk = f"pktgen2x400g_gbe{k}_mac_clk"
        assert core.conns["tx_mac_clk"] == link.conns["mac_clk"] == bd.conns["axis_clk"] == clk
        assert core.conns["tx_axis_tdata3"] == bd.conns["tx_axis_tdata3"]
        assert top.instances[f"pktgen2x400g_gbe{k}_boot"].params["FABRIC_IP"] == (
            f"32'h0a00{k:02x}0a"
        )
    rows = [ln.split() for ln in (mlib_run_2port.build / "core_info.tab").read_text().splitlines()]
    bases = {n: int(b, 16) for n, _m, b, _s in rows}
    assert (bases["gbe0"], bases["gbe1"]) == (0xA4000000, 0xA4010000)
    assert bases["gbe1_gmac_reg_tx_packet_count"] - bases["gbe1"] == (
        bases["gbe0_gmac_reg_tx_packet_count"] - bases["gbe0"]
    )


def _castro_sources(build: Path) -> list[Path]:
    text = (build / "castro.yml").read_text()
    block = re.search(r"(?ms)^src_files:\n(.*?)^(?!- )\S", text)
    assert block, "castro.yml has no src_files"
    return [Path(m) for m in re.findall(r"(?m)^- (.+)$", block.group(1))]


@pytest.mark.parametrize("which", ["mlib_run", "mlib_run_2port"])
def test_verilator_lints_mlib_devels_top(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """mlib_devel's top.v with every Verilog source it hands Vivado; its VHDL (xml2vhdl's
    bus, cdc_synchroniser) and the Vivado block designs as black boxes of their ports; for
    the example design and for the two-port design."""
    mlib_run: MlibRun = request.getfixturevalue(which)
    sim.setup_verilator_env()
    if shutil.which("verilator") is None:
        pytest.fail("verilator not found (the project venv provides it)")
    top_text = (mlib_run.build / "top.v").read_text()
    used = {i.module for i in parse_top(top_text).instances.values()}
    files: list[Path] = []
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for src in _castro_sources(mlib_run.build):
        cands = sorted(src.glob("*")) if src.is_dir() else [src]
        for f in cands:
            text = f.read_text(errors="replace")
            if f.suffix in (".v", ".sv") and f.name != "top.v":
                defined = set(re.findall(r"(?m)^\s*module\s+(\w+)", text))
                # Directories of mlib_devel's own HDL: only what the design instantiates.
                if not src.is_dir() or defined & used:
                    files.append(f)
            elif f.suffix in (".vhd", ".vhdl"):
                for ent in re.findall(r"(?im)^\s*entity\s+(\w+)\s+is", text):
                    if ent in used:
                        (stubs / f"{ent}.v").write_text(vhdl_blackbox(text, ent))
    for stub in (mlib_run.standin.build_dir / "lint" / "stubs").glob("*.v"):
        shutil.copy(stub, stubs / stub.name)
    stub_files = sorted(stubs.glob("*.v"))
    defined = set()
    for f in [*files, *stub_files]:
        defined |= set(re.findall(r"(?m)^\s*module\s+(\w+)", f.read_text(errors="replace")))
    assert used <= defined, f"modules without a definition or black box: {used - defined}"
    waivers = tmp_path / "waivers.vlt"
    core = mlib_run.checkout / "jasper_library" / "hdl_sources" / "fourhundred_gbe"
    waivers.write_text(
        "`verilator_config\n"
        + "".join(f'lint_off -rule {r} -file "{core}/*"\n' for r in CORE_LINT_WAIVERS)
    )
    # Packages first, as Vivado orders them.
    files.sort(key=lambda p: not p.name.endswith("_pkg.sv"))
    cmd = [
        "verilator",
        "--lint-only",
        "-Wall",
        "-Wno-fatal",
        "--top-module",
        "top",
        str(waivers),
        *map(str, stub_files),
        *map(str, dict.fromkeys(files)),
        str(mlib_run.build / "top.v"),
    ]
    got = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    out = got.stdout + got.stderr
    assert got.returncode == 0 and "%Error" not in out, out[-4000:]
    # Warnings on the generated top that are wiring faults of ours: on an instance of ours,
    # or on a signal one of our instances uses. mlib_devel's own instances (its bus, its
    # software registers and system block) have warnings of their own, reported here.
    top = parse_top(top_text)
    lines = top_text.splitlines()
    starts = {}
    for name in top.instances:
        at = next(i for i, ln in enumerate(lines) if re.search(rf"\b{name}\s*\(", ln))
        starts[at + 1] = name
    ours = {n for n, i in top.instances.items() if i.module not in MLIB_DEVELS_OWN}
    our_signals = {
        w for n in ours for v in top.instances[n].conns.values() for w in re.findall(r"\w+", v)
    }
    faults, theirs = [], []
    for line in out.splitlines():
        m = re.match(r"%Warning-(\w+): [^:]*top\.v:(\d+):\d+: (.*)", line)
        if not m:
            continue
        sig = re.search(r"'(\w+)'", m.group(3))
        at = max((k for k in starts if k <= int(m.group(2))), default=None)
        inst = starts[at] if at is not None else ""
        if m.group(1) == "PINMISSING" or m.group(1).startswith("PIN"):
            (faults if inst in ours else theirs).append(line)
        elif sig and sig.group(1) in our_signals and m.group(1) in FAULT_RULES:
            faults.append(line)
        else:
            theirs.append(line)
    print(f"{len(theirs)} warning(s) on mlib_devel's own instances and signals:")
    print("\n".join(theirs))
    assert not faults, "\n".join(faults)


# Modules mlib_devel's own blocks instantiate (its bus, software registers, system block).
MLIB_DEVELS_OWN = {"axi4lite_ic_wrapper", "cdc_synchroniser", "sys_block_counter"}
FAULT_RULES = {"MULTIDRIVEN", "UNDRIVEN", "WIDTHEXPAND", "WIDTHTRUNC", "IMPLICIT"}


def test_every_overlay_module_imports_under_mlib_devels_python(mlib_run: MlibRun) -> None:
    """Each Python file the overlay installs imports in the checkout under Python 3.8,
    with mlib_devel's conventions (jasper_library on sys.path, blocks as a package)."""
    lib = mlib_run.checkout / "jasper_library"
    mods = sorted(
        f"yellow_blocks.{p.stem}"
        for _src, p in mlib_install._plan(mlib_run.checkout)
        if p.suffix == ".py" and p.parent == lib / "yellow_blocks"
    )
    assert "yellow_blocks.fourhundred_gbe" in mods and "yellow_blocks.vpk180" in mods
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    got = subprocess.run(
        [str(mlib_python()), "-c", code, *mods],
        cwd=lib,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(lib), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert got.returncode == 0, got.stderr
