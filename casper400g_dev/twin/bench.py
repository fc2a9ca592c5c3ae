"""`python -m casper400g_dev bench twin`: how fast the digital twin runs, through the path a
user takes.

The example design is built, its twin started (default network: the TAP device), the core
and the generator configured over KATCP by examples/configure_core.py (back to back,
8192-byte datagrams, no packet limit), and a receiver capture opened on the twin's
interface; then, over ``seconds`` of wall time, it reports the simulated user_clk cycles
per second, simulated time per wall second, frames and the effective payload rate (Gb/s of
wall time) that reached the receiver, next to the goodput the core's MAC side had in
simulated time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from casper400g_twin import netns
from casper400g_twin.board import Network, TwinBoard

from .. import checkout, toolflow_sim
from . import chain


def measure(board: TwinBoard, cfg: chain.StreamConfig, seconds: float) -> dict[str, Any]:
    """Run the configured stream for ``seconds`` and return the figures."""
    import casper400g_rx as rx
    from casperfpga_ext.fpga import Fpga

    fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
    fpga.get_system_information()
    fpga.write_int("pkt_count", 0)  # no limit
    block = board.blocks[0]
    cap = None
    if board.mode == "tap":
        assert board.netns is not None
        with netns.entered(board.netns.name):
            cap = rx.Capture(
                rx.UdpSource(bind=f"{board.network.host.address}:{cfg.dest_port}"),
                fmt=rx.Format(payload_size=cfg.size),
                chunking=rx.Chunking(
                    packets_per_chunk=cfg.packets_per_chunk,
                    max_chunks=cfg.max_chunks,
                    first_chunk=0,
                ),
            )
        cap.start()
    try:
        fpga.write_int("pkt_ctrl", 1)
        time.sleep(1.0)  # past the start
        s0, r0 = board.stats(), dict(cap.stats) if cap else {}
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if cap is not None:
                for chunk in cap.chunks(timeout=0.2):
                    chunk.release()
            else:
                time.sleep(0.2)
        s1, r1 = board.stats(), dict(cap.stats) if cap else {}
    finally:
        fpga.write_int("pkt_ctrl", 0)
        fpga.disconnect()
        if cap is not None:
            cap.stop()
    wall = s1["wall_s"] - s0["wall_s"]
    sim_s = (s1["sim_fs"] - s0["sim_fs"]) / 1e15
    m0, m1 = s0["macs"][block], s1["macs"][block]
    frames = m1["to_host_frames"] - m0["to_host_frames"]
    payload = frames * cfg.size
    out: dict[str, Any] = {
        "wall_s": wall,
        "cycles_per_s": (s1["user_cycles"] - s0["user_cycles"]) / wall,
        "sim_s_per_wall_s": sim_s / wall,
        "frames_per_s": frames / wall,
        "payload_gbps": 8 * payload / wall / 1e9,
        "mac_goodput_sim_gbps": 8 * payload / sim_s / 1e9 if sim_s else 0.0,
        "network": board.mode,
        "threads": board.threads,
    }
    if cap is not None:
        received = r1["packets"] - r0["packets"]
        out["receiver_packets_per_s"] = received / wall
        out["receiver_gbps"] = 8 * received * cfg.size / wall / 1e9
        out["receiver_lost"] = r1["lost"]
    return out


def run(
    seconds: float = 20.0,
    threads: int = 1,
    network: str = "auto",
    out_json: Path | None = None,
) -> int:
    console = Console()
    console.rule("[bold]casper400g bench twin: the example design's twin, live")
    build = toolflow_sim.build_example(checkout.BUILD_DIR / "pktgen_400g")
    cfg = chain.StreamConfig(tone=None)
    with TwinBoard(
        build.build_dir,
        network=Network(network),
        katcp_port=0,
        threads=threads,
        icmp=False,
        progress=lambda m: console.print(f"  {m}", markup=False),
    ) as board:
        proc = chain.configure(board, cfg)
        if proc.returncode != 0:
            console.print(f"[red]configure_core.py failed: {proc.stderr}")
            return 1
        console.print(f"  streaming back to back for {seconds:g} s ({board.mode} network)")
        result = measure(board, cfg, seconds)
    table = Table(show_header=False)
    for key, fmt in (
        ("cycles_per_s", "{:,.0f} user_clk cycles/s"),
        ("sim_s_per_wall_s", "{:.3g} s simulated per s"),
        ("frames_per_s", "{:,.0f} frames/s to the host"),
        ("payload_gbps", "{:.3f} Gb/s of payload (wall time)"),
        ("receiver_gbps", "{:.3f} Gb/s captured by the receiver"),
        ("receiver_lost", "{:,} lost at the receiver"),
        ("mac_goodput_sim_gbps", "{:.1f} Gb/s at the MAC in simulated time"),
    ):
        if key in result:
            table.add_row(key, fmt.format(result[key]))
    console.print(table)
    if out_json is not None:
        out_json.parent.mkdir(parents=True, exist_ok=True)
        out_json.write_text(json.dumps(result, indent=2) + "\n")
    return 0
