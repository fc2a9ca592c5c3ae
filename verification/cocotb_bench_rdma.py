"""cocotb side of `python -m casper400g_dev.bench_rdma`: the RDMA mode's goodput.

For each case in $CASPER400G_BENCH_CASES (JSON list of [mtu, datagram bytes]) the user
port streams back-to-back datagrams into slots of datagram + 8 bytes (flow control off),
the DCMAC model paces at 400 Gb/s, and after a warm-up the RDMA payload goodput on the wire
is compared with this traffic's RoCEv2 line goodput (the same packets, back to back at
400 Gb/s: payload over frame + 24 wire bytes). Results go to $CASPER400G_JOB_OUT (JSON).
"""

from __future__ import annotations

import json
import math
import os

import cocotb
from cocotb.triggers import ClockCycles, Timer

from verification.core_harness import USER_CLK_HZ, CoreHarness, simulated_hz
from verification.models.dcmac_tx import DcmacTxMonitor
from verification.models.roce import ETHERNET_WIRE_EXTRA, parse_frame
from verification.models.user_tx import UserTxDriver

MTU_CODE = {1024: 0, 2048: 1, 4096: 2}


@cocotb.test()
async def bench_rdma(dut) -> None:  # noqa: ANN001
    cases = json.loads(os.environ["CASPER400G_BENCH_CASES"])
    h = CoreHarness(dut)
    mac_hz = simulated_hz(h.mac_clk_hz)
    mon = DcmacTxMonitor(dut, clock=dut.tx_mac_clk, mac_clk_hz=mac_hz, mode="line",
                         reset=dut.tx_mac_rst)  # fmt: skip
    drv = UserTxDriver(dut, clock=dut.user_clk, reset=dut.rst)
    await h.reset()
    await h.configure(0x02000A00000A, 0x0A00000A, 7148)
    await h.set_arp(0x14, 0x0C42A1000014)
    await h.settle_config()
    await h.enable()
    results = []
    for mtu, size in cases:
        await h.write_reg("rdma_ctrl", 0)
        await Timer(400, unit="ns")
        for name, value in (("rdma_qpn", 1), ("rdma_psn", 0), ("rdma_rkey", 2), ("rdma_va_lo", 0),
                            ("rdma_va_hi", 0), ("rdma_slot_size", size + 8), ("rdma_slots", 64),
                            ("rdma_chunks", 4), ("rdma_dest_ip", 0x0A000014)):  # fmt: skip
            await h.write_reg(name, value)
        await h.settle_config()
        await h.write_reg("rdma_ctrl", 1 | (MTU_CODE[mtu] << 4))  # flow control off
        await Timer(400, unit="ns")
        await h.wait_tx_ready()
        n = max(40, math.ceil(300 * mtu / (size + 8)))
        payload = bytes(size)
        before = len(mon.frames)
        for _ in range(n):
            drv.send_nowait(payload, 0, 0)
        packets_per = math.ceil((size + 8) / mtu)
        total = n * packets_per
        warm = max(8, total // 10)
        while len(mon.frames) < before + warm:
            await ClockCycles(dut.tx_mac_clk, 16)
        mon.reset_stats()
        first = len(mon.frames)
        await drv.wait_idle()
        while len(mon.frames) < before + total:
            await ClockCycles(dut.tx_mac_clk, 16)
        window = mon.frames[first:]
        st = mon.stats
        rdma = sum(len(parse_frame(f.body).payload) for f in window)
        wire = sum(len(f.body) + ETHERNET_WIRE_EXTRA for f in window)
        t = st.window_s(mac_hz)
        user = rdma * (size / (size + 8))  # the datagrams' share of the slots' bytes
        results.append({
            "mtu": mtu, "datagram": size, "packets_per_datagram": packets_per,
            "packets": len(window), "rdma_gbps": 8 * rdma / t / 1e9,
            "line_gbps": 400 * rdma / wire, "ratio": (8 * rdma / t) / (400e9 * rdma / wire),
            "user_gbps": 8 * user / t / 1e9,
            "user_port_gbps": 1024 * simulated_hz(USER_CLK_HZ) / 1e9,
        })  # fmt: skip
        await Timer(200, unit="ns")
    with open(os.environ["CASPER400G_JOB_OUT"], "w") as fh:
        json.dump({"mac_clk_hz": mac_hz, "results": results}, fh)
