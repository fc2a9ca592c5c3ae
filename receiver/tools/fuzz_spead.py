"""atheris fuzz target: the SPEAD parser and heap assembly (Format.spead) on arbitrary bytes.

Run: python receiver/tools/fuzz_spead.py -runs=100000   (libFuzzer flags apply)

Each input becomes a SPEAD format (flavour, heap size, index item and step, named items)
and a handful of packets built from the input: mostly well-formed headers whose item
pointers, heap counters, offsets and lengths come from the input (so that the fuzzer
reaches the assembly code), now and then raw bytes. They are fed through the mem backend
on one or two queues. Besides "never crash", it checks the conservation laws: every
packet is counted exactly once (rejections by reason add up to `rejected`), every placed
byte is in a handed-out chunk, and a heap is present only when all its bytes arrived.
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


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    abits = 48 if fdp.ConsumeBool() else 40
    heap = fdp.ConsumeIntInRange(1, 48)
    fmt_items = list(ITEMS[: fdp.ConsumeIntInRange(0, 3)])
    index_item = fdp.PickValueInList([0x1600, 0x5]) if rarely(fdp, 4) else 1
    if index_item in fmt_items:
        fmt_items.remove(index_item)
    fmt = rx.Format.spead(
        heap,
        heap_address_bits=abits,
        index_item=index_item,
        index_step=fdp.ConsumeIntInRange(2, 3) if rarely(fdp, 4) else 1,
        items=fmt_items,
        max_packet=200 - fdp.ConsumeIntInRange(0, 160),
    )
    n = fdp.ConsumeIntInRange(1, 12)
    named = [*fmt_items, index_item] if index_item != 1 else fmt_items
    pkts = [packet(fdp, abits, heap, named) for _ in range(n)]
    stride = max(1, *(len(p) for p in pkts))
    rows = np.zeros((n, stride), np.uint8)
    for i, p in enumerate(pkts):
        rows[i, : len(p)] = np.frombuffer(p, np.uint8)
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
            in_chunks += int(hb.sum())
            for values in c.items.values():
                assert values.shape == (ppc,)
            c.release()
    s = cap.stats
    assert s.received == n
    assert s.received == s.packets + s.late + s.duplicate + s.rejected + s.discarded, s
    assert sum(s.rejected_by.values()) == s.rejected, s
    assert in_chunks == s.bytes, (in_chunks, dict(s))


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
