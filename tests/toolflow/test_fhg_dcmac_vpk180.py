"""fhg_dcmac_vpk180 (the link control of one DCMAC; synthesis only) beside the block design
jasper_library/yellow_blocks/vpk180_ip.py generates: the two joined by port name as the
yellow block joins them in top.v, linted by Verilator against a port-only black box of the
block design; the block design's client ports against fhg_core's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from casper400g_dev import sim
from mlib_devel_400g import paths
from mlib_devel_400g.toolflow import jasper_imports

jasper_imports()
from yellow_blocks import vpk180_ip  # noqa: E402 - after jasper_imports()

HDL = paths.FHG_HDL
WRAPPER = HDL / "link/fhg_dcmac_vpk180.v"

_PORT = re.compile(
    r"^\s*(input|output)\s+(?:wire|logic|reg)?\s*(?:\[(\d+):0\])?\s*([\w\s,]+?)\s*,?\s*(?://.*)?$"
)


def ports(path: Path, module: str) -> dict[str, tuple[str, int]]:
    """name -> (direction, width) from an ANSI port list (one or more names per line)."""
    text = path.read_text()
    start = text.index(f"module {module}")
    header = text[start : text.index("\n);", start)]  # the ANSI header ends the port list
    found: dict[str, tuple[str, int]] = {}
    for line in header.splitlines():
        m = _PORT.match(line)
        if not m:
            continue
        width = int(m.group(2)) + 1 if m.group(2) else 1
        for name in m.group(3).split(","):
            if name.strip():
                found[name.strip()] = (m.group(1), width)
    return found


def bd_ports() -> dict[str, tuple[str, int]]:
    return {
        port.name: ("input" if port.direction == "I" else "output", port.width)
        for port in vpk180_ip.bd_wrapper_ports(vpk180_ip.DcmacGtmParams())
    }


def pair_top() -> str:
    """A top level holding the link control and the block design, joined by port name (as
    vpk180_dcmac joins them); every other port of either becomes a port of the top."""
    link = ports(WRAPPER, "fhg_dcmac_vpk180")
    bd = bd_ports()
    decls, wires, lconns, bconns = [], [], [], []
    for name, (direction, width) in link.items():
        rng = f"[{width - 1}:0] " if width > 1 else ""
        if name in bd:
            wires.append(f"    wire {rng}w_{name};")
            lconns.append(f".{name}(w_{name})")
            bconns.append(f".{name}(w_{name})")
        else:
            decls.append(f"    {direction} wire {rng}l_{name}")
            lconns.append(f".{name}(l_{name})")
    for name, (direction, width) in bd.items():
        if name not in link:
            rng = f"[{width - 1}:0] " if width > 1 else ""
            decls.append(f"    {direction} wire {rng}b_{name}")
            bconns.append(f".{name}(b_{name})")
    return (
        "module pair (\n" + ",\n".join(decls) + "\n);\n" + "\n".join(wires) + "\n"
        f"    fhg_dcmac_vpk180 u_link ({', '.join(lconns)});\n"
        f"    {vpk180_ip.BD_NAME}_wrapper u_bd ({', '.join(bconns)});\n"
        "endmodule\n"
    )


def lint_wrapper(tmp_path: Path, stub_text: str, *flags: str) -> subprocess.CompletedProcess:
    """Verilator lint of the link control (and the bring-up it instantiates) joined to
    ``stub_text`` as the block design's wrapper."""
    root = sim.setup_verilator_env()
    stub = tmp_path / f"{vpk180_ip.BD_NAME}_wrapper.v"
    stub.write_text(stub_text)
    top = tmp_path / "pair.v"
    top.write_text(pair_top())
    cmd = [str(root / "bin" / "verilator"), "--lint-only", *flags]
    cmd += ["--top-module", "pair"]
    cmd += [str(HDL / "cdc/fhg_sync_bits.sv"), str(HDL / "link/fhg_link_bringup.sv")]
    cmd += [str(WRAPPER), str(stub), str(top)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_link_control_lints_joined_to_the_block_design_black_box(tmp_path: Path) -> None:
    res = lint_wrapper(tmp_path, vpk180_ip.bd_wrapper_stub(), "-Wall", "-Wno-DECLFILENAME")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "%Warning" not in res.stderr, res.stderr


def test_lint_catches_a_port_the_block_design_lacks(tmp_path: Path) -> None:
    stub = vpk180_ip.bd_wrapper_stub().replace("tx_core_reset", "tx_core_reset_x")
    res = lint_wrapper(tmp_path, stub)
    assert res.returncode != 0 and "tx_core_reset" in res.stderr


def test_block_design_side_is_the_block_designs_ports() -> None:
    """Every port of the link control below its "block design" line is a block design port
    of the same name and width, the other way round; the rest are fhg_core's or the
    attachment's own."""
    link = ports(WRAPPER, "fhg_dcmac_vpk180")
    bd = bd_ports()
    shared = set(link) & set(bd)
    core = ports(HDL / "fhg_core.sv", "fhg_core")
    assert {p for p in link if p not in shared} == {
        *(p for p in core if p.startswith("link_")),
        "gt_powergood",
        "axil_clk",
        "axil_rst_n",
        "mac_clk",
        "mac_rst",
        "link_up",  # fhg_core's mac_link_up
    }
    for name in shared:
        (ld, lw), (bdir, bw) = link[name], bd[name]
        assert lw == bw and ld != bdir, (name, link[name], bd[name])
    assert {p for p in shared if p.startswith("s_axi_")} == {
        f"s_axi_{s}" for s, _d, _w in vpk180_ip.AXI_LITE_SIGNALS
    }
    assert "gt_reset_tx_datapath_in_3" in shared and "tx_serdes_reset" in shared


def test_client_ports_match_fhg_core() -> None:
    bd = bd_ports()
    core = ports(HDL / "fhg_core.sv", "fhg_core")
    client = {n: v for n, v in core.items() if re.match(r"(tx|rx)_axis_", n)}
    assert len([n for n in client if n.startswith("tx_")]) == 3 + 6 * 8
    for name, (direction, width) in client.items():
        assert name in bd, f"fhg_core port {name} missing on the block design"
        other = "output" if direction == "input" else "input"
        assert bd[name] == (other, width), (name, bd[name], core[name])
    # The RX client ports fhg_core's receive path takes (same names as the DCMAC's).
    rx = ["rx_axis_tvalid_0"] + [
        f"rx_axis_{sig}{s}"
        for s in range(8)
        for sig in ("tdata", "tuser_ena", "tuser_sop", "tuser_eop", "tuser_err", "tuser_mty")
    ]
    for name in rx:
        assert bd[name][0] == "output", name
    assert bd["rx_axis_tdata7"] == ("output", 128)
    assert bd["rx_axis_tuser_mty0"] == ("output", 4)
    # Every TX client port of the block design but the preamble exists on fhg_core.
    tx_bd = {n for n in bd if n.startswith("tx_axis_")}
    assert tx_bd <= set(core), tx_bd - set(core)
