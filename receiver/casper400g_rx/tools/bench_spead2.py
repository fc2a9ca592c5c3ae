"""casper400g_rx and spead2 side by side: SPEAD heaps captured from memory (the engines
alone) and one packet stream over loopback UDP.

From memory (`compare_spead_from_memory`): spead2's own sender (BytesStream) makes the
packets of N heaps (a data item plus two immediate items, timestamp and channel); spead2
reads them with its chunk stream (ChunkRingStream, a buffer reader, the compiled place
callback `_core._spead2_place` that writes the two items to the chunk's `extra`), and
casper400g_rx with `Format.spead` and its mem backend (one queue). Both fill chunks of
about 8 MiB and hand them to a Python consumer that gives them back at once; both must
report every heap complete. The figure is heap payload bytes per second of the whole
capture, best of several alternating trials.

Over loopback UDP (`compare_with_spead2`):

The common stream is SPEAD, spead2's own protocol: one heap per packet, each heap one
8192-B item (an example-stream payload), laid out as spead2's sender does it: the 8-B
SPEAD header, five item pointers and the payload (8240 B). One sender serves both
receivers: the project's C++ sendmmsg sender, rate-limited, to 127.0.0.1, on several
threads where the machine has the cores (multisend.py: each thread its own socket and
a share of the rate), so that the sender outruns both receivers and the figure measures
the receivers (spead2's own Python-driven sender tops out near 2 Gb/s on a small machine).

spead2 receives the stream with its chunk stream (one receive thread; a compiled place
callback maps the heap counter to chunk and slot, as a CASPER receiver would).
casper400g_rx receives it with its UDP backend (one receive thread) and `Format.spead`: each
packet parsed as SPEAD, its heap placed by the heap counter. Both deliver chunks of 1024
packets to a Python consumer that releases them at once. The figure of merit is the
highest offered rate at which a receiver places every packet. spead2 hands out the chunks
still open in its window only as newer heaps arrive, so every trial sends four extra
chunks after the counted ones, and both receivers are judged on the counted chunks only.
Both sockets get the same receive buffer (what net.core.rmem_max allows).
"""

from __future__ import annotations

import os
import socket
import statistics
import struct
import threading
import time
from collections.abc import Callable

import numpy as np

from .. import Capture, Chunking, MemSource, UdpSource, _core
from . import multisend

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
    fmt = _core.Format.spead(HEAP_PAYLOAD, max_packet=PACKET)
    cap = Capture(
        UdpSource(bind="127.0.0.1:0", rcvbuf=_rcvbuf()),
        fmt=fmt,
        chunking=Chunking(packets_per_chunk=PPC, n_chunks=16, first_chunk=1),
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
        items=[spead2.HEAP_CNT_ID, spead2.HEAP_LENGTH_ID],
        max_chunks=4,
        place=_core._spead2_place(PPC, HEAP_PAYLOAD),
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


# ---------------------------------------------------------------------- from memory
TIMESTAMP, CHANNEL = 0x1600, 0x4103
# (label, heap bytes, spead2 sender's max_packet_size)
SPEAD_SHAPES = (
    ("one 8192-B heap per packet", 8192, 9000),
    ("65536-B heaps in 8 packets", 65536, 9000),
    ("65536-B heaps in 1472-B packets", 65536, 1472),
)


def spead_packets(n_heaps: int, heap_size: int, max_packet: int) -> list[bytes]:
    """The packets spead2's sender makes of n_heaps heaps (heap counters 0..n-1)."""
    import spead2
    import spead2.send

    stream = spead2.send.BytesStream(
        spead2.ThreadPool(1), spead2.send.StreamConfig(max_packet_size=max_packet)
    )
    ig = spead2.send.ItemGroup(flavour=spead2.Flavour(4, 64, 48, 0))
    ig.add_item(TIMESTAMP, "timestamp", "", shape=(), format=[("u", 48)])
    ig.add_item(CHANNEL, "channel", "", shape=(), format=[("u", 48)])
    ig.add_item(0x3300, "data", "", shape=(heap_size,), dtype=np.uint8)
    ig["data"].value = np.arange(heap_size, dtype=np.uint64).astype(np.uint8)
    ig["channel"].value = 7
    for cnt in range(n_heaps):
        ig["timestamp"].value = cnt * 4096
        stream.send_heap(ig.get_heap(descriptors="none", data="all"), cnt=cnt)
    blob = stream.getvalue()
    out, off = [], 0
    while off < len(blob):
        (n_items,) = struct.unpack_from(">H", blob, off + 6)
        length = 0
        for i in range(n_items):
            (ptr,) = struct.unpack_from(">Q", blob, off + 8 + 8 * i)
            if ptr >> 48 == 0x8004:  # immediate payload length
                length = ptr & ((1 << 48) - 1)
        size = 8 + 8 * n_items + length
        out.append(blob[off : off + size])
        off += size
    return out


def casper_from_memory(
    rows: np.ndarray, sizes: list[int], heap_size: int, hpc: int, n_heaps: int
) -> float:
    fmt = _core.Format.spead(heap_size, items=[TIMESTAMP, CHANNEL], max_packet=rows.shape[1])
    cap = Capture(
        MemSource(packets=rows, sizes=sizes),
        fmt=fmt,
        chunking=Chunking(packets_per_chunk=hpc, max_chunks=4),
    )
    complete = 0
    t0 = time.perf_counter()
    cap.start()
    for chunk in cap.chunks(timeout=10):
        complete += chunk.n_present
        chunk.release()
    elapsed = time.perf_counter() - t0
    cap.stop()
    if complete != n_heaps:
        raise RuntimeError(f"casper400g_rx completed {complete} of {n_heaps} heaps")
    return elapsed


def spead2_from_memory(blob: bytes, heap_size: int, hpc: int, n_heaps: int) -> float:
    import spead2
    import spead2.recv

    config = spead2.recv.ChunkStreamConfig(
        items=[spead2.HEAP_CNT_ID, spead2.HEAP_LENGTH_ID, TIMESTAMP, CHANNEL],
        max_chunks=4,
        place=_core._spead2_place(hpc, heap_size, 1, 2),
        max_heap_extra=16,
    )
    data_ring = spead2.recv.ChunkRingbuffer(8)
    free_ring = spead2.recv.ChunkRingbuffer(8)
    stream = spead2.recv.ChunkRingStream(
        spead2.ThreadPool(1), spead2.recv.StreamConfig(max_heaps=8), config, data_ring, free_ring
    )
    for _ in range(8):
        # Written once before the clock starts (np.full, not np.zeros, whose pages the
        # kernel maps on first write): casper400g_rx's pool is touched when it is made,
        # so neither receiver pays page faults inside the trial.
        stream.add_free_chunk(
            spead2.recv.Chunk(
                data=np.full(hpc * heap_size, 0, np.uint8),
                present=np.full(hpc, 0, np.uint8),
                extra=np.full(hpc * 2, 0, np.uint64),
            )
        )
    complete = 0
    t0 = time.perf_counter()
    stream.add_buffer_reader(blob)
    for chunk in data_ring:
        complete += int(np.count_nonzero(chunk.present))
        stream.add_free_chunk(chunk)
    elapsed = time.perf_counter() - t0
    stream.stop()
    if complete != n_heaps:
        raise RuntimeError(f"spead2 completed {complete} of {n_heaps} heaps")
    return elapsed


def compare_spead_from_memory(
    total_bytes: int = 128 << 20, trials: int = 5
) -> list[tuple[str, float, float]]:
    """Returns (shape, casper400g_rx Gb/s, spead2 Gb/s) per heap shape (best of `trials`)."""
    try:
        import spead2  # noqa: F401
    except ImportError:
        print("spead2 is not installed (pip install spead2): SPEAD comparison skipped")
        return []
    rows_out = []
    print("SPEAD from memory, 1 receive thread each | casper400g_rx Gb/s | spead2 Gb/s | ratio")
    for label, heap_size, max_packet in SPEAD_SHAPES:
        n_heaps = total_bytes // heap_size
        hpc = max(1, min((8 << 20) // heap_size, n_heaps // 4))
        n_heaps -= n_heaps % hpc
        packets = spead_packets(n_heaps, heap_size, max_packet)
        stride = max(len(p) for p in packets)
        rows = np.zeros((len(packets), stride), np.uint8)
        for i, p in enumerate(packets):
            rows[i, : len(p)] = np.frombuffer(p, np.uint8)
        sizes = [len(p) for p in packets]
        blob = b"".join(packets)
        ours, theirs = [], []
        for t in range(trials):
            for who in ("casper", "spead2") if t % 2 == 0 else ("spead2", "casper"):
                if who == "casper":
                    ours.append(casper_from_memory(rows, sizes, heap_size, hpc, n_heaps))
                else:
                    theirs.append(spead2_from_memory(blob, heap_size, hpc, n_heaps))
        bits = n_heaps * heap_size * 8
        a, b = bits / min(ours) / 1e9, bits / min(theirs) / 1e9
        print(
            f"{label} ({len(packets)} packets) | {a:.1f} | {b:.1f} | {a / b:.2f}"
            f"   (medians {bits / statistics.median(ours) / 1e9:.1f} / "
            f"{bits / statistics.median(theirs) / 1e9:.1f})"
        )
        rows_out.append((label, a, b))
    return rows_out


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mbytes", type=int, default=128, help="heap payload per trial (MiB)")
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    compare_spead_from_memory(args.mbytes << 20, args.trials)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
