"""`python -m casper400g_dev bench tx`: measured TX goodput of fhg_core against the
theoretical limit.

The theoretical figure for each payload size is the lower of the 400GbE line goodput
(wire bytes per frame = payload + 66, runts padded to 64 + 20) and the user interface's
own ceiling (one 1024-bit word per user_clk cycle, user_clk / ceil(P/128) frames/s). The
core must reach at least 0.995 of it for every size (tests/rtl/test_fhg_core_perf.py
asserts it on the same run). "gapless" is the fraction of frames whose SOP came in the
segment right after the previous EOP, "seg fill" the segments carrying data per segment of
the bus cycles used (both from simulated bus cycles, see verification.models.dcmac_tx.PackingStats).

The last row is two ports at once: examples/pktgen2x400g's generated top (two cores, a
generator each, each port on a MAC clock of its own), both generators back to back; its
aggregate goodput (over a window in which both run) against twice the line goodput, the
same 0.995 goal (tests/rtl/test_toolflow_top_2port.py asserts it on its own, shorter run).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from . import demo_report, sim, toolflow_sim

DEFAULT_SIZES = [64, 65, 128, 129, 256, 1024, 1472, 4096, 8192, 8972, 0]
REQUIRED_RATIO = 0.995


TWO_PORT_SIZE = 8192


def two_port_row(console: Console, frames: int, verbose: bool) -> dict | None:
    """Both ports of the two-port design at once: its result (per port and aggregate), or
    None when the simulation failed."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        build = toolflow_sim.build_example(Path(tmp), design=toolflow_sim.TWO_PORT_DESIGN)
        dut = demo_report.build_model(
            console,
            "[3/4] examples/pktgen2x400g's top.v: Verilator model (cached after the first build)",
            lambda: toolflow_sim.compile_top(build, verbose=verbose),
        )
        cfg = toolflow_sim.config_2port(build, frames=frames, size=TWO_PORT_SIZE)
    console.print(
        f"[4/4] both generators back to back at once, {frames} x {TWO_PORT_SIZE}-B frames per "
        "port, each port's MAC paced at 400GbE"
    )
    return demo_report.run_job(
        console,
        dut,
        f"verification.{toolflow_sim.COCOTB_MODULE_2PORT}",
        toolflow_sim.env_2port(cfg),
        verbose,
    )


def run(
    sizes: list[int] | None = None,
    frames: int = 200,
    verbose: bool = False,
    out_json: Path | None = None,
    two_port: bool = True,
) -> int:
    console = Console()
    sizes = sizes if sizes is not None else DEFAULT_SIZES
    console.rule("[bold]casper400g bench tx: fhg_core TX goodput vs theory")
    dut = demo_report.build_model(
        console,
        "[1/4] fhg_core: Verilator model (cached after the first build)",
        lambda: sim.build_core(verbose=verbose),
    )
    console.print(f"[2/4] streaming {frames} frames per size back to back, MAC paced at 400GbE")
    t0 = time.monotonic()
    data = demo_report.run_job(
        console,
        dut,
        "verification.cocotb_bench_tx",
        {"CASPER400G_BENCH_SIZES": json.dumps(sizes), "CASPER400G_BENCH_FRAMES": str(frames)},
        verbose,
    )
    if data is None:
        return 1
    console.print(
        f"      simulated in {time.monotonic() - t0:.1f} s "
        f"(MAC clock {data['mac_clk_hz'] / 1e6:.2f} MHz, "
        f"user clock {data['user_clk_hz'] / 1e6:.3f} MHz)"
    )
    table = Table()
    for col in (
        "payload B",
        "frames",
        "measured Gb/s",
        "line Gb/s",
        "user-port Gb/s",
        "theory Gb/s",
        "binds",
        "gapless",
        "seg fill",
        "ratio",
    ):
        table.add_column(col, justify="right")
    worst = 1e9
    for r in data["results"]:
        ratio = r["goodput_bps"] / r["theory_bps"]
        worst = min(worst, ratio)
        style = "green" if ratio >= REQUIRED_RATIO else "red"
        table.add_row(
            str(r["size"]) if r["size"] else "mix",
            str(r["frames"]),
            f"{r['goodput_bps'] / 1e9:.1f}",
            f"{r['line_bps'] / 1e9:.1f}",
            f"{r['user_bps'] / 1e9:.1f}",
            f"{r['theory_bps'] / 1e9:.1f}",
            r["binds"],
            f"{r['gapless']:.3f}",
            f"{r['fill']:.3f}",
            f"[{style}]{ratio:.4f}",
        )
    if two_port:
        two = two_port_row(console, frames, verbose)
        if two is None:
            return 1
        data["two_port"] = two
        ratio = two["aggregate_ratio"]
        worst = min(worst, ratio)
        style = "green" if ratio >= REQUIRED_RATIO else "red"
        line = sum(p["line_bps"] for p in two["ports"])
        table.add_row(
            f"2 ports x {two['size']}",
            str(sum(p["window_frames"] for p in two["ports"])),
            f"{two['aggregate_bps'] / 1e9:.1f}",
            f"{line / 1e9:.1f}",
            "",
            f"{line / 1e9:.1f}",
            "2 x line",
            "",
            "",
            f"[{style}]{ratio:.4f}",
        )
        for p in two["ports"]:
            p.pop("frames", None)  # the frames themselves stay out of the report
    console.print(table)
    if out_json:
        out_json.parent.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(data, indent=1))
    verdict = "meets" if worst >= REQUIRED_RATIO else "misses"
    console.print(f"worst ratio {worst:.4f}: {verdict} the required {REQUIRED_RATIO}")
    return 0 if worst >= REQUIRED_RATIO else 1
