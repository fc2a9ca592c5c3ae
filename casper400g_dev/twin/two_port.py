"""Both ports of a two-port design's twin (examples/pktgen2x400g) into one host.

The twin gives each 400GbE block a TAP device of its own in its namespace, on the block's
subnet (:func:`.board.port_host`). :func:`configure` runs ``examples/configure_core.py``
once for both cores (each core's ARP entry for its own host side, each generator's
registers ``p<k>_*``, held in reset); :func:`capture` opens a receiver capture per port on
that port's host side, each keyed by its stream's id (the payload's first byte, the
sequence number in bytes 1..7), starts both generators at once and takes both streams;
:func:`verify` compares every payload with the example stream of its id and puts each
core's, link's and capture's counts side by side.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from casper400g_twin import netns
from casper400g_twin.board import TwinBoard
from casperfpga_ext.fpga import Fpga

from .. import checkout

CONFIGURE_SCRIPT = checkout.EXAMPLES_DIR / "configure_core.py"


@dataclass(frozen=True)
class PortStream:
    """One port's stream: its block, its generator's register prefix, its stream id (the
    design's STREAM_ID<k>) and the UDP port it sends to."""

    block: str
    regs: str
    stream_id: int
    dest_port: int


# examples/pktgen2x400g: gbe0/p0_ with stream 1, gbe1/p1_ with stream 2.
EXAMPLE = (PortStream("gbe0", "p0_", 1, 7148), PortStream("gbe1", "p1_", 2, 7149))


@dataclass(frozen=True)
class Run:
    """What both generators send: ``count`` packets of ``size`` bytes each, ``period``
    user_clk cycles apart (0: back to back)."""

    size: int = 8192
    count: int = 512
    period: int = 0
    packets_per_chunk: int = 128


def configure_argv(
    board: TwinBoard, ports: tuple[PortStream, ...], run: Run, python: str | None = None
) -> list[str]:
    """One configure_core.py run for every port: the cores keep their own addresses (their
    masks'), each gets its host side's ARP entry, each generator its destination (its
    host side) and burst, held in reset."""
    argv = [python or sys.executable, str(CONFIGURE_SCRIPT), board.katcp_host]
    argv += ["--port", str(board.port)]
    for p in ports:
        argv += ["--gbe", p.block]
    for p in ports:
        host = board.host_side(p.block)
        if not host.ip:
            raise ValueError(f"{p.block}: its interface has no address (see the twin's log)")
        argv += ["--arp", f"{host.address}={host.mac}"]
    for p in ports:
        host = board.host_side(p.block)
        ip = int.from_bytes(bytes(int(x) for x in host.address.split(".")), "big")
        for name, value in (
            ("pkt_ctrl", 2),
            ("pkt_mode", 0),
            ("pkt_size", run.size),
            ("pkt_period", run.period),
            ("pkt_count", run.count),
            ("pkt_dest_ip", ip),
            ("pkt_dest_port", p.dest_port),
        ):
            argv += ["--write", f"{p.regs}{name}={value:#x}"]
    return argv


def configure(
    board: TwinBoard, ports: tuple[PortStream, ...], run: Run, timeout: float = 300.0
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout.ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        configure_argv(board, ports, run),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def stream_format(p: PortStream, size: int) -> Any:
    """The receiver's format of port ``p``'s stream: its id in byte 0, the sequence number
    in bytes 1..7 (fhg_pktgen's STREAM_ID)."""
    import casper400g_rx as rx

    return rx.Format(
        payload_size=size,
        seq_offset=1,
        seq_width=7,
        stream_id=p.stream_id,
        stream_id_offset=0,
        stream_id_width=1,
    )


def expected_payloads(p: PortStream, seqs: npt.ArrayLike, size: int) -> npt.NDArray[np.uint8]:
    """The example stream of ``p``'s id: word 0 = id << 56 | n, word k = n << 10 | k."""
    from casper400g_rx.example_stream import example_payloads

    rows = example_payloads(np.asarray(seqs, dtype=np.uint64), size)
    rows[:, 0] = p.stream_id
    return rows


@dataclass
class PortCapture:
    port: PortStream
    data: npt.NDArray[np.uint8]
    present: npt.NDArray[np.bool_]
    stats: dict[str, Any]
    link_before: dict[str, int]


def capture(
    board: TwinBoard, ports: tuple[PortStream, ...], run: Run, timeout: float = 600.0
) -> dict[str, PortCapture]:
    """A capture per port on its host side, both generators started together, both
    streams taken until each has ``run.count`` packets or ends."""
    import casper400g_rx as rx

    if board.mode != "tap" or board.netns is None:
        raise RuntimeError("both ports into one host need the twin's TAP devices (root)")
    fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
    fpga.get_system_information()
    caps: dict[str, Any] = {}
    out: dict[str, PortCapture] = {}
    before = board.stats()["macs"]
    for p in ports:
        gbe = fpga.gbes[p.block]
        gbe.reset_counters()
        host = board.host_side(p.block)
        with netns.entered(board.netns.name):
            caps[p.block] = rx.Capture(
                rx.UdpSource(f"{host.address}:{p.dest_port}"),
                fmt=stream_format(p, run.size),
                chunking=rx.Chunking(packets_per_chunk=run.packets_per_chunk, first_chunk=0),
            )
        out[p.block] = PortCapture(
            p,
            np.zeros((run.count, run.size), dtype=np.uint8),
            np.zeros(run.count, dtype=bool),
            {},
            dict(before[p.block]["link"]),
        )
    try:
        for cap in caps.values():
            cap.start()
        for p in ports:
            fpga.write_int(f"{p.regs}pkt_ctrl", 1)
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        last = None
        while time.monotonic() < deadline:
            for p in ports:
                for chunk in caps[p.block].chunks(timeout=0.1):
                    _take(chunk, out[p.block])
                    break
            if all(pc.present.all() for pc in out.values()):
                break
            frames = tuple(board.stats()["macs"][p.block]["to_host_frames"] for p in ports)
            if frames != last:
                last, quiet_since = frames, time.monotonic()
            elif time.monotonic() - quiet_since > 3:
                break  # both streams ended and nothing more arrives
        for p in ports:
            caps[p.block].stop()
            for chunk in caps[p.block].chunks(timeout=0):
                _take(chunk, out[p.block])
            out[p.block].stats = dict(caps[p.block].stats)
    finally:
        for p in ports:
            fpga.write_int(f"{p.regs}pkt_ctrl", 0)
            caps[p.block].stop()
        fpga.disconnect()
    return out


def _take(chunk: Any, pc: PortCapture) -> None:
    with chunk:
        first = int(chunk.first_seq)
        mask = np.asarray(chunk.present, dtype=bool)
        if first + len(mask) > len(pc.present):
            return
        pc.data[first : first + len(mask)][mask] = np.asarray(chunk.data)[mask]
        pc.present[first : first + len(mask)] = mask


def verify(
    board: TwinBoard, got: dict[str, PortCapture], run: Run
) -> tuple[bool, list[tuple[str, str, int, str]]]:
    """Per port: every payload against its stream's model; the generator's, the core's,
    the link's and the capture's counts, exact."""
    fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
    fpga.get_system_information()
    rows: list[tuple[str, str, int, str]] = []
    try:
        macs = board.stats()["macs"]
        for block, pc in got.items():
            p = pc.port
            seqs = np.flatnonzero(pc.present)
            bad = int(
                np.count_nonzero((pc.data[seqs] != expected_payloads(p, seqs, run.size)).any(1))
            )
            gbe = fpga.gbes[block]
            sent = gbe.read_reg("tx_udp_packets")
            link = macs[block]["link"]
            datagrams = link["datagrams"] - pc.link_before.get("datagrams", 0)
            dropped = link["dropped"] - pc.link_before.get("dropped", 0)
            s = pc.stats

            def ok(cond: bool, text: str) -> str:
                return ("ok " if cond else "FAIL ") + text

            rows += [
                (block, f"{p.regs}pkt_sent", fpga.read_uint(f"{p.regs}pkt_sent"),
                 ok(fpga.read_uint(f"{p.regs}pkt_sent") == run.count, f"= {run.count} asked")),
                (block, "tx_udp_packets", sent, ok(sent == run.count, "= pkt_sent")),
                (block, "link datagrams", datagrams, ok(datagrams == sent, "= tx_udp_packets")),
                (block, f"stream {p.stream_id}: packets", s["packets"],
                 ok(s["packets"] + s["lost"] == sent and s["lost"] == dropped,
                    "+ lost = tx_udp_packets")),
                (block, f"stream {p.stream_id}: rejected", s["rejected"],
                 ok(s["rejected"] == 0, "0")),
                (block, "payloads differing from the model", bad, ok(bad == 0, "0")),
            ]  # fmt: skip
    finally:
        fpga.disconnect()
    return all(not r[3].startswith("FAIL") for r in rows), rows
