"""Simulate a build's generated ``top.v`` (generic400g platform) with Verilator/cocotb."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from mlib_devel_400g.toolflow import BuildResult

from . import checkout, sim

EXAMPLE_DESIGN = checkout.ROOT / "examples" / "pktgen_400g" / "design.yaml"
COCOTB_MODULE = "cocotb_top_pktgen"

# What the simulation sends: (UDP payload bytes, pktgen period in user_clk cycles, count).
# 1000 B exercises a partial last word; 8192 B is the example stream's default size.
DEFAULT_BURSTS = (
    {"size": 1000, "period": 0, "count": 6},
    {"size": 8192, "period": 200, "count": 4},
)


def build_example(out: Path, progress: Callable[[str], None] | None = None) -> BuildResult:
    from mlib_devel_400g.design import Design
    from mlib_devel_400g.toolflow import Toolflow

    per = Design(EXAMPLE_DESIGN).to_jasper_per(out)
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
