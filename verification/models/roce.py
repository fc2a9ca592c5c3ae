"""RoCEv2 RDMA WRITE frames: a builder and a checker (the golden model of the RDMA mode).

A RoCEv2 packet is an IPv4/UDP datagram to port 4791 carrying an InfiniBand Base
Transport Header (BTH), the extended headers its opcode calls for (RETH for the first or
only packet of an RDMA WRITE, ImmDt for the last or only packet of one with immediate),
the payload padded to a multiple of 4 bytes, and a 4-byte invariant CRC (ICRC, IBTA
Annex A17). Everything is packed with :mod:`struct` and the ICRC is computed with
:func:`zlib.crc32` from the masking rules of the specification; the tests check the bytes
against scapy's RoCE layers and the Linux kernel's ``rdma_rxe`` accepts them
(``verification/softroce``).

The ICRC is the Ethernet CRC-32 over: 8 bytes of 0xFF (standing in for the IB local
route header), the IPv4 header with TOS, TTL and header checksum set to all ones, the UDP
header with its checksum set to all ones, the BTH with its FECN/BECN/reserved byte set to
all ones, then the rest of the packet up to the ICRC. It travels least significant byte
first (the byte order of the Ethernet FCS).
"""

from __future__ import annotations

import ipaddress
import random
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from enum import IntEnum

ROCE_V2_UDP_PORT = 4791
ETHERTYPE_IPV4 = 0x0800
DEFAULT_PKEY = 0xFFFF
# The first UDP source port of the range RoCEv2 recommends for flow entropy.
ROCE_V2_SPORT_BASE = 0xC000

ETH_BYTES = 14
IPV4_BYTES = 20
UDP_BYTES = 8
BTH_BYTES = 12
RETH_BYTES = 16
IMMDT_BYTES = 4
ICRC_BYTES = 4
# Ethernet + IPv4 + UDP + BTH + RETH + ICRC: the per-packet overhead of a WRITE ONLY.
WRITE_ONLY_OVERHEAD = ETH_BYTES + IPV4_BYTES + UDP_BYTES + BTH_BYTES + RETH_BYTES + ICRC_BYTES
# What the wire adds to a frame: FCS (4), preamble/SFD (8), inter-frame gap (12).
ETHERNET_WIRE_EXTRA = 24
PATH_MTUS = (256, 512, 1024, 2048, 4096)

_MASK24 = 0xFF_FFFF
_ICRC_PREFIX = b"\xff" * 8

_ETH = struct.Struct("!6s6sH")
_IPV4 = struct.Struct("!BBHHHBBH4s4s")
_UDP = struct.Struct("!HHHH")
_BTH = struct.Struct("!BBHII")
_RETH = struct.Struct("!QII")
_IMMDT = struct.Struct("!I")


class Transport(IntEnum):
    """The transport field of the opcode (its three top bits)."""

    RC = 0x00
    UC = 0x20


class Operation(IntEnum):
    """The RDMA WRITE operations (the opcode's five low bits)."""

    RDMA_WRITE_FIRST = 0x06
    RDMA_WRITE_MIDDLE = 0x07
    RDMA_WRITE_LAST = 0x08
    RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09
    RDMA_WRITE_ONLY = 0x0A
    RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0B


_HAS_RETH = {
    Operation.RDMA_WRITE_FIRST,
    Operation.RDMA_WRITE_ONLY,
    Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE,
}
_HAS_IMM = {Operation.RDMA_WRITE_LAST_WITH_IMMEDIATE, Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE}


def opcode(transport: Transport, operation: Operation) -> int:
    return int(transport) | int(operation)


def split_opcode(value: int) -> tuple[Transport, Operation]:
    """The transport and operation of a BTH opcode; ValueError for any other opcode."""
    try:
        return Transport(value & 0xE0), Operation(value & 0x1F)
    except ValueError:
        raise ValueError(f"opcode {value:#04x} is not an RC/UC RDMA WRITE") from None


class RoceFrameError(ValueError):
    """A frame the checker rejects; ``reason`` names the check (a counter's name)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def _mac_bytes(mac: int | str) -> bytes:
    if isinstance(mac, str):
        parts = mac.replace("-", ":").split(":")
        if len(parts) != 6 or not all(len(p) == 2 for p in parts):
            raise ValueError(f"bad MAC {mac!r}")
        return bytes(int(p, 16) for p in parts)
    if not 0 <= mac < 1 << 48:
        raise ValueError(f"MAC {mac:#x} is not 48-bit")
    return mac.to_bytes(6, "big")


def _check_range(name: str, value: int, bits: int) -> None:
    if not 0 <= value < 1 << bits:
        raise ValueError(f"{name} {value:#x} does not fit in {bits} bits")


def ipv4_checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``; 0 when ``data`` includes a valid one."""
    data = data + b"\0" * (len(data) % 2)
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _udp_checksum(src: bytes, dst: bytes, udp: bytes) -> int:
    value = ipv4_checksum(src + dst + struct.pack("!BBH", 0, 17, len(udp)) + udp)
    return value or 0xFFFF  # a computed 0 is sent as all ones (RFC 768)


def icrc(ip_packet: bytes) -> int:
    """The ICRC of an IPv4 RoCEv2 packet given from its IP header up to (not incl.) the ICRC."""
    if len(ip_packet) < IPV4_BYTES + UDP_BYTES + BTH_BYTES:
        raise ValueError(f"{len(ip_packet)} bytes are too short for IPv4 + UDP + BTH")
    ihl = (ip_packet[0] & 0x0F) * 4
    masked = bytearray(ip_packet)
    masked[1] = 0xFF  # TOS (DSCP + ECN): rewritten hop by hop
    masked[8] = 0xFF  # TTL
    masked[10:12] = b"\xff\xff"  # header checksum
    masked[ihl + 6 : ihl + 8] = b"\xff\xff"  # UDP checksum
    masked[ihl + UDP_BYTES + 4] = 0xFF  # BTH FECN, BECN and reserved bits
    return zlib.crc32(_ICRC_PREFIX + bytes(masked)) & 0xFFFF_FFFF


@dataclass(frozen=True)
class RdmaWrite:
    """One RoCEv2 packet of an RDMA WRITE (fields as they appear on the wire)."""

    src_mac: int | str
    dst_mac: int | str
    src_ip: str | ipaddress.IPv4Address
    dst_ip: str | ipaddress.IPv4Address
    dest_qp: int
    psn: int
    payload: bytes
    va: int = 0
    rkey: int = 0
    dma_length: int | None = None  # RETH DMA length; the payload's length when None
    immediate: int | None = None
    operation: Operation = Operation.RDMA_WRITE_ONLY
    transport: Transport = Transport.UC
    src_port: int = ROCE_V2_SPORT_BASE
    ip_id: int = 0
    ttl: int = 64
    tos: int = 0
    pkey: int = DEFAULT_PKEY
    solicited: bool = False
    ack_request: bool = False
    udp_checksum: bool = False  # RoCEv2 over IPv4 may leave it 0: the ICRC covers the packet

    def __post_init__(self) -> None:
        for name, bits in (("dest_qp", 24), ("psn", 24), ("va", 64), ("rkey", 32),
                           ("src_port", 16), ("ip_id", 16), ("ttl", 8), ("tos", 8),
                           ("pkey", 16)):  # fmt: skip
            _check_range(name, getattr(self, name), bits)
        if self.dma_length is not None:
            _check_range("dma_length", self.dma_length, 32)
        has_imm = self.operation in _HAS_IMM
        if has_imm != (self.immediate is not None):
            raise ValueError(
                f"{self.operation.name} {'needs' if has_imm else 'takes no'} immediate "
                f"(got {self.immediate!r})"
            )
        if self.immediate is not None:
            _check_range("immediate", self.immediate, 32)


def random_write(
    rng: random.Random,
    payload_size: int | Callable[[], int],
    immediate: bool,
    *,
    any_src_port: bool = False,
    any_udp_checksum: bool = False,
) -> RdmaWrite:
    """A WRITE ONLY packet (with Immediate when ``immediate``) whose every header field is
    drawn from ``rng``: stimulus for the ICRC checks. ``payload_size`` is drawn after the
    addresses when it is a callable; the source port and the UDP checksum are drawn only
    when asked for (else their defaults)."""
    src_mac, dst_mac = rng.getrandbits(48), rng.getrandbits(48)
    src_ip, dst_ip = rng.getrandbits(32), rng.getrandbits(32)
    dest_qp, psn = rng.getrandbits(24), rng.getrandbits(24)
    payload = rng.randbytes(payload_size if isinstance(payload_size, int) else payload_size())
    va, rkey = rng.getrandbits(64), rng.getrandbits(32)
    imm = rng.getrandbits(32) if immediate else None
    src_port = rng.getrandbits(16) if any_src_port else ROCE_V2_SPORT_BASE
    ip_id, ttl, tos = rng.getrandbits(16), rng.getrandbits(8), rng.getrandbits(8)
    return RdmaWrite(
        src_mac=src_mac,
        dst_mac=dst_mac,
        src_ip=ipaddress.IPv4Address(src_ip),
        dst_ip=ipaddress.IPv4Address(dst_ip),
        dest_qp=dest_qp,
        psn=psn,
        payload=payload,
        va=va,
        rkey=rkey,
        immediate=imm,
        operation=(
            Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE if immediate else Operation.RDMA_WRITE_ONLY
        ),
        src_port=src_port,
        ip_id=ip_id,
        ttl=ttl,
        tos=tos,
        udp_checksum=any_udp_checksum and rng.random() < 0.3,
    )


def build_frame(w: RdmaWrite) -> bytes:
    """The Ethernet frame (no FCS) of one RDMA WRITE packet, ICRC included."""
    pad = -len(w.payload) % 4
    bth = _BTH.pack(
        opcode(w.transport, w.operation),
        (w.solicited << 7) | (pad << 4),  # SE, MigReq 0, PadCnt, TVer 0
        w.pkey,
        w.dest_qp,  # FECN/BECN/reserved byte 0, then the 24-bit destination QP
        (w.ack_request << 31) | w.psn,
    )
    ext = b""
    if w.operation in _HAS_RETH:
        length = len(w.payload) if w.dma_length is None else w.dma_length
        ext += _RETH.pack(w.va, w.rkey, length)
    if w.immediate is not None:
        ext += _IMMDT.pack(w.immediate)
    transport = bth + ext + w.payload + b"\0" * pad
    udp_len = UDP_BYTES + len(transport) + ICRC_BYTES
    src = ipaddress.IPv4Address(w.src_ip).packed
    dst = ipaddress.IPv4Address(w.dst_ip).packed
    ip_hdr = _IPV4.pack(0x45, w.tos, IPV4_BYTES + udp_len, w.ip_id, 0x4000, w.ttl, 17, 0, src, dst)
    ip_hdr = ip_hdr[:10] + struct.pack("!H", ipv4_checksum(ip_hdr)) + ip_hdr[12:]
    udp = _UDP.pack(w.src_port, ROCE_V2_UDP_PORT, udp_len, 0)
    packet = ip_hdr + udp + transport
    crc = struct.pack("<I", icrc(packet))
    if w.udp_checksum:
        cks = _udp_checksum(src, dst, udp + transport + crc)
        packet = ip_hdr + udp[:6] + struct.pack("!H", cks) + transport
    eth = _ETH.pack(_mac_bytes(w.dst_mac), _mac_bytes(w.src_mac), ETHERTYPE_IPV4)
    return eth + packet + crc


@dataclass(frozen=True)
class ParsedWrite:
    """What :func:`parse_frame` read from a frame that passed every check."""

    src_mac: str
    dst_mac: str
    src_ip: ipaddress.IPv4Address
    dst_ip: ipaddress.IPv4Address
    src_port: int
    transport: Transport
    operation: Operation
    dest_qp: int
    psn: int
    pkey: int
    solicited: bool
    ack_request: bool
    payload: bytes
    va: int | None = None
    rkey: int | None = None
    dma_length: int | None = None
    immediate: int | None = None
    ip_id: int = 0
    ttl: int = 0
    tos: int = 0
    dont_fragment: bool = True
    udp_checksum: int = 0
    icrc: int = field(default=0, repr=False)


def _mac_str(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def parse_frame(frame: bytes) -> ParsedWrite:
    """Check one Ethernet frame (no FCS) as a RoCEv2 RDMA WRITE packet and decode it.

    Raises :class:`RoceFrameError` whose ``reason`` names the first failed check:
    ``short``, ``not_ipv4``, ``ip_header``, ``ip_checksum``, ``ip_length``, ``ip_fragment``,
    ``not_udp``,
    ``not_roce``, ``udp_length``, ``udp_checksum``, ``bth_version``, ``opcode``,
    ``pad``, ``icrc``. Ethernet padding after the IP datagram is ignored.
    """
    if len(frame) < ETH_BYTES + IPV4_BYTES:
        raise RoceFrameError("short", f"{len(frame)} bytes")
    dst_mac, src_mac, ethertype = _ETH.unpack_from(frame)
    if ethertype != ETHERTYPE_IPV4:
        raise RoceFrameError("not_ipv4", f"EtherType {ethertype:#06x}")
    (ver_ihl, tos, total, ident, frag, ttl, proto, _cks, src, dst) = _IPV4.unpack_from(
        frame, ETH_BYTES
    )
    if ver_ihl != 0x45:
        raise RoceFrameError("ip_header", f"version/IHL byte {ver_ihl:#04x} (want 0x45)")
    if ipv4_checksum(frame[ETH_BYTES : ETH_BYTES + IPV4_BYTES]) != 0:
        raise RoceFrameError("ip_checksum", "IPv4 header checksum does not verify")
    if total > len(frame) - ETH_BYTES or total < IPV4_BYTES + UDP_BYTES:
        raise RoceFrameError("ip_length", f"IPv4 total length {total}, frame {len(frame)}")
    packet = frame[ETH_BYTES : ETH_BYTES + total]
    if frag & 0x3FFF:
        raise RoceFrameError("ip_fragment", f"IPv4 fragment (flags/offset {frag:#06x})")
    if proto != 17:
        raise RoceFrameError("not_udp", f"IP protocol {proto}")
    sport, dport, udp_len, udp_cks = _UDP.unpack_from(packet, IPV4_BYTES)
    if dport != ROCE_V2_UDP_PORT:
        raise RoceFrameError("not_roce", f"UDP destination port {dport}")
    if udp_len != total - IPV4_BYTES:
        raise RoceFrameError("udp_length", f"UDP length {udp_len}, IP payload {total - 20}")
    if udp_len < UDP_BYTES + BTH_BYTES + ICRC_BYTES:
        raise RoceFrameError("udp_length", f"UDP length {udp_len} has no room for BTH + ICRC")
    pseudo = src + dst + struct.pack("!BBH", 0, 17, udp_len)
    if udp_cks and ipv4_checksum(pseudo + packet[IPV4_BYTES:]) != 0:
        raise RoceFrameError("udp_checksum", f"UDP checksum {udp_cks:#06x} does not verify")
    body = packet[IPV4_BYTES + UDP_BYTES : -ICRC_BYTES]
    op_byte, flags, pkey, fecn_qp, ack_psn = _BTH.unpack_from(body)
    if flags & 0x0F:
        raise RoceFrameError("bth_version", f"transport header version {flags & 0x0F}")
    try:
        transport, operation = split_opcode(op_byte)
    except ValueError as exc:
        raise RoceFrameError("opcode", str(exc)) from None
    (received,) = struct.unpack("<I", packet[-ICRC_BYTES:])
    expected = icrc(packet[:-ICRC_BYTES])
    if received != expected:
        raise RoceFrameError("icrc", f"ICRC {received:#010x}, computed {expected:#010x}")
    pos = BTH_BYTES
    va = rkey = dma_length = immediate = None
    if operation in _HAS_RETH:
        if len(body) < pos + RETH_BYTES:
            raise RoceFrameError("short", f"{operation.name} without room for its RETH")
        va, rkey, dma_length = _RETH.unpack_from(body, pos)
        pos += RETH_BYTES
    if operation in _HAS_IMM:
        if len(body) < pos + IMMDT_BYTES:
            raise RoceFrameError("short", f"{operation.name} without room for its ImmDt")
        (immediate,) = _IMMDT.unpack_from(body, pos)
        pos += IMMDT_BYTES
    pad = (flags >> 4) & 3
    if len(body) - pos < pad or (len(body) - pos) % 4:
        raise RoceFrameError("pad", f"payload of {len(body) - pos} bytes with PadCnt {pad}")
    payload = body[pos : len(body) - pad]
    return ParsedWrite(
        src_mac=_mac_str(src_mac),
        dst_mac=_mac_str(dst_mac),
        src_ip=ipaddress.IPv4Address(src),
        dst_ip=ipaddress.IPv4Address(dst),
        src_port=sport,
        transport=transport,
        operation=operation,
        dest_qp=fecn_qp & _MASK24,
        psn=ack_psn & _MASK24,
        pkey=pkey,
        solicited=bool(flags & 0x80),
        ack_request=bool(ack_psn >> 31),
        payload=payload,
        va=va,
        rkey=rkey,
        dma_length=dma_length,
        immediate=immediate,
        ip_id=ident,
        ttl=ttl,
        tos=tos,
        dont_fragment=bool(frag & 0x4000),
        udp_checksum=udp_cks,
        icrc=received,
    )


def write_only_packets(
    template: RdmaWrite, data: bytes, mtu: int, immediate: int | None = None
) -> Iterator[RdmaWrite]:
    """``data`` written at ``template.va`` as WRITE ONLY packets of at most ``mtu`` bytes.

    Each packet carries its own RETH (so a lost packet loses only its own bytes) and the
    PSN counts up from ``template.psn`` modulo 2^24. With ``immediate`` the last packet is
    WRITE ONLY with Immediate. An empty ``data`` gives one zero-length packet.
    """
    if mtu not in PATH_MTUS:
        raise ValueError(f"path MTU {mtu} is not one of {PATH_MTUS}")
    offsets = range(0, max(len(data), 1), mtu)
    for n, off in enumerate(offsets):
        last = n == len(offsets) - 1
        chunk = data[off : off + mtu]
        with_imm = last and immediate is not None
        yield replace(
            template,
            payload=chunk,
            va=(template.va + off) & ((1 << 64) - 1),
            psn=(template.psn + n) & _MASK24,
            dma_length=len(chunk),
            operation=(
                Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE if with_imm else Operation.RDMA_WRITE_ONLY
            ),
            immediate=immediate if with_imm else None,
        )


def wire_bytes(frame: bytes) -> int:
    """Bytes a frame (no FCS) occupies on the Ethernet wire, padding to 60 included."""
    return max(len(frame), 60) + ETHERNET_WIRE_EXTRA


def line_goodput_fraction(mtu: int, immediate: bool = False) -> float:
    """Payload share of the line for back-to-back full-MTU WRITE ONLY packets.

    4096-byte packets: 4096 / (4096 + 98) of the line rate, 98 being Ethernet + IPv4 +
    UDP + BTH + RETH + ICRC (74) and the wire's FCS, preamble and gap (24).
    """
    if mtu not in PATH_MTUS:
        raise ValueError(f"path MTU {mtu} is not one of {PATH_MTUS}")
    overhead = WRITE_ONLY_OVERHEAD + ETHERNET_WIRE_EXTRA + (IMMDT_BYTES if immediate else 0)
    return mtu / (mtu + overhead)
