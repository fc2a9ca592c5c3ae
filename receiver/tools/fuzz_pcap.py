"""atheris fuzz target: the pcap reader (pcap source) on capture files built from the input.

Run: python receiver/tools/fuzz_pcap.py -runs=100000   (libFuzzer flags apply)

Each input becomes a classic pcap file: either byte order, microsecond or nanosecond magic
(now and then a wrong one), a link type (now and then an unsupported one), and records
whose frames are example-stream frames or raw bytes, whose lengths may lie (a captured
length past the file, one longer than any datagram, a snap length shorter than the
original) and whose file may end inside a record. The file is replayed through the pcap
source. Besides "never crash", it checks: a bad global header is refused by name; every
record the file holds (counted with `struct` alone, a record cut off by the end of the
file counting once) is counted exactly once (`received`), every outcome adds up, and every
slot delivered holds the payload of a record that carries its sequence number.
"""

from __future__ import annotations

import os
import struct
import sys
import tempfile

import atheris

with atheris.instrument_imports(include=["casper400g_rx"]):
    import casper400g_rx as rx
    from casper400g_rx import Chunking, PcapSource, _core

PAYLOAD = 64
PORT = 7148
LINKTYPES = (1, 101, 228, 113, 276)
DIR = tempfile.mkdtemp(prefix="fuzz_pcap_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
PATH = os.path.join(DIR, "input.pcap")


def rarely(fdp: atheris.FuzzedDataProvider, one_in: int) -> bool:
    return fdp.ConsumeIntInRange(0, one_in - 1) == one_in - 1


def records_in(blob: bytes, order: str) -> int:
    """Records of a pcap file, as the reader must count them (struct alone)."""
    n, off = 0, 24
    while off < len(blob):
        n += 1
        if len(blob) - off < 16:
            break
        (incl,) = struct.unpack_from(order + "I", blob, off + 8)
        off += 16
        if incl > len(blob) - off:
            break
        off += incl
    return n


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    order = "<" if fdp.ConsumeBool() else ">"
    magic = fdp.PickValueInList([0xA1B2C3D4, 0xA1B23C4D])
    good_header = True
    if rarely(fdp, 16):
        magic = fdp.ConsumeIntInRange(0, 0xFFFFFFFF)
        good_header = magic in (0xA1B2C3D4, 0xA1B23C4D, 0xD4C3B2A1, 0x4D3CB2A1)
    linktype = fdp.PickValueInList(list(LINKTYPES))
    if rarely(fdp, 16):
        linktype = fdp.ConsumeIntInRange(0, 300)
        good_header = good_header and linktype in LINKTYPES
    if magic in (0xD4C3B2A1, 0x4D3CB2A1):
        order = ">" if order == "<" else "<"  # the reader sees the other byte order
    blob = bytearray(struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 262144, linktype))
    carried: dict[int, set[bytes]] = {}
    for _ in range(fdp.ConsumeIntInRange(0, 12)):
        if rarely(fdp, 4):
            frame = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 120))
        else:
            seq = fdp.ConsumeIntInRange(0, 40)
            frame = _core.example_frame(seq, PAYLOAD, PORT)
            if linktype in (101, 228):
                frame = frame[14:]  # raw IPv4
            elif linktype in (113, 276):
                frame = bytes(16) + frame[14:]  # Linux cooked header (protocol 0: not IPv4)
        incl = orig = len(frame)
        if rarely(fdp, 8):
            orig = fdp.ConsumeIntInRange(0, 200)
        if rarely(fdp, 16):
            incl = fdp.PickValueInList([fdp.ConsumeIntInRange(0, 400), 300000, 0xFFFFFFFF])
        blob += struct.pack(order + "IIII", 0, 0, incl, orig) + frame
        if incl == orig == len(frame) and linktype in LINKTYPES:
            parsed = _core.parse_frame(frame, linktype, PORT)
            if parsed is not None and parsed[1] == PAYLOAD:
                payload = frame[parsed[0] : parsed[0] + PAYLOAD]
                carried.setdefault(int.from_bytes(payload[:8], "big"), set()).add(payload)
    if rarely(fdp, 4):
        del blob[fdp.ConsumeIntInRange(0, len(blob)) :]  # the file ends anywhere
    with open(PATH, "wb") as f:
        f.write(blob)
    good_header = good_header and len(blob) >= 24
    try:
        cap = rx.Capture(
            PcapSource(PATH),
            fmt=rx.Format(payload_size=PAYLOAD, udp_port=PORT),
            chunking=Chunking(packets_per_chunk=fdp.ConsumeIntInRange(1, 8), max_chunks=2),
        )
    except ValueError as exc:
        assert not good_header, exc
        return
    assert good_header
    placed = 0
    with cap:
        for c in cap.chunks(timeout=5):
            for slot in c.present.nonzero()[0]:
                seq = c.chunk_id * c.packets_per_chunk + int(slot)
                assert bytes(c.data[slot]) in carried.get(seq, ()), (seq, carried)
            placed += int(c.present.sum())
            c.release()
    s = cap.stats
    assert s.received == records_in(bytes(blob), order), (dict(s), len(blob))
    assert (
        s.received == s.packets + s.late + s.duplicate + s.rejected + s.discarded + s.out_of_window
    ), s
    assert placed == s.packets, (placed, dict(s))


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
