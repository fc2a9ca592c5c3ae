"""casperfpga_ext against a memory-mapped regular file standing in for the board."""

from __future__ import annotations

import ipaddress
import socketserver
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from conftest import FPG_DEVICES, GBE_BASE, GBE_BLOCK

from casperfpga_ext import addressing
from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext import fpga as fpga_module
from casperfpga_ext.fpg import (
    FpgBlock,
    find_gbes,
    parse_fpg,
    parse_fpg_header,
    read_bitstream,
    write_fpg,
    write_fpg_header,
)
from casperfpga_ext.fpga import Fpga, register_on_import, register_with_casperfpga
from casperfpga_ext.gbe import FourHundredGbe, ReadBackError
from casperfpga_ext.transport import (
    KatcpError,
    KatcpTransport,
    MmapTransport,
    Transport,
    katcp_escape,
    katcp_unescape,
    read_uint,
    write_uint,
)

DEVICES = FPG_DEVICES
BLOCKS = [
    GBE_BLOCK,
    FpgBlock("sys_scratch", "xps:sw_reg", {"io_dir": "From\\ Processor", "names": "reg 0"}),
]
ARP = regmap.REGIONS["arp_table"]


def word_at(path: Path, offset: int) -> int:
    """A word of the board image as the CPU would load it (host byte order)."""
    return int.from_bytes(path.read_bytes()[offset : offset + 4], sys.byteorder)


@pytest.fixture
def image(tmp_path: Path) -> Path:
    path = tmp_path / "bus.bin"
    path.write_bytes(bytes(GBE_BASE + regmap.BLOCK_SIZE))
    return path


@pytest.fixture
def transport(image: Path) -> MmapTransport:
    t = MmapTransport(image, {d.name: (d.address, d.size) for d in DEVICES})
    yield t
    t.close()


@pytest.fixture
def gbe(transport: MmapTransport) -> FourHundredGbe:
    return FourHundredGbe(transport, "gbe0", GBE_BASE)


class RecordingTransport:
    """Passes accesses through and records (kind, offset, size), in order."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.log: list[tuple[str, int, int]] = []

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        self.log.append(("read", offset, size))
        return self.inner.read(device_name, size, offset)

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        self.log.append(("write", offset, len(data)))
        self.inner.blindwrite(device_name, data, offset)

    def listdev(self) -> list[str]:
        return self.inner.listdev()

    def is_connected(self) -> bool:
        return self.inner.is_connected()


class CorruptingTransport(RecordingTransport):
    """Flips bit 0 of the word written at one offset, like a stuck bus line."""

    def __init__(self, inner: Transport, bad_offset: int) -> None:
        super().__init__(inner)
        self.bad_offset = bad_offset

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        buf = bytearray(data)
        if offset <= self.bad_offset < offset + len(data):
            buf[self.bad_offset - offset + 3] ^= 1
        super().blindwrite(device_name, bytes(buf), offset)


# ----------------------------------------------------------------- transport
def test_read_returns_big_endian_words_of_host_order_memory(transport: MmapTransport, image: Path):
    write_uint(transport, "gbe0", 0x11223344, 0x14)
    assert word_at(image, GBE_BASE + 0x14) == 0x11223344
    assert transport.read("gbe0", 4, 0x14) == bytes.fromhex("11223344")
    transport.blindwrite("gbe0", bytes.fromhex("a1b2c3d4 01020304"), 0x18)
    assert word_at(image, GBE_BASE + 0x18) == 0xA1B2C3D4
    assert word_at(image, GBE_BASE + 0x1C) == 0x01020304
    assert read_uint(transport, "gbe0", 0x1C) == 0x01020304
    assert transport.listdev() == ["gbe0", "sys_scratch"]
    assert isinstance(transport, Transport)


@pytest.mark.parametrize(
    ("device", "size", "offset", "message"),
    [
        ("gbe0", 4, 0x10000, "outside the device"),
        ("gbe0", 8, 0xFFFC, "outside the device"),
        ("gbe0", 4, 2, "aligned"),
        ("gbe0", 3, 0, "aligned"),
        ("sys_scratch", 8, 0, "outside the device"),
        ("nope", 4, 0, "unknown device 'nope'"),
    ],
)
def test_accesses_outside_a_device_or_unaligned_are_refused(
    transport: MmapTransport, device: str, size: int, offset: int, message: str
):
    with pytest.raises(ValueError, match=message) as err:
        transport.read(device, size, offset)
    assert device in str(err.value)
    with pytest.raises(ValueError, match=message):
        transport.blindwrite(device, bytes(size), offset)
    if device != "nope":
        assert f"offset {offset:#x}" in str(err.value)


def test_closed_transport_reports_not_connected(image: Path):
    t = MmapTransport(image, {"gbe0": (GBE_BASE, regmap.BLOCK_SIZE)})
    assert t.is_connected()
    t.close()
    assert not t.is_connected()


# ----------------------------------------------------------------- configuration
def test_configure_core_writes_registers_from_the_map(gbe: FourHundredGbe, image: Path):
    gbe.configure_core("02:00:0a:00:00:0a", "10.0.0.10", 7148, "10.0.0.1", "/16")
    regs = regmap.REGISTERS

    def reg(name: str) -> int:
        return word_at(image, GBE_BASE + regs[name].offset)

    assert (reg("mac_hi"), reg("mac_lo")) == (0x0200, 0x0A00000A)
    assert reg("ip") == 0x0A00000A
    assert reg("port") == 7148
    assert reg("gateway") == 0x0A000001
    assert reg("netmask") == 0xFFFF0000
    assert regs["ctrl"].field("fabric_en").get(reg("ctrl")) == 1
    assert regs["ctrl"].field("soft_rst").get(reg("ctrl")) == 1  # the file keeps the pulse
    assert gbe.mac == 0x02000A00000A
    assert gbe.ip_address == 0x0A00000A
    assert gbe.port == 7148


def test_configure_core_accepts_integer_forms(gbe: FourHundredGbe):
    gbe.configure_core(0x0C42A1000001, 0xC0A80102, "9000")
    assert (gbe.mac, gbe.ip_address, gbe.port) == (0x0C42A1000001, 0xC0A80102, 9000)


@pytest.mark.parametrize(
    ("args", "bad"),
    [
        (("zz:00:00:00:00:01", "10.0.0.1", 1), "zz:00:00:00:00:01"),
        ((1 << 48, "10.0.0.1", 1), str(1 << 48)),
        (("02:00:00:00:00:01", "10.0.0.300", 1), "10.0.0.300"),
        (("02:00:00:00:00:01", "10.0.0.1", 70000), "70000"),
        (("02:00:00:00:00:01", "10.0.0.1", 1, "10.0.0.1", "255.0.255.0"), "255.0.255.0"),
        (("02:00:00:00:00:01", 1.5, 1), "1.5"),
    ],
)
def test_bad_inputs_raise_naming_the_value_and_write_nothing(
    gbe: FourHundredGbe, image: Path, args: tuple, bad: str
):
    before = image.read_bytes()
    with pytest.raises(ValueError, match=bad.replace(".", r"\.")):
        gbe.configure_core(*args)
    assert image.read_bytes() == before


@pytest.mark.parametrize("register", ["mac_lo", "ip", "port", "gateway", "ctrl"])
def test_a_write_that_does_not_read_back_makes_configure_core_raise(
    transport: MmapTransport, register: str
):
    offset = regmap.REGISTERS[register].offset
    gbe = FourHundredGbe(CorruptingTransport(transport, offset), "gbe0")
    with pytest.raises(ReadBackError, match=rf"register {register} \({offset:#x}\)"):
        gbe.configure_core("02:00:0a:00:00:0a", "10.0.0.10", 7148, "10.0.0.1")


def test_setters_ttl_checksum_and_fabric(gbe: FourHundredGbe):
    gbe.mac = "0c-42-a1-00-00-07"
    gbe.ip_address = "192.168.1.7"
    gbe.port = 4000
    assert (gbe.mac, gbe.ip_address, gbe.port) == (0x0C42A1000007, 0xC0A80107, 4000)
    gbe.set_ttl(17)
    assert gbe.read_field("ttl", "ttl") == 17
    with pytest.raises(ValueError, match="300"):
        gbe.set_ttl(300)
    gbe.udp_checksum(False)
    assert gbe.read_field("ctrl", "udp_checksum_en") == 0
    gbe.udp_checksum(True)
    assert gbe.read_field("ctrl", "udp_checksum_en") == 1
    gbe.fabric_enable()
    assert gbe.get_gbe_core_details()["fabric_en"]
    gbe.fabric_disable()
    details = gbe.get_gbe_core_details()
    assert not details["fabric_en"]
    assert details["ctrl"]["udp_checksum_en"] == 1
    assert (details["mac"], details["ip"], details["fabric_port"]) == (
        0x0C42A1000007,
        0xC0A80107,
        4000,
    )


def test_print_details_shows_addresses(gbe: FourHundredGbe, capsys: pytest.CaptureFixture[str]):
    gbe.configure_core("02:00:0a:00:00:0a", "10.0.0.10", 7148, "10.0.0.1", "255.255.255.0")
    gbe.set_single_arp_entry("10.0.0.20", "0c:42:a1:00:00:14")
    gbe.print_gbe_core_details(arp=True, cpu=True)
    out = capsys.readouterr().out
    for text in ("02:00:0a:00:00:0a", "10.0.0.10", "7148", "10.0.0.1", "0c:42:a1:00:00:14"):
        assert text in out


# ----------------------------------------------------------------- ARP table
def test_set_arp_table_bulk_list_and_read_back(
    gbe: FourHundredGbe, transport: MmapTransport, image: Path
):
    rec = RecordingTransport(transport)
    gbe = FourHundredGbe(rec, "gbe0")
    macs: list[int | str | None] = [0x0C42A1000000 + i for i in range(ARP.entries)]
    macs[3] = None
    gbe.set_arp_table(macs)
    # One bulk write and one bulk read of the whole table, not a loop of entries.
    assert rec.log == [("write", ARP.offset, ARP.size), ("read", ARP.offset, ARP.size)]
    entry5 = GBE_BASE + ARP.offset + 5 * ARP.entry_bytes
    assert (word_at(image, entry5), word_at(image, entry5 + 4)) == (0x10C42, 0xA1000005)
    details = gbe.get_arp_entries()
    assert len(details) == ARP.entries
    assert details[3]["valid"] is False
    assert all(d["valid"] and d["mac"] == macs[d["index"]] for d in details if d["index"] != 3)
    assert details[200]["mac_str"] == "0c:42:a1:00:00:c8"


def test_set_arp_table_from_mapping_invalidates_the_rest(gbe: FourHundredGbe):
    gbe.set_arp_table([0x0C42A1000000] * ARP.entries)
    gbe.set_arp_table({1: "02:00:0a:00:00:01", "10.0.0.77": 0x0C42A100004D})
    valid = {d["index"]: d["mac"] for d in gbe.get_arp_entries() if d["valid"]}
    assert valid == {1: 0x02000A000001, 77: 0x0C42A100004D}


def test_set_arp_table_wrong_length_and_bad_mac(gbe: FourHundredGbe):
    with pytest.raises(ValueError, match=r"1\.\.256 MACs, got 257"):
        gbe.set_arp_table([1] * 257)
    with pytest.raises(ValueError, match=r"1\.\.256 MACs, got 0"):
        gbe.set_arp_table([])
    with pytest.raises(ValueError, match="nonsense"):
        gbe.set_arp_table({5: "nonsense"})


def test_set_arp_table_names_the_first_entry_that_does_not_read_back(transport: MmapTransport):
    bad = ARP.offset + 37 * ARP.entry_bytes + 4
    gbe = FourHundredGbe(CorruptingTransport(transport, bad), "gbe0")
    with pytest.raises(ReadBackError, match="ARP entry 37 "):
        gbe.set_arp_table([0x0C42A1000000 + i for i in range(ARP.entries)])


def test_single_arp_entry_uses_the_last_octet(gbe: FourHundredGbe):
    gbe.set_single_arp_entry("10.0.0.20", "0c:42:a1:00:00:14")
    gbe.set_single_arp_entry(0x0A000015, 0x0C42A1000015)
    details = gbe.get_arp_entries(N=22)
    assert len(details) == 22
    assert [d["index"] for d in details if d["valid"]] == [20, 21]
    assert details[21]["mac"] == 0x0C42A1000015
    gbe.set_single_arp_entry("10.0.0.20", None)
    assert not gbe.get_arp_entries(N=21)[20]["valid"]


# ----------------------------------------------------------------- counters
def test_64_bit_counters_are_read_low_word_first(transport: MmapTransport):
    rec = RecordingTransport(transport)
    gbe = FourHundredGbe(rec, "gbe0")
    reg = regmap.REGISTERS["tx_frames"]
    transport.blindwrite("gbe0", (5).to_bytes(4, "big") + (7).to_bytes(4, "big"), reg.offset)
    assert gbe.read_reg("tx_frames") == (7 << 32) | 5
    assert rec.log == [("read", reg.offset, 4), ("read", reg.offset + 4, 4)]


def test_counter_groups(gbe: FourHundredGbe, transport: MmapTransport):
    for k, name in enumerate(regmap.COUNTERS):
        reg = regmap.REGISTERS[name]
        value = (k + 1) * 0x1_0000_0003 if reg.width == 64 else k + 1
        data = value.to_bytes(8, "little")
        words = [int.from_bytes(data[i : i + 4], "little") for i in (0, 4)][: reg.width // 32]
        transport.blindwrite("gbe0", b"".join(w.to_bytes(4, "big") for w in words), reg.offset)
    everything = gbe.read_core_counters()
    assert list(everything) == list(regmap.COUNTERS)
    drops = gbe.rx_drop_counters()
    assert all(n.startswith("rx_drop_") for n in drops) and len(drops) == 15

    def want(name: str) -> int:
        k = regmap.COUNTERS.index(name) + 1
        return k * 0x1_0000_0003 if regmap.REGISTERS[name].width == 64 else k

    # casperfpga's names (Gbe.rx_okay/tx_okay look for these), then the core's others.
    tx, rx = gbe.read_tx_counters(), gbe.read_rx_counters()
    assert tx["gbe0_txctr"] == want("tx_packet_counter")
    assert tx["gbe0_txvldctr"] == want("tx_valid_counter")
    assert tx["gbe0_txerrctr"] == want("tx_arp_miss") + want("tx_overflow")
    assert rx["gbe0_rxctr"] == want("rx_packet_counter")
    assert rx["gbe0_rxbadctr"] == want("rx_bad_counter")
    assert rx["gbe0_rxerrctr"] == want("rx_drop_fcs")
    assert tx["gbe0_tx_frames"] == want("tx_frames")
    assert rx["gbe0_rx_drop_arp"] == want("rx_drop_arp")
    assert "gbe0_tx_packet_counter" not in tx  # reported as gbe0_txctr
    assert all(n.startswith("gbe0_tx") for n in tx) and all(n.startswith("gbe0_rx") for n in rx)
    assert gbe.read_counters() == {**tx, **rx}
    assert gbe.registers == {"tx": list(tx), "rx": list(rx)}


def test_link_status_decodes_fields(gbe: FourHundredGbe, transport: MmapTransport):
    write_uint(transport, "gbe0", 0x00B5, regmap.REGISTERS["link_status"].offset)
    write_uint(transport, "gbe0", 3, regmap.REGISTERS["link_retries"].offset)
    status = gbe.link_status()
    assert status["state"] == 5
    assert status["link_up"] == 1
    assert status["gt_tx_ready"] == 1 and status["gt_rx_ready"] == 1
    assert status["rx_aligned"] == 0
    assert status["retries"] == 3


# ----------------------------------------------------------------- .fpg files
def test_fpg_round_trip(tmp_path: Path):
    path = tmp_path / "design.fpg"
    write_fpg(path, DEVICES, BLOCKS, b"bitstream bytes")
    header = parse_fpg(path)
    assert header.devices == {d.name: d for d in DEVICES}
    assert header.blocks["gbe0"].params == BLOCKS[0].params
    assert header.blocks["sys_scratch"].params["names"] == "reg 0"
    assert b"reg\\_0" in path.read_bytes()
    assert read_bitstream(path) == b"bitstream bytes"
    gbes = find_gbes(path)
    assert [(g.name, g.address, g.size) for g in gbes] == [("gbe0", GBE_BASE, 0x10000)]
    assert gbes[0].meta["fab_udp"] == "7148"


@pytest.mark.parametrize(
    ("lines", "lineno", "message"),
    [
        (["#!/bin/sh"], 1, "#!/bin/kcpfpg"),
        (["#!/bin/kcpfpg", "?uploadbin", "?register\tx\t0xZZ\t0x4", "?quit"], 3, "0xZZ"),
        (["#!/bin/kcpfpg", "?register\tx\t0x0"], 2, "needs name"),
        (["#!/bin/kcpfpg", "?progdev", "?quit"], 2, "unknown header command"),
        (["#!/bin/kcpfpg", "?meta\tb\txps:a\tp\tv", "?meta\tb\txps:b\tq\tv", "?quit"], 3, "tagged"),
        (["#!/bin/kcpfpg", "?uploadbin"], 3, "without \\?quit"),
        (["#!/bin/kcpfpg", f"?register\tx\t{1 << 64:#x}\t0x4"], 2, "exceeds the 64-bit"),
        (["#!/bin/kcpfpg", "?register\tx\t0x0\t" + "9" * 30], 2, "9{30}' exceeds the 64"),
        (["#!/bin/kcpfpg", "?register\tx\t0x0\t" + "9" * 50], 2, "'9999.*' is not a"),
        (["#!/bin/kcpfpg", "?register\tx\t-16\t0x4"], 2, "'-16' is not a number"),
        (["#!/bin/kcpfpg", "?register\tx\t0x0\t1_0"], 2, "'1_0' is not a number"),
        (["#!/bin/kcpfpg", "?register\tx\t 16\t0x4"], 2, "' 16' is not a number"),
    ],
)
def test_fpg_errors_name_file_and_line(lines: list[str], lineno: int, message: str):
    with pytest.raises(ValueError, match=message) as err:
        parse_fpg_header(("\n".join(lines) + "\n").encode(), "bad.fpg")
    assert str(err.value).startswith(f"bad.fpg:{lineno}:")


def test_gbe_block_without_register_is_an_error():
    header = parse_fpg_header(write_fpg_header(DEVICES[:1], BLOCKS), "x.fpg")
    with pytest.raises(ValueError, match=r"x\.fpg: .*'gbe0' has no \?register"):
        find_gbes(header)


# ----------------------------------------------------------------- Fpga
def test_fpga_discovers_gbes_and_configures_through_them(tmp_path: Path, image: Path):
    fpg_path = tmp_path / "design.fpg"
    write_fpg(fpg_path, DEVICES, BLOCKS, b"")
    header = parse_fpg(fpg_path)
    with MmapTransport(image, {d.name: (d.address, d.size) for d in DEVICES}) as t:
        fpga = Fpga(t, fpg_path)
        assert list(fpga.gbes) == ["gbe0"]
        gbe = fpga.gbes.gbe0
        assert gbe is fpga.gbes["gbe0"]
        assert (gbe.address, gbe.meta["fab_ip"]) == (GBE_BASE, "10.0.0.10")
        meta = gbe.meta
        gbe.configure_core(meta["fab_mac"], meta["fab_ip"], meta["fab_udp"])
        assert fpga.read_int("gbe0", regmap.REGISTERS["ip"].offset // 4) == 0x0A00000A
        fpga.write_int("sys_scratch", -2)
        assert fpga.read_int("sys_scratch") == -2
        assert fpga.read("sys_scratch", 4) == bytes.fromhex("fffffffe")
        assert fpga.listdev() == sorted(header.devices)
        with pytest.raises(AttributeError, match="gbe1"):
            _ = fpga.gbes.gbe1
        with pytest.raises(ValueError, match="does not fit"):
            fpga.write_int("sys_scratch", 1 << 32)


def test_register_with_casperfpga_without_casperfpga(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "casperfpga", None)
    monkeypatch.setitem(sys.modules, "casperfpga.casperfpga", None)
    assert register_with_casperfpga() is False


def test_register_with_casperfpga_adds_our_tag(
    monkeypatch: pytest.MonkeyPatch, transport: MmapTransport
):
    package = types.ModuleType("casperfpga")
    package.__path__ = []
    module = types.ModuleType("casperfpga.casperfpga")
    module.CASPER_MEMORY_DEVICES = {"xps:sw_reg": {"class": object, "container": "registers"}}
    package.casperfpga = module
    monkeypatch.setitem(sys.modules, "casperfpga", package)
    monkeypatch.setitem(sys.modules, "casperfpga.casperfpga", module)
    assert register_with_casperfpga() is True
    entry = module.CASPER_MEMORY_DEVICES["xps:fourhundred_gbe"]
    assert entry == {"class": FourHundredGbe, "container": "gbes"}
    assert "xps:sw_reg" in module.CASPER_MEMORY_DEVICES
    # casperfpga builds each device through from_device_info with its memory map.
    gbe = entry["class"].from_device_info(
        transport,
        "gbe0",
        {"tag": "xps:fourhundred_gbe", "fab_udp": "7148"},
        {"gbe0": {"address": GBE_BASE, "bytes": 0x10000}},
    )
    gbe.port = 7148
    assert (gbe.address, gbe.meta["fab_udp"], gbe.port) == (GBE_BASE, "7148", 7148)
    with pytest.raises(RuntimeError, match="gbe9"):
        FourHundredGbe.from_device_info(transport, "gbe9", {}, {})


def test_register_with_casperfpga_without_table_raises(monkeypatch: pytest.MonkeyPatch):
    package = types.ModuleType("casperfpga")
    package.__path__ = []
    module = types.ModuleType("casperfpga.casperfpga")
    monkeypatch.setitem(sys.modules, "casperfpga", package)
    monkeypatch.setitem(sys.modules, "casperfpga.casperfpga", module)
    with pytest.raises(RuntimeError, match="CASPER_MEMORY_DEVICES"):
        register_with_casperfpga()


# ----------------------------------------------------------------- KATCP
class FakeBoardServer(socketserver.StreamRequestHandler):
    """A KATCP board server over one device held as big-endian bytes."""

    memory: ClassVar[bytearray] = bytearray(regmap.BLOCK_SIZE)
    requests: ClassVar[list[bytes]] = []

    def handle(self) -> None:
        for raw in self.rfile:
            words = raw.rstrip(b"\n").split(b" ")
            self.requests.append(words[0])
            args = [katcp_unescape(w) for w in words[1:]]
            self.wfile.write(b"#log info 0 fake noise\n")
            if words[0] == b"?listdev":
                self.wfile.write(b"#listdev gbe0\n#listdev sys_scratch\n!listdev ok 2\n")
            elif words[0] == b"?read" and args[0] == b"gbe0":
                offset, size = int(args[1]), int(args[2])
                data = katcp_escape(bytes(self.memory[offset : offset + size]))
                self.wfile.write(b"!read ok " + data + b"\n")
            elif words[0] == b"?write" and args[0] == b"gbe0":
                offset = int(args[1])
                self.memory[offset : offset + len(args[2])] = args[2]
                self.wfile.write(b"!write ok\n")
            else:
                name = words[0][1:]
                self.wfile.write(b"!" + name + b" fail unknown\\_device\n")


@pytest.fixture
def katcp() -> Iterator[KatcpTransport]:
    FakeBoardServer.memory = bytearray(regmap.BLOCK_SIZE)
    FakeBoardServer.requests = []
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), FakeBoardServer)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    transport = KatcpTransport("127.0.0.1", server.server_address[1], timeout=5)
    yield transport
    transport.close()
    server.shutdown()
    server.server_close()


def test_katcp_escaping_round_trips_every_byte():
    data = bytes(range(256)) + b"\\_ \\@"
    escaped = katcp_escape(data)
    assert not set(escaped) & {0, 9, 10, 13, 27, 32}
    assert katcp_unescape(escaped) == data
    assert katcp_escape(b"") == b"\\@" and katcp_unescape(b"\\@") == b""
    with pytest.raises(ValueError, match="bad KATCP escape"):
        katcp_unescape(b"a\\q")


def test_katcp_transport_configures_the_core(katcp: KatcpTransport):
    gbe = FourHundredGbe(katcp, "gbe0")
    # 0x20 and 0x0a bytes in the values exercise the escaping of binary data.
    gbe.configure_core("02:20:0a:00:0d:0a", "10.32.0.10", 0x0A20, "10.32.0.1")
    mem = FakeBoardServer.memory
    ip_offset = regmap.REGISTERS["ip"].offset
    assert bytes(mem[ip_offset : ip_offset + 4]) == bytes([10, 32, 0, 10])
    assert (gbe.mac, gbe.ip_address, gbe.port) == (0x02200A000D0A, 0x0A20000A, 0x0A20)
    gbe.set_arp_table({i: 0x0C42A1002000 + i for i in range(0, 256, 7)})
    assert sum(e["valid"] for e in gbe.get_arp_entries()) == len(range(0, 256, 7))
    assert katcp.listdev() == ["gbe0", "sys_scratch"]
    assert b"?write" in FakeBoardServer.requests and b"?read" in FakeBoardServer.requests


def test_katcp_errors_are_reported(katcp: KatcpTransport):
    with pytest.raises(KatcpError, match="unknown device"):
        katcp.read("nope", 4, 0)
    with pytest.raises(ValueError, match="aligned"):
        katcp.blindwrite("gbe0", b"abc", 0)
    katcp.close()
    assert not katcp.is_connected()
    with pytest.raises(KatcpError, match="not connected"):
        katcp.read("gbe0", 4, 0)


# ----------------------------------------------------------------- OneHundredGbe contract
# casperfpga's OneHundredGbe/TenGbe/Gbe API, checked against the register file here;
# tests/casperfpga_ext/test_casperfpga_api.py compares the signatures with the real casperfpga's.
def reg_word(image: Path, name: str) -> int:
    return word_at(image, GBE_BASE + regmap.REGISTERS[name].offset)


def arp_words(image: Path, index: int) -> tuple[int, int]:
    at = GBE_BASE + ARP.offset + index * ARP.entry_bytes
    return word_at(image, at), word_at(image, at + 4)


def test_configure_core_takes_casperfpga_objects_and_numpy(gbe: FourHundredGbe, image: Path):
    gbe.configure_core(
        addressing.Mac("02:00:0a:00:00:0b"),
        addressing.IpAddress("10.0.0.11"),
        np.uint16(7149),
        ipaddress.IPv4Address("10.0.0.1"),
        np.uint32(0xFFFF0000),
    )
    assert (reg_word(image, "mac_hi"), reg_word(image, "mac_lo")) == (0x0200, 0x0A00000B)
    assert reg_word(image, "ip") == int(ipaddress.IPv4Address("10.0.0.11"))
    assert reg_word(image, "port") == 7149
    assert reg_word(image, "netmask") == int(ipaddress.IPv4Network("0.0.0.0/16").netmask)
    # The properties are Mac/IpAddress objects (casperfpga's when it is installed).
    assert isinstance(gbe.mac, addressing.Mac) and gbe.mac.mac_str == "02:00:0A:00:00:0B"
    assert isinstance(gbe.ip_address, addressing.IpAddress) and str(gbe.ip_address) == "10.0.0.11"
    assert str(gbe) == "gbe0: MAC(02:00:0A:00:00:0B) IP(10.0.0.11) Port(7149)"


def test_configure_core_none_writes_casperfpgas_defaults(gbe: FourHundredGbe, image: Path):
    gbe.configure_core("02:00:0a:00:00:0a", "10.0.0.10", 7148, "10.0.0.1", "/16")
    gbe.configure_core("02:00:0a:00:00:0a", "10.0.0.10", 7148)  # gateway, mask: None
    assert reg_word(image, "gateway") == 1  # TenGbe.configure_core writes 0.0.0.1
    assert reg_word(image, "netmask") == int(ipaddress.IPv4Address("255.255.255.0"))


def test_set_arp_table_short_lists_macs_numpy_and_empty_entries(gbe: FourHundredGbe, image: Path):
    gbe.set_arp_table([0x0C42A1000000 + i for i in range(256)])
    # casperfpga writes entries 0..len-1 and leaves the rest.
    gbe.set_arp_table([addressing.Mac("0c:42:a1:00:01:00"), addressing.Mac("0c:42:a1:00:01:01")])
    assert arp_words(image, 1) == (0x10C42, 0xA1000101)
    assert arp_words(image, 2) == (0x10C42, 0xA1000002)
    gbe.set_arp_table(np.array([0x0C42A1000200, 0xFFFFFFFFFFFF, 7], dtype=np.uint64))
    assert arp_words(image, 0) == (0x10C42, 0xA1000200)
    assert arp_words(image, 1) == (0, 0)  # 0xffffffffffff: casperfpga's empty entry
    assert arp_words(image, 2) == (0x10000, 7)
    details = gbe.get_arp_details()
    assert [int(m) for m in details[:3]] == [0x0C42A1000200, 0xFFFFFFFFFFFF, 7]
    assert all(hasattr(m, "mac_int") for m in details) and len(details) == 256
    gbe.set_single_arp_entry("10.0.0.9", addressing.Mac("0c:42:a1:00:00:09"))
    gbe.set_single_arp_entry(addressing.IpAddress("10.0.0.9"), 0xFFFFFFFFFFFF)
    assert arp_words(image, 9) == (0, 0)


def test_details_multicast_and_printing(gbe: FourHundredGbe, capsys: pytest.CaptureFixture[str]):
    gbe.configure_core("02:00:0a:00:00:0a", "10.0.0.10", 7148, "10.0.0.1", "255.255.255.0")
    gbe.set_arp_table({20: "0c:42:a1:00:00:14"})
    gbe.multicast_receive("239.2.0.4", 4)
    d = gbe.get_gbe_core_details(read_arp=True, read_multicast=True)
    assert d is gbe.core_details
    assert d["ip_prefix"] == "10.0.0" and d["fabric_en"] is True
    assert str(d["multicast"]["base_ip"]) == "239.2.0.4"
    assert str(d["multicast"]["ip_mask"]) == "255.255.255.252"
    assert sorted(str(ip) for ip in d["multicast"]["rx_ips"]) == [
        f"239.2.0.{k}" for k in (4, 5, 6, 7)
    ]
    assert gbe.multicast_subscriptions == ["239.2.0.4"]
    gbe.print_arp_details(refresh=False, only_hits=True)
    out = capsys.readouterr().out
    assert "IP[7:0]  20 -> 0c:42:a1:00:00:14" in out and "IP[7:0]  21" not in out
    gbe.print_arp_details()
    assert "IP[7:0]  21 -> (empty)" in capsys.readouterr().out
    gbe.multicast_remove("239.2.0.4")
    assert gbe.read_reg("mc_mask") == 0 and gbe.multicast_subscriptions == []
    with pytest.raises(RuntimeError, match=r"not receiving multicast 239\.2\.0\.4"):
        gbe.multicast_remove("239.2.0.4")
    with pytest.raises(ValueError, match="power of two"):
        gbe.multicast_receive("239.2.0.4", 3)
    with pytest.raises(ValueError, match="not an IPv4 multicast"):
        gbe.multicast_receive("10.0.0.1", 1)


def test_cpu_details_from_the_buffers(gbe: FourHundredGbe, transport: MmapTransport):
    frame = bytes(range(20))
    transport.blindwrite("gbe0", frame, regmap.REGIONS["cpu_tx_buf"].offset)
    write_uint(transport, "gbe0", len(frame), regmap.REGISTERS["cpu_tx_len"].offset)
    write_uint(transport, "gbe0", 12, regmap.REGISTERS["cpu_rx_len"].offset)
    d = gbe.get_cpu_details()
    assert d["cpu_tx"][0] == list(range(8)) and d["cpu_tx"][16] == [16, 17, 18, 19, 0, 0, 0, 0]
    assert sorted(d["cpu_tx"]) == [0, 8, 16] and d["cpu_rx_buf_unack_data"] == 12
    assert sorted(d["cpu_rx"]) == [0, 8, 16]
    dump = transport.read("gbe0", regmap.BLOCK_SIZE, 0)
    assert gbe.get_cpu_details(port_dump=dump) == d


def test_okay_checks_follow_casperfpgas_counters(gbe: FourHundredGbe, transport: MmapTransport):
    assert not gbe.tx_okay(wait_time=0, checks=2)  # nothing moving
    values = iter(range(100))
    real_read = gbe.read_tx_counters

    def moving() -> dict[str, int]:  # datagrams and words go out, nothing else moves
        value = next(values)
        for name in ("tx_packet_counter", "tx_valid_counter"):
            write_uint(transport, "gbe0", value, regmap.REGISTERS[name].offset)
        return real_read()

    gbe.read_tx_counters = moving  # type: ignore[method-assign]
    assert gbe.tx_okay(wait_time=0, checks=3)
    with pytest.raises(RuntimeError, match="twice"):
        gbe.rx_okay(checks=1)


def test_what_does_not_apply_says_why(gbe: FourHundredGbe):
    with pytest.raises(NotImplementedError, match="no DHCP client"):
        gbe.dhcp_start()
    with pytest.raises(RuntimeError, match="no gbe0_txs_ss snapshot"):
        gbe.read_txsnap()
    with pytest.raises(RuntimeError, match="no gbe0_rxs_ss snapshot"):
        gbe.read_rxsnap()
    with pytest.raises(RuntimeError, match="write registers by name"):
        gbe.write_raw(1)
    with pytest.raises(NotImplementedError, match="configure_core"):
        gbe.setup("02:00:0a:00:00:0a", "10.0.0.10", 7148)
    assert gbe.tap_info() == {"name": "", "ip": ""} and gbe.tap_arp_reload() is None


def test_memory_interface(gbe: FourHundredGbe, transport: MmapTransport):
    gbe.write(ttl=17, port=4000)
    assert gbe.read()["data"]["ttl"] == 17 and gbe.read()["data"]["port"] == 4000
    raw, stamp = gbe.read_raw(size=8, offset=regmap.REGISTERS["ttl"].offset)
    assert raw[:4] == (17).to_bytes(4, "big") and stamp > 0
    assert gbe.length_in_words() == regmap.BLOCK_SIZE // 4 and gbe.width_bits == 32
    assert gbe.fullname == ":gbe0" and gbe.block_info == {} and repr(gbe) == "FourHundredGbe:gbe0"
    with pytest.raises(ValueError, match="no register 'nope'"):
        gbe.write(nope=1)


def test_post_create_update_adds_the_designs_registers_and_snapshots(transport: MmapTransport):
    class Named:
        def __init__(self, name: str) -> None:
            self.name = name

        def read(self, timeout: float = 0) -> dict:
            return {"data": {"reg": 5, "name": self.name}}

    class Parent:  # what casperfpga's CasperFpga offers a core after building devices
        def __init__(self) -> None:
            self.host = "board"
            self.registers = [Named(n) for n in ("gbe0_txbadframe", "gbe0_rxs_ctrl", "x_tx")]
            self.snapshots = [Named("gbe0_txs_ss")]
            self.memory_devices = {"gbe0_txbadframe": Named("gbe0_txbadframe")}

        def read(self, name: str, size: int, offset: int = 0) -> bytes:
            return transport.read(name, size, offset)

    gbe = FourHundredGbe(Parent(), "gbe0", GBE_BASE, regmap.BLOCK_SIZE, {"fab_udp": "7148"})
    gbe.post_create_update({})
    assert gbe.fullname == "board:gbe0"
    assert "gbe0_txbadframe" in gbe.registers["tx"] and "gbe0_rxs_ctrl" not in gbe.registers["rx"]
    assert gbe.read_tx_counters()["gbe0_txbadframe"] == 5
    assert gbe.read_txsnap()["name"] == "gbe0_txs_ss"
    with pytest.raises(ValueError, match="fab_mac"):
        FourHundredGbe(Parent(), "gbe0", device_info={"fab_mac": "nonsense"})


def test_a_broken_casperfpga_does_not_stop_the_import(monkeypatch: pytest.MonkeyPatch):
    """casperfpga installed but failing to import (a missing dependency of its own):
    ``import casperfpga_ext`` warns and works without it."""

    def broken(name: str) -> types.ModuleType:
        raise ModuleNotFoundError("No module named 'backports'", name="backports")

    monkeypatch.setattr(fpga_module.importlib, "import_module", broken)
    with pytest.raises(ModuleNotFoundError, match="backports"):
        register_with_casperfpga()
    with pytest.warns(RuntimeWarning, match="could not be imported.*backports"):
        assert register_on_import() is False
