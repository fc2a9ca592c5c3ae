"""K receive queues sharing one capture's chunks: exact accounting on the header-split
path (the `ibv` backend's data path, against the emulated NIC) and on the `udp` backend's
SO_REUSEPORT threads, under drops, reordering across queues, duplicates, a stalled queue
and overload.

Expected counts come from test_rx_queues.model (each queue its own window of max_chunks
chunks, moved only by its own packets), written from the contract, not from the engine.
The emulated NIC steers packet `seq` to queue `seq % K`, as flow rules on round-robin
ports do, so the split path's expected counts are the model's with that assignment, and
equal the copying engine's run with the same assignment.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest
from test_rx_queues import NO_STALL_MS, Expected, model

import casper400g_rx as rx
from casper400g_rx.faults import faulty_schedule

PAYLOAD = 8192


def drain(cap: rx.Capture, timeout: float = 30.0) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    out = {}
    with cap:
        for chunk in cap.chunks(timeout=timeout):
            assert chunk.chunk_id not in out, "a chunk id was handed out twice"
            out[chunk.chunk_id] = (chunk.present.copy(), chunk.data.copy())
            chunk.release()
    assert cap.finished
    return out


def check_chunks(chunks: dict[int, tuple[np.ndarray, np.ndarray]], e: Expected, ppc: int) -> None:
    assert set(chunks) == e.chunks
    for cid, (present, data) in chunks.items():
        want = np.array([cid * ppc + k in e.placed for k in range(ppc)])
        np.testing.assert_array_equal(present, want)
        seqs = cid * ppc + np.flatnonzero(present)
        np.testing.assert_array_equal(data[present], rx.example_payloads(seqs, data.shape[1]))


def check_counts(s: rx.Stats, e: Expected) -> None:
    assert (s.late, s.duplicate, s.lost, s.rejected, s.discarded) == (
        e.late,
        e.duplicate,
        e.lost,
        0,
        0,
    )
    assert s.packets == len(e.placed)
    assert s.received == s.packets + s.late + s.duplicate
    assert s.chunks == len(e.chunks)


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("queues", [2, 4])
def test_split_queues_under_faults_match_the_per_queue_model(seed: int, queues: int) -> None:
    # Drops, duplicates, reordering and late packets, spread over K lanes by seq % K: a
    # delayed packet arrives on its lane after the other lanes moved on.
    ppc, n, window = 32, 30, 3
    f = faulty_schedule(n, ppc, window, np.random.default_rng(seed))
    e = model(f.schedule, f.schedule % queues, queues, ppc, window)
    assert e.late and e.duplicate and e.lost
    split = rx.Capture(
        "mem",
        emulate="ibv-serial",
        schedule=f.schedule,
        queues=queues,
        depth=24,
        packets_per_chunk=ppc,
        max_chunks=window,
        first_chunk=0,
        stall_timeout_ms=NO_STALL_MS,
    )
    got = drain(split)
    s = split.stats
    check_counts(s, e)
    check_chunks(got, e, ppc)
    assert s.queue_stalls == 0 and s.nic_drops == 0
    assert s.in_place + s.fixup_copies == s.packets
    assert s.in_place > 0
    # The copying engine with the same queue assignment (K threads) counts the same.
    ref = rx.Capture(
        "mem",
        schedule=f.schedule,
        queue_of=f.schedule % queues,
        queues=queues,
        packets_per_chunk=ppc,
        max_chunks=window,
        first_chunk=0,
        stall_timeout_ms=NO_STALL_MS,
        n_chunks=16,
    )
    want = drain(ref)
    check_counts(ref.stats, e)
    assert sorted(want) == sorted(got)


def test_split_lanes_racing_lose_nothing() -> None:
    # One thread per lane, unpaced: the lanes race, a lane ahead waits for the slowest
    # (its window holds the chunks back) instead of making its packets late.
    ppc, n, queues = 64, 40, 3
    cap = rx.Capture(
        "mem",
        emulate="ibv",
        count=ppc * n,
        queues=queues,
        depth=32,
        packets_per_chunk=ppc,
        max_chunks=2,
        first_chunk=0,
        stall_timeout_ms=NO_STALL_MS,
    )
    got = drain(cap)
    s = cap.stats
    assert (s.packets, s.lost, s.late, s.duplicate, s.queue_stalls) == (ppc * n, 0, 0, 0, 0)
    assert s.in_place == ppc * n and s.fixup_copies == 0
    assert sorted(got) == list(range(n))
    for cid, (present, data) in got.items():
        assert present.all()
        np.testing.assert_array_equal(data, rx.example_chunk(cid, ppc, PAYLOAD))


def test_a_stalled_split_lane_is_passed_over_and_counted() -> None:
    # Lane 1 carries the first 4 chunks' odd packets, then nothing until one straggler at
    # the end: its window and its posted receives hold the stream back until it is passed
    # over; the straggler then counts late. The pool is too small for the stream to flow
    # any other way.
    ppc, n = 32, 24
    evens = np.arange(0, ppc * n, 2)
    early_odds = np.arange(1, 4 * ppc, 2)
    head = np.sort(np.concatenate([evens[evens < 4 * ppc], early_odds]))
    schedule = np.concatenate([head, evens[evens >= 4 * ppc], [4 * ppc + 1]]).astype(np.uint64)
    cap = rx.Capture(
        "mem",
        emulate="ibv-serial",
        schedule=schedule,
        queues=2,
        depth=16,
        packets_per_chunk=ppc,
        max_chunks=2,
        n_chunks=6,
        first_chunk=0,
        stall_timeout_ms=20,
    )
    t0 = time.monotonic()
    got = drain(cap)
    s = cap.stats
    assert time.monotonic() - t0 < 20
    assert s.queue_stalls >= 1
    placed = set(head.tolist()) | set(evens.tolist())
    assert (s.packets, s.late, s.duplicate, s.rejected, s.discarded) == (len(placed), 1, 0, 0, 0)
    assert s.received == len(schedule)
    assert s.lost == n * ppc - len(placed)
    assert sorted(got) == list(range(n))
    for cid, (present, data) in got.items():
        want = np.array([cid * ppc + k in placed for k in range(ppc)])
        np.testing.assert_array_equal(present, want)
        seqs = cid * ppc + np.flatnonzero(present)
        np.testing.assert_array_equal(data[present], rx.example_payloads(seqs, PAYLOAD))


def test_split_overload_counts_every_packet() -> None:
    # Offered far above what two lane threads on shared cores take, with few posted
    # receives: the emulated NIC drops what finds no receive, and every packet is placed
    # or counted as a NIC drop; the holes are lost slots, and nothing collapses into
    # late packets or discards.
    ppc, count, queues = 64, 64 * 200, 2
    cap = rx.Capture(
        "mem",
        emulate="ibv",
        count=count,
        queues=queues,
        depth=8,
        packets_per_chunk=ppc,
        max_chunks=4,
        first_chunk=0,
        nic_rate_gbps=2000.0,
        fill=False,
        stall_timeout_ms=NO_STALL_MS,
    )
    got = drain(cap)
    s = cap.stats
    assert s.nic_drops > 0
    assert s.packets + s.nic_drops == count
    assert (s.late, s.duplicate, s.rejected, s.discarded, s.queue_stalls) == (0, 0, 0, 0, 0)
    assert s.received == s.packets
    assert s.in_place + s.fixup_copies == s.packets
    assert s.packets == sum(int(p.sum()) for p, _ in got.values())
    newest = max(got)
    assert s.packets + s.lost == (newest + 1) * ppc
    for cid, (present, data) in got.items():
        seqs = cid * ppc + np.flatnonzero(present)
        # fill=False: the emulated DMA wrote headers and prefix only; the prefix is the
        # sequence number, which the engine put in place.
        words = data[present][:, :8].view(">u8").ravel()
        np.testing.assert_array_equal(words, seqs)


def test_udp_queues_under_faults_count_exactly() -> None:
    # Two SO_REUSEPORT sockets, four source ports: the kernel spreads the batches over
    # the sockets as it hashes them. The windows span the whole stream and the pool holds
    # it, so whichever socket gets which packet, the counts are the model's: every
    # distinct packet placed once, every copy a duplicate, every hole lost.
    ppc, n = 64, 16
    f = faulty_schedule(n, ppc, n, np.random.default_rng(5), n_late=0)
    allowed = sorted(os.sched_getaffinity(0))
    cap = rx.Capture(
        "udp",
        bind="127.0.0.1:0",
        threads=2,
        cpus=[allowed[0], allowed[-1]],
        packets_per_chunk=ppc,
        max_chunks=n,
        n_chunks=n + 4,
        first_chunk=0,
        stall_timeout_ms=NO_STALL_MS,
    )
    chunks: dict[int, np.ndarray] = {}
    with cap:
        sender = rx.Sender(port=cap.port, schedule=f.schedule, rate_gbps=1.0, streams=4)
        thread = threading.Thread(target=sender.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            s = cap.stats
            if not thread.is_alive() and s.received + s.kernel_drops >= len(f.schedule):
                break
            time.sleep(0.02)
        thread.join()
        cap.stop()
        for chunk in cap.chunks(timeout=5):
            chunks[chunk.chunk_id] = chunk.present.copy()
            chunk.release()
    s = cap.stats
    assert s.kernel_drops == 0
    assert s.received == len(f.schedule)
    assert (s.packets, s.duplicate, s.late, s.lost) == (
        f.total - len(f.dropped),
        len(f.duplicated),
        0,
        len(f.dropped),
    )
    missing = np.zeros(f.total, dtype=bool)
    missing[f.dropped] = True
    assert sorted(chunks) == list(range(n))
    for cid, present in chunks.items():
        np.testing.assert_array_equal(present, ~missing[cid * ppc : (cid + 1) * ppc])


def lagging_schedule(ppc: int, n: int, copies: int) -> tuple[np.ndarray, np.ndarray]:
    """Queue 0 carries the even packets of n chunks; queue 1 first one odd packet, then
    the same packet again and again: it keeps placing (every copy is a duplicate or,
    once its window was moved, late) while its window stays at chunk 0."""
    evens = np.arange(0, n * ppc, 2, dtype=np.uint64)
    odds = np.full(copies, 1, dtype=np.uint64)
    schedule = np.concatenate([odds, evens])
    queue_of = np.concatenate([np.ones(copies, np.uint32), np.zeros(len(evens), np.uint32)])
    return schedule, queue_of


def lagging_capture(backend: str, copies: int, **kw: object) -> rx.Capture:
    ppc, n = 64, 40
    fmt = rx.Format(payload_size=64)
    schedule, queue_of = lagging_schedule(ppc, n, copies)
    if backend == "mem":
        return rx.Capture(
            "mem",
            fmt=fmt,
            schedule=schedule,
            queue_of=queue_of,
            queues=2,
            packets_per_chunk=ppc,
            max_chunks=2,
            n_chunks=4,
            first_chunk=0,
            **kw,  # type: ignore[arg-type]
        )
    # One thread per lane; the emulated NIC steers seq % 2, as queue_of says.
    return rx.Capture(
        "mem",
        emulate="ibv",
        fmt=fmt,
        schedule=schedule,
        queues=2,
        depth=16,
        packets_per_chunk=ppc,
        max_chunks=2,
        first_chunk=0,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("backend", ["mem", "split"])
def test_a_lagging_busy_queue_is_moved_forward_not_waited_for(backend: str) -> None:
    # The pool spans 4 chunks: the even queue reaches chunk 4 and must wait for the odd
    # queue, which is busy (never stalled) but lagging. With skip_lagging (the default of
    # live sources, asked for here of a replay) its window is moved forward after a fifth
    # of the stall timeout: the stream flows, the rest of its copies count late, and
    # every packet is counted exactly.
    ppc, n, copies = 64, 40, 4_000_000
    schedule, _ = lagging_schedule(ppc, n, copies)
    cap = lagging_capture(backend, copies, skip_lagging=True)
    got = drain(cap, timeout=60)
    s = cap.stats
    # Moved forward while busy; (on shared cores, a queue thread that starts more than
    # the stall timeout late is passed over as stalled instead).
    assert s.queue_skips + s.queue_stalls >= 1
    assert s.late > 0
    assert s.received == len(schedule)
    # Every even packet, and packet 1 once unless the odd queue was moved forward
    # before its first batch.
    odd_placed = s.packets - n * ppc // 2
    assert odd_placed in (0, 1)
    assert s.late + s.duplicate == copies - odd_placed
    assert s.lost == n * ppc - s.packets
    assert sorted(got) == list(range(n))


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_racing_split_lanes_under_faults_count_exactly(seed: int) -> None:
    # One thread per lane racing (no serial order), with drops, duplicates and
    # reordering: fix-up copies by one lane into slots another lane has posted, bounce
    # buffers waiting for a busy lane's receive, all without a lock per batch. The
    # windows span the stream, so whatever the interleaving the counts are exact.
    ppc, n, queues = 64, 24, 3
    f = faulty_schedule(n, ppc, n, np.random.default_rng(seed), n_late=0)
    cap = rx.Capture(
        "mem",
        emulate="ibv",
        schedule=f.schedule,
        queues=queues,
        depth=24,
        packets_per_chunk=ppc,
        max_chunks=n,
        first_chunk=0,
        stall_timeout_ms=NO_STALL_MS,
    )
    got = drain(cap)
    s = cap.stats
    assert (s.packets, s.duplicate, s.late, s.lost, s.discarded, s.nic_drops) == (
        f.total - len(f.dropped),
        len(f.duplicated),
        0,
        len(f.dropped),
        0,
        0,
    )
    assert s.received == len(f.schedule)
    assert s.in_place + s.fixup_copies == s.packets and s.fixup_copies > 0
    missing = np.zeros(f.total, dtype=bool)
    missing[f.dropped] = True
    assert sorted(got) == list(range(n))
    for cid, (present, data) in got.items():
        np.testing.assert_array_equal(present, ~missing[cid * ppc : (cid + 1) * ppc])
        seqs = cid * ppc + np.flatnonzero(present)
        np.testing.assert_array_equal(data[present], rx.example_payloads(seqs, PAYLOAD))


def test_udp_queues_overloaded_count_every_datagram() -> None:
    # Two SO_REUSEPORT sockets with small buffers, four senders' worth of source ports,
    # a burst far faster than two receive threads on shared cores take: the kernel drops
    # what does not fit, and every datagram is placed or a kernel drop.
    ppc, n = 256, 16
    count = ppc * n
    allowed = sorted(os.sched_getaffinity(0))
    cap = rx.Capture(
        "udp",
        bind="127.0.0.1:0",
        threads=2,
        cpus=[allowed[0], allowed[-1]],
        rcvbuf=128 << 10,
        packets_per_chunk=ppc,
        max_chunks=n,
        n_chunks=n + 4,
        first_chunk=0,
        stall_timeout_ms=NO_STALL_MS,
    )
    present: dict[int, np.ndarray] = {}
    with cap:
        assert cap.port
        rx.Sender(port=cap.port, count=count, streams=4).run()  # unpaced
        deadline = time.monotonic() + 20
        while cap.stats.received + cap.stats.kernel_drops < count:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        cap.stop()
        for chunk in cap.chunks(timeout=5):
            present[chunk.chunk_id] = chunk.present.copy()
            chunk.release()
    s = cap.stats
    assert s.kernel_drops > 0
    assert s.received + s.kernel_drops == count
    assert (s.late, s.duplicate, s.rejected) == (0, 0, 0)
    assert s.packets == s.received == sum(int(p.sum()) for p in present.values())
    newest = max(present)
    assert s.packets + s.lost == (newest + 1) * ppc


@pytest.mark.parametrize("backend", ["mem", "split"])
def test_a_replay_waits_for_a_lagging_queue_and_loses_nothing(backend: str) -> None:
    # The same lagging queue in a replay (skip_lagging off by default for the mem
    # generator and the unpaced NIC emulation): the others wait for it, nothing is late.
    ppc, n, copies = 64, 40, 200_000
    cap = lagging_capture(backend, copies)
    assert cap.config.skip_lagging is False
    got = drain(cap, timeout=60)
    s = cap.stats
    assert (s.queue_skips, s.queue_stalls, s.late) == (0, 0, 0)
    assert s.packets == n * ppc // 2 + 1 and s.duplicate == copies - 1
    assert sorted(got) == list(range(n))
