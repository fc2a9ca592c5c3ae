"""atheris fuzz target: the SPEAD parser and heap assembly (Format.spead) on arbitrary bytes.

Run: python receiver/tools/fuzz_spead.py -runs=100000   (libFuzzer flags apply)

Each input becomes a SPEAD format (flavour, heap size, index item and step, named items)
and a handful of packets built from the input: mostly well-formed headers whose item
pointers, heap counters, offsets and lengths come from the input (so that the fuzzer
reaches the assembly code), now and then raw bytes. They are fed through the mem backend
on one or two queues. Besides "never crash", it checks the conservation laws: every
packet is counted exactly once (rejections by reason add up to `rejected`), every heap
byte counted is in a handed-out chunk, and a heap is present exactly when every byte of it
was covered: never when only the packet lengths add up to the heap size (overlapping
pieces), which a parse of the packets with `struct` alone checks independently.
"""

from __future__ import annotations

import struct
import sys

import atheris
import numpy as np

with atheris.instrument_imports(include=["casper400g_rx"]):
    import casper400g_rx as rx

ITEMS = (0x1600, 0x4103, 0x1, 0x5)


def rarely(fdp: atheris.FuzzedDataProvider, one_in: int) -> bool:
    # An exhausted provider gives the minimum: inputs that run out stay well-formed.
    return fdp.ConsumeIntInRange(0, one_in - 1) == one_in - 1


def item_pointer(fdp: atheris.FuzzedDataProvider, abits: int, fmt_items: list[int]) -> int:
    item = fdp.PickValueInList([*fmt_items, 1, 2, 3, 4, fdp.ConsumeIntInRange(0, 0x7FFF)])
    immediate = not rarely(fdp, 8)
    value = fdp.ConsumeIntInRange(0, 80)
    return (int(immediate) << 63) | ((item & ((1 << (63 - abits)) - 1)) << abits) | value


def packet(fdp: atheris.FuzzedDataProvider, abits: int, heap: int, fmt_items: list[int]) -> bytes:
    if rarely(fdp, 16):
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 96))
    magic = fdp.ConsumeIntInRange(0, 255) if rarely(fdp, 16) else 0x53
    addr = fdp.ConsumeIntInRange(0, 8) if rarely(fdp, 16) else abits // 8
    if rarely(fdp, 8):
        offset, length = fdp.ConsumeIntInRange(0, heap), fdp.ConsumeIntInRange(0, heap)
    elif rarely(fdp, 3):  # piece j of m, its edges moved: overlaps and holes
        m = fdp.ConsumeIntInRange(1, 4)
        j = fdp.ConsumeIntInRange(0, m - 1)
        offset = max(0, j * heap // m - fdp.ConsumeIntInRange(0, 5))
        stop = min(heap, (j + 1) * heap // m + fdp.ConsumeIntInRange(0, 5) - 2)
        length = max(0, stop - offset)
    else:  # piece j of m of the heap: multi-packet heaps that assemble
        m = fdp.ConsumeIntInRange(1, 4)
        j = fdp.ConsumeIntInRange(0, m - 1)
        offset, length = j * heap // m, (j + 1) * heap // m - j * heap // m
    pointers = []
    if not rarely(fdp, 8):  # the four special items
        cnt = fdp.ConsumeIntInRange(0, 12)
        size = fdp.ConsumeIntInRange(0, 96) if rarely(fdp, 8) else heap
        for item, value in ((1, cnt), (2, size), (3, offset), (4, length)):
            pointers.append((1 << 63) | (item << abits) | value)
    pointers += [item_pointer(fdp, abits, fmt_items) for _ in range(fdp.ConsumeIntInRange(0, 4))]
    turn = fdp.ConsumeIntInRange(0, 3)
    pointers = pointers[turn:] + pointers[:turn]
    n_items = fdp.ConsumeIntInRange(0, 20) if rarely(fdp, 16) else len(pointers)
    head = struct.pack(">BBBBHH", magic, 4, 8 - addr, addr, 0, n_items)
    body = b"".join(struct.pack(">Q", p) for p in pointers)
    payload = fdp.ConsumeBytes(length).ljust(length, b"\0")
    cut = fdp.ConsumeIntInRange(0, 3)  # 1: a byte short, 2: a byte over
    payload = payload[:-1] if cut == 1 else payload + b"x" if cut == 2 else payload
    return head + body + payload


def heap_pieces(
    packet: bytes, abits: int, heap: int, index_item: int, step: int, max_packet: int
) -> tuple[int, int, int] | None:
    """(slot index, offset, stop) of a packet a SPEAD receiver may place, read with
    `struct` (the last of repeated items wins), or None. Looser than the receiver (no
    alignment rule): what it takes is a superset of what the receiver places."""
    if not 8 <= len(packet) <= max_packet:
        return None
    magic, version, id_bytes, addr_bytes, _, n = struct.unpack_from(">BBBBHH", packet)
    if (magic, version, addr_bytes * 8, id_bytes + addr_bytes) != (0x53, 4, abits, 8):
        return None
    if n > (len(packet) - 8) // 8:
        return None
    imm: dict[int, int] = {}
    for i in range(n):
        (ptr,) = struct.unpack_from(">Q", packet, 8 + 8 * i)
        if ptr >> 63:
            imm[(ptr >> abits) & ((1 << (63 - abits)) - 1)] = ptr & ((1 << abits) - 1)
    if any(k not in imm for k in (1, 2, 3, 4)) or index_item not in imm:
        return None
    offset, length = imm[3], imm[4]
    if length > len(packet) - 8 - 8 * n or imm[2] != heap or offset + length > heap:
        return None
    if imm[index_item] % step:
        return None
    return imm[index_item] // step, offset, offset + length


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    abits = 48 if fdp.ConsumeBool() else 40
    heap = fdp.ConsumeIntInRange(1, 48)
    fmt_items = list(ITEMS[: fdp.ConsumeIntInRange(0, 3)])
    index_item = fdp.PickValueInList([0x1600, 0x5]) if rarely(fdp, 4) else 1
    if index_item in fmt_items:
        fmt_items.remove(index_item)
    step = fdp.ConsumeIntInRange(2, 3) if rarely(fdp, 4) else 1
    max_packet = 200 - fdp.ConsumeIntInRange(0, 160)
    fmt = rx.Format.spead(
        heap,
        heap_address_bits=abits,
        index_item=index_item,
        index_step=step,
        items=fmt_items,
        max_packet=max_packet,
    )
    n = fdp.ConsumeIntInRange(1, 12)
    named = [*fmt_items, index_item] if index_item != 1 else fmt_items
    pkts = [packet(fdp, abits, heap, named) for _ in range(n)]
    stride = max(1, *(len(p) for p in pkts))
    rows = np.zeros((n, stride), np.uint8)
    for i, p in enumerate(pkts):
        rows[i, : len(p)] = np.frombuffer(p, np.uint8)
    cover: dict[int, set[int]] = {}
    for p in pkts:
        piece = heap_pieces(p, abits, heap, index_item, step, max_packet)
        if piece is not None:
            cover.setdefault(piece[0], set()).update(range(piece[1], piece[2]))
    ppc = fdp.ConsumeIntInRange(1, 4)
    cap = rx.Capture(
        rx.MemSource(
            packets=rows, sizes=[len(p) for p in pkts], queues=fdp.ConsumeIntInRange(1, 2)
        ),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=fdp.ConsumeIntInRange(1, 3)),
    )
    in_chunks = 0
    with cap:
        for c in cap.chunks(timeout=5):
            assert c.n_present == int(c.present.sum())
            hb = c.heap_bytes
            assert np.all(hb[c.present] == heap), (hb, c.present)
            assert np.all(hb <= heap), hb
            for slot in range(ppc):
                reachable = len(cover.get(c.chunk_id * ppc + slot, ()))
                # Present only when the packets that could have gone there cover the heap.
                assert not c.present[slot] or reachable == heap, (slot, reachable, hb)
                assert hb[slot] <= reachable, (slot, reachable, hb)
            in_chunks += int(hb.sum())
            for values in c.items.values():
                assert values.shape == (ppc,)
            c.release()
    s = cap.stats
    assert s.received == n
    outcomes = s.packets + s.late + s.duplicate + s.rejected + s.discarded + s.out_of_window
    assert s.received == outcomes, s
    assert sum(s.rejected_by.values()) == s.rejected, s
    # Overlapping packets place some bytes twice: the heaps count each byte once.
    assert in_chunks <= s.bytes, (in_chunks, dict(s))


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
