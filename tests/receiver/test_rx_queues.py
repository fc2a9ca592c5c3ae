"""One capture, several receive queues sharing one chunk stream: exact accounting.

Expected counts come from a model written from the contract (receiver/README.md): each
queue has its own window of `max_chunks` chunks that only its own packets move; a packet
older than its queue's window is late; of the copies of one sequence number that are not
late, exactly one is placed and the others are duplicates; every slot of the chunks from
the first to the newest with data that holds no packet is lost. Nothing in it depends
on how the queue threads interleave, so the counts are exact whatever the timing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pytest
from live_udp import apart_cpus, keep_present, receive_while_sending, reuseport_capture

import casper400g_rx as rx
from casper400g_rx.faults import faulty_schedule

PAYLOAD = 8192
NO_STALL_MS = 60_000  # timing cannot pass a queue over in these tests


@dataclass
class Expected:
    placed: set[int]
    late: int
    duplicate: int
    lost: int
    chunks: set[int]


def model(
    schedule: np.ndarray, queue_of: np.ndarray, queues: int, ppc: int, max_chunks: int
) -> Expected:
    heads = [0] * queues  # first_chunk=0
    placed: set[int] = set()
    late = duplicate = 0
    for seq, q in zip(schedule.tolist(), queue_of.tolist(), strict=True):
        cid = seq // ppc
        if cid < heads[q]:
            late += 1
            continue
        if cid - heads[q] >= max_chunks:
            heads[q] = cid - max_chunks + 1
        if seq in placed:
            duplicate += 1
        else:
            placed.add(seq)
    chunks = {s // ppc for s in placed}
    lost = (max(chunks) + 1) * ppc - len(placed)
    return Expected(placed, late, duplicate, lost, chunks)


def run(cap: rx.Capture, timeout: float = 30.0) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    out = {}
    with cap:
        for chunk in cap.chunks(timeout=timeout):
            assert chunk.chunk_id not in out, "a chunk id was handed out twice"
            out[chunk.chunk_id] = (chunk.present.copy(), chunk.data.copy())
            chunk.release()
    assert cap.finished
    return out


def check(
    cap: rx.Capture, chunks: dict[int, tuple[np.ndarray, np.ndarray]], e: Expected, ppc: int
) -> None:
    s = cap.stats
    assert s.queue_stalls == 0
    assert (s.late, s.duplicate, s.lost, s.rejected) == (e.late, e.duplicate, e.lost, 0)
    assert s.packets == len(e.placed)
    assert s.bytes == s.packets * PAYLOAD
    assert s.received == s.packets + s.late + s.duplicate
    assert s.chunks == len(e.chunks)
    assert set(chunks) == e.chunks
    for cid, (present, data) in chunks.items():
        want = np.array([cid * ppc + k in e.placed for k in range(ppc)])
        np.testing.assert_array_equal(present, want)
        seqs = cid * ppc + np.flatnonzero(present)
        np.testing.assert_array_equal(data[present], rx.example_payloads(seqs, PAYLOAD))


def generator(
    schedule: np.ndarray,
    queue_of: np.ndarray,
    queues: int,
    ppc: int,
    max_chunks: int,
    n_chunks: int = 0,
) -> rx.Capture:
    """`schedule` through `queues` generator threads as `queue_of` says, no stall timeout."""
    return rx.Capture(
        rx.MemSource(schedule=schedule, queue_of=queue_of, queues=queues),
        chunking=rx.Chunking(
            packets_per_chunk=ppc,
            max_chunks=max_chunks,
            n_chunks=n_chunks,
            first_chunk=0,
            stall_timeout_ms=NO_STALL_MS,
        ),
    )


@pytest.mark.parametrize("queues", [2, 3])
def test_round_robin_queues_fill_one_chunk_stream(queues: int) -> None:
    ppc, n = 64, 20
    cap = rx.Capture(
        rx.MemSource(count=ppc * n, queues=queues),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=2, first_chunk=0),
    )
    chunks = run(cap)
    assert sorted(chunks) == list(range(n))
    for cid, (present, data) in chunks.items():
        assert present.all()
        np.testing.assert_array_equal(data, rx.example_chunk(cid, ppc))
    s = cap.stats
    assert (s.packets, s.lost, s.late, s.duplicate, s.queue_stalls) == (ppc * n, 0, 0, 0, 0)
    assert s.queues == queues


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("queues", [2, 4])
def test_faults_spread_over_queues_match_the_model(seed: int, queues: int) -> None:
    ppc, n, window = 32, 30, 3
    rng = np.random.default_rng(seed)
    f = faulty_schedule(n, ppc, window, rng)
    # Round-robin by position, so a delayed packet and its duplicate land on other queues
    # than their neighbours: reordering across queues as well as within one.
    queue_of = np.arange(len(f.schedule)) % queues
    e = model(f.schedule, queue_of, queues, ppc, window)
    assert e.late and e.duplicate and e.lost
    cap = generator(f.schedule, queue_of, queues, ppc, window, n_chunks=8)
    check(cap, run(cap), e, ppc)


def test_every_packet_twice_on_two_queues_counts_one_duplicate_each() -> None:
    ppc, n = 64, 12
    seqs = np.arange(ppc * n, dtype=np.uint64)
    schedule = np.concatenate([seqs, seqs])
    queue_of = np.repeat([0, 1], len(seqs))
    e = model(schedule, queue_of, 2, ppc, n)
    assert (e.duplicate, e.late, e.lost) == (ppc * n, 0, 0)
    cap = generator(schedule, queue_of, 2, ppc, n)
    check(cap, run(cap), e, ppc)


def test_queues_carrying_alternate_half_chunks_out_of_step() -> None:
    # Queue 0 carries the first half of every chunk, queue 1 the second half in reverse
    # chunk order inside blocks of 4 chunks: the queues disagree about where the stream is.
    ppc, n = 64, 32
    seqs = np.arange(ppc * n)
    q1 = (seqs % ppc) >= ppc // 2
    first = seqs[~q1]
    second = seqs[q1].reshape(n // 4, 4, ppc // 2)[:, ::-1, :].reshape(-1)
    schedule = np.concatenate([first, second]).astype(np.uint64)
    queue_of = np.concatenate([np.zeros(len(first), int), np.ones(len(second), int)])
    e = model(schedule, queue_of, 2, ppc, 4)
    assert e.late == 0 and e.lost == 0
    cap = generator(schedule, queue_of, 2, ppc, 4, n_chunks=6)
    check(cap, run(cap), e, ppc)


def test_a_queue_that_ends_early_does_not_hold_chunks_back() -> None:
    # Queue 1 delivers a few packets and ends; the pool has one chunk to spare, so the
    # stream only completes if chunks stop waiting for the ended queue at once.
    ppc, n = 64, 24
    seqs = np.arange(ppc * n, dtype=np.uint64)
    queue_of = np.zeros(len(seqs), int)
    queue_of[1:8] = 1
    e = model(seqs, queue_of, 2, ppc, 2)
    cap = generator(seqs, queue_of, 2, ppc, 2, n_chunks=3)
    t0 = time.monotonic()
    check(cap, run(cap, timeout=20.0), e, ppc)
    assert time.monotonic() - t0 < 15.0


def test_a_slow_consumer_never_makes_waiting_queues_stalled() -> None:
    # Every queue waits for chunks much longer than the stall timeout while the consumer
    # sleeps: waiting for the consumer is not a stall, so nothing is passed over or late.
    ppc, n = 64, 16
    cap = rx.Capture(
        rx.MemSource(count=ppc * n, queues=3),
        chunking=rx.Chunking(
            packets_per_chunk=ppc, max_chunks=2, n_chunks=3, first_chunk=0, stall_timeout_ms=100
        ),
    )
    got = []
    with cap:
        for chunk in cap.chunks(timeout=20.0):
            if len(got) < 3:
                time.sleep(0.4)
            got.append(chunk.chunk_id)
            chunk.release()
    s = cap.stats
    assert got == list(range(n))
    assert (s.queue_stalls, s.late, s.lost, s.packets) == (0, 0, 0, ppc * n)
    assert s.waits > 0


def test_overload_on_emulated_nic_queues_is_counted_exactly() -> None:
    # Offered far above what the receive threads take, into rings of 256 slots: the rings
    # overflow and every packet is either placed or counted as a NIC drop; the holes are
    # the lost slots (or, past the window, late). Small rings keep the test short (it
    # busy-polls two threads).
    ppc, count = 256, 256 * 24
    config = rx._core.EngineConfig(
        packets_per_chunk=ppc,
        max_chunks=4,
        first_chunk=0,
        policy="drop_oldest",
        stall_timeout_ms=NO_STALL_MS,
    )
    cap = rx._core.emu_capture(
        rx.Format(), config, 0, count, 400.0, ring_slots=256, fill=False, queues=2
    )
    cap.start()
    while (chunk := cap.next_chunk(30.0)) is not None:
        chunk.release()
    cap.stop()
    s = cap.stats
    drops = rx._core.emu_nic_drops(cap)
    assert drops > 0
    assert s["received"] + drops == count
    assert (s["duplicate"], s["rejected"], s["queue_stalls"]) == (0, 0, 0)
    # A queue whose thread was descheduled while the other moved the window on delivers
    # packets of retired chunks: counted late (or, further behind than the window's reach,
    # out of window), never placed twice.
    behind = s["late"] + s["out_of_window"]
    assert s["packets"] + behind == s["received"]
    # Slots of chunks 0 .. newest: placed or lost. Drops past the newest chunk are not slots.
    assert (s["packets"] + s["lost"]) % ppc == 0
    assert s["lost"] <= drops + behind


def test_a_stalled_udp_queue_is_passed_over_and_counted() -> None:
    # Two SO_REUSEPORT sockets sharing the stream by blocks of 64 sequence numbers, and a
    # stream of the first socket's blocks only (every other chunk): the other queue's
    # thread waits in poll() with its window at the stream's start. With a pool of
    # max_chunks + 2 the stream can only flow once that queue is passed over.
    ppc, n = 64, 40
    seqs = np.arange(ppc * n, dtype=np.uint64)
    schedule = seqs[seqs // 64 % 2 == 0]
    total = len(schedule)
    cap = reuseport_capture(2, ppc, apart_cpus(), max_chunks=2, n_chunks=4, stall_timeout_ms=20)
    got: dict[int, np.ndarray] = {}
    with cap:
        sender = rx.Sender(port=cap.port, schedule=schedule, rate_gbps=1.0, streams=1)
        delivered_while_running = receive_while_sending(
            cap, sender.run, total, keep_present(got), poll=0.1
        )
    s = cap.stats
    assert s.queue_stalls >= 1
    assert cap.queue_received == [total, 0]
    assert delivered_while_running >= n // 2 - 2  # chunks flowed, not only the final flush
    assert s.kernel_drops == 0
    # The odd chunks never came: lost whole (the stream ends at chunk n - 2).
    assert (s.packets, s.lost, s.late, s.duplicate) == (total, (n // 2 - 1) * ppc, 0, 0)
    assert sorted(got) == list(range(0, n, 2))
    assert all(p.all() for p in got.values())


def test_bad_queue_assignments_name_the_value() -> None:
    with pytest.raises(ValueError, match="queue_of\\[1\\] = 5"):
        rx.Capture(rx.MemSource(schedule=[0, 1], queue_of=[0, 5], queues=2))
    with pytest.raises(ValueError, match="queue_of has 1 entries for 2 packets"):
        rx.Capture(rx.MemSource(schedule=[0, 1], queue_of=[0], queues=2))
    with pytest.raises(ValueError, match=r"queues must be >= 1, got 0"):
        rx.MemSource(count=4, queues=0)
    with pytest.raises(ValueError, match=r"queues must be 1\.\.1024, got 1025"):
        rx.Capture(rx.MemSource(count=4, queues=1025))
    with pytest.raises(ValueError, match="stall_timeout_ms must be >= 1, got 0"):
        rx.Chunking(stall_timeout_ms=0)
