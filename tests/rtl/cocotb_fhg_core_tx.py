"""System tests of the transmit path of ``fhg_core`` (user port → DCMAC TX segments).

Every frame leaving the core is checked by the DCMAC TX model (all PG369 segment rules,
paced at the 400GbE line rate) and compared byte for byte with the frame scapy builds
for the same datagram; the next hop comes from an independent model of CORE_SPEC §2.
"""

from __future__ import annotations

import ipaddress
import itertools
import random

import cocotb
from cocotb.triggers import ClockCycles, Timer

from mlib_devel_400g.core_harness import CoreHarness
from mlib_devel_400g.models import frames
from mlib_devel_400g.models.dcmac_tx import DcmacTxMonitor
from mlib_devel_400g.models.user_tx import UserTxDriver

OWN_MAC = 0x02000A00000A
OWN_IP = int(ipaddress.IPv4Address("10.0.0.10"))
GATEWAY = int(ipaddress.IPv4Address("10.0.0.1"))
NETMASK = "255.255.255.0"
PORT = 7148
TTL = 64
ARP = {1: 0x02000A000001, 20: 0x0C42A1000014, 21: 0x0C42A1000015, 77: 0x0C42A100004D}


async def start(
    dut,  # noqa: ANN001
    mode: str = "line",
    seed: int = 1,
) -> tuple[CoreHarness, DcmacTxMonitor, UserTxDriver]:
    h = CoreHarness(dut)
    mon = DcmacTxMonitor(
        dut,
        clock=dut.tx_mac_clk,
        mac_clk_hz=h.mac_clk_hz,
        mode=mode,
        seed=seed,
        reset=dut.tx_mac_rst,
    )
    drv = UserTxDriver(dut, clock=dut.user_clk, reset=dut.rst)
    await h.reset()
    await h.configure(OWN_MAC, OWN_IP, PORT, gateway=GATEWAY, netmask=NETMASK, ttl=TTL)
    for index, mac in ARP.items():
        await h.set_arp(index, mac)
    await h.settle_config()
    await h.enable()
    return h, mon, drv


def expected(
    payload: bytes, dst_ip: int, dst_port: int, ip_id: int, udp_checksum: bool = True
) -> bytes | None:
    mac = frames.next_hop_mac(dst_ip, OWN_IP, NETMASK, GATEWAY, ARP)
    if mac is None:
        return None
    return frames.expected_udp_frame(
        OWN_MAC, mac, OWN_IP, dst_ip, PORT, dst_port, ip_id, TTL, payload, udp_checksum
    )


async def wait_frames(mon: DcmacTxMonitor, count: int, limit_ns: int = 200_000) -> None:
    waited = 0
    while len(mon.frames) < count and waited < limit_ns:
        await Timer(200, unit="ns")
        waited += 200
    assert len(mon.frames) >= count, f"only {len(mon.frames)} of {count} frames arrived"


def compare(got: list, want: list[bytes]) -> None:
    assert len(got) == len(want), f"{len(got)} frames, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.body != w:
            diff = (
                next(i for i in range(min(len(g.body), len(w))) if g.body[i] != w[i])
                if len(g.body) == len(w)
                else None
            )
            raise AssertionError(
                f"frame {k}: length {len(g.body)} vs {len(w)}, first difference at {diff}\n"
                f"got  {g.body[:64].hex()}\nwant {w[:64].hex()}"
            )
        assert not g.err


@cocotb.test()
async def byte_order_on_the_wire(dut) -> None:  # noqa: ANN001
    """tx_data[1023:1016] is the first payload byte on the wire (CORE_SPEC §1)."""
    _, mon, drv = await start(dut)
    payload = bytes(range(128)) + bytes(range(128, 256))
    dst = int(ipaddress.IPv4Address("10.0.0.20"))
    await drv.send(payload, dst, 9000)
    await wait_frames(mon, 1)
    body = mon.frames[0].body
    assert body[42 : 42 + 256] == payload
    assert body[:6] == ARP[20].to_bytes(6, "big")
    compare(mon.frames, [expected(payload, dst, 9000, 0)])


@cocotb.test()
async def random_lengths_and_destinations_match_scapy(dut) -> None:  # noqa: ANN001
    h, mon, drv = await start(dut, mode="random", seed=7)
    rng = random.Random(11)
    dests = [
        "10.0.0.20",
        "10.0.0.21",
        "10.0.0.77",  # own subnet, ARP entries
        "192.168.5.9",
        "8.8.4.4",  # off-subnet via the gateway
        "239.1.2.3",
        "224.0.0.251",  # multicast
        "255.255.255.255",
        "10.0.0.255",  # limited and subnet broadcast
        "10.0.0.99",  # no ARP entry: dropped
    ]
    sizes = [1, 17, 18, 19, 64, 65, 85, 86, 87, 127, 128, 129, 256, 1472, 8972]
    sizes += [rng.randint(1, 8972) for _ in range(25)]
    want: list[bytes] = []
    misses = 0
    sent_bytes = 0
    for ip_id, size in enumerate(sizes):
        payload = rng.randbytes(size)
        dst = int(ipaddress.IPv4Address(rng.choice(dests)))
        dport = rng.randint(1, 65535)
        frame = expected(payload, dst, dport, ip_id)
        if frame is None:
            misses += 1
        else:
            want.append(frame)
            sent_bytes += size
        drv.send_nowait(payload, dst, dport)
    await drv.wait_idle()
    await wait_frames(mon, len(want))
    await ClockCycles(dut.tx_mac_clk, 200)
    compare(mon.frames, want)
    await Timer(1, unit="us")  # counters cross into the register clock
    c = await h.counters(
        [
            "tx_frames",
            "tx_udp_packets",
            "tx_udp_bytes",
            "tx_bytes",
            "tx_arp_miss",
            "tx_packet_counter",
            "tx_valid_counter",
        ]
    )
    assert c["tx_frames"] == len(want)
    assert c["tx_udp_packets"] == len(want)
    assert c["tx_packet_counter"] == len(want)
    assert c["tx_udp_bytes"] == sent_bytes
    assert c["tx_bytes"] == sum(len(w) for w in want)
    assert c["tx_arp_miss"] == misses
    assert c["tx_valid_counter"] == sum(-(-s // 128) for s in sizes)
    assert await h.read_reg("ip_id") == len(sizes)


@cocotb.test()
async def udp_checksum_disable_sends_zero(dut) -> None:  # noqa: ANN001
    h, mon, drv = await start(dut)
    await h.set_field("ctrl", "udp_checksum_en", 0)
    await h.settle_config()
    dst = int(ipaddress.IPv4Address("10.0.0.21"))
    payloads = [bytes([0xA5]) * 100, bytes(7)]
    for p in payloads:
        drv.send_nowait(p, dst, 4000)
    await drv.wait_idle()
    await wait_frames(mon, 2)
    compare(
        mon.frames, [expected(p, dst, 4000, i, udp_checksum=False) for i, p in enumerate(payloads)]
    )


@cocotb.test()
async def back_to_back_small_frames_pack_segments(dut) -> None:  # noqa: ANN001
    """Small frames share bus cycles: two SOPs per cycle appear, no gaps inside frames."""
    _, mon, drv = await start(dut, mode="always")
    dst = int(ipaddress.IPv4Address("10.0.0.20"))
    rng = random.Random(3)
    sizes = [rng.choice([18, 30, 64, 65, 100, 129]) for _ in range(120)]
    payloads = [rng.randbytes(s) for s in sizes]
    for p in payloads:
        drv.send_nowait(p, dst, 5000)
    await drv.wait_idle()
    await wait_frames(mon, len(payloads))
    compare(mon.frames, [expected(p, dst, 5000, i) for i, p in enumerate(payloads)])
    starts = [f.first_cycle for f in mon.frames]
    shared = sum(1 for a, b in itertools.pairwise(starts) if a == b)
    assert shared > 0, "segment packing never started two frames in one cycle"
