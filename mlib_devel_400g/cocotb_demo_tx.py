"""cocotb side of `casper400g demo` (TX part): the core sends the example stream.

Configures fhg_core over AXI4-Lite, streams $CASPER400G_DEMO_FRAMES datagrams of the
example stream (ARCHITECTURE.md) through the user port into the DCMAC model paced at
400GbE, and writes every frame leaving the core to $CASPER400G_DEMO_PCAP.
"""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.triggers import Timer
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from mlib_devel_400g.core_harness import CoreHarness
from mlib_devel_400g.models import frames
from mlib_devel_400g.models.dcmac_tx import DcmacTxMonitor
from mlib_devel_400g.models.user_tx import UserTxDriver


@cocotb.test()
async def send_example_stream(dut) -> None:  # noqa: ANN001
    cfg = json.loads(os.environ["CASPER400G_DEMO_CONFIG"])
    count = int(os.environ["CASPER400G_DEMO_FRAMES"])
    h = CoreHarness(dut)
    mon = DcmacTxMonitor(
        dut, clock=dut.tx_mac_clk, mac_clk_hz=h.mac_clk_hz, mode="line", reset=dut.tx_mac_rst
    )
    drv = UserTxDriver(dut, clock=dut.user_clk, reset=dut.rst)
    await h.reset()
    await h.configure(
        cfg["mac"], cfg["ip"], cfg["port"], gateway=cfg["gateway"], netmask=cfg["netmask"]
    )
    for ip_text, mac in cfg["arp"].items():
        await h.set_arp(int(ip_text.split(".")[-1]), mac)
    await h.settle_config()
    await h.enable()
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
    with open(os.environ["CASPER400G_JOB_OUT"], "w") as fh:
        json.dump(stats, fh)
