"""SPEAD heaps against spead2 itself: spead2's sender makes the packets (single- and
multi-packet heaps, with and without immediate items, SPEAD-64-48 and 64-40), spead2's
chunk stream and this receiver capture the same packets (with injected loss, duplicates
and reordering), and chunks, per-heap presence and per-heap items agree exactly, with
each other and with the heaps that were sent."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from conftest import need_tool
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap
from spead_reference import (
    ABSENT,
    CHANNEL,
    HEAP_CNT,
    TIMESTAMP,
    Got,
    Heap,
    Packet,
    make_heaps,
    our_chunks,
    rows_of,
    spead2_capture,
    spead2_packets,
)

import casper400g_rx as rx
from casper400g_rx import Chunking, MemSource, gpu

PORT = 7148


@pytest.fixture(scope="module")
def spead2() -> ModuleType:
    try:
        import spead2
        import spead2.recv
        import spead2.send
    except ImportError:
        need_tool("spead2 is not installed (`make test` installs it: pip install spead2)")
    return spead2


@dataclass
class Case:
    """What the kept packets say each heap slot must hold."""

    heap_size: int
    heaps: dict[int, Heap]  # by slot index
    ranges: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    items: dict[int, dict[int, int]] = field(default_factory=dict)
    unique: int = 0
    duplicates: int = 0

    def bytes_of(self, index: int) -> int:
        return sum(n for _, n in self.ranges.get(index, []))

    def complete(self, index: int) -> bool:
        return self.bytes_of(index) == self.heap_size


def expect(kept: list[Packet], heaps: list[Heap], heap_size: int, index_of: dict[int, int]) -> Case:
    """index_of: heap counter -> slot index."""
    case = Case(heap_size, {index_of[h.cnt]: h for h in heaps})
    seen: set[tuple[int, int]] = set()
    for p in kept:
        i = index_of[p.cnt]
        if (p.cnt, p.offset) in seen:
            case.duplicates += 1
            continue
        seen.add((p.cnt, p.offset))
        case.unique += 1
        case.ranges.setdefault(i, []).append((p.offset, p.length))
        for item in (TIMESTAMP, CHANNEL):
            if item in p.immediates:
                case.items.setdefault(i, {})[item] = p.immediates[item]
    return case


def assert_agree(
    case: Case,
    ours: dict[int, Got],
    theirs: dict[int, Got],
    hpc: int,
    items: tuple[int, ...],
    items_exact: bool = True,
) -> int:
    """Returns how many item values spead2 missed that the receiver has: spead2's chunk
    stream takes a heap's items from the first packet it sees of it, and starts the heap
    afresh (overwriting them) when a packet comes after the heap completed; the receiver
    keeps them from any packet of the heap that carries them. Without reordering and
    duplicates (items_exact) the two agree value for value."""
    touched = set(case.ranges)
    missed = 0
    for cid in set(ours) | set(theirs) | {i // hpc for i in touched}:
        mine, ref = ours.get(cid), theirs.get(cid)
        for slot in range(hpc):
            i = cid * hpc + slot
            where = f"chunk {cid} heap slot {slot} (index {i})"
            complete = case.complete(i)
            assert (mine is not None and bool(mine.present[slot])) == complete, where
            assert (ref is not None and bool(ref.present[slot])) == complete, where
            if i not in touched:
                assert mine is None or mine.heap_bytes[slot] == 0, where
                continue
            assert mine is not None and ref is not None, where
            assert mine.heap_bytes[slot] == case.bytes_of(i), where
            truth = np.frombuffer(case.heaps[i].payload, np.uint8)
            for off, n in case.ranges[i]:
                span = slice(off, off + n)
                assert np.array_equal(mine.data[slot, span], truth[span]), f"{where} bytes {span}"
                assert np.array_equal(ref.data[slot, span], truth[span]), f"{where} bytes {span}"
            for item in items:
                want = case.items.get(i, {}).get(item, ABSENT)
                assert int(mine.items[item][slot]) == want, f"{where} item {item:#x}"
                theirs_value = int(ref.items[item][slot])
                if theirs_value != want and not items_exact and theirs_value == ABSENT:
                    missed += 1
                    continue
                assert theirs_value == want, f"{where} item {item:#x} (spead2)"
    return missed


def frames_pcap(packets: list[bytes], path: Path) -> Path:
    wrpcap(
        str(path),
        [
            Ether(src="02:00:0a:00:00:0a", dst="0c:42:a1:00:00:14")
            / IP(src="10.0.0.10", dst="10.0.0.20", id=i & 0xFFFF)
            / UDP(sport=PORT, dport=PORT)
            / p
            for i, p in enumerate(packets)
        ],
    )
    return path


def capture(
    source: str,
    packets: list[bytes],
    fmt: rx.Format,
    hpc: int,
    tmp_path: Path,
    max_chunks: int = 4,
    queues: int = 1,
) -> tuple[dict[int, Got], rx.Stats]:
    if source == "mem":
        rows, sizes = rows_of(packets)
        cap = rx.Capture(
            rx.MemSource(packets=rows, sizes=sizes, queues=queues),
            fmt=fmt,
            chunking=rx.Chunking(packets_per_chunk=hpc, max_chunks=max_chunks),
        )
    else:
        path = frames_pcap(packets, tmp_path / "spead.pcap")
        cap = rx.Capture(
            rx.PcapSource(path=str(path)),
            fmt=fmt,
            chunking=rx.Chunking(packets_per_chunk=hpc, max_chunks=max_chunks),
        )
    with cap:
        got = our_chunks(cap)
    return got, cap.stats


def run_case(
    spead2: ModuleType,
    tmp_path: Path,
    source: str,
    heaps: list[Heap],
    kept: list[Packet],
    fmt: rx.Format,
    hpc: int,
    index_of: dict[int, int],
    items: tuple[int, ...],
    items_exact: bool = True,
    **spead2_kw: int,
) -> tuple[Case, rx.Stats, int]:
    raw = [p.raw for p in kept]
    ours, stats = capture(source, raw, fmt, hpc, tmp_path)
    theirs, _ = spead2_capture(
        spead2, raw, heaps_per_chunk=hpc, heap_size=fmt.payload_size, items=items, **spead2_kw
    )
    case = expect(kept, heaps, fmt.payload_size, index_of)
    missed = assert_agree(case, ours, theirs, hpc, items, items_exact)
    assert stats.received == len(kept)
    assert stats.packets == case.unique and stats.duplicate == case.duplicates
    assert stats.rejected == 0 and stats.late == 0
    assert stats.bytes == sum(case.bytes_of(i) for i in case.ranges)
    complete = sum(case.complete(i) for i in case.ranges)
    partial = len(case.ranges) - complete
    assert stats.heaps_partial == partial
    first, last = min(case.ranges) // hpc, max(case.ranges) // hpc
    assert stats.lost == (last - first + 1) * hpc - complete
    return case, stats, missed


def run_clean_case(
    spead2: ModuleType,
    tmp_path: Path,
    source: str,
    heaps: list[Heap],
    packets: list[Packet],
    fmt: rx.Format,
    hpc: int,
    items: tuple[int, ...] = (TIMESTAMP, CHANNEL),
) -> tuple[Case, rx.Stats, int]:
    """run_case for heaps indexed by their own heap counter."""
    index_of = {h.cnt: h.cnt for h in heaps}
    return run_case(spead2, tmp_path, source, heaps, packets, fmt, hpc, index_of, items)


@pytest.mark.parametrize("source", ["mem", "pcap"])
def test_single_packet_heaps_with_items(spead2: ModuleType, tmp_path: Path, source: str) -> None:
    heaps = make_heaps(40, 8192)
    packets = spead2_packets(spead2, heaps)
    assert len(packets) == len(heaps)  # 8192 B + 64 B of header fit in one 9000-B packet
    fmt = rx.Format.spead(8192, items=[TIMESTAMP, CHANNEL])
    case, stats, _ = run_clean_case(spead2, tmp_path, source, heaps, packets, fmt, 8)
    assert all(case.complete(i) for i in range(40)) and stats.chunks == 5


@pytest.mark.parametrize("source", ["mem", "pcap"])
def test_multi_packet_heaps_with_items(spead2: ModuleType, tmp_path: Path, source: str) -> None:
    heaps = make_heaps(24, 16384, seed=2, first_cnt=100)
    packets = spead2_packets(spead2, heaps, max_packet_size=1472)
    assert len(packets) == 24 * 12  # spead2 splits each heap into 12 packets
    fmt = rx.Format.spead(16384, items=[TIMESTAMP, CHANNEL], max_packet=1472)
    run_clean_case(spead2, tmp_path, source, heaps, packets, fmt, 4)


def test_spead_64_40_without_items(spead2: ModuleType, tmp_path: Path) -> None:
    heaps = make_heaps(16, 6000, seed=3)
    packets = spead2_packets(spead2, heaps, heap_address_bits=40, items=False, max_packet_size=2000)
    assert len({p.cnt for p in packets}) == 16 and len(packets) > 16
    fmt = rx.Format.spead(6000, heap_address_bits=40, max_packet=2000)
    run_clean_case(spead2, tmp_path, "mem", heaps, packets, fmt, 4, items=())
    # The same packets read as SPEAD-64-48 are another flavour: all rejected, by reason.
    ours, stats = capture("mem", [p.raw for p in packets], rx.Format.spead(6000), 4, tmp_path)
    assert ours == {} and stats.rejected_by["flavour"] == len(packets) == stats.received


FAULTY_HEAPS = 32


def run_faulty_case(
    spead2: ModuleType,
    tmp_path: Path,
    seed: int,
    faults: Callable[[list[Packet], np.random.Generator], list[Packet]],
    items_exact: bool = True,
) -> tuple[Case, rx.Stats, int]:
    """32 heaps of 12000 B in 1500-B packets, through `faults` (which packets arrive, in
    what order), into both receivers: run_case's checks, 8 heaps per chunk."""
    heaps = make_heaps(FAULTY_HEAPS, 12000, seed=seed)
    packets = spead2_packets(spead2, heaps, max_packet_size=1500)
    kept = faults(packets, np.random.default_rng(seed))
    fmt = rx.Format.spead(12000, items=[TIMESTAMP, CHANNEL], max_packet=1500)
    index_of = {h.cnt: h.cnt for h in heaps}
    items = (TIMESTAMP, CHANNEL)
    return run_case(
        spead2, tmp_path, "mem", heaps, kept, fmt, 8, index_of, items, items_exact=items_exact
    )


@pytest.mark.parametrize("seed", [4, 5])
def test_injected_loss(spead2: ModuleType, tmp_path: Path, seed: int) -> None:
    case, stats, _ = run_faulty_case(
        spead2, tmp_path, seed, lambda packets, rng: [p for p in packets if rng.random() >= 0.08]
    )
    assert stats.heaps_partial > 0 and any(
        TIMESTAMP not in case.items.get(i, {}) for i in case.ranges
    )


def lose_duplicate_and_swap(packets: list[Packet], rng: np.random.Generator) -> list[Packet]:
    kept: list[Packet] = []
    for p in packets:
        r = rng.random()
        if r < 0.08:
            continue  # lost
        kept.append(p)
        if r > 0.96:
            kept.append(p)  # duplicated
    for i in range(0, len(kept) - 1, 7):  # neighbours swapped now and then
        kept[i], kept[i + 1] = kept[i + 1], kept[i]
    return kept


@pytest.mark.parametrize("seed", [6, 7])
def test_loss_duplicates_and_reordering(spead2: ModuleType, tmp_path: Path, seed: int) -> None:
    _, stats, missed = run_faulty_case(
        spead2, tmp_path, seed, lose_duplicate_and_swap, items_exact=False
    )
    assert stats.heaps_partial > 0 and stats.duplicate > 0  # the faults happened
    assert missed < FAULTY_HEAPS  # spead2 still has most heaps' items


def test_index_from_timestamp(spead2: ModuleType, tmp_path: Path) -> None:
    """Slots by an immediate item: the timestamp divided by the samples per heap."""
    step = 2048
    heaps = make_heaps(20, 4096, seed=7, first_cnt=5000, t0=step * (1 << 20), step=step)
    packets = spead2_packets(spead2, heaps, max_packet_size=1100, repeat_pointers=True)
    assert all(TIMESTAMP in p.immediates for p in packets)  # in every packet
    fmt = rx.Format.spead(
        4096, index_item=TIMESTAMP, index_step=step, items=[CHANNEL], max_packet=1100
    )
    index_of = {h.cnt: h.timestamp // step for h in heaps}
    run_case(
        spead2,
        tmp_path,
        "mem",
        heaps,
        packets,
        fmt,
        4,
        index_of,
        (CHANNEL,),
        index_item=TIMESTAMP,
        index_step=step,
    )


def test_two_queues_share_multi_packet_heaps(spead2: ModuleType, tmp_path: Path) -> None:
    """Every packet on two queues at once: each heap assembles once, every second copy is
    a duplicate, whichever queue it came from."""
    heaps = make_heaps(48, 9000, seed=8)
    packets = spead2_packets(spead2, heaps, max_packet_size=1200)
    doubled = [p.raw for p in packets for _ in range(2)]  # queue 0: even rows, queue 1: odd
    fmt = rx.Format.spead(9000, items=[TIMESTAMP], max_packet=1200)
    ours, stats = capture("mem", doubled, fmt, 8, tmp_path, queues=2)
    theirs, _ = spead2_capture(
        spead2, [p.raw for p in packets], heaps_per_chunk=8, heap_size=9000, items=(TIMESTAMP,)
    )
    case = expect(packets, heaps, 9000, {h.cnt: h.cnt for h in heaps})
    assert_agree(case, ours, theirs, 8, (TIMESTAMP,))
    assert stats.packets == stats.duplicate == len(packets) and stats.received == 2 * len(packets)
    assert stats.queues == 2 and stats.lost == 0 and stats.heaps_partial == 0


def test_udp_from_spead2_sender(spead2: ModuleType) -> None:
    """spead2's own UDP sender straight into the udp backend: the same chunks as spead2's
    chunk stream gets from the same heaps."""
    import spead2.send

    heaps = make_heaps(64, 4000, seed=9)
    fmt = rx.Format.spead(4000, items=[TIMESTAMP, CHANNEL], max_packet=1472)
    cap = rx.Capture(
        rx.UdpSource(bind="127.0.0.1:0"),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=16, max_chunks=4),
    )
    packets = spead2_packets(spead2, heaps, max_packet_size=1472)
    with cap:
        assert cap.port
        pool = spead2.ThreadPool(1)
        config = spead2.send.StreamConfig(max_packet_size=1472, rate=50e6)
        stream = spead2.send.UdpStream(pool, [("127.0.0.1", cap.port)], config)
        ig = spead2.send.ItemGroup(flavour=spead2.Flavour(4, 64, 48, 0))
        ig.add_item(TIMESTAMP, "timestamp", "", shape=(), format=[("u", 48)])
        ig.add_item(CHANNEL, "frequency", "", shape=(), format=[("u", 48)])
        ig.add_item(0x3300, "data", "", shape=(4000,), dtype=np.uint8)
        for h in heaps:
            ig["timestamp"].value = h.timestamp
            ig["frequency"].value = h.channel
            ig["data"].value = np.frombuffer(h.payload, np.uint8)
            stream.send_heap(ig.get_heap(descriptors="none", data="all"), cnt=h.cnt)
        deadline = time.monotonic() + 10
        while cap.stats.received < len(packets) and time.monotonic() < deadline:
            time.sleep(0.01)
        cap.stop()
        ours = our_chunks(cap)
    stats = cap.stats
    assert stats.kernel_drops == 0 and stats.received == len(packets), dict(stats)
    theirs, _ = spead2_capture(
        spead2,
        [p.raw for p in packets],
        heaps_per_chunk=16,
        heap_size=4000,
        items=(TIMESTAMP, CHANNEL),
    )
    case = expect(packets, heaps, 4000, {h.cnt: h.cnt for h in heaps})
    assert_agree(case, ours, theirs, 16, (TIMESTAMP, CHANNEL))
    assert stats.packets == len(packets) and stats.lost == 0 and stats.chunks == 4


def test_descriptor_heap_is_not_a_data_heap(spead2: ModuleType, tmp_path: Path) -> None:
    heaps = make_heaps(8, 2048, seed=10)
    packets = spead2_packets(spead2, heaps, descriptors=True, max_packet_size=1472)
    descriptor = [p for p in packets if p.cnt == 1 << 30]
    assert descriptor and packets[: len(descriptor)] == descriptor
    fmt = rx.Format.spead(2048, items=[TIMESTAMP, CHANNEL], max_packet=1472)
    data = [p for p in packets if p.cnt != 1 << 30]
    ours, stats = capture("mem", [p.raw for p in packets], fmt, 4, tmp_path)
    theirs, _ = spead2_capture(
        spead2,
        [p.raw for p in packets],
        heaps_per_chunk=4,
        heap_size=2048,
        items=(TIMESTAMP, CHANNEL),
    )
    assert_agree(
        expect(data, heaps, 2048, {h.cnt: h.cnt for h in heaps}),
        ours,
        theirs,
        4,
        (TIMESTAMP, CHANNEL),
    )
    assert stats.rejected == stats.rejected_by["heap_size"] == len(descriptor)
    assert stats.received == stats.packets + stats.rejected


# ------------------------------------------------------------------ malformed SPEAD
def ptr(item: int, value: int, immediate: bool = True, abits: int = 48) -> int:
    return (int(immediate) << 63) | (item << abits) | value


def spead(pointers: list[int], payload: bytes, header: bytes | None = None) -> bytes:
    head = header if header is not None else struct.pack(">BBBBHH", 0x53, 4, 2, 6, 0, len(pointers))
    return head + b"".join(struct.pack(">Q", p) for p in pointers) + payload


def good(cnt: int, payload: bytes, offset: int = 0, heap: int = 64, extra: tuple = ()) -> bytes:
    return spead([ptr(1, cnt), ptr(2, heap), ptr(3, offset), ptr(4, len(payload)), *extra], payload)


MALFORMED = {
    "size": b"\x53\x04\x02\x06",
    "magic": good(0, bytes(64)).replace(b"\x53", b"\x54", 1),
    "flavour": spead([ptr(1, 0)], b"", struct.pack(">BBBBHH", 0x53, 4, 3, 5, 0, 1)),
    "items": struct.pack(">BBBBHH", 0x53, 4, 2, 6, 0, 9) + bytes(64),
    "missing": spead([ptr(1, 0), ptr(2, 64), ptr(4, 64)], bytes(64)),  # no heap offset
    "payload": spead([ptr(1, 0), ptr(2, 64), ptr(3, 0), ptr(4, 65)], bytes(64)),
    "heap_size": good(0, bytes(64), heap=128),
    "offset": good(0, bytes(32), offset=40),
    "index": good(3, bytes(64)),  # heap counter 3 is not a multiple of index_step 2
    "unaligned": good(0, bytes(4), offset=10),
}


def test_malformed_packets_are_rejected_by_reason() -> None:
    fmt = rx.Format.spead(64, index_step=2)
    not_immediate = spead(
        [ptr(1, 0, immediate=False), ptr(2, 64), ptr(3, 0), ptr(4, 64)], bytes(64)
    )
    pkts = [*MALFORMED.values(), not_immediate, good(2, bytes(range(64)))]
    rows, sizes = rows_of(pkts)
    cap = rx.Capture(
        rx.MemSource(packets=rows, sizes=sizes), fmt=fmt, chunking=rx.Chunking(packets_per_chunk=2)
    )
    with cap:
        got = our_chunks(cap)
    s = cap.stats
    want = {name: 1 for name in MALFORMED}
    want["missing"] += 1
    assert {k: v for k, v in s.rejected_by.items() if v} == want
    assert s.rejected == len(pkts) - 1 and s.packets == 1 and s.received == len(pkts)
    assert list(got) == [0] and got[0].present.tolist() == [False, True]
    assert bytes(got[0].data[1]) == bytes(range(64))
    for name, packet in MALFORMED.items():
        assert fmt.decode(packet) is None, name
    assert fmt.decode(good(2, bytes(64))) == 1  # heap counter 2 / index_step 2


def test_frames_that_are_not_udp_count_as_frame(tmp_path: Path) -> None:
    fmt = rx.Format.spead(64, udp_port=PORT)
    frames = [
        bytes(Ether() / IP(dst="10.0.0.20") / UDP(dport=PORT + 1) / good(0, bytes(64))),
        bytes(Ether() / IP(dst="10.0.0.20") / UDP(dport=PORT) / good(1, bytes(64))),
    ]
    rows, sizes = rows_of(frames)
    cap = rx.Capture(
        rx.MemSource(packets=rows, sizes=sizes, frames=True),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=2),
    )
    with cap:
        got = our_chunks(cap)
    assert cap.stats.rejected_by["frame"] == 1 and cap.stats.packets == 1
    assert got[0].present.tolist() == [False, True]


def test_short_final_packet_and_inconsistent_heap_sizes() -> None:
    """A heap whose last packet carries 3 bytes assembles; a packet claiming another heap
    size for the same heap is rejected and the heap stays partial."""
    payload = bytes(range(67))
    pkts = [
        good(0, payload[:64], heap=67),
        good(0, payload[64:], offset=64, heap=67),  # 3 bytes, not on a cell boundary
        good(1, payload[:64], heap=67),
        good(1, payload[64:], offset=64, heap=99),  # same heap, another size
        good(0, payload[64:], offset=64, heap=67),  # a repeat of the short packet
    ]
    rows, sizes = rows_of(pkts)
    cap = rx.Capture(
        rx.MemSource(packets=rows, sizes=sizes),
        fmt=rx.Format.spead(67),
        chunking=rx.Chunking(packets_per_chunk=2),
    )
    with cap:
        got = our_chunks(cap)
    s = cap.stats
    assert got[0].present.tolist() == [True, False] and got[0].heap_bytes.tolist() == [67, 64]
    assert bytes(got[0].data[0]) == payload
    assert s.rejected_by["heap_size"] == 1 and s.duplicate == 1 and s.heaps_partial == 1


def covered(pieces: list[tuple[int, int]]) -> int:
    """Bytes of a heap that the pieces [start, stop) cover (set arithmetic)."""
    return len(set().union(*(range(a, b) for a, b in pieces)))


@pytest.mark.parametrize(
    "pieces",
    [
        [(0, 12), (10, 17), (19, 24)],  # overlapping, a hole at 17..19: lengths add to 24
        [(10, 17), (19, 24), (0, 12)],  # the same, in another order
        [(0, 12), (10, 17), (17, 24)],  # overlapping, no hole
        [(17, 24), (0, 12), (10, 17)],
        [(0, 8), (8, 16), (16, 24)],  # on cell boundaries
        [(0, 16), (14, 19), (8, 24)],  # the third overlaps a claimed cell: a duplicate
        [(0, 5), (5, 24)],  # the first packet too short to reach a cell past its own
        # Ending on a cell boundary, a packet owns its last cell whole and leaves no edge
        # mark (one queue): a lead-in into that cell, before or after it, overlaps it.
        [(0, 16), (13, 24)],
        [(13, 24), (0, 16)],
        [(0, 16), (13, 20)],  # ... and a hole at 20..24
        [(13, 20), (0, 16)],
        [(3, 16), (0, 8), (16, 24)],  # a lead-in into the first cell, its owner later
    ],
)
def test_heap_is_whole_only_when_every_byte_is_covered(pieces: list[tuple[int, int]]) -> None:
    # Completeness came from adding packet lengths: overlapping pieces whose lengths add
    # up to the heap size made a heap with a hole "present".
    heap, payload = 24, bytes(range(100, 124))
    fmt = rx.Format.spead(heap)
    pkts = [good(0, payload[a:b], offset=a, heap=heap) for a, b in pieces]
    rows, sizes = rows_of(pkts)
    cap = rx.Capture(
        MemSource(packets=rows, sizes=sizes), fmt=fmt, chunking=Chunking(packets_per_chunk=1)
    )
    with cap:
        got = our_chunks(cap)
    s = cap.stats
    # What the receiver took (the duplicate rule is the cells', spead.h) by its stats.
    placed = [p for p in pieces if p != (8, 24)]
    assert s.packets == len(placed) and s.duplicate == len(pieces) - len(placed)
    want = covered(placed)
    assert got[0].heap_bytes.tolist() == [want]
    assert got[0].present.tolist() == [want == heap]
    assert s.heaps_partial == (want != heap)
    have = got[0].data[0]
    for a, b in placed:
        assert bytes(have[a:b]) == payload[a:b]


def heap_pieces(heap: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """A heap cut as senders cut them (8-byte multiples), now and then off the cells, then
    lost, repeated, swapped and overlapped pieces."""
    cuts, at = [], 0
    while at < heap:
        n = int(rng.integers(1, 40)) * 8 + (int(rng.integers(1, 8)) if rng.random() < 0.1 else 0)
        cuts.append((at, min(heap, at + n)))
        at += n
    out: list[tuple[int, int]] = []
    for piece in cuts:
        r = rng.random()
        if r < 0.05:
            continue
        out.append(piece)
        if r > 0.95:
            out.append(piece)
        if rng.random() < 0.04:
            a = int(rng.integers(0, heap - 1))
            out.append((a, int(rng.integers(a + 1, min(heap, a + 300) + 1))))
    for i in range(0, len(out) - 1):
        if rng.random() < 0.08:
            out[i], out[i + 1] = out[i + 1], out[i]
    return out


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_one_queue_places_in_order_runs_as_the_shared_path_does(seed: int) -> None:
    """A capture with one queue enters a heap's packets that come in order into its state
    once per run (spead.h, spead_run); the same packets on a queue of a two-queue capture
    (the other queue fed only malformed packets) take the per-packet path. Both must agree
    on every heap's bytes, presence, items and data, and on what was a duplicate."""
    rng = np.random.default_rng(seed)
    heap, n_heaps = 4096, 48
    payload = rng.integers(0, 256, (n_heaps, heap), dtype=np.uint8)
    pkts: list[bytes] = []
    for cnt in range(n_heaps):
        for k, (a, b) in enumerate(heap_pieces(heap, rng)):
            extra = (ptr(TIMESTAMP, 1000 + cnt * 7 + k),) if rng.random() < 0.3 else ()
            pkts.append(good(cnt, payload[cnt, a:b].tobytes(), offset=a, heap=heap, extra=extra))
    fmt = rx.Format.spead(heap, items=[TIMESTAMP])
    chunking = Chunking(packets_per_chunk=8, max_chunks=4, n_chunks=64)
    rows, sizes = rows_of(pkts)
    one = rx.Capture(MemSource(packets=rows, sizes=sizes), fmt=fmt, chunking=chunking)
    with one:
        got_one = our_chunks(one)
    junk = MALFORMED["size"]
    rows2, sizes2 = rows_of([p for q in pkts for p in (q, junk)])
    two = rx.Capture(MemSource(packets=rows2, sizes=sizes2, queues=2), fmt=fmt, chunking=chunking)
    with two:
        got_two = our_chunks(two)
    a, b = one.stats, two.stats
    assert b.queues == 2 and b.rejected == a.rejected + len(pkts)  # and every junk packet
    assert a.received == len(pkts) and b.received == 2 * len(pkts)
    assert (a.packets, a.duplicate, a.lost) == (b.packets, b.duplicate, b.lost)
    assert a.duplicate > 0 and a.heaps_partial == b.heaps_partial > 0  # the faults happened
    assert sorted(got_one) == sorted(got_two) == list(range(n_heaps // 8))
    whole = 0
    for cid, g in got_one.items():
        h = got_two[cid]
        assert g.heap_bytes.tolist() == h.heap_bytes.tolist()
        assert g.present.tolist() == h.present.tolist()
        assert g.present.tolist() == [int(x == heap) for x in g.heap_bytes]
        assert g.items[TIMESTAMP].tolist() == h.items[TIMESTAMP].tolist()
        for slot in np.flatnonzero(g.present):
            cnt = cid * 8 + int(slot)
            assert np.array_equal(g.data[slot], payload[cnt])
            assert np.array_equal(h.data[slot], payload[cnt])
            whole += 1
    assert whole > 0


# ------------------------------------------------------------------ descriptor errors
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"heap_address_bits": 56}, "must be 40"),
        ({"index_item": 0x3}, "per-packet item"),
        ({"index_step": 0}, "index_step must be > 0"),
        ({"items": [0x1600, 0x1600]}, "named twice"),
        ({"items": list(range(0x100, 0x109))}, "at most 8"),
        ({"items": [1 << 15]}, "not an item id"),
        ({"max_packet": 70000}, "max_packet"),
    ],
)
def test_bad_descriptors_name_the_value(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rx.Format.spead(8192, **kwargs)


def test_heap_size_limits_and_repr() -> None:
    with pytest.raises(ValueError, match="heap size must be > 0"):
        rx.Format.spead(0)
    fmt = rx.Format.spead(
        1 << 20,
        heap_address_bits=40,
        index_item=TIMESTAMP,
        index_step=4096,
        items=[CHANNEL, HEAP_CNT],
    )
    assert repr(fmt) == (
        "Format.spead(heap_size=1048576, heap_address_bits=40, index_item=0x1600, "
        "index_step=4096, items=[0x4103, 0x1])"
    )
    assert fmt.spead_config["items"] == [CHANNEL, HEAP_CNT] and fmt.payload_size == 1 << 20
    assert rx.Format().spead_config is None


@pytest.mark.parametrize(
    ("source", "delivery", "message"),
    [
        (rx.MemSource(count=10), None, "generator sends no SPEAD"),
        (rx.EmulatedNic(count=10, nic_rate_gbps=1.0), None, "not SPEAD"),
        (rx.EmulatedNic(count=10, split=True), None, "example stream is not SPEAD"),
        (
            rx.MemSource(count=10),
            rx.Delivery(device="cuda:0", gpudirect=True),
            "places the frames given",
        ),
    ],
)
def test_paths_without_spead_say_so(
    source: rx.Source, delivery: rx.Delivery | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        rx.Capture(source, fmt=rx.Format.spead(8192), delivery=delivery)


# ------------------------------------------------------------------ GPU delivery
CUDA_OK, CUDA_WHY = gpu.cuda_status()


@pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
def test_host_staged_gpu_delivery_equals_cpu() -> None:
    """device='cuda:0': the heaps on the GPU, presence, heap bytes and items as on the CPU."""
    cupy = pytest.importorskip("cupy", reason="cupy reads the GPU chunks back")
    rng = np.random.default_rng(11)
    pkts = []
    for cnt in range(64):
        payload = rng.integers(0, 256, 300, dtype=np.uint8).tobytes()
        for off in range(0, 300, 96):
            if rng.random() > 0.1:
                extra = (ptr(TIMESTAMP, cnt * 7),) if off == 0 else ()
                pkts.append(good(cnt, payload[off : off + 96], offset=off, heap=300, extra=extra))
    rows, sizes = rows_of(pkts)
    fmt = rx.Format.spead(300, items=[TIMESTAMP])
    source = rx.MemSource(packets=rows, sizes=sizes)
    chunking = rx.Chunking(packets_per_chunk=16, max_chunks=4)
    cpu = rx.Capture(source, fmt=fmt, chunking=chunking)
    with cpu:
        want = our_chunks(cpu)
    gpu_delivery = rx.Delivery(device="cuda:0")
    cap = rx.Capture(source, fmt=fmt, chunking=chunking, delivery=gpu_delivery)
    got = {}
    with cap:
        for chunk in cap.chunks(timeout=20):
            data = cupy.asnumpy(cupy.from_dlpack(chunk))
            got[chunk.chunk_id] = Got(
                chunk.present.copy(),
                data,
                {k: v.copy() for k, v in chunk.items.items()},
                chunk.heap_bytes.copy(),
            )
            chunk.release()
    assert sorted(got) == sorted(want)
    for cid, w in want.items():
        g = got[cid]
        assert np.array_equal(g.present, w.present) and np.array_equal(g.heap_bytes, w.heap_bytes)
        assert np.array_equal(g.items[TIMESTAMP], w.items[TIMESTAMP])
        for slot in range(16):
            n = int(w.heap_bytes[slot])
            if w.present[slot]:
                assert np.array_equal(g.data[slot], w.data[slot]), (cid, slot, n)
    assert cap.stats["heaps_partial"] == cpu.stats.heaps_partial > 0
