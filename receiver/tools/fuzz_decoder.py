"""atheris fuzz target: frame parser, format decoder and placement engine on arbitrary bytes.

Run: python receiver/tools/fuzz_decoder.py -runs=100000   (libFuzzer flags apply)

Every input is split into a handful of packets (as link-layer frames or as UDP payloads)
and fed through the mem backend with a format chosen from the input. Besides "never
crash", it checks the engine's conservation laws: every packet is counted exactly once,
and every placed packet is delivered in a chunk or counted in a dropped one.
"""

from __future__ import annotations

import sys

import atheris
import numpy as np

with atheris.instrument_imports(include=["casper400g_rx"]):
    import casper400g_rx as rx
    from casper400g_rx import _core

LINKTYPES = (1, 101, 113, 228, 276)


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    linktype = LINKTYPES[fdp.ConsumeIntInRange(0, len(LINKTYPES) - 1)]
    port = fdp.ConsumeIntInRange(0, 3)
    frame = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 128))
    parsed = _core.parse_frame(frame, linktype, port)
    if parsed is not None:
        offset, size, ip_id = parsed
        assert offset >= 0 and offset + size <= len(frame) and 0 <= ip_id <= 0xFFFF

    payload_size = fdp.ConsumeIntInRange(1, 24)
    width = fdp.ConsumeIntInRange(1, 8)
    fmt = rx.Format(
        payload_size=max(payload_size, width),
        seq="ipv4_id" if fdp.ConsumeBool() else "payload",
        seq_offset=fdp.ConsumeIntInRange(0, max(payload_size, width) - width),
        seq_width=width,
        seq_big_endian=fdp.ConsumeBool(),
        udp_port=port,
    )
    frames = fdp.ConsumeBool()
    n = fdp.ConsumeIntInRange(1, 12)
    stride = 64
    rows = np.zeros((n, stride), np.uint8)
    sizes = []
    for i in range(n):
        chunk = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, stride))
        rows[i, : len(chunk)] = np.frombuffer(chunk, np.uint8)
        sizes.append(len(chunk))
    ppc = fdp.ConsumeIntInRange(1, 8)
    cap = rx.Capture(
        rx.MemSource(packets=rows, sizes=sizes, frames=frames, linktype=linktype),
        fmt=fmt,
        chunking=rx.Chunking(
            packets_per_chunk=ppc,
            max_chunks=fdp.ConsumeIntInRange(1, 3),
            n_chunks=4,
            policy="drop_oldest",
        ),
    )
    delivered = 0
    with cap:
        for c in cap.chunks(timeout=5):
            assert c.n_present == int(c.present.sum())
            delivered += c.n_present
            c.release()
    s = cap.stats
    assert s.received == n
    outcomes = s.packets + s.late + s.duplicate + s.rejected + s.discarded + s.out_of_window
    assert s.received == outcomes, s
    assert delivered + s.packets_dropped == s.packets, (delivered, dict(s))


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
