"""System tests of the transmit path of ``fhg_core`` (user port → DCMAC TX segments).

Every frame leaving the core is checked by the DCMAC TX model (all PG369 segment rules,
paced at the 400GbE line rate) and compared byte for byte with the frame scapy builds
for the same datagram; the next hop comes from an independent model of docs/design/core.md §2.
"""

from __future__ import annotations

import ipaddress
import itertools
import random

import cocotb
from cocotb.triggers import ClockCycles, RisingEdge, Timer

from verification.core_harness import CoreHarness
from verification.models import frames
from verification.models.dcmac_tx import DcmacTxMonitor, assert_frames
from verification.models.user_tx import UserTxDriver

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
    mon, drv = h.tx_monitor(mode, seed=seed), h.user_tx()
    await h.bring_up(OWN_MAC, OWN_IP, PORT, gateway=GATEWAY, netmask=NETMASK, ttl=TTL, arp=ARP)
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


@cocotb.test()
async def byte_order_on_the_wire(dut) -> None:  # noqa: ANN001
    """tx_data[1023:1016] is the first payload byte on the wire (docs/design/core.md §1)."""
    _, mon, drv = await start(dut)
    payload = bytes(range(128)) + bytes(range(128, 256))
    dst = int(ipaddress.IPv4Address("10.0.0.20"))
    await drv.send(payload, dst, 9000)
    await mon.wait_frames(1)
    body = mon.frames[0].body
    assert body[42 : 42 + 256] == payload
    assert body[:6] == ARP[20].to_bytes(6, "big")
    assert_frames(mon.frames, [expected(payload, dst, 9000, 0)])


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
    await mon.wait_frames(len(want))
    await ClockCycles(dut.tx_mac_clk, 200)
    assert_frames(mon.frames, want)
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
    # A user that honours tx_afull never loses a word.
    assert await h.read_reg("tx_overflow") == 0
    assert await h.read_reg("tx_overflow_counter") == 0


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
    await mon.wait_frames(2)
    assert_frames(
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
    await mon.wait_frames(len(payloads))
    assert_frames(mon.frames, [expected(p, dst, 5000, i) for i, p in enumerate(payloads)])
    starts = [f.first_cycle for f in mon.frames]
    shared = sum(1 for a, b in itertools.pairwise(starts) if a == b)
    assert shared > 0, "segment packing never started two frames in one cycle"


def cpu_words(frame: bytes) -> list[int]:
    """Big-endian 32-bit words as software writes them into the CPU TX buffer."""
    padded = frame + bytes(-len(frame) % 4)
    return [int.from_bytes(padded[i : i + 4], "big") for i in range(0, len(padded), 4)]


async def send_cpu_frame(h: CoreHarness, frame: bytes) -> None:
    base = frames_regions_offset("cpu_tx_buf")
    for k, word in enumerate(cpu_words(frame)):
        await h.write32(base + 4 * k, word)
    await h.write_reg("cpu_tx_len", len(frame))


def frames_regions_offset(name: str) -> int:
    from casperfpga_ext import fhg_regmap

    return fhg_regmap.REGIONS[name].offset


async def wait_cpu_idle(h: CoreHarness, limit: int = 200) -> None:
    for _ in range(limit):
        if not (await h.read_reg("status")) >> 8 & 1:  # status.cpu_tx_busy
            return
        await Timer(100, unit="ns")
    raise AssertionError("cpu_tx_busy never cleared")


@cocotb.test()
async def cpu_frames_go_out_between_data_frames(dut) -> None:  # noqa: ANN001
    h, mon, drv = await start(dut)
    rng = random.Random(21)
    # Refused while cpu_tx_en is off: busy clears, nothing is sent.
    await send_cpu_frame(h, bytes(range(64)))
    await wait_cpu_idle(h)
    await Timer(200, unit="ns")
    assert len(mon.frames) == 0
    await h.set_field("ctrl", "cpu_tx_en", 1)
    dst = int(ipaddress.IPv4Address("10.0.0.20"))
    data = [rng.randbytes(rng.randint(1000, 8972)) for _ in range(12)]
    for p in data:
        drv.send_nowait(p, dst, 6000)
    cpu = [rng.randbytes(n) for n in (42, 60, 129, 1514, 333)]
    for c in cpu:
        await send_cpu_frame(h, c)
        await wait_cpu_idle(h)
    await drv.wait_idle()
    await mon.wait_frames(len(data) + len(cpu))
    bodies = [f.body for f in mon.frames]
    want_cpu = [c + bytes(max(0, 60 - len(c))) for c in cpu]
    got_cpu = [b for b in bodies if b in want_cpu]
    assert got_cpu == want_cpu, "CPU frames missing, reordered or altered"
    got_data = [f for f in mon.frames if f.body not in want_cpu]
    assert_frames(got_data, [expected(p, dst, 6000, i) for i, p in enumerate(data)])
    await Timer(1, unit="us")
    c = await h.counters(["tx_cpu_frames", "tx_frames", "tx_udp_packets", "tx_bytes"])
    assert c["tx_cpu_frames"] == len(cpu)
    assert c["tx_frames"] == len(cpu) + len(data)
    assert c["tx_udp_packets"] == len(data)
    assert c["tx_bytes"] == sum(len(b) for b in bodies)


async def blast(dut, payloads: list[bytes], dst_ip: int, dst_port: int) -> None:  # noqa: ANN001
    """Drive the user port back to back, ignoring tx_afull (an ill-behaved user)."""
    from verification.models.user_tx import payload_to_words

    edge = RisingEdge(dut.user_clk)
    for p in payloads:
        words = payload_to_words(p)
        for k, (data, be) in enumerate(words):
            await edge
            last = k == len(words) - 1
            dut.tx_data.value = data
            dut.tx_byte_enable.value = be
            dut.tx_valid.value = 1
            dut.tx_end_of_frame.value = int(last)
            dut.tx_dest_ip.value = dst_ip
            dut.tx_dest_port.value = dst_port
    await edge
    dut.tx_valid.value = 0
    dut.tx_end_of_frame.value = 0


@cocotb.test()
async def overflow_drops_whole_frames_and_counts_them(dut) -> None:  # noqa: ANN001
    h, mon, drv = await start(dut, mode="random", seed=3)
    mon.pacer.stall_prob = 0.97  # the MAC hardly takes data: the buffer must overflow
    mon.pacer.max_stall = 64
    drv.stop()
    rng = random.Random(8)
    dst = int(ipaddress.IPv4Address("10.0.0.21"))
    payloads = [rng.randbytes(rng.randint(2000, 8972)) for _ in range(40)]
    await blast(dut, payloads, dst, 7000)
    assert int(dut.tx_overflow.value) == 1, "the buffer never overflowed"
    mon.pacer.stall_prob = 0.0
    await Timer(20, unit="us")
    got = mon.frames
    # Every frame that left is whole and is one of the sent datagrams, in order, with
    # consecutive IP Identification values (dropped frames never got a descriptor).
    k = 0
    for ip_id, f in enumerate(got):
        while k < len(payloads) and f.body != expected(payloads[k], dst, 7000, ip_id):
            k += 1
        assert k < len(payloads), f"frame {ip_id} is not a whole sent datagram"
        k += 1
    await Timer(1, unit="us")
    c = await h.counters(["tx_overflow", "tx_overflow_counter", "tx_udp_packets"])
    assert c["tx_udp_packets"] == len(got)
    assert c["tx_overflow"] == len(payloads) - len(got), c
    assert c["tx_overflow_counter"] > 0
    status = await h.read_reg("status")
    assert status >> 3 & 1, "status.tx_overflow not set"
    # The user reset clears the sticky flag.
    dut.rst.value = 1
    await ClockCycles(dut.user_clk, 2)
    dut.rst.value = 0
    await h.wait_tx_ready()
    assert int(dut.tx_overflow.value) == 0


@cocotb.test()
async def soft_reset_mid_stream_never_truncates_a_frame(dut) -> None:  # noqa: ANN001
    h, mon, drv = await start(dut, mode="random", seed=4)
    rng = random.Random(9)
    dst = int(ipaddress.IPv4Address("10.0.0.20"))
    first = [rng.randbytes(8972) for _ in range(10)]
    for p in first:
        drv.send_nowait(p, dst, 8000)
    await Timer(400, unit="ns")  # frames in flight on both sides
    await h.set_field("ctrl", "soft_rst", 1)
    assert (await h.read_reg("ctrl")) >> 16 & 1 == 0, "soft_rst did not self-clear"
    await drv.wait_idle()
    await Timer(30, unit="us")
    before = len(mon.frames)
    # Whatever left before and around the reset is whole (the DCMAC model checks every
    # segment rule) and is a frame that was sent; datagrams queued across the reset get
    # the Identification the core gives them then, so take it from the frame.
    for f in mon.frames:
        ip_id = int.from_bytes(f.body[18:20], "big")
        assert any(f.body == expected(p, dst, 8000, ip_id) for p in first), (
            f"frame with id {ip_id} around the soft reset is not a whole sent datagram"
        )
    assert before < len(first), "the soft reset dropped nothing: it came too late to test"
    # After the reset the path works; Identification numbering restarted at the reset
    # and went on with the datagrams that were still queued, the register says where.
    await h.wait_tx_ready()
    base_id = await h.read_reg("ip_id")
    again = [rng.randbytes(rng.randint(1, 3000)) for _ in range(5)]
    for p in again:
        drv.send_nowait(p, dst, 8001)
    await drv.wait_idle()
    await mon.wait_frames(before + len(again))
    assert_frames(
        mon.frames[before:], [expected(p, dst, 8001, base_id + i) for i, p in enumerate(again)]
    )
