"""fhg_dcmac_vpk180 (the DCMAC/GTM wrapper; synthesis only): Verilator lint against a port-only
black box of the block design that jasper_library/yellow_blocks/vpk180_ip.py generates, and its
client ports against fhg_core's."""

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


def lint_wrapper(tmp_path: Path, stub_text: str, *flags: str) -> subprocess.CompletedProcess:
    """Verilator lint of the wrapper (and the bring-up it instantiates) against ``stub_text``
    as the block design's wrapper."""
    root = sim.setup_verilator_env()
    stub = tmp_path / "fhg_dcmac_bd_wrapper.v"
    stub.write_text(stub_text)
    cmd = [str(root / "bin" / "verilator"), "--lint-only", *flags]
    cmd += ["--top-module", "fhg_dcmac_vpk180"]
    cmd += [str(HDL / "cdc/fhg_sync_bits.sv"), str(HDL / "link/fhg_link_bringup.sv")]
    cmd += [str(WRAPPER), str(stub)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def test_wrapper_lints_against_the_block_design_black_box(tmp_path: Path) -> None:
    res = lint_wrapper(tmp_path, vpk180_ip.bd_wrapper_stub(), "-Wall", "-Wno-DECLFILENAME")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "%Warning" not in res.stderr, res.stderr


def test_lint_catches_a_port_the_block_design_lacks(tmp_path: Path) -> None:
    stub = vpk180_ip.bd_wrapper_stub().replace("tx_axis_taf_0", "tx_axis_taf_x")
    res = lint_wrapper(tmp_path, stub)
    assert res.returncode != 0 and "tx_axis_taf_0" in res.stderr


def test_client_ports_match_fhg_core() -> None:
    wrapper = ports(WRAPPER, "fhg_dcmac_vpk180")
    core = ports(HDL / "fhg_core.sv", "fhg_core")
    client = {n: v for n, v in core.items() if re.match(r"(tx|rx)_axis_", n)}
    assert len([n for n in client if n.startswith("tx_")]) == 3 + 6 * 8
    for name, (direction, width) in client.items():
        assert name in wrapper, f"fhg_core port {name} missing on the wrapper"
        other = "output" if direction == "input" else "input"
        assert wrapper[name] == (other, width), (name, wrapper[name], core[name])
    # The RX client ports fhg_core's receive path takes (same names as the DCMAC's).
    rx = ["rx_axis_tvalid_0"] + [
        f"rx_axis_{sig}{s}"
        for s in range(8)
        for sig in ("tdata", "tuser_ena", "tuser_sop", "tuser_eop", "tuser_err", "tuser_mty")
    ]
    for name in rx:
        assert wrapper[name][0] == "output", name
    assert wrapper["rx_axis_tdata7"] == ("output", 128)
    assert wrapper["rx_axis_tuser_mty0"] == ("output", 4)
    # Every TX client port of the wrapper exists on fhg_core.
    tx_wrapper = {n for n in wrapper if n.startswith("tx_axis_")}
    assert tx_wrapper <= set(core), tx_wrapper - set(core)
