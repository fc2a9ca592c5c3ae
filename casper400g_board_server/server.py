"""A KATCP board server for the Versal: casperfpga's tcpborphserver requests over an mmap.

The server maps the PL's AXI window (``/dev/mem`` at the platform's bus base, or a regular
file in tests) and serves the ``?register`` devices of the loaded ``.fpg``:

* on connect: ``#version-connect katcp-protocol 5.0-M`` (and library, device)
* ``?listdev [size|detail]`` → ``#listdev <name> [<size> | <0xaddress> <size>]`` per
  device, ``!listdev ok <n>``
* ``?meta [block]`` → ``#meta <block> <tag> <param> <value>`` per ``?meta`` line of the
  ``.fpg``, ``!meta ok <n>`` (casperfpga builds its device objects from these)
* ``?read <dev> <offset> <length>`` → ``!read ok <raw bytes, KATCP-escaped>``
* ``?write <dev> <offset> <raw bytes>`` → ``!write ok``
* ``?wordread <dev> <word_offset>`` → ``!wordread ok 0x<8 hex digits>``
* ``?wordwrite <dev> <word_offset> <hex value>`` → ``!wordwrite ok``
* ``?fpgastatus`` → ``!fpgastatus ok`` when a design is mapped, else ``fail``
* ``?progdev [file.fpg]`` → program (run the configured command) and map the new design;
  without a file, unmap
* ``?progremote <port>`` (only with ``ServerPolicy.allow_upload``) → ``!progremote ok``
  once listening; the client then sends the ``.fpg`` over a TCP connection to that port
  from its own address and closes it; after programming every client gets ``#fpga ready``
  (``#fpga down`` only if the program command ran and failed: an upload refused before
  that leaves the running design, and the requester gets a ``#log error``)
* ``?help``, ``?watchdog``, ``?version-list``: what KATCP clients probe on connect.

Data on the wire are 32-bit words, each big-endian, like casperfpga's ``?read``; the window
(``MmapTransport``) converts from host order with aligned word accesses. Errors reply
``!<req> fail <message>``; unknown requests ``!<req> invalid ...``; lines that are not
requests get a ``#log error`` inform. No request can end the connection or the server.
``BoardServer.counts`` counts every line by outcome and every upload by how it ended.

The server runs as root on ``/dev/mem``, so nothing a client sends is trusted: a design is
mapped only inside the window (``MmapWindow``: its devices inside it, word-aligned, not
partly overlapping), the server listens on localhost unless told otherwise, and connections,
upload listeners, upload sizes and the inflated bitstream are bounded (``ServerPolicy``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import re
import shlex
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from casperfpga_ext.fpg import (
    GBE_TAG,
    BitstreamError,
    FpgDevice,
    FpgHeader,
    inflate_bitstream,
    parse_fpg_header,
)
from casperfpga_ext.transport import WORD_BYTES, MmapTransport, katcp_escape, katcp_unescape

from .katcp_lines import LineSplitter, Overlong
from .sensors import Sensor, design_sensors

DEFAULT_PORT = 7147
# Only this machine's clients unless the operator names a wider address.
DEFAULT_HOST = "127.0.0.1"
# A line holds at most one ?write; 256 KiB of data escapes to at most twice that.
MAX_LINE = 1 << 19
MAX_TRANSFER = 1 << 18
# An .fpg as uploaded (held in memory while it is unpacked), and its bitstream inflated
# (written to a file): a VP1802 image is a few hundred MB before compression.
MAX_UPLOAD = 1 << 28
MAX_BITSTREAM = 1 << 30
# Informs queued for a client that stopped reading: past this it is disconnected.
MAX_UNSENT = 1 << 22
PROTOCOL_VERSION = "5.0-M"
SERVER_NAME = "casper400g-board-server"
SERVER_VERSION = "0.1"

_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]{1,16}|[0-9]{1,20})$")
_NAME = re.compile(rb"^[A-Za-z][A-Za-z0-9-]*$")
_REQUEST = re.compile(rb"^\?([^\[\] \t]*)(\[[0-9]+\])?$")
_WORD_BIT = re.compile(r"^([0-9]{1,10}|0[xX][0-9a-fA-F]{1,8})(?::([0-9]{1,2}))?$")
LOG_LEVELS = ("all", "trace", "debug", "info", "warn", "error", "fatal", "off")
# The sys_block register a file-backed window advances (see ClockedWindow).
CLOCK_COUNTER = "sys_clkcounter"


class Window(Protocol):
    """What the server needs from the mapped bus (MmapTransport has it)."""

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes: ...

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None: ...

    def listdev(self) -> list[str]: ...


if TYPE_CHECKING:  # aliases for annotations only: Python 3.8 cannot subscript these
    WindowFactory = Callable[[Iterable[FpgDevice]], Window]
    ProgramFn = Callable[[Path, Path], Awaitable[None]]


@dataclass(frozen=True)
class ServerPolicy:
    """What clients may do and how much of the board they may hold.

    ``allow_upload``: serve ``?progremote`` (a client sends a bitstream the board loads,
    as root). ``max_upload``: bytes of ``.fpg`` taken per upload (and read by ``?progdev``);
    ``max_bitstream``: bytes its gzipped bitstream may inflate to. ``upload_timeout``:
    seconds from ``!progremote ok`` until the upload has arrived. ``max_clients``: KATCP
    connections at once; ``max_listeners``: uploads pending at once (one per client
    address).
    """

    allow_upload: bool = False
    max_upload: int = MAX_UPLOAD
    max_bitstream: int = MAX_BITSTREAM
    upload_timeout: float = 30.0
    max_clients: int = 32
    max_listeners: int = 4

    def __post_init__(self) -> None:
        for name in ("max_upload", "max_bitstream", "max_clients", "max_listeners"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} {value!r}: must be a positive whole number")
        if not self.upload_timeout > 0:
            raise ValueError(f"upload_timeout {self.upload_timeout!r}: must be positive seconds")


def check_memory_map(devices: Iterable[FpgDevice], base: int, size: int, where: str) -> None:
    """Refuse a device map that does not fit ``base``..``base + size`` (``where`` names the
    range in the message): a device outside it, of no size, not word-aligned, or partly
    overlapping another. A device wholly inside another is fine: mlib_devel lists each
    register of a block again under ``<block>_<register>``. Each message names the device."""
    end = base + size
    # Sorted so that a block comes before what lies inside it; ``open`` holds the blocks
    # the next device may still be inside, innermost last.
    ordered = sorted(devices, key=lambda d: (d.address, -d.size, d.name))
    open_: list[FpgDevice] = []
    for d in ordered:
        at = f"device {d.name!r} at {d.address:#x} (size {d.size:#x})"
        if d.size <= 0 or d.address % WORD_BYTES or d.size % WORD_BYTES:
            raise ValueError(f"{at}: not whole, aligned 32-bit words")
        if d.address < base or d.address + d.size > end:
            raise ValueError(f"{at} is outside {where} {base:#x}-{end:#x}")
        while open_ and open_[-1].address + open_[-1].size <= d.address:
            open_.pop()
        if open_ and d.address + d.size > open_[-1].address + open_[-1].size:
            other = open_[-1]
            raise ValueError(
                f"{at} overlaps device {other.name!r} at {other.address:#x} "
                f"(size {other.size:#x}) without lying inside it"
            )
        open_.append(d)


class MmapWindow:
    """Maps a design's devices from ``path`` (``/dev/mem`` on the board) at bus ``base``.

    Device addresses in a ``.fpg`` are bus addresses; the file offset of ``base`` is
    ``base`` itself, as for ``/dev/mem``. The window is ``size`` bytes from ``base``, fixed
    when the server starts (the first design's memory map, or what the operator gives):
    a later design whose devices fall outside it, partly overlap or are misaligned is
    refused (``check``) before anything is programmed or mapped.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        base: int,
        size: int,
        clock_hz: float | None = None,
    ):
        if base < 0 or size < WORD_BYTES:
            raise ValueError(f"window base {base:#x}, size {size:#x}: not a bus range")
        self.path, self.base, self.size = Path(path), base, size
        self.clock_hz = clock_hz

    def check(self, devices: Iterable[FpgDevice]) -> None:
        check_memory_map(devices, self.base, self.size, f"the window of {self.path}")

    def __call__(self, devices: Iterable[FpgDevice]) -> Window:
        devs = list(devices)
        self.check(devs)
        mapped = MmapTransport(
            self.path, {d.name: (d.address - self.base, d.size) for d in devs}, self.base, self.size
        )
        if self.clock_hz is None:
            return mapped
        return ClockedWindow(mapped, self.clock_hz)


def design_span(devices: Iterable[FpgDevice], base: int) -> int:
    """Bytes from ``base`` to the end of the last device: the window a design needs."""
    return max((d.address + d.size - base for d in devices), default=WORD_BYTES)


class ClockedWindow:
    """A window whose ``sys_clkcounter`` counts at ``clock_hz`` from when it was mapped.

    On a board the sys_block's counter runs with the FPGA clock; in a regular file (the
    tests, a design served without hardware) nothing would move it, and casperfpga's
    ``estimate_fpga_clock()`` would read 0 MHz. Reads of that register return the wall
    time since mapping times ``clock_hz``, modulo 2^32; everything else, writes to it
    included, goes to the file.
    """

    def __init__(self, inner: Window, clock_hz: float) -> None:
        if not clock_hz > 0:
            raise ValueError(f"clock {clock_hz!r} Hz: must be positive")
        self.inner, self.clock_hz = inner, clock_hz
        self._start = time.monotonic()

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        data = self.inner.read(device_name, size, offset)
        if device_name != CLOCK_COUNTER or offset != 0:
            return data
        ticks = int((time.monotonic() - self._start) * self.clock_hz) & 0xFFFFFFFF
        return ticks.to_bytes(WORD_BYTES, "big") + data[WORD_BYTES:]

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        self.inner.blindwrite(device_name, data, offset)

    def listdev(self) -> list[str]:
        return self.inner.listdev()

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


class RequestError(Exception):
    """A request that cannot be carried out; its message goes into the ``fail`` reply.
    ``reason`` is the name it is counted under (an upload's outcome)."""

    def __init__(self, message: str, reason: str = "failed") -> None:
        super().__init__(message)
        self.reason = reason


def parse_int(text: bytes, what: str) -> int:
    """A decimal or ``0x`` hex number, as tcpborphserver's strtoul(…, 0) accepts them."""
    s = text.decode("ascii", "replace")
    if s.startswith("-") and _NUMBER.match(s[1:]):
        raise RequestError(f"{what} {s[:40]} is negative")
    # Stricter than int(): no signs, underscores or spaces, and a bounded length.
    if not _NUMBER.match(s):
        raise RequestError(f"{what} {s[:40]!r} is not a number")
    return int(s, 16) if s[:2] in ("0x", "0X") else int(s, 10)


def parse_hex(text: bytes, what: str) -> int:
    s = text.decode("ascii", "replace")
    digits = s[2:] if s.lower().startswith("0x") else s
    if not digits or len(digits) > 8 or not all(c in "0123456789abcdefABCDEF" for c in digits):
        raise RequestError(f"{what} {s[:40]!r} is not a 32-bit hex word")
    return int(digits, 16)


def format_message(kind: bytes, name: bytes, args: Iterable[bytes | str | int]) -> bytes:
    parts = [kind + name]
    for a in args:
        raw = a if isinstance(a, bytes) else str(a).encode("utf-8")
        parts.append(katcp_escape(raw))
    return b" ".join(parts) + b"\n"


def peer_host(writer: asyncio.StreamWriter) -> str:
    """The address a connection comes from, IPv4-mapped IPv6 addresses as IPv4."""
    peer = writer.get_extra_info("peername")
    if not peer:
        return ""
    try:
        ip = ipaddress.ip_address(str(peer[0]).split("%")[0])
    except ValueError:
        return str(peer[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ip)


# How a line from a client ends: one of these is counted per line.
LINE_OUTCOMES = ("ok", "fail", "invalid", "ignored", "dropped_malformed", "dropped_overlong")


class Connection:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.peer = peer_host(writer)

    async def send(self, line: bytes) -> None:
        if self.writer.is_closing():
            return
        self.writer.write(line)
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()


if TYPE_CHECKING:
    Handler = Callable[[Connection, list[bytes]], Awaitable[list[bytes | str | int]]]


class BoardServer:
    """Serves the devices of a ``.fpg`` over KATCP, several clients at once.

    ``window`` is either a mapped bus (``MmapTransport``-like; then ``?progdev`` cannot
    remap) or a factory that maps a design's devices (``MmapWindow``). ``program_cmd`` is
    run to load a bitstream, ``{pdi}`` replaced by the extracted bitstream's path and
    ``{fpg}`` by the ``.fpg``'s (e.g. ``fpgautil -b {pdi}``); None skips that step. It may
    also be an async callable ``program(pdi, fpg)`` (a simulated board's loader); its
    ``RequestError`` or ``OSError`` fails the request, and no timeout applies. ``host``
    is where it listens (localhost by default); ``policy`` what clients may do.
    """

    def __init__(
        self,
        window: Window | WindowFactory,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        program_cmd: str | ProgramFn | None = None,
        fpg: str | os.PathLike[str] | None = None,
        fpg_dir: str | os.PathLike[str] = ".",
        program_timeout: float = 120.0,
        policy: ServerPolicy | None = None,
    ) -> None:
        self.host, self.port = host, port
        self.program_cmd = program_cmd
        self.fpg_dir = Path(fpg_dir)
        self.program_timeout = program_timeout
        self.policy = policy or ServerPolicy()
        # Lines by outcome (LINE_OUTCOMES), uploads by how they ended ("upload" started,
        # "upload_programmed" or "upload_refused_<reason>"), and refused connections.
        self.counts: Counter[str] = Counter()
        self._uploads: dict[str, int] = {}  # client address -> its pending upload's port
        self._factory: WindowFactory | None = None
        self.window: Window | None = None
        self.header: FpgHeader | None = None
        self.devices: dict[str, FpgDevice] = {}
        if callable(window) and not hasattr(window, "read"):
            self._factory = window
        else:
            self.window = window  # type: ignore[assignment]
        if fpg is not None:
            header = parse_fpg_header(Path(fpg).read_bytes(), str(fpg))
            try:
                self._check_design(header, self._window_devices())
            except RequestError as exc:
                raise ValueError(str(exc)) from None
            self._load(header)
        elif self.window is not None:
            self.devices = {n: FpgDevice(n, 0, 0) for n in self.window.listdev()}
        self._server: asyncio.Server | None = None
        self._clients: set[Connection] = set()
        self._busy = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        self._client_tasks: set[asyncio.Task[object]] = set()
        self._handlers: dict[bytes, tuple[Handler, str]] = {
            b"listdev": (self._listdev, "?listdev [size|detail]: the design's devices"),
            b"meta": (self._meta, "?meta [block]: the design's ?meta lines"),
            b"read": (self._read, "?read device offset length: raw bytes"),
            b"write": (self._write, "?write device offset data: raw bytes"),
            b"wordread": (self._wordread, "?wordread device word[:bit] [count]: words in hex"),
            b"wordwrite": (self._wordwrite, "?wordwrite device word[:0] hex-value"),
            b"fpgastatus": (self._fpgastatus, "?fpgastatus: ok when a design is mapped"),
            b"progdev": (self._progdev, "?progdev [file.fpg]: program and map a design"),
            b"progremote": (self._progremote, "?progremote port: receive an .fpg and program"),
            b"help": (self._help, "?help [request]: the requests"),
            b"watchdog": (self._watchdog, "?watchdog: ping"),
            b"version-list": (self._version_list, "?version-list: versions"),
            b"status": (self._status, "?status: ok when a design is mapped"),
            b"listbof": (self._listbof, "?listbof: the .fpg files ?progdev can load"),
            b"sensor-list": (self._sensor_list, "?sensor-list [name]: the sensors"),
            b"sensor-value": (self._sensor_value, "?sensor-value [name]: read sensors"),
            b"sensor-sampling": (
                self._sensor_sampling,
                "?sensor-sampling name [none]: only 'none' (poll with ?sensor-value)",
            ),
            b"client-list": (self._client_list, "?client-list: the connected clients"),
            b"log-level": (self._log_level, "?log-level [level]: the #log threshold"),
            b"halt": (self._halt, "?halt: refused (stop the server process instead)"),
            b"restart": (self._halt, "?restart: refused (restart the server process)"),
            b"tap-info": (self._tap_info, "?tap-info [name]: no board-side taps (none listed)"),
            b"tap-start": (self._no_tap, "?tap-start: refused, see FourHundredGbe.tap_start"),
            b"tap-stop": (self._no_tap, "?tap-stop: refused, see FourHundredGbe.tap_stop"),
            b"tap-arp-reload": (self._no_tap, "?tap-arp-reload: refused, no board-side tap"),
            b"tap-arp-config": (self._no_tap, "?tap-arp-config: refused, no board-side tap"),
            b"tap-dhcp": (self._no_tap, "?tap-dhcp: refused, the 400GbE core has no DHCP"),
            b"tap-multicast-add": (self._no_tap, "?tap-multicast-add: refused, no IGMP"),
            b"tap-multicast-remove": (self._no_tap, "?tap-multicast-remove: refused, no IGMP"),
            b"igmp-version": (self._no_tap, "?igmp-version: refused, no IGMP"),
        }
        self.log_level = "info"

    # ------------------------------------------------------------------ design
    def _window_devices(self) -> frozenset[str] | None:
        """The devices a window handed in serves (None for a factory's window)."""
        if self._factory is not None:
            return None
        if self.window is None:
            raise RequestError("no window to map the design into", "memory_map")
        return frozenset(self.window.listdev())

    def _check_design(self, header: FpgHeader, served: frozenset[str] | None) -> None:
        """Refuse a design the window cannot serve, before anything is programmed."""
        if served is not None:
            missing = set(header.devices) - served
            if missing:
                raise RequestError(
                    f"{header.source}: devices {sorted(missing)[:8]} are not in the window",
                    "memory_map",
                )
            return
        check = getattr(self._factory, "check", None)
        if check is not None:
            try:
                check(header.devices.values())
            except ValueError as exc:
                raise RequestError(f"{header.source}: {exc}", "memory_map") from None

    def _load(self, header: FpgHeader) -> None:
        if self._factory is not None:
            new = self._factory(header.devices.values())
            self._unmap()
            self.window = new
        self.header = header
        self.devices = dict(header.devices)

    @property
    def sensors(self) -> dict[str, Sensor]:
        """The sensors of the mapped design's 400GbE cores."""
        if self.header is None:
            return {}
        cores = [b.name for b in self.header.blocks.values() if b.tag == GBE_TAG]
        return design_sensors(c for c in cores if c in self.devices)

    def _unmap(self) -> None:
        self.header = None
        self.devices = {}
        if self._factory is None:
            return  # a window handed in is the caller's to close
        close = getattr(self.window, "close", None)
        if close is not None:
            close()
        self.window = None

    def _unpack(
        self, data: bytes, source: str, served: frozenset[str] | None, pdi: Path, fpg: Path
    ) -> FpgHeader:
        """Parse and check ``data``'s header and inflate its bitstream into ``pdi``, within
        the policy's bound. Runs in a worker thread: a large file takes seconds."""
        try:
            header = parse_fpg_header(data, source)
        except ValueError as exc:
            raise RequestError(str(exc), "bad_header") from None
        self._check_design(header, served)
        with open(pdi, "wb") as out:
            try:
                inflate_bitstream(data, header.bitstream_offset, out, self.policy.max_bitstream)
            except BitstreamError as exc:
                raise RequestError(f"{source}: {exc}", exc.reason) from None
        fpg.write_bytes(data)
        return header

    async def _program(self, data: bytes, source: str) -> int:
        """Unpack ``data`` off the event loop, run the program command on its bitstream, then
        map the design. ``#fpga down`` goes out only once the old design was taken down."""
        served = self._window_devices()
        loop = asyncio.get_running_loop()
        async with self._busy:
            with tempfile.TemporaryDirectory(prefix="board-server-") as tmp:
                stem = Path(source).stem or "design"
                pdi = Path(tmp) / f"{stem}.pdi"
                fpg = Path(tmp) / f"{stem}.fpg"
                header = await loop.run_in_executor(
                    None, self._unpack, data, source, served, pdi, fpg
                )
                programmed = bool(self.program_cmd)
                if self.program_cmd:
                    # An AXI access to the PL while it is reconfigured can hang the bus,
                    # so nothing is served from the old design from here on.
                    self._unmap()
                    try:
                        if callable(self.program_cmd):
                            await self.program_cmd(pdi, fpg)
                        else:
                            await self._run_program(self.program_cmd, pdi, fpg)
                    except (RequestError, OSError) as exc:
                        await self._broadcast(format_message(b"#", b"fpga", ["down"]))
                        raise RequestError(str(exc), "program_failed") from None
            try:
                self._load(header)
            except (ValueError, OSError) as exc:
                if programmed:
                    await self._broadcast(format_message(b"#", b"fpga", ["down"]))
                raise RequestError(f"{source}: {exc}", "memory_map") from None
        return len(self.devices)

    async def _run_program(self, template: str, pdi: Path, fpg: Path) -> None:
        try:
            argv = [a.format(pdi=pdi, fpg=fpg) for a in shlex.split(template)]
        except (ValueError, KeyError, IndexError) as exc:
            raise RequestError(f"program command {template!r}: {exc}") from None
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
            )
        except OSError as exc:
            raise RequestError(f"cannot run {argv[0]!r}: {exc.strerror}") from None
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), self.program_timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise RequestError(f"{argv[0]} took over {self.program_timeout:g} s") from None
        if proc.returncode:
            tail = out.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
            raise RequestError(f"{argv[0]} exited with {proc.returncode}: {tail[0][:200]}")

    # ------------------------------------------------------------------ requests
    def _need(self, args: list[bytes], n: int, usage: str) -> None:
        if len(args) != n:
            raise RequestError(f"usage: {usage}")

    def _device(self, raw: bytes) -> str:
        name = raw.decode("utf-8", "replace")
        if self.window is None or not self.devices:
            raise RequestError(f"no design is mapped (device {name[:80]!r})")
        if name not in self.devices:
            raise RequestError(f"unknown device {name[:80]!r}")
        return name

    def _access(self, fn: Callable[[], bytes | None], name: str, offset: int, size: int) -> bytes:
        if size > MAX_TRANSFER:
            raise RequestError(
                f"device {name!r} offset {offset:#x}: {size} bytes exceeds {MAX_TRANSFER}"
            )
        try:
            return fn() or b""
        except ValueError as exc:
            raise RequestError(str(exc)) from None
        except OSError as exc:
            raise RequestError(f"device {name!r} offset {offset:#x}: {exc}") from None

    async def _listdev(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        if args not in ([], [b"size"], [b"detail"]):
            raise RequestError("usage: ?listdev [size|detail]")
        for d in self.devices.values():
            extra = {b"size": [d.size], b"detail": [f"{d.address:#x}", d.size]}
            info = extra.get(args[0], []) if args else []
            await conn.send(format_message(b"#", b"listdev", [d.name, *info]))
        return [len(self.devices)]

    async def _meta(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        if len(args) > 1:
            raise RequestError("usage: ?meta [block]")
        blocks = self.header.blocks.values() if self.header else []
        if args and self.header is not None:
            wanted = args[0].decode("utf-8", "replace")
            blocks = [b for b in blocks if b.name == wanted]
        count = 0
        for block in blocks:
            for param, value in block.params.items():
                await conn.send(
                    format_message(b"#", b"meta", [block.name, block.tag, param, value])
                )
                count += 1
        return [count]

    async def _read(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        self._need(args, 3, "?read device offset length")
        name = self._device(args[0])
        offset, size = parse_int(args[1], "offset"), parse_int(args[2], "length")
        window = self.window
        assert window is not None
        return [self._access(lambda: window.read(name, size, offset), name, offset, size)]

    async def _write(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        self._need(args, 3, "?write device offset data")
        name = self._device(args[0])
        offset, data = parse_int(args[1], "offset"), args[2]
        window = self.window
        assert window is not None
        self._access(lambda: window.blindwrite(name, data, offset), name, offset, len(data))
        return []

    def _word_bit(self, raw: bytes) -> tuple[int, int]:
        """``word[:bit]`` as casperfpga sends it (``?wordread dev 0:0 1``)."""
        text = raw.decode("ascii", "replace")
        match = _WORD_BIT.match(text)
        if match is None:
            raise RequestError(f"word offset {text[:40]!r}: expected word[:bit]")
        word = int(match.group(1), 0)
        bit = int(match.group(2) or 0)
        if bit > 31:
            raise RequestError(f"bit offset {bit} in {text!r}: outside 0..31")
        return word, bit

    async def _wordread(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        """``n`` words (default 1) from ``word``; with ``:bit`` each 32-bit value starts
        ``bit`` bits into its word (bit 0 the most significant, as the data are sent)."""
        if len(args) not in (2, 3):
            raise RequestError("usage: ?wordread device word[:bit] [count]")
        name = self._device(args[0])
        word, bit = self._word_bit(args[1])
        count = parse_int(args[2], "count") if len(args) == 3 else 1
        if not 0 < count <= MAX_TRANSFER // WORD_BYTES - 1:
            raise RequestError(f"count {count}: outside 1..{MAX_TRANSFER // WORD_BYTES - 1}")
        offset = WORD_BYTES * word
        size = WORD_BYTES * (count + (1 if bit else 0))
        window = self.window
        assert window is not None
        data = self._access(lambda: window.read(name, size, offset), name, offset, size)
        value = int.from_bytes(data, "big")
        if bit:
            value = (value << bit) >> 32 & ((1 << (32 * count)) - 1)
        return [f"0x{(value >> (32 * (count - 1 - k))) & 0xFFFFFFFF:08x}" for k in range(count)]

    async def _wordwrite(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        self._need(args, 3, "?wordwrite device word[:0] hex-value")
        name = self._device(args[0])
        word, bit = self._word_bit(args[1])
        if bit:
            raise RequestError(f"?wordwrite writes whole words: bit offset {bit} is not 0")
        offset = WORD_BYTES * word
        data = parse_hex(args[2], "value").to_bytes(WORD_BYTES, "big")
        window = self.window
        assert window is not None
        self._access(lambda: window.blindwrite(name, data, offset), name, offset, 4)
        return []

    async def _fpgastatus(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        if self.window is None or not self.devices:
            raise RequestError("no design is mapped")
        return [self.header.source if self.header else "mapped"]

    async def _progdev(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        if not args:
            self._unmap()
            await self._broadcast(format_message(b"#", b"fpga", ["down"]))
            return []
        self._need(args, 1, "?progdev [file.fpg]")
        rel = args[0].decode("utf-8", "replace")
        path = self.fpg_dir / rel
        if Path(rel).is_absolute() or ".." in Path(rel).parts:
            raise RequestError(f"{rel!r}: give a file name inside the server's .fpg directory")
        loop = asyncio.get_running_loop()
        data = await loop.run_in_executor(None, self._read_design, path, rel)
        n = await self._program_or_fail(data, rel)
        await self._broadcast(format_message(b"#", b"fpga", ["ready"]))
        return [n]

    def _read_design(self, path: Path, rel: str) -> bytes:
        limit = self.policy.max_upload
        try:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
        except OSError as exc:
            raise RequestError(f"{rel!r}: {exc.strerror}") from None
        if len(data) > limit:
            raise RequestError(f"{rel!r} is larger than {limit} bytes", "too_large")
        return data

    async def _program_or_fail(self, data: bytes, source: str) -> int:
        try:
            return await self._program(data, source)
        except OSError as exc:
            raise RequestError(f"{source}: {exc}", "io") from None

    async def _progremote(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        if not self.policy.allow_upload:
            raise RequestError(
                "uploads are off: the board server was started without --allow-upload"
            )
        self._need(args, 1, "?progremote port")
        port = parse_int(args[0], "port")
        if not 1024 <= port < 65536:
            raise RequestError(f"port {port}: give an unprivileged TCP port, 1024..65535")
        peer = conn.peer
        if peer in self._uploads:
            raise RequestError(
                f"an upload from {peer} is already pending on port {self._uploads[peer]}"
            )
        if len(self._uploads) >= self.policy.max_listeners:
            raise RequestError(
                f"{len(self._uploads)} uploads are pending, as many as the server takes: "
                "try again later"
            )
        connected: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]]
        connected = asyncio.get_running_loop().create_future()

        def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            # The file comes from the client that asked, once: anyone else is turned away.
            if connected.done() or peer_host(writer) != peer:
                self.counts["upload_connection_refused"] += 1
                writer.close()
                return
            connected.set_result((reader, writer))

        self._uploads[peer] = port  # held while listening: a second request is refused
        try:
            listener = await asyncio.start_server(accept, self.host, port, backlog=1)
        except OSError as exc:
            del self._uploads[peer]
            raise RequestError(f"cannot listen on port {port}: {exc.strerror}") from None
        self._spawn(self._upload(conn, listener, connected, port))
        return []

    async def _upload(
        self,
        conn: Connection,
        listener: asyncio.Server,
        connected: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]],
        port: int,
    ) -> None:
        async def receive() -> bytes:
            reader, writer = await connected
            listener.close()
            try:
                return await self._read_upload(reader)
            finally:
                writer.close()

        try:
            receiving = asyncio.wait_for(receive(), self.policy.upload_timeout)
            await self._handle_upload(conn, receiving, f"upload:{port}")
        finally:
            listener.close()
            self._uploads.pop(conn.peer, None)

    async def _read_upload(self, reader: asyncio.StreamReader) -> bytes:
        """The upload connection's bytes up to its end, at most ``max_upload`` of them."""
        limit = self.policy.max_upload
        data = bytearray()
        while True:
            try:
                chunk = await reader.read(1 << 20)
            except (ConnectionError, OSError) as exc:
                raise RequestError(f"upload broke: {exc}", "broken") from None
            if not chunk:
                return bytes(data)
            data += chunk
            if len(data) > limit:
                raise RequestError(f"upload exceeds {limit} bytes", "too_large")

    async def _handle_upload(
        self, conn: Connection, receiving: Awaitable[bytes], source: str
    ) -> str:
        """Receive and program one upload; returns how it ended, as counted (``programmed``
        or the reason it was refused). Only the requester hears of a refusal: the design
        that runs keeps running unless the program command itself failed."""
        self.counts["upload"] += 1
        try:
            data = await receiving
            n = await self._program_or_fail(data, source)
        except asyncio.TimeoutError:
            reason = "timeout"
            why = f"no upload within {self.policy.upload_timeout:g} s"
        except RequestError as exc:
            reason, why = exc.reason, str(exc)
        else:
            self.counts["upload_programmed"] += 1
            await self._log("info", f"programmed {source}: {n} devices")
            await self._broadcast(format_message(b"#", b"fpga", ["ready"]))
            return "programmed"
        self.counts[f"upload_refused_{reason}"] += 1
        await self._log("error", f"{source} refused: {why}", conn)
        return reason

    async def _status(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        # casperfpga's program() falls back on ?status when no "#fpga ready" came.
        if self.window is None or not self.devices:
            raise RequestError("no design is mapped")
        return []

    async def _listbof(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        names = sorted(p.name for p in self.fpg_dir.glob("*.fpg") if p.is_file())
        for name in names:
            await conn.send(format_message(b"#", b"listbof", [name]))
        return [len(names)]

    def _chosen_sensors(self, args: list[bytes], usage: str) -> list[Sensor]:
        if len(args) > 1:
            raise RequestError(f"usage: {usage}")
        sensors = self.sensors
        if not args:
            return list(sensors.values())
        name = args[0].decode("utf-8", "replace")
        if name not in sensors:
            raise RequestError(f"unknown sensor {name[:80]!r}")
        return [sensors[name]]

    async def _sensor_list(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        chosen = self._chosen_sensors(args, "?sensor-list [name]")
        for s in chosen:
            fields = [s.name, s.description, s.units, s.type, *s.params()]
            await conn.send(format_message(b"#", b"sensor-list", fields))
        return [len(chosen)]

    async def _sensor_value(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        chosen = self._chosen_sensors(args, "?sensor-value [name]")
        for s in chosen:
            status, value = s.reading(self.window)
            stamp = f"{time.time():.6f}"
            await conn.send(
                format_message(b"#", b"sensor-value", [stamp, 1, s.name, status, value])
            )
        return [len(chosen)]

    async def _sensor_sampling(
        self, conn: Connection, args: list[bytes]
    ) -> list[bytes | str | int]:
        if len(args) not in (1, 2):
            raise RequestError("usage: ?sensor-sampling name [none]")
        name = self._chosen_sensors(args[:1], "?sensor-sampling name")[0].name
        strategy = args[1].decode("utf-8", "replace") if len(args) == 2 else "none"
        if strategy != "none":
            raise RequestError(
                f"sampling strategy {strategy[:40]!r} is not offered: poll ?sensor-value"
            )
        return [name, "none"]

    async def _client_list(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        clients = list(self._clients)
        for c in clients:
            peer = c.writer.get_extra_info("peername") or ("?", 0)
            await conn.send(format_message(b"#", b"client-list", [f"{peer[0]}:{peer[1]}"]))
        return [len(clients)]

    async def _log_level(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        if len(args) > 1:
            raise RequestError("usage: ?log-level [level]")
        if args:
            level = args[0].decode("utf-8", "replace")
            if level not in LOG_LEVELS:
                raise RequestError(f"unknown log level {level[:40]!r}; known: {LOG_LEVELS}")
            self.log_level = level
        return [self.log_level]

    async def _halt(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        # A client must not be able to take the board's only server down for everyone.
        raise RequestError("not allowed over KATCP: stop or restart the board-server process")

    async def _tap_info(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        # No tap runs on the board (FourHundredGbe.tap_start runs it in the client), so
        # casperfpga's deprogram() finds no multicast subscription to drop.
        return [0]

    async def _no_tap(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        raise RequestError(
            "the board has no tap driver: the 400GbE core's software ARP/ICMP loop runs in "
            "the client (FourHundredGbe.tap_start); it has no DHCP and no IGMP"
        )

    async def _help(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        names = list(self._handlers) if not args else [args[0]]
        for name in names:
            if name not in self._handlers:
                raise RequestError(f"no request {name.decode('utf-8', 'replace')[:40]!r}")
            await conn.send(format_message(b"#", b"help", [name, self._handlers[name][1]]))
        return [len(names)]

    async def _watchdog(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        return []

    def _versions(self) -> list[tuple[str, str]]:
        # KATCP v5 clients learn the protocol flags (M: message ids) from these.
        return [
            ("katcp-protocol", PROTOCOL_VERSION),
            ("katcp-library", f"{SERVER_NAME}-{SERVER_VERSION}"),
            ("katcp-device", f"{SERVER_NAME}-{SERVER_VERSION}"),
        ]

    async def _version_list(self, conn: Connection, args: list[bytes]) -> list[bytes | str | int]:
        versions = self._versions()
        for item in versions:
            await conn.send(format_message(b"#", b"version-list", item))
        return [len(versions)]

    # ------------------------------------------------------------------ wire
    async def _log(self, level: str, message: str, conn: Connection | None = None) -> None:
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(self.log_level):
            return
        # KATCP v5: timestamps in seconds.
        line = format_message(b"#", b"log", [level, f"{time.time():.3f}", SERVER_NAME, message])
        if conn is None:
            await self._broadcast(line)
        else:
            await conn.send(line)

    async def _broadcast(self, line: bytes) -> None:
        # No drain: a client that stops reading must not hold up the others' informs,
        # nor have them pile up without bound.
        for c in list(self._clients):
            if c.writer.is_closing():
                continue
            if c.writer.transport.get_write_buffer_size() > MAX_UNSENT:
                self.counts["clients_dropped_unread"] += 1
                c.writer.close()
                continue
            c.writer.write(line)

    async def _dispatch(self, conn: Connection, line: bytes) -> None:
        words = [w for w in re.split(rb"[ \t]+", line.strip(b" \t\r")) if w]
        if not words:
            self.counts["ignored"] += 1
            return
        match = _REQUEST.match(words[0])
        if match is None or not _NAME.match(match.group(1)):
            # Replies and informs from a client are not requests; nothing can be replied.
            if words[0].startswith((b"!", b"#")):
                self.counts["ignored"] += 1
                return
            self.counts["dropped_malformed"] += 1
            shown = line[:60].decode("ascii", "backslashreplace")
            await self._log("error", f"malformed request line {shown!r}", conn)
            return
        name, mid = match.group(1), match.group(2) or b""
        reply = b"!" + name + mid
        entry = self._handlers.get(name)
        if entry is None:
            self.counts["invalid"] += 1
            await conn.send(
                format_message(b"", reply, ["invalid", f"unknown request {name.decode()!r}"])
            )
            return
        try:
            args = [katcp_unescape(w) for w in words[1:]]
            result = await entry[0](conn, args)
        except (ValueError, RequestError) as exc:  # ValueError: a bad escape in an argument
            self.counts["fail"] += 1
            await conn.send(format_message(b"", reply, ["fail", str(exc)]))
        else:
            self.counts["ok"] += 1
            await conn.send(format_message(b"", reply, ["ok", *result]))

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        if len(self._clients) >= self.policy.max_clients:
            self.counts["clients_refused"] += 1
            why = f"too many clients ({self.policy.max_clients}): try again later"
            stamp = f"{time.time():.3f}"
            writer.write(format_message(b"#", b"log", ["error", stamp, SERVER_NAME, why]))
            writer.close()
            return
        conn = Connection(writer)
        self._clients.add(conn)
        task = asyncio.current_task()
        if task is not None:
            self._client_tasks.add(task)
            task.add_done_callback(self._client_tasks.discard)
        for item in self._versions():
            await conn.send(format_message(b"#", b"version-connect", item))
        lines = LineSplitter(MAX_LINE)
        try:
            while True:
                chunk = await reader.read(1 << 16)
                if not chunk:
                    break
                for line in lines.feed(chunk):
                    if isinstance(line, Overlong):
                        await self._reject_overlong(conn, line.start)
                    else:
                        await self._dispatch(conn, line)
        except (ConnectionError, OSError):
            pass
        finally:
            self._clients.discard(conn)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _reject_overlong(self, conn: Connection, start: bytes) -> None:
        # Without a space in what was kept, the request name itself may be cut short.
        first, space, _ = start.partition(b" ")
        match = _REQUEST.match(first)
        message = f"line longer than {MAX_LINE} bytes"
        if space and match is not None and _NAME.match(match.group(1)):
            self.counts["fail"] += 1
            reply = b"!" + match.group(1) + (match.group(2) or b"")
            await conn.send(format_message(b"", reply, ["fail", message]))
        else:
            self.counts["dropped_overlong"] += 1
            await self._log("error", message, conn)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ lifetime
    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve_client, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def serve_forever(self) -> None:
        if self._server is None:
            await self.start()
        assert self._server is not None
        async with self._server:
            await self._server.serve_forever()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for c in list(self._clients):
                c.writer.close()
            # Each client's handler sees its connection end and returns (a handler still
            # running when the loop stops would be cancelled mid-read, and logged).
            if self._client_tasks:
                await asyncio.wait(list(self._client_tasks), timeout=2.0)
            await self._server.wait_closed()
            self._server = None
        for task in list(self._tasks):
            task.cancel()
        self._unmap()
