"""fhg_sw_reg: a From Processor register software writes (byte strobes honoured) and the
user clock sees whole; a To Processor register software reads from the user clock and may
not write."""

from __future__ import annotations

import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

INIT_VAL = int(os.environ["SW_INIT_VAL"], 0)
AXIL_NS = 10  # 100 MHz register bus
USER_NS = 2.56  # 390.625 MHz design clock
# The crossing (fhg_cfg_sync) hands a value over in a few cycles of both clocks.
SETTLE_AXIL = 20


async def start(dut) -> AxiLiteMaster:  # noqa: ANN001
    Clock(dut.axil_clk, AXIL_NS, unit="ns").start()
    Clock(dut.user_clk, USER_NS, unit="ns").start()
    dut.axil_rst_n.value = 0
    dut.user_data_in.value = 0
    host = AxiLiteMaster(
        AxiLiteBus.from_prefix(dut, "s_axil"),
        dut.axil_clk,
        dut.axil_rst_n,
        reset_active_level=False,
    )
    await ClockCycles(dut.axil_clk, 5)
    dut.axil_rst_n.value = 1
    await ClockCycles(dut.axil_clk, SETTLE_AXIL)
    return host


async def read32(host: AxiLiteMaster) -> int:
    resp = await host.read(0, 4)
    assert resp.resp == AxiResp.OKAY, f"read: {resp.resp!r}"
    return int.from_bytes(resp.data, "little")


@cocotb.test()
async def from_processor_drives_the_user_side(dut) -> None:  # noqa: ANN001
    host = await start(dut)
    assert await read32(host) == INIT_VAL
    assert int(dut.user_data_out.value) == INIT_VAL
    value = INIT_VAL
    for word in (0xDEADBEEF, 0x00000000, 0x13579BDF):
        resp = await host.write(0, word.to_bytes(4, "little"))
        assert resp.resp == AxiResp.OKAY
        value = word
        assert await read32(host) == value
        await ClockCycles(dut.axil_clk, SETTLE_AXIL)
        assert int(dut.user_data_out.value) == value, hex(int(dut.user_data_out.value))
    # Bytes 1 and 2 only: the others keep theirs.
    resp = await host.write(1, b"\x34\x12")
    assert resp.resp == AxiResp.OKAY
    value = (value & 0xFF0000FF) | 0x00123400
    assert await read32(host) == value
    await ClockCycles(dut.axil_clk, SETTLE_AXIL)
    assert int(dut.user_data_out.value) == value
    # The user side never sees a word half old, half new while a value crosses.
    seen = set()
    resp_task = cocotb.start_soon(host.write(0, (0xFFFFFFFF).to_bytes(4, "little")))
    for _ in range(SETTLE_AXIL * 4):
        await ClockCycles(dut.user_clk, 1)
        seen.add(int(dut.user_data_out.value))
    assert (await resp_task).resp == AxiResp.OKAY
    assert seen == {value, 0xFFFFFFFF}, [hex(v) for v in sorted(seen)]


@cocotb.test()
async def to_processor_reads_the_user_side(dut) -> None:  # noqa: ANN001
    host = await start(dut)
    for word in (0xCAFEF00D, 0x00000001, 0x80000000):
        dut.user_data_in.value = word
        await ClockCycles(dut.axil_clk, SETTLE_AXIL)
        assert await read32(host) == word
    # Software may not write it: refused, and the value read is still the user side's.
    resp = await host.write(0, (0x12345678).to_bytes(4, "little"))
    assert resp.resp == AxiResp.SLVERR, resp.resp
    assert await read32(host) == 0x80000000
    assert int(dut.user_data_out.value) == 0
