"""Raw Ethernet frames to and from classic pcap files (what Wireshark and the receiver's
pcap backend read). Timestamps are made up: one microsecond apart."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path

_MAGIC = 0xA1B2C3D4
_LINKTYPE_ETHERNET = 1


def write_pcap(path: Path | str, frames: Iterable[bytes]) -> int:
    """Writes ``frames`` (no FCS); returns how many."""
    n = 0
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", _MAGIC, 2, 4, 0, 0, 262144, _LINKTYPE_ETHERNET))
        for n, frame in enumerate(frames, 1):
            f.write(struct.pack("<IIII", n // 1_000_000, n % 1_000_000, len(frame), len(frame)))
            f.write(frame)
    return n


def read_pcap(path: Path | str) -> list[bytes]:
    data = Path(path).read_bytes()
    magic, _, _, _, _, _, link = struct.unpack_from("<IHHiIII", data)
    if magic != _MAGIC or link != _LINKTYPE_ETHERNET:
        raise ValueError(f"{path}: not a little-endian microsecond Ethernet pcap")
    out, pos = [], 24
    while pos < len(data):
        _, _, incl, _ = struct.unpack_from("<IIII", data, pos)
        out.append(data[pos + 16 : pos + 16 + incl])
        pos += 16 + incl
    return out
