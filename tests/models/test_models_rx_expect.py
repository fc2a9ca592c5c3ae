"""RX filter model: one hand-built frame per verdict, filter order, the labelled mix."""

from __future__ import annotations

import pytest
from scapy.layers.inet import ICMP, IP, UDP, IPOption_NOP
from scapy.layers.l2 import ARP, Dot1Q, Ether
from scapy.packet import Raw

from verification.models.dcmac_tx import ethernet_fcs
from verification.models.rx_expect import (
    DROP_REASONS,
    MIX_KINDS,
    VERDICTS,
    MixFrame,
    MixMismatch,
    RxConfig,
    _cross_check,
    classify,
    make_mix,
    tally,
    with_config,
)
from verification.models.rx_expect import (
    RxVerdict as V,
)

OWN_MAC = "02:0a:0b:0c:0d:0e"
OWN_IP = "10.1.2.3"
PEER_MAC = "02:00:00:00:00:99"
PEER_IP = "10.1.2.50"
PORT = 7148
CFG = RxConfig.make(OWN_MAC, OWN_IP, PORT, "255.255.255.0", "239.5.6.0", "255.255.255.0")
CPU = with_config(CFG, cpu_rx_en=True)


def udp(
    payload: bytes = b"hello 400G",
    *,
    dst_mac: str = OWN_MAC,
    dst_ip: str = OWN_IP,
    dport: int = PORT,
    ip_kw: dict | None = None,
    udp_kw: dict | None = None,
) -> bytes:
    pkt = (
        Ether(dst=dst_mac, src=PEER_MAC)
        / IP(src=PEER_IP, dst=dst_ip, **(ip_kw or {}))
        / UDP(sport=4000, dport=dport, **(udp_kw or {}))
        / Raw(payload)
    )
    b = bytes(pkt)
    return b + bytes(max(0, 60 - len(b)))


def set_bytes(frame: bytes, off: int, value: bytes) -> bytes:
    return frame[:off] + value + frame[off + len(value) :]


def test_delivered_with_metadata_and_runt_padding_ignored():
    v = classify(udp(b"abc"), CFG)
    assert v == V(
        "delivered",
        payload=b"abc",
        src_ip=0x0A010232,
        dst_ip=0x0A010203,
        src_port=4000,
        dst_port=PORT,
        bad_udp_checksum=False,
    )
    # Longer payload, exact length, nothing trimmed or added.
    p = bytes(range(256)) * 20
    assert classify(udp(p), CFG).payload == p


def test_bad_udp_checksum_is_delivered_flagged_and_zero_is_not_checked():
    f = udp(b"payload bytes")
    bad = set_bytes(f, 40, bytes([f[40] ^ 0xFF, f[41]]))
    v = classify(bad, CFG)
    assert v.verdict == "delivered" and v.bad_udp_checksum
    zero = set_bytes(f, 40, b"\0\0")
    v = classify(zero, CFG)
    assert v.verdict == "delivered" and not v.bad_udp_checksum
    # A corrupted payload byte is caught by the checksum too.
    flip = set_bytes(f, 45, bytes([f[45] ^ 1]))
    assert classify(flip, CFG).bad_udp_checksum


def test_fcs_error_and_fcs_included():
    f = udp()
    assert classify(f, CFG, err=True).verdict == "rx_drop_fcs"
    assert classify(f + ethernet_fcs(f), CFG, has_fcs=True).verdict == "delivered"
    wrong = f + bytes(b ^ 1 for b in ethernet_fcs(f))
    assert classify(wrong, CFG, has_fcs=True).verdict == "rx_drop_fcs"


def test_dst_mac():
    assert classify(udp(dst_mac="02:0a:0b:0c:0d:0f"), CFG).verdict == "rx_drop_dst_mac"
    assert classify(udp(dst_mac="ff:ff:ff:ff:ff:ff"), CFG).verdict == "delivered"
    # Group 239.5.6.0/24 maps to 01:00:5e:05:06:xx.
    assert (
        classify(udp(dst_mac="01:00:5e:05:06:07", dst_ip="239.5.6.7"), CFG).verdict == "delivered"
    )
    assert (
        classify(udp(dst_mac="01:00:5e:05:07:07", dst_ip="239.5.6.7"), CFG).verdict
        == "rx_drop_dst_mac"
    )
    no_group = with_config(CFG, mc_mask=0)
    assert (
        classify(udp(dst_mac="01:00:5e:05:06:07", dst_ip="239.5.6.7"), no_group).verdict
        == "rx_drop_dst_mac"
    )
    # The CPU does not get frames for other stations.
    assert classify(udp(dst_mac="02:0a:0b:0c:0d:0f"), CPU).verdict == "rx_drop_dst_mac"


def test_ethertype_vlan_and_others():
    vlan = bytes(
        Ether(dst=OWN_MAC, src=PEER_MAC) / Dot1Q(vlan=5) / IP(src=PEER_IP, dst=OWN_IP) / UDP()
    )
    assert classify(vlan, CFG).verdict == "rx_drop_ethertype"
    assert classify(vlan, CPU).verdict == "to_cpu"
    v6 = set_bytes(udp(), 12, b"\x86\xdd")
    assert classify(v6, CFG).verdict == "rx_drop_ethertype"


def test_ip_version_options_fragment_checksum_protocol():
    f = udp()
    assert classify(set_bytes(f, 14, b"\x65"), CFG).verdict == "rx_drop_ip_version"
    assert classify(set_bytes(f, 14, b"\x65"), CPU).verdict == "rx_drop_ip_version"
    opt = udp(ip_kw={"options": [IPOption_NOP()] * 4})
    assert classify(opt, CFG).verdict == "rx_drop_ip_options"
    assert classify(opt, CPU).verdict == "to_cpu"
    assert classify(udp(ip_kw={"flags": "MF"}), CFG).verdict == "rx_drop_ip_fragment"
    assert classify(udp(ip_kw={"frag": 100}), CPU).verdict == "rx_drop_ip_fragment"
    assert classify(udp(ip_kw={"flags": "DF"}), CFG).verdict == "delivered"
    assert classify(udp(ip_kw={"chksum": 0x1234}), CFG).verdict == "rx_drop_ip_checksum"
    icmp = bytes(Ether(dst=OWN_MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=OWN_IP) / ICMP())
    icmp += bytes(60 - len(icmp))
    assert classify(icmp, CFG).verdict == "rx_drop_ip_protocol"
    assert classify(icmp, CPU).verdict == "to_cpu"


def test_dst_ip_accepts_own_subnet_and_limited_broadcast_and_group():
    assert classify(udp(dst_ip="10.1.2.4"), CFG).verdict == "rx_drop_dst_ip"
    assert classify(udp(dst_ip="10.1.2.4"), CPU).verdict == "rx_drop_dst_ip"
    assert classify(udp(dst_ip="10.1.2.255"), CFG).verdict == "delivered"
    assert classify(udp(dst_ip="255.255.255.255"), CFG).verdict == "delivered"
    wide = with_config(CFG, netmask=0xFFFF0000)
    assert classify(udp(dst_ip="10.1.255.255"), wide).verdict == "delivered"
    assert classify(udp(dst_ip="10.1.2.255"), wide).verdict == "rx_drop_dst_ip"
    # The group filter is on IP too: same MAC, different group above the 23 mapped bits.
    assert (
        classify(udp(dst_mac="01:00:5e:05:06:07", dst_ip="238.5.6.7"), CFG).verdict
        == "rx_drop_dst_ip"
    )


def test_dst_port_and_promiscuous():
    assert classify(udp(dport=PORT + 1), CFG).verdict == "rx_drop_dst_port"
    assert classify(udp(dport=PORT + 1), CPU).verdict == "to_cpu"
    v = classify(udp(dport=PORT + 1), with_config(CFG, promiscuous=True))
    assert v.verdict == "delivered" and v.dst_port == PORT + 1


def test_lengths():
    f = udp(bytes(100))
    assert classify(f[:-1], CFG).verdict == "rx_drop_length"  # truncated
    assert classify(f + bytes(30), CFG).verdict == "delivered"  # trailing padding ignored
    assert classify(udp(bytes(100), udp_kw={"len": 107}), CFG).verdict == "rx_drop_length"
    assert classify(udp(bytes(100), udp_kw={"len": 109}), CFG).verdict == "rx_drop_length"
    assert classify(udp(bytes(100), ip_kw={"len": 27}), CFG).verdict == "rx_drop_length"
    empty = classify(udp(b""), CFG)  # UDP length 8: an empty datagram, delivered
    assert empty.verdict == "delivered" and empty.payload == b""
    assert classify(udp(b"", udp_kw={"len": 7}), CFG).verdict == "rx_drop_length"
    assert classify(f[:30], CFG).verdict == "rx_drop_length"  # no full IP header
    assert classify(f[:10], CFG).verdict == "rx_drop_length"


def test_disabled_only_after_all_other_checks():
    off = with_config(CFG, fabric_en=False)
    assert classify(udp(), off).verdict == "rx_drop_disabled"
    assert classify(udp(dst_ip="10.1.2.4"), off).verdict == "rx_drop_dst_ip"
    assert classify(udp(bytes(100))[:-1], off).verdict == "rx_drop_length"


def arp_frame(op: int, tpa: str, dst: str = "ff:ff:ff:ff:ff:ff", **kw: object) -> bytes:
    b = bytes(
        Ether(dst=dst, src=PEER_MAC) / ARP(op=op, hwsrc=PEER_MAC, psrc=PEER_IP, pdst=tpa, **kw)
    )
    return b + bytes(60 - len(b))


def test_arp():
    assert classify(arp_frame(1, OWN_IP), CFG).verdict == "arp"
    assert classify(arp_frame(1, OWN_IP), CPU).verdict == "arp"
    assert classify(arp_frame(1, "10.1.2.4"), CFG).verdict == "rx_drop_arp"
    assert classify(arp_frame(1, "10.1.2.4"), CPU).verdict == "to_cpu"
    reply = arp_frame(2, OWN_IP, OWN_MAC, hwdst=OWN_MAC)
    assert classify(reply, CFG).verdict == "rx_drop_arp"
    assert classify(reply, with_config(CFG, arp_learn_en=True)).verdict == "arp"
    assert classify(arp_frame(1, OWN_IP), with_config(CFG, arp_reply_en=False)).verdict == (
        "rx_drop_arp"
    )
    assert classify(arp_frame(1, OWN_IP, ptype=0x86DD), CFG).verdict == "rx_drop_arp"
    assert classify(arp_frame(1, OWN_IP)[:40], CFG).verdict == "rx_drop_arp"
    assert classify(arp_frame(1, OWN_IP, dst="02:00:00:00:00:01"), CFG).verdict == (
        "rx_drop_dst_mac"
    )


def test_filter_order_first_failure_wins():
    # Wrong port + options + bad checksum: options come first.
    f = udp(dport=PORT + 1, ip_kw={"options": [IPOption_NOP()] * 4, "chksum": 1})
    assert classify(f, CFG).verdict == "rx_drop_ip_options"
    # Fragment + bad checksum + wrong IP: fragment first.
    f = udp(dst_ip="10.1.2.4", ip_kw={"flags": "MF", "chksum": 1})
    assert classify(f, CFG).verdict == "rx_drop_ip_fragment"
    # Wrong MAC + FCS error: FCS first.
    assert classify(udp(dst_mac="02:00:00:00:00:01"), CFG, err=True).verdict == "rx_drop_fcs"
    # Wrong IP + wrong port: IP first.
    assert classify(udp(dst_ip="10.1.2.4", dport=1), CPU).verdict == "rx_drop_dst_ip"


def test_verdict_names_match_the_register_map():
    from casperfpga_ext.fhg_regmap import REGISTERS

    for name in DROP_REASONS:
        assert name in REGISTERS, name
    assert set(VERDICTS) == {"delivered", "arp", "to_cpu", *DROP_REASONS}


CONFIGS = {
    "default": CFG,
    "cpu_promisc": with_config(CFG, cpu_rx_en=True, promiscuous=True),
    "fabric_off": with_config(CFG, fabric_en=False, arp_learn_en=True),
    "no_group": with_config(CFG, mc_mask=0, arp_reply_en=False),
    "wide_group": with_config(CFG, mc_ip=0xE000_0000, mc_mask=0xF000_0000, netmask=0xFFFF_0000),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_mix_labels_agree_and_account(name: str):
    cfg = CONFIGS[name]
    mix = make_mix(2000, cfg, seed=sorted(CONFIGS).index(name))
    counts = tally([m.verdict for m in mix])
    delivered = counts["delivered"]
    drops = sum(counts[r] for r in DROP_REASONS)
    assert delivered + drops + counts["to_cpu"] + counts["arp"] == len(mix)
    assert {m.kind for m in mix} == set(MIX_KINDS)
    for m in mix:
        assert classify(m.frame, cfg, err=m.err) == m.verdict


def test_mix_20000_frames_diverse():
    mix = make_mix(20_000, CFG, seed=1)
    counts = tally([m.verdict for m in mix])
    assert sum(counts.values()) == 20_000
    # Every verdict this configuration can produce does occur.
    for name in ("delivered", "arp", *[r for r in DROP_REASONS if r != "rx_drop_disabled"]):
        assert counts[name] > 0, name
    assert any(m.verdict.bad_udp_checksum for m in mix)
    assert make_mix(50, CFG, seed=1)[:50] == mix[:50]


def test_mix_cross_check_catches_disagreement():
    good = make_mix(1, CFG, seed=3, kinds=("valid",))[0]
    wrong = MixFrame(good.kind, good.frame, good.err, "rx_drop_dst_ip", good.verdict, good.payload)
    with pytest.raises(MixMismatch):
        _cross_check(wrong)
    other_payload = MixFrame(
        good.kind,
        good.frame,
        good.err,
        good.expected,
        good.verdict,
        good.payload + b"x",
        meta=good.meta,
    )
    with pytest.raises(MixMismatch):
        _cross_check(other_payload)
