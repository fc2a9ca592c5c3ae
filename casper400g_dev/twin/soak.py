"""``python -m casper400g_dev soak --minutes N``: the twin streaming into a capture for N
minutes, the link model injecting faults, and the FPGA's, the link's and the receiver's
counters reconciled every ``--interval`` seconds (default 10).

The example design's twin runs with its TAP device (root); the core and the generator are
configured as a user would (``examples/configure_core.py``: the example stream, 8192-byte
datagrams back to back, no packet limit), the link model is set to drop, duplicate and
delay datagrams by a seeded schedule, and a receiver capture is opened on the host side
of the link. The stream runs for an interval, then the generator is paused (``pkt_ctrl``
cleared: the packet in flight ends, the sequence numbers go on when it resumes) and the
chain drained, so that the three sides count the same datagrams, and reconciled exactly:

* FPGA: the generator's ``pkt_sent`` = the core's ``tx_udp_packets``; no ARP miss; no
  DCMAC rule broken (the twin's MAC model);
* link: ``datagrams`` = ``tx_udp_packets`` = ``passed`` + ``dropped``; nothing held;
* host: ``received`` = ``passed`` + ``duplicated``; ``packets`` = ``passed``;
  ``duplicate`` = ``duplicated``; no ``late``, no ``rejected``; ``lost`` = the empty slots
  of the chunks handed on so far;
* every payload of every chunk taken equals the example stream's packet of its sequence
  number (``mismatches``).

At the end the capture is stopped and its last chunks taken: then ``packets`` is every
slot filled and ``lost`` = ``dropped`` plus the slots after the last datagram.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from casper400g_twin import netns
from casper400g_twin.board import Network, TwinBoard, TwinError
from casper400g_twin.harness import HarnessError
from casperfpga_ext.fpga import Fpga

from .. import checkout, toolflow_sim
from . import chain

DRAIN_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SoakConfig:
    """The soak's length, checkpoint interval, link faults and stream."""

    minutes: float = 60.0
    interval: float = 10.0
    drop: float = 0.001
    duplicate: float = 0.001
    delay: float = 0.001
    depth: int = 3
    seed: int = 1
    size: int = 8192
    packets_per_chunk: int = 256
    max_chunks: int = 4

    def __post_init__(self) -> None:
        if not self.minutes > 0:
            raise ValueError(f"minutes {self.minutes}: must be positive")
        if not self.interval > 0:
            raise ValueError(f"interval {self.interval}: must be positive")
        for name in ("drop", "duplicate", "delay"):
            p = getattr(self, name)
            if not 0 <= p < 1:
                raise ValueError(f"{name} probability {p}: must be in [0, 1)")

    def stream(self) -> chain.StreamConfig:
        return chain.StreamConfig(
            size=self.size,
            packets_per_chunk=self.packets_per_chunk,
            max_chunks=self.max_chunks,
            tone=None,
        )

    def faults(self) -> dict[str, float | int]:
        return dict(
            drop=self.drop,
            duplicate=self.duplicate,
            delay=self.delay,
            depth=self.depth,
            seed=self.seed,
        )


@dataclass
class Taken:
    """What the chunks handed on so far held."""

    chunks: int = 0
    present: int = 0
    end: int = 0  # one past the last slot of the last chunk
    mismatches: int = 0

    @property
    def empty(self) -> int:
        return self.end - self.present


@dataclass
class Checkpoint:
    """One reconciliation: every side's counts and the checks that failed (none: ok)."""

    seconds: float
    fpga: dict[str, int]
    link: dict[str, int]
    host: dict[str, int]
    taken: dict[str, int]
    failed: list[str] = field(default_factory=list)
    final: bool = False

    @property
    def ok(self) -> bool:
        return not self.failed

    def line(self) -> str:
        f, ln, h = self.fpga, self.link, self.host
        when = "end" if self.final else f"{self.seconds:.0f} s"
        return (
            f"{when:>7}  sent {f['tx_udp_packets']:,}  link dropped "
            f"{ln['dropped']:,} duplicated {ln['duplicated']:,} delayed {ln['delayed']:,}  "
            f"host packets {h['packets']:,} lost {h['lost']:,} duplicate {h['duplicate']:,}  "
            f"mismatches {self.taken['mismatches']}  "
            + ("ok" if self.ok else "FAIL: " + "; ".join(self.failed))
        )


def reconcile(
    fpga: dict[str, int],
    link: dict[str, int],
    host: dict[str, int],
    taken: Taken,
    final: bool,
) -> list[str]:
    """The checks of a drained chain that fail (each says what differs)."""
    failed = []

    def want(name: str, got: int, expected: int) -> None:
        if got != expected:
            failed.append(f"{name} {got:,} != {expected:,}")

    sent = fpga["tx_udp_packets"]
    want("pkt_sent", fpga["pkt_sent"], sent)
    want("tx_arp_miss", fpga["tx_arp_miss"], 0)
    want("DCMAC rule breaks", fpga["violations"], 0)
    want("link datagrams", link["datagrams"], sent)
    want("link passed + dropped", link["passed"] + link["dropped"], link["datagrams"])
    want("link held", link["held"], 0)
    want("host received", host["received"], link["passed"] + link["duplicated"])
    want("host packets", host["packets"], link["passed"])
    want("host duplicate", host["duplicate"], link["duplicated"])
    want("host late", host["late"], 0)
    want("host rejected", host["rejected"], 0)
    want("host lost", host["lost"], taken.empty)
    want("payloads differing from the example stream", taken.mismatches, 0)
    if final:
        want("host packets (all taken)", host["packets"], taken.present)
        if taken.end < sent:
            failed.append(f"chunks end at slot {taken.end:,}, before the {sent:,} sent")
        else:
            want("host lost (all taken)", host["lost"], link["dropped"] + taken.end - sent)
    return failed


def open_capture(board: TwinBoard, cfg: SoakConfig) -> Any:
    """The receiver's capture on the host side of the twin's link."""
    import casper400g_rx as rx

    assert board.netns is not None
    with netns.entered(board.netns.name):
        return rx.Capture(
            rx.UdpSource(f"{board.network.host.address}:{cfg.stream().dest_port}"),
            fmt=rx.Format(payload_size=cfg.size),
            chunking=rx.Chunking(
                packets_per_chunk=cfg.packets_per_chunk, max_chunks=cfg.max_chunks, first_chunk=0
            ),
        )


def take(cap: Any, taken: Taken, size: int, timeout: float) -> bool:
    """Take the next chunk if one is ready within ``timeout``: count its slots, compare
    every present payload with the example stream. False when none came."""
    from casper400g_rx.example_stream import example_payloads

    for chunk in cap.chunks(timeout=timeout):
        with chunk:
            first = int(chunk.first_seq)
            present = np.asarray(chunk.present, dtype=bool)
            rows = np.flatnonzero(present)
            want = example_payloads((first + rows).astype(np.uint64), size)
            got = np.asarray(chunk.data)[rows]
            taken.mismatches += int(np.count_nonzero((got != want).any(axis=1)))
            taken.chunks += 1
            taken.present += len(rows)
            taken.end = max(taken.end, first + len(present))
        return True
    return False


class Soak:
    """One soak run against a started twin (TAP network) configured for the stream."""

    def __init__(self, board: TwinBoard, cfg: SoakConfig, say: Any = print) -> None:
        self.board, self.cfg, self.say = board, cfg, say
        self.block = board.blocks[0]
        self.fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
        self.fpga.get_system_information()
        self.gbe = self.fpga.gbes[self.block]
        self.taken = Taken()
        self.checkpoints: list[Checkpoint] = []

    def fpga_counts(self) -> dict[str, int]:
        out = {n: self.gbe.read_reg(n) for n in ("tx_frames", "tx_udp_packets", "tx_arp_miss")}
        out["pkt_sent"] = self.fpga.read_uint("pkt_sent")
        out["violations"] = self.board.stats()["macs"][self.block]["violations"]
        return out

    def link_counts(self) -> dict[str, int]:
        return dict(self.board.stats()["macs"][self.block]["link"])

    def drain(self, cap: Any) -> None:
        """Wait (taking chunks) until the paused stream is through: the generator's count
        steady, every datagram out of the link model and into the receiver."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        last = -1
        while time.monotonic() < deadline:
            take(cap, self.taken, self.cfg.size, 0.1)
            sent = self.fpga.read_uint("pkt_sent")
            link = self.link_counts()
            if link["held"]:
                self.board.harness.flush_link(self.block)
                continue
            delivered = link["passed"] + link["duplicated"]
            if sent == last and link["datagrams"] == sent and cap.stats["received"] >= delivered:
                return
            last = sent
        # Reconciled as it is: the checks say what did not arrive.

    def checkpoint(self, cap: Any, t0: float, final: bool = False) -> Checkpoint:
        fpga, link = self.fpga_counts(), self.link_counts()
        keys = ("received", "packets", "lost", "duplicate", "late", "rejected", "chunks")
        host = {k: int(cap.stats[k]) for k in keys}
        cp = Checkpoint(
            seconds=time.monotonic() - t0,
            fpga=fpga,
            link=link,
            host=host,
            taken=asdict(self.taken),
            failed=reconcile(fpga, link, host, self.taken, final),
            final=final,
        )
        self.checkpoints.append(cp)
        self.say(cp.line())
        return cp

    def run(self) -> bool:
        cfg = self.cfg
        # From zero on every side: the core's counters cleared as a user's script does,
        # the generator held in reset by the configuration, the link's counts restarted.
        self.gbe.reset_counters()
        start = self.fpga_counts()
        if start["tx_udp_packets"] or start["pkt_sent"]:
            raise RuntimeError(f"the counters did not start from zero: {start}")
        self.board.harness.set_faults(self.block, **cfg.faults())
        self.fpga.write_int("pkt_count", 0)  # no limit: paused and resumed at checkpoints
        cap = open_capture(self.board, cfg)
        t0 = time.monotonic()
        end = t0 + 60 * cfg.minutes
        with cap:
            while time.monotonic() < end:
                self.fpga.write_int("pkt_ctrl", 1)
                stop = min(time.monotonic() + cfg.interval, end)
                while time.monotonic() < stop:
                    take(cap, self.taken, cfg.size, 0.2)
                self.fpga.write_int("pkt_ctrl", 0)
                self.drain(cap)
                self.checkpoint(cap, t0)
            cap.stop()
            while take(cap, self.taken, cfg.size, 0):
                pass
        self.checkpoint(cap, t0, final=True)
        self.fpga.disconnect()
        return all(cp.ok for cp in self.checkpoints)

    def report(self) -> dict[str, Any]:
        if not self.checkpoints:
            return {"config": asdict(self.cfg), "checkpoints": 0, "failed_checkpoints": 0}
        last = self.checkpoints[-1]
        return {
            "config": asdict(self.cfg),
            "seconds": last.seconds,
            "checkpoints": len(self.checkpoints),
            "failed_checkpoints": sum(not cp.ok for cp in self.checkpoints),
            "final": asdict(last) | {"ok": last.ok},
            "history": [asdict(cp) | {"ok": cp.ok} for cp in self.checkpoints],
        }


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = SoakConfig()
    p.add_argument("--minutes", type=float, default=d.minutes, help="how long to stream")
    p.add_argument(
        "--interval", type=float, default=d.interval, help="seconds between reconciliations"
    )
    p.add_argument("--drop", type=float, default=d.drop, help="link: drop probability")
    p.add_argument("--duplicate", type=float, default=d.duplicate, help="link: duplicate prob.")
    p.add_argument("--delay", type=float, default=d.delay, help="link: delay probability")
    p.add_argument("--seed", type=int, default=d.seed, help="link: the fault schedule's seed")
    p.add_argument("--port", type=int, default=0, help="the twin's KATCP port (0: any)")
    p.add_argument("--json", help="also write the report (every checkpoint) to this file")


def run(args: argparse.Namespace) -> int:
    try:
        cfg = SoakConfig(
            minutes=args.minutes,
            interval=args.interval,
            drop=args.drop,
            duplicate=args.duplicate,
            delay=args.delay,
            seed=args.seed,
        )
    except ValueError as exc:
        print(f"soak: {exc}", file=sys.stderr)
        return 2
    why = netns.privileged()
    if why is not None:
        print(f"soak: the soak streams through the twin's TAP device: {why}", file=sys.stderr)
        return 2
    build = toolflow_sim.build_example(checkout.BUILD_DIR / "pktgen_400g")
    board = TwinBoard(
        build.build_dir,
        network=Network("tap"),
        katcp_port=args.port,
        icmp=False,
        progress=lambda m: print(f"  {m}", flush=True),
    )
    try:
        board.start()
    except (TwinError, OSError) as exc:
        print(f"soak: the twin did not start: {exc}", file=sys.stderr)
        return 1
    try:
        proc = chain.configure(board, cfg.stream())
        if proc.returncode != 0:
            print(f"soak: configure_core.py failed:\n{proc.stderr}", file=sys.stderr)
            return 1
        print(
            f"soak: {cfg.minutes:g} min of {cfg.size}-byte datagrams through {board.mode}, "
            f"link faults drop {cfg.drop} duplicate {cfg.duplicate} delay {cfg.delay} "
            f"(seed {cfg.seed}), reconciled every {cfg.interval:g} s",
            flush=True,
        )
        soak = Soak(board, cfg, say=lambda m: print(m, flush=True))
        try:
            ok = soak.run()
        except (HarnessError, RuntimeError, OSError) as exc:
            print(f"soak: stopped: {exc}", file=sys.stderr)
            ok = False
    finally:
        board.stop()
    report = soak.report()
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1) + "\n")
    if "final" not in report:
        return 1
    final = report["final"]
    print(
        f"soak: {report['checkpoints']} checkpoints, {report['failed_checkpoints']} failed; "
        f"{final['fpga']['tx_udp_packets']:,} datagrams sent, faults: "
        f"{final['link']['dropped']:,} dropped, {final['link']['duplicated']:,} duplicated, "
        f"{final['link']['delayed']:,} delayed; mismatches {final['taken']['mismatches']}"
    )
    return 0 if ok else 1
