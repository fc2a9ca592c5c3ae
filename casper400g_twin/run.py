"""``casper400g twin <builddir>``: run a design's twin until interrupted."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from .board import NETWORK_MODES, Network, TwinBoard, TwinError
from .build import TwinBuildError
from .netns import HostSide, NetnsError, Switch
from .tunnel import Tunnel


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("build_dir", help="a `casper400g build` output directory (top.v, .fpg header)")
    p.add_argument("--katcp-host", default="127.0.0.1", help="board server address")
    p.add_argument("--port", type=int, default=7147, help="board server KATCP port (0: any)")
    p.add_argument(
        "--network",
        choices=NETWORK_MODES,
        default="auto",
        help="tap: a TAP device per 400GbE block in a network namespace (root); udp: a UDP "
        "tunnel per block (--tunnel); pcap: each block's frames into a file of its own "
        "(--pcap); auto (default): udp with --tunnel, tap with --switch, else tap when "
        "privileged, else pcap",
    )
    p.add_argument("--host-ip", default="10.0.0.20/24", help="the host side's address (tap)")
    p.add_argument("--host-mac", default="0c:42:a1:00:00:14", help="the host side's MAC (tap)")
    p.add_argument("--ifname", default="c4g0", help="the host side's interface name (tap)")
    p.add_argument(
        "--switch",
        metavar="NETNS:BRIDGE",
        help="tap mode: the TAP devices as ports of bridge BRIDGE in network namespace NETNS "
        "(hosts on a switch) instead of in a namespace of the twin's own",
    )
    p.add_argument(
        "--tunnel",
        action="append",
        metavar="LOCAL_IP:PORT,PEER_IP:PORT",
        help="udp mode: a tunnel per 400GbE block, one Ethernet frame per datagram. The "
        "first --tunnel is the first block's (local port 0: any free one), each one after "
        "it the next block's; a block without one is at the first's ports + its index "
        "(gbe0 on 50000 <-> 60000, gbe1 on 50001 <-> 60001). The twin prints each block's",
    )
    p.add_argument(
        "--pcap",
        help="pcap mode: the first 400GbE block's file (default <build_dir>/twin_tx.pcap); "
        "each further block's is beside it, named for the block (twin_tx.gbe1.pcap)",
    )
    p.add_argument("--threads", type=int, default=1, help="Verilator threads of the model")
    p.add_argument(
        "--run-as",
        metavar="USER",
        help="started as root: the unprivileged user that compiles and runs the design "
        "(default nobody; root keeps only the network namespace and TAP devices)",
    )
    p.add_argument(
        "--no-icmp", action="store_true", help="do not run the software ICMP echo helper"
    )
    p.add_argument("--seconds", type=float, help="stop after this long (default: Ctrl-C)")
    p.add_argument("--interval", type=float, default=1.0, help="status line period (s)")


def network_of(args: argparse.Namespace) -> Network:
    """The network the options ask for (ValueError naming a bad value): ``auto`` is udp
    with ``--tunnel``, tap with ``--switch``; every ``--tunnel`` after the first is the
    next block's."""
    local, peer = "127.0.0.1:0", ""
    tunnels = args.tunnel or []
    mode = args.network
    if tunnels:
        first = Tunnel.parse(tunnels[0])
        local, peer = str(first.local), str(first.peer)
        mode = "udp" if mode == "auto" else mode
    switch = Switch.parse(args.switch) if args.switch else None
    if switch is not None and mode == "auto":
        mode = "tap"
    return Network(
        mode=mode,
        host=HostSide(ip=args.host_ip, mac=args.host_mac, ifname=args.ifname),
        tunnel_local=local,
        tunnel_peer=peer,
        more_tunnels=tuple(tunnels[1:]),
        pcap=Path(args.pcap) if args.pcap else None,
        switch=switch,
    )


def run(args: argparse.Namespace) -> int:
    try:
        network = network_of(args)
    except ValueError as exc:
        print(f"twin: {exc}", file=sys.stderr)
        return 2
    board = TwinBoard(
        Path(args.build_dir),
        network=network,
        katcp_host=args.katcp_host,
        katcp_port=args.port,
        threads=args.threads,
        icmp=not args.no_icmp,
        run_as=args.run_as,
        progress=lambda m: print(m, flush=True),
    )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    try:
        board.start()
    except (TwinError, TwinBuildError, NetnsError, OSError, ValueError) as exc:
        print(f"twin: {exc}", file=sys.stderr)
        return 1
    try:
        for line in board.describe():
            print(line, flush=True)
        prev = board.stats()
        elapsed = 0.0
        tty = sys.stdout.isatty()
        shown = 0  # status lines on the terminal, rewritten in place
        while not done.wait(args.interval):
            elapsed += args.interval
            if not board.harness_alive:
                print("\ntwin: the design's process ended", file=sys.stderr)
                return 1
            lines, prev = board.status_lines(prev)
            # One port: one line (as before); several: the simulation's, then one per port.
            text = [" | ".join(lines)] if len(lines) <= 2 else lines
            if tty:
                up = f"\x1b[{shown - 1}A" if shown > 1 else ""
                print(up + "\r" + "\n".join(f"{ln}\x1b[K" for ln in text), end="", flush=True)
                shown = len(text)
            else:
                print("\n".join(text), flush=True)
            if args.seconds is not None and elapsed >= args.seconds:
                break
        if tty:
            print()
    finally:
        board.stop()
    return 0
