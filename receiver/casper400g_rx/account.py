"""The array's loss account: every transmitter's count reconciled with every capture's.

A transmitter (a core of an FPGA, read over casperfpga; or a test's sender) says how many
datagrams it put on the wire for a set of streams; each stream is one capture on one
host. The engine's counters give, per capture, the packets it placed and the slots it
counted `lost` (every slot of its window that no packet filled), so for each transmitter

    transmitted == sum over its captures of (placed + lost)

when every packet it sent was for a slot inside some capture's window. Beside the lost
slots stand the host's counters of packets that came but filled no slot: after their
chunk left (`late`), in a chunk given up because the consumer held every chunk
(`no_free_chunk`), too far from the window to trust (`out_of_window`), dropped by the
host's socket buffer (`kernel_drops`), for want of a posted receive (`nic_drops`) or for
coming from another sender than the source's filter (`source_filtered`), malformed
(`rejected`). Each may explain a lost slot (a delayed packet) or not (a delayed copy of
a placed one, a stray datagram), so lost minus all of them is
what at least never reached the host: dropped by a link, the switch or the NIC, or never
sent. When the two sides differ, the
difference is named: packets sent outside every capture's window (before a capture's
first chunk, after it stopped, to a destination nobody captures), or slots counted that
the transmitter did not send (another sender on the stream, a counter read too early).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# Counters of packets that came but filled no slot (only those a backend has appear).
# Counts of events rather than packets (window_resyncs, chunks_given_up, the rdma ring's
# resyncs) are no cause; its out_of_window_immediates is its out_of_window again.
CAUSES = (
    "late",
    "no_free_chunk",
    "out_of_window",
    "kernel_drops",
    "nic_drops",
    "source_filtered",
    "rejected",
)


@dataclass(frozen=True)
class Transmitted:
    """What one transmitter says it sent: `packets` on the wire for the captures named in
    `streams`; `not_sent` what it dropped itself, by reason (never on the wire)."""

    source: str
    streams: tuple[str, ...]
    packets: int
    not_sent: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "streams", tuple(self.streams))
        if not self.streams:
            raise ValueError(f"transmitter {self.source!r} names no stream")
        if self.packets < 0:
            raise ValueError(f"packets must be >= 0, got {self.packets!r} for {self.source!r}")


class CoreCounters(Protocol):
    """What the account reads from a core (casperfpga's gbe object, casperfpga_ext's)."""

    def read_reg(self, name: str) -> int: ...


def from_core(gbe: CoreCounters, source: str, streams: Sequence[str]) -> Transmitted:
    """A core's count read over casperfpga (`fpga.gbes[name]`): the UDP datagrams its user
    port sent, and those it dropped for an invalid ARP entry or a full TX buffer."""
    return Transmitted(
        source=source,
        streams=tuple(streams),
        packets=int(gbe.read_reg("tx_udp_packets")),
        not_sent={
            "arp_miss": int(gbe.read_reg("tx_arp_miss")),
            "tx_overflow": int(gbe.read_reg("tx_overflow")),
        },
    )


@dataclass(frozen=True)
class CaptureFigures:
    """One capture's counters as the account uses them."""

    stream: str
    host: str
    received: int
    placed: int
    lost: int
    duplicate: int
    causes: Mapping[str, int]

    @classmethod
    def from_stats(cls, stream: str, host: str, stats: Mapping[str, Any]) -> CaptureFigures:
        return cls(
            stream=stream,
            host=host,
            received=int(stats["received"]),
            placed=int(stats["packets"]),
            lost=int(stats["lost"]),
            duplicate=int(stats["duplicate"]),
            causes={k: int(stats[k]) for k in CAUSES if k in stats},
        )

    @property
    def unreached(self) -> int:
        """Lost slots that no packet counted at the host can explain: at least this many
        packets never reached it."""
        return max(0, self.lost - sum(self.causes.values()))


@dataclass(frozen=True)
class Line:
    """One transmitter's reconciliation."""

    transmitted: Transmitted
    captures: tuple[CaptureFigures, ...]

    @property
    def accounted(self) -> int:
        return sum(c.placed + c.lost for c in self.captures)

    @property
    def difference(self) -> int:
        """transmitted - accounted: 0 when every packet sent is placed or lost by cause."""
        return self.transmitted.packets - self.accounted

    @property
    def balanced(self) -> bool:
        return self.difference == 0

    def explanation(self) -> str:
        d = self.difference
        if d > 0:
            return (
                f"{d} sent but in no capture's window (sent before a capture's first chunk, "
                "after it stopped, or to a destination no capture receives)"
            )
        if d < 0:
            return (
                f"{-d} more slots than sent (another sender on these streams, a capture's "
                "window starting before the stream, or the count read before the stream ended)"
            )
        return "balanced"


@dataclass(frozen=True)
class ArrayAccount:
    """The whole array's table: one line per transmitter, its captures beneath."""

    lines: tuple[Line, ...]
    unclaimed: tuple[CaptureFigures, ...] = ()  # captures no transmitter names

    @property
    def balanced(self) -> bool:
        return all(line.balanced for line in self.lines) and not self.unclaimed

    def rows(self) -> list[dict[str, Any]]:
        """The table as rows (one per capture, the transmitter's figures on each)."""
        out = []
        for line in self.lines:
            tx = line.transmitted
            for c in line.captures:
                out.append(
                    {
                        "transmitter": tx.source,
                        "transmitted": tx.packets,
                        "stream": c.stream,
                        "host": c.host,
                        "received": c.received,
                        "placed": c.placed,
                        "lost": c.lost,
                        **{k: v for k, v in c.causes.items()},
                        "unreached": c.unreached,
                        "duplicate": c.duplicate,
                        "difference": line.difference,
                        "verdict": line.explanation(),
                    }
                )
        for c in self.unclaimed:
            out.append(
                {
                    "transmitter": "",
                    "stream": c.stream,
                    "host": c.host,
                    "placed": c.placed,
                    "lost": c.lost,
                    "verdict": "no transmitter names this stream",
                }
            )
        return out

    def table(self) -> Any:
        """A rich Table of the account (printable with rich's Console)."""
        from rich.table import Table

        t = Table(title="the array's loss account", title_justify="left")
        causes = [k for k in CAUSES if any(k in c.causes for ln in self.lines for c in ln.captures)]
        for col in ("transmitter", "sent", "stream", "host", "placed", "lost"):
            t.add_column(col, justify="right" if col in ("sent", "placed", "lost") else "left")
        for k in (*causes, "duplicate"):
            t.add_column(k, justify="right")
        t.add_column("never arrived (at least)", justify="right")
        t.add_column("sent = placed + lost?")
        for line in self.lines:
            tx = line.transmitted
            first = True
            for c in line.captures:
                cells = [
                    tx.source if first else "",
                    f"{tx.packets:,}" if first else "",
                    c.stream,
                    c.host,
                    f"{c.placed:,}",
                    f"{c.lost:,}",
                    *(f"{c.causes.get(k, 0):,}" for k in causes),
                    f"{c.duplicate:,}",
                    f"{c.unreached:,}",
                    line.explanation() if first else "",
                ]
                t.add_row(*cells)
                first = False
            for reason, n in tx.not_sent.items():
                if n:
                    t.add_row("", f"not sent ({reason}): {n:,}", *[""] * (len(t.columns) - 2))
        for c in self.unclaimed:
            t.add_row(
                "?", "", c.stream, c.host, f"{c.placed:,}", f"{c.lost:,}",
                *[""] * (len(t.columns) - 7), "no transmitter names this stream",
            )  # fmt: skip
        return t


def reconcile(
    transmitted: Iterable[Transmitted], captures: Iterable[CaptureFigures]
) -> ArrayAccount:
    """The account of these transmitters against these captures (by stream name)."""
    by_stream = {}
    for c in captures:
        if c.stream in by_stream:
            raise ValueError(f"stream {c.stream!r} is reported by two captures")
        by_stream[c.stream] = c
    lines = []
    claimed: set[str] = set()
    for tx in transmitted:
        missing = [s for s in tx.streams if s not in by_stream]
        if missing:
            raise ValueError(f"{tx.source!r} names streams no capture reports: {missing}")
        twice = claimed.intersection(tx.streams)
        if twice:
            raise ValueError(f"streams {sorted(twice)} are named by two transmitters")
        claimed.update(tx.streams)
        lines.append(Line(tx, tuple(by_stream[s] for s in tx.streams)))
    unclaimed = tuple(c for s, c in by_stream.items() if s not in claimed)
    return ArrayAccount(tuple(lines), unclaimed)
