"""atheris fuzz target: header-data split placement (the ibv backend's data path, against
the NIC emulation in schedule order) on streams built from the input.

Run: python receiver/tools/fuzz_split.py -runs=100000   (libFuzzer flags apply)

Each input becomes a geometry (packets per chunk, window, lanes, receives per lane) and a
stream: in order, with gaps, repeats, local swaps, stragglers from long ago, jumps within
and far beyond the window's bound, a restart, and runt frames. Besides "never crash", it
checks the conservation laws: every frame is dropped by the NIC (no receive posted) or
received; every frame received is counted exactly once; every packet placed either
landed in its own slot or was copied there, and is in a chunk handed out, holding its
own payload; no chunk id is handed out twice (unless the stream restarted). With one
lane, no runts, no NIC drops and no packet discarded for want of a chunk, the copying
engine (the mem source) on the same stream must count and deliver the same.
"""

from __future__ import annotations

import sys

import atheris
import numpy as np

with atheris.instrument_imports(include=["casper400g_rx"]):
    import casper400g_rx as rx
    from casper400g_rx import _core

PAYLOAD = 64
KEYS = ("received", "packets", "lost", "late", "duplicate", "rejected", "chunks",
        "out_of_window", "window_resyncs")  # fmt: skip


def stream(fdp: atheris.FuzzedDataProvider, ppc: int, window: int) -> list[int]:
    pos = fdp.PickValueInList([0, 5, ppc * 1000 + 3])
    seqs: list[int] = []
    for _ in range(fdp.ConsumeIntInRange(1, 160)):
        op = fdp.ConsumeIntInRange(0, 31)
        if op == 0:
            pos += fdp.ConsumeIntInRange(ppc, (window + 3) * ppc)  # a jump within the bound
        elif op == 1:
            pos += fdp.ConsumeIntInRange(8 * window * ppc, 1 << 40)  # far beyond it
        elif op == 2:
            pos = fdp.ConsumeIntInRange(0, 3 * ppc)  # the sender restarts
        elif op <= 5:
            pos += fdp.ConsumeIntInRange(1, 3)  # a few lost
        seqs.append(pos)
        if op == 6:
            seqs.append(pos)  # a repeat
        elif op == 7 and len(seqs) > 2:
            seqs[-1], seqs[-2] = seqs[-2], seqs[-1]  # a swap
        elif op == 8 and seqs:
            seqs.append(fdp.ConsumeIntInRange(max(0, pos - 50 * ppc), pos))  # a straggler
        pos += 1
    return seqs


def drain(cap: object) -> list[tuple[int, np.ndarray, np.ndarray]]:
    cap.start()  # type: ignore[attr-defined]
    out = []
    while (c := cap.next_chunk(20.0)) is not None:  # type: ignore[attr-defined]
        out.append((c.chunk_id, c.present.copy(), c.data.copy()))
        c.release()
    cap.stop()  # type: ignore[attr-defined]
    return out


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    ppc = fdp.PickValueInList([4, 8, 16, 32])
    window = fdp.ConsumeIntInRange(1, 4)
    lanes = fdp.ConsumeIntInRange(1, 3)
    depth = fdp.ConsumeIntInRange(1, 64)
    seqs = stream(fdp, ppc, window)
    schedule = np.array(seqs, dtype=np.uint64)
    bad = sorted(
        {fdp.ConsumeIntInRange(0, len(seqs) - 1) for _ in range(fdp.ConsumeIntInRange(0, 3))}
    )
    fmt = rx.Format(payload_size=PAYLOAD)
    # Enough chunks that receives posted on stale predictions cannot pin them all.
    split_window = window + -(-depth * lanes // ppc) + 1
    config = _core.EngineConfig(
        packets_per_chunk=ppc,
        max_chunks=window,
        n_chunks=2 * split_window + lanes * depth + 4,
        skip_lagging=False,
        resync_after=fdp.ConsumeIntInRange(1, 20),
    )
    options = _core.EmulatorOptions(
        queues=lanes, depth=depth, schedule=schedule, bad=np.array(bad, np.uint64), serial=True
    )
    cap = _core.Capture.split_emulation(fmt, config, options)
    got = drain(cap)
    s = rx.Stats(cap.stats)
    assert s.received + s.nic_drops == len(seqs), dict(s)
    outcomes = (s.packets + s.late + s.duplicate + s.rejected + s.discarded + s.out_of_window
                + s.no_free_chunk)  # fmt: skip
    assert outcomes == s.received, dict(s)
    assert s.in_place + s.fixup_copies == s.packets, dict(s)
    assert s.packets == sum(int(p.sum()) for _, p, _ in got), dict(s)
    for cid, present, chunk in got:
        seqs_here = cid * ppc + np.flatnonzero(present)
        np.testing.assert_array_equal(chunk[present], rx.example_payloads(seqs_here, PAYLOAD))
    ids = [cid for cid, _, _ in got]
    if s.window_resyncs == 0:  # (a stream that restarted may hand a chunk id out again)
        assert len(set(ids)) == len(ids), ids
    # Equal to the copying engine when nothing stands between: one lane, no runts, no NIC
    # drops, and no packet discarded for want of a chunk (receives posted on stale
    # predictions pin retired chunks: a stream of one packet per chunk against a shallow
    # queue can pin the whole pool, where the copying engine never runs short).
    if lanes > 1 or bad or s.nic_drops or s.discarded:
        return
    ref_cap = _core.Capture.generator(fmt, config, 0, 0, schedule, True, 1, None)
    ref = drain(ref_cap)
    r = rx.Stats(ref_cap.stats)
    assert {k: s[k] for k in KEYS} == {k: r[k] for k in KEYS}, (dict(s), dict(r))
    assert ids == [cid for cid, _, _ in ref]
    for (_, present, chunk), (_, ref_present, ref_chunk) in zip(got, ref, strict=True):
        np.testing.assert_array_equal(present, ref_present)
        np.testing.assert_array_equal(chunk[present], ref_chunk[present])


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
