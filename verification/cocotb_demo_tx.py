"""cocotb side of `python -m casper400g_dev demo` (TX part): the core sends the example stream.

Configures fhg_core over AXI4-Lite, streams $CASPER400G_DEMO_FRAMES datagrams of the
example stream (docs/design/architecture.md) through the user port into the DCMAC model paced at
400GbE, and writes every frame leaving the core to $CASPER400G_DEMO_PCAP.

Then the same frames come back into the core's receive path through an echoing peer
(source and destination MAC, IP and UDP port swapped, so the checksums stay valid and the
frames are addressed to the core), and the RX counters are read from the registers.
"""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.triggers import Timer
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from verification.core_harness import CoreHarness
from verification.models import frames
from verification.models.dcmac_rx import DcmacRxDriver
from verification.models.user_rx import UserRxMonitor

RX_STATS = (
    "rx_frames",
    "rx_udp_packets",
    "rx_udp_bytes",
    "rx_bad_udp_checksum",
    "rx_drop_fcs",
    "rx_drop_dst_mac",
    "rx_drop_dst_ip",
    "rx_drop_dst_port",
    "rx_drop_length",
    "rx_drop_overrun",
)


def echoed(frame: bytes) -> bytes:
    """The frame a peer sends back: addresses and ports swapped (checksums unchanged)."""
    f = bytearray(frame)
    f[0:6], f[6:12] = frame[6:12], frame[0:6]
    f[26:30], f[30:34] = frame[30:34], frame[26:30]
    f[34:36], f[36:38] = frame[36:38], frame[34:36]
    return bytes(f)


@cocotb.test()
async def send_example_stream(dut) -> None:  # noqa: ANN001
    cfg = json.loads(os.environ["CASPER400G_DEMO_CONFIG"])
    count = int(os.environ["CASPER400G_DEMO_FRAMES"])
    h = CoreHarness(dut)
    mon, drv = h.tx_monitor(), h.user_tx()
    await h.bring_up(
        cfg["mac"],
        cfg["ip"],
        cfg["port"],
        gateway=cfg["gateway"],
        netmask=cfg["netmask"],
        arp={int(ip_text.split(".")[-1]): mac for ip_text, mac in cfg["arp"].items()},
    )
    dst = frames.ip_to_addr(cfg["dest_ip"])
    for n in range(count):
        drv.send_nowait(frames.example_payload(n), int(dst), cfg["dest_port"])
    await drv.wait_idle()
    while len(mon.frames) < count:
        await Timer(200, unit="ns")
    await Timer(1, unit="us")
    stats = {
        name: await h.read_reg(name)
        for name in ("tx_frames", "tx_bytes", "tx_udp_packets", "tx_udp_bytes", "tx_arp_miss")
    }
    stats["goodput_bps"] = mon.goodput_bps()
    wrpcap(os.environ["CASPER400G_DEMO_PCAP"], [Ether(f.body) for f in mon.frames])

    # Loopback: the frames return through the receive path at line rate.
    rx = DcmacRxDriver(
        dut, clock=dut.rx_mac_clk, reset=dut.rx_mac_rst, mode="line", mac_clk_hz=h.mac_clk_hz
    )
    user = UserRxMonitor(dut, clock=dut.user_clk, reset=dut.rst)
    for f in mon.frames:
        rx.send_nowait(echoed(f.body), f.err)
    await rx.wait_idle()
    await Timer(3, unit="us")
    for name in RX_STATS:
        stats[name] = await h.read_reg(name)
    stats["rx_payload_ok"] = sum(
        d.payload == frames.example_payload(n) for n, d in enumerate(user.datagrams)
    )
    with open(os.environ["CASPER400G_JOB_OUT"], "w") as fh:
        json.dump(stats, fh)
