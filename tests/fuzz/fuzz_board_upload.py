"""atheris fuzz target: the board server's upload path, from the bytes received to the
design mapped.

Run: python tests/fuzz/fuzz_board_upload.py -runs=100000   (libFuzzer flags apply)

Each input makes one to three uploads to one server (uploads allowed, small caps): raw
bytes, or an .fpg assembled from the input (devices inside, across or outside the window,
nested, overlapping or misaligned; a bitstream that is gzip, gzip that inflates past the cap,
truncated gzip or not gzip), cut into reads where the input says. A program command that
records what it was given fails when the input says so. Conservation: every upload is
counted once, programmed or refused for one reason, and that outcome is the one an
independent reading of the same bytes predicts (size, then header, then memory map, then
Python's gzip module on the bitstream, then the program command); a programmed upload gave
the program command exactly gzip's bitstream and the whole file, and its devices are
served; a refused one before the program command left the previous design served.
"""

from __future__ import annotations

import asyncio
import gzip
import sys
import zlib
from pathlib import Path

import atheris
from board_harness import WINDOW, Files, RecordingWriter, ScriptedReader, instrument

from casper400g_board_server.server import (
    BoardServer,
    Connection,
    MmapWindow,
    RequestError,
    ServerPolicy,
)
from casperfpga_ext.fpg import FpgDevice, parse_fpg_header, write_fpg_header

instrument("casperfpga_ext")

POLICY = ServerPolicy(allow_upload=True, max_upload=4096, max_bitstream=8192)
FILES = Files()
LOOP = asyncio.new_event_loop()


def device(fdp: atheris.FuzzedDataProvider, k: int) -> FpgDevice:
    choice = fdp.ConsumeIntInRange(0, 5)
    if choice == 0:  # anywhere, any size
        return FpgDevice(
            f"d{k}", fdp.ConsumeIntInRange(0, 1 << 40), fdp.ConsumeIntInRange(0, 1 << 20)
        )
    # Word-aligned inside or near the window: ends that touch, cross and overlap.
    address = 4 * fdp.ConsumeIntInRange(0, (WINDOW + 0x100) // 4)
    return FpgDevice(f"d{k}", address, 4 * fdp.ConsumeIntInRange(0, 0x400))


def bitstream(fdp: atheris.FuzzedDataProvider) -> bytes:
    choice = fdp.ConsumeIntInRange(0, 5)
    if choice == 0:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))  # not gzip, mostly
    body = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 256))
    if choice == 1:  # inflates past the cap from a few dozen bytes
        body = bytes(fdp.ConsumeIntInRange(0, 4 * POLICY.max_bitstream))
    packed = gzip.compress(body, mtime=0)
    if choice == 2:  # truncated
        packed = packed[: fdp.ConsumeIntInRange(0, len(packed))]
    elif choice == 3:  # two members, zero padding, then maybe garbage
        packed += bytes(fdp.ConsumeIntInRange(0, 4)) + gzip.compress(body[:7], mtime=0)
        packed += fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 3))
    elif choice == 4 and packed:  # one byte flipped
        k = fdp.ConsumeIntInRange(0, len(packed) - 1)
        packed = (
            packed[:k] + bytes([packed[k] ^ (1 + fdp.ConsumeIntInRange(0, 254))]) + packed[k + 1 :]
        )
    return packed


def upload(fdp: atheris.FuzzedDataProvider) -> bytes:
    if fdp.ConsumeIntInRange(0, 4) == 0:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 512))
    devices = [device(fdp, k) for k in range(fdp.ConsumeIntInRange(0, 4))]
    header = write_fpg_header(devices, [])
    if fdp.ConsumeIntInRange(0, 9) == 0:
        header += bytes(fdp.ConsumeIntInRange(0, POLICY.max_upload))  # too large
    return header + bitstream(fdp)


def fits(devices: list[FpgDevice]) -> bool:
    """The devices lie in 0..WINDOW, whole words, and any two either apart or one inside
    the other (checked pairwise)."""
    for d in devices:
        if d.size <= 0 or d.address % 4 or d.size % 4 or d.address + d.size > WINDOW:
            return False
    for i, a in enumerate(devices):
        for b in devices[i + 1 :]:
            a_end, b_end = a.address + a.size, b.address + b.size
            apart = a_end <= b.address or b_end <= a.address
            nested = (a.address <= b.address and b_end <= a_end) or (
                b.address <= a.address and a_end <= b_end
            )
            if not (apart or nested):
                return False
    return True


def expected(data: bytes, program_fails: bool) -> tuple[str, bytes | None]:
    """The outcome an independent reading predicts, and the bitstream if programmed."""
    if len(data) > POLICY.max_upload:
        return "too_large", None
    try:
        header = parse_fpg_header(data, "upload:fuzz")
    except ValueError:
        return "bad_header", None
    if not fits(list(header.devices.values())):
        return "memory_map", None
    try:
        pdi = gzip.decompress(data[header.bitstream_offset :])
    except (OSError, EOFError, zlib.error):
        return "not_gzip", None
    if len(pdi) > POLICY.max_bitstream:
        return "too_large", None
    return ("program_failed", None) if program_fails else ("programmed", pdi)


@atheris.instrument_func
def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    given: list[tuple[bytes, bytes]] = []
    fail_next = [False]

    async def program(pdi: Path, fpg: Path) -> None:
        given.append((pdi.read_bytes(), fpg.read_bytes()))
        if fail_next[0]:
            raise RequestError("the loader failed")

    server = BoardServer(
        MmapWindow(FILES.bus, 0, WINDOW),
        program_cmd=program,
        fpg=FILES.fpg,
        fpg_dir=FILES.root,
        policy=POLICY,
    )
    writer = RecordingWriter()
    conn = Connection(writer)  # type: ignore[arg-type]
    uploads = fdp.ConsumeIntInRange(1, 3)
    for k in range(uploads):
        sent = upload(fdp)
        fail_next[0] = fdp.ConsumeIntInRange(0, 7) == 0
        pieces, at = [], 0
        while at < len(sent):
            n = fdp.ConsumeIntInRange(1, 1024) if fdp.remaining_bytes() else len(sent)
            pieces.append(sent[at : at + n])
            at += n
        before = dict(server.devices)
        given.clear()
        receiving = server._read_upload(ScriptedReader(pieces))  # type: ignore[arg-type]
        got = LOOP.run_until_complete(server._handle_upload(conn, receiving, "upload:fuzz"))
        want, pdi = expected(sent, fail_next[0])
        assert got == want, (got, want, sent[:200])
        if got == "programmed":
            assert given == [(pdi, sent)]
            header = parse_fpg_header(sent, "upload:fuzz")
            assert server.devices == header.devices
        elif got == "program_failed":
            assert len(given) == 1 and server.devices == {}
        else:
            assert given == [] and server.devices == before
        counts = server.counts
        refused = sum(v for key, v in counts.items() if key.startswith("upload_refused_"))
        assert counts["upload"] == k + 1 == counts["upload_programmed"] + refused, dict(counts)
    LOOP.run_until_complete(server.close())
    assert all(line[:1] == b"#" for line in writer.lines())
    assert FILES.bus.stat().st_size == WINDOW


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
