"""spead2 as the reference for SPEAD capture: heaps sent by spead2's own sender, captured by
spead2's chunk stream, and the ground truth the two are checked against.

Packets are split out of spead2's byte stream with `struct` alone (header, item pointers,
payload length), independently of the receiver's parser.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

TIMESTAMP = 0x1600  # the item ids MeerKAT's F-engines use for these
CHANNEL = 0x4103
DATA = 0x3300
HEAP_CNT = 0x1
HEAP_SIZE = 0x2
ABSENT = (1 << 64) - 1


@dataclass
class Heap:
    cnt: int
    timestamp: int
    channel: int
    payload: bytes


@dataclass
class Got:
    """One chunk as a receiver handed it over (copied out)."""

    present: np.ndarray
    data: np.ndarray
    items: dict[int, np.ndarray]
    heap_bytes: np.ndarray | None = None


@dataclass
class Packet:
    raw: bytes
    cnt: int
    offset: int
    length: int
    immediates: dict[int, int] = field(default_factory=dict)


def make_heaps(
    n: int, heap_size: int, *, seed: int = 1, first_cnt: int = 0, t0: int = 0, step: int = 4096
) -> list[Heap]:
    rng = np.random.default_rng(seed)
    return [
        Heap(
            cnt=first_cnt + i,
            timestamp=t0 + (first_cnt + i) * step,
            channel=int(rng.integers(0, 4096)),
            payload=rng.integers(0, 256, heap_size, dtype=np.uint8).tobytes(),
        )
        for i in range(n)
    ]


def split_packets(stream: bytes) -> list[Packet]:
    """SPEAD packets back to back, as spead2's BytesStream writes them."""
    out = []
    off = 0
    while off < len(stream):
        magic, version, _id_bytes, addr_bytes, _res, n = struct.unpack_from(">BBBBHH", stream, off)
        assert (magic, version) == (0x53, 4), stream[off : off + 8].hex()
        abits = 8 * addr_bytes
        imm: dict[int, int] = {}
        for i in range(n):
            (ptr,) = struct.unpack_from(">Q", stream, off + 8 + 8 * i)
            if ptr >> 63:
                imm[(ptr >> abits) & ((1 << (63 - abits)) - 1)] = ptr & ((1 << abits) - 1)
        size = 8 + 8 * n + imm[4]
        out.append(Packet(stream[off : off + size], imm[1], imm[3], imm[4], imm))
        off += size
    return out


def spead2_packets(
    spead2: ModuleType,
    heaps: list[Heap],
    *,
    heap_address_bits: int = 48,
    max_packet_size: int = 9000,
    items: bool = True,
    repeat_pointers: bool = False,
    descriptors: bool = False,
) -> list[Packet]:
    """The packets spead2's sender makes of `heaps` (a data item, and with `items` the
    timestamp and channel as immediates), each heap sent with its own heap counter."""
    import spead2.send

    pool = spead2.ThreadPool(1)
    stream = spead2.send.BytesStream(
        pool, spead2.send.StreamConfig(max_packet_size=max_packet_size)
    )
    ig = spead2.send.ItemGroup(flavour=spead2.Flavour(4, 64, heap_address_bits, 0))
    imm = [("u", heap_address_bits)]
    if items:
        ig.add_item(TIMESTAMP, "timestamp", "ADC sample count", shape=(), format=imm)
        ig.add_item(CHANNEL, "frequency", "first channel", shape=(), format=imm)
    size = len(heaps[0].payload)
    ig.add_item(DATA, "data", "payload", shape=(size,), dtype=np.uint8)
    if descriptors:
        # A descriptor heap first, as real senders do: not a data heap of the stream.
        stream.send_heap(ig.get_heap(descriptors="all", data="none"), cnt=1 << 30)
    for h in heaps:
        if items:
            ig["timestamp"].value = h.timestamp
            ig["frequency"].value = h.channel
        ig["data"].value = np.frombuffer(h.payload, np.uint8)
        heap = ig.get_heap(descriptors="none", data="all")
        heap.repeat_pointers = repeat_pointers
        stream.send_heap(heap, cnt=h.cnt)
    return split_packets(stream.getvalue())


def spead2_capture(
    spead2: ModuleType,
    packets: list[bytes],
    *,
    heaps_per_chunk: int,
    heap_size: int,
    items: tuple[int, ...] = (),
    index_item: int = HEAP_CNT,
    index_step: int = 1,
    max_chunks: int = 4,
) -> tuple[dict[int, Got], dict[str, int]]:
    """spead2's chunk stream (ChunkRingStream, the place callback of
    casper400g_rx._core._spead2_place) over the packets, read from memory."""
    import spead2.recv

    from casper400g_rx import _core

    n = len(items)
    config = spead2.recv.ChunkStreamConfig(
        items=[index_item, HEAP_SIZE, *items],
        max_chunks=max_chunks,
        place=_core._spead2_place(heaps_per_chunk, heap_size, index_step, n),
        max_heap_extra=8 * n,
    )
    n_chunks = max_chunks + 4
    data_ring = spead2.recv.ChunkRingbuffer(n_chunks)
    free_ring = spead2.recv.ChunkRingbuffer(n_chunks)
    stream = spead2.recv.ChunkRingStream(
        spead2.ThreadPool(1),
        spead2.recv.StreamConfig(max_heaps=8, allow_out_of_order=True),
        config,
        data_ring,
        free_ring,
    )
    for _ in range(n_chunks):
        stream.add_free_chunk(
            spead2.recv.Chunk(
                present=np.zeros(heaps_per_chunk, np.uint8),
                data=np.zeros(heaps_per_chunk * heap_size, np.uint8),
                extra=np.zeros(heaps_per_chunk * max(n, 1), np.uint64),
            )
        )
    stream.add_buffer_reader(b"".join(packets))
    out: dict[int, Got] = {}
    for chunk in data_ring:
        extra = np.asarray(chunk.extra).reshape(heaps_per_chunk, max(n, 1))
        present = np.asarray(chunk.present).astype(bool)
        data = np.asarray(chunk.data).reshape(heaps_per_chunk, heap_size)
        out[chunk.chunk_id] = Got(
            present.copy(),
            data.copy(),
            {item: extra[:, k].copy() for k, item in enumerate(items)},
        )
        stream.add_free_chunk(chunk)
    stats = {name: stream.stats[name] for name in ("packets", "heaps", "incomplete_heaps_flushed")}
    stream.stop()
    return out, stats


def our_chunks(cap: Any, timeout: float = 10.0) -> dict[int, Got]:
    out: dict[int, Got] = {}
    for chunk in cap.chunks(timeout=timeout):
        out[chunk.chunk_id] = Got(
            chunk.present.copy(),
            chunk.data.copy(),
            {k: v.copy() for k, v in chunk.items.items()},
            chunk.heap_bytes.copy(),
        )
        chunk.release()
    return out


def rows_of(packets: list[bytes]) -> tuple[np.ndarray, list[int]]:
    stride = max(len(p) for p in packets)
    rows = np.zeros((len(packets), stride), np.uint8)
    for i, p in enumerate(packets):
        rows[i, : len(p)] = np.frombuffer(p, np.uint8)
    return rows, [len(p) for p in packets]
