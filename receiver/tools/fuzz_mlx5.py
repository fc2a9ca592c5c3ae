"""atheris fuzz target: mlx5 completion parsing and the striding receive queue's stride
bookkeeping on completion entries built from the input.

Run: python receiver/tools/fuzz_mlx5.py -runs=100000   (libFuzzer flags apply)

Each input becomes a striding ring geometry and a run of 64-byte CQEs: mostly well-formed
(a WQE index, strides consumed, a stride index, a length, now and then a filler), their
fields often out of range, now and then raw bytes. Every CQE's fields, read by the
receiver, must be the ones `struct` reads at the offsets of struct mlx5_cqe64; and the
ring's replay must equal the contract written out here: a completion naming a WQE or a
stride the ring does not have, or a packet longer than its strides, is malformed and
places nothing; each other one uses its strides of its WQE, the WQE goes back once all
its strides are used; a packet lies at its WQE's buffer plus its stride's offset. Every
completion is counted once: a packet, a filler or malformed.
"""

from __future__ import annotations

import struct
import sys

import atheris

with atheris.instrument_imports(include=["casper400g_rx"]):
    from casper400g_rx import _core


def cqe(fdp: atheris.FuzzedDataProvider, n_wqe: int, per: int) -> bytes:
    if fdp.ConsumeIntInRange(0, 15) == 15:
        return fdp.ConsumeBytes(64).ljust(64, b"\0")
    raw = bytearray(fdp.ConsumeBytes(64).ljust(64, b"\0"))
    wild = fdp.ConsumeIntInRange(0, 7) == 7
    wqe_id = fdp.ConsumeIntInRange(0, 0xFFFF if wild else n_wqe)
    strides = fdp.ConsumeIntInRange(0, 0x3FFF if wild else per)
    index = fdp.ConsumeIntInRange(0, 0xFFFF if wild else per)
    length = fdp.ConsumeIntInRange(0, 0xFFFF if wild else 3 * 64)
    filler = fdp.ConsumeIntInRange(0, 7) == 7
    struct.pack_into(">H", raw, 2, wqe_id)
    struct.pack_into(">I", raw, 44, (int(filler) << 31) | (strides << 16) | length)
    struct.pack_into(">H", raw, 60, index)
    return bytes(raw)


def fields(c: bytes) -> dict[str, object]:
    """The CQE's fields as struct reads them (mlx5dv.h's struct mlx5_cqe64 offsets)."""
    op_own = c[63]
    (byte_cnt,) = struct.unpack_from(">I", c, 44)
    opcode = op_own >> 4
    err = opcode in (13, 14)
    return {
        "opcode": opcode,
        "format": (op_own >> 2) & 3,
        "owner": bool(op_own & 1),
        "byte_cnt": byte_cnt,
        "wqe_counter": struct.unpack_from(">H", c, 60)[0],
        "wqe_id": struct.unpack_from(">H", c, 2)[0],
        "timestamp": struct.unpack_from(">Q", c, 48)[0],
        "l3_ok": bool(c[28] & 2),
        "l4_ok": bool(c[28] & 4),
        "syndrome": c[55] if err else 0,
        "vendor_syndrome": c[54] if err else 0,
        "filler": bool(byte_cnt >> 31),
        "strides": (byte_cnt >> 16) & 0x3FFF,
        "length": byte_cnt & 0xFFFF,
        "stride_index": struct.unpack_from(">H", c, 60)[0],
    }


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    n_wqe = fdp.ConsumeIntInRange(1, 8)
    log_stride = fdp.ConsumeIntInRange(6, 9)
    log_strides = fdp.ConsumeIntInRange(0, 4)
    per = 1 << log_strides
    cqes = [cqe(fdp, n_wqe, per) for _ in range(fdp.ConsumeIntInRange(0, 24))]
    for c in cqes:
        assert _core._parse_cqe(c) == fields(c), c.hex()
    got, malformed = _core._stride_ring_replay(n_wqe, log_stride, log_strides, cqes)
    used = [0] * n_wqe
    want, bad, packets, fillers = [], 0, 0, 0
    for c in cqes:
        f = fields(c)
        k, n, i = f["wqe_id"], f["strides"], f["stride_index"]
        assert isinstance(k, int) and isinstance(n, int) and isinstance(i, int)
        if k >= n_wqe or n == 0 or i >= per or i + n > per:
            want.append((-1, 0, -1))
            bad += 1
            continue
        used[k] += n
        done = -1
        if used[k] >= per:
            used[k], done = 0, k
        length = f["length"]
        assert isinstance(length, int)
        if f["filler"]:
            want.append((-1, 0, done))
            fillers += 1
        elif length == 0 or length > n << log_stride:
            want.append((-1, 0, done))
            bad += 1
        else:
            want.append(((k << (log_stride + log_strides)) + (i << log_stride), length, done))
            packets += 1
    assert list(got) == want, (got, want)
    assert malformed == bad and packets + fillers + malformed == len(cqes)
    ring = n_wqe << (log_stride + log_strides)
    assert all(off + size <= ring for off, size, _ in got if off >= 0)


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
