"""Units of the ibv data path with constructed inputs: flow-rule bytes, the mlx5 CQE64
layout, striding-RQ bookkeeping, and the header check of the split (against scapy)."""

from __future__ import annotations

import ipaddress
import struct

import pytest

import casper400g_rx as rx
from casper400g_rx import _core

needs_ibv = pytest.mark.skipif(
    not _core.ibv_compiled(), reason="ibv backend compiled out (no libibverbs-dev)"
)


# ---- flow rule ---------------------------------------------------------------------
# The layout of rdma-core's verbs.h structures, written out field by field:
#   ibv_flow_attr        u32 comp_mask, u32 type, u16 size, u16 priority, u8 num_of_specs,
#                        u8 port, (2 pad), u32 flags                             = 20 bytes
#   ibv_flow_spec_eth    u32 type, u16 size, {dst_mac[6], src_mac[6], u16 ether_type,
#                        u16 vlan_tag} val, same mask, (2 pad)                  = 40 bytes
#   ibv_flow_spec_ipv4   u32 type, u16 size, (2 pad), {u32 src_ip, u32 dst_ip} val, mask = 24
#   ibv_flow_spec_tcp_udp u32 type, u16 size, {u16 dst_port, u16 src_port} val, mask, (2 pad) = 16
# Addresses and ports in network order, the rest in host (little-endian) order.
IBV_FLOW_ATTR_NORMAL = 0x0
IBV_FLOW_SPEC_ETH = 0x20
IBV_FLOW_SPEC_IPV4 = 0x30
IBV_FLOW_SPEC_UDP = 0x41


def expected_rule(mac: bytes, ip: str, port: int, ib_port: int) -> bytes:
    eth = struct.pack("<IH", IBV_FLOW_SPEC_ETH, 40)
    eth += mac + bytes(6) + bytes(2) + bytes(2)  # val: dst only
    eth += b"\xff" * 6 + bytes(6) + bytes(2) + bytes(2)  # mask: full dst MAC
    eth += bytes(2)
    dst = ipaddress.IPv4Address(ip).packed
    ipv4 = struct.pack("<IH", IBV_FLOW_SPEC_IPV4, 24) + bytes(2)
    ipv4 += bytes(4) + dst + bytes(4) + b"\xff" * 4
    udp = struct.pack("<IH", IBV_FLOW_SPEC_UDP, 16)
    udp += struct.pack("!HH", port, 0) + struct.pack("!HH", 0xFFFF, 0) + bytes(2)
    size = 20 + len(eth) + len(ipv4) + len(udp)
    attr = struct.pack("<IIHHBBxxI", 0, IBV_FLOW_ATTR_NORMAL, size, 0, 3, ib_port, 0)
    return attr + eth + ipv4 + udp


@needs_ibv
@pytest.mark.parametrize(
    ("mac", "ip", "port", "ib_port"),
    [
        (bytes.fromhex("0c42a1b2c3d4"), "10.0.0.2", 10000, 1),
        (bytes.fromhex("ffeeddccbbaa"), "192.168.200.17", 65535, 2),
    ],
)
def test_flow_rule_bytes(mac: bytes, ip: str, port: int, ib_port: int) -> None:
    got = _core._flow_rule_bytes(mac, ip, port, ib_port)
    assert len(got) == 100
    assert got == expected_rule(mac, ip, port, ib_port)


@needs_ibv
def test_flow_rule_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="mac must be 6 bytes, got 5"):
        _core._flow_rule_bytes(b"\x01" * 5, "10.0.0.2", 1)
    with pytest.raises(ValueError, match=r"bad IPv4 address '10\.0\.0'"):
        _core._flow_rule_bytes(b"\x01" * 6, "10.0.0", 1)


# ---- mlx5 CQE64 --------------------------------------------------------------------
# struct mlx5_cqe64 (mlx5dv.h), big-endian fields: wqe_id be16 @2, hds_ip_ext u8 @28,
# l4_hdr_type_etc u8 @29, byte_cnt be32 @44, timestamp be64 @48, wqe_counter be16 @60,
# signature u8 @62, op_own u8 @63 (opcode 7:4, cqe format 3:2, owner 0). Error CQEs
# (struct mlx5_err_cqe): vendor_err_synd u8 @54, syndrome u8 @55.


def make_cqe(
    opcode: int = 2,
    owner: int = 0,
    byte_cnt: int = 0,
    wqe_counter: int = 0,
    wqe_id: int = 0,
    flags: int = 0,
    timestamp: int = 0,
    syndrome: int = 0,
    vendor: int = 0,
) -> bytes:
    b = bytearray(64)
    b[2:4] = struct.pack("!H", wqe_id)
    b[28] = flags
    b[44:48] = struct.pack("!I", byte_cnt)
    b[48:56] = struct.pack("!Q", timestamp)
    if syndrome or vendor:  # error CQEs reuse the timestamp's last bytes
        b[54] = vendor
        b[55] = syndrome
    b[60:62] = struct.pack("!H", wqe_counter)
    b[63] = (opcode << 4) | owner
    return bytes(b)


def test_cqe_fields() -> None:
    c = _core._parse_cqe(
        make_cqe(
            byte_cnt=8234,
            wqe_counter=0x1234,
            wqe_id=0xBEEF,
            flags=0b110,
            timestamp=0x0102030405060708,
            owner=1,
        )
    )
    assert c["opcode"] == 2 and c["owner"] and c["format"] == 0
    assert c["byte_cnt"] == 8234 and c["length"] == 8234
    assert c["wqe_counter"] == 0x1234 and c["stride_index"] == 0x1234 and c["wqe_id"] == 0xBEEF
    assert c["l3_ok"] and c["l4_ok"]
    assert c["timestamp"] == 0x0102030405060708
    assert not c["filler"]


def test_cqe_striding_byte_cnt() -> None:
    # filler flag bit 31, strides consumed bits 29:16, length bits 15:0
    c = _core._parse_cqe(make_cqe(byte_cnt=(1 << 31) | (3 << 16) | 0))
    assert c["filler"] and c["strides"] == 3 and c["length"] == 0
    c = _core._parse_cqe(make_cqe(byte_cnt=(0x3FFF << 16) | 0xFFFF))
    assert not c["filler"] and c["strides"] == 0x3FFF and c["length"] == 0xFFFF


def test_cqe_error_syndrome() -> None:
    c = _core._parse_cqe(make_cqe(opcode=14, syndrome=0x04, vendor=0x51))
    assert c["opcode"] == 14 and c["syndrome"] == 0x04 and c["vendor_syndrome"] == 0x51
    # Syndromes are only read from error CQEs: there the bytes belong to other fields.
    c = _core._parse_cqe(make_cqe(opcode=2, syndrome=0x04, vendor=0x51))
    assert c["syndrome"] == 0 and c["vendor_syndrome"] == 0


@pytest.mark.parametrize(
    ("opcode", "owner", "ci", "owned"),
    [
        (2, 0, 0, True),  # first pass over a 256-entry ring: owner bit 0
        (2, 1, 5, False),  # a second-pass owner bit during the first pass: not written yet
        (2, 1, 256 + 5, True),  # second pass: owner bit 1
        (2, 0, 256 + 5, False),  # still the first pass's entry
        (15, 0, 0, False),  # never written
    ],
)
def test_cqe_ownership(opcode: int, owner: int, ci: int, owned: bool) -> None:
    assert _core._cqe_sw_owned(make_cqe(opcode=opcode, owner=owner), ci, 256) is owned


def test_cqe_needs_64_bytes() -> None:
    with pytest.raises(ValueError, match="a CQE must be 64 bytes, got 63"):
        _core._parse_cqe(bytes(63))


# ---- striding RQ bookkeeping ----------------------------------------------------------


def mprq(wqe: int, stride: int, strides: int, length: int, filler: bool = False) -> bytes:
    return make_cqe(
        byte_cnt=(int(filler) << 31) | (strides << 16) | length, wqe_counter=stride, wqe_id=wqe
    )


def test_stride_ring_packets_fillers_and_recycling() -> None:
    # 2 WQEs of 8 strides of 2 KiB; 8234-byte frames take 5 strides.
    cqes = [
        mprq(0, 0, 5, 8234),
        mprq(0, 5, 3, 0, filler=True),  # no room for another frame: WQE 0 done
        mprq(1, 0, 5, 8234),
        mprq(1, 5, 1, 60),  # a small frame
        mprq(1, 6, 2, 4000),  # WQE 1 done
        mprq(0, 0, 5, 8234),  # WQE 0 again, after reposting
    ]
    out, malformed = _core._stride_ring_replay(2, 11, 3, cqes)
    assert malformed == 0
    assert out == [
        (0, 8234, -1),
        (-1, 0, 0),
        (16384, 8234, -1),
        (16384 + 5 * 2048, 60, -1),
        (16384 + 6 * 2048, 4000, 1),
        (0, 8234, -1),
    ]


def test_stride_ring_rejects_impossible_completions() -> None:
    cqes = [
        mprq(2, 0, 1, 60),  # no WQE 2
        mprq(0, 7, 2, 100),  # runs past the WQE's last stride
        mprq(0, 0, 1, 3000),  # longer than the one stride it consumed
        mprq(0, 0, 0, 60),  # consumes no stride
    ]
    out, malformed = _core._stride_ring_replay(2, 11, 3, cqes)
    assert [o[0] for o in out] == [-1, -1, -1, -1]
    assert malformed == 4


# ---- the split's header check ------------------------------------------------------


def scapy_frame(payload: bytes, dport: int = 10000, ip_id: int = 7, **ip: object) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Dot1Q, Ether

    vlan = ip.pop("vlan", None)
    l2 = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01")
    if vlan is not None:
        l2 = l2 / Dot1Q(vlan=vlan)
    ip.setdefault("flags", "DF")
    pkt = l2 / IP(src="10.0.0.1", dst="10.0.0.2", id=ip_id, **ip)
    return bytes(pkt / UDP(sport=4000, dport=dport, chksum=0) / payload)


@pytest.mark.parametrize(
    ("seq", "size", "port"),
    [
        (0x12345, 1024, 10000),
        (0, 64, 10000),
        (0xFFFF, 8192, 4791),  # Identification all ones: the checksum's sum carries
        (0x1_0000_BEEF, 1472, 65535),  # only the low 16 bits of seq reach the header
        (0x8000, 256, 1),
    ],
)
def test_emulated_frame_header_equals_scapy(seq: int, size: int, port: int) -> None:
    # The emulation patches Identification and checksum into a prebuilt header: every
    # Identification must give scapy's checksum.
    frame = scapy_frame(rx.example_payload(seq, size), dport=port, ip_id=seq & 0xFFFF)
    assert _core._frame_header(size, port, seq) == frame[:42]


def test_split_header_check() -> None:
    fmt = rx.Format(payload_size=1024, udp_port=10000)
    payload = rx.example_payload(3, 1024)
    good = scapy_frame(payload, ip_id=0xABCD)
    assert _core._check_split_headers(good, len(good), fmt) == 0xABCD
    assert _core._check_split_headers(good, len(good) - 1, fmt) == -1  # NIC's byte count differs
    other_port = scapy_frame(payload, dport=10001)
    assert _core._check_split_headers(other_port, len(other_port), fmt) == -1
    any_port = rx.Format(payload_size=1024)
    assert _core._check_split_headers(other_port, len(other_port), any_port) == 7
    tagged = scapy_frame(payload, vlan=5)
    assert _core._check_split_headers(tagged, len(tagged) - 4, fmt) == -1
    options = scapy_frame(payload[:-4], options=b"\x01\x01\x01\x01")
    assert _core._check_split_headers(options, len(options), fmt) == -1
    fragment = scapy_frame(payload, frag=0, flags="MF")
    assert _core._check_split_headers(fragment, len(fragment), fmt) == -1
    short = scapy_frame(payload[:-8])
    assert _core._check_split_headers(short, len(short) + 8, fmt) == -1


def _split_headers_ok(frame: bytes, frame_len: int, payload: int, port: int) -> int:
    """What the split check accepts, field by field with scapy's parser (the reference for
    the engine's masked word compares): the Identification, or -1."""
    from scapy.layers.inet import IP, UDP

    (ethertype,) = struct.unpack("!H", frame[12:14])  # (scapy reads a small one as 802.3)
    if frame_len != 42 + payload or ethertype != 0x0800:
        return -1
    ip = IP(frame[14:])
    if ip.version != 4 or ip.ihl != 5 or ip.len != 28 + payload or ip.frag != 0:
        return -1
    if int(ip.flags) & 1 or ip.proto != 17 or UDP not in ip:  # MF: a fragment
        return -1
    udp = ip[UDP]
    if udp.len != 8 + payload or (port != 0 and udp.dport != port):
        return -1
    return int(ip.id)


@pytest.mark.parametrize("port", [10000, 0])
def test_split_header_check_every_header_byte(port: int) -> None:
    # Each of the 42 header bytes changed to values that matter (a field's bits) and do
    # not (checksums, addresses, TTL, DF, TOS): the word compares must agree with the
    # field-by-field reference on every one.
    fmt = rx.Format(payload_size=256, udp_port=port)
    good = scapy_frame(rx.example_payload(9, 256), ip_id=0x1234)
    assert _core._check_split_headers(good, len(good), fmt) == 0x1234
    checked = rejected = 0
    for at in range(42):
        for value in (0x00, 0x01, 0x08, 0x11, 0x20, 0x40, 0x45, 0x80, 0xFF, good[at] ^ 0x01):
            frame = good[:at] + bytes([value]) + good[at + 1 :]
            want = _split_headers_ok(frame, len(frame), 256, port)
            assert _core._check_split_headers(frame, len(frame), fmt) == want, (at, value)
            checked += 1
            rejected += want == -1
    assert checked == 42 * 10 and 0 < rejected < checked


def test_split_layout_follows_the_format() -> None:
    assert _core._split_layout(rx.Format()) == {
        "headers": 42,
        "prefix": 8,
        "entry": 64,
        "header_len": 50,
        "frame_len": 8234,
    }
    fmt = rx.Format(payload_size=4096, seq_offset=16, seq_width=4, stream_id=3, stream_id_offset=40)
    lay = _core._split_layout(fmt)
    assert lay["prefix"] == 48 and lay["header_len"] == 90 and lay["entry"] == 128
