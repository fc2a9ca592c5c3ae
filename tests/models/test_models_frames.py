"""Golden frames, next-hop MAC selection, example payload and throughput formulas."""

from __future__ import annotations

import struct

import pytest

from verification.models.frames import (
    BROADCAST_MAC,
    example_payload,
    expected_udp_frame,
    line_frame_rate,
    multicast_mac,
    next_hop_mac,
    one_frame_per_beat_ceiling,
    theoretical_goodput,
    user_ceiling_fps,
)

SRC_MAC = 0x02_00_00_00_00_01
DST_MAC = 0x0A_0B_0C_0D_0E_0F


def ones_complement_sum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def udp_checksum(src_ip: bytes, dst_ip: bytes, udp: bytes) -> int:
    """RFC 768 over the pseudo header, written out to check scapy's result."""
    pseudo = src_ip + dst_ip + struct.pack("!BBH", 0, 17, len(udp))
    return ~ones_complement_sum(pseudo + udp) & 0xFFFF


def small_frame(
    *,
    dst_mac: int | str = DST_MAC,
    src_ip: int | str = "10.0.0.1",
    dst_ip: str = "10.0.0.2",
    ip_id: int = 5,
    ttl: int = 64,
    payload: bytes = b"hi",
    udp_checksum: bool = True,
) -> bytes:
    return expected_udp_frame(
        SRC_MAC, dst_mac, src_ip, dst_ip, 1000, 2000, ip_id, ttl, payload, udp_checksum
    )


def test_header_fields_and_hand_computed_ip_checksum():
    f = small_frame()
    assert len(f) == 60
    assert f[0:6] == bytes.fromhex("0a0b0c0d0e0f")
    assert f[6:12] == bytes.fromhex("020000000001")
    assert f[12:14] == b"\x08\x00"
    ip = f[14:34]
    # 4500 001e 0005 4000 4011 ---- 0a00 0001 0a00 0002: sum 0xD937, checksum 0x26C8.
    assert ip == bytes.fromhex("4500001e00054000401126c80a0000010a000002")
    assert ones_complement_sum(ip) == 0xFFFF
    assert f[34:38] == bytes.fromhex("03e807d0")
    assert f[38:40] == (8 + 2).to_bytes(2, "big")
    assert f[42:44] == b"hi"
    assert f[44:] == bytes(16)  # runt padding, not counted in IP/UDP lengths


def test_udp_checksum_matches_rfc768():
    payload = bytes(range(200))
    f = small_frame(payload=payload, src_ip="192.168.7.9", dst_ip="192.168.7.200")
    assert len(f) == 42 + 200
    udp = bytearray(f[34:])
    got = int.from_bytes(udp[6:8], "big")
    udp[6:8] = b"\x00\x00"
    assert got == udp_checksum(bytes([192, 168, 7, 9]), bytes([192, 168, 7, 200]), bytes(udp))
    assert got != 0


def test_udp_checksum_disabled_is_zero():
    f = small_frame(udp_checksum=False)
    assert f[40:42] == b"\x00\x00"
    assert f[14:34] == small_frame()[14:34]


def test_computed_zero_udp_checksum_is_sent_as_ffff():
    src, dst = bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])
    udp0 = struct.pack("!HHHH", 1000, 2000, 10, 0) + b"\x00\x00"
    pseudo = src + dst + struct.pack("!BBH", 0, 17, 10)
    partial = ones_complement_sum(pseudo + udp0)
    # Choose the two payload bytes so that the one's-complement sum is 0xFFFF.
    fill = (0xFFFF - partial).to_bytes(2, "big")
    f = small_frame(payload=fill)
    assert f[40:42] == b"\xff\xff"


def test_ip_id_ttl_and_string_or_int_addresses():
    a = small_frame(ip_id=0xBEEF, ttl=3, src_ip=0x0A000001, dst_mac="0a:0b:0c:0d:0e:0f")
    assert a[18:20] == b"\xbe\xef" and a[22] == 3
    assert a[20] & 0x40  # DF
    assert a[:12] == small_frame()[:12] and a[26:34] == small_frame()[26:34]


# --- next hop ----------------------------------------------------------------------------

ARP = {2: 0x0000_1111_2222, 254: 0x00AA_BBCC_DDEE, 255: 0x0000_0000_0255}
OWN, MASK24, GW = "10.0.0.1", "255.255.255.0", "10.0.0.254"


@pytest.mark.parametrize(
    ("dst", "mask", "expected"),
    [
        ("10.0.0.2", MASK24, 0x0000_1111_2222),  # same subnet: ARP[IP[7:0]]
        ("10.0.0.3", MASK24, None),  # no valid entry: dropped, never broadcast
        ("8.8.8.8", MASK24, 0x00AA_BBCC_DDEE),  # off subnet: gateway's entry
        ("10.0.1.2", MASK24, 0x00AA_BBCC_DDEE),
        ("10.0.1.2", "255.255.0.0", 0x0000_1111_2222),
        ("10.0.0.255", MASK24, BROADCAST_MAC),  # subnet broadcast
        ("10.0.0.255", "255.255.0.0", 0x0000_0000_0255),  # an ordinary host in a /16
        ("10.0.255.255", "255.255.0.0", BROADCAST_MAC),
        ("255.255.255.255", MASK24, BROADCAST_MAC),
        ("239.1.2.3", MASK24, 0x01_00_5E_01_02_03),
        ("224.128.1.2", MASK24, 0x01_00_5E_00_01_02),  # bit 23 of the group is dropped
        ("239.255.255.255", MASK24, 0x01_00_5E_7F_FF_FF),
    ],
)
def test_next_hop(dst: str, mask: str, expected: int | None):
    assert next_hop_mac(dst, OWN, mask, GW, ARP) == expected


def test_next_hop_gateway_entry_missing_and_int_arguments():
    assert next_hop_mac("8.8.8.8", OWN, MASK24, "10.0.0.253", ARP) is None
    assert next_hop_mac(0x0A000002, 0x0A000001, 0xFFFFFF00, 0x0A0000FE, ARP) == 0x0000_1111_2222
    assert multicast_mac("239.1.2.3") == 0x01005E010203


# --- example stream ----------------------------------------------------------------------


def test_example_payload_words():
    n = 12345
    p = example_payload(n)
    assert len(p) == 8192
    words = struct.unpack(">1024Q", p)
    assert words[0] == n
    for k in (1, 2, 500, 1023):
        assert words[k] == n * 1024 + k
    assert p[:8] == bytes([0, 0, 0, 0, 0, 0, 0x30, 0x39])


def test_example_payload_first_packet_truncation_and_wrap():
    p0 = example_payload(0)
    assert struct.unpack(">4Q", p0[:32]) == (0, 1, 2, 3)
    assert example_payload(7, 20) == example_payload(7)[:20]
    big = (1 << 60) + 3
    words = struct.unpack(">2Q", example_payload(big, 16))
    assert words == (big, ((big * 1024) % (1 << 64)) | 1)
    for bad in (0, 8193):
        with pytest.raises(ValueError):
            example_payload(1, bad)


# --- throughput table of docs/design/core.md §2 ---------------------------------------------

# payload B: (line goodput Gb/s, Mpps, one-frame-per-beat ceiling Gb/s), as printed there.
SPEC_TABLE = {
    18: (85.7, 595, 56.3),
    256: (318.0, 155, 266.7),
    1024: (375.8, 45.9, 355.6),
    1472: (382.8, 32.5, 383.3),
    8192: (396.8, 6.1, 393.9),
    8972: (397.1, 5.5, 394.9),
}


@pytest.mark.parametrize("payload", sorted(SPEC_TABLE))
def test_goodput_table(payload: int):
    goodput, mpps, ceiling = SPEC_TABLE[payload]
    assert theoretical_goodput(payload) / 1e9 == pytest.approx(goodput, abs=0.05)
    mpps_digits = 0.5 if mpps >= 100 else 0.05
    assert line_frame_rate(payload) / 1e6 == pytest.approx(mpps, abs=mpps_digits)
    got = one_frame_per_beat_ceiling(payload) / 1e9
    if payload == 8192:
        # 8*8192*390.625e6/65 = 393.846 Gb/s; the spec rounds it up to 393.9.
        assert got == pytest.approx(393.846, abs=0.001)
    else:
        assert got == pytest.approx(ceiling, abs=0.05)


def test_goodput_formula_and_runt_floor():
    assert theoretical_goodput(1000) == pytest.approx(400e9 * 1000 / 1066)
    # 1..18 B all occupy a minimum frame: 84 wire bytes.
    assert line_frame_rate(1) == line_frame_rate(18) == pytest.approx(400e9 / 672)
    assert line_frame_rate(19) == pytest.approx(400e9 / (8 * 85))
    assert theoretical_goodput(100, line_bps=100e9) == pytest.approx(100e9 * 100 / 166)


def test_user_ceiling():
    assert user_ceiling_fps(8192) == pytest.approx(390.625e6 / 64)
    assert user_ceiling_fps(128) == pytest.approx(390.625e6)
    assert user_ceiling_fps(129) == pytest.approx(390.625e6 / 2)
    assert user_ceiling_fps(1, user_clk_hz=100e6) == pytest.approx(100e6)
    with pytest.raises(ValueError):
        user_ceiling_fps(0)
