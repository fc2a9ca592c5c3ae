"""cocotb harness for ``fhg_core``: clocks, resets, AXI4-Lite configuration, counters.

Runs inside the simulator. Clock frequencies are the design's: user_clk 390.625 MHz, the
DCMAC TX AXI clock 391.03 MHz (docs/design/core.md §5) and a 250 MHz register clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Timer
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from casperfpga_ext import addressing
from casperfpga_ext import fhg_regmap as regmap

from .models.dcmac_tx import DcmacTxMonitor
from .models.user_tx import UserTxDriver

USER_CLK_HZ = 390.625e6
MAC_CLK_HZ = 391.03e6
AXIL_CLK_HZ = 250e6


def simulated_hz(hz: float) -> float:
    """The frequency a clock of `hz` really has in simulation (whole femtoseconds)."""
    return 1e15 / round(1e15 / hz)


def _clock(signal: Any, hz: float) -> None:
    period = round(1e15 / hz)
    Clock(signal, period, unit="fs", period_high=period // 2).start()


def axil_master(dut: Any, prefix: str) -> AxiLiteMaster:
    """An AXI4-Lite master on the ``prefix`` ports, clocked by ``axil_clk`` with the
    active-low ``axil_rst_n``; its per-transfer log lines are off (a run makes thousands)."""
    axi = AxiLiteMaster(
        AxiLiteBus.from_prefix(dut, prefix),
        dut.axil_clk,
        dut.axil_rst_n,
        reset_active_level=False,
    )
    axi.write_if.log.setLevel("WARNING")
    axi.read_if.log.setLevel("WARNING")
    return axi


class CoreHarness:
    def __init__(self, dut: Any, mac_clk_hz: float = MAC_CLK_HZ) -> None:
        self.dut = dut
        self.mac_clk_hz = mac_clk_hz
        _clock(dut.user_clk, USER_CLK_HZ)
        _clock(dut.tx_mac_clk, mac_clk_hz)
        # The RX MAC clock: same frequency, separate clock (its own phase), as the core
        # treats the two as independent domains.
        _clock(dut.rx_mac_clk, mac_clk_hz)
        _clock(dut.axil_clk, AXIL_CLK_HZ)
        dut.axil_rst_n.value = 0
        dut.tx_mac_rst.value = 1
        dut.rx_mac_rst.value = 1
        dut.rx_axis_tvalid_0.value = 0
        dut.rst.value = 1
        dut.mac_link_up.value = 0
        dut.tx_valid.value = 0
        dut.tx_end_of_frame.value = 0
        dut.rx_ack.value = 0
        dut.rx_overrun_ack.value = 0
        self.axi = axil_master(dut, "s_axil")

    def tx_monitor(
        self, mode: str = "line", mac_clk_hz: float | None = None, **kw: Any
    ) -> DcmacTxMonitor:
        """The DCMAC TX model on the core's MAC port, paced in ``mode`` (``kw``: the
        monitor's other options), holding the port while tx_mac_rst is high."""
        dut = self.dut
        return DcmacTxMonitor(
            dut,
            clock=dut.tx_mac_clk,
            mac_clk_hz=self.mac_clk_hz if mac_clk_hz is None else mac_clk_hz,
            mode=mode,
            reset=dut.tx_mac_rst,
            **kw,
        )

    def user_tx(self) -> UserTxDriver:
        """The user-port driver of the core's TX side, idle while rst is high."""
        return UserTxDriver(self.dut, clock=self.dut.user_clk, reset=self.dut.rst)

    async def reset(self) -> None:
        dut = self.dut
        await ClockCycles(dut.axil_clk, 8)
        dut.axil_rst_n.value = 1
        dut.tx_mac_rst.value = 0
        dut.rx_mac_rst.value = 0
        await ClockCycles(dut.user_clk, 4)
        dut.rst.value = 0
        dut.mac_link_up.value = 1

    async def wait_tx_ready(self, timeout_cycles: int = 2000) -> None:
        """Wait until the TX path accepts data (reset sequence done, fabric enabled)."""
        for _ in range(timeout_cycles):
            await ClockCycles(self.dut.user_clk, 1)
            if not int(self.dut.tx_afull.value):
                return
        raise AssertionError("tx_afull stayed high: the TX path is not accepting data")

    # ---------------------------------------------------------------- registers
    async def write32(self, offset: int, value: int) -> None:
        resp = await self.axi.write(offset, (value & 0xFFFFFFFF).to_bytes(4, "little"))
        assert resp.resp == AxiResp.OKAY, f"write {offset:#x}: {resp.resp!r}"

    async def read32(self, offset: int) -> int:
        resp = await self.axi.read(offset, 4)
        assert resp.resp == AxiResp.OKAY, f"read {offset:#x}: {resp.resp!r}"
        return int.from_bytes(resp.data, "little")

    async def read_reg(self, name: str) -> int:
        reg = regmap.REGISTERS[name]
        low = await self.read32(reg.offset)
        if reg.width == 32:
            return low
        return ((await self.read32(reg.offset + 4)) << 32) | low

    async def write_reg(self, name: str, value: int) -> None:
        await self.write32(regmap.REGISTERS[name].offset, value)

    async def set_field(self, reg_name: str, field_name: str, value: int) -> None:
        reg = regmap.REGISTERS[reg_name]
        current = await self.read32(reg.offset)
        await self.write32(reg.offset, reg.field(field_name).put(current, value))

    async def configure(
        self,
        mac: int | str,
        ip: int | str,
        port: int,
        gateway: int | str = 0,
        netmask: int | str = "255.255.255.0",
        ttl: int = 64,
        udp_checksum: bool = True,
    ) -> None:
        mac_v = addressing.parse_mac(mac)
        await self.write_reg("mac_hi", mac_v >> 32)
        await self.write_reg("mac_lo", mac_v & 0xFFFFFFFF)
        await self.write_reg("ip", addressing.parse_ip(ip))
        await self.write_reg("gateway", addressing.parse_ip(gateway))
        await self.write_reg("netmask", addressing.parse_netmask(netmask))
        await self.write_reg("port", addressing.parse_port(port))
        await self.write_reg("ttl", ttl)
        await self.set_field("ctrl", "udp_checksum_en", int(udp_checksum))

    async def set_arp(self, index: int, mac: int | str | None) -> None:
        """ARP entry ``index`` (IP[7:0]); None clears its valid bit."""
        region = regmap.REGIONS["arp_table"]
        base = region.offset + region.entry_bytes * index
        if mac is None:
            await self.write32(base, 0)
            await self.write32(base + 4, 0)
            return
        mac_v = addressing.parse_mac(mac)
        await self.write32(base, (1 << 16) | (mac_v >> 32))
        await self.write32(base + 4, mac_v & 0xFFFFFFFF)

    async def enable(self, on: bool = True) -> None:
        await self.set_field("ctrl", "fabric_en", int(on))
        if on:
            await self.wait_tx_ready()

    async def bring_up(
        self,
        mac: int | str,
        ip: int | str,
        port: int,
        *,
        arp: Mapping[int, int | str] | None = None,
        **config: Any,
    ) -> None:
        """Reset, :meth:`configure` (``config``: its keyword options), fill the ARP entries
        ({index: MAC}), let the configuration reach the MAC clock domain and enable the
        fabric: how every TX bench starts."""
        await self.reset()
        await self.configure(mac, ip, port, **config)
        for index, entry in (arp or {}).items():
            await self.set_arp(index, entry)
        await self.settle_config()
        await self.enable()

    async def settle_config(self) -> None:
        """Give the configuration snapshot time to reach the MAC clock domain."""
        await Timer(200, unit="ns")

    async def counters(self, names: list[str] | None = None) -> dict[str, int]:
        names = names or list(regmap.COUNTERS)
        return {n: await self.read_reg(n) for n in names}
