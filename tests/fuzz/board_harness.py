"""What the fuzz targets of tests/fuzz share: coverage for the package under test, a
design on a bus file, and a client connection made of a scripted reader and a recording
writer (no sockets), so that one input is one connection served start to end on one
event loop."""

from __future__ import annotations

import collections
import gc
import tempfile
import types
from pathlib import Path

import atheris

from casperfpga_ext.fpg import FpgBlock, FpgDevice, write_fpg

# The design served: a scratch register and a 400GbE core's block, as in tests/conftest.py.
DEVICES = [FpgDevice("sys_scratch", 0x0, 0x4), FpgDevice("gbe0", 0x10000, 0x10000)]
BLOCKS = [FpgBlock("gbe0", "xps:fourhundred_gbe", {"fab_ip": "10.0.0.10", "fab_udp": "7148"})]
WINDOW = 0x20000
PEER = ("127.0.0.1", 40000)


def instrument(package: str) -> int:
    """Give libFuzzer coverage of every function of ``package`` imported so far; returns
    how many. (atheris.instrument_imports misses modules an editable install loads: its
    loader wraps theirs.)"""
    funcs = [
        f
        for f in gc.get_objects()
        if isinstance(f, types.FunctionType) and (f.__module__ or "").startswith(package)
    ]
    for f in funcs:
        atheris.instrument_func(f)
    return len(funcs)


class Files:
    """A bus file of ``WINDOW`` bytes and an .fpg directory: the design, a second design,
    one whose bitstream is not gzip and one that reaches outside the window."""

    def __init__(self) -> None:
        # The server unpacks each design in a temporary directory: in memory where there
        # is a tmpfs, so that a run's speed is the server's rather than the disk's.
        if Path("/dev/shm").is_dir():
            tempfile.tempdir = "/dev/shm"
        self._tmp = tempfile.TemporaryDirectory(prefix="board-fuzz-")
        self.root = Path(self._tmp.name)
        self.bus = self.root / "bus.bin"
        self.bus.write_bytes(bytes(WINDOW))
        self.fpg = self.root / "design.fpg"
        write_fpg(self.fpg, DEVICES, BLOCKS, b"bitstream")
        write_fpg(self.root / "v2.fpg", [FpgDevice("adc", 0x8, 0x8)], [], b"second")
        far = [FpgDevice("far", WINDOW, 0x1000)]
        write_fpg(self.root / "far.fpg", far, [], b"")
        (self.root / "nogz.fpg").write_bytes(b"#!/bin/kcpfpg\n?quit\nnot gzip")


class ScriptedReader:
    """A connection's reads, cut where the input says."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = collections.deque(pieces)

    async def read(self, n: int = -1) -> bytes:
        if not self.pieces:
            return b""
        piece = self.pieces.popleft()
        if 0 <= n < len(piece):
            self.pieces.appendleft(piece[n:])
            piece = piece[:n]
        return piece


class _Transport:
    def get_write_buffer_size(self) -> int:
        return 0


class RecordingWriter:
    """Everything the server writes to the client, and whether it closed the connection."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = False
        self.transport = _Transport()

    def write(self, data: bytes) -> None:
        assert not self.closed, "written after close"
        self.data += data

    async def drain(self) -> None:
        return None

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None

    def get_extra_info(self, name: str, default: object = None) -> object:
        return PEER if name == "peername" else default

    def lines(self) -> list[bytes]:
        assert self.data.endswith(b"\n") or not self.data, "a line left unfinished"
        return bytes(self.data).split(b"\n")[:-1]
