"""fhg_sys_block: casperfpga's system registers at mlib_devel's offsets, the scratchpad, and
a user-clock counter whose rate, read over the bus, gives the clock (estimate_fpga_clock)."""

from __future__ import annotations

import itertools
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Timer
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

BOARD_ID = int(os.environ["SYS_BOARD_ID"], 0)
REV = int(os.environ["SYS_REV"], 0)
REV_RCS = int(os.environ["SYS_REV_RCS"], 0)
AXIL_NS = 10  # 100 MHz register bus
USER_NS = 2.56  # 390.625 MHz design clock


async def start(dut) -> AxiLiteMaster:  # noqa: ANN001
    Clock(dut.axil_clk, AXIL_NS, unit="ns").start()
    Clock(dut.user_clk, USER_NS, unit="ns").start()
    dut.axil_rst.value = 1
    dut.user_rst.value = 1
    host = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.axil_clk, dut.axil_rst)
    await ClockCycles(dut.axil_clk, 5)
    dut.axil_rst.value = 0
    dut.user_rst.value = 0
    await ClockCycles(dut.axil_clk, 5)
    return host


async def read32(host: AxiLiteMaster, offset: int) -> int:
    resp = await host.read(offset, 4)
    assert resp.resp == AxiResp.OKAY, f"read {offset:#x}: {resp.resp!r}"
    return int.from_bytes(resp.data, "little")


@cocotb.test()
async def registers_at_mlib_devels_offsets(dut) -> None:  # noqa: ANN001
    host = await start(dut)
    assert await read32(host, 0x00) == BOARD_ID
    assert await read32(host, 0x04) == REV
    assert await read32(host, 0x0C) == REV_RCS
    assert await read32(host, 0x08) == 0 and await read32(host, 0x18) == 0
    # Scratchpad: casperfpga's test_connection writes and reads it back; strobes honoured.
    assert await read32(host, 0x10) == 0
    for value in (0xA5A5A5, 0x000000, 0xDEADBEEF):
        resp = await host.write(0x10, value.to_bytes(4, "little"))
        assert resp.resp == AxiResp.OKAY
        assert await read32(host, 0x10) == value
    resp = await host.write(0x12, b"\x34\x12")  # bytes 2..3 only
    assert resp.resp == AxiResp.OKAY
    assert await read32(host, 0x10) == 0x1234BEEF
    # The identity is read-only: a write is refused and changes nothing.
    for offset in (0x00, 0x04, 0x0C, 0x14):
        before = await read32(host, offset) if offset != 0x14 else None
        resp = await host.write(offset, b"\xff\xff\xff\xff")
        assert resp.resp == AxiResp.SLVERR, f"write {offset:#x}: {resp.resp!r}"
        if before is not None:
            assert await read32(host, offset) == before


@cocotb.test()
async def clock_counter_gives_the_user_clock(dut) -> None:  # noqa: ANN001
    host = await start(dut)
    first = await read32(host, 0x14)
    await Timer(20, unit="us")
    second = await read32(host, 0x14)
    # casperfpga: (second - first) / seconds / 1e6 = MHz. The reads are one bus transaction
    # apart in time besides the 20 us, and the crossing adds a few user_clk cycles of
    # jitter: the estimate is within 1 %.
    mhz = ((second - first) % (1 << 32)) / 20.0
    assert abs(mhz - 1000 / USER_NS) / (1000 / USER_NS) < 0.01, mhz
    # Back-to-back reads never go backwards (no torn value from the crossing, which passes
    # a fresh count every few cycles) and the count moves on.
    values = [await read32(host, 0x14) for _ in range(20)]
    assert all(b >= a for a, b in itertools.pairwise(values)), values
    assert values[-1] > values[0], values
