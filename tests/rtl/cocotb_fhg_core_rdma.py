"""System tests of the RDMA mode of ``fhg_core`` (docs/design/core.md §6).

The user port streams datagrams; the DCMAC TX model (every PG369 rule, line pacing or
random stalls) collects what leaves the core. Every frame must be byte for byte the frame
scapy builds (scapy's RoCE layers compute the ICRC) for the packet the ring model
(verification/models/rdma_ring.py) says comes next: UC RDMA WRITE ONLY packets with their
own RETH, WRITE ONLY with Immediate at each chunk's end, PSNs and VAs across the 24-bit
PSN wrap and the ring's wrap. Flow control: credits by register and by UDP datagram on the
RX bus, chunks dropped whole and counted, the count in the next immediate. And the
goodput at 4096-byte MTU against the RoCEv2 line goodput.
"""

from __future__ import annotations

import contextlib
import ipaddress
import random
from dataclasses import dataclass, field, replace

import cocotb
from cocotb.triggers import ClockCycles, Timer
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from verification.core_harness import CoreHarness, simulated_hz
from verification.models import frames
from verification.models.dcmac_rx import DcmacRxDriver
from verification.models.dcmac_tx import DcmacTxMonitor
from verification.models.rdma_ring import (
    NO_CREDIT,
    TEST_RINGS,
    Oversize,
    RingConfig,
    RingSender,
    datagram_sizes,
)
from verification.models.roce import ETHERNET_WIRE_EXTRA, Operation, RdmaWrite, parse_frame
from verification.models.roce_scapy import scapy_frame
from verification.models.user_tx import UserTxDriver

OWN_MAC = 0x02000A00000A
OWN_IP = int(ipaddress.IPv4Address("10.0.0.10"))
PEER_IP = int(ipaddress.IPv4Address("10.0.0.20"))
PEER_MAC = 0x0C42A1000014
OTHER_IP = int(ipaddress.IPv4Address("10.0.0.21"))
PORT = 7148
TTL = 64
CREDIT_PORT = 4792
MTU_CODE = {1024: 0, 2048: 1, 4096: 2}


def template() -> RdmaWrite:
    return RdmaWrite(
        src_mac=frames.mac_to_str(OWN_MAC),
        dst_mac=frames.mac_to_str(PEER_MAC),
        src_ip=ipaddress.IPv4Address(OWN_IP),
        dst_ip=ipaddress.IPv4Address(PEER_IP),
        dest_qp=0,
        psn=0,
        payload=b"",
        src_port=PORT,
        ttl=TTL,
    )


async def start(dut, mode: str = "line", seed: int = 1):  # noqa: ANN001
    h = CoreHarness(dut)
    mon = DcmacTxMonitor(
        dut, clock=dut.tx_mac_clk, mac_clk_hz=h.mac_clk_hz, mode=mode, seed=seed,
        reset=dut.tx_mac_rst,
    )  # fmt: skip
    drv = UserTxDriver(dut, clock=dut.user_clk, reset=dut.rst)
    await h.reset()
    await h.configure(OWN_MAC, OWN_IP, PORT, ttl=TTL)
    await h.set_arp(PEER_IP & 0xFF, PEER_MAC)
    await h.settle_config()
    await h.enable()
    return h, mon, drv


async def connect(h: CoreHarness, cfg: RingConfig, credit: int = NO_CREDIT) -> None:
    """Write the ring registers, then switch the RDMA mode on (which restarts the ring)."""
    if await h.read_reg("rdma_ctrl") & 1:
        await h.set_field("rdma_ctrl", "en", 0)
        await Timer(400, unit="ns")
    await h.write_reg("rdma_qpn", cfg.qpn)
    await h.write_reg("rdma_psn", cfg.psn)
    await h.write_reg("rdma_rkey", cfg.rkey)
    await h.write_reg("rdma_va_lo", cfg.va & 0xFFFF_FFFF)
    await h.write_reg("rdma_va_hi", cfg.va >> 32)
    await h.write_reg("rdma_slot_size", cfg.slot_size)
    await h.write_reg("rdma_slots", cfg.slots)
    await h.write_reg("rdma_chunks", cfg.chunks)
    await h.write_reg("rdma_dest_ip", PEER_IP)
    await h.write_reg("rdma_credit", credit)
    await h.write_reg("rdma_credit_port", CREDIT_PORT)
    ctrl = 1 | (int(cfg.flow_ctrl) << 1) | (MTU_CODE[cfg.mtu] << 4)
    await h.settle_config()
    await h.write_reg("rdma_ctrl", ctrl)
    await Timer(400, unit="ns")
    await h.wait_tx_ready()


def check_frames(got: list, want: list[RdmaWrite], first_ip_id: int) -> None:
    assert len(got) == len(want), f"{len(got)} frames, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        exp = scapy_frame(replace(w, ip_id=(first_ip_id + k) & 0xFFFF))
        if g.body != exp:
            diff = next((i for i in range(min(len(g.body), len(exp))) if g.body[i] != exp[i]), None)
            raise AssertionError(
                f"frame {k} (PSN {w.psn:#x}, VA {w.va:#x}, {len(w.payload)} B, "
                f"{w.operation.name}): length {len(g.body)} vs {len(exp)}, first difference "
                f"at byte {diff}\ngot  {g.body[:80].hex()}\nwant {exp[:80].hex()}"
            )
        assert not g.err


async def counters(h: CoreHarness) -> dict[str, int]:
    names = [
        "rdma_chunks_sent", "rdma_chunks_dropped", "rdma_datagrams", "rdma_datagrams_dropped",
        "rdma_oversize", "rdma_credit_frames", "rdma_icrc_frames", "rdma_credit_rejected",
        "tx_udp_packets",
    ]  # fmt: skip
    return {n: await h.read_reg(n) for n in names}


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in after}


async def all_sent(
    h: CoreHarness,
    mon: DcmacTxMonitor,
    drv: UserTxDriver,
    want: list[RdmaWrite],
    first: int,
    before: dict[str, int],
) -> dict[str, int]:
    """Once the datagrams are in and ``want`` has come out from frame ``first`` on: checks
    the frames against scapy's and returns the counters' change since ``before``."""
    await drv.wait_idle()
    await mon.wait_frames(first + len(want), limit_ns=2_000_000)
    await Timer(1000, unit="ns")
    check_frames(mon.frames[first:], want, first_ip_id=0)
    return delta(await counters(h), before)


def credit_frame(value: int, src_ip: int = PEER_IP, port: int = CREDIT_PORT) -> bytes:
    """The consumer's credit datagram (docs/design/core.md §6) in a minimum frame."""
    pkt = (
        Ether(dst=frames.mac_to_str(OWN_MAC), src=frames.mac_to_str(PEER_MAC))
        / IP(src=str(ipaddress.IPv4Address(src_ip)), dst=str(ipaddress.IPv4Address(OWN_IP)))
        / UDP(sport=50000, dport=port)
        / Raw(b"CRDT" + value.to_bytes(4, "big"))
    )
    raw = bytes(pkt)
    return raw + bytes(60 - len(raw))


async def credit_by_datagram(rx: DcmacRxDriver, value: int, **kw: int) -> None:
    rx.send_nowait(credit_frame(value, **kw))
    await rx.wait_idle()
    await Timer(400, unit="ns")


@dataclass
class ChunkFeeder:
    """Whole chunks of random datagrams into the user port, the frames the ring model
    expects for them collected in `want` (frames from `first` on in the monitor)."""

    cfg: RingConfig
    drv: UserTxDriver
    mon: DcmacTxMonitor
    sender: RingSender
    rng: random.Random
    first: int
    want: list[RdmaWrite] = field(default_factory=list)

    async def send_chunk(self) -> None:
        for _ in range(self.cfg.slots):
            payload = self.rng.randbytes(self.rng.randint(1, self.cfg.max_datagram))
            self.want.extend(self.sender.send(payload))
            self.drv.send_nowait(payload, 0, 0)
        await self.drv.wait_idle()
        await self.mon.wait_frames(self.first + len(self.want), limit_ns=2_000_000)
        await Timer(500, unit="ns")


@cocotb.test()
async def frames_match_scapy_across_geometries(dut) -> None:  # noqa: ANN001
    """Random datagram sizes through four ring geometries and all three MTUs, each twice
    around the ring: every frame equals scapy's, counters and status agree."""
    h, mon, drv = await start(dut, mode="random", seed=5)
    rng = random.Random(19)
    for gi, cfg in enumerate(TEST_RINGS):
        await connect(h, cfg)
        before = await counters(h)
        sender = RingSender(cfg, template())
        # The consumer keeps up: credits follow the chunks (flow control never drops here).
        sender.credit = NO_CREDIT
        n = 2 * cfg.slots * cfg.chunks + 3
        sizes = datagram_sizes(cfg, n, rng)
        want: list[RdmaWrite] = []
        first = len(mon.frames)
        for k, size in enumerate(sizes):
            payload = rng.randbytes(size)
            chunk = k // cfg.slots
            if k % cfg.slots == 0 and chunk >= cfg.chunks:
                # Release the chunk that held this one's place before it starts.
                await mon.wait_frames(first + len(want), limit_ns=2_000_000)
                await drv.wait_idle()
                await h.write_reg("rdma_credit", chunk - cfg.chunks)
                sender.credit = chunk - cfg.chunks
                await Timer(300, unit="ns")
            want += sender.send(payload)
            drv.send_nowait(payload, 0, 0)
        d = await all_sent(h, mon, drv, want, first, before)
        assert d["rdma_datagrams"] == n and d["rdma_datagrams_dropped"] == 0, (gi, d)
        assert d["rdma_chunks_sent"] == sender.chunks_sent == n // cfg.slots, (gi, d)
        assert d["rdma_chunks_dropped"] == 0, (gi, d)
        assert d["rdma_icrc_frames"] == d["tx_udp_packets"] == len(want), (gi, d)
        assert await h.read_reg("rdma_next_psn") == sender.psn, gi
        assert await h.read_reg("rdma_chunk") == n // cfg.slots, gi
        imms = [w for w in want if w.operation is Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE]
        assert [w.immediate & 0xFF_FFFF for w in imms] == list(range(n // cfg.slots)), gi


@cocotb.test()
async def flow_control_drops_whole_chunks_and_says_so(dut) -> None:  # noqa: ANN001
    """Credits by register and by UDP datagram; a held chunk is dropped whole and counted;
    the drop count rides in the next immediate; stale or foreign credits change nothing."""
    h, mon, drv = await start(dut, mode="line", seed=2)
    rx = DcmacRxDriver(dut, clock=dut.rx_mac_clk, reset=dut.rx_mac_rst, strip_fcs=True,
                       mac_clk_hz=h.mac_clk_hz)  # fmt: skip
    cfg = RingConfig(qpn=0x42, psn=0x10, rkey=0x77, va=0x2000_0000, slot_size=1032, slots=2,
                     chunks=2, mtu=1024)  # fmt: skip
    await connect(h, cfg)
    before = await counters(h)
    sender = RingSender(cfg, template())
    feed = ChunkFeeder(cfg, drv, mon, sender, random.Random(3), first=len(mon.frames))

    await feed.send_chunk()  # chunk 0: ring place 0 free
    await feed.send_chunk()  # chunk 1: ring place 1 free
    await feed.send_chunk()  # chunk 2: place 0 still held (credit none) -> dropped
    assert sender.dropped == 1
    await h.write_reg("rdma_credit", 0)  # consumer released chunk 0 (by register)
    sender.credit = 0
    await Timer(300, unit="ns")
    await feed.send_chunk()  # chunk 3: place 1 held by chunk 1 -> dropped
    assert sender.dropped == 2
    # Ignored: another source, another port, a damaged frame, a stale value.
    await credit_by_datagram(rx, 3, src_ip=OTHER_IP)
    await credit_by_datagram(rx, 3, port=CREDIT_PORT + 1)
    rx.packer.push(credit_frame(3), err=True)
    await rx.wait_idle()
    await Timer(400, unit="ns")
    assert await h.read_reg("rdma_credit") == 0
    await credit_by_datagram(rx, 3)  # released up to chunk 3: places 0 and 1 free
    sender.credit = 3
    assert await h.read_reg("rdma_credit") == 3
    await credit_by_datagram(rx, 1)  # stale: ignored
    assert await h.read_reg("rdma_credit") == 3
    await feed.send_chunk()  # chunk 4: written, its immediate says 2 chunks were dropped
    await feed.send_chunk()  # chunk 5: written
    want = feed.want
    check_frames(mon.frames[feed.first :], want, first_ip_id=0)
    imms = [w.immediate for w in want if w.immediate is not None]
    assert imms == [cfg.immediate(0, 0), cfg.immediate(1, 0), cfg.immediate(4, 2),
                    cfg.immediate(5, 2)], [hex(i) for i in imms]  # fmt: skip
    d = delta(await counters(h), before)
    assert d["rdma_chunks_dropped"] == 2, d
    assert d["rdma_datagrams_dropped"] == 2 * cfg.slots, d
    assert d["rdma_datagrams"] == 4 * cfg.slots, d
    assert d["rdma_chunks_sent"] == 4, d
    assert d["rdma_credit_frames"] == 2, d  # the two taken (3, then the stale 1)
    assert d["rdma_credit_rejected"] == 0, d
    assert d["rdma_icrc_frames"] == len(want), d
    # The PSNs of the dropped chunks were never used: the stream is contiguous.
    psns = [parse_frame(f.body).psn for f in mon.frames[feed.first :]]
    assert psns == [(cfg.psn + k) & 0xFF_FFFF for k in range(len(psns))]


@cocotb.test()
async def credits_beyond_the_last_chunk_written_are_refused(dut) -> None:  # noqa: ANN001
    """A credit datagram from the receiver's address to the credit port is taken only up to
    the last chunk the core has finished: values beyond it (half the number space ahead,
    which would switch flow control off; the chunk not yet begun; one ring past the last
    chunk) leave rdma_credit alone and are counted in rdma_credit_rejected, and held chunks
    go on being dropped; the last finished chunk is taken, a stale value is not refused."""
    h, mon, drv = await start(dut, mode="line", seed=6)
    rx = DcmacRxDriver(dut, clock=dut.rx_mac_clk, reset=dut.rx_mac_rst, strip_fcs=True,
                       mac_clk_hz=h.mac_clk_hz)  # fmt: skip
    cfg = RingConfig(qpn=0x99, psn=0xFF_FFFE, rkey=0x55, va=0x3000_0000, slot_size=1032,
                     slots=2, chunks=2, mtu=1024)  # fmt: skip
    await connect(h, cfg)
    before = await counters(h)
    sender = RingSender(cfg, template())
    feed = ChunkFeeder(cfg, drv, mon, sender, random.Random(7), first=len(mon.frames))

    for _ in range(3):  # chunks 0 and 1 written, chunk 2 dropped: no credit yet
        await feed.send_chunk()
    assert sender.dropped == 1
    assert await h.read_reg("rdma_chunk") == 3
    beyond = [
        (NO_CREDIT + (1 << 30)) & 0xFFFF_FFFF,  # 2^30 chunks ahead of the credit
        0x7FFF_FFFE,  # as far ahead as a forward credit goes
        3,  # the chunk being filled: nothing of it has been sent
        2 + cfg.chunks,  # one ring past the last chunk finished
    ]
    for value in beyond:
        await credit_by_datagram(rx, value)
        assert await h.read_reg("rdma_credit") == NO_CREDIT, f"credit {value:#x} was taken"
    await feed.send_chunk()  # chunk 3: its place is still held -> dropped
    assert sender.dropped == 2
    await credit_by_datagram(rx, 3)  # the last chunk finished: places 0 and 1 free
    sender.credit = 3
    assert await h.read_reg("rdma_credit") == 3
    await credit_by_datagram(rx, 2)  # stale: ignored, not refused
    assert await h.read_reg("rdma_credit") == 3
    await feed.send_chunk()  # chunk 4: written
    await feed.send_chunk()  # chunk 5: written
    check_frames(mon.frames[feed.first :], feed.want, first_ip_id=0)
    imms = [w.immediate for w in feed.want if w.immediate is not None]
    assert imms == [cfg.immediate(0, 0), cfg.immediate(1, 0), cfg.immediate(4, 2),
                    cfg.immediate(5, 2)], [hex(i) for i in imms]  # fmt: skip
    d = delta(await counters(h), before)
    assert d["rdma_credit_frames"] == len(beyond) + 2, d
    assert d["rdma_credit_rejected"] == len(beyond), d
    assert d["rdma_chunks_dropped"] == 2 and d["rdma_chunks_sent"] == 4, d


@cocotb.test()
async def oversize_rejected_and_udp_mode_back(dut) -> None:  # noqa: ANN001
    """A datagram longer than the slot is rejected whole without taking a sequence number;
    switching the RDMA mode off brings the UDP datagrams back unchanged."""
    h, mon, drv = await start(dut, mode="line", seed=3)
    cfg = RingConfig(qpn=7, psn=100, rkey=9, va=0x4000, slot_size=264, slots=2, chunks=2,
                     mtu=1024, flow_ctrl=False)  # fmt: skip
    await connect(h, cfg)
    before = await counters(h)
    sender = RingSender(cfg, template())
    want: list[RdmaWrite] = []
    first = len(mon.frames)
    for size in (256, 257, 100, 1000, 1):
        payload = bytes(range(256)) * 4
        payload = payload[:size]
        with contextlib.suppress(Oversize):
            want += sender.send(payload)
        drv.send_nowait(payload, 0, 0)
    d = await all_sent(h, mon, drv, want, first, before)
    assert d["rdma_oversize"] == 2 and d["rdma_datagrams"] == 3, d
    # Back to UDP: the IP Identification restarts with the reset the switch makes.
    await h.set_field("rdma_ctrl", "en", 0)
    await Timer(400, unit="ns")
    await h.wait_tx_ready()
    first = len(mon.frames)
    payload = bytes(range(100))
    await drv.send(payload, PEER_IP, 9000)
    await mon.wait_frames(first + 1, limit_ns=2_000_000)
    exp = frames.expected_udp_frame(OWN_MAC, PEER_MAC, OWN_IP, PEER_IP, PORT, 9000, 0, TTL,
                                    payload)  # fmt: skip
    assert mon.frames[first].body == exp


@cocotb.test()
async def goodput_at_4096_mtu(dut) -> None:  # noqa: ANN001
    """Back-to-back 8184-byte datagrams (8192-byte slots, two full 4096-byte packets each)
    into a DCMAC paced at 400 Gb/s: RDMA payload goodput >= 0.995 of the RoCEv2 line
    goodput, 4096 / (4096 + 98) of 400 Gb/s."""
    h, mon, drv = await start(dut, mode="line", seed=4)
    cfg = RingConfig(qpn=1, psn=0, rkey=2, va=0, slot_size=8192, slots=64, chunks=4,
                     mtu=4096, flow_ctrl=False)  # fmt: skip
    await connect(h, cfg)
    mac_hz = simulated_hz(h.mac_clk_hz)
    n = 160
    payload = bytes(8184)
    for _ in range(n):
        drv.send_nowait(payload, 0, 0)
    warm = 20
    while len(mon.frames) < warm:
        await ClockCycles(dut.tx_mac_clk, 16)
    mon.reset_stats()
    first = len(mon.frames)
    await drv.wait_idle()
    while len(mon.frames) < 2 * n:
        await ClockCycles(dut.tx_mac_clk, 16)
    st = mon.stats
    window = mon.frames[first:]
    assert st.frames == len(window)
    payload_bytes = sum(len(parse_frame(f.body).payload) for f in window)
    wire = sum(len(f.body) + ETHERNET_WIRE_EXTRA for f in window)
    goodput = 8 * payload_bytes / st.window_s(mac_hz)
    line_goodput = 400e9 * payload_bytes / wire  # this traffic's exact RoCEv2 line goodput
    nominal = 400e9 * 4096 / (4096 + 98)
    ratio = goodput / line_goodput
    dut._log.warning(
        "RDMA goodput %.2f Gb/s over %d packets: %.4f of the RoCEv2 line goodput "
        "(%.2f Gb/s), %.4f of 4096/(4096+98) x 400 Gb/s",
        goodput / 1e9, len(window), ratio, line_goodput / 1e9, goodput / nominal,
    )  # fmt: skip
    assert ratio >= 0.995, ratio
    assert goodput >= 0.995 * nominal, goodput
