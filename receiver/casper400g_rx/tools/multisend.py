"""A loopback sender that can outrun a receiver: several C++ senders (`sendmmsg`, each
its own socket and source port) on their own threads, together sending one stream.

Thread t sends the blocks of 32 consecutive sequence numbers whose block index is t
modulo the thread count, each thread at its share of the rate and on ONE schedule that
starts at the same instant for all (one whose thread started late or lost its core
catches up rather than staying behind), so the threads stay in step and the stream
arrives interleaved by block (reordered by a few blocks, well inside any receiver's
window). The threads are C++ threads (`send_in_step`), optionally pinned, that never
take the GIL (Python threads each paced from their own start, a few ms apart with 8 of
them, and took the GIL back every 50 ms). Two threads' packets reach the same receive
queue, so threads further apart than the receiver's window make packets count `late`
whatever the receive threads do: `Sent.max_lag` says how far behind the schedule the
furthest-behind thread fell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from .. import _core

BLOCK = 32  # the C++ sender's sendmmsg batch


def schedules(first: int, count: int, threads: int) -> list[np.ndarray]:
    seqs = np.arange(first, first + count, dtype=np.uint64)
    block = (seqs - np.uint64(first)) // np.uint64(BLOCK)
    return [seqs[block % np.uint64(threads) == np.uint64(t)] for t in range(threads)]


class Sent(NamedTuple):
    gbps: float  # achieved payload rate
    packets: int
    max_lag: float  # seconds the furthest-behind thread fell behind the schedule


def send(
    port: int,
    first: int,
    count: int,
    rate_gbps: float,
    threads: int,
    *,
    payload_size: int = 8192,
    prefix: bytes = b"",
    prefix_seq_offset: int = 0,
    prefix_seq_width: int = 0,
    cpus: Sequence[int] | None = None,
    gso_segments: int = 0,
) -> Sent:
    """Sends packets first .. first + count - 1 to 127.0.0.1:port over `threads` senders
    at `rate_gbps` in total (0: as fast as they go), thread i pinned to cpus[i] when
    given; `gso_segments` > 1 sends that many datagrams per UDP GSO send (a divisor of
    the 32-packet block, so a send never spans two threads' blocks)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if gso_segments > 1 and BLOCK % gso_segments:
        raise ValueError(f"gso_segments must divide the {BLOCK}-packet block, got {gso_segments}")
    senders = [
        _core.Sender(
            port=port,
            payload_size=payload_size,
            schedule=sched,
            rate_gbps=rate_gbps / threads,
            prefix=prefix,
            prefix_seq_offset=prefix_seq_offset,
            prefix_seq_width=prefix_seq_width,
            catch_up=True,
            gso_segments=gso_segments,
        )
        for sched in schedules(first, count, threads)
        if len(sched)
    ]
    pins = list(cpus or [])[: len(senders)]
    if pins and len(pins) < len(senders):
        raise ValueError(f"cpus names {len(pins)} CPUs for {len(senders)} sender threads")
    _core.send_in_step(senders, pins)
    # From the shared start (a moment after the call) to the last sender's end.
    wall = max(s.elapsed for s in senders)
    sent = sum(s.packets_sent for s in senders)
    return Sent(sent * payload_size * 8 / wall / 1e9, sent, max(s.max_lag for s in senders))
