"""Expected fate of every received frame (docs/design/core.md §3) and a labelled frame mix.

:func:`classify` re-implements the RX filter from the specification with scapy parsing
and :mod:`ipaddress`: it names the verdict of one frame as ``delivered``, ``arp``,
``to_cpu`` or one of the ``rx_drop_*`` counters of the register map. Checks run in the
order of docs/design/core.md §3; the first failing one decides.

:func:`make_mix` builds a seeded random mix of frames with its own byte-level code (no
scapy), records what each frame was built to provoke, and cross-checks that against
:func:`classify`; a disagreement raises :class:`MixMismatch`.

Interpretations of the specification (the register descriptions are the reference):

* Frames are given without FCS; ``err`` is the MAC's segment error flag (bad FCS).
  With ``has_fcs=True`` the last 4 bytes are the FCS and a wrong one counts like ``err``.
* Multicast MAC filter: with ``mc_mask != 0`` a destination MAC 01:00:5E:0x:xx:xx is
  accepted when its low 23 bits match ``mc_ip`` under the low 23 bits of ``mc_mask``
  (the RFC 1112 mapping). Broadcast and our own MAC are always accepted.
* Reasons whose register description says "CPU RX off" (EtherType, IP options, IP
  protocol, destination port, ARP) send the frame to the CPU when ``cpu_rx_en``; the
  others are dropped whatever ``cpu_rx_en`` says.
* ARP: a well-formed Ethernet/IPv4 ARP request for our IP is consumed by the hardware
  when ``arp_reply_en``; a reply for our IP when ``arp_learn_en``. Any other ARP frame is
  "not for us or malformed".
* A frame too short to hold the header fields a check reads fails that check as
  ``rx_drop_length`` (IPv4 needs a full 20-byte header before its first check, UDP its
  8-byte header before the port check).
* Lengths: IP total length >= 28, the frame holds at least 14 + total length bytes
  (anything beyond is padding), UDP length == total length - 20. A UDP length of 8 (no
  payload, RFC 768 allows it) is delivered as an empty datagram (one user word with no
  byte enabled).
* ``fabric_en == 0`` drops, as ``rx_drop_disabled``, only frames that passed every
  other check, so the other counters keep their meaning while the fabric is off.
* The UDP checksum is verified over the UDP length from the header when non-zero; a
  failure still delivers the datagram, flagged bad.
"""

from __future__ import annotations

import ipaddress
import random
import struct
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP
from scapy.utils import checksum

from .dcmac_tx import FCS_BYTES, ethernet_fcs

DELIVERED = "delivered"
ARP_VERDICT = "arp"
TO_CPU = "to_cpu"
# The frame checks of docs/design/core.md §3, in the order the core applies them: each
# failed check drops the frame and counts in the register of that name.
FRAME_CHECKS: tuple[str, ...] = (
    "rx_drop_fcs",
    "rx_drop_dst_mac",
    "rx_drop_ethertype",
    "rx_drop_ip_version",
    "rx_drop_ip_options",
    "rx_drop_ip_fragment",
    "rx_drop_ip_checksum",
    "rx_drop_ip_protocol",
    "rx_drop_dst_ip",
    "rx_drop_dst_port",
    "rx_drop_length",
)
DROP_REASONS: tuple[str, ...] = (*FRAME_CHECKS, "rx_drop_disabled", "rx_drop_arp")
VERDICTS: tuple[str, ...] = (DELIVERED, ARP_VERDICT, TO_CPU, *DROP_REASONS)

BROADCAST_MAC = 0xFFFF_FFFF_FFFF
LIMITED_BROADCAST = 0xFFFF_FFFF
ETH_IPV4 = 0x0800
ETH_ARP = 0x0806
ETH_VLAN = 0x8100
ETH_IPV6 = 0x86DD
MC_MAC_PREFIX = 0x01005E  # RFC 1112: 01:00:5E, then a 0 bit and the group's low 23 bits


def _ip(v: int | str | ipaddress.IPv4Address) -> int:
    return int(ipaddress.IPv4Address(v))


def _mac(v: int | str) -> int:
    if isinstance(v, int):
        return v
    return int(v.replace("-", ":").replace(":", ""), 16)


@dataclass(frozen=True)
class RxConfig:
    """The RX-relevant configuration registers (addresses and ports as ints)."""

    mac: int
    ip: int
    port: int
    netmask: int = 0xFFFF_FF00
    mc_ip: int = 0
    mc_mask: int = 0
    promiscuous: bool = False
    cpu_rx_en: bool = False
    fabric_en: bool = True
    arp_reply_en: bool = True
    arp_learn_en: bool = False

    @classmethod
    def make(
        cls,
        mac: int | str,
        ip: int | str,
        port: int,
        netmask: int | str = "255.255.255.0",
        mc_ip: int | str = 0,
        mc_mask: int | str = 0,
        **flags: bool,
    ) -> RxConfig:
        return cls(
            mac=_mac(mac),
            ip=_ip(ip),
            port=port,
            netmask=_ip(netmask),
            mc_ip=_ip(mc_ip),
            mc_mask=_ip(mc_mask),
            **flags,
        )

    @cached_property
    def subnet_broadcast(self) -> int:
        net = ipaddress.IPv4Network((self.ip, str(ipaddress.IPv4Address(self.netmask))), False)
        return int(net.broadcast_address)

    def in_group(self, dst_ip: int) -> bool:
        return bool(self.mc_mask) and (dst_ip & self.mc_mask) == (self.mc_ip & self.mc_mask)

    def mac_in_group(self, dst_mac: int) -> bool:
        if not self.mc_mask or dst_mac >> 23 != MC_MAC_PREFIX << 1:
            return False
        m = self.mc_mask & 0x7FFFFF
        return (dst_mac & m) == (self.mc_ip & m)


@dataclass(frozen=True)
class RxVerdict:
    verdict: str
    payload: bytes = b""
    src_ip: int = 0
    dst_ip: int = 0
    src_port: int = 0
    dst_port: int = 0
    bad_udp_checksum: bool = False

    @property
    def delivered(self) -> bool:
        return self.verdict == DELIVERED

    @property
    def dropped(self) -> bool:
        return self.verdict in DROP_REASONS


def _cpu_or(reason: str, cfg: RxConfig) -> RxVerdict:
    return RxVerdict(TO_CPU if cfg.cpu_rx_en else reason)


def classify(frame: bytes, cfg: RxConfig, *, err: bool = False, has_fcs: bool = False) -> RxVerdict:
    """What the core must do with ``frame`` (see the module notes for the rules)."""
    if has_fcs:
        if len(frame) < FCS_BYTES:
            return RxVerdict("rx_drop_fcs")
        body = frame[:-FCS_BYTES]
        err = err or ethernet_fcs(body) != frame[-FCS_BYTES:]
        frame = body
    if err:
        return RxVerdict("rx_drop_fcs")
    n = len(frame)
    if n < 14:
        return RxVerdict("rx_drop_length")
    # Two fixed fields: read directly, a scapy Ether dissection would double the run time.
    dst_mac = int.from_bytes(frame[:6], "big")
    if not (dst_mac in (cfg.mac, BROADCAST_MAC) or cfg.mac_in_group(dst_mac)):
        return RxVerdict("rx_drop_dst_mac")
    etype = int.from_bytes(frame[12:14], "big")
    if etype == ETH_ARP:
        return _classify_arp(frame, cfg)
    if etype != ETH_IPV4:
        return _cpu_or("rx_drop_ethertype", cfg)
    if n < 34:
        return RxVerdict("rx_drop_length")
    hdr = frame[14:34]
    ip = IP(hdr)
    if ip.version != 4:
        return RxVerdict("rx_drop_ip_version")
    if ip.ihl != 5:
        return _cpu_or("rx_drop_ip_options", cfg)
    if int(ip.flags) & 0x1 or ip.frag:  # MF is the lowest of scapy's three flag bits
        return RxVerdict("rx_drop_ip_fragment")
    if checksum(hdr) != 0:
        return RxVerdict("rx_drop_ip_checksum")
    if ip.proto != 17:
        return _cpu_or("rx_drop_ip_protocol", cfg)
    dst_ip = _ip(ip.dst)
    if dst_ip not in (cfg.ip, LIMITED_BROADCAST, cfg.subnet_broadcast) and not cfg.in_group(dst_ip):
        return RxVerdict("rx_drop_dst_ip")
    if n < 42:
        return RxVerdict("rx_drop_length")
    udp = UDP(frame[34:42])
    if not cfg.promiscuous and udp.dport != cfg.port:
        return _cpu_or("rx_drop_dst_port", cfg)
    ip_len = ip.len
    udp_len = udp.len
    if ip_len < 28 or 14 + ip_len > n or udp_len != ip_len - 20 or udp_len < 8:
        return RxVerdict("rx_drop_length")
    if not cfg.fabric_en:
        return RxVerdict("rx_drop_disabled")
    segment = frame[34 : 34 + udp_len]
    bad = False
    if udp.chksum:
        pseudo = frame[26:34] + struct.pack("!BBH", 0, 17, udp_len)
        bad = checksum(pseudo + segment) != 0
    return RxVerdict(
        DELIVERED,
        payload=bytes(segment[8:]),
        src_ip=_ip(ip.src),
        dst_ip=dst_ip,
        src_port=udp.sport,
        dst_port=udp.dport,
        bad_udp_checksum=bad,
    )


def _classify_arp(frame: bytes, cfg: RxConfig) -> RxVerdict:
    if len(frame) < 42:
        return _cpu_or("rx_drop_arp", cfg)
    try:
        arp = ARP(frame[14:42])
    except struct.error:
        # Address sizes that do not fit the 28 bytes: scapy cannot even read them.
        return _cpu_or("rx_drop_arp", cfg)
    well_formed = arp.hwtype == 1 and arp.ptype == ETH_IPV4 and arp.hwlen == 6 and arp.plen == 4
    if well_formed and _ip(arp.pdst) == cfg.ip:
        if arp.op == 1 and cfg.arp_reply_en:
            return RxVerdict(ARP_VERDICT)
        if arp.op == 2 and cfg.arp_learn_en:
            return RxVerdict(ARP_VERDICT)
    return _cpu_or("rx_drop_arp", cfg)


def tally(verdicts: list[RxVerdict]) -> dict[str, int]:
    """Count per verdict name, every name of :data:`VERDICTS` present."""
    counts = dict.fromkeys(VERDICTS, 0)
    for v in verdicts:
        counts[v.verdict] += 1
    return counts


# --- frame mix --------------------------------------------------------------------------


class MixMismatch(AssertionError):
    """The generator built a frame for one outcome and :func:`classify` named another."""


@dataclass
class MixFrame:
    kind: str  # what the frame was built as
    frame: bytes  # without FCS
    err: bool
    expected: str  # the verdict the generator built it for
    verdict: RxVerdict
    payload: bytes = b""  # the UDP payload put in (for frames meant to be delivered)
    bad_udp_checksum: bool = False
    meta: dict[str, int] = field(default_factory=dict)


def _csum16(data: bytes) -> int:
    # Own ones'-complement sum (the classifier uses scapy's), so the two cross-check.
    if len(data) & 1:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _eth(dst: int, src: int, etype: int) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big")


def _ipv4_header(
    src: int,
    dst: int,
    payload_len: int,
    *,
    proto: int = 17,
    ident: int = 0,
    flags_frag: int = 0x4000,
    version: int = 4,
    options: bytes = b"",
    total_len: int | None = None,
    bad_checksum: bool = False,
) -> bytes:
    ihl = 5 + len(options) // 4
    tl = total_len if total_len is not None else 4 * ihl + payload_len
    hdr = struct.pack(
        "!BBHHHBBH4s4s",
        (version << 4) | ihl,
        0,
        tl,
        ident,
        flags_frag,
        64,
        proto,
        0,
        src.to_bytes(4, "big"),
        dst.to_bytes(4, "big"),
    )
    hdr += options
    cks = _csum16(hdr)
    if bad_checksum:
        cks ^= 0x5A5A
    return hdr[:10] + cks.to_bytes(2, "big") + hdr[12:]


def _udp(src_ip: int, dst_ip: int, sport: int, dport: int, payload: bytes, mode: str) -> bytes:
    ulen = 8 + len(payload)
    seg = struct.pack("!HHHH", sport, dport, ulen, 0) + payload
    if mode == "zero":
        return seg
    pseudo = (
        src_ip.to_bytes(4, "big") + dst_ip.to_bytes(4, "big") + struct.pack("!BBH", 0, 17, ulen)
    )
    cks = _csum16(pseudo + seg) or 0xFFFF
    if mode == "bad":
        cks = cks ^ 0x00FF or 0x1234
    return seg[:6] + cks.to_bytes(2, "big") + seg[8:]


def _pad(frame: bytes) -> bytes:
    return frame + bytes(max(0, 60 - len(frame)))


def _arp(op: int, sha: int, spa: int, tha: int, tpa: int) -> bytes:
    return struct.pack(
        "!HHBBH6s4s6s4s",
        1,
        ETH_IPV4,
        6,
        4,
        op,
        sha.to_bytes(6, "big"),
        spa.to_bytes(4, "big"),
        tha.to_bytes(6, "big"),
        tpa.to_bytes(4, "big"),
    )


MIX_KINDS: tuple[str, ...] = (
    "valid",
    "jumbo",
    "runt_padded",
    "udp_checksum_zero",
    "bad_udp_checksum",
    "broadcast_subnet",
    "broadcast_limited",
    "mc_in",
    "mc_out_ip",
    "mc_out_mac",
    "wrong_mac",
    "wrong_ip",
    "wrong_port",
    "bad_ip_checksum",
    "ip_options",
    "fragment_mf",
    "fragment_offset",
    "ip_version",
    "not_udp",
    "vlan",
    "ipv6",
    "truncated",
    "udp_len_oversize",
    "udp_len_undersize",
    "fcs_error",
    "arp_request_us",
    "arp_request_other",
    "arp_reply_us",
    "arp_reply_other",
    "arp_malformed",
)


class _Gen:
    def __init__(self, cfg: RxConfig, rng: random.Random) -> None:
        self.cfg = cfg
        self.rng = rng
        self.peer_mac = 0x02_00_00_AB_00_00 | rng.randrange(1 << 16)
        if self.peer_mac == cfg.mac:
            self.peer_mac ^= 1 << 8

    def other_ip(self) -> int:
        # 198.18.0.0/15 (benchmarking range): never ours unless configured so.
        cfg = self.cfg
        while True:
            ip = 0xC612_0000 | self.rng.randrange(1 << 17)
            if ip not in (cfg.ip, cfg.subnet_broadcast) and not cfg.in_group(ip):
                return ip

    def other_mac(self) -> int:
        while True:
            m = (self.rng.randrange(1 << 48) & ~(1 << 40)) | (1 << 41)  # unicast, local
            if m != self.cfg.mac:
                return m

    def other_port(self) -> int:
        while True:
            p = self.rng.randrange(1, 1 << 16)
            if p != self.cfg.port:
                return p

    def payload(self, lo: int = 1, hi: int = 1472) -> bytes:
        return self.rng.randbytes(self.rng.randint(lo, hi))

    def udp_frame(
        self,
        *,
        dst_mac: int | None = None,
        dst_ip: int | None = None,
        dport: int | None = None,
        payload: bytes | None = None,
        csum: str = "good",
        **ip_kw: Any,
    ) -> tuple[bytes, bytes, dict[str, int]]:
        cfg = self.cfg
        src_ip = self.other_ip()
        dip = cfg.ip if dst_ip is None else dst_ip
        sport = self.rng.randrange(1, 1 << 16)
        dp = cfg.port if dport is None else dport
        pl = self.payload() if payload is None else payload
        udp = _udp(src_ip, dip, sport, dp, pl, csum)
        ip = _ipv4_header(src_ip, dip, len(udp), ident=self.rng.randrange(1 << 16), **ip_kw)
        mac = cfg.mac if dst_mac is None else dst_mac
        frame = _pad(_eth(mac, self.peer_mac, ETH_IPV4) + ip + udp)
        meta = {"src_ip": src_ip, "dst_ip": dip, "src_port": sport, "dst_port": dp}
        return frame, pl, meta


def make_mix(
    n: int, cfg: RxConfig, seed: int = 0, kinds: tuple[str, ...] = MIX_KINDS
) -> list[MixFrame]:
    """``n`` random frames of the given kinds, each labelled by :func:`classify` and
    checked against what the generator built it for (:class:`MixMismatch` otherwise)."""
    rng = random.Random(seed)
    gen = _Gen(cfg, rng)
    out = []
    for _ in range(n):
        kind = rng.choice(kinds)
        mf = _build(kind, gen)
        mf.verdict = classify(mf.frame, cfg, err=mf.err)
        _cross_check(mf)
        out.append(mf)
    return out


def _cross_check(mf: MixFrame) -> None:
    v = mf.verdict
    if v.verdict != mf.expected:
        raise MixMismatch(f"{mf.kind}: built for {mf.expected}, classified {v.verdict}")
    if v.delivered:
        got = {
            "src_ip": v.src_ip,
            "dst_ip": v.dst_ip,
            "src_port": v.src_port,
            "dst_port": v.dst_port,
        }
        if v.payload != mf.payload or v.bad_udp_checksum != mf.bad_udp_checksum:
            raise MixMismatch(f"{mf.kind}: delivered payload or checksum flag differs")
        if got != mf.meta:
            raise MixMismatch(f"{mf.kind}: addresses {got} != built {mf.meta}")


def _build(kind: str, g: _Gen) -> MixFrame:
    cfg = g.cfg
    rng = g.rng
    cpu = cfg.cpu_rx_en

    def or_cpu(reason: str) -> str:
        return TO_CPU if cpu else reason

    def accept() -> str:
        return DELIVERED if cfg.fabric_en else "rx_drop_disabled"

    err = False
    bad = False
    expected = accept()
    if kind == "valid":
        frame, pl, meta = g.udp_frame()
    elif kind == "jumbo":
        frame, pl, meta = g.udp_frame(payload=g.payload(8000, 8972))
    elif kind == "runt_padded":
        frame, pl, meta = g.udp_frame(payload=g.payload(1, 17))
    elif kind == "udp_checksum_zero":
        frame, pl, meta = g.udp_frame(csum="zero")
    elif kind == "bad_udp_checksum":
        frame, pl, meta = g.udp_frame(csum="bad")
        bad = cfg.fabric_en
    elif kind == "broadcast_subnet":
        frame, pl, meta = g.udp_frame(dst_mac=BROADCAST_MAC, dst_ip=cfg.subnet_broadcast)
    elif kind == "broadcast_limited":
        frame, pl, meta = g.udp_frame(dst_mac=BROADCAST_MAC, dst_ip=LIMITED_BROADCAST)
    elif kind in ("mc_in", "mc_out_ip", "mc_out_mac"):
        frame, pl, meta, expected = _multicast(kind, g, accept())
    elif kind == "wrong_mac":
        frame, pl, meta = g.udp_frame(dst_mac=g.other_mac())
        expected = "rx_drop_dst_mac"
    elif kind == "wrong_ip":
        frame, pl, meta = g.udp_frame(dst_ip=g.other_ip())
        expected = "rx_drop_dst_ip"
    elif kind == "wrong_port":
        frame, pl, meta = g.udp_frame(dport=g.other_port())
        if not cfg.promiscuous:
            expected = or_cpu("rx_drop_dst_port")
    elif kind == "bad_ip_checksum":
        frame, pl, meta = g.udp_frame(bad_checksum=True)
        expected = "rx_drop_ip_checksum"
    elif kind == "ip_options":
        words = rng.randint(1, 10)
        frame, pl, meta = g.udp_frame(options=bytes([1]) * (4 * words))  # NOP options
        expected = or_cpu("rx_drop_ip_options")
    elif kind == "fragment_mf":
        frame, pl, meta = g.udp_frame(flags_frag=0x2000)
        expected = "rx_drop_ip_fragment"
    elif kind == "fragment_offset":
        frame, pl, meta = g.udp_frame(flags_frag=rng.randint(1, 0x1FFF))
        expected = "rx_drop_ip_fragment"
    elif kind == "ip_version":
        frame, pl, meta = g.udp_frame(version=rng.choice([0, 5, 6, 15]))
        expected = "rx_drop_ip_version"
    elif kind == "not_udp":
        frame, pl, meta = g.udp_frame(proto=rng.choice([1, 6, 47, 132]))
        expected = or_cpu("rx_drop_ip_protocol")
    elif kind in ("vlan", "ipv6"):
        inner, pl, meta = g.udp_frame()
        if kind == "vlan":
            tag = ETH_VLAN.to_bytes(2, "big") + rng.randrange(1, 4095).to_bytes(2, "big")
            frame = inner[:12] + tag + inner[12:]
        else:
            frame = inner[:12] + ETH_IPV6.to_bytes(2, "big") + inner[14:]
        expected = or_cpu("rx_drop_ethertype")
    elif kind == "truncated":
        full, pl, meta = g.udp_frame(payload=g.payload(40, 1472))
        frame = full[: rng.randint(60, len(full) - 1)]
        expected = "rx_drop_length"
    elif kind in ("udp_len_oversize", "udp_len_undersize"):
        full, pl, meta = g.udp_frame(payload=g.payload(20, 1472))
        ulen = int.from_bytes(full[38:40], "big")
        ulen = ulen + rng.randint(1, 16) if kind == "udp_len_oversize" else rng.randint(0, ulen - 1)
        # The UDP checksum covers the length field; the filter rejects before reading it.
        frame = full[:38] + ulen.to_bytes(2, "big") + full[40:]
        expected = "rx_drop_length"
    elif kind == "fcs_error":
        frame, pl, meta = g.udp_frame()
        err = True
        expected = "rx_drop_fcs"
    else:
        frame, expected = _arp_kind(kind, g)
        pl, meta = b"", {}
    return MixFrame(kind, frame, err, expected, RxVerdict(expected), pl, bad, meta)


def _multicast(kind: str, g: _Gen, accepted: str) -> tuple[bytes, bytes, dict[str, int], str]:
    cfg = g.cfg
    rng = g.rng
    mask = cfg.mc_mask
    if not mask:
        # No group configured: the multicast MAC itself is refused.
        ip = 0xE000_0000 | rng.randrange(1 << 28)
        f, pl, meta = g.udp_frame(dst_mac=MC_MAC_PREFIX << 24 | (ip & 0x7FFFFF), dst_ip=ip)
        return f, pl, meta, "rx_drop_dst_mac"
    if kind == "mc_in":
        ip = (cfg.mc_ip & mask) | (rng.randrange(1 << 32) & ~mask & 0xFFFF_FFFF)
        expected = accepted
    elif kind == "mc_out_ip":
        # Same low 23 bits as the group (so the MAC passes), differs above them.
        high = mask & ~0x7FFFFF & 0xFFFF_FFFF
        if not high:
            return _multicast("mc_in", g, accepted)
        while True:
            ip = (rng.randrange(1 << 32) & high) | (cfg.mc_ip & ~high & 0xFFFF_FFFF)
            if (ip & mask) != (cfg.mc_ip & mask) and ip not in (cfg.ip, cfg.subnet_broadcast):
                break
        expected = "rx_drop_dst_ip"
    else:
        low = mask & 0x7FFFFF
        if not low:
            return _multicast("mc_in", g, accepted)
        while True:
            ip = 0xE000_0000 | rng.randrange(1 << 28)
            if (ip & low) != (cfg.mc_ip & low):
                break
        expected = "rx_drop_dst_mac"
    mac = MC_MAC_PREFIX << 24 | (ip & 0x7FFFFF)
    f, pl, meta = g.udp_frame(dst_mac=mac, dst_ip=ip)
    return f, pl, meta, expected


def _arp_kind(kind: str, g: _Gen) -> tuple[bytes, str]:
    cfg = g.cfg
    drop = TO_CPU if cfg.cpu_rx_en else "rx_drop_arp"
    peer_ip = g.other_ip()
    if kind == "arp_request_us":
        body = _arp(1, g.peer_mac, peer_ip, 0, cfg.ip)
        dst, expected = BROADCAST_MAC, ARP_VERDICT if cfg.arp_reply_en else drop
    elif kind == "arp_request_other":
        body = _arp(1, g.peer_mac, peer_ip, 0, g.other_ip())
        dst, expected = BROADCAST_MAC, drop
    elif kind == "arp_reply_us":
        body = _arp(2, g.peer_mac, peer_ip, cfg.mac, cfg.ip)
        dst, expected = cfg.mac, ARP_VERDICT if cfg.arp_learn_en else drop
    elif kind == "arp_reply_other":
        body = _arp(2, g.peer_mac, peer_ip, g.other_mac(), g.other_ip())
        dst, expected = cfg.mac, drop
    elif kind == "arp_malformed":
        body = bytearray(_arp(1, g.peer_mac, peer_ip, 0, cfg.ip))
        body[g.rng.choice([1, 3, 4, 5])] ^= 0x40  # hardware/protocol type or sizes
        dst, expected = BROADCAST_MAC, drop
        body = bytes(body)
    else:
        raise ValueError(f"unknown mix kind {kind!r}")
    return _pad(_eth(dst, g.peer_mac, ETH_ARP) + body), expected


def with_config(cfg: RxConfig, **changes: Any) -> RxConfig:
    """A copy of ``cfg`` with some fields changed."""
    return replace(cfg, **changes)
