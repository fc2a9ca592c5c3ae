"""`casper400g demo`, part 10: two 400GbE ports in one design, both into one host.

examples/pktgen2x400g (two cores, a generator each) is built and run as a board (its
twin): each port is a TAP device of its own on its core's subnet; Linux's arping and ping
reach each core through its own interface and get its own MAC; examples/configure_core.py
configures both cores in one run; both generators start at once and a receiver capture per
port, keyed by the stream's id, takes both streams; every payload and each core's, link's
and capture's counts are checked, and the twin's status shows a line per port.
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.table import Table

from casper400g_twin import netns
from casper400g_twin.board import TwinBoard

from . import checkout, toolflow_sim
from .demo_twin import start_board
from .twin import two_port

BUILD_DIR = checkout.ROOT / "build" / "demo" / "pktgen2x400g"
RUN = two_port.Run(size=8192, count=1024, packets_per_chunk=256)


def run(console: Console) -> int:
    console.rule("[bold]casper400g demo, part 10: two 400GbE ports, both streams into one host")
    t_start = time.monotonic()
    why = netns.privileged()
    if why is not None:
        console.print(f"[yellow]skipped: both ports need the twin's TAP devices ({why})")
        return 0
    console.print("[1/4] casper400g build examples/pktgen2x400g/design.yaml (gbe0 and gbe1)")
    build = toolflow_sim.build_example(BUILD_DIR, design=toolflow_sim.TWO_PORT_DESIGN)
    console.print("      its twin: top.v Verilated with a DCMAC model per port (cached)")
    board = start_board(console, build.build_dir, "tap")
    if board is None:
        return 1
    try:
        return _run(console, board, t_start)
    finally:
        board.stop()


def _run(console: Console, board: TwinBoard, t_start: float) -> int:
    for line in board.describe():
        console.print(f"      {line}", markup=False, highlight=False)
    assert board.netns is not None
    console.print("[2/4] each core through its own interface: arping and ping")
    for block in board.blocks:
        meta = board.header.blocks[block].params if board.header else {}
        ip = meta.get("fab_ip", "")
        arp = board.netns.run("arping", "-c", "1", "-w", "60", "-I", board.interface(block), ip)
        ping = board.netns.run("ping", "-c", "1", "-W", "30", ip, timeout=120)
        mac = meta.get("fab_mac", "").upper()
        ok = arp.returncode == 0 and f"[{mac}]" in arp.stdout and ping.returncode == 0
        style = "green" if ok else "red"
        console.print(
            f"      [{style}]{block} {ip}: ARP answered by {mac or '?'} via "
            f"{board.interface(block)}, ping {'answered' if ping.returncode == 0 else 'lost'}"
        )
        if not ok:
            console.print(arp.stdout + arp.stderr + ping.stdout, markup=False)
            return 1
    console.print(
        f"[3/4] examples/configure_core.py --gbe gbe0 --gbe gbe1: both cores, "
        f"{RUN.count} x {RUN.size}-B datagrams per port"
    )
    proc = two_port.configure(board, two_port.EXAMPLE, RUN)
    if proc.returncode != 0:
        console.print(proc.stdout + proc.stderr, markup=False)
        return 1
    console.print("[4/4] both generators at once; a capture per port, keyed by stream id")
    prev = board.stats()
    got = two_port.capture(board, two_port.EXAMPLE, RUN)
    ok, rows = two_port.verify(board, got, RUN)
    lines, _now = board.status_lines(prev)
    for line in lines:
        console.print(f"      {line}", markup=False, highlight=False)
    table = Table()
    for col, just in (("port", "left"), ("counter", "left"), ("value", "right"), ("check", "left")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for block, name, value, check in rows:
        style = "green" if check.startswith("ok") else "red"
        table.add_row(block, name, f"{value:,}", f"[{style}]{check}")
    console.print(table)
    took = time.monotonic() - t_start
    if not ok:
        console.print("[red bold]the two streams did not arrive as sent")
        return 1
    console.print(
        f"[green bold]two ports, two streams, one host: every payload as its stream says, "
        f"every count exact ({took:.0f} s)"
    )
    return 0
