"""Simulate a build's generated ``top.v`` (generic400g platform) with Verilator/cocotb."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from mlib_devel_400g.toolflow import BuildResult

from . import checkout, sim

EXAMPLE_DESIGN = checkout.ROOT / "examples" / "pktgen_400g" / "design.yaml"
COCOTB_MODULE = "cocotb_top_pktgen"
# Two 400GbE blocks, a generator each (examples/pktgen2x400g).
TWO_PORT_DESIGN = checkout.ROOT / "examples" / "pktgen2x400g" / "design.yaml"
COCOTB_MODULE_2PORT = "cocotb_top_2port"

# What the simulation sends: (UDP payload bytes, pktgen period in user_clk cycles, count).
# 1000 B exercises a partial last word; 8192 B is the example stream's default size.
DEFAULT_BURSTS = (
    {"size": 1000, "period": 0, "count": 6},
    {"size": 8192, "period": 200, "count": 4},
)


def build_example(
    out: Path, progress: Callable[[str], None] | None = None, design: Path = EXAMPLE_DESIGN
) -> BuildResult:
    from mlib_devel_400g.design import Design
    from mlib_devel_400g.toolflow import Toolflow

    per = Design(design).to_jasper_per(out)
    return Toolflow(per, out, progress=progress).run(backend="none")


def compile_top(build: BuildResult, verbose: bool = False) -> sim.Dut:
    sources = [Path(p) for p in (build.build_dir / "sources.txt").read_text().split()]
    return sim.build(f"{build.model}_top", [*sources, build.top_v], "top", verbose=verbose)


def config(
    build: BuildResult,
    dest_ip: str = "10.0.0.20",
    dest_mac: str = "0c:42:a1:00:00:14",
    dest_port: int = 7148,
    bursts: tuple[dict, ...] = DEFAULT_BURSTS,
) -> dict:
    gbe = next(b for b in build.blocks if b.tag == "xps:fourhundred_gbe")
    return {
        "devices": {i.regname: i.base for i in build.interfaces},
        "gbe": gbe.meta(),
        "dest_ip": dest_ip,
        "dest_mac": dest_mac,
        "dest_port": dest_port,
        "bursts": list(bursts),
    }


def env(cfg: dict) -> dict[str, str]:
    return {"CASPER400G_TOP_CONFIG": json.dumps(cfg)}


def config_2port(build: BuildResult, frames: int = 128, size: int = 8192) -> dict:
    """What the two-port simulation (verification/cocotb_top_2port.py) needs of a build of
    examples/pktgen2x400g: device addresses, each block's mask parameters, and per port
    its block, cage, generator registers, stream id and the next hop on its own subnet."""
    gbes = sorted(
        (b for b in build.blocks if b.tag == "xps:fourhundred_gbe"), key=lambda b: int(b.port)
    )
    if len(gbes) != 2:
        raise ValueError(f"{build.model}: {len(gbes)} 400GbE blocks, the simulation wants two")
    user = _user_parameters(build)
    ports = []
    for k, gbe in enumerate(gbes):
        ip = gbe.meta()["fab_ip"].rsplit(".", 1)[0] + ".20"
        ports.append(
            {
                "block": gbe.name,
                "cage": int(gbe.port),
                "regs": f"p{k}_",
                "dest_ip": ip,
                "dest_mac": f"0c:42:a1:00:{k:02x}:14",
                "dest_port": 7148 + k,
                "stream_id": int(user[f"STREAM_ID{k}"]),
            }
        )
    return {
        "devices": {i.regname: i.base for i in build.interfaces},
        "gbes": {b.name: b.meta() for b in gbes},
        "ports": ports,
        "frames": frames,
        "size": size,
    }


def _user_parameters(build: BuildResult) -> dict[str, str]:
    """The user module's HDL parameters, as the build's wrapper passes them."""
    import re

    text = (build.build_dir / "user" / f"{build.model}.v").read_text()
    return dict(re.findall(r"\.(STREAM_ID\d)\(([^)]*)\)", text))


def env_2port(cfg: dict) -> dict[str, str]:
    return {"CASPER400G_TOP2_CONFIG": json.dumps(cfg)}
