"""`casper400g-rx hwcheck --rdma`: first contact between the core's RDMA mode and this host
(a ConnectX-7 and a GPU, or any RoCE v2 device, soft-RoCE included).

What it sets up: the ``rdma`` source exactly as a capture does (rdma.py): the RoCE v2 GID
for ``--ip`` on the device, an Unreliable Connection queue pair that accepts only the core
(``--peer-ip``), a chunk ring in host memory or, with ``--gpu N``, in GPU memory
registered with the NIC (dma-buf, else nvidia-peermem), the completion queue of the
immediates. It prints what the core needs (``FourHundredGbe.rdma_connect``), and with
``--fpga HOST`` writes it into the core itself over KATCP.

What it measures, with ``--seconds S``: chunks, slots present and lost, the goodput into
the ring, chunks the core dropped for lack of credit, the credits sent back; with
``--fpga`` also the core's own counters over the same time, which must agree.

When nothing arrives it says where to look (docs/hardware.md, "RDMA mode"): the core's
rdma_ctrl and ARP entry, the GID type and index, the MTUs, the NIC's own counters.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path
from typing import Any

from .. import _core

HINTS = (
    "the core: rdma_ctrl.en = 1 and rdma_dest_ip = this host's IP (FourHundredGbe.rdma_status()"
    " shows rdma_icrc_frames growing while it sends); its ARP entry for this IP holds this "
    "port's MAC; tx_arp_miss stays 0",
    "the GID: the QP uses the RoCE v2 GID of --ip (`show_gids` or /sys/class/infiniband/<dev>/"
    "ports/1/gid_attrs/types); a RoCE v1 GID of the same address receives nothing",
    "the MTUs: the path MTU the core uses (rdma_ctrl.mtu) must not exceed the port's active "
    "RDMA MTU; 4096 needs the interface MTU at 4200 or more (`ip link set dev <if> mtu 9000`)",
    "the NIC's counters (`rdma statistic show`, `ethtool -S <if>`): packets arriving but "
    "dropped show as rx_icrc_encapsulated / out_of_sequence (ICRC or PSN), "
    "rx_discards_phy (link), or in the UDP counters (the packets are not reaching the RoCE "
    "stack: wrong destination port, IP or MAC)",
    "the PSN: the QP expects the PSN of cap.rdma_params; rdma_connect writes it, and the core "
    "restarts at it each time rdma_ctrl.en is set",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("RDMA mode (--rdma)")
    g.add_argument("--rdma", action="store_true",
                   help="set up the rdma source's queue pair and ring (first contact)")  # fmt: skip
    g.add_argument("--peer-ip", default="", help="the core's IPv4 address")
    g.add_argument("--ip", default="", help="this host's IPv4 address on the RoCE port")
    g.add_argument("--rdma-device", default="", help="RDMA device (default: the one with --ip)")
    g.add_argument("--credit-port", type=int, default=0, help="the core's credit UDP port")
    g.add_argument("--mtu", type=int, default=4096, help="path MTU (1024, 2048, 4096)")
    g.add_argument("--slots", type=int, default=1024, help="slots per chunk")
    g.add_argument("--chunks", type=int, default=8, help="chunks in the ring")
    g.add_argument("--fpga", default="", help="board server HOST[:PORT]: connect the core")
    g.add_argument("--gbe", default="", help="the core's name in the design (with --fpga)")


def _connect_core(args: argparse.Namespace, params: Any) -> Any:
    from casperfpga_ext.fpga import Fpga

    host, _, port = args.fpga.partition(":")
    fpga = Fpga(host, port=int(port) if port else 7147)
    fpga.get_system_information()
    if not fpga.gbes:
        raise ValueError(f"{args.fpga}: the running design has no 400GbE core")
    name = args.gbe or next(iter(fpga.gbes))
    gbe = fpga.gbes[name]
    gbe.rdma_connect(params.as_dict())
    return gbe


def _nic_counters(device: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in sorted(Path(f"/sys/class/infiniband/{device}/ports/1/hw_counters").glob("*")):
        with contextlib.suppress(OSError, ValueError):
            out[f.name] = int(f.read_text().strip())
    return out


def run_rdma_check(args: argparse.Namespace) -> tuple[bool, list[str], list[str], dict[str, Any]]:
    """(ok, notes, problems, report)."""
    from .. import Capture, Chunking, Delivery, RdmaSource

    notes: list[str] = []
    problems: list[str] = []
    report: dict[str, Any] = {}
    if not args.peer_ip:
        return False, notes, ["--rdma needs --peer-ip: the queue pair accepts the core only"], {}
    device = "cpu" if args.gpu is None else f"cuda:{args.gpu}"
    try:
        cap = Capture(
            RdmaSource(
                peer_ip=args.peer_ip,
                ip=args.ip,
                device=args.rdma_device,
                credit_port=args.credit_port,
                mtu=args.mtu,
            ),
            fmt=_core.Format(payload_size=args.payload),
            chunking=Chunking(packets_per_chunk=args.slots, max_chunks=args.chunks),
            delivery=Delivery(device=device),
        )
    except (OSError, RuntimeError, ValueError) as e:
        return False, notes, [f"rdma source: {e}"], {}
    params = cap.rdma_params
    report["params"] = params.as_dict()
    notes.append(
        f"rdma source on {params.device} ({params.netdev}, GID {params.gid} index "
        f"{params.gid_index}, MAC {params.mac}): QPN {params.qpn:#x}, PSN {params.psn:#x}, "
        f"R_Key {params.rkey:#x}, ring at {params.va:#x} in {params.memory} memory "
        f"({params.registration} registration), {args.chunks} chunks x {args.slots} slots of "
        f"{params.slot_size} B"
    )
    gbe = None
    if args.fpga:
        try:
            gbe = _connect_core(args, params)
            notes.append(f"core {gbe.name} on {args.fpga} connected (rdma_connect)")
        except (OSError, ValueError) as e:
            problems.append(f"connecting the core on {args.fpga}: {e}")
    nic_before = _nic_counters(params.device)
    core_before = gbe.rdma_status() if gbe is not None else None
    if args.seconds and args.seconds > 0:
        t0 = time.monotonic()
        with cap:
            while time.monotonic() - t0 < args.seconds:
                for chunk in cap.chunks(timeout=0.1):
                    chunk.release()
        elapsed = time.monotonic() - t0
        s = cap.stats
        gbps = s["bytes"] * 8 / elapsed / 1e9
        report["stats"] = dict(s)
        text = (
            f"{s['chunks']} chunks in {elapsed:.1f} s ({gbps:.2f} Gb/s into the ring), "
            f"{s['packets']} slots present, {s['lost']} lost, {s['core_dropped_chunks']} "
            f"chunks dropped by the core (credits), {s['missing_immediates']} without their "
            f"immediate, {s['credits_sent']} credits sent"
        )
        nic = {k: v - nic_before.get(k, 0) for k, v in _nic_counters(params.device).items()}
        report["nic_counters"] = nic
        if s["chunks"] == 0:
            problems.append("nothing arrived: " + text)
            if nic:
                moved = {k: v for k, v in nic.items() if v}
                problems.append(f"{params.device} counters that moved: {moved or 'none'}")
            problems.extend(f"look at {h}" for h in HINTS)
        else:
            notes.append(text)
        if gbe is not None and core_before is not None:
            core = {k: v - core_before[k] for k, v in gbe.rdma_status().items()}
            report["core"] = core
            notes.append(f"the core over the same time: {core}")
    else:
        cap.stop()
    return not problems, notes, problems, report
