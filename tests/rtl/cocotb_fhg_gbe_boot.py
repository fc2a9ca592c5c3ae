"""fhg_gbe_boot: the start-up writes (order, addresses, values) and the pass-through."""

from __future__ import annotations

import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiLiteRam

REGS = {
    "mac_hi": 0x0C,
    "mac_lo": 0x10,
    "ip": 0x14,
    "gateway": 0x18,
    "netmask": 0x1C,
    "port": 0x30,
    "ttl": 0x80,
    "ctrl": 0x2C,
}


def expected_writes() -> list[tuple[int, int]]:
    mac = 0x02000A00000A
    ctrl, en = 0x4C, 0x1
    writes = [
        (REGS["mac_hi"], mac >> 32),
        (REGS["mac_lo"], mac & 0xFFFFFFFF),
        (REGS["ip"], 0x0A00000A),
        (REGS["gateway"], 0x0A000001),
        (REGS["netmask"], 0xFFFFFF00),
        (REGS["port"], 7148),
        (REGS["ttl"], 32),
        (REGS["ctrl"], ctrl & ~en),
    ]
    if os.environ["BOOT_ENABLE"] == "1":
        writes.append((REGS["ctrl"], ctrl | en))
    return writes


async def watch_writes(dut, out: list[tuple[int, int]]) -> None:  # noqa: ANN001
    aw: list[int] = []
    w: list[int] = []
    while True:
        await RisingEdge(dut.clk)
        if int(dut.m_axil_awvalid.value) and int(dut.m_axil_awready.value):
            aw.append(int(dut.m_axil_awaddr.value))
        if int(dut.m_axil_wvalid.value) and int(dut.m_axil_wready.value):
            w.append(int(dut.m_axil_wdata.value))
        while aw and w:
            out.append((aw.pop(0), w.pop(0)))


@cocotb.test()
async def writes_the_mask_values_then_passes_through(dut) -> None:  # noqa: ANN001
    Clock(dut.clk, 4, unit="ns").start()
    dut.rst_n.value = 0
    ram = AxiLiteRam(
        AxiLiteBus.from_prefix(dut, "m_axil"),
        dut.clk,
        dut.rst_n,
        reset_active_level=False,
        size=1 << 16,
    )
    host = AxiLiteMaster(
        AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst_n, reset_active_level=False
    )
    seen: list[tuple[int, int]] = []
    cocotb.start_soon(watch_writes(dut, seen))
    await ClockCycles(dut.clk, 5)
    dut.rst_n.value = 1
    # The host's first access waits for the start-up writes, then reaches the slave.
    await host.write(0x0004, (0x5A5A5A5A).to_bytes(4, "little"))
    assert int(dut.booted.value) == 1 and int(dut.boot_error.value) == 0
    want = expected_writes()
    assert seen[: len(want)] == want, [(hex(a), hex(d)) for a, d in seen]
    assert seen[len(want) :] == [(0x0004, 0x5A5A5A5A)]
    for addr, value in want:
        if addr != REGS["ctrl"]:
            assert int.from_bytes(ram.read(addr, 4), "little") == value
    assert int.from_bytes(ram.read(REGS["ctrl"], 4), "little") == want[-1][1]
    got = await host.read(REGS["ip"], 4)
    assert int.from_bytes(got.data, "little") == 0x0A00000A
