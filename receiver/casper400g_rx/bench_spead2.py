"""casper400g_rx and spead2 side by side on one packet stream over loopback UDP.

The common stream is SPEAD, spead2's own protocol: one heap per packet, each heap one
8192-B item (an example-stream payload), laid out as spead2's sender does it: the 8-B
SPEAD header, five item pointers and the payload (8240 B). One sender serves both
receivers: the project's C++ sendmmsg sender, rate-limited, to 127.0.0.1, on several
threads where the machine has the cores (multisend.py: each thread its own socket and
a share of the rate), so that the sender outruns both receivers and the figure measures
the receivers (spead2's own Python-driven sender tops out near 2 Gb/s on a small machine).

spead2 receives the stream with its chunk stream (one receive thread; a compiled place
callback maps the heap counter to chunk and slot, as a CASPER receiver would).
casper400g_rx receives it with its UDP backend (one receive thread), reading the heap
counter's 48-bit immediate value as the sequence number at payload offset 10 and placing
whole packets. Both deliver chunks of 1024 packets to a Python consumer that releases
them at once. The figure of merit is the highest offered rate at which a receiver places
every packet. spead2 hands out the chunks still open in its window only as newer heaps
arrive, so every trial sends four extra chunks after the counted ones, and both receivers
are judged on the counted chunks only. Both sockets get the same receive buffer (what
net.core.rmem_max allows).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import numpy as np

from . import _core, multisend
from .capture import Capture

HEAP_PAYLOAD = 8192
PACKET = 8 + 5 * 8 + HEAP_PAYLOAD  # SPEAD header, 5 item pointers, payload
PPC = 1024


def _rcvbuf() -> int:
    with open("/proc/sys/net/core/rmem_max") as f:
        return min(64 << 20, int(f.read()))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# SPEAD-64-48 packet header for a one-packet heap of one 8192-B item, as spead2's
# sender lays it out: header, then immediate item pointers heap counter (bytes 8..15,
# value written per packet), heap size, heap offset, payload length, then the item.
SPEAD_PREFIX = bytes.fromhex(
    "5304020600000005"
    "8001000000000000"
    "8002000000002000"
    "8003000000000000"
    "8004000000002000"
    "1000000000000000"
)


def _send_spead(port: int, count: int, rate_gbps: float, sender_threads: int = 1) -> float:
    """Send heaps cnt = PPC .. with the C++ sender (`sender_threads` of them, each its own
    socket, multisend.py); returns achieved payload Gb/s."""
    total = count + 4 * PPC  # the tail pushes the counted chunks out of both windows
    if sender_threads > 1:
        return multisend.send(
            port,
            PPC,
            total,
            rate_gbps,
            sender_threads,
            payload_size=HEAP_PAYLOAD,
            prefix=SPEAD_PREFIX,
            prefix_seq_offset=10,
            prefix_seq_width=6,
        )[0]
    sender = _core.Sender(
        port=port,
        first=PPC,
        count=total,
        rate_gbps=rate_gbps,
        prefix=SPEAD_PREFIX,
        prefix_seq_offset=10,
        prefix_seq_width=6,
    )
    sender.run()
    return total * HEAP_PAYLOAD * 8 / sender.elapsed / 1e9


def _count(rate_gbps: float, seconds: float) -> int:
    return max(PPC, int(seconds * rate_gbps * 1e9 / (HEAP_PAYLOAD * 8)) // PPC * PPC)


def casper_trial(
    rate_gbps: float, seconds: float, sender_threads: int = 1
) -> tuple[bool, float, dict]:
    count = _count(rate_gbps, seconds)
    last_chunk = count // PPC  # counted chunks: 1 .. last_chunk
    fmt = _core.Format(payload_size=PACKET, seq_offset=10, seq_width=6)
    cap = Capture(
        "udp",
        bind="127.0.0.1:0",
        fmt=fmt,
        packets_per_chunk=PPC,
        n_chunks=16,
        first_chunk=1,
        rcvbuf=_rcvbuf(),
    )
    placed = 0
    done = threading.Event()

    def consume() -> None:
        nonlocal placed
        while not done.is_set():
            for chunk in cap.chunks(timeout=0.05):
                if chunk.chunk_id <= last_chunk:
                    placed += chunk.n_present
                chunk.release()

    with cap:
        assert cap.port is not None
        consumer = threading.Thread(target=consume)
        consumer.start()
        try:
            achieved = _send_spead(cap.port, count, rate_gbps, sender_threads)
            deadline = time.monotonic() + 1.5
            while placed < count and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            done.set()
            consumer.join()
    return placed == count, achieved, {"placed": placed, **cap.stats}


def spead2_trial(
    rate_gbps: float, seconds: float, sender_threads: int = 1
) -> tuple[bool, float, dict]:
    import spead2
    import spead2.recv

    count = _count(rate_gbps, seconds)
    port = _free_port()
    pool = spead2.ThreadPool(1)
    chunk_config = spead2.recv.ChunkStreamConfig(
        items=[spead2.HEAP_CNT_ID], max_chunks=4, place=_core._spead2_place(PPC, HEAP_PAYLOAD)
    )
    data_ring = spead2.recv.ChunkRingbuffer(16)
    free_ring = spead2.recv.ChunkRingbuffer(16)
    stream = spead2.recv.ChunkRingStream(
        pool, spead2.recv.StreamConfig(max_heaps=8), chunk_config, data_ring, free_ring
    )
    for _ in range(16):
        stream.add_free_chunk(
            spead2.recv.Chunk(
                data=np.empty(PPC * HEAP_PAYLOAD, np.uint8), present=np.empty(PPC, np.uint8)
            )
        )
    stream.add_udp_reader(port, buffer_size=_rcvbuf(), bind_hostname="127.0.0.1")
    placed = 0
    last_chunk = count // PPC

    def consume() -> None:
        nonlocal placed
        for chunk in data_ring:
            if chunk.chunk_id <= last_chunk:
                placed += int(np.count_nonzero(chunk.present))
            stream.add_free_chunk(chunk)

    consumer = threading.Thread(target=consume)
    consumer.start()
    try:
        achieved = _send_spead(port, count, rate_gbps, sender_threads)
        deadline = time.monotonic() + 1.5
        while placed < count and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stream.stop()
        consumer.join()
    return placed == count, achieved, {"placed": placed}


LADDER = (
    0.5,
    1.0,
    1.5,
    2.0,
    2.5,
    3.0,
    4.0,
    5.0,
    6.0,
    8.0,
    10.0,
    12.0,
    16.0,
    20.0,
    24.0,
    28.0,
    32.0,
    40.0,
    48.0,
    64.0,
)


def compare_with_spead2(
    seconds: float, attempts: int = 3, sender_threads: int = 1
) -> tuple[float, float] | None:
    """Offers both receivers the same rates, alternating between them at every step.

    A rate counts as zero-loss for a receiver when any of `attempts` trials places every
    packet (a busy two-core machine fails trials at random); which receiver goes first
    alternates from one rate to the next. The ladder stops once
    spead2's sender cannot reach the offered rate or both receivers lose packets.
    Returns (casper400g_rx, spead2) highest zero-loss achieved Gb/s.
    """
    try:
        import spead2  # noqa: F401
    except ImportError:
        print("spead2 is not installed (pip install spead2): peer comparison skipped")
        return None
    trials: dict[str, Callable[[float, float, int], tuple[bool, float, dict]]] = {
        "casper400g_rx": casper_trial,
        "spead2": spead2_trial,
    }
    best = {name: 0.0 for name in trials}
    print(f"sender: {sender_threads} thread(s) (C++ sendmmsg, each its own socket)")
    print("offered Gb/s | casper400g_rx: zero-loss, achieved | spead2: zero-loss, achieved")
    for step, rate in enumerate(LADDER):
        row: dict[str, tuple[bool, float]] = {}
        order = list(trials.items())
        for name, trial in order if step % 2 == 0 else order[::-1]:
            ok, achieved = False, 0.0
            for _ in range(attempts):
                ok, achieved, _stats = trial(rate, seconds, sender_threads)
                if ok:
                    break
            row[name] = (ok, achieved)
            if ok:
                best[name] = max(best[name], achieved)
        print(
            f"{rate:12.1f} | {'yes' if row['casper400g_rx'][0] else 'no ':>3} "
            f"{row['casper400g_rx'][1]:6.2f} | {'yes' if row['spead2'][0] else 'no ':>3} "
            f"{row['spead2'][1]:6.2f}"
        )
        sender_limited = max(a for _, a in row.values()) < 0.75 * rate
        if sender_limited or not any(ok for ok, _ in row.values()):
            break
    ours, theirs = best["casper400g_rx"], best["spead2"]
    print(f"casper400g_rx highest zero-loss achieved rate: {ours:.2f} Gb/s (1 receive thread)")
    print(f"spead2 highest zero-loss achieved rate: {theirs:.2f} Gb/s (1 receive thread)")
    if theirs > 0:
        print(f"ratio casper400g_rx / spead2: {ours / theirs:.2f}")
    return ours, theirs
