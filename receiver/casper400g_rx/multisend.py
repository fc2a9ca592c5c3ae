"""A loopback sender that can outrun a receiver: several C++ senders (`sendmmsg`, each
its own socket and source port) on their own threads, together sending one stream.

Thread t sends the blocks of 32 consecutive sequence numbers whose block index is t
modulo the thread count, each thread at its share of the rate, so the threads stay in
step and the stream arrives interleaved by block (reordered by at most a few blocks,
well inside any receiver's window). Each sender releases the GIL while it sends.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from . import _core

BLOCK = 32  # the C++ sender's sendmmsg batch


def schedules(first: int, count: int, threads: int) -> list[np.ndarray]:
    seqs = np.arange(first, first + count, dtype=np.uint64)
    block = (seqs - np.uint64(first)) // np.uint64(BLOCK)
    return [seqs[block % np.uint64(threads) == np.uint64(t)] for t in range(threads)]


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
) -> tuple[float, int]:
    """Sends packets first .. first + count - 1 to 127.0.0.1:port over `threads` senders
    at `rate_gbps` in total (0: as fast as they go). Returns (achieved payload Gb/s,
    packets sent)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    senders = [
        _core.Sender(
            port=port,
            payload_size=payload_size,
            schedule=sched,
            rate_gbps=rate_gbps / threads,
            prefix=prefix,
            prefix_seq_offset=prefix_seq_offset,
            prefix_seq_width=prefix_seq_width,
        )
        for sched in schedules(first, count, threads)
        if len(sched)
    ]
    workers = [threading.Thread(target=s.run) for s in senders]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    sent = sum(s.packets_sent for s in senders)
    return sent * payload_size * 8 / wall / 1e9, sent
