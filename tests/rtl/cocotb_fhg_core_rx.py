"""System tests of the receive path of ``fhg_core`` (DCMAC RX segments → user port).

Frames are put on the RX bus by the DCMAC RX model (two SOPs per cycle, back to back,
line-rate pacing, FCS errors); every delivered datagram is compared with scapy's view of
the frame (:func:`rx_expect.classify`), and the register counters must account for every
frame: delivered + each drop reason + ARP + to-CPU = received.
"""

from __future__ import annotations

import ipaddress
import os
import random

import cocotb
from cocotb.triggers import ClockCycles, Timer
from scapy.layers.inet import IP, UDP, IPOption_NOP
from scapy.layers.l2 import ARP, Ether

from casperfpga_ext import fhg_regmap as regmap
from verification.core_harness import CoreHarness
from verification.models import rx_expect
from verification.models.dcmac_rx import DcmacRxDriver
from verification.models.dcmac_tx import DcmacTxMonitor
from verification.models.user_rx import UserRxMonitor
from verification.models.user_tx import UserTxDriver

OWN_MAC = 0x02000A00000A
OWN_IP = "10.0.0.10"
PORT = 7148
MC_IP = "239.1.2.0"
MC_MASK = "255.255.255.0"
PEER_MAC = 0x0C42A1000014
FCS_ON_BUS = bool(int(os.environ.get("CASPER400G_RX_FCS_ON_BUS", "0")))
MIX_FRAMES = int(os.environ.get("CASPER400G_RX_FRAMES", "20000"))

RX_COUNTERS = [
    "rx_frames",
    "rx_udp_packets",
    "rx_arp_requests",
    "rx_to_cpu",
    "rx_bad_udp_checksum",
    *rx_expect.DROP_REASONS,
    "rx_drop_overrun",
    "rx_drop_cpu_busy",
]
# Totals and casperfpga's 32-bit counters, checked against the traffic.
RX_TOTALS = [
    "rx_bytes",
    "rx_udp_bytes",
    "rx_packet_counter",
    "rx_valid_counter",
    "rx_bad_counter",
    "rx_overflow_counter",
]


def _ip(s: str) -> int:
    return int(ipaddress.IPv4Address(s))


def config(**flags: bool) -> rx_expect.RxConfig:
    return rx_expect.RxConfig.make(OWN_MAC, OWN_IP, PORT, mc_ip=MC_IP, mc_mask=MC_MASK, **flags)


async def start(dut, cfg: rx_expect.RxConfig, *, rx_mode: str = "line", seed: int = 1, **rx_kw):  # noqa: ANN001
    h = CoreHarness(dut)
    tx = DcmacTxMonitor(
        dut, clock=dut.tx_mac_clk, mac_clk_hz=h.mac_clk_hz, mode="always", reset=dut.tx_mac_rst
    )
    rx = DcmacRxDriver(
        dut,
        clock=dut.rx_mac_clk,
        reset=dut.rx_mac_rst,
        strip_fcs=not FCS_ON_BUS,
        mode=rx_mode,
        mac_clk_hz=h.mac_clk_hz,
        seed=seed,
        **rx_kw,
    )
    user = UserRxMonitor(dut, clock=dut.user_clk, reset=dut.rst)
    await h.reset()
    await h.configure(cfg.mac, cfg.ip, cfg.port, netmask=cfg.netmask)
    await h.write_reg("mc_ip", cfg.mc_ip)
    await h.write_reg("mc_mask", cfg.mc_mask)
    await h.set_field("ctrl", "promisc_en", int(cfg.promiscuous))
    await h.set_field("ctrl", "cpu_rx_en", int(cfg.cpu_rx_en))
    await h.set_field("ctrl", "arp_reply_en", int(cfg.arp_reply_en))
    await h.set_field("ctrl", "arp_learn_en", int(cfg.arp_learn_en))
    await h.settle_config()
    if cfg.fabric_en:
        await h.enable()
    return h, tx, rx, user


async def drain(h: CoreHarness, rx: DcmacRxDriver) -> None:
    await rx.wait_idle()
    # lane pipeline, merger, RX FIFO crossing, counter deltas
    await ClockCycles(h.dut.rx_mac_clk, 400)
    await Timer(2, unit="us")


async def rx_counters(h: CoreHarness) -> dict[str, int]:
    return await h.counters(RX_COUNTERS + RX_TOTALS)


def check_totals(c: dict[str, int], sent: list[bytes], got: list) -> None:
    """The byte, word and 32-bit counters against the frames sent and datagrams delivered
    (`got`: the user port's RxDatagram list)."""
    drops = sum(c[r] for r in rx_expect.DROP_REASONS) + c["rx_drop_overrun"]
    drops += c["rx_drop_cpu_busy"]
    want = {
        "rx_bytes": sum(len(f) for f in sent),
        "rx_udp_bytes": sum(len(d.payload) for d in got),
        "rx_packet_counter": len(got),
        "rx_valid_counter": sum(d.words for d in got),
        "rx_bad_counter": drops,
        "rx_overflow_counter": c["rx_drop_overrun"],
    }
    assert c["rx_udp_packets"] == len(got), (c["rx_udp_packets"], len(got))
    for name, value in want.items():
        assert c[name] == value, f"{name}: counted {c[name]}, traffic gives {value}"


def check_identity(c: dict[str, int]) -> None:
    parts = c["rx_udp_packets"] + c["rx_arp_requests"] + c["rx_to_cpu"]
    parts += (
        sum(c[r] for r in rx_expect.DROP_REASONS) + c["rx_drop_overrun"] + c["rx_drop_cpu_busy"]
    )
    assert parts == c["rx_frames"], (
        f"accounting: {parts} accounted != {c['rx_frames']} received: {c}"
    )


def check_delivered(expected: list[rx_expect.RxVerdict], got: list, overruns: int) -> None:
    """Delivered datagrams equal the expected ones in order; the missing ones (whole
    frames dropped for lack of room) are exactly the overrun count."""
    i = 0
    missing = 0
    for d in got:
        while i < len(expected) and expected[i].payload != d.payload:
            i += 1
            missing += 1
        assert i < len(expected), (
            f"delivered datagram of {len(d.payload)} B matches no expected one"
        )
        e = expected[i]
        assert (d.src_ip, d.dst_ip, d.src_port, d.dst_port) == (
            e.src_ip,
            e.dst_ip,
            e.src_port,
            e.dst_port,
        )
        assert d.bad == e.bad_udp_checksum, (
            f"datagram {i}: bad flag {d.bad} != {e.bad_udp_checksum}"
        )
        i += 1
    missing += len(expected) - i
    assert missing == overruns, (
        f"{missing} expected datagrams missing, {overruns} counted as overrun"
    )


async def log_progress(dut, user: UserRxMonitor, n: int, every_us: int = 500) -> None:  # noqa: ANN001
    """How far a long mix got (datagrams delivered so far), in the simulation log."""
    while True:
        await Timer(every_us, unit="us")
        dut._log.info("mix of %d frames: %d datagrams delivered so far", n, len(user.datagrams))


async def run_mix(dut, n: int, cfg: rx_expect.RxConfig, seed: int, **rx_kw) -> dict[str, int]:  # noqa: ANN001
    mix = rx_expect.make_mix(n, cfg, seed=seed)
    h, tx, rx, user = await start(dut, cfg, seed=seed, **rx_kw)
    for mf in mix:
        rx.send_nowait(mf.frame, mf.err)
    progress = cocotb.start_soon(log_progress(dut, user, n))
    await drain(h, rx)
    progress.cancel()
    c = await rx_counters(h)
    want = rx_expect.tally([mf.verdict for mf in mix])
    dut._log.info("mix of %d frames: %s", n, {k: v for k, v in c.items() if v})
    check_identity(c)
    assert c["rx_frames"] == n
    for reason in rx_expect.DROP_REASONS:
        assert c[reason] == want[reason], f"{reason}: counted {c[reason]}, expected {want[reason]}"
    assert c["rx_arp_requests"] == want["arp"]
    assert c["rx_to_cpu"] + c["rx_drop_cpu_busy"] == want["to_cpu"]
    assert c["rx_udp_packets"] + c["rx_drop_overrun"] == want["delivered"]
    delivered = [mf.verdict for mf in mix if mf.verdict.delivered]
    check_delivered(delivered, user.datagrams, c["rx_drop_overrun"])
    assert c["rx_bad_udp_checksum"] == sum(d.bad for d in user.datagrams)
    check_totals(c, [mf.frame for mf in mix], user.datagrams)
    # every consumed ARP request was answered on the TX side
    replies = [f for f in tx.frames if f.body[12:14] == b"\x08\x06"]
    requests = sum(1 for mf in mix if mf.verdict.verdict == "arp" and ARP(mf.frame[14:42]).op == 1)
    assert len(replies) == requests, f"{len(replies)} ARP replies for {requests} requests"
    return c


@cocotb.test()
async def rx_mix_accounting(dut) -> None:  # noqa: ANN001
    """A random mix of every frame kind at line rate: exact per-reason accounting and
    bit-exact payloads."""
    await run_mix(dut, MIX_FRAMES, config(), seed=11, idle_prob=0.02, random_align=True)


@cocotb.test()
async def rx_mix_cpu_promisc(dut) -> None:  # noqa: ANN001
    """The same with promiscuous mode and the CPU path on (frames not for the data path
    go to the CPU buffer, which software empties as frames arrive)."""
    cfg = config(promiscuous=True, cpu_rx_en=True, arp_learn_en=True)
    mix = rx_expect.make_mix(300, cfg, seed=5)
    h, _tx, rx, user = await start(dut, cfg, seed=5)
    placed: list[bytes] = []
    expect_cpu = [mf.frame for mf in mix if mf.verdict.verdict == "to_cpu"]
    for mf in mix:
        rx.send_nowait(mf.frame, mf.err)
        # one frame at a time, so software can empty the buffer in between
        await rx.wait_idle()
        await ClockCycles(dut.rx_mac_clk, 40)
        if mf.verdict.verdict == "to_cpu":
            placed.append(await read_cpu_frame(h))
    await drain(h, rx)
    c = await rx_counters(h)
    check_identity(c)
    assert c["rx_to_cpu"] == len(expect_cpu) and c["rx_drop_cpu_busy"] == 0, c
    assert placed == expect_cpu
    delivered = [mf.verdict for mf in mix if mf.verdict.delivered]
    check_delivered(delivered, user.datagrams, c["rx_drop_overrun"])


async def read_cpu_frame(h: CoreHarness, timeout_us: int = 20) -> bytes:
    for _ in range(timeout_us * 10):
        n = await h.read_reg("cpu_rx_len")
        if n:
            break
        await Timer(100, unit="ns")
    else:
        raise AssertionError("no frame arrived in the CPU RX buffer")
    base = regmap.REGIONS["cpu_rx_buf"].offset
    data = bytearray()
    for i in range((n + 3) // 4):
        data += (await h.read32(base + 4 * i)).to_bytes(4, "big")
    await h.write_reg("cpu_rx_ack", 1)
    for _ in range(100):
        if not await h.read_reg("cpu_rx_len"):
            break
    return data[:n]


@cocotb.test()
async def rx_cpu_busy(dut) -> None:  # noqa: ANN001
    """A second frame for the CPU before software released the first is dropped and
    counted; after the acknowledge the next one is placed."""
    cfg = config(cpu_rx_en=True)
    h, _tx, rx, _user = await start(dut, cfg)
    frames = [
        bytes(
            Ether(dst=OWN_MAC.to_bytes(6, "big"), src=PEER_MAC.to_bytes(6, "big"), type=0x86DD)
            / (b"A%03d" % i * 40)
        )
        for i in range(3)
    ]
    rx.send_nowait(frames[0])
    rx.send_nowait(frames[1])
    await drain(h, rx)
    assert await read_cpu_frame(h) == frames[0]
    rx.send_nowait(frames[2])
    await drain(h, rx)
    assert await read_cpu_frame(h) == frames[2]
    c = await rx_counters(h)
    assert (c["rx_to_cpu"], c["rx_drop_cpu_busy"], c["rx_frames"]) == (2, 1, 3), c


def arp_request(tpa: str, spa: str = "10.0.0.33", sha: int = PEER_MAC) -> bytes:
    pkt = Ether(dst="ff:ff:ff:ff:ff:ff", src=sha.to_bytes(6, "big")) / ARP(
        op=1, hwsrc=sha.to_bytes(6, "big"), psrc=spa, hwdst="00:00:00:00:00:00", pdst=tpa
    )
    return bytes(pkt).ljust(60, b"\0")


@cocotb.test()
async def rx_arp_responder(dut) -> None:  # noqa: ANN001
    """A scapy ARP request for our IP gets the reply scapy builds; requests for other IPs
    get none; a gratuitous ARP goes out on request."""
    h, tx, rx, _user = await start(dut, config())
    rx.send_nowait(arp_request(OWN_IP))
    rx.send_nowait(arp_request("10.0.0.99"))
    rx.send_nowait(arp_request(OWN_IP, spa="10.0.0.34", sha=0x0C42A1000022))
    await drain(h, rx)
    await Timer(1, unit="us")
    own = OWN_MAC.to_bytes(6, "big")

    def reply(sha: int, spa: str) -> bytes:
        dst = sha.to_bytes(6, "big")
        pkt = Ether(dst=dst, src=own) / ARP(op=2, hwsrc=own, psrc=OWN_IP, hwdst=dst, pdst=spa)
        return bytes(pkt).ljust(60, b"\0")

    got = [f.body for f in tx.frames]
    assert got == [reply(PEER_MAC, "10.0.0.33"), reply(0x0C42A1000022, "10.0.0.34")], got
    c = await rx_counters(h)
    assert (c["rx_arp_requests"], c["rx_drop_arp"]) == (2, 1), c
    assert await h.read_reg("tx_arp_replies") == 2
    await h.set_field("ctrl", "send_garp", 1)
    await Timer(2, unit="us")
    garp = Ether(dst="ff:ff:ff:ff:ff:ff", src=own) / ARP(
        op=1, hwsrc=own, psrc=OWN_IP, hwdst="00:00:00:00:00:00", pdst=OWN_IP
    )
    assert tx.frames[-1].body == bytes(garp).ljust(60, b"\0")


@cocotb.test()
async def rx_arp_learning(dut) -> None:  # noqa: ANN001
    """ARP replies to us update the table only with arp_learn_en, and only in our subnet."""
    h, _tx, rx, _user = await start(dut, config())
    base = regmap.REGIONS["arp_table"].offset

    def reply(sha: int, spa: str) -> bytes:
        pkt = Ether(dst=OWN_MAC.to_bytes(6, "big"), src=sha.to_bytes(6, "big")) / ARP(
            op=2,
            hwsrc=sha.to_bytes(6, "big"),
            psrc=spa,
            hwdst=OWN_MAC.to_bytes(6, "big"),
            pdst=OWN_IP,
        )
        return bytes(pkt).ljust(60, b"\0")

    rx.send_nowait(reply(0x0C42A1000021, "10.0.0.33"))
    await drain(h, rx)
    assert await h.read32(base + 8 * 33) == 0, "static table changed with learning off"
    await h.set_field("ctrl", "arp_learn_en", 1)
    await h.settle_config()
    rx.send_nowait(reply(0x0C42A1000021, "10.0.0.33"))
    rx.send_nowait(reply(0x0C42A1000099, "10.0.9.44"))  # off-subnet: ignored
    await drain(h, rx)
    assert await h.read32(base + 8 * 33) == (1 << 16) | 0x0C42
    assert await h.read32(base + 8 * 33 + 4) == 0xA1000021
    assert await h.read32(base + 8 * 44) == 0
    c = await rx_counters(h)
    assert (c["rx_drop_arp"], c["rx_arp_requests"]) == (1, 2), c


@cocotb.test()
async def rx_loopback(dut) -> None:  # noqa: ANN001
    """TX path → MAC model → RX path of the same core: payloads, addresses and ports come
    back bit-exact."""
    h, tx, rx, user = await start(dut, config(), rx_mode="line")
    await h.set_arp(10, OWN_MAC)  # our own IP resolves to our own MAC
    drv = UserTxDriver(dut, clock=dut.user_clk, reset=dut.rst)
    rng = random.Random(3)
    sent = []
    for _i in range(60):
        n = rng.choice([1, 17, 128, 129, 1472, 4000, 8192, rng.randrange(1, 8973)])
        payload = bytes(rng.randrange(256) for _ in range(n))
        dport = PORT
        sent.append(payload)
        drv.send_nowait(payload, _ip(OWN_IP), dport)
    await drv.wait_idle()
    for _ in range(2000):
        await ClockCycles(dut.tx_mac_clk, 10)
        if len(tx.frames) >= len(sent):
            break
    assert len(tx.frames) == len(sent)
    for f in tx.frames:
        rx.send_nowait(f.body, f.err)
    await drain(h, rx)
    assert [d.payload for d in user.datagrams] == sent
    for d in user.datagrams:
        assert (d.src_ip, d.dst_ip, d.src_port, d.dst_port) == (
            _ip(OWN_IP),
            _ip(OWN_IP),
            PORT,
            PORT,
        )
        assert not d.bad
    c = await rx_counters(h)
    check_identity(c)
    assert c["rx_udp_packets"] == len(sent)


def udp_frame(payload: bytes, ident: int) -> bytes:
    pkt = (
        Ether(dst=OWN_MAC.to_bytes(6, "big"), src=PEER_MAC.to_bytes(6, "big"))
        / IP(src="10.0.0.20", dst=OWN_IP, id=ident, flags="DF")
        / UDP(sport=4000, dport=PORT)
        / payload
    )
    return bytes(pkt)


@cocotb.test()
async def rx_line_rate_8192(dut) -> None:  # noqa: ANN001
    """Back-to-back 8192-byte datagrams at the 400GbE line rate, rx_ack always high: no loss."""
    h, _tx, rx, user = await start(dut, config(), rx_mode="line")
    assert int(dut.led_rx.value) == 0, "led_rx lit before any frame"
    assert int(dut.led_up.value) == 1, "led_up follows the link (mac_link_up)"
    n = 120
    payloads = [bytes([i & 0xFF]) * 8192 for i in range(n)]
    for i, p in enumerate(payloads):
        rx.send_nowait(udp_frame(p, i))
    await drain(h, rx)
    util = rx.stats.line_utilisation(h.mac_clk_hz)
    dut._log.info("8192 B at %.4f of the line rate: %d delivered", util, len(user.datagrams))
    assert util > 0.99
    c = await rx_counters(h)
    check_identity(c)
    assert c["rx_drop_overrun"] == 0 and c["rx_udp_packets"] == n, c
    assert [d.payload for d in user.datagrams] == payloads
    assert int(dut.led_rx.value) == 1, "led_rx stretches the RX activity"


@cocotb.test()
async def rx_over_user_ceiling(dut) -> None:  # noqa: ANN001
    """8972-byte datagrams at line rate exceed one word per user_clk: the excess is dropped
    as whole frames and counted; rx_overrun is raised; what arrives is intact."""
    h, _tx, rx, user = await start(dut, config(), rx_mode="line")
    user.auto_overrun_ack = False
    n = 160
    payloads = [bytes([i & 0xFF, 0x5A]) * 4486 for i in range(n)]
    for i, p in enumerate(payloads):
        rx.send_nowait(udp_frame(p, i))
    await drain(h, rx)
    c = await rx_counters(h)
    check_identity(c)
    dut._log.info(
        "8972 B at line rate: %d delivered, %d dropped whole",
        c["rx_udp_packets"],
        c["rx_drop_overrun"],
    )
    assert c["rx_drop_overrun"] > 0
    assert c["rx_udp_packets"] + c["rx_drop_overrun"] == n
    check_delivered(
        [
            rx_expect.RxVerdict("delivered", p, _ip("10.0.0.20"), _ip(OWN_IP), 4000, PORT)
            for p in payloads
        ],
        user.datagrams,
        c["rx_drop_overrun"],
    )
    assert int(dut.rx_overrun.value) == 1
    status = await h.read_reg("status")
    assert regmap.REGISTERS["status"].field("rx_overrun").get(status) == 1
    dut.rx_overrun_ack.value = 1
    await ClockCycles(dut.user_clk, 2)
    dut.rx_overrun_ack.value = 0
    await ClockCycles(dut.user_clk, 2)
    assert int(dut.rx_overrun.value) == 0


@cocotb.test()
async def rx_mix_fabric_disabled(dut) -> None:  # noqa: ANN001
    """fabric_en = 0: the datagrams that pass every check are counted as rx_drop_disabled,
    every other frame keeps its own reason; nothing reaches the user port."""
    cfg = config(fabric_en=False)
    want = rx_expect.tally([mf.verdict for mf in rx_expect.make_mix(600, cfg, seed=17)])
    assert want["rx_drop_disabled"] > 0 and want["delivered"] == 0
    c = await run_mix(dut, 600, cfg, seed=17)
    assert c["rx_drop_disabled"] == want["rx_drop_disabled"]
    assert c["rx_udp_packets"] == c["rx_drop_overrun"] == 0, c


@cocotb.test()
async def rx_mix_cpu_buffer_never_released(dut) -> None:  # noqa: ANN001
    """Frames for the CPU at line rate while software never acknowledges: the first one is
    placed (rx_to_cpu = 1), every later one is rx_drop_cpu_busy; the buffer holds the first."""
    cfg = config(promiscuous=True, cpu_rx_en=True)
    mix = rx_expect.make_mix(400, cfg, seed=23)
    cpu_frames = [mf.frame for mf in mix if mf.verdict.verdict == "to_cpu"]
    assert len(cpu_frames) > 10
    h, _tx, rx, user = await start(dut, cfg, seed=23)
    for mf in mix:
        rx.send_nowait(mf.frame, mf.err)
    await drain(h, rx)
    c = await rx_counters(h)
    check_identity(c)
    assert c["rx_to_cpu"] == 1, c
    assert c["rx_drop_cpu_busy"] == len(cpu_frames) - 1, c
    assert await read_cpu_frame(h) == cpu_frames[0]
    check_totals(c, [mf.frame for mf in mix], user.datagrams)


def _udp(
    payload: bytes = b"precedence" * 4,
    *,
    dst_mac: int = OWN_MAC,
    etype: int | None = None,
    ip_kw: dict | None = None,
    udp_kw: dict | None = None,
    cut: int | None = None,
) -> bytes:
    """A scapy UDP frame for us with the given header fields overridden (faults)."""
    eth = Ether(dst=dst_mac.to_bytes(6, "big"), src=PEER_MAC.to_bytes(6, "big"))
    if etype is not None:
        eth.type = etype
    ip = IP(**{"src": "10.0.0.20", "dst": OWN_IP, **(ip_kw or {})})
    pkt = bytes(eth / ip / UDP(**{"sport": 4000, "dport": PORT, **(udp_kw or {})}) / payload)
    return pkt[:cut] if cut is not None else pkt


OTHER_MAC = 0x0C42A1000099
# Frames with two or more faults at once, and the one reason docs/design/core.md §3's order gives.
# The order: FCS, length < 14, destination MAC, EtherType (ARP apart), length < 34, IP
# version, IP options, fragment, IP checksum, protocol, destination IP, length < 42,
# destination port, lengths, fabric_en, room (overrun).
MULTI_FAULT: list[tuple[str, bool, bytes, str]] = [
    ("bad FCS + wrong MAC", True, _udp(dst_mac=OTHER_MAC), "rx_drop_fcs"),
    ("bad FCS + 12-byte runt", True, _udp()[:12], "rx_drop_fcs"),
    ("12-byte runt + wrong MAC", False, _udp(dst_mac=OTHER_MAC)[:12], "rx_drop_length"),
    (
        "wrong MAC + bad IP checksum",
        False,
        _udp(dst_mac=OTHER_MAC, ip_kw={"chksum": 1}),
        "rx_drop_dst_mac",
    ),
    ("wrong MAC + IPv6 EtherType", False, _udp(dst_mac=OTHER_MAC, etype=0x86DD), "rx_drop_dst_mac"),
    (
        "wrong MAC + ARP request for another IP",
        False,
        OTHER_MAC.to_bytes(6, "big") + arp_request("10.0.0.99")[6:],
        "rx_drop_dst_mac",
    ),
    ("IPv6 EtherType + 30 bytes", False, _udp(etype=0x86DD, cut=30), "rx_drop_ethertype"),
    (
        "IPv4 cut to 30 bytes + version 6",
        False,
        _udp(ip_kw={"version": 6}, cut=30),
        "rx_drop_length",
    ),
    (
        "version 6 + bad IP checksum + fragment",
        False,
        _udp(ip_kw={"version": 6, "chksum": 1, "flags": "MF"}),
        "rx_drop_ip_version",
    ),
    (
        "IP options + fragment + bad checksum",
        False,
        _udp(ip_kw={"options": [IPOption_NOP()] * 4, "frag": 3, "chksum": 1}),
        "rx_drop_ip_options",
    ),
    (
        "fragment + bad UDP length",
        False,
        _udp(ip_kw={"flags": "MF"}, udp_kw={"len": 9}),
        "rx_drop_ip_fragment",
    ),
    (
        "fragment offset + bad IP checksum + wrong port",
        False,
        _udp(ip_kw={"frag": 100, "chksum": 1}, udp_kw={"dport": 9}),
        "rx_drop_ip_fragment",
    ),
    (
        "bad IP checksum + not UDP",
        False,
        _udp(ip_kw={"chksum": 1, "proto": 6}),
        "rx_drop_ip_checksum",
    ),
    (
        "not UDP + wrong IP",
        False,
        _udp(ip_kw={"proto": 6, "dst": "10.0.0.99"}),
        "rx_drop_ip_protocol",
    ),
    (
        "wrong IP + wrong port + bad UDP length",
        False,
        _udp(ip_kw={"dst": "10.0.0.99"}, udp_kw={"dport": 9, "len": 9}),
        "rx_drop_dst_ip",
    ),
    (
        "wrong IP + cut to 38 bytes",
        False,
        _udp(ip_kw={"dst": "10.0.0.99"}, cut=38),
        "rx_drop_dst_ip",
    ),
    ("cut to 38 bytes + wrong port", False, _udp(udp_kw={"dport": 9}, cut=38), "rx_drop_length"),
    ("wrong port + bad UDP length", False, _udp(udp_kw={"dport": 9, "len": 9}), "rx_drop_dst_port"),
    (
        "wrong port + IP length beyond the frame",
        False,
        _udp(ip_kw={"len": 400}, udp_kw={"dport": 9}),
        "rx_drop_dst_port",
    ),
    (
        "bad UDP length + bad UDP checksum",
        False,
        _udp(udp_kw={"len": 20, "chksum": 1}),
        "rx_drop_length",
    ),
    ("bad UDP checksum alone: delivered, flagged", False, _udp(udp_kw={"chksum": 1}), "delivered"),
]


async def one_frame_verdict(h: CoreHarness, rx: DcmacRxDriver, frame: bytes, err: bool) -> str:
    """Send one frame and name the single counter it moved."""
    before = await rx_counters(h)
    rx.send_nowait(frame, err)
    await drain(h, rx)
    after = await rx_counters(h)
    moved = {k: after[k] - before[k] for k in RX_COUNTERS if after[k] != before[k]}
    assert moved.pop("rx_frames", 0) == 1, moved
    if moved.get("rx_udp_packets") == 1:
        moved.pop("rx_bad_udp_checksum", None)
        moved.pop("rx_udp_packets")
        assert not moved, moved
        return "delivered"
    assert len(moved) == 1 and set(moved.values()) == {1}, moved
    counter = next(iter(moved))
    return {"rx_to_cpu": "to_cpu", "rx_arp_requests": "arp"}.get(counter, counter)


@cocotb.test()
async def rx_filter_precedence_multi_fault(dut) -> None:  # noqa: ANN001
    """Frames with two or more faults at once are counted under the first failing check of
    docs/design/core.md §3 (the reference model agrees with the table before the RTL is asked)."""
    cfg = config()
    h, _tx, rx, user = await start(dut, cfg)
    for name, err, frame, want in MULTI_FAULT:
        assert rx_expect.classify(frame, cfg, err=err).verdict == want, f"model: {name}"
        got = await one_frame_verdict(h, rx, frame, err)
        assert got == want, f"{name}: counted as {got}, precedence gives {want}"
    assert len(user.datagrams) == 1 and user.datagrams[0].bad


@cocotb.test()
async def rx_filter_precedence_cpu_and_disabled(dut) -> None:  # noqa: ANN001
    """With the CPU path on, a fault that sends to the CPU still yields to an earlier
    check; with fabric_en = 0, rx_drop_disabled comes after every header check."""
    cfg = config(cpu_rx_en=True)
    h, _tx, rx, _user = await start(dut, cfg)
    cases = [
        (
            "IP options + fragment",
            _udp(ip_kw={"options": [IPOption_NOP()] * 4, "flags": "MF"}),
            "to_cpu",
        ),
        ("fragment + not UDP", _udp(ip_kw={"flags": "MF", "proto": 6}), "rx_drop_ip_fragment"),
        ("not UDP + wrong IP", _udp(ip_kw={"proto": 6, "dst": "10.0.0.99"}), "to_cpu"),
        (
            "wrong IP + wrong port",
            _udp(ip_kw={"dst": "10.0.0.99"}, udp_kw={"dport": 9}),
            "rx_drop_dst_ip",
        ),
    ]
    for name, frame, want in cases:
        assert rx_expect.classify(frame, cfg).verdict == want, f"model: {name}"
        got = await one_frame_verdict(h, rx, frame, False)
        assert got == want, f"{name}: counted as {got}, precedence gives {want}"
        if got == "to_cpu":
            assert await read_cpu_frame(h) == frame
    await h.set_field("ctrl", "cpu_rx_en", 0)
    await h.set_field("ctrl", "fabric_en", 0)
    await h.settle_config()
    off = rx_expect.with_config(cfg, cpu_rx_en=False, fabric_en=False)
    for name, frame, want in [
        ("disabled + wrong port", _udp(udp_kw={"dport": 9}), "rx_drop_dst_port"),
        ("disabled + bad UDP length", _udp(udp_kw={"len": 9}), "rx_drop_length"),
        ("disabled + bad UDP checksum", _udp(udp_kw={"chksum": 1}), "rx_drop_disabled"),
        ("disabled alone", _udp(), "rx_drop_disabled"),
    ]:
        assert rx_expect.classify(frame, off).verdict == want, f"model: {name}"
        got = await one_frame_verdict(h, rx, frame, False)
        assert got == want, f"{name}: counted as {got}, precedence gives {want}"


@cocotb.test()
async def rx_zero_length_datagram(dut) -> None:  # noqa: ANN001
    """A UDP datagram without payload (UDP length 8, RFC 768) is delivered as one word with
    no byte enabled, between ordinary datagrams, its checksum verified like any other."""
    cfg = config()
    h, _tx, rx, user = await start(dut, cfg)
    sent = [
        _udp(b""),
        _udp(b"x" * 100),
        _udp(b""),
        _udp(b"", udp_kw={"chksum": 1}),  # wrong checksum: delivered, flagged bad
        _udp(b"y"),
        _udp(b"", udp_kw={"chksum": 0}),  # no checksum
        _udp(b"", udp_kw={"len": 7}),  # shorter than its own header
    ]
    want = [rx_expect.classify(f, cfg) for f in sent]
    assert [w.verdict for w in want] == ["delivered"] * 6 + ["rx_drop_length"]
    for f in sent:
        rx.send_nowait(f)
    await drain(h, rx)
    got = [(d.payload, d.bad) for d in user.datagrams]
    assert got == [(w.payload, w.bad_udp_checksum) for w in want[:6]], got
    assert [w.bad_udp_checksum for w in want[:6]] == [False, False, False, True, False, False]
    c = await rx_counters(h)
    check_identity(c)
    assert (c["rx_udp_packets"], c["rx_drop_length"], c["rx_bad_udp_checksum"]) == (6, 1, 1), c
    check_totals(c, sent, user.datagrams)
