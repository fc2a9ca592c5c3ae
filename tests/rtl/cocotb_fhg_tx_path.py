"""fhg_tx_path with a test source on its hardware-ARP-reply input.

The ARP responder arrives with the receive path; its transmit input must already work:
reply frames offered at random times go out whole, between data frames, waiting at most
for the data frame in progress, and the data frames around them are unaltered.
"""

from __future__ import annotations

import ipaddress
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge, Timer
from scapy.layers.l2 import ARP, Ether

from verification.models import frames
from verification.models.dcmac_tx import DcmacTxMonitor
from verification.models.user_tx import UserTxDriver

OWN_MAC = 0x02000A00000A
OWN_IP = int(ipaddress.IPv4Address("10.0.0.10"))
PEER_MAC = 0x0C42A1000014
PEER_IP = int(ipaddress.IPv4Address("10.0.0.20"))


def arp_reply(k: int) -> bytes:
    """A 60-byte ARP reply as the responder will build it (scapy, zero padded)."""
    pkt = Ether(dst=frames.mac_to_str(PEER_MAC), src=frames.mac_to_str(OWN_MAC)) / ARP(
        op=2,
        hwsrc=frames.mac_to_str(OWN_MAC),
        psrc=str(ipaddress.IPv4Address(OWN_IP)),
        hwdst=frames.mac_to_str(PEER_MAC),
        pdst=str(ipaddress.IPv4Address(PEER_IP + k)),
    )
    raw = bytes(pkt)
    return raw + bytes(60 - len(raw))


async def arp_table(dut) -> None:  # noqa: ANN001
    """The ARP RAM's read port: one cycle of latency, one valid entry (the peer)."""
    edge = RisingEdge(dut.tx_mac_clk)
    entry = (1 << 16) | (PEER_MAC >> 32) | ((PEER_MAC & 0xFFFFFFFF) << 32)
    while True:
        await edge
        dut.arp_entry.value = entry if int(dut.arp_addr.value) == (PEER_IP & 0xFF) else 0


@cocotb.test()
async def arp_replies_go_out_between_data_frames(dut) -> None:  # noqa: ANN001
    Clock(dut.user_clk, 2560, unit="ps").start()
    Clock(dut.tx_mac_clk, 2557345, unit="fs", period_high=1278672).start()  # 391.03 MHz
    dut.rst.value = 1
    dut.tx_mac_rst.value = 1
    dut.accept.value = 0
    dut.arp_valid.value = 0
    dut.arp_frame.value = 0
    dut.tx_valid.value = 0
    dut.cfg_mac.value = OWN_MAC
    dut.cfg_ip.value = OWN_IP
    dut.cfg_netmask.value = 0xFFFFFF00
    dut.cfg_gateway.value = int(ipaddress.IPv4Address("10.0.0.1"))
    dut.cfg_port.value = 7148
    dut.cfg_ttl.value = 64
    dut.cfg_udp_csum.value = 1
    mon = DcmacTxMonitor(
        dut, clock=dut.tx_mac_clk, mac_clk_hz=1e15 / 2557345, mode="line", reset=dut.tx_mac_rst
    )
    drv = UserTxDriver(dut, clock=dut.user_clk, reset=dut.rst)
    cocotb.start_soon(arp_table(dut))
    await ClockCycles(dut.tx_mac_clk, 10)
    dut.tx_mac_rst.value = 0
    await ClockCycles(dut.user_clk, 10)
    dut.rst.value = 0
    dut.accept.value = 1
    while int(dut.tx_afull.value):
        await RisingEdge(dut.user_clk)

    rng = random.Random(12)
    data = [rng.randbytes(rng.choice([200, 1500, 8972])) for _ in range(40)]
    for p in data:
        drv.send_nowait(p, PEER_IP, 9000)
    replies = [arp_reply(k) for k in range(12)]
    offered_at: list[int] = []
    sent = 0

    async def count_sent() -> None:
        nonlocal sent
        while True:
            await RisingEdge(dut.tx_mac_clk)
            sent += int(dut.stat_arp_sent.value)

    cocotb.start_soon(count_sent())
    for reply in replies:
        await ClockCycles(dut.tx_mac_clk, rng.randint(20, 300))
        dut.arp_frame.value = int.from_bytes(reply, "little")  # wire order: byte k at 8k
        dut.arp_valid.value = 1
        offered_at.append(mon.checker.cycle)
        await RisingEdge(dut.tx_mac_clk)
        while not int(dut.arp_ready.value):
            await RisingEdge(dut.tx_mac_clk)
        dut.arp_valid.value = 0
    await drv.wait_idle()
    while len(mon.frames) < len(data) + len(replies):
        await Timer(200, unit="ns")
    await ClockCycles(dut.tx_mac_clk, 20)

    got_arp = [f for f in mon.frames if f.body[12:14] == b"\x08\x06"]
    got_data = [f for f in mon.frames if f.body[12:14] == b"\x08\x00"]
    assert [f.body for f in got_arp] == replies
    assert sent == len(replies)
    want = [
        frames.expected_udp_frame(OWN_MAC, PEER_MAC, OWN_IP, PEER_IP, 7148, 9000, i, 64, p)
        for i, p in enumerate(data)
    ]
    assert [f.body for f in got_data] == want
    # Each reply waited at most for one data frame: no more than one data frame started
    # between the moment it was offered and its own start.
    for t, f in zip(offered_at, got_arp, strict=True):
        overtaking = [d for d in got_data if t < d.first_cycle < f.first_cycle]
        assert len(overtaking) <= 1, f"reply offered at {t} waited for {len(overtaking)} frames"
