"""SPEAD through the header-data split: the same packets through the copying engine (the
mem backend) and through the split against the emulated NIC (each packet's heap bytes
scattered straight to their heap offset) give the same chunks, presence, heap bytes,
items and counts by reason; both agree with the heaps that were sent, checked from the
packets with `struct` alone. Packets are cut as spead2's sender cuts heaps (items and
the data pointer in a heap's first packet, every packet filled to max_packet), and the
faults are the network's: loss, reordering, duplicates, a corrupted offset, packets
whose item count differs from the prediction."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from conftest import need_tool

import casper400g_rx as rx
from casper400g_rx import _core, gpu

TIMESTAMP = 0x1600
CHANNEL = 0x4103
DATA = 0x3300
ABSENT = (1 << 64) - 1
COUNTS = (
    "received",
    "packets",
    "bytes",
    "lost",
    "late",
    "duplicate",
    "rejected",
    "heaps_partial",
    "chunks",
    "out_of_window",
)


def ptr(item: int, value: int, immediate: bool = True) -> int:
    return (int(immediate) << 63) | (item << 48) | value


def packet(pointers: list[int], payload: bytes) -> bytes:
    head = struct.pack(">BBBBHH", 0x53, 4, 2, 6, 0, len(pointers))
    return head + b"".join(struct.pack(">Q", p) for p in pointers) + payload


@dataclass
class Sent:
    """One packet as sent, and what it says (for the expected chunks)."""

    raw: bytes
    cnt: int
    offset: int
    length: int
    items: dict[int, int] = field(default_factory=dict)


def cut_heap(
    cnt: int,
    payload: bytes,
    max_packet: int,
    items: dict[int, int],
    *,
    first_items: dict[int, int] | None = None,
) -> list[Sent]:
    """A heap in packets as spead2's sender cuts it: the first packet carries the items
    and the data item's pointer, the later ones the four per-packet items; each filled to
    max_packet. With `first_items` the first packet carries those instead, in a header of
    another length, and the heap is cut at the same offsets (a sender with a fixed
    payload per packet)."""
    out: list[Sent] = []
    off = 0
    heap = len(payload)
    while off < heap:
        cut = items if off == 0 else {}
        carried = first_items if off == 0 and first_items is not None else cut
        extra = [ptr(i, v) for i, v in carried.items()]
        if off == 0:
            extra.append(ptr(DATA, 0, immediate=False))
        n = min(heap - off, max_packet - 8 - 8 * (4 + len(cut) + (off == 0)))
        pointers = [ptr(1, cnt), ptr(2, heap), ptr(3, off), ptr(4, n), *extra]
        out.append(Sent(packet(pointers, payload[off : off + n]), cnt, off, n, dict(carried)))
        off += n
    return out


def make_stream(
    n_heaps: int, heap: int, max_packet: int, seed: int, first: int = 0
) -> tuple[dict[int, bytes], list[Sent]]:
    rng = np.random.default_rng(seed)
    payloads: dict[int, bytes] = {}
    sent: list[Sent] = []
    for cnt in range(first, first + n_heaps):
        payloads[cnt] = rng.integers(0, 256, heap, dtype=np.uint8).tobytes()
        items = {TIMESTAMP: cnt * 4096, CHANNEL: int(rng.integers(0, 4096))}
        sent += cut_heap(cnt, payloads[cnt], max_packet, items)
    return payloads, sent


@dataclass
class Got:
    present: np.ndarray
    heap_bytes: np.ndarray
    data: np.ndarray
    items: dict[int, np.ndarray]


def rows_of(packets: list[bytes]) -> tuple[np.ndarray, list[int]]:
    rows = np.zeros((len(packets), max(len(p) for p in packets)), np.uint8)
    for i, p in enumerate(packets):
        rows[i, : len(p)] = np.frombuffer(p, np.uint8)
    return rows, [len(p) for p in packets]


def take(cap: rx.Capture) -> dict[int, Got]:
    out: dict[int, Got] = {}
    with cap:
        for chunk in cap.chunks(timeout=20):
            out[chunk.chunk_id] = Got(
                chunk.present.copy(),
                chunk.heap_bytes.copy(),
                chunk.data.copy(),
                {k: v.copy() for k, v in chunk.items.items()},
            )
            chunk.release()
    return out


@dataclass
class Run:
    chunks: dict[int, Got]
    stats: Any


def both(
    packets: list[bytes],
    fmt: rx.Format,
    hpc: int,
    *,
    queues: int = 1,
    queue_of: list[int] | None = None,
    depth: int = 64,
) -> tuple[Run, Run]:
    """The packets through the copying engine and through the split (serial: the
    emulated NIC serves its queues in the packets' order)."""
    rows, sizes = rows_of(packets)
    chunking = rx.Chunking(packets_per_chunk=hpc, max_chunks=4)
    cpu = rx.Capture(
        rx.MemSource(packets=rows, sizes=sizes, queues=queues), fmt=fmt, chunking=chunking
    )
    split = rx.Capture(
        rx.EmulatedNic(
            split=True,
            serial=True,
            packets=rows,
            sizes=sizes,
            queues=queues,
            queue_of=queue_of,
            depth=depth,
        ),
        fmt=fmt,
        chunking=chunking,
    )
    cpu_chunks = take(cpu)
    split_chunks = take(split)
    return Run(cpu_chunks, cpu.stats), Run(split_chunks, split.stats)


def expected(
    kept: list[Sent], heap: int
) -> tuple[dict[int, list[tuple[int, int]]], dict[int, dict[int, int]]]:
    """Per heap counter: the distinct (offset, length) pieces that arrived, and the items
    they carried."""
    ranges: dict[int, list[tuple[int, int]]] = {}
    items: dict[int, dict[int, int]] = {}
    for p in kept:
        if p.offset + p.length > heap:
            continue  # out of bound: rejected
        if (p.offset, p.length) not in ranges.setdefault(p.cnt, []):
            ranges[p.cnt].append((p.offset, p.length))
            items.setdefault(p.cnt, {}).update(p.items)
    return ranges, items


def assert_same(
    cpu: Run,
    split: Run,
    kept: list[Sent],
    payloads: dict[int, bytes],
    heap: int,
    hpc: int,
    names: tuple[int, ...] = (TIMESTAMP, CHANNEL),
) -> None:
    """Both runs hold what the kept packets say, byte for byte, and count alike."""
    assert sorted(split.chunks) == sorted(cpu.chunks)
    ranges, items = expected(kept, heap)
    for cid, c in cpu.chunks.items():
        s = split.chunks[cid]
        assert np.array_equal(s.present, c.present), cid
        assert np.array_equal(s.heap_bytes, c.heap_bytes), cid
        for name in names:
            assert np.array_equal(s.items[name], c.items[name]), (cid, hex(name))
        for slot in range(hpc):
            cnt = cid * hpc + slot
            got = ranges.get(cnt, [])
            assert int(c.heap_bytes[slot]) == sum(n for _, n in got), (cnt, got)
            assert bool(c.present[slot]) == (sum(n for _, n in got) == heap), cnt
            for name in names:
                assert int(c.items[name][slot]) == items.get(cnt, {}).get(name, ABSENT)
            truth = np.frombuffer(payloads[cnt], np.uint8) if got else None
            for off, n in got:
                assert truth is not None
                assert np.array_equal(c.data[slot, off : off + n], truth[off : off + n]), cnt
                assert np.array_equal(s.data[slot, off : off + n], truth[off : off + n]), cnt
    for key in COUNTS:
        assert split.stats[key] == cpu.stats[key], (key, dict(split.stats), dict(cpu.stats))
    assert split.stats["rejected_by"] == cpu.stats["rejected_by"]


def layout(fmt: rx.Format) -> dict[str, int]:
    return dict(_core._split_layout(fmt))


def test_layout_follows_the_senders_cut() -> None:
    # The example design's heaps: 7 item pointers (64-byte header), one packet per heap.
    one = layout(rx.Format.spead(8192, items=[TIMESTAMP, CHANNEL]))
    assert (one["parts"], one["first_header"], one["first_part"]) == (1, 64, 8192)
    # 64 KiB heaps: 8192 heap bytes in the first packet, 8216 in each later one.
    big = layout(rx.Format.spead(65536, items=[TIMESTAMP, CHANNEL], max_packet=8256))
    assert (big["parts"], big["later_header"], big["later_part"]) == (8, 40, 8216)
    # Indexed by a named item: every packet carries every item.
    by_time = layout(
        rx.Format.spead(
            4096, index_item=TIMESTAMP, index_step=2048, items=[CHANNEL], max_packet=1100
        )
    )
    assert by_time["first_header"] == by_time["later_header"] == 64
    with pytest.raises(ValueError, match="max_packet 60 leaves no heap bytes"):
        layout(rx.Format.spead(4096, items=[TIMESTAMP, CHANNEL], max_packet=60))


def test_single_packet_heaps_land_in_place() -> None:
    payloads, sent = make_stream(40, 8192, 9000, seed=1)
    assert len(sent) == 40
    fmt = rx.Format.spead(8192, items=[TIMESTAMP, CHANNEL])
    cpu, split = both([p.raw for p in sent], fmt, 8)
    assert_same(cpu, split, sent, payloads, 8192, 8)
    assert split.stats["in_place"] == 40 and split.stats["fixup_copies"] == 0
    assert split.stats["lost"] == 0 and split.stats["chunks"] == 5


def test_64k_heaps_in_8_packets() -> None:
    payloads, sent = make_stream(24, 65536, 8256, seed=2, first=100)
    assert len(sent) == 24 * 8
    fmt = rx.Format.spead(65536, items=[TIMESTAMP, CHANNEL], max_packet=8256)
    cpu, split = both([p.raw for p in sent], fmt, 4)
    assert_same(cpu, split, sent, payloads, 65536, 4)
    # The receives posted before the first packet showed where the stream is (heap 100)
    # are copied from (one queue depth); the rest land in place.
    s = split.stats
    assert s["in_place"] + s["fixup_copies"] == len(sent) and s["fixup_copies"] <= 64
    assert s["in_place"] >= len(sent) - 64 and s["heaps_partial"] == 0


def test_item_counts_other_than_predicted_are_fixed_up() -> None:
    """A heap whose first packet carries one item fewer (the split point 8 bytes early)
    and a single-packet heap with one more (its last bytes in the third scatter entry):
    the packet is put together and copied to its place; the heap is whole."""
    rng = np.random.default_rng(3)
    payloads: dict[int, bytes] = {}
    sent: list[Sent] = []
    for cnt in range(16):
        payloads[cnt] = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
        items = {TIMESTAMP: cnt * 7, CHANNEL: cnt}
        first = {TIMESTAMP: cnt * 7} if cnt % 3 == 1 else None
        sent += cut_heap(cnt, payloads[cnt], 1500, items, first_items=first)
    fmt = rx.Format.spead(4096, items=[TIMESTAMP, CHANNEL], max_packet=1500)
    cpu, split = both([p.raw for p in sent], fmt, 4)
    assert_same(cpu, split, sent, payloads, 4096, 4)
    assert split.stats["fixup_copies"] > 0 and split.stats["lost"] == 0
    # One packet more than the prediction's header: 8192 + 72 bytes.
    payloads, sent = make_stream(8, 8192, 9000, seed=4)
    extra = {TIMESTAMP: 1, CHANNEL: 2, 0x1234: 3}
    sent[5] = cut_heap(5, payloads[5], 9000, extra)[0]
    fmt = rx.Format.spead(8192, items=[TIMESTAMP, CHANNEL])
    cpu, split = both([p.raw for p in sent], fmt, 4)
    assert_same(cpu, split, sent, payloads, 8192, 4)
    assert split.stats["fixup_copies"] == 1 and split.stats["in_place"] == 7


def test_loss_reordering_and_duplicates() -> None:
    payloads, sent = make_stream(48, 12000, 1500, seed=5)
    rng = np.random.default_rng(5)
    kept: list[Sent] = []
    for p in sent:
        r = rng.random()
        if r < 0.08:
            continue
        kept.append(p)
        if r > 0.97:
            kept.append(p)
    for i in range(0, len(kept) - 1, 7):
        kept[i], kept[i + 1] = kept[i + 1], kept[i]
    fmt = rx.Format.spead(12000, items=[TIMESTAMP, CHANNEL], max_packet=1500)
    cpu, split = both([p.raw for p in kept], fmt, 8)
    assert_same(cpu, split, kept, payloads, 12000, 8)
    s = split.stats
    assert s["heaps_partial"] > 0 and s["duplicate"] > 0 and s["lost"] > 0  # the faults happened
    assert s["fixup_copies"] > 0 and s["in_place"] + s["fixup_copies"] == s["packets"]


def test_corrupted_and_out_of_bound_offsets_are_rejected_alike() -> None:
    payloads, sent = make_stream(16, 4096, 1500, seed=6)
    bad = [
        # offset + length past the heap
        Sent(
            packet([ptr(1, 3), ptr(2, 4096), ptr(3, 4000), ptr(4, 1000)], bytes(1000)),
            3,
            4000,
            1000,
        ),
        # another heap size for the same heap counter
        Sent(packet([ptr(1, 4), ptr(2, 8192), ptr(3, 0), ptr(4, 100)], bytes(100)), 4, 0, 100),
        # payload length past the packet's end
        Sent(packet([ptr(1, 5), ptr(2, 4096), ptr(3, 0), ptr(4, 900)], bytes(100)), 5, 0, 900),
    ]
    kept = [*sent[:10], bad[0], *sent[10:20], *bad[1:], *sent[20:]]
    fmt = rx.Format.spead(4096, items=[TIMESTAMP, CHANNEL], max_packet=1500)
    cpu, split = both([p.raw for p in kept], fmt, 4)
    truth = [p for p in kept if p not in bad]
    assert_same(cpu, split, truth, payloads, 4096, 4)
    by = split.stats["rejected_by"]
    assert (by["offset"], by["heap_size"], by["payload"]) == (1, 1, 1)


def test_two_queues() -> None:
    """Heaps steered to two queues by heap counter (as flow rules on two ports would):
    each queue predicts its own heaps."""
    payloads, sent = make_stream(64, 2048, 9000, seed=7)
    rng = np.random.default_rng(7)
    kept = [p for p in sent if rng.random() >= 0.05]
    queue_of = [p.cnt % 2 for p in kept]
    fmt = rx.Format.spead(2048, items=[TIMESTAMP, CHANNEL])
    cpu, split = both([p.raw for p in kept], fmt, 8, queues=2, queue_of=queue_of)
    assert_same(cpu, split, kept, payloads, 2048, 8)
    assert split.stats["queues"] == 2


def test_packets_off_the_predicted_cut_are_counted_grid() -> None:
    """The split places packets where the format predicts them; a stream cut otherwise
    (here: 1000-byte pieces where 1452 and then 1460 are predicted) is rejected by a
    reason of its own (rq='striding' places it), not placed anywhere wrong."""
    heap = bytes(range(256)) * 16
    pieces = [
        Sent(
            packet(
                [ptr(1, 0), ptr(2, 4096), ptr(3, off), ptr(4, min(1000, 4096 - off))],
                heap[off : off + 1000],
            ),
            0,
            off,
            min(1000, 4096 - off),
        )
        for off in range(0, 4096, 1000)
    ]
    fmt = rx.Format.spead(4096, max_packet=1500)
    rows, sizes = rows_of([p.raw for p in pieces])
    cap = rx.Capture(
        rx.EmulatedNic(split=True, serial=True, packets=rows, sizes=sizes, depth=16),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=1),
    )
    assert take(cap) == {}
    s = cap.stats
    assert s["rejected_by"]["grid"] == s["rejected"] == s["received"] == len(pieces)


def test_emulated_nic_options() -> None:
    with pytest.raises(ValueError, match="example stream is not SPEAD"):
        rx.Capture(rx.EmulatedNic(count=10, split=True), fmt=rx.Format.spead(8192))
    rows, sizes = rows_of([b"x" * 64] * 3)
    with pytest.raises(ValueError, match="need queue_of"):
        rx.Capture(
            rx.EmulatedNic(split=True, packets=rows, sizes=sizes, queues=2),
            fmt=rx.Format.spead(64),
        )
    with pytest.raises(ValueError, match="queue_of names queue 5 of 2"):
        rx.Capture(
            rx.EmulatedNic(split=True, packets=rows, sizes=sizes, queues=2, queue_of=[0, 1, 5]),
            fmt=rx.Format.spead(64),
        )
    with pytest.raises(ValueError, match="options of the header-data split"):
        rx.EmulatedNic(packets=rows, sizes=sizes)
    with pytest.raises(ValueError, match="belong to the example stream"):
        rx.EmulatedNic(split=True, packets=rows, count=3)


def test_ibv_source_splits_spead_by_default() -> None:
    src = rx.IbvSource(bind="10.0.0.2:7148", interface="x")
    assert src.receive_queue(rx.Format.spead(8192)) == "split"
    assert (
        rx.IbvSource(bind="10.0.0.2:7148", rq="striding").receive_queue(rx.Format.spead(8192))
        == "striding"
    )


CUDA_OK, CUDA_WHY = gpu.cuda_status()


@pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
def test_split_into_gpu_equals_cpu() -> None:
    """The split's heaps delivered to GPU memory (device='cuda:0'): chunk bytes read back
    from the GPU, presence, heap bytes and items equal the copying engine's on the host,
    under loss and reordering of 64 KiB heaps in 8 packets."""
    cupy = pytest.importorskip("cupy", reason="cupy reads the GPU chunks back")
    payloads, sent = make_stream(32, 65536, 8256, seed=9)
    rng = np.random.default_rng(9)
    kept = [p for p in sent if rng.random() >= 0.05]
    for i in range(0, len(kept) - 1, 5):
        kept[i], kept[i + 1] = kept[i + 1], kept[i]
    rows, sizes = rows_of([p.raw for p in kept])
    fmt = rx.Format.spead(65536, items=[TIMESTAMP, CHANNEL], max_packet=8256)
    chunking = rx.Chunking(packets_per_chunk=4, max_chunks=4)
    cpu = take(rx.Capture(rx.MemSource(packets=rows, sizes=sizes), fmt=fmt, chunking=chunking))
    cap = rx.Capture(
        rx.EmulatedNic(split=True, serial=True, packets=rows, sizes=sizes, depth=64),
        fmt=fmt,
        chunking=chunking,
        delivery=rx.Delivery(device="cuda:0", gpu_chunks=3),
    )
    got: dict[int, Got] = {}
    with cap:
        for chunk in cap.chunks(timeout=30):
            got[chunk.chunk_id] = Got(
                chunk.present.copy(),
                chunk.heap_bytes.copy(),
                cupy.asnumpy(cupy.from_dlpack(chunk)),
                {k: v.copy() for k, v in chunk.items.items()},
            )
            chunk.release()
    assert sorted(got) == sorted(cpu)
    ranges, _ = expected(kept, 65536)
    for cid, c in cpu.items():
        g = got[cid]
        assert np.array_equal(g.present, c.present) and np.array_equal(g.heap_bytes, c.heap_bytes)
        for name in (TIMESTAMP, CHANNEL):
            assert np.array_equal(g.items[name], c.items[name])
        for slot in range(4):
            truth = np.frombuffer(payloads.get(cid * 4 + slot, b""), np.uint8)
            for off, n in ranges.get(cid * 4 + slot, []):
                assert np.array_equal(g.data[slot, off : off + n], truth[off : off + n])
    assert cap.stats["heaps_partial"] > 0 and cap.stats["fixup_copies"] > 0


@pytest.mark.parametrize(("heap", "max_packet"), [(8192, 9000), (65536, 8256), (12000, 1472)])
def test_spead2_senders_cut_is_predicted(heap: int, max_packet: int) -> None:
    """Heaps cut by spead2's own sender land where the split predicts them: every packet
    in place (the stream starts at heap 0), chunks equal to the copying engine's."""
    try:
        import spead2  # noqa: F401
    except ImportError:
        need_tool("spead2 is not installed (`make test` installs it: pip install spead2)")
    import spead2 as s2
    from spead_reference import make_heaps, spead2_packets

    heaps = make_heaps(24, heap, seed=12)
    packets = spead2_packets(s2, heaps, max_packet_size=max_packet)
    fmt = rx.Format.spead(heap, items=[TIMESTAMP, CHANNEL], max_packet=max_packet)
    cpu, split = both([p.raw for p in packets], fmt, 4)
    sent = [Sent(p.raw, p.cnt, p.offset, p.length, {}) for p in packets]
    payloads = {h.cnt: h.payload for h in heaps}
    assert_same(cpu, split, sent, payloads, heap, 4, names=())
    for name in (TIMESTAMP, CHANNEL):
        for cid, c in cpu.chunks.items():  # spead2 sent the items: both hold them
            want = [
                h.timestamp if name == TIMESTAMP else h.channel
                for h in heaps[cid * 4 : cid * 4 + 4]
            ]
            assert split.chunks[cid].items[name].tolist() == want == c.items[name].tolist()
    assert split.stats["in_place"] == len(packets) == split.stats["packets"]
    assert layout(fmt)["parts"] == len(packets) // len(heaps)
