"""The KATCP board server over an mmap of a regular file (the same code path as /dev/mem)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import ipaddress
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from conftest import FPG_DEVICES, GBE_BASE, GBE_BLOCK, REPO_ROOT, board_server, tcp_listeners

from casper400g_board_server import cli
from casper400g_board_server import server as server_module
from casper400g_board_server.katcp_lines import KEEP, LineSplitter, Overlong
from casper400g_board_server.server import MAX_LINE, BoardServer, MmapWindow, ServerPolicy, Window
from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext import transport
from casperfpga_ext.fpg import FpgBlock, FpgDevice, write_fpg
from casperfpga_ext.fpga import Fpga
from casperfpga_ext.transport import KatcpError, KatcpTransport, MmapTransport

WINDOW = GBE_BASE + regmap.BLOCK_SIZE
DEVICES = FPG_DEVICES
BLOCKS = [GBE_BLOCK, FpgBlock("scope", "xps:bram", {"names": "a b\\c"})]
TIMEOUT = 5.0
NO_UPLOADS = ServerPolicy()  # the server's defaults


def word_at(path: Path, offset: int) -> int:
    return int.from_bytes(path.read_bytes()[offset : offset + 4], sys.byteorder)


def reg_at(path: Path, name: str) -> int:
    return word_at(path, GBE_BASE + regmap.REGISTERS[name].offset)


@dataclass
class Board:
    server: BoardServer
    image: Path
    fpg: Path
    loop: asyncio.AbstractEventLoop

    @property
    def port(self) -> int:
        return self.server.port


@pytest.fixture
def make_board(tmp_path: Path) -> Iterator[Callable[..., Board]]:
    """Starts a server on a loopback port in its own event loop thread."""
    started: list[tuple[Board, threading.Thread]] = []

    def make(
        program_cmd: str | None = None,
        policy: ServerPolicy = NO_UPLOADS,
        base: int = 0,
        window: Window | None = None,
    ) -> Board:
        """``base``: where the window starts in the file and on the bus (as in /dev/mem);
        ``window``: a ready mapping to serve instead of one built from the .fpg."""
        image = tmp_path / "bus.bin"
        if window is None:
            image.write_bytes(bytes(base + WINDOW))
        fpg = tmp_path / "design.fpg"
        moved = [FpgDevice(d.name, base + d.address, d.size) for d in DEVICES]
        write_fpg(fpg, moved, BLOCKS, b"first bitstream")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()
        server = BoardServer(
            window or MmapWindow(image, base, WINDOW),
            "127.0.0.1",
            0,
            program_cmd=program_cmd,
            fpg=fpg if window is None else None,
            fpg_dir=tmp_path,
            policy=policy,
        )
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(TIMEOUT)
        board = Board(server, image, fpg, loop)
        started.append((board, thread))
        return board

    yield make
    for board, thread in started:
        asyncio.run_coroutine_threadsafe(board.server.close(), board.loop).result(TIMEOUT)
        board.loop.call_soon_threadsafe(board.loop.stop)
        thread.join(TIMEOUT)
        board.loop.close()


@pytest.fixture
def board(make_board: Callable[..., Board]) -> Board:
    return make_board()


class Raw:
    """A raw socket speaking KATCP lines, to check the exact bytes on the wire."""

    def __init__(self, port: int, source: str = "127.0.0.1") -> None:
        """``source``: the client's address (any of 127.0.0.0/8 reaches the server)."""
        self.sock = socket.create_connection(("127.0.0.1", port), TIMEOUT, (source, 0))
        self.buffer = b""
        self.greeting = [self.line() for _ in range(3)]

    def send(self, line: bytes) -> None:
        self.sock.sendall(line + b"\n")

    def line(self) -> bytes:
        deadline = time.monotonic() + TIMEOUT
        while b"\n" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no full line; have {self.buffer[:80]!r}")
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def until(self, prefix: bytes) -> list[bytes]:
        """Lines up to and including the first starting with ``prefix``."""
        lines = []
        for _ in range(10000):
            lines.append(self.line())
            if lines[-1].startswith(prefix):
                return lines
        raise AssertionError(f"no {prefix!r} line")

    def ask(self, line: bytes) -> bytes:
        self.send(line)
        name = line.split(b" ")[0][1:]
        return self.until(b"!" + name)[-1]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw(board: Board) -> Iterator[Raw]:
    r = Raw(board.port)
    yield r
    r.close()


# ----------------------------------------------------------------- casperfpga_ext through it
def test_fpga_configures_a_core_through_the_server(board: Board):
    with KatcpTransport("127.0.0.1", board.port, timeout=TIMEOUT) as t:
        fpga = Fpga(t, board.fpg)
        assert sorted(fpga.listdev()) == ["gbe0", "sys_scratch"]
        gbe = fpga.gbes.gbe0
        # Bytes 0x20 and 0x0a in the values cross the wire escaped.
        gbe.configure_core("02:20:0a:00:0d:0a", "10.32.0.10", 0x0A20, "10.32.0.1", "/16")
        mac = bytes.fromhex("02200a000d0a")
        mac_hi, mac_lo = struct.unpack(">HI", mac)
        assert (reg_at(board.image, "mac_hi"), reg_at(board.image, "mac_lo")) == (mac_hi, mac_lo)
        assert reg_at(board.image, "ip") == int(ipaddress.IPv4Address("10.32.0.10"))
        assert reg_at(board.image, "gateway") == int(ipaddress.IPv4Address("10.32.0.1"))
        netmask = ipaddress.IPv4Network("10.32.0.0/16").netmask
        assert reg_at(board.image, "netmask") == int(netmask)
        assert reg_at(board.image, "port") == 0x0A20
        assert (gbe.mac, gbe.ip_address, gbe.port) == (0x02200A000D0A, 0x0A20000A, 0x0A20)

        macs = {i: 0x0C42A1002000 + i for i in range(0, 256, 5)}
        gbe.set_arp_table(macs)
        arp = regmap.REGIONS["arp_table"]
        for index in (0, 5, 255):
            at = GBE_BASE + arp.offset + index * arp.entry_bytes
            hi, lo = struct.unpack(">HI", (0x0C42A1002000 + index).to_bytes(6, "big"))
            assert (word_at(board.image, at), word_at(board.image, at + 4)) == (0x10000 | hi, lo)
        assert word_at(board.image, GBE_BASE + arp.offset + 1 * arp.entry_bytes) == 0
        valid = {e["index"]: e["mac"] for e in gbe.get_arp_entries() if e["valid"]}
        assert valid == macs

        # Counters written straight into the bus image, in host order, low word first.
        frames = regmap.REGISTERS["tx_frames"]
        image = bytearray(board.image.read_bytes())
        struct.pack_into("=II", image, GBE_BASE + frames.offset, 0x89ABCDEF, 0x12)
        board.image.write_bytes(bytes(image))
        assert gbe.read_tx_counters()["gbe0_tx_frames"] == 0x12_89ABCDEF
        assert gbe.read_core_counters()["tx_frames"] == 0x12_89ABCDEF

        fpga.write_int("sys_scratch", -2)
        assert word_at(board.image, 0) == 0xFFFFFFFE
        with pytest.raises(KatcpError, match="unknown device 'nope'"):
            t.read("nope", 4, 0)


def test_fpga_learns_the_design_from_the_server(board: Board):
    """Fpga(host) + get_system_information() with no file: ?listdev detail and ?meta."""
    fpga = Fpga("127.0.0.1", port=board.port, timeout=TIMEOUT)
    try:
        assert fpga.gbes == {}
        fpga.get_system_information()
        gbe = fpga.gbes.gbe0
        assert (gbe.address, gbe.length_bytes) == (GBE_BASE, regmap.BLOCK_SIZE)
        assert gbe.meta == BLOCKS[0].params
        assert fpga.header is not None
        assert set(fpga.header.devices) == {"gbe0", "sys_scratch"}
        assert fpga.header.blocks["scope"].params == {"names": "a b\\c"}
        gbe.port = 7149
        assert reg_at(board.image, "port") == 7149
    finally:
        fpga.transport.close()  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"give the \.fpg file"):
        Fpga(
            MmapTransport(board.image, {"gbe0": (GBE_BASE, regmap.BLOCK_SIZE)})
        ).get_system_information()
    with pytest.raises(KatcpError, match=r"cannot connect to 127\.0\.0\.1:1"):
        Fpga("127.0.0.1", port=1)


def test_example_configure_core_script(board: Board):
    """examples/configure_core.py, run as a user would, against the server."""
    root = REPO_ROOT
    script = root / "examples" / "configure_core.py"
    # This checkout's packages, whichever one the environment has installed.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [sys.executable, str(script), "127.0.0.1", "--port", str(board.port)]
    argv += ["--mac", "02:00:0a:00:00:0b", "--ip", "10.0.0.11", "--udp-port", "7150"]
    argv += ["--gateway", "10.0.0.1", "--arp", "10.0.0.20=0c:42:a1:00:00:14"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 0, run.stderr
    assert "MAC 02:00:0a:00:00:0b  IP 10.0.0.11  port 7150" in run.stdout
    assert "IP[7:0]  20 -> 0c:42:a1:00:00:14" in run.stdout
    assert reg_at(board.image, "ip") == int(ipaddress.IPv4Address("10.0.0.11"))
    assert reg_at(board.image, "port") == 7150
    bad = subprocess.run(
        [*argv[:5], "--ip", "10.0.0.300"], capture_output=True, text=True, timeout=60, env=env
    )
    assert bad.returncode == 1 and "10.0.0.300" in bad.stderr


def in_threads(client: Callable[[int], None], n: int, timeout: float) -> list[BaseException]:
    """Run ``client(0)`` .. ``client(n - 1)`` in ``n`` threads at once; what they raised."""
    errors: list[BaseException] = []

    def run(k: int) -> None:
        try:
            client(k)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout)
    return errors


def test_one_transport_shared_by_threads(board: Board):
    """Requests from several threads on one connection stay whole (the tap's case)."""
    with KatcpTransport("127.0.0.1", board.port, timeout=TIMEOUT) as t:

        def client(k: int) -> None:
            for i in range(60):
                value = (k << 24 | i).to_bytes(4, "big") * 3
                t.blindwrite("gbe0", value, 0x2000 + 16 * k)
                assert t.read("gbe0", 12, 0x2000 + 16 * k) == value

        errors = in_threads(client, 4, TIMEOUT * 4)
    assert errors == []


def test_several_clients_at_once(board: Board):
    def client(k: int) -> None:
        with KatcpTransport("127.0.0.1", board.port, timeout=TIMEOUT) as t:
            for i in range(40):
                value = (k << 24 | i).to_bytes(4, "big")
                t.blindwrite("gbe0", value, 0x1000 + 4 * k)
                assert t.read("gbe0", 4, 0x1000 + 4 * k) == value

    assert not in_threads(client, 6, 3 * TIMEOUT)
    assert [word_at(board.image, GBE_BASE + 0x1000 + 4 * k) for k in range(6)] == [
        k << 24 | 39 for k in range(6)
    ]


def test_fpg_addresses_are_bus_addresses_above_the_window_base(
    make_board: Callable[..., Board],
):
    base = 0x30000
    board = make_board(base=base)
    with KatcpTransport("127.0.0.1", board.port, timeout=TIMEOUT) as t:
        t.blindwrite("gbe0", bytes.fromhex("cafef00d"), 0x24)
        t.blindwrite("sys_scratch", bytes.fromhex("00000011"))
    assert word_at(board.image, base + GBE_BASE + 0x24) == 0xCAFEF00D
    assert word_at(board.image, base) == 0x11
    assert board.image.read_bytes()[:base] == bytes(base)


def test_a_window_handed_in_is_served_as_it_is(make_board: Callable[..., Board], tmp_path: Path):
    image = tmp_path / "fixed.bin"
    image.write_bytes(bytes(0x2000))
    with MmapTransport(image, {"ctrl": (0x0, 0x10), "buf": (0x1000, 0x1000)}) as window:
        board = make_board(window=window)
        raw = Raw(board.port)
        try:
            raw.send(b"?listdev")
            assert raw.until(b"!listdev") == [b"#listdev buf", b"#listdev ctrl", b"!listdev ok 2"]
            assert raw.ask(b"?wordwrite buf 1023 0x5") == b"!wordwrite ok"
            assert word_at(image, 0x1FFC) == 5
            # A design whose devices the window lacks cannot be loaded into it.
            write_fpg(tmp_path / "other.fpg", DEVICES, BLOCKS, b"")
            reply = raw.ask(b"?progdev other.fpg")
            assert reply.startswith(b"!progdev fail ") and b"not\\_in\\_the\\_window" in reply
            write_fpg(tmp_path / "same.fpg", [FpgDevice("buf", 0x1000, 0x1000)], [], b"")
            assert raw.ask(b"?progdev same.fpg") == b"!progdev ok 1"
            assert raw.ask(b"?wordread ctrl 0").startswith(b"!wordread fail unknown")
        finally:
            raw.close()
        assert window.is_connected()


# ----------------------------------------------------------------- wire format
def test_wordwrite_and_wordread_on_the_wire(board: Board, raw: Raw):
    assert raw.ask(b"?wordwrite gbe0 5 0xdeadbeef") == b"!wordwrite ok"
    assert word_at(board.image, GBE_BASE + 20) == 0xDEADBEEF
    assert raw.ask(b"?wordread gbe0 5") == b"!wordread ok 0xdeadbeef"
    assert raw.ask(b"?wordwrite sys_scratch 0 7") == b"!wordwrite ok"
    assert raw.ask(b"?wordread sys_scratch 0x0") == b"!wordread ok 0x00000007"
    assert raw.ask(b"?wordread[42] sys_scratch 0") == b"!wordread[42] ok 0x00000007"


def test_binary_data_is_escaped_both_ways(board: Board, raw: Raw):
    # NUL, space, newline, backslash, escape, carriage return, tab, 'A'.
    escaped = b"\\0\\_\\n\\\\\\e\\r\\tA"
    assert raw.ask(b"?write gbe0 256 " + escaped) == b"!write ok"
    assert word_at(board.image, GBE_BASE + 256) == 0x00200A5C
    assert word_at(board.image, GBE_BASE + 260) == 0x1B0D0941
    assert raw.ask(b"?read gbe0 256 8") == b"!read ok " + escaped
    assert raw.ask(b"?read gbe0 0x200 4") == b"!read ok \\0\\0\\0\\0"


def test_listdev_help_watchdog_version_list_fpgastatus(raw: Raw):
    raw.send(b"?listdev")
    assert raw.until(b"!listdev") == [b"#listdev sys_scratch", b"#listdev gbe0", b"!listdev ok 2"]
    raw.send(b"?help")
    lines = raw.until(b"!help")
    assert lines[-1] == b"!help ok %d" % (len(lines) - 1)
    assert any(line.startswith(b"#help wordread ") for line in lines)
    raw.send(b"?help wordread")
    assert raw.until(b"!help") == [
        b"#help wordread ?wordread\\_device\\_word[:bit]\\_[count]:\\_words\\_in\\_hex",
        b"!help ok 1",
    ]
    assert raw.ask(b"?watchdog") == b"!watchdog ok"
    raw.send(b"?version-list")
    lines = raw.until(b"!version-list")
    assert lines[0] == b"#version-list katcp-protocol 5.0-M"
    assert lines[-1] == b"!version-list ok 3"
    assert raw.greeting == [
        b"#version-connect katcp-protocol 5.0-M",
        b"#version-connect katcp-library casper400g-board-server-0.1",
        b"#version-connect katcp-device casper400g-board-server-0.1",
    ]
    raw.send(b"?listdev size")
    assert raw.until(b"!listdev") == [
        b"#listdev sys_scratch 4",
        b"#listdev gbe0 65536",
        b"!listdev ok 2",
    ]
    raw.send(b"?listdev detail")
    assert raw.until(b"!listdev")[:2] == [
        b"#listdev sys_scratch 0x0 4",
        b"#listdev gbe0 0x10000 65536",
    ]
    assert raw.ask(b"?listdev everything").startswith(b"!listdev fail usage")
    raw.send(b"?meta")
    assert raw.until(b"!meta") == [
        b"#meta gbe0 xps:fourhundred_gbe fab_ip 10.0.0.10",
        b"#meta gbe0 xps:fourhundred_gbe fab_mac 02:00:0a:00:00:0a",
        b"#meta gbe0 xps:fourhundred_gbe fab_udp 7148",
        b"#meta scope xps:bram names a\\_b\\\\c",
        b"!meta ok 4",
    ]
    raw.send(b"?meta scope")
    assert raw.until(b"!meta")[-1] == b"!meta ok 1"
    assert raw.ask(b"?fpgastatus").startswith(b"!fpgastatus ok ")


# ----------------------------------------------------------------- hostile requests
HOSTILE = [
    (b"?read gbe0 65536 4", b"!read fail ", [b"'gbe0'", b"offset\\_0x10000", b"outside"]),
    (b"?read gbe0 2 4", b"!read fail ", [b"offset\\_0x2", b"aligned"]),
    (b"?read gbe0 0 1099511627776", b"!read fail ", [b"'gbe0'", b"1099511627776"]),
    (b"?read sys_scratch 0 8", b"!read fail ", [b"'sys_scratch'", b"outside"]),
    (b"?read gbe0 -4 4", b"!read fail ", [b"negative"]),
    (b"?read gbe0 0x 4", b"!read fail ", [b"not\\_a\\_number"]),
    (b"?read gbe0 1_6 4", b"!read fail ", [b"'1_6'", b"not\\_a\\_number"]),
    (b"?read gbe0 +16 4", b"!read fail ", [b"not\\_a\\_number"]),
    (b"?read gbe0 0 " + b"9" * 5000, b"!read fail ", [b"not\\_a\\_number"]),
    (b"?write gbe0 0 abc", b"!write fail ", [b"aligned"]),
    (b"?write gbe0 65532 abcdefgh", b"!write fail ", [b"outside"]),
    (b"?wordwrite gbe0 0 xyz", b"!wordwrite fail ", [b"'xyz'", b"hex"]),
    (b"?wordwrite gbe0 0 0x123456789", b"!wordwrite fail ", [b"hex"]),
    (b"?wordread gbe0 zz", b"!wordread fail ", [b"'zz'"]),
    (b"?wordread gbe0 16384", b"!wordread fail ", [b"offset\\_0x10000"]),
    (b"?read nope 0 4", b"!read fail ", [b"unknown\\_device\\_'nope'"]),
    (b"?read gbe0 0 4 \\q", b"!read fail ", [b"bad\\_KATCP\\_escape"]),
    (b"?read", b"!read fail ", [b"usage"]),
    (b"?frobnicate 1 2", b"!frobnicate invalid ", [b"unknown\\_request\\_'frobnicate'"]),
    (b"?progdev ../etc/passwd", b"!progdev fail ", [b"inside"]),
    (b"?progdev missing.fpg", b"!progdev fail ", [b"missing.fpg"]),
    (b"?progremote 2100", b"!progremote fail ", [b"--allow-upload"]),
    (b"\x00\xff\xfe garbage \x1b", b"#log error ", [b"malformed"]),
    (b"?\xff\x00", b"#log error ", [b"malformed"]),
    (b"?write gbe0 0 " + b"A" * (1 << 20), b"!write fail ", [b"longer\\_than"]),
    (b"?" + b"x" * (1 << 20), b"#log error ", [b"longer\\_than"]),
]


@pytest.mark.parametrize(("line", "prefix", "pieces"), HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_requests_fail_and_the_server_keeps_serving(
    board: Board, raw: Raw, line: bytes, prefix: bytes, pieces: list[bytes]
):
    before = board.image.read_bytes()
    raw.send(line)
    reply = raw.until(prefix[:2])[-1]
    assert reply.startswith(prefix), reply[:200]
    for piece in pieces:
        assert piece in reply, reply[:200]
    assert board.image.read_bytes() == before
    assert raw.ask(b"?wordwrite gbe0 1 0x600d") == b"!wordwrite ok"
    assert raw.ask(b"?wordread gbe0 1") == b"!wordread ok 0x0000600d"


def test_random_binary_lines_never_break_the_connection(board: Board, raw: Raw):
    rng = random.Random(400)
    alphabet = b"?!#[]\\ \t\r\x00\x1b_@0x" + bytes(range(256))
    for _ in range(300):
        line = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 80)))
        raw.sock.sendall(line.replace(b"\n", b"") + b"\n")
    assert raw.ask(b"?watchdog[9]") == b"!watchdog[9] ok"
    assert raw.ask(b"?wordread gbe0 0") == b"!wordread ok 0x00000000"


def test_replies_and_informs_from_a_client_are_ignored(raw: Raw):
    raw.send(b"!something ok")
    raw.send(b"#log info 0 x y")
    raw.send(b"")
    raw.send(b"   ")
    assert raw.ask(b"?watchdog") == b"!watchdog ok"


def test_a_line_split_across_packets_and_a_closed_client(board: Board, raw: Raw):
    raw.sock.sendall(b"?wordwr")
    time.sleep(0.05)
    raw.sock.sendall(b"ite gbe0 2 0x1234\r\n")
    assert raw.until(b"!wordwrite") == [b"!wordwrite ok"]
    other = Raw(board.port)
    other.send(b"?read gbe0 0 65536")  # a large reply to a client that goes away at once
    other.close()
    assert raw.ask(b"?wordread gbe0 2") == b"!wordread ok 0x00001234"
    assert MAX_LINE < 1 << 20


# ----------------------------------------------------------------- programming
NEW_DEVICES = [FpgDevice("adc_ctrl", 0x8, 0x8), FpgDevice("gbe0", GBE_BASE, regmap.BLOCK_SIZE)]


def copy_cmd(tmp_path: Path) -> str:
    """A harmless program command: copies the extracted bitstream where the test looks."""
    return f"{sys.executable} -c 'import shutil,sys; shutil.copy(*sys.argv[1:])' {{pdi}} " + str(
        tmp_path / "programmed.pdi"
    )


def test_progdev_programs_and_remaps(make_board: Callable[..., Board], tmp_path: Path):
    board = make_board(program_cmd=copy_cmd(tmp_path))
    write_fpg(tmp_path / "v2.fpg", NEW_DEVICES, BLOCKS, b"second bitstream")
    raw = Raw(board.port)
    try:
        raw.send(b"?progdev v2.fpg")
        lines = raw.until(b"!progdev")
        assert lines[-1] == b"!progdev ok 2"
        assert b"#fpga ready" in lines
        assert (tmp_path / "programmed.pdi").read_bytes() == b"second bitstream"
        raw.send(b"?listdev")
        assert raw.until(b"!listdev") == [b"#listdev adc_ctrl", b"#listdev gbe0", b"!listdev ok 2"]
        assert raw.ask(b"?wordwrite adc_ctrl 1 0xabc") == b"!wordwrite ok"
        assert word_at(board.image, 0xC) == 0xABC
        assert raw.ask(b"?read sys_scratch 0 4").startswith(b"!read fail unknown\\_device")
        assert raw.ask(b"?fpgastatus") == b"!fpgastatus ok v2.fpg"

        raw.send(b"?progdev")
        assert raw.until(b"!progdev")[-2:] == [b"#fpga down", b"!progdev ok"]
        assert raw.ask(b"?fpgastatus").startswith(b"!fpgastatus fail ")
        assert raw.ask(b"?read gbe0 0 4").startswith(b"!read fail no\\_design")
        raw.send(b"?listdev")
        assert raw.until(b"!listdev") == [b"!listdev ok 0"]
    finally:
        raw.close()


def test_progdev_reports_a_failing_program_command(
    make_board: Callable[..., Board], tmp_path: Path
):
    board = make_board(program_cmd=f"{sys.executable} -c 'import sys; sys.exit(3)' {{pdi}}")
    write_fpg(tmp_path / "v2.fpg", NEW_DEVICES, BLOCKS, b"second bitstream")
    (tmp_path / "bad.fpg").write_bytes(b"#!/bin/kcpfpg\n?register\tx\t0xZZ\t0x4\n?quit\n")
    window = MmapWindow(board.image, 0, 0x1000)
    raw = Raw(board.port)
    try:
        # A header that does not parse leaves the running design alone.
        assert b"0xZZ" in raw.ask(b"?progdev bad.fpg")
        raw.send(b"?listdev")
        assert raw.until(b"!listdev")[-1] == b"!listdev ok 2"
        raw.send(b"?progdev v2.fpg")
        lines = raw.until(b"!progdev")
        assert lines[-1].startswith(b"!progdev fail ")
        assert b"exited\\_with\\_3" in lines[-1]
        assert b"#fpga down" in lines
        # After a failed load the PL's state is unknown: nothing is served.
        assert raw.ask(b"?fpgastatus").startswith(b"!fpgastatus fail ")
        assert raw.ask(b"?read gbe0 0 4").startswith(b"!read fail no\\_design")
    finally:
        raw.close()
    with pytest.raises(ValueError, match=r"'gbe0' at 0x10000 .* outside the window"):
        window(DEVICES)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


UPLOADS = ServerPolicy(allow_upload=True, upload_timeout=TIMEOUT)


def test_progremote_receives_the_file_and_programs(
    make_board: Callable[..., Board], tmp_path: Path
):
    board = make_board(program_cmd=copy_cmd(tmp_path), policy=UPLOADS)
    write_fpg(tmp_path / "v3.fpg", NEW_DEVICES, BLOCKS, b"uploaded bitstream")
    raw = Raw(board.port)
    watcher = Raw(board.port)
    try:
        port = free_port()
        assert raw.ask(b"?progremote %d" % port) == b"!progremote ok"
        with socket.create_connection(("127.0.0.1", port), TIMEOUT) as up:
            up.sendall((tmp_path / "v3.fpg").read_bytes())
        assert raw.until(b"#fpga")[-1] == b"#fpga ready"
        assert watcher.until(b"#fpga")[-1] == b"#fpga ready"
        assert (tmp_path / "programmed.pdi").read_bytes() == b"uploaded bitstream"
        raw.send(b"?listdev")
        assert raw.until(b"!listdev")[-1] == b"!listdev ok 2"
        # The listener took one connection and closed.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), TIMEOUT).close()
        assert raw.ask(b"?progremote 80").startswith(b"!progremote fail port\\_80:")
        assert raw.ask(b"?progremote 99999").startswith(b"!progremote fail port\\_99999:")
        assert board.server.counts["upload"] == board.server.counts["upload_programmed"] == 1
    finally:
        raw.close()
        watcher.close()


def refused_upload(raw: Raw, watcher: Raw, why: bytes) -> None:
    """The requester is told why its upload was refused; nobody hears ``#fpga down``, and
    the design that was running is still served."""
    lines = raw.until(b"#log error")
    assert why in lines[-1], lines[-1]
    assert not any(line.startswith(b"#fpga") for line in lines)
    watcher.send(b"?watchdog")  # served after the refusal: any inform of it came first
    assert not any(line.startswith(b"#fpga") for line in watcher.until(b"!watchdog"))
    assert raw.ask(b"?fpgastatus").startswith(b"!fpgastatus ok ")
    assert raw.ask(b"?wordread gbe0 0") == b"!wordread ok 0x00000000"


def test_a_failed_upload_leaves_the_running_design(
    make_board: Callable[..., Board], tmp_path: Path
):
    board = make_board(program_cmd=copy_cmd(tmp_path), policy=UPLOADS)
    raw, watcher = Raw(board.port), Raw(board.port)
    try:
        port = free_port()
        assert raw.ask(b"?progremote %d" % port) == b"!progremote ok"
        with socket.create_connection(("127.0.0.1", port), TIMEOUT) as up:
            up.sendall(b"not an fpg file\n")
        refused_upload(raw, watcher, b"expected\\_'#!/bin/kcpfpg'")
        assert not (tmp_path / "programmed.pdi").exists()
        assert board.server.counts["upload_refused_bad_header"] == 1
    finally:
        raw.close()
        watcher.close()


def test_progremote_without_an_upload_times_out(make_board: Callable[..., Board]):
    board = make_board(policy=ServerPolicy(allow_upload=True, upload_timeout=0.2))
    raw, watcher = Raw(board.port), Raw(board.port)
    try:
        assert raw.ask(b"?progremote %d" % free_port()) == b"!progremote ok"
        refused_upload(raw, watcher, b"no\\_upload\\_within\\_0.2\\_s")
        assert board.server.counts["upload_refused_timeout"] == 1
    finally:
        raw.close()
        watcher.close()


# ----------------------------------------------------------------- command line
def test_cli_reports_a_missing_fpg(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert cli.main(["--fpg", str(tmp_path / "none.fpg")]) == 1
    assert f"{tmp_path / 'none.fpg'}: no such .fpg file" in capsys.readouterr().err


def test_cli_reports_permission_denied_naming_the_memory_device(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    fpg = tmp_path / "design.fpg"
    write_fpg(fpg, DEVICES, BLOCKS, b"")
    mem = tmp_path / "mem"
    mem.write_bytes(bytes(WINDOW))

    def refuse(path: object, flags: int) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    # Tests may run as root, where a file's mode does not refuse the open.
    monkeypatch.setattr(transport.os, "open", refuse)
    argv = ["--fpg", str(fpg), "--mem", str(mem), "--base", "0"]
    assert cli.main(argv) == 1
    assert f"permission denied opening {mem}" in capsys.readouterr().err


def test_cli_refuses_devices_outside_the_window(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    fpg = tmp_path / "design.fpg"
    write_fpg(fpg, DEVICES, BLOCKS, b"")
    mem = tmp_path / "mem"
    mem.write_bytes(bytes(WINDOW))
    assert cli.main(["--fpg", str(fpg), "--mem", str(mem)]) == 1
    err = capsys.readouterr().err
    assert "'sys_scratch' at 0x0" in err and "0xa4000000" in err


def test_cli_serves_until_stopped(tmp_path: Path):
    fpg = tmp_path / "design.fpg"
    write_fpg(fpg, DEVICES, BLOCKS, b"")
    mem = tmp_path / "mem"
    mem.write_bytes(bytes(WINDOW))
    with board_server(fpg, mem, 0, 3 * TIMEOUT) as (port, out):
        assert b"2 devices of" in out and b"gbe0" in out
        with KatcpTransport("127.0.0.1", port, timeout=TIMEOUT) as t:
            assert t.listdev() == ["sys_scratch", "gbe0"]
            t.blindwrite("sys_scratch", bytes.fromhex("01020304"))
        assert word_at(mem, 0) == 0x01020304


# ----------------------------------------------------------------- casperfpga's requests
def test_wordread_takes_casperfpgas_word_bit_and_count(board: Board, raw: Raw):
    # casperfpga's KatcpTransport.wordread sends "?wordread <dev> <word>:<bit> <count>".
    raw.ask(b"?wordwrite gbe0 5 0x12345678")
    raw.ask(b"?wordwrite gbe0 6 0x9abcdef0")
    assert raw.ask(b"?wordread gbe0 5:0 1") == b"!wordread ok 0x12345678"
    assert raw.ask(b"?wordread gbe0 5:0 2") == b"!wordread ok 0x12345678 0x9abcdef0"
    # A bit offset starts the 32 bits that far into the word (bit 0 = most significant).
    assert raw.ask(b"?wordread gbe0 5:8 1") == b"!wordread ok 0x3456789a"
    assert raw.ask(b"?wordread gbe0 5:32 1").startswith(b"!wordread fail bit\\_offset\\_32")
    assert raw.ask(b"?wordread gbe0 5:0 0").startswith(b"!wordread fail count\\_0")
    assert raw.ask(b"?wordwrite gbe0 5:0 0x1") == b"!wordwrite ok"
    assert raw.ask(b"?wordwrite gbe0 5:4 0x1").startswith(b"!wordwrite fail ")


def test_status_tap_info_and_deprogram(raw: Raw):
    # casperfpga's program() asks ?status; deprogram() asks ?tap-info, then ?progdev.
    assert raw.ask(b"?status") == b"!status ok"
    assert raw.ask(b"?tap-info") == b"!tap-info ok 0"
    reply = raw.ask(b"?tap-start gbe0 gbe0 10.0.0.10 7148 02:00:0a:00:00:0a")
    assert reply.startswith(b"!tap-start fail ") and b"tap_start" in reply
    assert raw.ask(b"?tap-dhcp gbe0").startswith(b"!tap-dhcp fail ")
    assert raw.ask(b"?progdev").startswith(b"!progdev ok")
    assert raw.ask(b"?status").startswith(b"!status fail no\\_design")


def test_listbof_lists_the_fpg_directory(board: Board, raw: Raw):
    raw.send(b"?listbof")
    assert raw.until(b"!listbof") == [b"#listbof " + board.fpg.name.encode(), b"!listbof ok 1"]


# ----------------------------------------------------------------- KATCP v5 core set
def sensor_values(raw: Raw, name: bytes = b"") -> dict[bytes, tuple[bytes, bytes]]:
    raw.send(b"?sensor-value" + (b" " + name if name else b""))
    lines = raw.until(b"!sensor-value")
    assert lines[-1] == b"!sensor-value ok %d" % (len(lines) - 1)
    out = {}
    for line in lines[:-1]:
        kind, stamp, count, sensor, status, value = line.split(b" ")
        assert (kind, count) == (b"#sensor-value", b"1")
        assert abs(float(stamp) - time.time()) < 60  # KATCP v5: seconds
        out[sensor] = (status, value)
    return out


def test_sensors_read_the_cores_registers(board: Board, raw: Raw):
    raw.send(b"?sensor-list")
    lines = raw.until(b"!sensor-list")
    listed = {line.split(b" ")[1]: line.split(b" ")[2:] for line in lines[:-1]}
    # link-up, -state, -retries, fabric-enabled, two status flags, four rates, the counters
    assert lines[-1] == b"!sensor-list ok %d" % (6 + 4 + len(regmap.COUNTERS))
    assert listed[b"gbe0.link-up"][-1] == b"boolean"
    assert listed[b"gbe0.tx-frames"][-3:] == [b"integer", b"0", str((1 << 64) - 1).encode()]
    assert listed[b"gbe0.tx-bytes"][1] == b"B"

    def put(name: str, value: int) -> None:
        reg = regmap.REGISTERS[name]
        with open(board.image, "r+b") as f:
            for k in range(reg.width // 32):
                f.seek(GBE_BASE + reg.offset + 4 * k)
                f.write(struct.pack("=I", value >> (32 * k) & 0xFFFFFFFF))

    values = sensor_values(raw)
    assert values[b"gbe0.link-up"] == (b"error", b"0")  # link down: not nominal
    put("link_status", 0x85)  # link_up, state 5
    put("tx_frames", 0x1_2345_6789)
    put("rx_drop_fcs", 7)
    put("tx_packet_rate", 48_000_000)
    put("status", 1 << regmap.REGISTERS["status"].field("rx_overrun").lsb)
    values = sensor_values(raw)
    assert values[b"gbe0.tx-packet-rate"] == (b"nominal", b"48000000")
    assert values[b"gbe0.rx-overrun"] == (b"error", b"1")
    assert values[b"gbe0.tx-overflowed"] == (b"nominal", b"0")
    assert values[b"gbe0.link-up"] == (b"nominal", b"1")
    assert values[b"gbe0.link-state"] == (b"nominal", b"5")
    assert values[b"gbe0.tx-frames"] == (b"nominal", str(0x1_2345_6789).encode())
    assert sensor_values(raw, b"gbe0.rx-drop-fcs") == {b"gbe0.rx-drop-fcs": (b"nominal", b"7")}
    assert raw.ask(b"?sensor-value nope").startswith(b"!sensor-value fail unknown\\_sensor")
    assert (
        raw.ask(b"?sensor-sampling gbe0.link-up none") == b"!sensor-sampling ok gbe0.link-up none"
    )
    assert raw.ask(b"?sensor-sampling gbe0.link-up event").startswith(b"!sensor-sampling fail")
    raw.ask(b"?progdev")  # unmapped: no design, no sensors
    assert raw.ask(b"?sensor-list") == b"!sensor-list ok 0"


def test_client_list_log_level_and_halt(board: Board, raw: Raw):
    other = Raw(board.port)
    try:
        raw.send(b"?client-list")
        lines = raw.until(b"!client-list")
        assert lines[-1] == b"!client-list ok 2"
        peers = {line.split(b" ")[1] for line in lines[:-1]}
        assert b"127.0.0.1:%d" % other.sock.getsockname()[1] in peers
        assert raw.ask(b"?log-level") == b"!log-level ok info"
        assert raw.ask(b"?log-level off") == b"!log-level ok off"
        raw.send(b"\x00garbage")  # would log an error, but the level is "off"
        assert raw.ask(b"?log-level bogus").startswith(b"!log-level fail unknown\\_log\\_level")
        assert raw.ask(b"?log-level error") == b"!log-level ok error"
        # ?halt would take the board's only server away from every client: refused.
        assert raw.ask(b"?halt").startswith(b"!halt fail not\\_allowed")
        assert raw.ask(b"?restart").startswith(b"!restart fail not\\_allowed")
        assert other.ask(b"?watchdog") == b"!watchdog ok"
    finally:
        other.close()


def test_an_independent_katcp_client_aiokatcp(board: Board):
    aiokatcp = pytest.importorskip("aiokatcp")

    async def session() -> dict[str, object]:
        client = await aiokatcp.Client.connect("127.0.0.1", board.port)
        try:
            got: dict[str, object] = {"protocol": client.protocol_flags}
            reply, informs = await client.request("sensor-value", "gbe0.link-up")
            got["sensor"] = [[a.decode() for a in i.arguments] for i in informs]
            got["count"] = reply
            reply, informs = await client.request("wordread", "gbe0", "0:0", "1")
            got["wordread"] = [r.decode() for r in reply]
            _, informs = await client.request("listdev", "detail")
            got["listdev"] = [[a.decode() for a in i.arguments] for i in informs]
            _, informs = await client.request("client-list")
            got["clients"] = len(informs)
            with pytest.raises(aiokatcp.FailReply, match="not allowed"):
                await client.request("halt")
            await client.request("watchdog")
            return got
        finally:
            client.close()
            await client.wait_closed()

    got = asyncio.run(asyncio.wait_for(session(), TIMEOUT))
    assert got["sensor"][0][2:] == ["gbe0.link-up", "error", "0"]
    assert got["count"] == [b"1"]
    assert got["wordread"] == ["0x00000000"]
    assert got["listdev"] == [["sys_scratch", "0x0", "4"], ["gbe0", "0x10000", "65536"]]
    assert got["clients"] == 1


# ----------------------------------------------------------------- what a client may reach
def sparse_bus(path: Path, size: int) -> Path:
    """A bus image as large as /dev/mem would let a mapping reach (sparse: no disk used)."""
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def test_the_window_is_the_designs_memory_map(tmp_path: Path):
    """No --size: a later design may not reach past the first one's map, nor overlap."""
    fpg = tmp_path / "design.fpg"
    write_fpg(fpg, DEVICES, BLOCKS, b"")
    mem = sparse_bus(tmp_path / "mem", 0x4000000)
    write_fpg(tmp_path / "far.fpg", [*DEVICES, FpgDevice("far", 0x1000000, 0x1000)], [], b"")
    overlapping = [FpgDevice("a", 0x0, 0x100), FpgDevice("b", 0x80, 0x100)]
    write_fpg(tmp_path / "overlap.fpg", overlapping, [], b"")
    write_fpg(tmp_path / "odd.fpg", [FpgDevice("odd", 0x2, 0x4)], [], b"")
    with board_server(fpg, mem, 0, 3 * TIMEOUT) as (port, out):
        assert b"(0x20000 bytes)" in out
        raw = Raw(port)
        try:
            reply = raw.ask(b"?progdev far.fpg")
            assert reply.startswith(b"!progdev fail far.fpg:\\_device\\_'far'\\_at\\_0x1000000")
            assert b"outside\\_the\\_window" in reply and b"0x0-0x20000" in reply
            reply = raw.ask(b"?progdev overlap.fpg")
            assert b"device\\_'b'\\_at\\_0x80\\_(size\\_0x100)\\_overlaps\\_device\\_'a'" in reply
            assert b"device\\_'odd'" in raw.ask(b"?progdev odd.fpg")
            # Refused before anything changed: the first design is still served.
            raw.send(b"?listdev")
            assert raw.until(b"!listdev") == [
                b"#listdev sys_scratch",
                b"#listdev gbe0",
                b"!listdev ok 2",
            ]
            assert raw.ask(b"?read far 0 4").startswith(b"!read fail unknown\\_device")
        finally:
            raw.close()


def test_an_upload_outside_the_window_is_refused_before_programming(
    make_board: Callable[..., Board], tmp_path: Path
):
    board = make_board(program_cmd=copy_cmd(tmp_path), policy=UPLOADS)
    write_fpg(tmp_path / "far.fpg", [FpgDevice("far", WINDOW, 0x1000)], [], b"far bitstream")
    raw, watcher = Raw(board.port), Raw(board.port)
    try:
        port = free_port()
        assert raw.ask(b"?progremote %d" % port) == b"!progremote ok"
        with socket.create_connection(("127.0.0.1", port), TIMEOUT) as up:
            up.sendall((tmp_path / "far.fpg").read_bytes())
        refused_upload(
            raw, watcher, b"device\\_'far'\\_at\\_0x20000\\_(size\\_0x1000)\\_is\\_outside"
        )
        assert not (tmp_path / "programmed.pdi").exists()
        assert board.server.counts["upload_refused_memory_map"] == 1
    finally:
        raw.close()
        watcher.close()


def run_cli(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``casper400g-board-server`` in a process of its own (a server that starts is stopped by
    the timeout)."""
    return subprocess.run(
        [sys.executable, "-m", "casper400g_board_server", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_refuses_a_design_beyond_the_platforms_address_space(tmp_path: Path):
    base = 0xA4000000
    fpg = tmp_path / "design.fpg"
    beyond = FpgDevice("pmc_regs", base + cli.PL_APERTURE, 0x1000)
    write_fpg(fpg, [FpgDevice("sys_scratch", base, 4), beyond], [], b"")
    mem = sparse_bus(tmp_path / "mem", base + 2 * cli.PL_APERTURE)
    argv = ["--fpg", str(fpg), "--mem", str(mem), "--port", "0"]
    done = run_cli(argv)
    assert done.returncode == 1, done.stdout
    assert "device 'pmc_regs' at 0xa8000000 (size 0x1000) is outside the platform's PL" in (
        done.stderr
    )
    write_fpg(fpg, [FpgDevice("sys_scratch", base, 4)], [], b"")
    done = run_cli([*argv, "--size", hex(2 * cli.PL_APERTURE)])
    assert done.returncode == 1, done.stdout
    assert "window size 0x8000000 is outside 1..0x4000000 (--aperture)" in done.stderr


def test_the_cli_aperture_is_the_vpk180_platforms():
    root = REPO_ROOT
    platform = yaml.safe_load((root / "jasper_library/platforms/vpk180.yaml").read_text())
    assert platform["mmbus_address_window"] == cli.PL_APERTURE
    assert platform["mmbus_base_address"] == 0xA4000000


@pytest.mark.parametrize(
    ("devices", "message"),
    [
        ([FpgDevice("low", 0x0FFC, 8)], "device 'low' at 0xffc (size 0x8) is outside"),
        ([FpgDevice("high", 0x1FFC, 8)], "device 'high' at 0x1ffc (size 0x8) is outside"),
        ([FpgDevice("empty", 0x1000, 0)], "device 'empty' at 0x1000 (size 0x0): not whole"),
        ([FpgDevice("odd", 0x1002, 4)], "device 'odd' at 0x1002 (size 0x4): not whole"),
        (
            [FpgDevice("a", 0x1000, 0x10), FpgDevice("b", 0x100C, 8)],
            "device 'b' at 0x100c (size 0x8) overlaps device 'a' at 0x1000 (size 0x10) without",
        ),
        (
            # Inside a block, but across the end of one of its registers.
            [FpgDevice("c", 0x1400, 0x40), FpgDevice("c_r", 0x1400, 8), FpgDevice("d", 0x1404, 8)],
            "device 'd' at 0x1404 (size 0x8) overlaps device 'c_r' at 0x1400 (size 0x8)",
        ),
    ],
)
def test_check_memory_map_names_the_device(devices: list[FpgDevice], message: str, tmp_path: Path):
    window = MmapWindow(tmp_path / "bus", 0x1000, 0x1000)
    with pytest.raises(ValueError) as err:
        window.check([FpgDevice("fine", 0x1800, 0x10), *devices])
    assert message in str(err.value)


def test_registers_inside_their_block_are_not_overlaps(tmp_path: Path):
    """mlib_devel's .fpg lists a block and then each of its registers inside it."""
    sys_block = [FpgDevice("sys", 0x1000, 0x20)]
    sys_block += [FpgDevice(f"sys_{r}", 0x1000 + 4 * k, 4) for k, r in enumerate("abcdefgh")]
    MmapWindow(tmp_path / "bus", 0x1000, 0x1000).check(
        [*sys_block, FpgDevice("same", 0x1020, 8), FpgDevice("same_alias", 0x1020, 8)]
    )


def test_board_server_listens_on_localhost_by_default(tmp_path: Path):
    image = tmp_path / "bus.bin"
    image.write_bytes(bytes(WINDOW))
    fpg = tmp_path / "design.fpg"
    write_fpg(fpg, DEVICES, BLOCKS, b"")

    async def listening() -> set[str]:
        server = BoardServer(MmapWindow(image, 0, WINDOW), port=0, fpg=fpg)
        await server.start()
        try:
            return tcp_listeners(server.port)
        finally:
            await server.close()

    assert asyncio.run(listening()) == {"127.0.0.1"}


def test_cli_listens_on_localhost_by_default(tmp_path: Path):
    fpg = tmp_path / "design.fpg"
    write_fpg(fpg, DEVICES, BLOCKS, b"")
    mem = tmp_path / "mem"
    mem.write_bytes(bytes(WINDOW))
    with board_server(fpg, mem, 0, 3 * TIMEOUT) as (port, out):
        assert b"uploads off" in out
        assert tcp_listeners(port) == {"127.0.0.1"}


# ----------------------------------------------------------------- uploads
def test_uploads_are_off_unless_allowed(board: Board, raw: Raw):
    port = free_port()
    reply = raw.ask(b"?progremote %d" % port)
    assert reply.startswith(b"!progremote fail uploads\\_are\\_off") and b"--allow-upload" in reply
    assert tcp_listeners(port) == set()


def test_only_the_requesting_client_may_upload(make_board: Callable[..., Board], tmp_path: Path):
    board = make_board(program_cmd=copy_cmd(tmp_path), policy=UPLOADS)
    write_fpg(tmp_path / "v3.fpg", NEW_DEVICES, BLOCKS, b"uploaded bitstream")
    write_fpg(tmp_path / "evil.fpg", NEW_DEVICES, BLOCKS, b"someone else's bitstream")
    raw = Raw(board.port)
    try:
        port = free_port()
        assert raw.ask(b"?progremote %d" % port) == b"!progremote ok"
        # Another host on the network (another loopback address here) is first.
        other = socket.create_connection(("127.0.0.1", port), TIMEOUT, ("127.0.0.2", 0))
        with other, contextlib.suppress(ConnectionError):
            other.sendall((tmp_path / "evil.fpg").read_bytes())
            assert other.recv(1) == b""  # closed without reading
        with socket.create_connection(("127.0.0.1", port), TIMEOUT) as up:
            up.sendall((tmp_path / "v3.fpg").read_bytes())
        assert raw.until(b"#fpga")[-1] == b"#fpga ready"
        assert (tmp_path / "programmed.pdi").read_bytes() == b"uploaded bitstream"
        assert board.server.counts["upload_connection_refused"] == 1
    finally:
        raw.close()


def test_one_pending_upload_per_client_and_a_bounded_number(make_board: Callable[..., Board]):
    policy = ServerPolicy(allow_upload=True, upload_timeout=1.0, max_listeners=2)
    board = make_board(policy=policy)
    first, again, second, third = (
        Raw(board.port, "127.0.0.1"),
        Raw(board.port, "127.0.0.1"),
        Raw(board.port, "127.0.0.2"),
        Raw(board.port, "127.0.0.3"),
    )
    try:
        port = free_port()
        assert first.ask(b"?progremote %d" % port) == b"!progremote ok"
        pending = b"!progremote fail an\\_upload\\_from\\_127.0.0.1\\_is\\_already\\_pending"
        assert first.ask(b"?progremote %d" % free_port()).startswith(pending)
        assert again.ask(b"?progremote %d" % free_port()).startswith(pending)
        assert second.ask(b"?progremote %d" % free_port()) == b"!progremote ok"
        reply = third.ask(b"?progremote %d" % free_port())
        assert reply.startswith(b"!progremote fail 2\\_uploads\\_are\\_pending")
        assert len(tcp_listeners(port)) == 1
        # When the uploads time out their listeners close and the client may ask again.
        assert b"no\\_upload" in first.until(b"#log error")[-1]
        assert b"no\\_upload" in second.until(b"#log error")[-1]
        assert tcp_listeners(port) == set()
        assert third.ask(b"?progremote %d" % free_port()) == b"!progremote ok"
    finally:
        for r in (first, again, second, third):
            r.close()


def bomb_fpg(path: Path, inflated: int) -> Path:
    """An .fpg whose bitstream is a few KB of gzip that inflates to ``inflated`` bytes."""
    write_fpg(path, NEW_DEVICES, BLOCKS, bytes(inflated))
    return path


def test_upload_and_bitstream_sizes_are_capped(make_board: Callable[..., Board], tmp_path: Path):
    policy = ServerPolicy(
        allow_upload=True, upload_timeout=TIMEOUT, max_upload=8192, max_bitstream=1 << 16
    )
    board = make_board(program_cmd=copy_cmd(tmp_path), policy=policy)
    big = tmp_path / "big.fpg"
    write_fpg(big, NEW_DEVICES, BLOCKS, random.Random(1).randbytes(9000))  # incompressible
    bomb = bomb_fpg(tmp_path / "bomb.fpg", 1 << 22)
    assert len(bomb.read_bytes()) < 8192
    raw, watcher = Raw(board.port), Raw(board.port)
    try:
        for fpg, why in ((big, b"upload\\_exceeds\\_8192"), (bomb, b"inflates\\_past\\_65536")):
            port = free_port()
            assert raw.ask(b"?progremote %d" % port) == b"!progremote ok"
            up = socket.create_connection(("127.0.0.1", port), TIMEOUT)
            with up, contextlib.suppress(ConnectionError):  # closed once the cap is passed
                up.sendall(fpg.read_bytes())
            refused_upload(raw, watcher, why)
        reply = raw.ask(b"?progdev bomb.fpg")
        assert reply.startswith(b"!progdev fail bomb.fpg:") and b"inflates\\_past" in reply
        assert raw.ask(b"?progdev big.fpg").startswith(b"!progdev fail 'big.fpg'\\_is\\_larger")
        assert not (tmp_path / "programmed.pdi").exists()
        counts = board.server.counts
        assert counts["upload"] == counts["upload_refused_too_large"] == 2
    finally:
        raw.close()
        watcher.close()


def test_an_upload_is_unpacked_off_the_event_loop(
    make_board: Callable[..., Board], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """While an upload is being inflated, other clients are served."""
    entered, release = threading.Event(), threading.Event()
    inflate = server_module.inflate_bitstream

    def slow_inflate(*args: object) -> int:
        entered.set()
        release.wait(3 * TIMEOUT)
        return inflate(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(server_module, "inflate_bitstream", slow_inflate)
    board = make_board(program_cmd=copy_cmd(tmp_path), policy=UPLOADS)
    write_fpg(tmp_path / "v3.fpg", NEW_DEVICES, BLOCKS, b"uploaded bitstream")
    raw, other = Raw(board.port), Raw(board.port)
    try:
        port = free_port()
        assert raw.ask(b"?progremote %d" % port) == b"!progremote ok"
        with socket.create_connection(("127.0.0.1", port), TIMEOUT) as up:
            up.sendall((tmp_path / "v3.fpg").read_bytes())
        assert entered.wait(TIMEOUT)
        assert other.ask(b"?wordread gbe0 0") == b"!wordread ok 0x00000000"
        release.set()
        assert raw.until(b"#fpga")[-1] == b"#fpga ready"
    finally:
        release.set()
        raw.close()
        other.close()


def test_connections_are_bounded(make_board: Callable[..., Board]):
    board = make_board(policy=ServerPolicy(max_clients=2))
    first, second = Raw(board.port), Raw(board.port)
    try:
        with socket.create_connection(("127.0.0.1", board.port), TIMEOUT) as third:
            third.settimeout(TIMEOUT)
            got = b""
            while chunk := third.recv(4096):
                got += chunk
            assert got.startswith(b"#log error ") and b"too\\_many\\_clients\\_(2)" in got
        assert board.server.counts["clients_refused"] == 1
        assert second.ask(b"?watchdog") == b"!watchdog ok"
        first.close()
        assert second.ask(b"?watchdog") == b"!watchdog ok"  # the server saw it go
        again = Raw(board.port)
        assert again.ask(b"?watchdog") == b"!watchdog ok"
        again.close()
    finally:
        first.close()
        second.close()


def splitter_reference(stream: bytes, limit: int) -> list[bytes | Overlong]:
    """What a line splitter must return for ``stream``, from bytes.split."""
    out: list[bytes | Overlong] = []
    for line in stream.split(b"\n")[:-1]:
        out.append(line if len(line) <= limit else Overlong(line[:KEEP]))
    return out


@pytest.mark.parametrize(
    "cuts",
    ["whole", "bytes", "random"],
)
def test_lines_are_split_in_linear_work(cuts: str):
    """Each byte is searched for the newline once, however the stream is cut: a long line
    fed a byte at a time, and many short lines in one read."""
    rng = random.Random(29)
    limit = 4096
    stream = b"x" * 20000 + b"\n" + b"\n" * 20000 + b"?watchdog\n" * 3000 + b"y" * 4096
    stream += b"\n" + b"z" * 4097 + b"\n" + b"tail"
    pieces: list[bytes] = []
    if cuts == "whole":
        pieces = [stream]
    elif cuts == "bytes":
        pieces = [stream[k : k + 1] for k in range(len(stream))]
    else:
        k = 0
        while k < len(stream):
            n = rng.choice([1, 2, 7, 100, 5000])
            pieces.append(stream[k : k + n])
            k += n
    splitter = LineSplitter(limit)
    got: list[bytes | Overlong] = []
    for piece in pieces:
        got += splitter.feed(piece)
        assert splitter.pending <= limit
    assert got == splitter_reference(stream, limit)
    assert splitter.fed == len(stream)
    assert splitter.scanned <= splitter.fed


# ---------------------------------------------------------------- two cores in one design
def _two_port_fpg(tmp_path: Path) -> tuple[Path, dict[str, FpgDevice]]:
    """examples/pktgen2x400g's .fpg (its header as built; a placeholder image)."""
    # The toolflow builds the header: absent where the board server is installed alone.
    pytest.importorskip("mlib_devel_400g", reason="the toolflow (casper400g) builds the design")
    from mlib_devel_400g.design import Design
    from mlib_devel_400g.toolflow import Toolflow

    root = REPO_ROOT
    out = tmp_path / "build"
    per = Design(root / "examples" / "pktgen2x400g" / "design.yaml").to_jasper_per(out)
    res = Toolflow(per, out, progress=None).run(backend="none")
    fpg = tmp_path / "pktgen2x400g.fpg"
    fpg.write_bytes(res.fpg_header.read_bytes() + gzip.compress(b"two-port image"))
    return fpg, {d.name: d for d in res.devices}


def test_configure_core_script_configures_both_cores(tmp_path: Path) -> None:
    """The two-port design served by `casper400g board-server`: one run of
    examples/configure_core.py sets gbe1's addresses and leaves gbe0's (its start-up
    values), puts each ARP entry into the core on its subnet, enables both fabrics and
    writes port 1's generator; the server's sensors cover both cores."""
    fpg, devices = _two_port_fpg(tmp_path)
    base = min(d.address for d in devices.values())
    span = max(d.address + d.size for d in devices.values()) - base
    mem = tmp_path / "bus.bin"
    with open(mem, "wb") as f:
        f.truncate(base + span)  # sparse: the window only is ever touched
    g0, g1 = devices["gbe0"].address, devices["gbe1"].address

    def reg(gbe: int, name: str) -> int:
        return word_at(mem, gbe + regmap.REGISTERS[name].offset)

    # gbe0 as its start-up configuration leaves it (the mask's values).
    with open(mem, "r+b") as f:
        for name, value in (
            ("ip", int(ipaddress.IPv4Address("10.0.0.10"))),
            ("netmask", 0xFFFFFF00),
            ("mac_hi", 0x0200),
            ("mac_lo", 0x0A00000A),
            ("port", 7148),
        ):
            f.seek(g0 + regmap.REGISTERS[name].offset)
            f.write(value.to_bytes(4, sys.byteorder))
    root = REPO_ROOT
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    script = [sys.executable, str(root / "examples" / "configure_core.py"), "127.0.0.1"]
    with board_server(fpg, mem, base, 30.0) as (port, _out):
        argv = [*script, "--port", str(port), "--gbe", "gbe0"]
        argv += [
            "--gbe",
            "gbe1:ip=10.0.1.11,mac=02:00:0a:00:01:0b,port=7150,gateway=10.0.1.1,netmask=255.255.255.0",
        ]
        argv += ["--arp", "10.0.1.20=0c:42:a1:00:01:14", "--arp", "10.0.0.20=0c:42:a1:00:00:14"]
        argv += ["--write", "p1_pkt_size=4096"]
        run = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "MAC 02:00:0a:00:00:0a  IP 10.0.0.10  port 7148" in run.stdout
        assert "MAC 02:00:0a:00:01:0b  IP 10.0.1.11  port 7150" in run.stdout
        assert (reg(g0, "ip"), reg(g1, "ip")) == (0x0A00000A, 0x0A00010B)
        assert (reg(g1, "mac_lo"), reg(g1, "port"), reg(g1, "gateway")) == (
            0x0A00010B,
            7150,
            0x0A000101,
        )
        arp = regmap.REGIONS["arp_table"].offset + 8 * 20
        assert (word_at(mem, g0 + arp), word_at(mem, g0 + arp + 4)) == (0x10C42, 0xA1000014)
        assert (word_at(mem, g1 + arp), word_at(mem, g1 + arp + 4)) == (0x10C42, 0xA1000114)
        fabric = regmap.REGISTERS["ctrl"].field("fabric_en")
        assert fabric.get(reg(g0, "ctrl")) == fabric.get(reg(g1, "ctrl")) == 1
        assert word_at(mem, devices["p1_pkt_size"].address) == 4096
        assert word_at(mem, devices["p0_pkt_size"].address) == 0  # port 0's untouched

        fpga = Fpga("127.0.0.1", port=port, timeout=TIMEOUT)
        try:
            fpga.get_system_information()
            assert sorted(fpga.gbes) == ["gbe0", "gbe1"]
            assert (fpga.gbes.gbe1.address, fpga.gbes.gbe1.meta["fab_ip"]) == (g1, "10.0.1.10")
            assert str(fpga.gbes.gbe1.ip_address) == "10.0.1.11"
        finally:
            fpga.transport.close()  # type: ignore[attr-defined]
        raw = Raw(port)
        raw.send(b"?sensor-list")
        names = {ln.split()[1].decode() for ln in raw.until(b"!sensor-list")[:-1]}
        assert {"gbe0.link-up", "gbe1.link-up", "gbe1.tx-frames"} <= names

        bad = subprocess.run(
            [*script, "--port", str(port), "--gbe", "gbe0", "--gbe", "gbe1",
             "--arp", "10.0.9.20=0c:42:a1:00:09:14"],
            capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
        assert bad.returncode == 1
        assert "ARP entry 10.0.9.20 is on no core's subnet (gbe0 10.0.0.10/255.255.255.0" in (
            bad.stderr
        )
    both = subprocess.run(
        [*script, "--gbe", "gbe0", "--gbe", "gbe1", "--ip", "10.0.0.5"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert both.returncode == 2 and "give each its own: --gbe NAME:ip=" in both.stderr
