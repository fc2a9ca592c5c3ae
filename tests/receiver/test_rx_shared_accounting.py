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
import time
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from live_udp import apart_cpus, keep_present, receive_while_sending, reuseport_capture
from test_rx_queues import NO_STALL_MS, Expected, model
from test_rx_queues import run as drain

import casper400g_rx as rx
from casper400g_rx.faults import faulty_schedule

PAYLOAD = 8192


def split_capture(nic: rx.EmulatedNic, ppc: int, max_chunks: int, **chunking: Any) -> rx.Capture:
    """The header-data split against the emulated NIC `nic` (split=True; serial=True: one
    thread in the schedule's order, else one thread per lane), chunks numbered from 0, no
    stall timeout unless `chunking` (the other options of rx.Chunking) sets one."""
    opts: dict[str, Any] = {"stall_timeout_ms": NO_STALL_MS, **chunking}
    return rx.Capture(
        nic,
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=max_chunks, first_chunk=0, **opts),
    )


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
    nic = rx.EmulatedNic(schedule=f.schedule, queues=queues, depth=24, split=True, serial=True)
    split = split_capture(nic, ppc, window)
    got = drain(split)
    s = split.stats
    check_counts(s, e)
    check_chunks(got, e, ppc)
    assert s.queue_stalls == 0 and s.nic_drops == 0
    assert s.in_place + s.fixup_copies == s.packets
    assert s.in_place > 0
    # The copying engine with the same queue assignment (K threads) counts the same.
    ref = rx.Capture(
        rx.MemSource(schedule=f.schedule, queue_of=f.schedule % queues, queues=queues),
        chunking=rx.Chunking(
            packets_per_chunk=ppc,
            max_chunks=window,
            first_chunk=0,
            stall_timeout_ms=NO_STALL_MS,
            n_chunks=16,
        ),
    )
    want = drain(ref)
    check_counts(ref.stats, e)
    assert sorted(want) == sorted(got)


def test_split_lanes_racing_lose_nothing() -> None:
    # One thread per lane, unpaced: the lanes race, a lane ahead waits for the slowest
    # (its window holds the chunks back) instead of making its packets late.
    ppc, n, queues = 64, 40, 3
    cap = split_capture(rx.EmulatedNic(count=ppc * n, queues=queues, depth=32, split=True), ppc, 2)
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
    nic = rx.EmulatedNic(schedule=schedule, queues=2, depth=16, split=True, serial=True)
    cap = split_capture(nic, ppc, 2, n_chunks=6, stall_timeout_ms=20)
    t0 = time.monotonic()
    got = drain(cap)
    s = cap.stats
    assert time.monotonic() - t0 < 20
    assert s.queue_stalls >= 1
    placed = set(head.tolist()) | set(evens.tolist())
    # The straggler is 19 chunks behind the window but next to the lane's own last
    # packets (its backlog, window.h): late, not out of window.
    assert (s.packets, s.late, s.out_of_window) == (len(placed), 1, 0)
    assert (s.duplicate, s.rejected, s.discarded) == (0, 0, 0)
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
    # receives: the emulated NIC drops what finds no receive, and every packet is placed,
    # counted as a NIC drop, no_free_chunk in a chunk given up whole for want of a free
    # one (a live source), late, discarded, or out of window (a lane that sees the stream
    # again after more than max_jump chunks of drops, until its run resyncs the window);
    # the holes are lost slots.
    ppc, count, queues = 64, 64 * 200, 2
    nic = rx.EmulatedNic(
        count=count, nic_rate_gbps=2000.0, fill=False, queues=queues, depth=8, split=True
    )
    cap = split_capture(nic, ppc, 4)
    got = drain(cap)
    s = cap.stats
    assert s.nic_drops > 0
    # ... or discarded: landed in a receive posted before its lane saw its queue had run
    # dry (not copied while the lane catches up).
    dropped = s.nic_drops + s.late + s.no_free_chunk + s.discarded + s.out_of_window
    assert s.packets + dropped == count
    assert (s.duplicate, s.rejected, s.queue_stalls) == (0, 0, 0)
    assert s.received + s.nic_drops == count
    assert s.in_place + s.fixup_copies == s.packets
    assert s.packets == sum(int(p.sum()) for p, _ in got.values())
    # Whole chunks from the first on: delivered, or given up (all their slots lost) --
    # but for chunks a window resync jumped, which count nothing.
    assert (s.packets + s.lost) % ppc == 0
    assert s.packets + s.lost >= (max(got) + 1) * ppc or s.window_resyncs > 0
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
    cap = reuseport_capture(
        2, ppc, apart_cpus(), max_chunks=n, n_chunks=n + 4, stall_timeout_ms=NO_STALL_MS
    )
    chunks: dict[int, np.ndarray] = {}
    with cap:
        sender = rx.Sender(port=cap.port, schedule=f.schedule, rate_gbps=1.0, streams=4)
        receive_while_sending(
            cap, sender.run, len(f.schedule), keep_present(chunks), take_while_sending=False
        )
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


def lagging_capture(backend: str, copies: int, **options: Any) -> rx.Capture:
    """The lagging schedule through two queues of the copying engine ("mem") or two split
    lanes ("split"); `options`: the other options of rx.Chunking."""
    ppc, n = 64, 40
    fmt = rx.Format(payload_size=64)
    schedule, queue_of = lagging_schedule(ppc, n, copies)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=2, first_chunk=0, **options)
    if backend == "mem":
        return rx.Capture(
            rx.MemSource(schedule=schedule, queue_of=queue_of, queues=2),
            fmt=fmt,
            chunking=replace(chunking, n_chunks=4),
        )
    # One thread per lane; the emulated NIC steers seq % 2, as queue_of says.
    nic = rx.EmulatedNic(schedule=schedule, queues=2, depth=16, split=True)
    return rx.Capture(nic, fmt=fmt, chunking=chunking)


@pytest.mark.parametrize("backend", ["mem", "split"])
def test_a_lagging_busy_queue_is_moved_forward_not_waited_for(backend: str) -> None:
    # The pool spans 4 chunks (the split lanes: their window, max_chunks and the
    # receives' reach): the even queue reaches its end and must wait for the odd queue,
    # which is busy (never stalled) but lagging. With skip_lagging (the default of live
    # sources, asked for here of a replay) its window is moved forward after a fifth of
    # the stall timeout: the stream flows, the rest of its copies count late, and every
    # packet is counted exactly.
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
    assert s.received == s.packets + s.late + s.duplicate + s.no_free_chunk
    assert s.lost == n * ppc - s.packets
    # Packet 1 once, unless the odd queue was moved forward before its first batch.
    odd_placed = int(got[0][0][1]) if 0 in got else 0
    evens = {cid: int(present[::2].sum()) for cid, (present, _) in got.items()}
    if backend == "mem":
        # Every even packet.
        assert sorted(got) == list(range(n))
        assert sum(evens.values()) == n * ppc // 2
    else:
        # The split lanes of a live source do not wait for a consumer a loaded machine
        # slows down: a chunk they cannot have is given up whole (its packets
        # no_free_chunk); every other chunk holds all its even packets.
        assert set(got) <= set(range(n))
        assert all(e == ppc // 2 for e in evens.values())
    assert s.packets == sum(evens.values()) + odd_placed


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_racing_split_lanes_under_faults_count_exactly(seed: int) -> None:
    # One thread per lane racing (no serial order), with drops, duplicates and
    # reordering: fix-up copies by one lane into slots another lane has posted, bounce
    # buffers waiting for a busy lane's receive, all without a lock per batch. The
    # windows span the stream, so whatever the interleaving the counts are exact.
    ppc, n, queues = 64, 24, 3
    f = faulty_schedule(n, ppc, n, np.random.default_rng(seed), n_late=0)
    cap = split_capture(
        rx.EmulatedNic(schedule=f.schedule, queues=queues, depth=24, split=True), ppc, n
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
    cap = reuseport_capture(
        2,
        ppc,
        apart_cpus(),
        rcvbuf=128 << 10,
        max_chunks=n,
        n_chunks=n + 4,
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
    # No stall timeout a loaded machine could reach: a queue thread that gets no CPU
    # for a while is not what this tests (it would be passed over as stalled, and the
    # emulated NIC of a waiting lane would give up on its receives as long).
    ppc, n, copies = 64, 40, 200_000
    cap = lagging_capture(backend, copies, stall_timeout_ms=NO_STALL_MS)
    assert cap.config.skip_lagging is False
    got = drain(cap, timeout=60)
    s = cap.stats
    assert (s.queue_skips, s.queue_stalls, s.late) == (0, 0, 0)
    assert s.packets == n * ppc // 2 + 1 and s.duplicate == copies - 1
    assert sorted(got) == list(range(n))


def test_split_lanes_behind_a_slow_consumer_deliver_whole_chunks() -> None:
    # Two emulated NIC queues at a set rate (a live source), a consumer that holds every
    # chunk 40 ms: about 40 % of the chunks the stream offers can be taken. The lanes
    # must keep up with the stream and give up the chunks they cannot have whole --
    # every delivered chunk full, its payloads in place -- rather than stop, lose their
    # place in the stream and fill every chunk partly by fix-up copies (which delivered
    # chunks under half full). Rates, depth and timeouts leave a loaded machine's
    # scheduling room: a lane thread may sleep 250 ms without its queue running dry.
    ppc, rate, seconds = 128, 0.5, 2.0
    count = int(rate * 1e9 * seconds / (PAYLOAD * 8)) // ppc * ppc
    cap = rx.Capture(
        rx.EmulatedNic(
            count=count, queues=2, depth=1024, nic_rate_gbps=rate, fill=False, split=True
        ),
        chunking=rx.Chunking(packets_per_chunk=ppc, first_chunk=0, stall_timeout_ms=2000),
    )
    fills = []
    with cap:
        for chunk in cap.chunks(timeout=10):
            fills.append(int(chunk.present.sum()))
            time.sleep(0.04)
            chunk.release()
    s = cap.stats
    assert s.packets == sum(fills)
    assert sum(fills) >= 0.95 * len(fills) * ppc, f"chunks {np.mean(fills) / ppc:.2f} full"
    # Copies only where a lane had no chunk when it posted and another lane opened one
    # before the packets came (how often depends on the threads' timing).
    assert s.fixup_copies <= 0.25 * s.packets
    assert s.queue_stalls == 0
    # Every packet placed, dropped by the NIC, or no_free_chunk in a chunk given up (or,
    # should a lane's queue have run dry, discarded; late, should a lane lag).
    assert s.no_free_chunk > 0 and s.chunks_given_up > 0 and s.waits > 0  # the consumer
    assert s.packets + s.nic_drops + s.late + s.no_free_chunk + s.discarded == count
    assert s.received == s.packets + s.late + s.no_free_chunk + s.discarded
    assert s.duplicate == 0


def test_reuseport_threads_share_one_flow_by_sequence_blocks() -> None:
    # One sender socket is one flow, which the kernel's hash gives to one socket whole:
    # the socket group's BPF program spreads it by blocks of 64 sequence numbers instead,
    # so each of three threads receives exactly its blocks, and all of them one stream.
    ppc, n, threads = 256, 12, 3
    count = ppc * n
    cap = reuseport_capture(
        threads, ppc, max_chunks=n, n_chunks=n + 4, stall_timeout_ms=NO_STALL_MS
    )
    assert not any("steer" in w for w in cap._cap.warnings)
    present: dict[int, np.ndarray] = {}
    with cap:
        assert cap.port
        sender = rx.Sender(port=cap.port, count=count, rate_gbps=1.0, streams=1)
        receive_while_sending(
            cap, sender.run, count, keep_present(present), take_while_sending=False
        )
    s = cap.stats
    assert s.kernel_drops == 0
    want = np.bincount(np.arange(count) // 64 % threads, minlength=threads)
    assert cap.queue_received == want.tolist()
    assert (s.packets, s.lost, s.late, s.duplicate) == (count, 0, 0, 0)
    assert sorted(present) == list(range(n)) and all(p.all() for p in present.values())


def test_uneven_reuseport_threads_lose_nothing_at_a_rate_they_sustain() -> None:
    # Three SO_REUSEPORT threads of unequal speed (two share one CPU), fed by a
    # two-thread sender whose threads' packets reach the same sockets: at a rate the
    # threads sustain, nothing may count late or lost. A chunk leaves only once every
    # queue has moved past it, so a slower thread holds the window rather than losing its
    # packets; and the sender's threads keep one schedule (multisend: C++ threads, one
    # start for all), so no queue sees one source far behind the other. The window is
    # short (4 chunks of 64 packets, 42 ms of the stream): a sender thread that paced
    # from its own start, or a window that moved on without a slower thread, would show.
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs to make the threads unequal")
    from casper400g_rx.tools import multisend

    ppc, n, rate = 64, 60, 0.4
    count = ppc * n
    cap = reuseport_capture(3, ppc, [cpus[0], cpus[0], cpus[1]], max_chunks=4)
    sent: list[multisend.Sent] = []
    with cap:
        assert cap.port
        port = cap.port
        receive_while_sending(
            cap, lambda: sent.append(multisend.send(port, 0, count, rate, 2)), count, last_timeout=1
        )
    s = cap.stats
    assert sent and sent[0].packets == count
    assert (s.kernel_drops, s.late, s.lost, s.duplicate) == (0, 0, 0, 0), dict(s)
    assert s.packets == count and sum(cap.queue_received) == count
    assert min(cap.queue_received) > 0
