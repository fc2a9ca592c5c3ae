"""atheris fuzz target: the RDMA ring's immediates and slot headers (rdma source, emulated:
no verbs), on writes and completions built from the input.

Run: python receiver/tools/fuzz_rdma.py -runs=100000   (libFuzzer flags apply)

Each input becomes a ring geometry and a run of events: RDMA WRITEs of slots (a header
holding the slot's own sequence number, one off, or a wild one, then payload bytes),
writes of raw bytes anywhere (and past the ring, which must be refused), immediates
naming chunks near the next one expected or anywhere in the 24-bit space with any drop
count, and the consumer taking and releasing chunks. A mirror of the ring written here
checks every chunk handed out: a slot is present exactly when its header holds its own
sequence number, and its data is what was written. Conservation: every immediate is late,
out of window, or settles its own chunk (delivered or an overrun); every chunk settled
counts all its slots as packets or lost; and (without resyncs) the credit never passes the
chunks the ring has settled.
"""

from __future__ import annotations

import struct
import sys
from typing import Any

import atheris

with atheris.instrument_imports(include=["casper400g_rx"]):
    from casper400g_rx import _core


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    slots = fdp.ConsumeIntInRange(1, 4)
    chunks = fdp.ConsumeIntInRange(1, 4)
    payload = 8 * fdp.ConsumeIntInRange(1, 4)
    slot_size = payload + 8 + fdp.ConsumeIntInRange(0, 8)
    ring = bytearray(slot_size * slots * chunks)
    cap = _core.RdmaCapture(slot_size, slots, chunks, payload, emulate=True)
    cap.start()
    held: list[Any] = []

    def check(got: Any) -> None:
        place = got.chunk_id % chunks
        for s in range(slots):
            at = (place * slots + s) * slot_size
            (header,) = struct.unpack_from(">Q", ring, at)
            present = header == got.chunk_id * slots + s
            assert bool(got.present[s]) == present, (got.chunk_id, s, header)
            if present:
                assert bytes(got.data[s]) == bytes(ring[at + 8 : at + 8 + payload])
        assert got.n_present == int(got.present.sum())

    expected = 0  # the next chunk, as the contract moves it (checked while nothing resyncs)
    for _ in range(fdp.ConsumeIntInRange(0, 48)):
        op = fdp.ConsumeIntInRange(0, 5)
        if op <= 1:  # a slot written by the core
            c = fdp.ConsumeIntInRange(0, 3 * chunks + 2)
            s = fdp.ConsumeIntInRange(0, slots - 1)
            seq = c * slots + s
            if fdp.ConsumeIntInRange(0, 7) == 7:
                seq = fdp.ConsumeIntInRange(0, 2**64 - 1)
            body = struct.pack(">Q", seq) + fdp.ConsumeBytes(payload).ljust(payload, b"\0")
            off = ((c % chunks) * slots + s) * slot_size
            cap.emulate_write(off, body)
            ring[off : off + len(body)] = body
        elif op == 2:  # raw bytes anywhere
            off = fdp.ConsumeIntInRange(0, len(ring) + 16)
            raw = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 24))
            if off + len(raw) > len(ring):
                try:
                    cap.emulate_write(off, raw)
                except IndexError:
                    continue
                raise AssertionError("a write past the ring was taken")
            cap.emulate_write(off, raw)
            ring[off : off + len(raw)] = raw
        elif op == 3:  # an immediate: {drop count mod 256, chunk mod 2^24}
            if fdp.ConsumeIntInRange(0, 3) == 3:
                chunk24 = fdp.ConsumeIntInRange(0, (1 << 24) - 1)
            else:
                chunk24 = (expected + fdp.ConsumeIntInRange(-2, chunks + 1)) % (1 << 24)
            drop8 = fdp.ConsumeIntInRange(0, 255)
            cap.emulate_immediate((drop8 << 24) | chunk24)
            diff = (chunk24 - expected) % (1 << 24)
            if diff < chunks:
                expected += diff + 1
            # The chunks it handed out, checked against the ring as it is now (a chunk's
            # presence is read when it is handed out; `data` is a view of the ring).
            while (got := cap.next_chunk(0.0)) is not None:
                check(got)
                held.append(got)
        elif op == 4 and held:  # the consumer releases the oldest
            held.pop(0).release()
        elif held:  # the consumer releases one
            held.pop(fdp.ConsumeIntInRange(0, len(held) - 1)).release()

    st = cap.stats
    for c in held:
        c.release()
    cap.stop()
    settled_own = st["immediates"] - st["late_immediates"] - st["out_of_window_immediates"]
    delivered_own = st["chunks"] - st["missing_immediates"]
    assert delivered_own <= settled_own <= delivered_own + st["overruns"], st
    settled = st["chunks"] + st["lost_chunks"] + st["core_dropped_chunks"] + st["overruns"]
    assert st["packets"] + st["lost"] == slots * settled, st
    assert st["bytes"] == st["packets"] * payload, st
    if st["resyncs"] == 0 and st["credit"] != 0xFFFFFFFF:
        assert st["credit"] + 1 <= expected, (st, expected)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
