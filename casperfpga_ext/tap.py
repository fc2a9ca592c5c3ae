"""Software ARP and ICMP echo for the 400GbE core, through its CPU RX/TX buffers.

casperfpga's ``tap_start`` runs a software network stack on the board's CPU for the
control traffic of a 10GbE core. The 400GbE core answers ARP in hardware
(``ctrl.arp_reply_en``), and sends everything its UDP data path does not take to the
CPU RX buffer (``ctrl.cpu_rx_en``); this module is the software side of that buffer:

* an ARP request for the core's IP gets a reply (needed when the hardware responder is
  off, ``ctrl.arp_reply_en = 0``; with it on, such requests never reach the buffer);
* an ICMP echo request to the core's IP gets an echo reply, so ``ping`` works.

Everything else in the buffer is acknowledged and counted as ignored, by reason. Replies
are built here byte by byte (``struct``), written to the CPU TX buffer and started with
``cpu_tx_len`` once ``status.cpu_tx_busy`` is clear; the core pads them to 60 bytes.

``Tap(gbe).poll()`` handles at most one frame and returns; ``Tap.start()`` (or
``FourHundredGbe.tap_start()``) runs ``poll`` in a background thread, as casperfpga does.
Every bus access goes through ``FourHundredGbe`` and the generated register map.

Reply details: the ARP reply goes to the requester's hardware address, from the core's
MAC and IP. The echo reply goes to the request's Ethernet source; its IPv4 header has no
options, the request's TOS and Identification, DF clear, the core's ``ttl`` register as
TTL; its ICMP body is the request's (identifier, sequence number, data) with type 0.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from .addressing import parse_ip, parse_mac

LOG = logging.getLogger(__name__)

ETH = struct.Struct("!6s6sH")
ARP = struct.Struct("!HHBBH6s4s6s4s")
IPV4 = struct.Struct("!BBHHHBBH4s4s")
ICMP_HEAD = struct.Struct("!BBH")

ETH_IPV4 = 0x0800
ETH_ARP = 0x0806
ARP_HW_ETHERNET = 1
ARP_REQUEST, ARP_REPLY = 1, 2
IP_PROTO_ICMP = 1
ICMP_ECHO_REPLY, ICMP_ECHO_REQUEST = 0, 8
IP_FLAG_MF = 0x2000
IP_FRAG_OFFSET = 0x1FFF

ARP_REPLIED = "arp_reply"
ICMP_REPLIED = "icmp_reply"
ANSWERED = (ARP_REPLIED, ICMP_REPLIED)

# Why a frame got no answer (the keys of Tap.ignored).
IGNORE_REASONS = {
    "unconfigured": "the core's IP address is 0.0.0.0",
    "short": "frame too short for the headers it announces",
    "ethertype": "neither ARP nor IPv4",
    "arp_malformed": "ARP not for Ethernet/IPv4 (hardware/protocol type or sizes)",
    "arp_not_request": "ARP reply or other operation",
    "arp_other_ip": "ARP request for another IP address",
    "arp_disabled": "ARP request for us, ARP answering switched off",
    "bad_source": "sender is a multicast/broadcast MAC, or IP 0.0.0.0/multicast/broadcast",
    "ip_header": "IPv4 version, header length or total length invalid",
    "ip_checksum": "IPv4 header checksum wrong",
    "ip_fragment": "IPv4 fragment",
    "ip_other_dst": "IPv4 for another destination (broadcast/multicast included)",
    "ip_protocol": "IPv4 protocol other than ICMP",
    "icmp_not_echo": "ICMP other than echo request",
    "icmp_checksum": "ICMP checksum wrong",
    "icmp_disabled": "echo request for us, ICMP answering switched off",
}


class TapError(RuntimeError):
    """The software ARP/ICMP loop cannot run, or it stopped on an error."""


def inet_checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``: 0 when ``data`` holds a valid one."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass(frozen=True)
class Answer:
    """What one received frame led to: ``outcome`` is ``arp_reply``, ``icmp_reply`` or
    an ignore reason (a key of ``IGNORE_REASONS``); ``reply`` is the frame to send."""

    outcome: str
    reply: bytes | None = None

    @property
    def answered(self) -> bool:
        return self.reply is not None


def _bad_source_mac(mac: bytes) -> bool:
    return bool(mac[0] & 1)  # group bit: multicast or broadcast


def _bad_source_ip(ip: int) -> bool:
    return ip == 0 or ip >= 0xE0000000  # 0.0.0.0, multicast, reserved, broadcast


def answer(
    frame: bytes,
    mac: int,
    ip: int,
    ttl: int = 64,
    *,
    arp: bool = True,
    icmp: bool = True,
) -> Answer:
    """The reply (if any) of a core with ``mac``/``ip`` to ``frame`` (no FCS).

    ``ttl`` goes into ICMP echo replies; ``arp``/``icmp`` switch each kind of answer.
    """
    if ip == 0:
        return Answer("unconfigured")
    if len(frame) < ETH.size:
        return Answer("short")
    _dst, src, ethertype = ETH.unpack_from(frame)
    own_mac = mac.to_bytes(6, "big")
    own_ip = ip.to_bytes(4, "big")
    if ethertype == ETH_ARP:
        return _answer_arp(frame, own_mac, own_ip, arp)
    if ethertype == ETH_IPV4:
        return _answer_ipv4(frame, src, own_mac, own_ip, ttl, icmp)
    return Answer("ethertype")


def _answer_arp(frame: bytes, own_mac: bytes, own_ip: bytes, enabled: bool) -> Answer:
    if len(frame) < ETH.size + ARP.size:
        return Answer("short")
    htype, ptype, hlen, plen, op, sha, spa, _tha, tpa = ARP.unpack_from(frame, ETH.size)
    if (htype, ptype, hlen, plen) != (ARP_HW_ETHERNET, ETH_IPV4, 6, 4):
        return Answer("arp_malformed")
    if op != ARP_REQUEST:
        return Answer("arp_not_request")
    if tpa != own_ip:
        return Answer("arp_other_ip")
    if _bad_source_mac(sha):
        return Answer("bad_source")
    if not enabled:
        return Answer("arp_disabled")
    reply = ETH.pack(sha, own_mac, ETH_ARP) + ARP.pack(
        ARP_HW_ETHERNET, ETH_IPV4, 6, 4, ARP_REPLY, own_mac, own_ip, sha, spa
    )
    return Answer(ARP_REPLIED, reply)


def _answer_ipv4(
    frame: bytes, src_mac: bytes, own_mac: bytes, own_ip: bytes, ttl: int, enabled: bool
) -> Answer:
    if len(frame) < ETH.size + IPV4.size:
        return Answer("short")
    ver_ihl, tos, total, ident, frag, _ttl, proto, _csum, src, dst = IPV4.unpack_from(
        frame, ETH.size
    )
    ihl = (ver_ihl & 0xF) * 4
    if ver_ihl >> 4 != 4 or ihl < IPV4.size or total < ihl:
        return Answer("ip_header")
    if ETH.size + total > len(frame):
        return Answer("short")
    if inet_checksum(frame[ETH.size : ETH.size + ihl]):
        return Answer("ip_checksum")
    if frag & (IP_FLAG_MF | IP_FRAG_OFFSET):
        return Answer("ip_fragment")
    if dst != own_ip:
        return Answer("ip_other_dst")
    if proto != IP_PROTO_ICMP:
        return Answer("ip_protocol")
    message = frame[ETH.size + ihl : ETH.size + total]
    if len(message) < 8:  # type, code, checksum, identifier, sequence number
        return Answer("short")
    icmp_type, code, _ = ICMP_HEAD.unpack_from(message)
    if icmp_type != ICMP_ECHO_REQUEST or code != 0:
        return Answer("icmp_not_echo")
    if inet_checksum(message):
        return Answer("icmp_checksum")
    if _bad_source_mac(src_mac) or _bad_source_ip(int.from_bytes(src, "big")):
        return Answer("bad_source")
    if not enabled:
        return Answer("icmp_disabled")
    body = bytearray(ICMP_HEAD.pack(ICMP_ECHO_REPLY, 0, 0) + message[ICMP_HEAD.size :])
    struct.pack_into("!H", body, 2, inet_checksum(bytes(body)))
    header = bytearray(
        IPV4.pack(0x45, tos, IPV4.size + len(body), ident, 0, ttl, IP_PROTO_ICMP, 0, own_ip, src)
    )
    struct.pack_into("!H", header, 10, inet_checksum(bytes(header)))
    return Answer(ICMP_REPLIED, ETH.pack(src_mac, own_mac, ETH_IPV4) + header + body)


class TapCore(Protocol):
    """What the tap needs from a core (``gbe.FourHundredGbe`` has it)."""

    name: str

    @property
    def mac(self) -> Any: ...

    @property
    def ip_address(self) -> Any: ...

    def read_field(self, reg_name: str, field_name: str) -> int: ...

    def write_field(self, reg_name: str, field_name: str, value: int) -> None: ...

    def read_cpu_frame(self) -> bytes | None: ...

    def send_cpu_frame(self, frame: bytes, timeout: float = 1.0) -> None: ...


class Tap:
    """The ARP/ICMP loop of one core: ``poll()`` one frame, or ``start()`` a thread.

    ``arp``/``icmp`` choose what is answered; ``tx_timeout`` bounds the wait for the CPU
    TX buffer (seconds); ``interval`` is the background loop's pause when no frame waits.
    Counters: ``frames`` (taken from the buffer), ``answered`` and ``ignored`` (by
    outcome), ``counts()`` all in one dict.
    """

    def __init__(
        self,
        gbe: TapCore,
        *,
        arp: bool = True,
        icmp: bool = True,
        tx_timeout: float = 1.0,
        interval: float = 0.01,
    ) -> None:
        if tx_timeout <= 0 or interval <= 0:
            raise ValueError(
                f"tx_timeout {tx_timeout!r} and interval {interval!r} must be positive"
            )
        self.gbe = gbe
        self.arp, self.icmp = arp, icmp
        self.tx_timeout, self.interval = tx_timeout, interval
        self.frames = 0
        self.answered: Counter[str] = Counter()
        self.ignored: Counter[str] = Counter()
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"Tap({self.gbe.name!r}, {state}, {self.counts()})"

    def counts(self) -> dict[str, int]:
        return {"frames": self.frames, **self.answered, **self.ignored}

    def enable(self, hardware_arp: bool | None = None) -> None:
        """Route frames to the CPU buffer and allow CPU frames out.

        ``hardware_arp`` sets ``ctrl.arp_reply_en`` (False: ARP is answered here);
        None leaves it as it is.
        """
        self.gbe.write_field("ctrl", "cpu_rx_en", 1)
        self.gbe.write_field("ctrl", "cpu_tx_en", 1)
        if hardware_arp is not None:
            self.gbe.write_field("ctrl", "arp_reply_en", int(hardware_arp))

    def poll(self) -> Answer | None:
        """Handle the frame waiting in the CPU RX buffer, if any; None when none waits."""
        frame = self.gbe.read_cpu_frame()
        if frame is None:
            return None
        self.frames += 1
        result = answer(
            frame,
            parse_mac(self.gbe.mac),
            parse_ip(self.gbe.ip_address),
            self.gbe.read_field("ttl", "ttl"),
            arp=self.arp,
            icmp=self.icmp,
        )
        if result.reply is None:
            self.ignored[result.outcome] += 1
            LOG.debug("%s: ignored a %d-byte frame: %s", self.gbe.name, len(frame), result.outcome)
            return result
        self.gbe.send_cpu_frame(result.reply, timeout=self.tx_timeout)
        self.answered[result.outcome] += 1
        return result

    # ------------------------------------------------------------- background thread
    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Run ``poll`` in a daemon thread until ``stop()`` (or an error)."""
        if self.running:
            raise TapError(f"{self.gbe.name}: the tap is already running")
        self.error = None
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=f"tap-{self.gbe.name}", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                handled = self.poll()
            except Exception as exc:  # kept for stop() to raise; the loop cannot go on
                self.error = exc
                LOG.error("%s: tap stopped: %s", self.gbe.name, exc)
                return
            if handled is None:
                self._stop.wait(self.interval)

    def stop(self, timeout: float = 5.0) -> None:
        """End the thread; raise TapError if it had stopped on an error."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                raise TapError(f"{self.gbe.name}: the tap thread did not end within {timeout} s")
        if self.error is not None:
            error, self.error = self.error, None
            raise TapError(f"{self.gbe.name}: the tap stopped on an error: {error}") from error
