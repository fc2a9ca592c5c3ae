"""The software ARP/ICMP loop (casperfpga_ext.tap): replies against scapy, every ignore
reason, and the CPU buffer handshake and thread against a register-level model of the
buffers (the RTL itself is exercised in tests/rtl/test_casperfpga_ext_live.py)."""

from __future__ import annotations

import random
import struct
import threading
import time

import pytest
from scapy.layers.inet import ICMP, IP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether
from scapy.utils import checksum as scapy_checksum

from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.gbe import FourHundredGbe
from casperfpga_ext.tap import IGNORE_REASONS, Tap, TapError, answer, inet_checksum
from casperfpga_ext.transport import WORD_BYTES, check_access

OWN_MAC = 0x02000A00000A
OWN_MAC_S = "02:00:0a:00:00:0a"
OWN_IP = 0x0A00000A
OWN_IP_S = "10.0.0.10"
PEER_MAC = "0c:42:a1:00:00:21"
PEER_IP = "10.0.0.33"
REG = regmap.REGISTERS
CPU_RX = regmap.REGIONS["cpu_rx_buf"]
CPU_TX = regmap.REGIONS["cpu_tx_buf"]


def arp_request(pdst: str = OWN_IP_S, **kw: object) -> bytes:
    fields: dict[str, object] = {
        "op": 1,
        "hwsrc": PEER_MAC,
        "psrc": PEER_IP,
        "hwdst": "00:00:00:00:00:00",
        "pdst": pdst,
    }
    fields.update(kw)
    return bytes(Ether(dst="ff:ff:ff:ff:ff:ff", src=PEER_MAC) / ARP(**fields)).ljust(60, b"\0")


def echo_request(data: bytes = b"abc", dst: str = OWN_IP_S, **ip: object) -> bytes:
    fields: dict[str, object] = {"src": PEER_IP, "dst": dst}
    fields.update(ip)
    pkt = Ether(dst=OWN_MAC_S, src=PEER_MAC) / IP(**fields) / ICMP(type=8, id=7, seq=9) / data
    return bytes(pkt).ljust(60, b"\0")


# ----------------------------------------------------------------- replies against scapy
def test_inet_checksum_matches_scapy():
    rng = random.Random(5)
    for n in [0, 1, 2, 3, 20, 21, 1499, 1500, *(rng.randrange(2000) for _ in range(50))]:
        data = rng.randbytes(n)
        assert inet_checksum(data) == scapy_checksum(data), n


def test_arp_reply_matches_scapy():
    rng = random.Random(1)
    for _ in range(50):
        mac = rng.randrange(1 << 48) & ~(1 << 40)  # unicast
        ip = rng.randrange(1, 0xE0000000)
        sha = f"0c:42:a1:{rng.randrange(256):02x}:{rng.randrange(256):02x}:02"
        spa = f"10.1.{rng.randrange(256)}.{rng.randrange(1, 255)}"
        ip_s = ".".join(str(b) for b in ip.to_bytes(4, "big"))
        mac_s = ":".join(f"{b:02x}" for b in mac.to_bytes(6, "big"))
        req = Ether(dst="ff:ff:ff:ff:ff:ff", src=sha) / ARP(op=1, hwsrc=sha, psrc=spa, pdst=ip_s)
        got = answer(bytes(req).ljust(60, b"\0"), mac, ip)
        want = Ether(dst=sha, src=mac_s) / ARP(op=2, hwsrc=mac_s, psrc=ip_s, hwdst=sha, pdst=spa)
        assert got.outcome == "arp_reply" and got.answered
        assert got.reply == bytes(want)


@pytest.mark.parametrize("with_options", [False, True])
def test_echo_reply_matches_scapy(with_options: bool):
    rng = random.Random(2 + with_options)
    for size in [0, 1, 17, 18, 56, 1472, 8000, *(rng.randrange(1500) for _ in range(20))]:
        data = rng.randbytes(size)
        tos, ident, seq, ip_id = (rng.randrange(256), *(rng.randrange(1 << 16) for _ in "abc"))
        ttl = rng.randrange(1, 256)
        options = [IPOption_NOP(), IPOption_RR(routers=["1.2.3.4"])] if with_options else []
        req = (
            Ether(dst=OWN_MAC_S, src=PEER_MAC)
            / IP(src=PEER_IP, dst=OWN_IP_S, tos=tos, id=ip_id, flags="DF", options=options)
            / ICMP(type=8, id=ident, seq=seq)
            / data
        )
        got = answer(bytes(req).ljust(60, b"\0"), OWN_MAC, OWN_IP, ttl)
        want = (
            Ether(dst=PEER_MAC, src=OWN_MAC_S)
            / IP(src=OWN_IP_S, dst=PEER_IP, tos=tos, id=ip_id, flags=0, ttl=ttl)
            / ICMP(type=0, id=ident, seq=seq)
            / data
        )
        assert got.outcome == "icmp_reply"
        assert got.reply == bytes(want), size


def _corrupt(frame: bytes, at: int, xor: int = 0x01) -> bytes:
    out = bytearray(frame)
    out[at] ^= xor
    return bytes(out)


IGNORED = {
    "short": Ether(dst=OWN_MAC_S, src=PEER_MAC, type=0x0800) / b"\x45\x00",
    "ethertype": Ether(dst=OWN_MAC_S, src=PEER_MAC) / IPv6() / b"x",
    "arp_malformed": arp_request(ptype=0x86DD),
    "arp_not_request": arp_request(op=2),
    "arp_other_ip": arp_request("10.0.0.11"),
    "bad_source": Ether(dst="ff:ff:ff:ff:ff:ff", src=PEER_MAC)
    / ARP(op=1, hwsrc="01:00:5e:00:00:01", psrc=PEER_IP, pdst=OWN_IP_S),
    "ip_header": _corrupt(echo_request(), 14, 0x20),  # version 6 in an IPv4 frame
    "ip_checksum": _corrupt(echo_request(), 24),
    "ip_fragment": echo_request(flags="MF"),
    "ip_other_dst": echo_request(dst="10.0.0.255"),
    "ip_protocol": Ether(dst=OWN_MAC_S, src=PEER_MAC) / IP(src=PEER_IP, dst=OWN_IP_S) / UDP(),
    "icmp_not_echo": Ether(dst=OWN_MAC_S, src=PEER_MAC)
    / IP(src=PEER_IP, dst=OWN_IP_S)
    / ICMP(type=13),
    "icmp_checksum": _corrupt(echo_request(b"payload"), 14 + 20 + 9),
}


@pytest.mark.parametrize("reason", sorted(IGNORED))
def test_ignored_frames_name_their_reason(reason: str):
    frame = IGNORED[reason]
    got = answer(bytes(frame), OWN_MAC, OWN_IP)
    assert (got.outcome, got.reply) == (reason, None)
    assert reason in IGNORE_REASONS


def test_more_ignore_cases():
    assert answer(arp_request(), OWN_MAC, 0).outcome == "unconfigured"
    assert answer(arp_request(), OWN_MAC, OWN_IP, arp=False).outcome == "arp_disabled"
    assert answer(echo_request(), OWN_MAC, OWN_IP, icmp=False).outcome == "icmp_disabled"
    assert answer(echo_request(src="0.0.0.0"), OWN_MAC, OWN_IP).outcome == "bad_source"
    # A total length beyond the frame: truncated in transit.
    long = bytearray(echo_request(b"x" * 100))
    struct.pack_into("!H", long, 16, 400)
    struct.pack_into("!H", long, 24, 0)
    struct.pack_into("!H", long, 24, inet_checksum(bytes(long[14:34])))
    assert answer(bytes(long), OWN_MAC, OWN_IP).outcome == "short"
    assert answer(b"\x00" * 13, OWN_MAC, OWN_IP).outcome == "short"


# ----------------------------------------------------------------- CPU buffer handshake
class FakeCore:
    """The core's registers and CPU buffers as software sees them (big-endian words).

    cpu_rx_len shows the first queued frame, cpu_rx_ack drops it; a cpu_tx_len write
    sends the buffer's first bytes when ctrl.cpu_tx_en is set and keeps
    status.cpu_tx_busy up for ``busy_reads`` status reads.
    """

    def __init__(self) -> None:
        self.words = [0] * (regmap.BLOCK_SIZE // WORD_BYTES)
        self.rx: list[bytes] = []
        self.sent: list[bytes] = []
        self.busy_reads = 0
        self.busy_left = 0
        self.fail_after: int | None = None
        self.lock = threading.Lock()
        self.set("mac_hi", OWN_MAC >> 32)
        self.set("mac_lo", OWN_MAC & 0xFFFFFFFF)
        self.set("ip", OWN_IP)
        self.set("ttl", 64)
        self.set("ctrl", REG["ctrl"].reset)

    def set(self, name: str, value: int) -> None:
        self.words[REG[name].offset // WORD_BYTES] = value

    def get(self, name: str) -> int:
        return self.words[REG[name].offset // WORD_BYTES]

    def _word(self, offset: int) -> int:
        if offset == REG["cpu_rx_len"].offset:
            return len(self.rx[0]) if self.rx else 0
        if offset == REG["status"].offset:
            busy = self.busy_left > 0
            self.busy_left -= busy
            return REG["status"].field("cpu_tx_busy").put(0, int(busy))
        if CPU_RX.offset <= offset < CPU_RX.offset + CPU_RX.size:
            frame = (self.rx[0] if self.rx else b"").ljust(CPU_RX.size, b"\0")
            k = offset - CPU_RX.offset
            return int.from_bytes(frame[k : k + 4], "big")
        return self.words[offset // WORD_BYTES]

    def read(self, device_name: str, size: int, offset: int = 0) -> bytes:
        with self.lock:
            check_access(device_name, regmap.BLOCK_SIZE, offset, size)
            if self.fail_after is not None:
                if self.fail_after == 0:
                    raise OSError("bus error")
                self.fail_after -= 1
            return b"".join(
                self._word(offset + k).to_bytes(4, "big") for k in range(0, size, WORD_BYTES)
            )

    def blindwrite(self, device_name: str, data: bytes, offset: int = 0) -> None:
        with self.lock:
            check_access(device_name, regmap.BLOCK_SIZE, offset, len(data))
            for k in range(0, len(data), WORD_BYTES):
                self._write(offset + k, int.from_bytes(data[k : k + 4], "big"))

    def _write(self, offset: int, value: int) -> None:
        if offset == REG["cpu_rx_ack"].offset:
            if value & 1 and self.rx:
                self.rx.pop(0)
            return
        self.words[offset // WORD_BYTES] = value
        tx_en = REG["ctrl"].field("cpu_tx_en").get(self.get("ctrl"))
        if offset == REG["cpu_tx_len"].offset and tx_en:
            buf = b"".join(
                w.to_bytes(4, "big")
                for w in self.words[CPU_TX.offset // 4 : (CPU_TX.offset + value + 3) // 4]
            )
            self.sent.append(buf[:value])
            self.busy_left = self.busy_reads

    def listdev(self) -> list[str]:
        return ["gbe0"]

    def is_connected(self) -> bool:
        return True


@pytest.fixture
def core() -> FakeCore:
    return FakeCore()


@pytest.fixture
def gbe(core: FakeCore) -> FourHundredGbe:
    return FourHundredGbe(core, "gbe0")


def test_enable_sets_the_cpu_path(core: FakeCore, gbe: FourHundredGbe):
    ctrl = REG["ctrl"]
    Tap(gbe).enable()
    value = core.get("ctrl")
    assert ctrl.field("cpu_rx_en").get(value) == ctrl.field("cpu_tx_en").get(value) == 1
    assert ctrl.field("arp_reply_en").get(value) == 1, "left alone by default"
    Tap(gbe).enable(hardware_arp=False)
    assert ctrl.field("arp_reply_en").get(core.get("ctrl")) == 0


def test_poll_answers_acknowledges_and_counts(core: FakeCore, gbe: FourHundredGbe):
    tap = Tap(gbe)
    tap.enable(hardware_arp=False)
    assert tap.poll() is None
    core.set("ttl", 17)
    core.rx += [arp_request(), arp_request("10.0.0.99"), echo_request(b"hello")]
    core.busy_reads = 3
    outcomes = [tap.poll(), tap.poll(), tap.poll(), tap.poll()]
    assert [o.outcome if o else None for o in outcomes] == [
        "arp_reply",
        "arp_other_ip",
        "icmp_reply",
        None,
    ]
    assert core.rx == []
    assert core.sent == [
        answer(arp_request(), OWN_MAC, OWN_IP).reply,
        answer(echo_request(b"hello"), OWN_MAC, OWN_IP, 17).reply,
    ]
    assert tap.counts() == {"frames": 3, "arp_reply": 1, "icmp_reply": 1, "arp_other_ip": 1}


def test_send_cpu_frame_errors(core: FakeCore, gbe: FourHundredGbe):
    with pytest.raises(OSError, match=r"ctrl\.cpu_tx_en is 0"):
        gbe.send_cpu_frame(bytes(60))
    Tap(gbe).enable()
    with pytest.raises(ValueError, match="CPU frame of 13 bytes"):
        gbe.send_cpu_frame(bytes(13))
    with pytest.raises(ValueError, match="16385 bytes"):
        gbe.send_cpu_frame(bytes(16385))
    core.busy_left = 10**9
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match=r"still busy after 0\.05 s"):
        gbe.send_cpu_frame(bytes(60), timeout=0.05)
    assert time.monotonic() - t0 < 2
    assert core.sent == []
    core.busy_left = 0
    gbe.send_cpu_frame(b"\x01" * 61)
    assert core.sent == [b"\x01" * 61]


def test_read_cpu_frame_refuses_an_impossible_length(core: FakeCore, gbe: FourHundredGbe):
    core.rx.append(bytes(CPU_RX.size + 4))
    with pytest.raises(OSError, match="cpu_rx_len 16388 exceeds"):
        gbe.read_cpu_frame()


def test_tap_arguments_are_checked(gbe: FourHundredGbe):
    with pytest.raises(ValueError, match="interval 0"):
        Tap(gbe, interval=0)


def test_tap_thread_answers_then_stops(core: FakeCore, gbe: FourHundredGbe):
    tap = gbe.tap_start(hardware_arp=False, interval=0.001)
    assert gbe.tap_running() and gbe.tap_start() is tap
    with pytest.raises(TapError, match="already running"):
        tap.start()
    with core.lock:
        core.rx += [echo_request(bytes([k]) * 40) for k in range(5)]
    deadline = time.monotonic() + 10
    while tap.frames < 5 and time.monotonic() < deadline:
        time.sleep(0.005)
    gbe.tap_stop()
    assert not gbe.tap_running()
    assert tap.counts() == {"frames": 5, "icmp_reply": 5}
    assert len(core.sent) == 5
    restarted = gbe.tap_start(restart=True)
    assert restarted is not tap and gbe.tap_running()
    gbe.tap_stop()


def test_tap_thread_error_is_raised_by_stop(core: FakeCore, gbe: FourHundredGbe):
    tap = gbe.tap_start(interval=0.001)
    core.fail_after = 3
    deadline = time.monotonic() + 10
    while tap.running and time.monotonic() < deadline:
        time.sleep(0.005)
    assert not tap.running
    with pytest.raises(TapError, match="stopped on an error: bus error"):
        gbe.tap_stop()
    gbe.tap_stop()  # reported once
