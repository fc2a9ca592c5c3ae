"""The RoCEv2 frame builder/checker (verification/models/roce.py) against scapy's RoCE layers.

scapy's ``BTH`` computes the ICRC itself; RETH and ImmDt, which scapy does not define,
are declared as scapy field lists in verification/models/roce_scapy.py. Every frame the
builder makes must be the byte string scapy makes from the same fields, and the checker
must decode it back and reject each kind of damage with its own reason.
"""

from __future__ import annotations

import ipaddress
import random
import struct
from dataclasses import replace

import pytest

from verification.models.roce import (
    Operation,
    RdmaWrite,
    RoceFrameError,
    Transport,
    build_frame,
    icrc,
    line_goodput_fraction,
    opcode,
    parse_frame,
    wire_bytes,
    write_only_packets,
)
from verification.models.roce_scapy import scapy_frame


def _random_write(rng: random.Random) -> RdmaWrite:
    operation = rng.choice(list(Operation))
    with_imm = operation in (
        Operation.RDMA_WRITE_LAST_WITH_IMMEDIATE,
        Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE,
    )
    return RdmaWrite(
        src_mac=":".join(f"{b:02x}" for b in rng.randbytes(6)),
        dst_mac=":".join(f"{b:02x}" for b in rng.randbytes(6)),
        src_ip=ipaddress.IPv4Address(rng.getrandbits(32)),
        dst_ip=ipaddress.IPv4Address(rng.getrandbits(32)),
        dest_qp=rng.getrandbits(24),
        psn=rng.getrandbits(24),
        payload=rng.randbytes(rng.choice([0, 1, 2, 3, 4, rng.randrange(5, 4097)])),
        va=rng.getrandbits(64),
        rkey=rng.getrandbits(32),
        dma_length=rng.choice([None, rng.getrandbits(32)]),
        immediate=rng.getrandbits(32) if with_imm else None,
        operation=operation,
        transport=rng.choice(list(Transport)),
        src_port=rng.getrandbits(16),
        ip_id=rng.getrandbits(16),
        ttl=rng.randrange(1, 256),
        tos=rng.getrandbits(8),
        pkey=rng.getrandbits(16),
        solicited=rng.random() < 0.5,
        ack_request=rng.random() < 0.5,
        udp_checksum=rng.random() < 0.3,
    )


def test_frames_match_scapy_and_parse_back():
    rng = random.Random(4791)
    for _ in range(400):
        w = _random_write(rng)
        frame = build_frame(w)
        assert frame == scapy_frame(w), w
        p = parse_frame(frame)
        assert (p.src_mac, p.dst_mac) == (w.src_mac, w.dst_mac)
        assert (p.src_ip, p.dst_ip) == (w.src_ip, w.dst_ip)
        assert (p.transport, p.operation, p.dest_qp, p.psn, p.pkey) == (
            w.transport,
            w.operation,
            w.dest_qp,
            w.psn,
            w.pkey,
        )
        assert (p.solicited, p.ack_request, p.src_port) == (w.solicited, w.ack_request, w.src_port)
        assert p.payload == w.payload
        assert p.immediate == w.immediate
        if p.va is not None:
            length = len(w.payload) if w.dma_length is None else w.dma_length
            assert (p.va, p.rkey, p.dma_length) == (w.va, w.rkey, length)


def test_icrc_ignores_the_fields_routers_rewrite():
    w = _random_write(random.Random(7))
    frame = bytearray(build_frame(replace(w, udp_checksum=False)))
    crc = icrc(bytes(frame[14:-4]))
    frame[14 + 1] ^= 0xFF  # TOS
    frame[14 + 8] ^= 0x0F  # TTL
    frame[14 + 10 : 14 + 12] = b"\x12\x34"  # IP checksum
    frame[34 + 6 : 34 + 8] = b"\xab\xcd"  # UDP checksum
    frame[42 + 4] ^= 0xC0  # FECN, BECN
    assert icrc(bytes(frame[14:-4])) == crc
    frame[42 + 5] ^= 0x01  # the destination QP is covered
    assert icrc(bytes(frame[14:-4])) != crc


def _refresh_ip_checksum(frame: bytearray) -> None:
    frame[24:26] = b"\0\0"
    total = sum(struct.unpack("!10H", bytes(frame[14:34])))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    frame[24:26] = struct.pack("!H", ~total & 0xFFFF)


def _damaged(reason: str) -> bytes:
    w = RdmaWrite(
        src_mac="02:00:00:00:00:02",
        dst_mac="02:00:00:00:00:01",
        src_ip="192.0.2.2",
        dst_ip="192.0.2.1",
        dest_qp=0x11,
        psn=5,
        payload=b"" if reason == "pad" else bytes(range(40)),
        va=0x1000,
        rkey=0x77,
        udp_checksum=reason == "udp_checksum",
    )
    f = bytearray(build_frame(w))
    match reason:
        case "short":
            return bytes(f[:20])
        case "not_ipv4":
            f[12:14] = b"\x86\xdd"
        case "ip_header":
            f[14] = 0x46
        case "ip_checksum":
            f[24] ^= 1
        case "ip_length":
            f[16:18] = struct.pack("!H", len(f))
            _refresh_ip_checksum(f)
        case "ip_fragment":
            f[20:22] = struct.pack("!H", 0x2000)  # more fragments
            _refresh_ip_checksum(f)
        case "not_udp":
            f[23] = 6
            _refresh_ip_checksum(f)
        case "not_roce":
            f[36:38] = struct.pack("!H", 4792)
        case "udp_length":
            f[38:40] = struct.pack("!H", 9)
        case "udp_checksum":
            f[60] ^= 0xFF
        case "bth_version":
            f[43] |= 1
        case "opcode":
            f[42] = opcode(Transport.UC, Operation.RDMA_WRITE_ONLY) - 6  # UC SEND_ONLY
        case "pad":  # three pad bytes claimed in an empty payload
            f[43] |= 0x30
            f[-4:] = struct.pack("<I", icrc(bytes(f[14:-4])))
        case "icrc":
            f[-8] ^= 0x04
    return bytes(f)


@pytest.mark.parametrize(
    "reason",
    [
        "short",
        "not_ipv4",
        "ip_header",
        "ip_checksum",
        "ip_length",
        "ip_fragment",
        "not_udp",
        "not_roce",
        "udp_length",
        "udp_checksum",
        "bth_version",
        "opcode",
        "pad",
        "icrc",
    ],
)
def test_checker_names_what_is_wrong(reason: str):
    with pytest.raises(RoceFrameError) as err:
        parse_frame(_damaged(reason))
    assert err.value.reason == reason


def test_write_only_packets_split_at_the_mtu_with_psn_and_va_wrap():
    template = RdmaWrite(
        src_mac=1,
        dst_mac=2,
        src_ip="192.0.2.2",
        dst_ip="192.0.2.1",
        dest_qp=0x42,
        psn=0xFF_FFFE,
        payload=b"",
        va=(1 << 64) - 2048,
        rkey=9,
    )
    data = random.Random(3).randbytes(4 * 1024 + 5)
    packets = list(write_only_packets(template, data, 1024, immediate=0xABCD))
    assert [p.psn for p in packets] == [0xFF_FFFE, 0xFF_FFFF, 0, 1, 2]
    assert [p.va for p in packets] == [(1 << 64) - 2048, (1 << 64) - 1024, 0, 1024, 2048]
    assert [len(p.payload) for p in packets] == [1024] * 4 + [5]
    assert [p.dma_length for p in packets] == [1024] * 4 + [5]
    assert [p.operation for p in packets] == [Operation.RDMA_WRITE_ONLY] * 4 + [
        Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE
    ]
    assert [p.immediate for p in packets] == [None] * 4 + [0xABCD]
    assert b"".join(p.payload for p in packets) == data
    for p in packets:
        assert parse_frame(build_frame(p)).payload == p.payload
    plain = list(write_only_packets(template, data[:10], 4096))
    assert [(p.operation, p.immediate) for p in plain] == [(Operation.RDMA_WRITE_ONLY, None)]
    with pytest.raises(ValueError, match="path MTU 1500"):
        list(write_only_packets(template, data, 1500))


def test_bad_field_values_are_named():
    base = dict(src_mac=1, dst_mac=2, src_ip="192.0.2.2", dst_ip="192.0.2.1", payload=b"")
    with pytest.raises(ValueError, match="psn 0x1000000"):
        RdmaWrite(**base, dest_qp=1, psn=1 << 24)
    with pytest.raises(ValueError, match="dest_qp 0x1000000"):
        RdmaWrite(**base, dest_qp=1 << 24, psn=0)
    with pytest.raises(ValueError, match="RDMA_WRITE_ONLY_WITH_IMMEDIATE needs immediate"):
        RdmaWrite(**base, dest_qp=1, psn=0, operation=Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE)
    with pytest.raises(ValueError, match="RDMA_WRITE_ONLY takes no immediate"):
        RdmaWrite(**base, dest_qp=1, psn=0, immediate=5)
    with pytest.raises(ValueError, match="bad MAC 'zz'"):
        build_frame(RdmaWrite(**{**base, "src_mac": "zz"}, dest_qp=1, psn=0))


def test_goodput_of_full_mtu_packets():
    frame = build_frame(
        RdmaWrite(
            src_mac=1,
            dst_mac=2,
            src_ip="192.0.2.2",
            dst_ip="192.0.2.1",
            dest_qp=1,
            psn=0,
            payload=bytes(4096),
        )
    )
    assert wire_bytes(frame) == 4096 + 98
    assert line_goodput_fraction(4096) == 4096 / (4096 + 98)
    assert line_goodput_fraction(1024, immediate=True) == 1024 / (1024 + 102)
