"""Golden frames and reference formulas for the TX path.

Frames are built with scapy so that headers and checksums come from an implementation
independent of the RTL. Next-hop selection re-implements docs/design/core.md §2 with
:mod:`ipaddress`. The example stream payload follows docs/design/architecture.md.
"""

from __future__ import annotations

import ipaddress
import math

import numpy as np
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from casperfpga_ext import addressing

MIN_FRAME_BYTES = 60  # without FCS
HEADER_BYTES = 14 + 20 + 8  # Ethernet II + IPv4 (IHL 5) + UDP
# Headers + FCS (4) + preamble/SFD (8) + inter-frame gap (12).
WIRE_OVERHEAD_BYTES = HEADER_BYTES + 24
MIN_WIRE_BYTES = 64 + 20
EXAMPLE_PAYLOAD_BYTES = 8192
BROADCAST_MAC = 0xFFFF_FFFF_FFFF

IpLike = int | str | ipaddress.IPv4Address
MacLike = int | str


# The project's one address parser (casperfpga_ext.addressing) reads every form.
mac_to_int = addressing.parse_mac
mac_to_str = addressing.format_mac


def ip_to_addr(ip: IpLike) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(addressing.parse_ip(ip))


def expected_udp_frame(
    src_mac: MacLike,
    dst_mac: MacLike,
    src_ip: IpLike,
    dst_ip: IpLike,
    src_port: int,
    dst_port: int,
    ip_id: int,
    ttl: int,
    payload: bytes,
    udp_checksum: bool = True,
) -> bytes:
    """The frame the core must hand to the MAC (no FCS), zero-padded to 60 bytes.

    With ``udp_checksum`` the UDP checksum is computed by scapy (which sends a computed 0
    as 0xFFFF, as RFC 768 and docs/design/core.md require); without it the field is 0.
    """
    udp = UDP(sport=src_port, dport=dst_port)
    if not udp_checksum:
        udp.chksum = 0
    pkt = (
        Ether(dst=mac_to_str(dst_mac), src=mac_to_str(src_mac), type=0x0800)
        / IP(
            src=str(ip_to_addr(src_ip)),
            dst=str(ip_to_addr(dst_ip)),
            id=ip_id,
            flags="DF",
            ttl=ttl,
            proto=17,
        )
        / udp
        / Raw(load=payload)
    )
    frame = bytes(pkt)
    if len(frame) < MIN_FRAME_BYTES:
        frame += bytes(MIN_FRAME_BYTES - len(frame))
    return frame


def multicast_mac(ip: IpLike) -> int:
    """RFC 1112 mapping: 01:00:5E followed by the low 23 bits of the group address."""
    return 0x01005E000000 | (int(ip_to_addr(ip)) & 0x7FFFFF)


def next_hop_mac(
    dst_ip: IpLike,
    own_ip: IpLike,
    netmask: IpLike,
    gateway: IpLike,
    arp: dict[int, int],
) -> int | None:
    """Destination MAC for a datagram to ``dst_ip``, or ``None`` when the core must drop it.

    ``arp`` maps the ARP table index (IP[7:0]) to a MAC; a missing key is an invalid entry.
    """
    dst = ip_to_addr(dst_ip)
    own = ip_to_addr(own_ip)
    net = ipaddress.IPv4Network(f"{own}/{ip_to_addr(netmask)}", strict=False)
    if dst == ipaddress.IPv4Address("255.255.255.255") or dst == net.broadcast_address:
        return BROADCAST_MAC
    if dst.is_multicast:
        return multicast_mac(dst)
    hop = dst if dst in net else ip_to_addr(gateway)
    mac = arp.get(int(hop) & 0xFF)
    if mac is None:
        return None
    return mac_to_int(mac)


def example_payload(n: int, size: int = EXAMPLE_PAYLOAD_BYTES, stream_id: int = 0) -> bytes:
    """Payload of packet ``n`` of the example stream, truncated to ``size`` bytes.

    1024 big-endian 64-bit words: word 0 is ``n``, word k is ``(n << 10) | k``, both modulo
    2**64 as the 64-bit generator in the RTL wraps. A non-zero ``stream_id`` (fhg_pktgen's
    STREAM_ID) is word 0's first byte, ``n`` modulo 2**56 the other seven.
    """
    if not 0 < size <= EXAMPLE_PAYLOAD_BYTES:
        raise ValueError(f"size must be 1..{EXAMPLE_PAYLOAD_BYTES}, got {size}")
    if n < 0:
        raise ValueError("sequence numbers start at 0")
    if not 0 <= stream_id <= 0xFF:
        raise ValueError(f"stream_id {stream_id} is not 0..255")
    nwords = -(-size // 8)
    mask = (1 << 64) - 1
    words = np.arange(nwords, dtype=np.uint64)
    words |= np.uint64((n << 10) & mask)
    words[0] = np.uint64(n & mask if not stream_id else stream_id << 56 | n & ((1 << 56) - 1))
    return words.astype(">u8").tobytes()[:size]


def wire_bytes_per_frame(payload_bytes: int) -> int:
    return max(payload_bytes + WIRE_OVERHEAD_BYTES, MIN_WIRE_BYTES)


def line_frame_rate(payload_bytes: int, line_bps: float = 400e9) -> float:
    """Frames per second a saturated line carries."""
    return line_bps / (8 * wire_bytes_per_frame(payload_bytes))


def theoretical_goodput(payload_bytes: int, line_bps: float = 400e9) -> float:
    """UDP payload bit/s of a saturated line: line * P / (P + 66), runts padded to 64 B."""
    return 8 * payload_bytes * line_frame_rate(payload_bytes, line_bps)


def user_ceiling_fps(payload_bytes: int, user_clk_hz: float = 390.625e6) -> float:
    """Frames per second the user port can offer: one 128-byte word per user clock."""
    if payload_bytes < 1:
        raise ValueError("payload must be at least one byte")
    return user_clk_hz / math.ceil(payload_bytes / 128)


def one_frame_per_beat_ceiling(payload_bytes: int, clk_hz: float = 390.625e6) -> float:
    """UDP payload bit/s of a packer that starts every frame on a new 1024-bit beat."""
    beats = math.ceil(max(payload_bytes + HEADER_BYTES, MIN_FRAME_BYTES) / 128)
    return 8 * payload_bytes * clk_hz / beats
