"""cocotb side of `python -m casper400g_dev bench tx`: stream back-to-back datagrams through
fhg_core.

For each payload size in $CASPER400G_BENCH_SIZES (JSON list; 0 = a random mix) the user
port streams $CASPER400G_BENCH_FRAMES datagrams with no idle cycles into a DCMAC model
that paces at the 400GbE line rate; the goodput is measured on the MAC side after a
warm-up. Results go to $CASPER400G_JOB_OUT (JSON).
"""

from __future__ import annotations

import json
import math
import os
import random

import cocotb
from cocotb.triggers import ClockCycles, Timer

from verification.core_harness import USER_CLK_HZ, CoreHarness, simulated_hz
from verification.models import frames
from verification.models.dcmac_tx import packing_stats

MIX_SIZES = (64, 128, 256, 512, 1024, 1472, 4096, 8192, 8972)
DST_IP = 0x0A000014


def mix_sizes(count: int, seed: int = 5) -> list[int]:
    rng = random.Random(seed)
    return [
        rng.choice(MIX_SIZES) if rng.random() < 0.5 else rng.randint(1, 8972) for _ in range(count)
    ]


@cocotb.test()
async def bench_tx(dut) -> None:  # noqa: ANN001
    sizes = json.loads(os.environ["CASPER400G_BENCH_SIZES"])
    nframes = int(os.environ["CASPER400G_BENCH_FRAMES"])
    h = CoreHarness(dut)
    mac_hz = simulated_hz(h.mac_clk_hz)
    user_hz = simulated_hz(USER_CLK_HZ)
    mon, drv = h.tx_monitor(mac_clk_hz=mac_hz), h.user_tx()
    await h.bring_up(
        0x02000A00000A, 0x0A00000A, 7148, gateway=0x0A000001, arp={DST_IP & 0xFF: 0x0C42A1000014}
    )
    results = []
    for size in sizes:
        if size:
            # Enough frames for a window of >= ~2000 bus cycles (the pacer's burst credit
            # and the warm-up are then negligible).
            count = max(nframes, math.ceil(2000 * 128 / (size + 42)))
            plan = [size] * count
        else:
            plan = mix_sizes(nframes)
        warm = max(8, len(plan) // 10)
        payloads = {s: bytes(s) for s in set(plan)}
        before = len(mon.frames)
        for s in plan:
            drv.send_nowait(payloads[s], DST_IP, 9000)
        while len(mon.frames) < before + warm:
            await ClockCycles(dut.tx_mac_clk, 16)
        mon.reset_stats()
        measured_from = len(mon.frames)
        await drv.wait_idle()
        while len(mon.frames) < before + len(plan):
            await ClockCycles(dut.tx_mac_clk, 16)
        st = mon.stats
        counted = plan[measured_from - before :]
        assert st.frames == len(counted), (st.frames, len(counted))
        payload_bits = 8 * sum(counted)
        line_time = sum(8 * frames.wire_bytes_per_frame(s) for s in counted) / 400e9
        user_time = sum(math.ceil(s / 128) for s in counted) / user_hz
        theory_time = max(line_time, user_time)
        pk = packing_stats(mon.frames[measured_from:])
        results.append(
            {
                "size": size,
                "frames": st.frames,
                "goodput_bps": st.goodput_bps(mac_hz),
                "line_bps": payload_bits / line_time,
                "user_bps": payload_bits / user_time,
                "theory_bps": payload_bits / theory_time,
                "binds": "line" if line_time >= user_time else "user port",
                # where frames started (simulated bus cycles; see PackingStats)
                "gapless": pk.gapless_fraction,
                "same_cycle_starts": pk.same_cycle,
                "two_sop_cycles": pk.two_sop_cycles,
                "two_sop_ideal": pk.two_sop_ideal,
                "fill": pk.fill,
                "fill_ideal": pk.fill_ideal,
            }
        )
        await Timer(100, unit="ns")
    with open(os.environ["CASPER400G_JOB_OUT"], "w") as fh:
        json.dump({"mac_clk_hz": mac_hz, "user_clk_hz": user_hz, "results": results}, fh)
