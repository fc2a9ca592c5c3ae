"""cocotb job: the simulated core sends one datagram stream in RDMA mode, then as UDP.

For tests/rdma/test_softroce_rdma.py: the receiver in the soft-RoCE VM reported its ring
($CASPER400G_RDMA_PARAMS, JSON of ``Capture.rdma_params``); the core is pointed at it the
way ``FourHundredGbe.rdma_connect`` does (its checks, its register values), with flow
control on. The plan ($CASPER400G_RDMA_PLAN, JSON): ``datagrams`` example-stream datagrams
of ``payload`` bytes; the consumer's credits keep up, except that after the ring's first
pass ``stalled_chunks`` chunks go out while no credit has come back (they are dropped whole
by the core), then one credit releases everything. The same datagrams are then sent as
UDP datagrams to the receiver's ``udp_port``. Frames go to ``rdma.pcap`` and ``udp.pcap``
in $CASPER400G_RDMA_OUT; the core's RDMA counters to $CASPER400G_JOB_OUT.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import cocotb
from cocotb.triggers import Timer

from casper400g_rx.example_stream import example_payloads
from casperfpga_ext import rdma as rdma_regs
from verification.core_harness import CoreHarness
from verification.models.dcmac_tx import DcmacTxMonitor
from verification.models.user_tx import UserTxDriver
from verification.pcapio import write_pcap


@cocotb.test()
async def rdma_then_udp(dut) -> None:  # noqa: ANN001
    params = json.loads(os.environ["CASPER400G_RDMA_PARAMS"])
    plan = json.loads(os.environ["CASPER400G_RDMA_PLAN"])
    out = Path(os.environ["CASPER400G_RDMA_OUT"])
    v = rdma_regs.check_params(params)
    h = CoreHarness(dut)
    mon = DcmacTxMonitor(dut, clock=dut.tx_mac_clk, mac_clk_hz=h.mac_clk_hz, mode="line",
                         reset=dut.tx_mac_rst)  # fmt: skip
    drv = UserTxDriver(dut, clock=dut.user_clk, reset=dut.rst)
    await h.reset()
    await h.configure(plan["core_mac"], plan["core_ip"], plan["core_port"])
    await h.set_arp(v["ip"] & 0xFF, v["mac"])
    await h.settle_config()
    await h.enable()
    # FourHundredGbe.rdma_connect's register values, written in its order.
    for name, value in (
        ("rdma_qpn", v["qpn"]), ("rdma_psn", v["psn"]), ("rdma_rkey", v["rkey"]),
        ("rdma_va_lo", v["va"] & 0xFFFFFFFF), ("rdma_va_hi", v["va"] >> 32),
        ("rdma_slot_size", v["slot_size"]), ("rdma_slots", v["slots_per_chunk"]),
        ("rdma_chunks", v["chunks"]), ("rdma_dest_ip", v["ip"]),
        ("rdma_credit", rdma_regs.NO_CREDIT), ("rdma_credit_port", v["credit_port"]),
    ):  # fmt: skip
        await h.write_reg(name, value)
    await h.settle_config()
    await h.write_reg("rdma_ctrl", 1 | (1 << 1) | (v["mtu"] << 4))
    await Timer(400, unit="ns")
    await h.wait_tx_ready()

    slots, chunks = v["slots_per_chunk"], v["chunks"]
    n = plan["datagrams"]
    payloads = example_payloads(range(n), plan["payload"])
    stalled = plan["stalled_chunks"]
    for c in range(n // slots):
        if c >= chunks + stalled:
            # The consumer has caught up: everything before this chunk is released.
            await h.write_reg("rdma_credit", (c - 1) & 0xFFFFFFFF)
            await Timer(300, unit="ns")
        for k in range(c * slots, (c + 1) * slots):
            drv.send_nowait(bytes(payloads[k]), 0, 0)
        await drv.wait_idle()
        await Timer(2000, unit="ns")
    await Timer(5000, unit="ns")
    rdma_frames = [f.body for f in mon.frames]
    counters = {
        name: await h.read_reg(name)
        for name in ("rdma_chunks_sent", "rdma_chunks_dropped", "rdma_datagrams",
                     "rdma_datagrams_dropped", "rdma_icrc_frames", "rdma_next_psn")
    }  # fmt: skip

    # The same stream as UDP datagrams.
    await h.set_field("rdma_ctrl", "en", 0)
    await Timer(400, unit="ns")
    await h.wait_tx_ready()
    first = len(mon.frames)
    for k in range(n):
        drv.send_nowait(bytes(payloads[k]), v["ip"], plan["udp_port"])
    await drv.wait_idle()
    await mon.wait_frames(first + n, limit_ns=5_000_000)
    udp_frames = [f.body for f in mon.frames[first:]]
    write_pcap(out / "rdma.pcap", rdma_frames)
    write_pcap(out / "udp.pcap", udp_frames)
    with open(os.environ["CASPER400G_JOB_OUT"], "w") as fh:
        json.dump({"counters": counters, "rdma_frames": len(rdma_frames)}, fh)
