"""cocotb harness for the register block behind its flat wrapper (``fhg_regs_flat``).

Runs inside the simulator. Gives an AXI4-Lite master (cocotbext-axi), RAM models for the
external regions (ARP table, CPU buffers) that answer the block's request strobes with a
random latency, and named access to the hardware-side ports.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.clock import Clock
from cocotb.handle import SimHandleBase
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from casperfpga_ext import fhg_regmap as regmap

CLK_PERIOD_NS = 4  # 250 MHz AXI clock, the fastest the Versal CIPS offers the PL


class RegionModel:
    """A word-addressed RAM standing in for the core's side of an external region."""

    def __init__(self, harness: RegsHarness, region: regmap.Region, max_latency: int = 3) -> None:
        self.region = region
        self.words: dict[int, int] = {}
        self.writes = 0
        self.reads = 0
        self._h = harness
        self._max_latency = max_latency
        self._rng = random.Random(region.offset)
        prefix_out = f"hwif_out__{region.name}__"
        prefix_in = f"hwif_in__{region.name}__"
        dut = harness.dut
        self.req = getattr(dut, prefix_out + "req")
        self.addr = getattr(dut, prefix_out + "addr")
        self.req_is_wr = getattr(dut, prefix_out + "req_is_wr")
        self.wr_data = getattr(dut, prefix_out + "wr_data")
        self.wr_biten = getattr(dut, prefix_out + "wr_biten")
        self.rd_ack = getattr(dut, prefix_in + "rd_ack")
        self.rd_data = getattr(dut, prefix_in + "rd_data")
        self.wr_ack = getattr(dut, prefix_in + "wr_ack")
        self.rd_ack.value = 0
        self.wr_ack.value = 0
        self.rd_data.value = 0
        cocotb.start_soon(self._serve())

    def peek(self, byte_offset: int) -> int:
        return self.words.get(byte_offset // 4, 0)

    def poke(self, byte_offset: int, value: int) -> None:
        self.words[byte_offset // 4] = value & 0xFFFFFFFF

    async def _serve(self) -> None:
        clk = self._h.dut.clk
        while True:
            await RisingEdge(clk)
            if not int(self.req.value):
                continue
            index = int(self.addr.value) // 4
            is_wr = bool(int(self.req_is_wr.value))
            data = int(self.wr_data.value)
            biten = int(self.wr_biten.value)
            latency = self._rng.randint(0, self._max_latency)
            if latency:
                await ClockCycles(clk, latency)
            if is_wr:
                old = self.words.get(index, 0)
                self.words[index] = (old & ~biten) | (data & biten)
                self.writes += 1
                self.wr_ack.value = 1
                await RisingEdge(clk)
                self.wr_ack.value = 0
            else:
                self.reads += 1
                self.rd_data.value = self.words.get(index, 0)
                self.rd_ack.value = 1
                await RisingEdge(clk)
                self.rd_ack.value = 0


class RegsHarness:
    def __init__(self, dut: SimHandleBase) -> None:
        self.dut = dut
        Clock(dut.clk, CLK_PERIOD_NS, unit="ns").start()
        dut.rst_n.value = 0
        self.axi = AxiLiteMaster(
            AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst_n, reset_active_level=False
        )
        for name in dir(dut):
            if name.startswith("hwif_in__") and not name.endswith(("rd_ack", "wr_ack", "rd_data")):
                getattr(dut, name).value = 0
        self.regions = {name: RegionModel(self, r) for name, r in regmap.REGIONS.items()}

    async def reset(self) -> None:
        self.dut.rst_n.value = 0
        await ClockCycles(self.dut.clk, 5)
        self.dut.rst_n.value = 1
        await ClockCycles(self.dut.clk, 2)

    # ---- hardware side
    def hw_in(self, reg: str, field: str, sig: str = "next") -> SimHandleBase:
        return getattr(self.dut, f"hwif_in__{reg}__{field}__{sig}")

    def hw_out(self, reg: str, field: str, sig: str = "value") -> SimHandleBase:
        return getattr(self.dut, f"hwif_out__{reg}__{field}__{sig}")

    def has_port(self, name: str) -> bool:
        return hasattr(self.dut, name)

    # ---- bus side
    async def read32(self, offset: int, expect_resp: AxiResp = AxiResp.OKAY) -> int:
        resp = await self.axi.read(offset, 4)
        if resp.resp != expect_resp:
            raise AssertionError(f"read of {offset:#06x} answered {resp.resp!r}")
        return int.from_bytes(resp.data, "little")

    async def write32(self, offset: int, value: int, expect_resp: AxiResp = AxiResp.OKAY) -> None:
        resp = await self.axi.write(offset, (value & 0xFFFFFFFF).to_bytes(4, "little"))
        if resp.resp != expect_resp:
            raise AssertionError(f"write of {offset:#06x} answered {resp.resp!r}")

    async def read_reg(self, name: str) -> int:
        """Read a register by name; 64-bit ones low word first (the snapshotting order)."""
        reg = regmap.REGISTERS[name]
        low = await self.read32(reg.offset)
        if reg.width == 32:
            return low
        high = await self.read32(reg.offset + 4)
        return (high << 32) | low

    async def write_reg(self, name: str, value: int) -> None:
        reg = regmap.REGISTERS[name]
        if reg.width != 32:
            raise ValueError(f"{name} is a {reg.width}-bit read-only register")
        await self.write32(reg.offset, value)

    async def write_field(self, reg_name: str, field_name: str, value: int) -> None:
        """Read-modify-write one field."""
        reg = regmap.REGISTERS[reg_name]
        current = await self.read32(reg.offset)
        await self.write32(reg.offset, reg.field(field_name).put(current, value))
