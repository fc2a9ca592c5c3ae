"""casperfpga_ext's blocking FourHundredGbe code driving ``fhg_core`` in simulation.

``SimTransport`` (``verification.sim_bus``) turns each word of a ``read``/``blindwrite``
into an AXI4-Lite access of the core's register slave; the API code runs in a ``bridge``
thread (cocotb.task) and waits for each access through ``resume``, so it is the same code
that runs on the board.
Frames leaving the core are compared with scapy's for the configured addresses.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any, TypeVar

import cocotb
from cocotb.task import bridge
from cocotb.triggers import ClockCycles, Timer

from casperfpga_ext import fhg_regmap as regmap
from casperfpga_ext.gbe import FourHundredGbe
from verification.core_harness import CoreHarness
from verification.models import frames
from verification.models.dcmac_tx import DcmacTxMonitor, assert_frames
from verification.models.user_tx import UserTxDriver
from verification.sim_bus import DEVICE, SimTransport

OWN_MAC = "02:00:0a:00:00:0a"
OWN_IP = "10.0.0.10"
GATEWAY = "10.0.0.1"
NETMASK = "255.255.255.0"
PORT = 7148
TTL = 31
# Every entry valid and different, so a wrong index shows up as a wrong destination MAC.
ARP_TABLE = [0x0C42A1000000 | (i << 8) | (255 - i) for i in range(256)]

T = TypeVar("T")


async def blocking(func: Callable[..., T], *args: Any) -> T:
    return await bridge(func)(*args)


async def start(dut) -> tuple[CoreHarness, DcmacTxMonitor, UserTxDriver, FourHundredGbe]:  # noqa: ANN001
    h = CoreHarness(dut)
    mon, drv = h.tx_monitor(), h.user_tx()
    await h.reset()
    gbe = FourHundredGbe(SimTransport(h.axi), DEVICE)

    def configure() -> None:
        gbe.set_ttl(TTL)
        gbe.set_arp_table(ARP_TABLE)
        gbe.configure_core(OWN_MAC, OWN_IP, PORT, GATEWAY, NETMASK)

    await blocking(configure)
    await h.wait_tx_ready()
    return h, mon, drv, gbe


def expected(payload: bytes, dst_ip: str, dst_port: int, ip_id: int) -> bytes:
    arp = dict(enumerate(ARP_TABLE))
    mac = frames.next_hop_mac(int(ipaddress.IPv4Address(dst_ip)), OWN_IP, NETMASK, GATEWAY, arp)
    assert mac is not None
    return frames.expected_udp_frame(
        OWN_MAC, mac, OWN_IP, dst_ip, PORT, dst_port, ip_id, TTL, payload, True
    )


@cocotb.test()
async def configured_core_sends_with_configured_addresses(dut) -> None:  # noqa: ANN001
    """configure_core + set_arp_table through the API; frames match scapy's; counters agree."""
    _, mon, drv, gbe = await start(dut)
    details = await blocking(gbe.get_gbe_core_details, True)
    assert details["mac"] == 0x02000A00000A
    assert details["ip"] == int(ipaddress.IPv4Address(OWN_IP))
    assert details["fabric_port"] == PORT
    assert details["gateway_ip"] == int(ipaddress.IPv4Address(GATEWAY))
    assert details["subnet_mask"] == 0xFFFFFF00
    assert details["fabric_en"] and details["ttl"] == TTL
    assert [int(m) for m in details["arp"]] == ARP_TABLE  # casperfpga's Mac objects

    sends = [
        (bytes(range(200)), "10.0.0.20", 9000),
        (b"\x5a" * 1000, "10.0.0.201", 4000),
        (b"casper", "192.168.7.7", 5001),  # off-subnet: the gateway's (entry 1) MAC
    ]
    want = []
    for ip_id, (payload, dst, dport) in enumerate(sends):
        await drv.send(payload, int(ipaddress.IPv4Address(dst)), dport)
        want.append(expected(payload, dst, dport, ip_id))
    await mon.wait_frames(len(want))
    assert_frames(mon.frames, want)
    assert mon.frames[2].body[:6] == ARP_TABLE[1].to_bytes(6, "big")

    await Timer(1, unit="us")  # counters cross into the register clock
    tx = await blocking(gbe.read_core_counters, "tx_")
    assert tx["tx_frames"] == len(sends)
    assert tx["tx_udp_packets"] == len(sends)
    assert tx["tx_udp_bytes"] == sum(len(p) for p, _, _ in sends)
    assert tx["tx_bytes"] == sum(len(w) for w in want)
    assert tx["tx_arp_miss"] == 0
    assert tx["tx_packet_counter"] == len(sends)
    named = await blocking(gbe.read_tx_counters)  # casperfpga's names
    assert named["gbe0_txctr"] == len(sends) and named["gbe0_tx_frames"] == len(sends)
    drops = await blocking(gbe.rx_drop_counters)
    assert set(drops) == {n for n in regmap.COUNTERS if n.startswith("rx_drop_")}
    link = await blocking(gbe.link_status)
    assert {"state", "link_up", "retries", "rx_phy_status"} <= set(link)


@cocotb.test()
async def fabric_disable_holds_and_soft_reset_keeps_configuration(dut) -> None:  # noqa: ANN001
    h, mon, drv, gbe = await start(dut)
    await blocking(gbe.fabric_disable)
    await ClockCycles(dut.user_clk, 20)
    assert int(dut.tx_afull.value) == 1, "tx_afull low with the fabric disabled"
    drv.send_nowait(b"held back", int(ipaddress.IPv4Address("10.0.0.30")), 6000)
    await Timer(2, unit="us")
    assert mon.frames == [], "a frame left the core with the fabric disabled"

    await blocking(gbe.fabric_enable)
    await mon.wait_frames(1)
    assert_frames(mon.frames, [expected(b"held back", "10.0.0.30", 6000, 0)])

    await blocking(gbe.fabric_soft_reset_toggle)
    await h.wait_tx_ready()
    mac, ip, port = await blocking(lambda: (gbe.mac, gbe.ip_address, gbe.port))
    assert (mac, ip, port) == (0x02000A00000A, int(ipaddress.IPv4Address(OWN_IP)), PORT)
    ip_id = await blocking(gbe.read_reg, "ip_id")
    await drv.send(b"after reset", int(ipaddress.IPv4Address("10.0.0.31")), 6001)
    await mon.wait_frames(2)
    assert_frames(mon.frames[1:], [expected(b"after reset", "10.0.0.31", 6001, ip_id)])
