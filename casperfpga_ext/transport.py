"""Access to the board's memory-mapped devices, with casperfpga's transport method names.

Byte order: ``read()`` returns, and ``blindwrite()`` takes, data as casperfpga's KATCP
``?read``/``?write`` carry it: a sequence of 32-bit words, each big-endian (network
order). The register value at a word offset is ``int.from_bytes(data[k:k + 4], "big")``
whatever the host CPU is. Every transport converts to that form, so code above it
(FourHundredGbe, Fpga) never deals with host byte order.

Accesses are whole 32-bit words at word-aligned offsets: AXI4-Lite word access is all the
core supports, and a byte access through ``/dev/mem`` would reach it as a narrower bus
transfer. Multi-word accesses go word by word in ascending address order, which is what
makes a 64-bit counter read take its low word (the snapshot) first.

Transports: ``MmapTransport`` (on the board: ``/dev/mem`` or UIO; a file in tests) and
``KatcpTransport`` (over the network to a KATCP board server, as casperfpga does).
"""

from __future__ import annotations

import mmap
import os
import socket
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol, runtime_checkable

from .fpg import FpgBlock, FpgDevice, FpgHeader

WORD_BYTES = 4


@runtime_checkable
class Transport(Protocol):
    """What FourHundredGbe and Fpga need from a connection to the board."""

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes: ...

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None: ...

    def listdev(self) -> list[str]: ...

    def is_connected(self) -> bool: ...


def read_uint(transport: Transport, device_name: str, offset: int = 0) -> int:
    """The unsigned 32-bit word at byte ``offset`` of a device."""
    return int.from_bytes(transport.read(device_name, WORD_BYTES, offset), "big")


def write_uint(transport: Transport, device_name: str, value: int, offset: int = 0) -> None:
    """Write one unsigned 32-bit word at byte ``offset`` of a device (no read-back)."""
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"value {value!r} for {device_name}+{offset:#x} is not a 32-bit word")
    transport.blindwrite(device_name, value.to_bytes(WORD_BYTES, "big"), offset)


def check_access(device_name: str, device_size: int, offset: int, size: int) -> None:
    """Refuse an access that is unaligned, empty or not wholly inside the device."""
    where = f"device {device_name!r} (size {device_size:#x}): offset {offset:#x}, size {size:#x}"
    if offset % WORD_BYTES or size % WORD_BYTES or size <= 0:
        raise ValueError(f"{where}: only whole, aligned 32-bit words can be accessed")
    if offset < 0 or offset + size > device_size:
        raise ValueError(f"{where}: outside the device")


class MmapTransport:
    """Devices in a memory-mapped file: ``/dev/mem`` or a UIO device on the board.

    ``devices`` maps a name to ``(offset, size)`` in bytes, offsets relative to ``base``
    (the physical address of the memory-mapped bus, or 0 for a UIO map). In the mapping
    each word is stored in the host CPU's byte order, as the CPU sees the bus; a regular
    file laid out that way stands in for the board in tests.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        devices: Mapping[str, tuple[int, int]],
        base: int = 0,
        length: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.devices = dict(devices)
        for name, (offset, size) in self.devices.items():
            if offset % WORD_BYTES or size % WORD_BYTES or offset < 0 or size <= 0:
                raise ValueError(f"device {name!r}: offset {offset:#x}, size {size:#x} unaligned")
        span = max((o + s for o, s in self.devices.values()), default=WORD_BYTES)
        self.length = span if length is None else length
        if self.length < span:
            raise ValueError(f"mapping length {self.length:#x} is shorter than the devices")
        if base % mmap.ALLOCATIONGRANULARITY:
            raise ValueError(f"base {base:#x} is not a multiple of the page size")
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_SYNC)
        try:
            self._map = mmap.mmap(self._fd, self.length, mmap.MAP_SHARED, offset=base)
        except (OSError, ValueError):
            os.close(self._fd)
            self._fd = None
            raise
        # A memoryview of 32-bit items makes every access one aligned word load/store.
        self._words = memoryview(self._map).cast("I")

    def _locate(self, device_name: str, offset: int, size: int) -> int:
        if device_name not in self.devices:
            raise ValueError(f"unknown device {device_name!r}; known: {sorted(self.devices)}")
        dev_offset, dev_size = self.devices[device_name]
        check_access(device_name, dev_size, offset, size)
        return (dev_offset + offset) // WORD_BYTES

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        first = self._locate(device_name, offset, size)
        words = (self._words[first + k] for k in range(size // WORD_BYTES))
        return b"".join(w.to_bytes(WORD_BYTES, "big") for w in words)

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        first = self._locate(device_name, offset, len(data))
        for k in range(len(data) // WORD_BYTES):
            chunk = data[k * WORD_BYTES : (k + 1) * WORD_BYTES]
            self._words[first + k] = int.from_bytes(chunk, "big")

    def listdev(self) -> list[str]:
        return sorted(self.devices)

    def is_connected(self) -> bool:
        return self._fd is not None

    def close(self) -> None:
        if self._fd is None:
            return
        self._words.release()
        self._map.close()
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> MmapTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_KATCP_ESCAPES = {
    b"\\": b"\\\\",
    b" ": b"\\_",
    b"\0": b"\\0",
    b"\n": b"\\n",
    b"\r": b"\\r",
    b"\x1b": b"\\e",
    b"\t": b"\\t",
}
_KATCP_UNESCAPES = {v[1:2]: k for k, v in _KATCP_ESCAPES.items()}


def katcp_escape(arg: bytes) -> bytes:
    """One KATCP message argument; the empty argument is written ``\\@``."""
    if not arg:
        return b"\\@"
    return b"".join(_KATCP_ESCAPES.get(arg[k : k + 1], arg[k : k + 1]) for k in range(len(arg)))


def katcp_unescape(arg: bytes) -> bytes:
    out = bytearray()
    k = 0
    while k < len(arg):
        if arg[k : k + 1] != b"\\":
            out += arg[k : k + 1]
            k += 1
            continue
        code = arg[k + 1 : k + 2]
        if code == b"@":
            pass
        elif code in _KATCP_UNESCAPES:
            out += _KATCP_UNESCAPES[code]
        else:
            raise ValueError(f"bad KATCP escape {arg[k : k + 2]!r} in {arg[:40]!r}")
        k += 2
    return bytes(out)


class KatcpError(OSError):
    """The KATCP server refused a request or the connection broke."""


class KatcpTransport:
    """casperfpga's KATCP requests to a board server (``tcpborphserver`` conventions).

    ``?read``/``?write`` carry raw bytes, which the server hands to and from the bus as
    big-endian words, so no byte swapping happens here. Blocking, one request at a time:
    the Gbe API is synchronous, as in casperfpga. A lock keeps requests from several
    threads (a background ``tap_start`` loop beside the caller's) whole on the wire.
    """

    def __init__(self, host: str, port: int = 7147, timeout: float = 5.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        try:
            self._sock: socket.socket | None = socket.create_connection((host, port), timeout)
        except OSError as exc:
            raise KatcpError(f"cannot connect to {host}:{port}: {exc}") from None
        self._buffer = b""
        self._lock = threading.Lock()

    def _line(self) -> bytes:
        assert self._sock is not None
        while b"\n" not in self._buffer:
            chunk = self._sock.recv(65536)
            if not chunk:
                self._drop()
                raise KatcpError(f"{self.host}:{self.port} closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.rstrip(b"\r")

    def request(self, name: str, *args: bytes) -> tuple[list[bytes], list[list[bytes]]]:
        """Send ``?name args``; return the reply's arguments after ``ok`` and the informs."""
        with self._lock:
            try:
                return self._request(name, *args)
            except OSError as exc:
                if isinstance(exc, KatcpError):
                    raise
                # A timeout or reset leaves the reply stream out of step: start afresh.
                self._drop()
                raise KatcpError(f"?{name} to {self.host}:{self.port}: {exc}") from exc

    def _request(self, name: str, *args: bytes) -> tuple[list[bytes], list[list[bytes]]]:
        if self._sock is None:
            raise KatcpError(f"not connected to {self.host}:{self.port}")
        message = b" ".join([b"?" + name.encode("ascii"), *(katcp_escape(a) for a in args)])
        self._sock.sendall(message + b"\n")
        informs: list[list[bytes]] = []
        while True:
            words = self._line().split(b" ")
            kind, args_in = words[0], [katcp_unescape(w) for w in words[1:]]
            if kind == b"#" + name.encode("ascii"):
                informs.append(args_in)
            elif kind == b"!" + name.encode("ascii"):
                if not args_in or args_in[0] != b"ok":
                    detail = b" ".join(args_in).decode("ascii", "replace")
                    raise KatcpError(f"?{name} {args[:2]!r} failed: {detail}")
                return args_in[1:], informs

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        check_access(device_name, offset + size, offset, size)
        reply, _ = self.request("read", device_name.encode(), b"%d" % offset, b"%d" % size)
        data = reply[0] if reply else b""
        if len(data) != size:
            raise KatcpError(f"?read {device_name} {offset:#x}: {len(data)} bytes of {size}")
        return data

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        check_access(device_name, offset + len(data), offset, len(data))
        self.request("write", device_name.encode(), b"%d" % offset, bytes(data))

    def listdev(self) -> list[str]:
        _, informs = self.request("listdev")
        return [i[0].decode() for i in informs if i]

    def read_header(self) -> FpgHeader:
        """The running design's devices (``?listdev detail``) and blocks (``?meta``)."""
        source = f"katcp://{self.host}:{self.port}"
        _, listed = self.request("listdev", b"detail")
        devices: dict[str, FpgDevice] = {}
        for args in listed:
            try:
                name, address, size = (a.decode() for a in args)
                devices[name] = FpgDevice(name, int(address, 0), int(size, 0))
            except (ValueError, UnicodeDecodeError):
                raise KatcpError(f"{source}: malformed #listdev inform {args!r}") from None
        _, metas = self.request("meta")
        blocks: dict[str, FpgBlock] = {}
        for args in metas:
            if len(args) != 4:
                raise KatcpError(f"{source}: malformed #meta inform {args!r}")
            block, tag, param, value = (a.decode("utf-8", "replace") for a in args)
            blocks.setdefault(block, FpgBlock(block, tag)).params[param] = value
        return FpgHeader(source, devices, blocks, 0)

    def is_connected(self) -> bool:
        return self._sock is not None

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            self._buffer = b""

    def close(self) -> None:
        with self._lock:
            self._drop()

    def __enter__(self) -> KatcpTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def host_words(values: list[int]) -> bytes:
    """Words laid out as MmapTransport expects them in its file (host byte order)."""
    return b"".join(v.to_bytes(WORD_BYTES, sys.byteorder) for v in values)
