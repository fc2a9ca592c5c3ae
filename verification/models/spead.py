"""SPEAD heaps as the example design's generator frames them (fhg_pktgen_spead.sv), built
with `struct` from the SPEAD specification: SPEAD-64-48, one heap per packet, seven item
pointers (heap counter, heap size, heap offset, payload length, timestamp, channel, and
the data item at heap address 0), then the payload."""

from __future__ import annotations

import struct

HEAP_CNT, HEAP_SIZE, HEAP_OFFSET, PAYLOAD_LENGTH = 0x1, 0x2, 0x3, 0x4
TIMESTAMP, CHANNEL, DATA = 0x1600, 0x4103, 0x3300
HEADER_BYTES = 64
_IMMEDIATE = 1 << 63
_MASK = (1 << 48) - 1


def heap_packet(heap_cnt: int, payload: bytes, timestamp: int, channel: int) -> bytes:
    """The UDP payload of one single-packet heap."""
    size = len(payload)
    pointers = [
        _IMMEDIATE | (HEAP_CNT << 48) | (heap_cnt & _MASK),
        _IMMEDIATE | (HEAP_SIZE << 48) | size,
        _IMMEDIATE | (HEAP_OFFSET << 48),
        _IMMEDIATE | (PAYLOAD_LENGTH << 48) | size,
        _IMMEDIATE | (TIMESTAMP << 48) | (timestamp & _MASK),
        _IMMEDIATE | (CHANNEL << 48) | (channel & _MASK),
        DATA << 48,
    ]
    header = struct.pack(">BBBBHH", 0x53, 4, 2, 6, 0, len(pointers))
    return header + struct.pack(f">{len(pointers)}Q", *pointers) + payload
