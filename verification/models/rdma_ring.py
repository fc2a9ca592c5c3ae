"""The RDMA mode's chunk ring: what the core sends for a stream of datagrams (golden model).

Written from the contract in docs/design/core.md §6, independently of the RTL: datagram n
is slot ``n mod S`` of chunk ``n div S``; chunk c lives at ring index ``c mod R``; a slot
holds the 64-bit sequence number (big-endian) and the datagram, sent as UC RDMA WRITE ONLY
packets of at most the path MTU, each with its own RETH; the last packet of a chunk's last
slot is WRITE ONLY with Immediate (solicited) whose immediate is ``{chunks dropped so far
mod 256, chunk mod 2^24}``; with flow control, a chunk whose ring place the consumer still
holds (``c - credit - 1 >= R`` modulo 2^32) is dropped whole.

:class:`RingSender` produces the packets as :class:`~verification.models.roce.RdmaWrite`
values (the IP Identification left 0 for the caller); :class:`RingMemory` applies them to
a byte image of the receiver's ring, as a NIC would.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from .roce import PATH_MTUS, Operation, RdmaWrite, write_only_packets

SLOT_HEADER_BYTES = 8
MASK24 = 0xFF_FFFF
MASK32 = 0xFFFF_FFFF
MASK64 = (1 << 64) - 1
NO_CREDIT = MASK32  # "no chunk released yet"


@dataclass(frozen=True)
class RingConfig:
    """The core's rdma_* registers."""

    qpn: int
    psn: int
    rkey: int
    va: int
    slot_size: int
    slots: int  # per chunk
    chunks: int  # in the ring
    mtu: int = 4096
    flow_ctrl: bool = True

    def __post_init__(self) -> None:
        if self.mtu not in PATH_MTUS[2:]:
            raise ValueError(f"path MTU {self.mtu} is not 1024, 2048 or 4096")
        if self.slots < 1 or self.chunks < 1:
            raise ValueError(f"slots {self.slots} and chunks {self.chunks} must be >= 1")
        if self.slot_size < SLOT_HEADER_BYTES:
            raise ValueError(f"slot size {self.slot_size} cannot hold the 8-byte header")

    @property
    def max_datagram(self) -> int:
        return self.slot_size - SLOT_HEADER_BYTES

    @property
    def ring_bytes(self) -> int:
        return self.slot_size * self.slots * self.chunks

    def slot_offset(self, seq: int) -> int:
        """Byte offset of datagram ``seq``'s slot from the ring's base."""
        chunk, slot = divmod(seq, self.slots)
        return ((chunk % self.chunks) * self.slots + slot) * self.slot_size

    def immediate(self, chunk: int, dropped: int) -> int:
        return ((dropped & 0xFF) << 24) | (chunk & MASK24)


class Oversize(ValueError):
    """A datagram longer than the slot minus its header: the core rejects it whole."""


class RingSender:
    """The core's framer: feed datagrams with :meth:`send`, credits with :attr:`credit`."""

    def __init__(self, cfg: RingConfig, template: RdmaWrite) -> None:
        self.cfg = cfg
        self.template = replace(template, dest_qp=cfg.qpn, rkey=cfg.rkey)
        self.seq = 0
        self.psn = cfg.psn
        self.dropped = 0  # chunks dropped so far
        self.credit = NO_CREDIT
        self._chunk_dropped = False
        self.datagrams_dropped = 0
        self.chunks_sent = 0

    def writable(self, chunk: int) -> bool:
        cfg = self.cfg
        return not cfg.flow_ctrl or ((chunk - self.credit - 1) & MASK32) < cfg.chunks

    def send(self, payload: bytes) -> list[RdmaWrite]:
        """The packets for the next datagram ([] when its chunk is dropped)."""
        cfg = self.cfg
        if len(payload) > cfg.max_datagram:
            raise Oversize(f"{len(payload)} bytes > slot {cfg.slot_size} - 8")
        seq = self.seq
        self.seq += 1
        chunk, slot = divmod(seq, cfg.slots)
        if slot == 0:
            self._chunk_dropped = not self.writable(chunk)
            self.dropped += self._chunk_dropped
        if self._chunk_dropped:
            self.datagrams_dropped += 1
            return []
        last = slot == cfg.slots - 1
        imm = cfg.immediate(chunk, self.dropped) if last else None
        w = replace(
            self.template,
            va=(cfg.va + cfg.slot_offset(seq)) & MASK64,
            psn=self.psn,
        )
        data = seq.to_bytes(SLOT_HEADER_BYTES, "big") + payload
        packets = list(write_only_packets(w, data, cfg.mtu, immediate=imm))
        if imm is not None:
            packets[-1] = replace(packets[-1], solicited=True)
            self.chunks_sent += 1
        self.psn = (self.psn + len(packets)) & MASK24
        return packets


class RingMemory:
    """The receiver's ring as bytes, written by RDMA WRITE packets (base VA ``cfg.va``)."""

    def __init__(self, cfg: RingConfig, fill: int = 0) -> None:
        self.cfg = cfg
        self.data = bytearray([fill]) * cfg.ring_bytes
        self.immediates: list[int] = []

    def apply(self, w: RdmaWrite) -> None:
        if w.operation not in (Operation.RDMA_WRITE_ONLY, Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE):
            raise ValueError(f"unexpected {w.operation.name}")
        off = (w.va - self.cfg.va) & MASK64
        if off + len(w.payload) > len(self.data):
            raise ValueError(f"write of {len(w.payload)} B at ring offset {off} is out of range")
        self.data[off : off + len(w.payload)] = w.payload
        if w.immediate is not None:
            self.immediates.append(w.immediate)


# Ring geometries that together cover the three path MTUs, PSNs through the 24-bit wrap, a
# VA through 2^64, one and several slots per chunk, slots of many packets and of one word:
# what the RDMA benches run their datagrams through.
TEST_RINGS: tuple[RingConfig, ...] = (
    RingConfig(qpn=0x123456, psn=0xFF_FFF0, rkey=0xA5A5F00D, va=0x7F00_0000_0040,
               slot_size=4104, slots=3, chunks=2, mtu=1024),
    RingConfig(qpn=0x000001, psn=0xFF_FFFE, rkey=0x1, va=0xFFFF_FFFF_FFFF_C000,
               slot_size=8980, slots=1, chunks=3, mtu=2048),
    RingConfig(qpn=0xABCDEF, psn=0x000000, rkey=0xDEADBEEF, va=0x1_0000_0000,
               slot_size=8200, slots=4, chunks=2, mtu=4096),
    RingConfig(qpn=0x00FFFF, psn=0x7FFFFF, rkey=0x8000_0000, va=0x1000,
               slot_size=136, slots=5, chunks=3, mtu=4096),
)  # fmt: skip


def datagram_sizes(cfg: RingConfig, count: int, rng: random.Random) -> list[int]:
    """``count`` datagram sizes for ``cfg``: half at the edges of words, packets and the
    slot, half uniform up to the largest the slot takes."""
    m = cfg.mtu
    edges = [1, 2, 3, 119, 120, 121, 127, 128, m - 8, m - 7, m - 9, m, 2 * m - 8, 2 * m - 7]
    edges = [e for e in edges if e <= cfg.max_datagram] + [cfg.max_datagram]
    return [
        rng.choice(edges) if rng.random() < 0.5 else rng.randint(1, cfg.max_datagram)
        for _ in range(count)
    ]
