"""fhg_core built with USE_TAF=1, RX_FCS_ON_BUS=1 and a short rate window (AXIL_CLK_HZ=5000,
i.e. the per-second registers count over 5000 register-clock cycles = 20 us at 250 MHz).

* With taf in use the packer starts no frame while taf is high; frames still leave whole,
  obey every PG369 rule and match scapy under random tready/taf stalls.
* With the FCS left on the RX bus (the DCMAC not stripping it) the receive path still
  accounts for every frame of a random mix and delivers exact payloads.
* The rate registers show the count of the last complete window: a window inside steady
  traffic counts what the MAC model received in it, an idle window counts 0.
"""

from __future__ import annotations

import ipaddress
import random

import cocotb
from cocotb.triggers import Timer
from cocotb_fhg_core_rx import FCS_ON_BUS, config, run_mix
from cocotb_fhg_core_tx import ARP, GATEWAY, NETMASK, OWN_IP, OWN_MAC, PORT, TTL, expected

from verification.core_harness import CoreHarness

WINDOW_NS = 5000 * 4  # AXIL_CLK_HZ cycles of the 250 MHz register clock


@cocotb.test()
async def taf_honoured_frames_whole_and_exact(dut) -> None:  # noqa: ANN001
    h = CoreHarness(dut)
    mon, drv = h.tx_monitor("random", seed=5, taf_prob=0.1), h.user_tx()
    await h.bring_up(OWN_MAC, OWN_IP, PORT, gateway=GATEWAY, netmask=NETMASK, ttl=TTL, arp=ARP)
    rng = random.Random(6)
    dst = int(ipaddress.IPv4Address("10.0.0.20"))
    payloads = [rng.randbytes(rng.choice([20, 64, 129, 700, 1472, 4000])) for _ in range(60)]
    for p in payloads:
        drv.send_nowait(p, dst, 4321)
    await drv.wait_idle()
    while len(mon.frames) < len(payloads):
        await Timer(200, unit="ns")
    assert [f.body for f in mon.frames] == [
        expected(p, dst, 4321, i) for i, p in enumerate(payloads)
    ]

    # Rates: an idle stretch longer than a window must read 0.
    await Timer(2 * WINDOW_NS, unit="ns")
    assert await h.read_reg("tx_packet_rate") == 0
    assert await h.read_reg("tx_valid_rate") == 0
    # Steady traffic over several windows (4000-B datagrams, about 246 per window at line
    # rate): the register and a window-long count of what the MAC model received agree
    # to within a few frames (the two windows are not aligned).
    mon.pacer.stall_prob = 0.0
    mon.pacer.taf_prob = 0.0
    for _ in range(1300):
        drv.send_nowait(bytes(4000), dst, 4321)
    await Timer(2 * WINDOW_NS, unit="ns")
    before = len(mon.frames)
    await Timer(WINDOW_NS, unit="ns")
    per_window = len(mon.frames) - before
    rate = await h.read_reg("tx_packet_rate")
    assert per_window > 200, f"traffic was not steady during the window ({per_window})"
    assert abs(rate - per_window) <= 3, (rate, per_window)
    await drv.wait_idle()


@cocotb.test()
async def rx_mix_fcs_on_bus(dut) -> None:  # noqa: ANN001
    assert FCS_ON_BUS, "this build keeps the FCS on the RX bus"
    await run_mix(dut, 3000, config(), seed=23, idle_prob=0.05, random_align=True)
