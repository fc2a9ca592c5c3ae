"""cocotb side of the generated top's simulation (`python -m casper400g_dev demo`, tests/rtl).

The DUT is the example design's ``top.v`` as the toolflow wrote it, on the board-less
``generic400g`` platform: the testbench plays the host (an AXI4-Lite master on
``M_AXI_*`` at the platform's bus addresses) and the DCMAC (the TX model on the
``fhg0_*`` client ports, paced at 400GbE). $CASPER400G_TOP_CONFIG (JSON) carries the
build's device addresses, the block's mask parameters and what to send; the checks are
against scapy-built frames and the example-stream formula.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import itertools
import json
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.task import bridge, resume
from cocotb.triggers import ClockCycles, Timer
from cocotbext.axi import AxiResp

from casperfpga_ext import addressing
from casperfpga_ext import fhg_regmap as regmap
from verification import tone_model
from verification.core_harness import (
    AXIL_CLK_HZ,
    MAC_CLK_HZ,
    USER_CLK_HZ,
    axil_master,
    simulated_hz,
)
from verification.models import frames, spead
from verification.models.dcmac_tx import DcmacTxMonitor, TxFrame
from verification.models.dest_table import Routes


def _clock(signal: Any, hz: float) -> None:
    period = round(1e15 / hz)
    Clock(signal, period, unit="fs", period_high=period // 2).start()


class Host:
    """The processor side: named devices at the addresses the build assigned."""

    def __init__(self, dut: Any, devices: dict[str, int]) -> None:
        self.devices = devices
        self.axi = axil_master(dut, "M_AXI")

    async def write(self, device: str, value: int, offset: int = 0) -> None:
        resp = await self.axi.write(self.devices[device] + offset, value.to_bytes(4, "little"))
        assert resp.resp == AxiResp.OKAY, f"write {device}+{offset:#x}: {resp.resp!r}"

    async def read(self, device: str, offset: int = 0) -> int:
        resp = await self.axi.read(self.devices[device] + offset, 4)
        assert resp.resp == AxiResp.OKAY, f"read {device}+{offset:#x}: {resp.resp!r}"
        return int.from_bytes(resp.data, "little")

    async def gbe_reg(self, name: str) -> int:
        reg = regmap.REGISTERS[name]
        low = await self.read("gbe0", reg.offset)
        if reg.width == 64:
            return ((await self.read("gbe0", reg.offset + 4)) << 32) | low
        return low


async def bring_up(dut: Any, cfg: dict) -> tuple[Host, DcmacTxMonitor]:
    _clock(dut.user_clk, USER_CLK_HZ)
    _clock(dut.axil_clk, AXIL_CLK_HZ)
    _clock(dut.fhg0_tx_mac_clk, MAC_CLK_HZ)
    if hasattr(dut, "fhg0_rx_mac_clk"):
        _clock(dut.fhg0_rx_mac_clk, MAC_CLK_HZ)
        dut.fhg0_rx_mac_rst.value = 1
    dut.axil_rst_n.value = 0
    dut.fhg0_tx_mac_rst.value = 1
    dut.fhg0_mac_link_up.value = 0
    mon = DcmacTxMonitor(
        dut,
        prefix="fhg0_",
        clock=dut.fhg0_tx_mac_clk,
        mac_clk_hz=simulated_hz(MAC_CLK_HZ),
        mode="line",
        reset=dut.fhg0_tx_mac_rst,
    )
    host = Host(dut, cfg["devices"])
    await ClockCycles(dut.axil_clk, 10)
    dut.axil_rst_n.value = 1
    dut.fhg0_tx_mac_rst.value = 0
    if hasattr(dut, "fhg0_rx_mac_rst"):
        dut.fhg0_rx_mac_rst.value = 0
    dut.fhg0_mac_link_up.value = 1
    return host, mon


def expected_frame(cfg: dict, n: int, size: int, payload: bytes | None = None) -> bytes:
    gbe = cfg["gbe"]
    dst = cfg["dest_ip"]
    return frames.expected_udp_frame(
        gbe["fab_mac"],
        cfg["dest_mac"],
        gbe["fab_ip"],
        dst,
        int(gbe["fab_udp"]),
        cfg["dest_port"],
        ip_id=n,
        ttl=int(gbe["ttl"]),
        payload=frames.example_payload(n, size) if payload is None else payload,
        udp_checksum=bool(int(gbe["udp_checksum_en"])),
    )


async def configure(host: Host, cfg: dict) -> None:
    gbe = cfg["gbe"]
    # The block's start-up writes (fhg_gbe_boot) put the mask parameters in place: the
    # first read waits for them, then every value reads back as the design says.
    want = {
        "mac_hi": addressing.parse_mac(gbe["fab_mac"]) >> 32,
        "mac_lo": addressing.parse_mac(gbe["fab_mac"]) & 0xFFFFFFFF,
        "ip": addressing.parse_ip(gbe["fab_ip"]),
        "gateway": addressing.parse_ip(gbe["fab_gate"]),
        "netmask": addressing.parse_ip(gbe["fab_netmask"]),
        "port": int(gbe["fab_udp"]),
        "ttl": int(gbe["ttl"]),
    }
    for name, value in want.items():
        got = await host.gbe_reg(name)
        assert got == value, f"gbe0 {name}: {got:#x}, design says {value:#x}"
    ctrl = regmap.REGISTERS["ctrl"]
    got_ctrl = await host.gbe_reg("ctrl")
    assert ctrl.field("fabric_en").get(got_ctrl) == int(gbe["fab_en"])
    assert ctrl.field("udp_checksum_en").get(got_ctrl) == int(gbe["udp_checksum_en"])
    # Software's part: the next hop's ARP entry, then the fabric enable.
    await arp_entry(host, cfg["dest_ip"], cfg["dest_mac"])
    await host.write("gbe0", ctrl.field("fabric_en").put(got_ctrl, 1), ctrl.offset)
    await host.write("pkt_dest_ip", addressing.parse_ip(cfg["dest_ip"]))
    await host.write("pkt_dest_port", cfg["dest_port"])
    await Timer(300, unit="ns")  # configuration crossing into the MAC clock domain


async def arp_entry(host: Host, ip: str, mac_text: str) -> None:
    arp = regmap.REGIONS["arp_table"]
    index = addressing.parse_ip(ip) & 0xFF
    mac = addressing.parse_mac(mac_text)
    await host.write("gbe0", (1 << 16) | (mac >> 32), arp.offset + arp.entry_bytes * index)
    await host.write("gbe0", mac & 0xFFFFFFFF, arp.offset + arp.entry_bytes * index + 4)


async def send_burst(
    host: Host, mon: DcmacTxMonitor, size: int, count: int, period: int = 0, settle: bool = False
) -> list[TxFrame]:
    """One generator burst of ``count`` frames of ``size`` bytes, ``period`` user_clk cycles
    apart (0: back to back); the frames it sent. With ``settle`` 2 us more pass first, and
    no further frame may have left the core (a burst ends by itself after ``count``)."""
    await host.write("pkt_size", size)
    await host.write("pkt_period", period)
    await host.write("pkt_count", count)
    start = len(mon.frames)
    await host.write("pkt_ctrl", 1)
    await mon.wait_frames(start + count, limit_ns=(count * 10 + 50) * 1000)
    if settle:
        await Timer(2, unit="us")
        assert len(mon.frames) == start + count, (len(mon.frames), start, count)
    await host.write("pkt_ctrl", 0)
    return mon.frames[start:]


@cocotb.test()
async def bus_errors_and_read_only_registers(dut) -> None:  # noqa: ANN001
    """Unmapped addresses answer DECERR; the To-Processor register refuses writes."""
    cfg = json.loads(os.environ["CASPER400G_TOP_CONFIG"])
    host, _mon = await bring_up(dut, cfg)
    hole = max(host.devices.values()) + 0x100
    resp = await host.axi.read(hole, 4)
    assert resp.resp == AxiResp.DECERR, resp.resp
    resp = await host.axi.write(hole, bytes(4))
    assert resp.resp == AxiResp.DECERR, resp.resp
    resp = await host.axi.write(host.devices["pkt_sent"], bytes(4))
    assert resp.resp == AxiResp.SLVERR, resp.resp
    # sw_reg init values (the design's init_val) read back.
    assert await host.read("pkt_size") == 8192
    await host.write("pkt_size", 0x1234_5678)
    assert await host.read("pkt_size") == 0x1234_5678
    assert await host.gbe_reg("core_type") >> 24 == 6  # the 400 GbE speed code


@cocotb.test()
async def sends_the_example_stream(dut) -> None:  # noqa: ANN001
    """The packet generator, driven through its registers, sends the example stream."""
    cfg = json.loads(os.environ["CASPER400G_TOP_CONFIG"])
    host, mon = await bring_up(dut, cfg)
    await configure(host, cfg)
    results: dict[str, Any] = {"bursts": []}
    n = 0
    await host.write("pkt_ctrl", 2)  # reset the sequence number
    for burst in cfg["bursts"]:
        size, period, count = burst["size"], burst["period"], burst["count"]
        got = await send_burst(host, mon, size, count, period, settle=True)
        for frame in got:
            want = expected_frame(cfg, n, size)
            assert frame.body == want, f"frame {n} ({size} B) differs from scapy's"
            n += 1
        firsts = [f.first_cycle for f in got[:count]]
        gaps = [b - a for a, b in itertools.pairwise(firsts)]
        mean_gap_user = (sum(gaps) / len(gaps)) * USER_CLK_HZ / simulated_hz(MAC_CLK_HZ)
        results["bursts"].append(
            {
                "size": size,
                "period": period,
                "frames": len(got),
                "mean_gap_user_cycles": mean_gap_user,
            }
        )
        if period:
            # Rate control: one packet every `period` user_clk cycles.
            assert abs(mean_gap_user - period) < 0.02 * period + 2, (mean_gap_user, period)
    sent = await host.read("pkt_sent")
    assert sent == n, f"pkt_sent reads {sent}, {n} frames left the core"
    assert await host.gbe_reg("tx_udp_packets") == n
    assert await host.gbe_reg("tx_arp_miss") == 0
    results["sent"] = sent
    results["counters"] = {
        name: await host.gbe_reg(name)
        for name in ("tx_frames", "tx_bytes", "tx_udp_packets", "tx_udp_bytes", "tx_arp_miss")
    }
    results["goodput_bps"] = mon.goodput_bps()
    results["frames"] = [f.body.hex() for f in mon.frames]
    out = os.environ.get("CASPER400G_JOB_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(results, fh)


@cocotb.test()
async def sends_spead_heaps(dut) -> None:  # noqa: ANN001
    """spead_ctrl set: every frame carries one SPEAD heap (heap counter n, timestamp
    n * spead_ts_step, spead_channel, the example payload), checked against scapy; the
    frames go to $CASPER400G_SPEAD_OUT for spead2 and the receiver."""
    cfg = json.loads(os.environ["CASPER400G_TOP_CONFIG"])
    host, mon = await bring_up(dut, cfg)
    await configure(host, cfg)
    step, channel = 8192, 0x321
    await host.write("pkt_ctrl", 2)
    await host.write("spead_ctrl", 1)
    await host.write("spead_channel", channel)
    await host.write("spead_ts_step", step)
    n = 0
    for size, count in ((8192, 4), (1000, 3)):
        for frame in await send_burst(host, mon, size, count, settle=True):
            heap = spead.heap_packet(n, frames.example_payload(n, size), n * step, channel)
            assert frame.body == expected_frame(cfg, n, size, heap), f"SPEAD frame {n} ({size} B)"
            n += 1
    assert await host.read("pkt_sent") == n
    assert await host.gbe_reg("tx_udp_packets") == n
    out = os.environ.get("CASPER400G_SPEAD_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(
                {"step": step, "channel": channel, "frames": [f.body.hex() for f in mon.frames]},
                fh,
            )


@cocotb.test()
async def sends_the_tone(dut) -> None:  # noqa: ANN001
    """pkt_mode 1: int8 complex samples of the configured tone plus noise behind the
    sequence number, equal to the golden model (verification/tone_model.py) byte for byte;
    three runs from reset: a size with a partial last beat and an odd trailing byte; 8192 B
    with another shape and seed; and the tone inside SPEAD heaps (the framing is the
    mode's own business: the payload after the 64-byte SPEAD header is the same)."""
    cfg = json.loads(os.environ["CASPER400G_TOP_CONFIG"])
    host, mon = await bring_up(dut, cfg)
    await configure(host, cfg)
    runs = (
        (1001, 5, tone_model.ToneConfig.for_frequency(0.15625, noise_bits=4, seed=1), 0),
        (8192, 3, tone_model.ToneConfig(0x1234_5678, amp_shift=1, noise_bits=8, seed=0xBEEF), 0),
        (1000, 4, tone_model.ToneConfig(0x0400_0001, noise_bits=3, seed=7), 64),
    )
    await host.write("pkt_mode", tone_model.MODE_TONE)
    for size, count, tone, spead_bytes in runs:
        await host.write("pkt_ctrl", 2)  # reset: sequence number and tone source
        await host.write("spead_ctrl", int(spead_bytes > 0))
        await host.write("tone_step", tone.step)
        await host.write("tone_shape", tone.shape)
        got = await send_burst(host, mon, size, count)
        want = tone_model.expected_payloads(tone, range(count), size)
        for n, frame in enumerate(got[:count]):
            body = frame.body
            assert len(body) == 42 + spead_bytes + size, (len(body), size)
            payload = body[42 + spead_bytes :]
            if payload != want[n].tobytes():
                diff = next(i for i in range(size) if payload[i] != want[n][i])
                raise AssertionError(
                    f"tone packet {n} ({size} B, SPEAD {bool(spead_bytes)}): byte {diff} is "
                    f"{payload[diff]}, the model says {want[n][diff]}"
                )


def configure_core_script() -> ModuleType:
    """examples/configure_core.py, whose load_dest_table software runs against the design."""
    path = Path(__file__).resolve().parent.parent / "examples" / "configure_core.py"
    spec = importlib.util.spec_from_file_location("configure_core", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BlockingRegisters:
    """casperfpga's register calls on the simulated bus, for blocking code in a bridge
    thread (each access waits for the simulation)."""

    def __init__(self, host: Host) -> None:
        self._write = resume(host.write)
        self._read = resume(host.read)

    def write_int(self, device_name: str, integer: int) -> None:
        self._write(device_name, integer)

    def read_uint(self, device_name: str) -> int:
        return self._read(device_name)


def next_hop(ip: int, arp: dict[str, str]) -> str:
    """The frame's destination MAC: RFC 1112's for a group (01:00:5e, then the group's low
    23 bits), else the ARP entry of the host (all on the core's subnet here)."""
    addr = ipaddress.IPv4Address(ip)
    if addr.is_multicast:
        low = int(addr) & 0x7FFFFF
        return "01:00:5e:" + ":".join(f"{b:02x}" for b in low.to_bytes(3, "big"))
    return arp[str(addr)]


@cocotb.test()
async def spreads_over_the_destination_table(dut) -> None:  # noqa: ANN001
    """The destination table loaded by examples/configure_core.py's load_dest_table over
    the simulated bus: SPEAD heaps spread per packet over multicast groups (two of them
    sharing a MAC: RFC 1112 maps only 23 bits) and hosts, re-pointed while the stream
    runs, then switched off; every frame equal to scapy's for the destination the table
    gave its packet number, each switch on a spectrum boundary, and the counts of the
    core and of the table's entries."""
    cfg = json.loads(os.environ["CASPER400G_TOP_CONFIG"])
    host, mon = await bring_up(dut, cfg)
    await configure(host, cfg)
    arp = {cfg["dest_ip"]: cfg["dest_mac"], "10.0.0.21": "0c:42:a1:00:00:15"}
    arp["10.0.0.22"] = "0c:42:a1:00:00:16"
    for ip, mac in arp.items():
        await arp_entry(host, ip, mac)
    script = configure_core_script()
    regs = BlockingRegisters(host)
    load = bridge(script.load_dest_table)
    step, channel, size = 2048, 0x55, 1000

    await host.write("pkt_ctrl", 2)
    await host.write("spead_ctrl", 1)
    await host.write("spead_channel", channel)
    await host.write("spead_ts_step", step)
    await host.write("pkt_size", size)
    await host.write("pkt_period", 0)
    await host.write("pkt_count", 0)
    default = (addressing.parse_ip(cfg["dest_ip"]), cfg["dest_port"], channel)
    routes = Routes(default)
    routes.switched(0, [])
    t1 = ["239.2.0.10:7148:0", "239.2.0.11:7148:1024", "10.0.0.21:7150:2048"]
    t1.append("239.130.0.10:7148:3072")  # 239.2.0.10's MAC
    t2 = ["10.0.0.22:7151:100", "239.2.0.12:7148:200", "10.0.0.20:7148"]
    tables = [[script.dest_entry(text, k) for k, text in enumerate(t)] for t in (t1, t2, [])]
    assert next_hop(tables[0][0].ip, arp) == next_hop(tables[0][3].ip, arp) == "01:00:5e:02:00:0a"
    assert tables[1][2] == (addressing.parse_ip("10.0.0.20"), 7148, 2)  # channel: its index

    # t1 goes in before the stream starts (packet 0); t2 and the table off while it runs.
    routes.switched(await load(regs, tables[0], 120.0), tables[0])
    assert routes.starts[-1] == 0
    await host.write("pkt_ctrl", 1)
    for table in tables[1:]:
        await mon.wait_frames(len(mon.frames) + 20, limit_ns=100_000)
        before = len(mon.frames)
        routes.switched(await load(regs, table, 120.0), table)
        assert routes.starts[-1] > before, (before, routes.starts)  # while it ran
    await mon.wait_frames(routes.starts[-1] + 10, limit_ns=100_000)
    await host.write("pkt_ctrl", 0)
    await Timer(2, unit="us")

    gbe = cfg["gbe"]
    got = mon.frames
    for n, (frame, r) in enumerate(zip(got, routes.routes(len(got)), strict=True)):
        heap = spead.heap_packet(n, frames.example_payload(n, size), r.spectrum * step, r.channel)
        want = frames.expected_udp_frame(
            gbe["fab_mac"], next_hop(r.ip, arp), gbe["fab_ip"], r.ip, int(gbe["fab_udp"]),
            r.port, ip_id=n, ttl=int(gbe["ttl"]), payload=heap,
            udp_checksum=bool(int(gbe["udp_checksum_en"])),
        )  # fmt: skip
        assert frame.body == want, f"frame {n} ({r}) differs from scapy's"
    dests = {(r.ip, r.port) for r in routes.routes(len(got))}
    assert dests == {(e.ip, e.port) for e in tables[0] + tables[1]} | {default[:2]}

    assert await host.read("pkt_sent") == len(got)
    assert await host.gbe_reg("tx_udp_packets") == len(got)
    assert await host.gbe_reg("tx_arp_miss") == 0
    # Packets through each entry: dest_tbl_ctrl's index with the last command's sequence
    # number kept (no new command).
    ctrl = await host.read("dest_tbl_ctrl")
    per_entry = routes.per_entry(len(got), 4)
    for k, want_count in enumerate(per_entry):
        await host.write("dest_tbl_ctrl", ctrl & ~0xFF | k)
        await Timer(200, unit="ns")
        assert await host.read("dest_tbl_sent") == want_count, (k, per_entry)
    status = await host.read("dest_tbl_status")
    assert status & 0xFF == 0 and (status >> 16 & 0xFF) == (ctrl >> 16 & 0xFF), hex(status)
    dut._log.info(
        "destination table: %d frames checked, tables of %s entries from packets %s, per entry %s",
        len(got),
        [len(t) for t in routes.tables],
        routes.starts,
        per_entry,
    )
