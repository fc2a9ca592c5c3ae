"""Placement engine on the mem backend: exact accounting, byte-exact payloads, chunk API."""

from __future__ import annotations

import time

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_rx.faults import faulty_schedule

PAYLOAD = 8192


def drain(cap: rx.Capture, timeout: float = 10.0) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(chunk_id, present copy, data copy) of every chunk until the stream ends."""
    out = []
    for chunk in cap.chunks(timeout=timeout):
        out.append((chunk.chunk_id, chunk.present.copy(), chunk.data.copy()))
        chunk.release()
    return out


def check_payloads(chunk_id: int, present: np.ndarray, data: np.ndarray, ppc: int) -> None:
    """Every present slot holds exactly the example-stream payload of its sequence number."""
    seqs = chunk_id * ppc + np.flatnonzero(present)
    np.testing.assert_array_equal(data[present], rx.example_payloads(seqs, data.shape[1]))


def test_in_order_stream_fills_every_chunk() -> None:
    ppc, n_chunks = 128, 6
    cap = rx.Capture(
        rx.MemSource(count=ppc * n_chunks),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=3),
    )
    with cap:
        chunks = drain(cap)
    assert [c[0] for c in chunks] == list(range(n_chunks))
    for chunk_id, present, data in chunks:
        assert present.all()
        np.testing.assert_array_equal(data, rx.example_chunk(chunk_id, ppc))
    s = cap.stats
    assert (s.packets, s.lost, s.late, s.duplicate, s.rejected) == (ppc * n_chunks, 0, 0, 0, 0)
    assert s.bytes == ppc * n_chunks * PAYLOAD
    assert s.chunks == n_chunks and s.chunks_dropped == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("max_chunks", [2, 4])
def test_exact_accounting_under_injected_faults(seed: int, max_chunks: int) -> None:
    ppc, n_chunks = 64, 40
    f = faulty_schedule(n_chunks, ppc, max_chunks, np.random.default_rng(seed))
    assert len(f.dropped) and len(f.duplicated) and len(f.late) and f.reordered
    cap = rx.Capture(
        rx.MemSource(schedule=f.schedule),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=max_chunks, first_chunk=0),
    )
    with cap:
        chunks = drain(cap)
    s = cap.stats
    assert s.lost == len(f.dropped)
    assert s.duplicate == len(f.duplicated)
    assert s.late == len(f.late)
    assert s.rejected == 0
    assert s.packets == f.total - len(f.dropped)
    assert s.received == len(f.schedule)
    assert s.bytes == s.packets * PAYLOAD

    missing = np.zeros(f.total, dtype=bool)
    missing[f.dropped] = True
    seen = set()
    for chunk_id, present, data in chunks:
        seen.add(chunk_id)
        np.testing.assert_array_equal(present, ~missing[chunk_id * ppc : (chunk_id + 1) * ppc])
        check_payloads(chunk_id, present, data, ppc)
    assert seen == set(range(n_chunks))


def test_counts_match_when_whole_chunks_are_missing() -> None:
    ppc = 32
    # Chunks 2 and 3 never arrive; chunk 5 is the last.
    seqs = np.concatenate([np.arange(0, 2 * ppc), np.arange(4 * ppc, 6 * ppc)])
    cap = rx.Capture(
        rx.MemSource(schedule=seqs), chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=2)
    )
    with cap:
        chunks = drain(cap)
    assert [c[0] for c in chunks] == [0, 1, 4, 5]
    assert cap.stats.lost == 2 * ppc
    assert cap.stats.packets == 4 * ppc


def test_partial_last_chunk_counts_its_missing_tail() -> None:
    ppc = 100
    cap = rx.Capture(
        rx.MemSource(count=250), chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=2)
    )
    with cap:
        chunks = drain(cap)
    assert [c[0] for c in chunks] == [0, 1, 2]
    assert chunks[-1][1].sum() == 50
    assert cap.stats.lost == 50


def test_stream_starting_mid_sequence() -> None:
    ppc = 16
    cap = rx.Capture(
        rx.MemSource(first=1000 * ppc + 3, count=2 * ppc - 3),
        chunking=rx.Chunking(packets_per_chunk=ppc),
    )
    with cap:
        chunks = drain(cap)
    assert [c[0] for c in chunks] == [1000, 1001]
    assert cap.stats.lost == 3
    for chunk_id, present, data in chunks:
        check_payloads(chunk_id, present, data, ppc)


def test_bad_packets_are_rejected_never_placed() -> None:
    ppc = 8
    good = rx.example_payloads(np.arange(2 * ppc))
    rng = np.random.default_rng(7)
    stride = PAYLOAD + 64
    rows = [np.pad(p, (0, stride - PAYLOAD)) for p in good]
    sizes = [PAYLOAD] * len(rows)
    bad_sizes = [0, 1, 7, 8, PAYLOAD - 1, PAYLOAD + 1, PAYLOAD + 64]
    for size in bad_sizes:
        rows.append(rng.integers(0, 256, stride, dtype=np.uint8))
        sizes.append(size)
    cap = rx.Capture(
        rx.MemSource(packets=np.stack(rows), sizes=sizes),
        chunking=rx.Chunking(packets_per_chunk=ppc),
    )
    with cap:
        chunks = drain(cap)
    assert cap.stats.rejected == len(bad_sizes)
    assert cap.stats.packets == 2 * ppc and cap.stats.lost == 0
    for chunk_id, present, data in chunks:
        assert present.all()
        check_payloads(chunk_id, present, data, ppc)


def test_stream_id_filter_rejects_other_streams() -> None:
    size = 64
    rows = np.zeros((20, size), dtype=np.uint8)
    rows[:, 7] = np.arange(20)  # sequence: big-endian 64-bit at offset 0
    rows[:, 8:10] = [0x12, 0x34]  # stream id 0x1234 at offset 8, 16-bit
    rows[::4, 9] = 0x35  # every 4th packet belongs to another stream
    fmt = rx.Format(payload_size=size, stream_id=0x1234, stream_id_offset=8, stream_id_width=2)
    cap = rx.Capture(
        rx.MemSource(packets=rows),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=20, first_chunk=0),
    )
    with cap:
        chunks = drain(cap)
    assert cap.stats.rejected == 5
    assert cap.stats.lost == 5
    np.testing.assert_array_equal(chunks[0][1], np.arange(20) % 4 != 0)


def test_little_endian_narrow_sequence_field() -> None:
    size = 32
    rows = np.zeros((12, size), dtype=np.uint8)
    seqs = np.arange(100, 112)
    rows[:, 4:6] = seqs.astype("<u2").view(np.uint8).reshape(-1, 2)
    rows[:, 16:] = np.arange(12).reshape(-1, 1)
    fmt = rx.Format(payload_size=size, seq_offset=4, seq_width=2, seq_big_endian=False)
    cap = rx.Capture(rx.MemSource(packets=rows), fmt=fmt, chunking=rx.Chunking(packets_per_chunk=4))
    with cap:
        chunks = drain(cap)
    assert [c[0] for c in chunks] == [25, 26, 27]
    np.testing.assert_array_equal(np.concatenate([c[2] for c in chunks]), rows)


def test_drop_oldest_counts_exactly_the_chunks_it_dropped() -> None:
    ppc, n_chunks, pool = 32, 20, 5
    cap = rx.Capture(
        rx.MemSource(count=ppc * n_chunks),
        chunking=rx.Chunking(
            packets_per_chunk=ppc, max_chunks=2, n_chunks=pool, policy="drop_oldest"
        ),
    )
    cap.start()
    deadline = time.monotonic() + 10
    while cap.running and time.monotonic() < deadline:
        time.sleep(0.01)  # a consumer that reads nothing until the stream has ended
    chunks = drain(cap)
    s = cap.stats
    # Every chunk ended up ready; only the newest `pool` of them could be kept.
    assert [c[0] for c in chunks] == list(range(n_chunks - pool, n_chunks))
    assert s.chunks == n_chunks
    assert s.chunks_dropped == n_chunks - pool
    assert s.packets_dropped == (n_chunks - pool) * ppc
    assert s.lost == 0
    for chunk_id, present, data in chunks:
        assert present.all()
        check_payloads(chunk_id, present, data, ppc)
    cap.stop()


def test_block_policy_loses_nothing_with_a_slow_consumer() -> None:
    ppc, n_chunks = 32, 12
    cap = rx.Capture(
        rx.MemSource(count=ppc * n_chunks),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=2, n_chunks=3),
    )
    ids = []
    with cap:
        for chunk in cap.chunks(timeout=10):
            time.sleep(0.02)
            ids.append(chunk.chunk_id)
            check_payloads(chunk.chunk_id, chunk.present, chunk.data, ppc)
            chunk.release()
    s = cap.stats
    assert ids == list(range(n_chunks))
    assert (s.lost, s.chunks_dropped, s.packets) == (0, 0, ppc * n_chunks)
    assert s.waits > 0  # the engine really had to wait for the consumer


def test_chunk_views_are_zero_copy_and_release_is_checked() -> None:
    ppc = 4
    cap = rx.Capture(rx.MemSource(count=ppc), chunking=rx.Chunking(packets_per_chunk=ppc))
    with cap:
        chunk = next(cap.chunks(timeout=5))
        view = np.asarray(chunk)  # buffer protocol
        assert view.shape == (ppc, PAYLOAD) and view.dtype == np.uint8
        assert np.shares_memory(view, chunk.data)
        assert chunk.present.dtype == np.bool_ and chunk.present.all()
        via_dlpack = np.from_dlpack(chunk)
        assert via_dlpack.shape == (ppc, PAYLOAD) and np.shares_memory(via_dlpack, view)
        assert chunk.first_seq == 0 and chunk.n_present == ppc and chunk.lost == 0
        assert cap.stats.chunks_in_use == 1
        with chunk:
            pass  # leaving the block releases it
        assert chunk.released
        assert cap.stats.chunks_in_use == 0
        with pytest.raises(RuntimeError, match="released"):
            _ = chunk.data
        chunk.release()  # a second release is harmless


def test_dropping_a_chunk_object_returns_it_to_the_pool() -> None:
    cap = rx.Capture(
        rx.MemSource(count=64), chunking=rx.Chunking(packets_per_chunk=16, max_chunks=1, n_chunks=2)
    )
    with cap:
        ids = [chunk.chunk_id for chunk in cap.chunks(timeout=5)]  # never released explicitly
    assert ids == [0, 1, 2, 3]
    assert cap.stats.chunks_in_use == 0


def test_finished_tells_end_of_stream_from_timeout() -> None:
    cap = rx.Capture(rx.MemSource(count=64), chunking=rx.Chunking(packets_per_chunk=16))
    with cap:
        chunks = drain(cap)
        assert len(chunks) == 4 and cap.finished
    idle = rx.Capture(rx.UdpSource(bind="127.0.0.1:0"))
    with idle:
        assert list(idle.chunks(timeout=0.05)) == []
        assert not idle.finished  # a timeout, not the end of the stream
        idle.stop()
        assert list(idle.chunks(timeout=0.05)) == [] and idle.finished


def test_live_stats_snapshots_always_add_up() -> None:
    """Counters read while the engine runs (and waits for chunks) are one consistent state."""
    ppc, n_chunks, max_chunks = 64, 200, 2
    f = faulty_schedule(n_chunks, ppc, max_chunks, np.random.default_rng(21))
    cap = rx.Capture(
        rx.MemSource(schedule=f.schedule),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=max_chunks, n_chunks=3),
    )
    snapshots = 0
    with cap:
        for chunk in cap.chunks(timeout=10):
            for _ in range(20):
                s = cap.stats
                assert s.received == s.packets + s.late + s.duplicate + s.rejected + s.discarded
                assert s.bytes == s.packets * PAYLOAD
                snapshots += 1
            chunk.release()
    assert snapshots == 20 * n_chunks
    assert cap.stats.received == len(f.schedule)


def test_stats_rates_and_keys() -> None:
    cap = rx.Capture(rx.MemSource(count=256), chunking=rx.Chunking(packets_per_chunk=64))
    with cap:
        drain(cap)
    s = cap.stats
    for key in ("packets", "bytes", "lost", "late", "duplicate", "rejected", "chunks_dropped"):
        assert key in s
    assert s.gbps == pytest.approx(s.bytes * 8 / s.elapsed / 1e9)
    assert s.pps == pytest.approx(s.packets / s.elapsed)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"policy": "lossy"}, "'lossy'"),
        ({"packets_per_chunk": 0}, "packets_per_chunk"),
        ({"max_chunks": 0}, "max_chunks"),
        ({"max_chunks": 4, "n_chunks": 3}, "n_chunks 3"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        rx.Capture(rx.MemSource(count=1), chunking=rx.Chunking(**kwargs))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"seq_width": 9}, "width must be 1..8 bytes, got 9"),
        ({"seq_offset": 8190}, "offset 8190"),
        ({"payload_size": 70000}, "70000"),
        ({"seq": "rtp"}, "'rtp'"),
    ],
)
def test_bad_formats_raise_value_error(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        rx.Format(**kwargs)


def test_format_decodes_the_example_stream() -> None:
    fmt = rx.Format()
    assert fmt.decode(rx.example_payload(123456789)) == 123456789
    assert fmt.decode(rx.example_payload(5)[:-8]) is None
    np.testing.assert_array_equal(
        np.frombuffer(rx.example_payload(77), np.uint8), rx.example_payloads([77])[0]
    )


@pytest.mark.parametrize("ppc", [1, 2, 3])
def test_sequence_numbers_at_the_top_of_the_64_bit_range(ppc: int) -> None:
    """Found by the fuzzer: the last chunk ids must still be flushed and reported."""
    top = 2**64 - 1
    seqs = np.array([top - 4, top - 3, top - 1, top], dtype=np.uint64)
    rows = np.zeros((len(seqs), 16), np.uint8)
    rows[:, :8] = seqs.astype(">u8").view(np.uint8).reshape(-1, 8)
    rows[:, 8:] = np.arange(len(seqs), dtype=np.uint8)[:, None]
    fmt = rx.Format(payload_size=16)
    cap = rx.Capture(
        rx.MemSource(packets=rows),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=8),
    )
    with cap:
        chunks = drain(cap)
    placed = {}
    for chunk_id, present, data in chunks:
        for slot in np.flatnonzero(present):
            placed[chunk_id * ppc + int(slot)] = data[slot]
    assert sorted(placed) == [int(s) for s in seqs]
    for i, seq in enumerate(seqs):
        np.testing.assert_array_equal(placed[int(seq)], rows[i])
    # Every slot of the chunks from the first to the last, less the packets placed.
    n_chunks = top // ppc - int(seqs[0]) // ppc + 1
    assert cap.stats.packets == len(seqs)
    assert cap.stats.lost == n_chunks * ppc - len(seqs)
    assert chunks[-1][0] == top // ppc
