"""SPEAD through GPUDirect: frames in the GPU arrival ring, each packet's heap bytes placed
by the reorder kernels at its heap offset in its heap's slot, items and per-heap bytes
settled on the GPU.

Everywhere (no GPU needed): the parse kernel's reading of a frame (gd_spead.h, the same
code compiled for the host) against the CPU engine on the same frames -- packet by packet
the reason it rejects, or the chunk, heap slot and items it places -- against the frame
parse of the CPU engine, and against the header-data split's cut of heaps
(_split_layout); frames built with scapy, SPEAD packets with `struct`.

On a GPU host: the same packets through the CPU engine (the copying engine, MemSource)
and through GPUDirect give identical chunks, presence, heap bytes, items and counts by
reason: single-packet heaps, 64 KiB heaps in 8 packets, packets whose item count differs,
corrupted and out-of-bound offsets, loss, reordering, duplicates and a wild heap counter.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from test_rx_spead_split import (
    ABSENT,
    CHANNEL,
    TIMESTAMP,
    Got,
    Sent,
    cut_heap,
    expected,
    make_stream,
    packet,
    ptr,
)

import casper400g_rx as rx
from casper400g_rx import _core, gpu

PORT = 7148
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
)
CUDA_OK, CUDA_WHY = gpu.cuda_status()
N_GPUS = _core.cuda_device_count() if CUDA_OK else 0
needs_gpu = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
needs_two_gpus = pytest.mark.skipif(
    N_GPUS < 2, reason=f"needs two CUDA devices, this host has {N_GPUS} ({CUDA_WHY})"
)


def frame(payload: bytes, *, port: int = PORT, vlan: bool = False) -> bytes:
    eth = Ether(dst="0c:42:a1:00:00:14", src="02:00:0a:00:00:0a")
    if vlan:
        eth = eth / Dot1Q(vlan=7)
    return bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=port) / payload)


def frame_rows(frames: list[bytes]) -> tuple[np.ndarray, list[int]]:
    rows = np.zeros((len(frames), max(len(f) for f in frames)), np.uint8)
    for i, f in enumerate(frames):
        rows[i, : len(f)] = np.frombuffer(f, np.uint8)
    return rows, [len(f) for f in frames]


# --- everywhere: the parse kernel's code on the host ----------------------------------


def cpu_engine_reading(f: bytes, fmt: rx.Format, hpc: int) -> dict[str, Any]:
    """What the CPU engine makes of one frame alone: the reason it rejects it, or the
    chunk and heap slot it placed it in, with the heap's bytes and items there."""
    rows, sizes = frame_rows([f])
    cap = rx.Capture(
        rx.MemSource(packets=rows, sizes=sizes, frames=True),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=hpc, max_chunks=2),
    )
    chunks = []
    with cap:
        for c in cap.chunks(timeout=10):
            with c:
                chunks.append(
                    (c.chunk_id, c.heap_bytes.copy(), {k: v.copy() for k, v in c.items.items()})
                )
    s = cap.stats
    if s["rejected"]:
        (why,) = [k for k, v in s["rejected_by"].items() if v]
        return {"reason": why}
    ((cid, heap_bytes, items),) = chunks
    (slot,) = np.flatnonzero(heap_bytes)
    return {
        "reason": "none",
        "chunk": int(cid),
        "heap_slot": int(slot),
        "length": int(heap_bytes[slot]),
        "items": {k: int(v[slot]) for k, v in items.items()},
    }


def mixed_frames(rng: np.random.Generator) -> list[bytes]:
    """Good packets of 4096-byte heaps cut at 1500 bytes, and one of each fault."""
    _, sent = make_stream(6, 4096, 1500, seed=21, first=1000)
    good = [frame(p.raw) for p in sent]
    # Heap 7's first packet as the format cuts it (1436 heap bytes after 7 pointers).
    heap = [ptr(1, 7), ptr(2, 4096), ptr(3, 0), ptr(4, 1436)]
    bad = [
        frame(b"\x53\x04\x02\x06\x00\x00"),  # shorter than the SPEAD header: size
        frame(packet(heap, bytes(1436))[:1] + b"\x54" + packet(heap, bytes(1436))[2:]),  # magic
        frame(b"\x53\x04\x03\x05" + packet(heap, bytes(1436))[4:]),  # SPEAD-64-40: flavour
        frame(b"\x53\x04\x02\x06\x00\x00\x01\x00" + bytes(64)),  # 256 pointers in 64 B: items
        frame(packet(heap[:3], bytes(1436))),  # no payload length: missing
        frame(packet(heap, bytes(1000))),  # payload past the packet: payload
        frame(packet([ptr(1, 7), ptr(2, 8192), ptr(3, 0), ptr(4, 100)], bytes(100))),  # heap_size
        frame(packet([ptr(1, 7), ptr(2, 4096), ptr(3, 4000), ptr(4, 100)], bytes(100))),  # offset
        frame(packet([ptr(1, 7), ptr(2, 4096), ptr(3, 13), ptr(4, 2)], bytes(2))),  # unaligned
        frame(packet([ptr(1, 7), ptr(2, 4096), ptr(3, 1000), ptr(4, 452)], bytes(452))),  # grid
        frame(packet(heap, bytes(1436)), port=PORT + 1),  # another port: frame
        frame(packet(heap, bytes(1436)), vlan=True),  # 802.1Q: placed
        bytes(Ether() / IP(proto=6) / packet(heap, bytes(1436))),  # not UDP: frame
        frame(packet(heap, bytes(1436)))[:60],  # truncated: frame
        bytes(
            Ether() / IP(flags="MF") / UDP(dport=PORT) / packet(heap, bytes(1436))
        ),  # fragment: frame
    ]
    # A wild heap counter, and named items at random.
    wild = packet(
        [ptr(1, (1 << 48) - 3), ptr(2, 4096), ptr(3, 0), ptr(4, 1436), ptr(TIMESTAMP, 99)],
        bytes(1436),
    )
    out = [*good, *bad, frame(wild)]
    return [out[i] for i in rng.permutation(len(out))]


def test_parse_kernel_reads_frames_as_the_cpu_engine() -> None:
    """Frame by frame, the parse kernel's code (run on the host) and the CPU engine agree:
    the same reason for every rejected frame, and for every placed one the same chunk,
    heap slot and items; its packet slot and heap offset are the split's cut."""
    fmt = rx.Format.spead(4096, items=[TIMESTAMP, CHANNEL], max_packet=1500, udp_port=PORT)
    hpc = 4
    lay = dict(_core._split_layout(fmt))
    reasons = set()
    for f in mixed_frames(np.random.default_rng(3)):
        ours = _core.gpudirect_spead_parse(fmt, hpc, f)
        ref = cpu_engine_reading(f, fmt, hpc)
        reasons.add(ours["reason"])
        if ours["reason"] == "grid":
            # The copying engine places any 8-byte-aligned piece; the kernels only the
            # split's cut of a heap (as the split does): the piece is off it.
            assert ref["reason"] == "none"
            continue
        assert ours["reason"] == ref["reason"], (ours, ref)
        if ref["reason"] != "none":
            continue
        assert ours["chunk"] == ref["chunk"] and ours["heap_slot"] == ref["heap_slot"]
        assert ours["length"] == ref["length"]
        assert ours["items"] == ref["items"]
        # The frame parse: the heap bytes start after the UDP header and the SPEAD header.
        udp_off, udp_len, _ = _core.parse_frame(f, 1, PORT)
        n_ptrs = int.from_bytes(f[udp_off + 6 : udp_off + 8], "big")
        assert ours["data_offset"] == udp_off + 8 + 8 * n_ptrs
        assert ours["data_offset"] + ours["length"] <= udp_off + udp_len
        k = ours["part"]
        start = 0 if k == 0 else lay["first_part"] + (k - 1) * lay["later_part"]
        assert ours["offset"] == start and ours["slot"] == ours["heap_slot"] * lay["parts"] + k
    assert reasons == {
        "none",
        "frame",
        "size",
        "magic",
        "flavour",
        "items",
        "missing",
        "payload",
        "heap_size",
        "offset",
        "unaligned",
        "grid",
    }


def test_slot_rule_is_the_splits() -> None:
    """Every packet of spead2-style cut heaps (the first carrying the items and the data
    pointer) maps to the split's sequence number index * parts + part, cut into chunks of
    heaps_per_chunk heaps: packet slot = seq mod (heaps * parts)."""
    for heap, max_packet, hpc in [(65536, 8256, 4), (8192, 9000, 8), (12000, 1472, 3)]:
        fmt = rx.Format.spead(heap, items=[TIMESTAMP, CHANNEL], max_packet=max_packet)
        lay = dict(_core._split_layout(fmt))
        _, sent = make_stream(7, heap, max_packet, seed=heap, first=(1 << 30) + 5)
        assert len(sent) == 7 * lay["parts"]
        for p in sent:
            got = _core.gpudirect_spead_parse(fmt, hpc, frame(p.raw, port=0))
            assert got["reason"] == "none", got
            seq = p.cnt * lay["parts"] + got["part"]
            assert (got["chunk"], got["slot"]) == divmod(seq, hpc * lay["parts"])
            assert (got["offset"], got["length"]) == (p.offset, p.length)
            assert got["items"] == {
                TIMESTAMP: p.items.get(TIMESTAMP, ABSENT),
                CHANNEL: p.items.get(CHANNEL, ABSENT),
            }


def test_index_item_and_step() -> None:
    """Heaps indexed by a named item divided by its step, as the CPU engine does; a value
    off the step is `index`."""
    fmt = rx.Format.spead(1024, index_item=TIMESTAMP, index_step=2048, items=[CHANNEL])

    def pkt(ts: int) -> bytes:
        ptrs = [ptr(1, 3), ptr(2, 1024), ptr(3, 0), ptr(4, 1024), ptr(TIMESTAMP, ts)]
        return frame(packet([*ptrs, ptr(CHANNEL, 9)], bytes(1024)))

    got = _core.gpudirect_spead_parse(fmt, 8, pkt(2048 * 77))
    assert (got["reason"], got["index"], got["chunk"], got["heap_slot"]) == ("none", 77, 9, 5)
    assert got["items"] == {CHANNEL: 9}
    assert cpu_engine_reading(pkt(2048 * 77), fmt, 8)["heap_slot"] == 5
    assert _core.gpudirect_spead_parse(fmt, 8, pkt(2048 * 77 + 1))["reason"] == "index"
    assert cpu_engine_reading(pkt(2048 * 77 + 1), fmt, 8)["reason"] == "index"


def test_spead_formats_the_kernels_cannot_number_are_refused() -> None:
    fmt = rx.Format.spead(1 << 31, max_packet=1500)  # 1.5 million packets per heap
    with pytest.raises(ValueError, match="31 bits"):
        _core.gpudirect_spead_parse(fmt, 2048, b"")
    with pytest.raises(ValueError, match="leaves no heap bytes"):
        _core.gpudirect_spead_parse(
            rx.Format.spead(4096, items=[TIMESTAMP, CHANNEL], max_packet=60), 4, b""
        )
    with pytest.raises(ValueError, match="needs a SPEAD format"):
        _core.gpudirect_spead_parse(rx.Format(), 4, b"")


def test_sources_accept_spead_with_gpudirect() -> None:
    """MemSource gives SPEAD frames to GPUDirect (which then needs a GPU); the example
    stream it would generate is not SPEAD."""
    fmt = rx.Format.spead(4096, items=[TIMESTAMP, CHANNEL], max_packet=1500)
    _, sent = make_stream(2, 4096, 1500, seed=1)
    rows, sizes = frame_rows([frame(p.raw) for p in sent])
    source = rx.MemSource(packets=rows, sizes=sizes, frames=True)
    delivery = rx.Delivery(device="cuda:0", gpudirect=True)
    if CUDA_OK:
        cap = rx.Capture(source, fmt=fmt, delivery=delivery)
        with cap:
            for c in cap.chunks(timeout=30):
                c.release()
        # The stream is cut as the format predicts: every packet placed, none `grid`.
        assert cap.stats["packets"] == len(sent) and cap.stats["rejected"] == 0
    else:
        with pytest.raises(gpu.CudaError, match="not usable"):
            rx.Capture(source, fmt=fmt, delivery=delivery)
    with pytest.raises(ValueError, match="places the frames given"):
        rx.Capture(rx.MemSource(count=8), fmt=fmt, delivery=delivery)


def test_feeder_steers_spead_frames_by_heap_chunk() -> None:
    """Into several GPUs each GPU's ring gets the frames of its chunks: heap counter //
    heaps per chunk, modulo the GPUs; frames the parse rejects go to GPU 0."""
    hpc = 2
    _, sent = make_stream(12, 4096, 1500, seed=13)
    rng = np.random.default_rng(13)
    order = rng.permutation(len(sent))
    frames = [frame(sent[i].raw) for i in order]
    owner = [sent[i].cnt // hpc % 2 for i in order]
    frames.append(frame(packet([ptr(1, 3), ptr(2, 8192), ptr(3, 0), ptr(4, 8)], bytes(8))))
    owner.append(0)  # heap_size: rejected
    rows, sizes = frame_rows(frames)
    fmt = rx.Format.spead(4096, items=[TIMESTAMP, CHANNEL], max_packet=1500)
    for g in range(2):
        d = _core.gpudirect_steered(fmt, hpc, 2, g, frames=rows, sizes=sizes)
        pick = [i for i, o in enumerate(owner) if o == g]
        assert d["sizes"] == [sizes[i] for i in pick]
        assert np.array_equal(d["frames"], rows[pick])


# --- on a GPU host: GPUDirect against the CPU engine ----------------------------------


def take_cpu(cap: rx.Capture) -> dict[int, Got]:
    out: dict[int, Got] = {}
    with cap:
        for c in cap.chunks(timeout=30):
            with c:
                out[c.chunk_id] = Got(
                    c.present.copy(),
                    c.heap_bytes.copy(),
                    c.data.copy(),
                    {k: v.copy() for k, v in c.items.items()},
                )
    return out


def take_gpu(cap: rx.Capture, cp: Any) -> dict[int, Got]:
    out: dict[int, Got] = {}
    with cap:
        for c in cap.chunks(timeout=60):
            with c:
                x = cp.from_dlpack(c)
                assert x.data.ptr == c.ptr  # the chunk in place, no copy
                assert np.array_equal(cp.asnumpy(cp.from_dlpack(c.present_gpu)), c.present)
                # The per-heap arrays on the GPU, their host copies settled from them.
                hb = cp.from_dlpack(c.heap_bytes_gpu)
                assert hb.dtype == cp.uint64 and np.array_equal(cp.asnumpy(hb), c.heap_bytes)
                assert sorted(c.items_gpu) == sorted(c.items)
                for k, a in c.items_gpu.items():
                    assert np.array_equal(cp.asnumpy(cp.from_dlpack(a)), c.items[k])
                out[c.chunk_id] = Got(
                    c.present.copy(),
                    c.heap_bytes.copy(),
                    cp.asnumpy(x),
                    {k: v.copy() for k, v in c.items.items()},
                )
    return out


def gpudirect_equals_cpu(
    kept: list[Sent],
    payloads: dict[int, bytes],
    fmt: rx.Format,
    hpc: int,
    *,
    mc: int = 4,
    opts: dict[str, int] | None = None,
    n_chunks: int | None = None,
    extra: list[bytes] = (),  # type: ignore[assignment]
    devices: list[str] | None = None,
) -> rx.Stats:
    """`kept` (plus `extra` frames, rejected by both) through the CPU engine and through
    GPUDirect (into `devices` when given): the same chunks, presence, heap bytes, items,
    heap bytes where they came, and counts by reason. Returns GPUDirect's stats."""
    cp = pytest.importorskip("cupy", reason="cupy reads the GPU chunks back")
    frames = [frame(p.raw) for p in kept] + list(extra)
    rows, sizes = frame_rows(frames)
    source = rx.MemSource(packets=rows, sizes=sizes, frames=True)
    chunking = rx.Chunking(packets_per_chunk=hpc, max_chunks=mc)
    cpu_cap = rx.Capture(source, fmt=fmt, chunking=chunking)
    ref = take_cpu(cpu_cap)
    gd_cap = rx.Capture(
        source,
        fmt=fmt,
        chunking=replace(chunking, n_chunks=n_chunks or mc + 2),
        delivery=rx.Delivery(device="cuda:0", gpudirect=True, gpu_options=opts or {})
        if devices is None
        else rx.Delivery(devices=devices, gpudirect=True, gpu_options=opts or {}),
    )
    got = take_gpu(gd_cap, cp)
    heap = fmt.payload_size
    assert sorted(got) == sorted(ref)
    ranges, _ = expected(kept, heap)
    for cid, c in ref.items():
        g = got[cid]
        assert np.array_equal(g.present, c.present), cid
        assert np.array_equal(g.heap_bytes, c.heap_bytes), cid
        assert sorted(g.items) == sorted(c.items)
        for name in c.items:
            assert np.array_equal(g.items[name], c.items[name]), (cid, hex(name))
        for slot in range(hpc):
            cnt = cid * hpc + slot
            truth = np.frombuffer(payloads.get(cnt, b""), np.uint8)
            if c.present[slot]:
                assert np.array_equal(c.data[slot], truth) and np.array_equal(g.data[slot], truth)
                continue
            # A partial heap: the pieces the CPU engine placed (not those that came late).
            for off, n in ranges.get(cnt, []) if c.heap_bytes[slot] else []:
                if np.array_equal(c.data[slot, off : off + n], truth[off : off + n]):
                    assert np.array_equal(g.data[slot, off : off + n], truth[off : off + n])
    s, r = gd_cap.stats, cpu_cap.stats
    # The kernels' window has no out-of-window rule (receiver.md): streams stay within it.
    assert r["out_of_window"] == 0
    for k in COUNTS:
        assert s[k] == r[k], (k, s[k], r[k])
    assert s["rejected_by"] == r["rejected_by"]
    return s


@needs_gpu
def test_single_packet_heaps() -> None:
    payloads, sent = make_stream(40, 8192, 9000, seed=1)
    fmt = rx.Format.spead(8192, items=[TIMESTAMP, CHANNEL])
    s = gpudirect_equals_cpu(sent, payloads, fmt, 8)
    assert s["packets"] == 40 and s["lost"] == 0 and s["chunks"] == 5


@needs_gpu
@pytest.mark.parametrize(
    "opts",
    [{}, {"batch": 64, "ring_packets": 256, "blocks": 3}],
    ids=["defaults", "many-launches"],
)
def test_64k_heaps_in_8_packets(opts: dict[str, int]) -> None:
    payloads, sent = make_stream(48, 65536, 8256, seed=2, first=100)
    assert len(sent) == 48 * 8
    fmt = rx.Format.spead(65536, items=[TIMESTAMP, CHANNEL], max_packet=8256)
    s = gpudirect_equals_cpu(sent, payloads, fmt, 4, opts=opts)
    assert s["packets"] == len(sent) and s["lost"] == 0 and s["heaps_partial"] == 0


@needs_gpu
def test_item_counts_that_differ() -> None:
    """A heap whose first packet carries one item fewer (cut at the same offsets), and a
    single-packet heap with one item more than the others."""
    rng = np.random.default_rng(3)
    payloads: dict[int, bytes] = {}
    sent: list[Sent] = []
    for cnt in range(16):
        payloads[cnt] = rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()
        items = {TIMESTAMP: cnt * 7, CHANNEL: cnt}
        first = {TIMESTAMP: cnt * 7} if cnt % 3 == 1 else None
        sent += cut_heap(cnt, payloads[cnt], 1500, items, first_items=first)
    fmt = rx.Format.spead(4096, items=[TIMESTAMP, CHANNEL], max_packet=1500)
    gpudirect_equals_cpu(sent, payloads, fmt, 4)
    payloads, sent = make_stream(8, 8192, 9000, seed=4)
    sent[5] = cut_heap(5, payloads[5], 9000, {TIMESTAMP: 1, CHANNEL: 2, 0x1234: 3})[0]
    gpudirect_equals_cpu(sent, payloads, rx.Format.spead(8192, items=[TIMESTAMP, CHANNEL]), 4)


@needs_gpu
def test_corrupted_and_out_of_bound_offsets() -> None:
    payloads, sent = make_stream(16, 4096, 1500, seed=6)
    bad = [
        packet([ptr(1, 3), ptr(2, 4096), ptr(3, 4000), ptr(4, 1000)], bytes(1000)),
        packet([ptr(1, 4), ptr(2, 8192), ptr(3, 0), ptr(4, 100)], bytes(100)),
        packet([ptr(1, 5), ptr(2, 4096), ptr(3, 0), ptr(4, 900)], bytes(100)),
        packet([ptr(1, 6), ptr(2, 4096), ptr(3, 1 << 40), ptr(4, 8)], bytes(8)),
    ]
    fmt = rx.Format.spead(4096, items=[TIMESTAMP, CHANNEL], max_packet=1500)
    s = gpudirect_equals_cpu(sent, payloads, fmt, 4, extra=[frame(b) for b in bad])
    by = s["rejected_by"]
    assert (by["offset"], by["heap_size"], by["payload"]) == (2, 1, 1)


@needs_gpu
@pytest.mark.parametrize("pool", [0, 1], ids=["pool", "stalls"])
def test_loss_reordering_duplicates(pool: int) -> None:
    payloads, sent = make_stream(96, 12000, 1500, seed=5)
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
    opts = {"batch": 128, "ring_packets": 512, "blocks": 2}
    s = gpudirect_equals_cpu(kept, payloads, fmt, 8, mc=3, opts=opts, n_chunks=4 if pool else None)
    assert s["heaps_partial"] > 0 and s["duplicate"] > 0 and s["lost"] > 0


@needs_gpu
def test_wild_heap_counter() -> None:
    """Heap counters near 2^48, a jump over several windows, strays from far ahead and
    late packets: the window walk as the CPU engine's."""
    payloads, sent = make_stream(40, 2048, 9000, seed=8, first=(1 << 48) - 400)
    rng = np.random.default_rng(8)
    far = {}
    later = []
    for p in sent[20:]:
        cnt = p.cnt + 30  # 7 chunks ahead: within max_jump (4 windows) both ways
        far[cnt] = payloads[p.cnt]
        later.append(replace(p, cnt=cnt, raw=_recount(p.raw, cnt)))
    payloads.update(far)
    kept = sent[:20] + later
    for i in rng.choice(len(kept) - 8, size=4, replace=False):
        kept.insert(int(i), kept[int(i) + 6])  # late repeats and early strays
    fmt = rx.Format.spead(2048, items=[TIMESTAMP, CHANNEL])
    s = gpudirect_equals_cpu(kept, payloads, fmt, 4, mc=3)
    assert s["lost"] > 0


@needs_two_gpus
def test_two_gpus() -> None:
    """Into two GPUs (chunk k on GPU k % 2, each fed its chunks' frames): the capture's
    one account, chunks, heap bytes and items are the CPU engine's."""
    payloads, sent = make_stream(64, 65536, 8256, seed=14)
    rng = np.random.default_rng(14)
    kept = [p for p in sent if rng.random() >= 0.04]
    for i in range(0, len(kept) - 1, 9):
        kept[i], kept[i + 1] = kept[i + 1], kept[i]
    fmt = rx.Format.spead(65536, items=[TIMESTAMP, CHANNEL], max_packet=8256)
    opts = {"batch": 128, "ring_packets": 512}
    s = gpudirect_equals_cpu(kept, payloads, fmt, 2, mc=4, opts=opts, devices=["cuda:0", "cuda:1"])
    assert s["heaps_partial"] > 0 and s["other_gpu"] == 0
    assert [d["device"] for d in s["gpus"]] == [0, 1]
    assert sum(d["heaps_partial"] for d in s["gpus"]) == s["heaps_partial"]


def _recount(raw: bytes, cnt: int) -> bytes:
    """The packet with heap counter `cnt` (its first item pointer)."""
    return raw[:8] + ptr(1, cnt).to_bytes(8, "big") + raw[16:]
