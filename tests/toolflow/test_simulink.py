"""The Simulink block (xps_library/) and the Octave frontend against the yellow block.

Octave (Debian's ``octave``, installed by ``make sysdeps``) runs the mask's pure functions,
the library build script and the mask initialisation against a recording stand-in for
the Simulink API (tests/octave/simulink_shim/). That checks our scripts' logic and the
block they describe -- not that MATLAB/Simulink accepts them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from casper400g_dev import checkout, generated, simulink_gen
from mlib_devel_400g import paths
from mlib_devel_400g.toolflow import jasper_imports

ROOT = checkout.ROOT
CASES = json.loads((ROOT / "tests/data/fourhundred_gbe_cases.json").read_text())
INTERFACE = json.loads(simulink_gen.INTERFACE_JSON.read_text())
OCTAVE_PATH = [
    "xps_library",
    "xps_library/xps_models/IO",
    "xps_library/xps_models/Platforms",
    "casper400g_dev/octave",
    "tests/octave",
    "tests/octave/simulink_shim",
]

# CI installs Octave (make sysdeps) and must run these tests; elsewhere they skip without it.
needs_octave = pytest.mark.skipif(
    shutil.which("octave-cli") is None and not os.environ.get("CI"),
    reason="octave-cli not installed (make sysdeps)",
)


def octave(code: str, shim: bool = False) -> subprocess.CompletedProcess[str]:
    dirs = [d for d in OCTAVE_PATH if shim or "simulink_shim" not in d]
    adds = "".join(f"addpath('{ROOT / d}');" for d in dirs)
    proc = subprocess.run(
        ["octave-cli", "--norc", "--no-history", "--quiet", "--eval", adds + code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"octave failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def gbe_module() -> Any:
    jasper_imports()
    import yellow_blocks.fourhundred_gbe as m

    return m


# ---------------------------------------------------------------- one description
def test_generated_m_files_are_current():
    stale = generated.stale_files(simulink_gen.render_all())
    assert not stale, f"run `python -m casper400g_dev simulink-gen` and commit: {stale}"


def test_yellow_block_reads_the_description():
    m = gbe_module()
    assert tuple((p["name"], p["dir"], p["width"]) for p in INTERFACE["ports"]) == m.USER_PORTS
    core = [p for p in INTERFACE["parameters"] if p.get("scope", "core") == "core"]
    assert {p["name"]: p["default"] for p in core} == m.fourhundred_gbe.PARAMETERS
    # The mask-only parameters (debug counters) are the ones the yellow block ignores.
    mask_only = {p["name"] for p in INTERFACE["parameters"]} - set(m.fourhundred_gbe.PARAMETERS)
    assert mask_only == {p["name"] for p in INTERFACE["parameters"] if p.get("scope") == "mask"}
    assert {"txctr", "rxctr", "debug_ctr_width"} <= mask_only
    # Every range the mask enforces is the one the design rule check applies.
    for spec in INTERFACE["parameters"]:
        if spec["kind"] == "int":
            assert m.check_parameter(spec["name"], spec["min"]) == spec["min"]
            with pytest.raises(ValueError, match=f"outside {spec['min']}..{spec['max']}"):
                m.check_parameter(spec["name"], spec["max"] + 1)
        # Defaults pass their own checks.
        m.check_parameter(spec["name"], spec["default"])


# ---------------------------------------------------------------- the cases table
def _python_result(table: str, case: dict[str, Any]) -> tuple[str, str]:
    m = gbe_module()
    if table == "params":
        try:
            v = m.check_parameter(case["param"], case["value"])
        except ValueError as exc:
            return "err", str(exc)
        return "ok", ("true" if v else "false") if isinstance(v, bool) else str(v)
    # names: the yellow block's fullname (the gateway prefix) and port; the design
    # frontends require the result to be a Verilog identifier.
    from yellow_blocks.yellow_block import YellowBlock

    obj = YellowBlock({"tag": "xps:fourhundred_gbe", "fullpath": case["path"]}, None)
    name = f"{obj.fullname}_{case['port']}"
    if not name.isidentifier():
        return "err", f"gateway name {name!r} is not a valid identifier"
    return "ok", name


def _expected(case: dict[str, Any]) -> tuple[str, str]:
    if "error" in case:
        return "err", case["error"]
    v = case.get("ok", case.get("name", case.get("port")))
    return "ok", ("true" if v else "false") if isinstance(v, bool) else str(v)


def _check(kind: str, got: str, want: tuple[str, str], where: str) -> None:
    assert kind == want[0], f"{where}: got {kind} {got!r}, want {want}"
    if kind == "err":
        assert want[1] in got, f"{where}: message {got!r} lacks {want[1]!r}"
    else:
        assert got == want[1], f"{where}: got {got!r}, want {want[1]!r}"


def test_cases_in_python():
    for table in ("params", "names"):
        for i, case in enumerate(CASES[table]):
            kind, got = _python_result(table, case)
            _check(kind, got, _expected(case), f"python {table}[{i}] {case}")
    ports = {p["name"] for p in INTERFACE["ports"]}
    for case in CASES["gateway_ports"]:
        assert case["port"] == "" or case["port"] in ports


@needs_octave
def test_cases_in_octave_match_python(tmp_path: Path):
    out = tmp_path / "cases.out"
    cases = ROOT / "tests/data/fourhundred_gbe_cases.json"
    octave(f"run_cases('{cases}', '{out}');")
    rows = [line.split("\t", 3) for line in out.read_text().splitlines()]
    seen: dict[str, int] = {}
    for table, idx, kind, got in rows:
        case = CASES[table][int(idx)]
        seen[table] = seen.get(table, 0) + 1
        where = f"octave {table}[{idx}] {case}"
        _check(kind, got, _expected(case), where)
        if table != "gateway_ports":
            # Same outcome as the yellow block, and for errors the very same message.
            py_kind, py_got = _python_result(table, case)
            assert (kind, got) == (py_kind, py_got) or (
                table == "names" and kind == py_kind == "err"
            ), f"{where}: octave {kind} {got!r}, python {py_kind} {py_got!r}"
    assert seen == {t: len(CASES[t]) for t in ("params", "names", "gateway_ports")}


# ---------------------------------------------------------------- the library block
@pytest.fixture(scope="module")
def block_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("octave-cli") is None and not os.environ.get("CI"):
        pytest.skip("octave-cli not installed (make sysdeps)")
    out = tmp_path_factory.mktemp("block")
    octave(f"run_block('{out}');", shim=True)
    return out


def _gateways(dump: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        b["Name"]: b
        for b in dump["inside"]
        if b["MaskType"] in ("Xilinx Gateway In Block", "Xilinx Gateway Out Block")
    }


def _check_block(dump: dict[str, Any], path: str) -> None:
    prefix = path.replace("/", "_") + "_"
    ports = INTERFACE["ports"]
    inside = {b["Name"]: b for b in dump["inside"]}
    gws = _gateways(dump)
    assert sorted(gws) == sorted(prefix + p["name"] for p in ports)
    n_in = n_out = 0
    lines = {tuple(x) for x in dump["lines"]}
    for p in ports:
        gw = gws[prefix + p["name"]]
        port_blk = inside[p["name"]]
        if p["dir"] == "in":
            n_in += 1
            assert gw["MaskType"] == "Xilinx Gateway Out Block"
            assert gw["SourceBlock"] == "xbsIndex_r4/Gateway Out"
            assert (port_blk["BlockType"], port_blk["Port"]) == ("Inport", str(n_in))
            assert (f"{p['name']}/1", f"{gw['Name']}/1") in lines
            assert (f"{gw['Name']}/1", f"{p['name']}_term/1") in lines
        else:
            n_out += 1
            assert gw["MaskType"] == "Xilinx Gateway In Block"
            assert gw["arith_type"] == ("Boolean" if p["width"] == 1 else "Unsigned")
            assert (gw["n_bits"], gw["bin_pt"]) == (str(p["width"]), "0")
            assert (port_blk["BlockType"], port_blk["Port"]) == ("Outport", str(n_out))
            assert (f"{gw['Name']}/1", f"{p['name']}/1") in lines
            assert (f"{p['name']}_sim/1", f"{gw['Name']}/1") in lines
    assert len(lines) == 2 * len(ports)


def test_library_block_matches_the_description(block_dump: Path):
    lib = json.loads((block_dump / "library.json").read_text())
    blk = lib["block"]
    assert blk["Tag"] == INTERFACE["tag"] == "xps:fourhundred_gbe"
    assert blk["Mask"] == "on" and blk["MaskSelfModifiable"] == "on"
    assert blk["MaskInitialization"] == "fourhundred_gbe_mask(gcb);"
    assert blk["MaskDisplay"] == f"disp('{INTERFACE['icon']}')"
    params = INTERFACE["parameters"]
    names = [v.split("=&")[0] for v in blk["MaskVariables"].rstrip(";").split(";")]
    assert names == [p["name"] for p in params]
    assert blk["MaskPromptString"].split("|") == [p["prompt"] for p in params]
    assert blk["MaskValueString"].split("|") == [simulink_gen.mask_text(p) for p in params]
    styles = ["checkbox" if p["kind"] == "flag" else "edit" for p in params]
    assert blk["MaskStyleString"].split(",") == styles
    for p in params:
        assert f"{p['prompt']} ({p['name']}): {p['tooltip']}" in blk["MaskHelp"]
    assert blk["MaskCallbackString"].split("|") == ["fourhundred_gbe_callback(gcb)"] * len(params)
    # The mask's defaults are what the yellow block takes when jasper.per omits a key.
    m = gbe_module()
    for p, text in zip(params, blk["MaskValueString"].split("|"), strict=True):
        assert m.check_parameter(p["name"], text) == m.check_parameter(p["name"], p["default"])
    _check_block(lib, "fourhundred_gbe/fourhundred_gbe")
    assert lib["saved"][0][0] == "fourhundred_gbe"
    assert lib["saved"][0][1].endswith("fourhundred_gbe.slx")


def test_placed_block_gateways_follow_its_name(block_dump: Path):
    _check_block(json.loads((block_dump / "placed.json").read_text()), "mydesign/gbe0")
    _check_block(json.loads((block_dump / "renamed.json").read_text()), "mydesign/gbe1")
    values = dict(line.split("\t") for line in (block_dump / "values.txt").read_text().splitlines())
    assert values["fab_ip"] == str(0x0A00000A)
    assert values["fab_mac"] == str(0x02000A00000A)
    assert values["fab_en"] == "1"
    assert values["fab_udp"] == "10000"


def test_debug_counters_are_drawn_redrawn_and_removed(block_dump: Path):
    dump = json.loads((block_dump / "counters.json").read_text())
    ports = {p["name"] for p in INTERFACE["ports"]}
    inside = {b["Name"]: b for b in dump["inside"]}
    lines = {tuple(x) for x in dump["lines"]}
    specs = {p["name"]: p for p in INTERFACE["parameters"]}
    n_in = sum(p["dir"] == "in" for p in INTERFACE["ports"])
    rst = inside["debug_rst"]
    assert (rst["BlockType"], rst["Port"]) == ("Inport", str(n_in + 1))
    dirs = {p["name"]: p["dir"] for p in INTERFACE["ports"]}
    drawn = 0
    for name in ("txctr", "rxbadctr"):
        reg, ctr, gate = inside[name], inside[f"{name}_ctr"], inside[f"{name}_and"]
        assert reg["SourceBlock"] == "xps_library/software_register"
        assert (reg["io_dir"], reg["bitwidths"]) == ("To Processor", "24")  # the redrawn width
        assert ctr["SourceBlock"] == "xbsIndex_r4/Counter"
        assert (ctr["n_bits"], ctr["rst"], ctr["en"]) == ("24", "on", "on")
        counts = specs[name]["counts"]
        assert gate["inputs"] == str(len(counts)) and gate["logical_function"] == "AND"
        for i, port in enumerate(counts, 1):
            src = port if dirs[port] == "in" else f"mydesign_gbe1_{port}"
            assert (f"{src}/1", f"{name}_and/{i}") in lines
        assert ("debug_rst/1", f"{name}_ctr/1") in lines
        assert (f"{name}_and/1", f"{name}_ctr/2") in lines
        assert (f"{name}_ctr/1", f"{name}/1") in lines
        drawn += len(counts) + 3
    assert len(lines) == 2 * len(ports) + drawn
    unselected = {p["name"] for p in INTERFACE["parameters"] if p.get("counts")}
    assert not (unselected - {"txctr", "rxbadctr"}) & set(inside)
    # Deselected: the block is back to its ports and gateways alone.
    off = json.loads((block_dump / "counters_off.json").read_text())
    _check_block(off, "mydesign/gbe1")
    left = {b["Name"] for b in off["inside"]}
    assert not {"debug_rst", "txctr", "txctr_ctr", "rxbadctr_and"} & left


def test_callback_enables_the_counter_width_only_with_a_counter(block_dump: Path):
    off, on = (block_dump / "enables.txt").read_text().splitlines()
    gated = [bool(p.get("enabled_by")) for p in INTERFACE["parameters"]]
    assert off.split(",") == ["off" if g else "on" for g in gated]
    assert on.split(",") == ["on"] * len(gated)
    assert INTERFACE["parameters"][gated.index(True)]["name"] == "debug_ctr_width"


def test_mask_refuses_a_bad_parameter(block_dump: Path):
    msg = (block_dump / "mask_error.txt").read_text()
    assert msg == "mydesign/gbe1: fab_udp 70000 is outside 1..65535 (UDP port)"


# ---------------------------------------------------------------- Octave design API
EXAMPLE_DIR = ROOT / "examples/pktgen_400g"


@needs_octave
def test_octave_design_writes_the_design_yamls_jasper_per_and_builds(tmp_path: Path):
    from mlib_devel_400g.design import Design
    from mlib_devel_400g.toolflow import Toolflow

    out = tmp_path / "build"
    per = Design(EXAMPLE_DIR / "design.yaml").to_jasper_per(out)
    want = yaml.safe_load(per.read_text())
    want_wrapper = (out / "user/pktgen_400g.v").read_text()
    per.unlink()
    (out / "user/pktgen_400g.v").unlink()
    octave(f"addpath('{EXAMPLE_DIR}'); pktgen_400g_design('{out}');")
    got = yaml.safe_load(per.read_text())
    assert got == want
    assert (out / "user/pktgen_400g.v").read_text() == want_wrapper
    result = Toolflow(per, out, progress=None).run(backend="none")
    top = result.top_v.read_text()
    assert re.search(r"fhg_core #\([^;]*\) pktgen_400g_gbe0_core \(", top)
    assert ".tx_data(pktgen_400g_gbe0_tx_data)" in top
    assert {d.name for d in result.devices} >= {"gbe0", "pkt_size", "pkt_sent"}


@needs_octave
def test_octave_design_of_the_two_port_example_is_its_yaml(tmp_path: Path):
    """examples/pktgen2x400g/pktgen2x400g_design.m writes the jasper.per and wrapper its
    design.yaml gives: two 400GbE blocks, a generator's registers per port."""
    from mlib_devel_400g.design import Design

    here = ROOT / "examples/pktgen2x400g"
    out = tmp_path / "build"
    per = Design(here / "design.yaml").to_jasper_per(out)
    want = yaml.safe_load(per.read_text())
    want_wrapper = (out / "user/pktgen2x400g.v").read_text()
    per.unlink()
    (out / "user/pktgen2x400g.v").unlink()
    octave(f"addpath('{here}'); pktgen2x400g_design('{out}');")
    got = yaml.safe_load(per.read_text())
    assert got == want
    assert (out / "user/pktgen2x400g.v").read_text() == want_wrapper
    blocks = got["yellow_blocks"]
    assert [b["port"] for b in blocks.values() if b["tag"] == "xps:fourhundred_gbe"] == [0, 1]
    assert sum(b["tag"] == "xps:sw_reg" for b in blocks.values()) == 2 * 20


@needs_octave
@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            "d = fhg_design_add_block(d, 'gbe0', 'fourhundred_gbe', 'fab_udp', 70000);",
            "block gbe0 (xps:fourhundred_gbe): fab_udp 70000 is outside 1..65535",
        ),
        (
            "d = fhg_design_add_block(d, 'gbe0', 'fourhundred_gbe', 'fab_mca', 1);",
            "block gbe0: unknown key 'fab_mca'; known keys: port, fab_mac",
        ),
        ("d = fhg_design_add_block(d, 'r', 'sw_regs');", "unknown block type 'sw_regs'"),
        (
            "d = fhg_design_add_block(d, 'r', 'sw_reg', 'io_dir', 'From CPU');",
            "io_dir 'From CPU' is not one of From Processor, To Processor",
        ),
        (
            "d = fhg_design_add_block(d, 'r', 'sw_reg');"
            "d = fhg_design_user_module(d, 'u', {}, {'x', 'r/user_data_in'});"
            "fhg_design_write(d, tempname());",
            "user module port x: block r has no port 'user_data_in' (it has: user_data_out)",
        ),
        (
            "d = fhg_design_add_block(d, 'r', 'sw_reg'); fhg_design_write(d, tempname());",
            "the blocks have gateways but the design has no user module",
        ),
    ],
)
def test_octave_design_errors_name_the_value(code: str, message: str):
    proc = subprocess.run(
        [
            "octave-cli",
            "--norc",
            "--quiet",
            "--eval",
            f"addpath('{ROOT / 'xps_library'}', '{ROOT / 'casper400g_dev/octave'}');"
            f"d = fhg_design('m', 'generic400g'); try; {code} disp('no error');"
            " catch err; disp(err.message); end",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert message in proc.stdout, proc.stdout + proc.stderr


@needs_octave
def test_installed_copy_builds_the_block(tmp_path: Path):
    """The overlay installer copies every file the block needs into an mlib_devel tree:
    the build script and mask run from the installed copies alone."""
    from mlib_devel_400g.mlib_install import install

    root = tmp_path / "mlib_devel"
    (root / "jasper_library/yellow_blocks").mkdir(parents=True)
    (root / "jasper_library/yellow_blocks/yellow_block.py").write_text("# mlib_devel\n")
    (root / "xps_library").mkdir()
    info = "function x()\ntags = {'xps:ten_gbe', 'xps:onehundred_gbe'};\nend\n"
    (root / "xps_library/gen_xps_add_design_info.m").write_text(info)
    (root / "xps_library/README.md").write_text("mlib_devel's own\n")
    changes = install(root, say=None)
    for rel in (
        "jasper_library/yellow_blocks/fourhundred_gbe.json",
        "xps_library/fourhundred_gbe_interface.m",
        "xps_library/fourhundred_gbe_mask.m",
        "xps_library/fourhundred_gbe_callback.m",
        "xps_library/xps_models/IO/build_fourhundred_gbe.m",
    ):
        assert f"add {rel}" in changes
    assert (root / "xps_library/README.md").read_text() == "mlib_devel's own\n"
    lib = root / "xps_library"
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run(
        [
            "octave-cli",
            "--norc",
            "--quiet",
            "--eval",
            f"addpath('{lib}', '{lib / 'xps_models/IO'}', "
            f"'{ROOT / 'tests/octave'}', '{ROOT / 'tests/octave/simulink_shim'}');"
            f"shim_state('reset'); build_fourhundred_gbe('{out}');"
            "disp(get_param('fourhundred_gbe/fourhundred_gbe', 'Tag'));"
            "disp(which('fourhundred_gbe_mask'));",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "xps:fourhundred_gbe" in proc.stdout, proc.stdout + proc.stderr
    assert str(lib / "fourhundred_gbe_mask.m") in proc.stdout


# ---------------------------------------------------------------- the VPK180 platform block
@needs_octave
def test_vpk180_platform_block_from_the_platform_description(tmp_path: Path):
    """The platform block a MATLAB user drops into a VPK180 design: its choices come from
    platforms/vpk180.yaml (through the generated vpk180_platform.m), its mask sets the
    System Generator token, and the XSG entry it gives jasper.per builds the same design."""
    from mlib_devel_400g.design import Design
    from mlib_devel_400g.toolflow import Toolflow

    conf = yaml.safe_load((paths.JASPER_LIBRARY / "platforms" / "vpk180.yaml").read_text())
    part, package, speed = conf["fpga"].split("-", 2)
    octave(f"run_platform('{tmp_path}');", shim=True)
    lib = json.loads((tmp_path / "platform.json").read_text())["block"]
    assert (lib["Tag"], lib["MaskType"]) == ("xps:xsg", "xps:xsg")
    assert lib["MaskInitialization"] == "xps_xsg_vpk180_conf_mask(gcb);"
    names = [v.split("=&")[0] for v in lib["MaskVariables"].rstrip(";").split(";")]
    values = dict(zip(names, lib["MaskValueString"].split("|"), strict=True))
    assert values == {
        "hw_sys": conf["simulink"]["hw_sys"],
        "clk_src": conf["clk_src"],
        "clk_rate": f"{conf['user_clk_mhz']:g}",
        "synthesis_tool": "Vivado",
    }
    assert json.loads((tmp_path / "platform.json").read_text())["saved"][0][1].endswith(
        "VPK180.slx"
    )
    token = json.loads((tmp_path / "token.json").read_text())["block"]
    assert (token["part"], token["package"], token["speed"]) == (part, package, f"-{speed}")
    assert token["xilinxfamily"] == conf["simulink"]["sysgen_family"]
    # The design clock's period, from the placed block's clk_rate (the platform default).
    assert float(token["sysclk_period"]) == round(1000 / conf["user_clk_mhz"], 4)
    lo, hi = conf["user_clk_range_mhz"]
    errors = (tmp_path / "errors.txt").read_text().splitlines()
    assert errors == [
        f"mydesign/XSG core config: clk_rate 100 MHz is outside {lo:g}..{hi:g} "
        f"(400 Gb/s at 1024 bits per cycle needs at least {lo:g})",
        "mydesign/XSG core config: clk_rate 'fast' is not a number (MHz)",
        "other/XSG core config: the platform block must sit beside exactly one System "
        "Generator token (found 0)",
    ]
    # MATLAB's frontend writes the block's parameters into jasper.per's XSG entry: with the
    # placed block's values the example design builds as from its design YAML.
    placed = json.loads((tmp_path / "placed.json").read_text())["block"]
    example = ROOT / "examples" / "pktgen_400g" / "design.yaml"
    ref_dir = tmp_path / "yaml"
    per = Design(example, platform="vpk180").to_jasper_per(ref_dir)
    ref = Toolflow(per, ref_dir, progress=None).run(backend="none")
    doc = yaml.safe_load(per.read_text())
    xsg = doc["yellow_blocks"]["pktgen_400g/XSG"]
    # (parameters left at their dialog default take the mask's value, as in MATLAB)
    xsg.update({k: placed.get(k, values[k]) for k in ("hw_sys", "clk_src", "clk_rate")})
    mat_dir = tmp_path / "matlab"
    mat_dir.mkdir()
    (mat_dir / "jasper.per").write_text(yaml.safe_dump(doc, sort_keys=False))
    got = Toolflow(mat_dir / "jasper.per", mat_dir, progress=None).run(backend="none")
    assert got.platform == "vpk180"
    for name in ("top.v", "top.xdc", "core_info.tab"):
        a = (ref.build_dir / name).read_text().replace(str(ref_dir), "")
        b = (got.build_dir / name).read_text().replace(str(mat_dir), "")
        assert a == b, name
