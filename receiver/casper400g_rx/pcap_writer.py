"""Writes captured packets back out as a classic pcap (Ethernet/IPv4/UDP), e.g. for Wireshark.

The headers are synthesised (the UDP socket does not deliver them); the IPv4
Identification carries the low 16 bits of the sequence number.
"""

from __future__ import annotations

import struct
from typing import BinaryIO

_ETH = bytes.fromhex("0200000000020200000000010800")
_SRC = bytes([127, 0, 0, 1])
_DST = bytes([127, 0, 0, 1])


def _ip_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


class PcapWriter:
    """Classic little-endian microsecond pcap, link type Ethernet."""

    def __init__(self, path: str, dport: int = 10000, sport: int = 10000) -> None:
        self._f: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed by close()/__exit__
        self._dport = dport
        self._sport = sport
        self._f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))

    def write(self, payload: bytes | memoryview, seq: int, timestamp: float) -> None:
        udp_len = 8 + len(payload)
        ip_wo_sum = struct.pack(
            "!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, seq & 0xFFFF, 0, 64, 17, 0, _SRC, _DST
        )
        ip = ip_wo_sum[:10] + struct.pack("!H", _ip_checksum(ip_wo_sum)) + ip_wo_sum[12:]
        udp = struct.pack("!HHHH", self._sport, self._dport, udp_len, 0)
        size = len(_ETH) + len(ip) + len(udp) + len(payload)
        sec = int(timestamp)
        usec = int((timestamp - sec) * 1e6)
        self._f.write(struct.pack("<IIII", sec, usec, size, size))
        self._f.write(_ETH + ip + udp)
        self._f.write(payload)

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> PcapWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
