"""cocotb side of the two-port example design's simulation (tests/rtl/test_toolflow_top_2port.py,
`casper400g bench tx`'s two-port row).

The DUT is ``examples/pktgen2x400g``'s ``top.v`` as the toolflow wrote it, on the board-less
``generic400g`` platform: two 400GbE cores (``gbe0`` on cage 0, ``gbe1`` on cage 1), a
packet generator each. The testbench plays the host (one AXI4-Lite master on ``M_AXI_*``)
and a DCMAC per port (TX model and RX driver on ``fhg<cage>_*``), each port on a MAC clock
of its own: port 1's runs 50 ppm fast, as two cages' reference clocks differ. Each check is
per port, against scapy-built frames with the port's own addresses and stream id.
$CASPER400G_TOP2_CONFIG (JSON) carries the build's device addresses, both blocks' mask
parameters and what to send (:func:`casper400g_dev.toolflow_sim.config_2port`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Timer
from cocotb.utils import get_sim_time
from scapy.layers.l2 import ARP, Ether

from casperfpga_ext import addressing
from casperfpga_ext import fhg_regmap as regmap
from verification.cocotb_top_pktgen import Host as DesignHost
from verification.core_harness import AXIL_CLK_HZ, MAC_CLK_HZ, USER_CLK_HZ, simulated_hz
from verification.models import frames
from verification.models.dcmac_rx import DcmacRxDriver
from verification.models.dcmac_tx import DcmacTxMonitor

# Port k's MAC clock: the cages' reference clocks are independent oscillator outputs.
MAC_PPM = (0.0, 50.0)
PEER_MAC = 0x0C42A10000EE


def _clock(signal: Any, hz: float) -> None:
    period = round(1e15 / hz)
    Clock(signal, period, unit="fs", period_high=period // 2).start()


@dataclass
class Port:
    """One 400GbE port of the design: its block, generator registers and DCMAC models."""

    block: str
    cage: int
    regs: str  # the generator's register prefix (p<k>_)
    meta: dict[str, str]  # the block's mask parameters, as in the .fpg
    dest_ip: str
    dest_mac: str
    dest_port: int
    stream_id: int
    mac_hz: float
    tx: DcmacTxMonitor
    rx: DcmacRxDriver

    def expected(self, n: int, size: int) -> bytes:
        m = self.meta
        return frames.expected_udp_frame(
            m["fab_mac"],
            self.dest_mac,
            m["fab_ip"],
            self.dest_ip,
            int(m["fab_udp"]),
            self.dest_port,
            ip_id=n,
            ttl=int(m["ttl"]),
            payload=frames.example_payload(n, size, self.stream_id),
            udp_checksum=bool(int(m["udp_checksum_en"])),
        )


class Host(DesignHost):
    """The host on the design's bus: named devices, and each core's registers."""

    async def core_reg(self, block: str, name: str) -> int:
        reg = regmap.REGISTERS[name]
        low = await self.read(block, reg.offset)
        if reg.width == 64:
            return ((await self.read(block, reg.offset + 4)) << 32) | low
        return low


async def bring_up(dut: Any, cfg: dict) -> tuple[Host, list[Port]]:
    _clock(dut.user_clk, USER_CLK_HZ)
    _clock(dut.axil_clk, AXIL_CLK_HZ)
    dut.axil_rst_n.value = 0
    ports = []
    for spec in cfg["ports"]:
        pre = f"fhg{spec['cage']}_"
        mac_hz = MAC_CLK_HZ * (1 + MAC_PPM[spec["cage"]] * 1e-6)
        for clk in ("tx_mac_clk", "rx_mac_clk"):
            _clock(getattr(dut, pre + clk), mac_hz)
            getattr(dut, pre + clk.replace("clk", "rst")).value = 1
        getattr(dut, pre + "mac_link_up").value = 0
        tx = DcmacTxMonitor(
            dut,
            prefix=pre,
            clock=getattr(dut, pre + "tx_mac_clk"),
            mac_clk_hz=simulated_hz(mac_hz),
            mode="line",
            reset=getattr(dut, pre + "tx_mac_rst"),
        )
        rx = DcmacRxDriver(
            dut,
            prefix=pre,
            clock=getattr(dut, pre + "rx_mac_clk"),
            reset=getattr(dut, pre + "rx_mac_rst"),
        )
        ports.append(
            Port(
                spec["block"],
                spec["cage"],
                spec["regs"],
                cfg["gbes"][spec["block"]],
                spec["dest_ip"],
                spec["dest_mac"],
                spec["dest_port"],
                spec["stream_id"],
                simulated_hz(mac_hz),
                tx,
                rx,
            )
        )
    host = Host(dut, cfg["devices"])
    await ClockCycles(dut.axil_clk, 10)
    dut.axil_rst_n.value = 1
    for p in ports:
        pre = f"fhg{p.cage}_"
        getattr(dut, pre + "tx_mac_rst").value = 0
        getattr(dut, pre + "rx_mac_rst").value = 0
        getattr(dut, pre + "mac_link_up").value = 1
    return host, ports


async def booted(host: Host, ports: list[Port]) -> None:
    """Each core holding its block's addresses (the boot writer holds the bus off until it
    has written them), and the time for them to cross into the MAC clock domain."""
    for p in ports:
        ip = await host.core_reg(p.block, "ip")
        assert ip == addressing.parse_ip(p.meta["fab_ip"]), f"{p.block} ip {ip:#x}"
    await Timer(300, unit="ns")


async def configure(host: Host, port: Port) -> None:
    """The block's start-up values read back from its own core; the next hop's ARP entry,
    the fabric enable and the generator's destination, through the port's own registers."""
    m = port.meta
    want = {
        "mac_lo": addressing.parse_mac(m["fab_mac"]) & 0xFFFFFFFF,
        "ip": addressing.parse_ip(m["fab_ip"]),
        "gateway": addressing.parse_ip(m["fab_gate"]),
        "port": int(m["fab_udp"]),
    }
    for name, value in want.items():
        got = await host.core_reg(port.block, name)
        assert got == value, f"{port.block} {name}: {got:#x}, design says {value:#x}"
    arp = regmap.REGIONS["arp_table"]
    index = addressing.parse_ip(port.dest_ip) & 0xFF
    mac = addressing.parse_mac(port.dest_mac)
    at = arp.offset + arp.entry_bytes * index
    await host.write(port.block, (1 << 16) | (mac >> 32), at)
    await host.write(port.block, mac & 0xFFFFFFFF, at + 4)
    ctrl = regmap.REGISTERS["ctrl"]
    value = await host.core_reg(port.block, "ctrl")
    await host.write(port.block, ctrl.field("fabric_en").put(value, 1), ctrl.offset)
    await host.write(port.regs + "pkt_dest_ip", addressing.parse_ip(port.dest_ip))
    await host.write(port.regs + "pkt_dest_port", port.dest_port)


async def counters(host: Host, port: Port, names: tuple[str, ...]) -> dict[str, int]:
    return {n: await host.core_reg(port.block, n) for n in names}


@cocotb.test()
async def both_ports_at_line_rate_at_once(dut) -> None:  # noqa: ANN001
    """Both generators back to back at once, each into its own core and MAC: every frame of
    each port equal to scapy's (its own MACs, IPs and stream id, its own sequence), each
    port at its line rate over a window in which both run, and each core's counters equal
    to its own traffic."""
    cfg = json.loads(os.environ["CASPER400G_TOP2_CONFIG"])
    host, ports = await bring_up(dut, cfg)
    for p in ports:
        await configure(host, p)
    size, count = int(cfg["size"]), int(cfg["frames"])
    for p in ports:
        await host.write(p.regs + "pkt_ctrl", 2)  # reset: sequence number 0
        await host.write(p.regs + "pkt_size", size)
        await host.write(p.regs + "pkt_period", 0)
        await host.write(p.regs + "pkt_count", count)
    await Timer(300, unit="ns")  # configuration crossing into user_clk
    for p in ports:
        await host.write(p.regs + "pkt_ctrl", 1)
    # The window: from once both ports are past their warm-up until the first port is
    # about to end its burst; both run all through it.
    warm, end = max(4, count // 10), count - max(2, count // 20)
    while min(len(p.tx.frames) for p in ports) < warm:
        await Timer(100, unit="ns")
    for p in ports:
        p.tx.reset_stats()
    t0 = get_sim_time("ns")
    while max(len(p.tx.frames) for p in ports) < end:
        await Timer(50, unit="ns")
    window = [p.tx.stats for p in ports]
    t1 = get_sim_time("ns")
    assert all(len(p.tx.frames) < count for p in ports), "a port ended inside the window"
    for p in ports:
        await p.tx.wait_frames(count, limit_ns=(count * 30 + 200) * 1000)
    await Timer(2, unit="us")
    results: dict[str, Any] = {"size": size, "frames": count, "window_ns": t1 - t0, "ports": []}
    line = frames.theoretical_goodput(size)
    for p, st in zip(ports, window, strict=True):
        got = p.tx.frames
        assert len(got) == count, f"{p.block}: {len(got)} frames, the burst was {count}"
        for n, frame in enumerate(got):
            assert frame.body == p.expected(n, size), f"{p.block} frame {n} differs from scapy's"
        assert await host.read(p.regs + "pkt_sent") == count
        c = await counters(
            host, p, ("tx_frames", "tx_bytes", "tx_udp_packets", "tx_udp_bytes", "tx_arp_miss")
        )
        assert c == {
            "tx_frames": count,
            "tx_bytes": sum(len(f.body) for f in got),
            "tx_udp_packets": count,
            "tx_udp_bytes": count * size,
            "tx_arp_miss": 0,
        }, (p.block, c)
        goodput = st.goodput_bps(p.mac_hz)
        results["ports"].append(
            {
                "block": p.block,
                "stream_id": p.stream_id,
                "mac_clk_hz": p.mac_hz,
                "window_frames": st.frames,
                "goodput_bps": goodput,
                "line_bps": line,
                "counters": c,
                "frames": [f.body.hex() for f in got],
            }
        )
        dut._log.info(
            "%s: %d frames equal to scapy's, %.2f Gb/s of %.2f over %d frames in the window",
            p.block,
            count,
            goodput / 1e9,
            line / 1e9,
            st.frames,
        )
    total = sum(r["goodput_bps"] for r in results["ports"])
    results["aggregate_bps"] = total
    results["aggregate_ratio"] = total / (2 * line)
    # Simulated cycles are deterministic: each port keeps its line rate with the other
    # running (the bench's 0.995 goal on the aggregate).
    for r in results["ports"]:
        assert r["goodput_bps"] >= 0.995 * line, r
    assert results["aggregate_ratio"] >= 0.995, results["aggregate_ratio"]
    out = os.environ.get("CASPER400G_JOB_OUT")
    if out:
        with open(out, "w") as fh:
            json.dump(results, fh)


def arp_request(tpa: str, spa: str) -> bytes:
    peer = PEER_MAC.to_bytes(6, "big")
    pkt = Ether(dst="ff:ff:ff:ff:ff:ff", src=peer) / ARP(
        op=1, hwsrc=peer, psrc=spa, hwdst="00:00:00:00:00:00", pdst=tpa
    )
    return bytes(pkt).ljust(60, b"\0")


@cocotb.test()
async def each_port_answers_arp_with_its_own_address(dut) -> None:  # noqa: ANN001
    """An ARP request for a port's own IP gets scapy's reply from that port with its own
    MAC; a request for the other port's IP arriving on it gets none; nothing crosses from
    one port to the other."""
    cfg = json.loads(os.environ["CASPER400G_TOP2_CONFIG"])
    host, ports = await bring_up(dut, cfg)
    # A request before a core's boot has written its address would ask for another IP.
    await booted(host, ports)
    for p, other in zip(ports, ports[::-1], strict=True):
        peer_ip = p.dest_ip
        p.rx.send_nowait(arp_request(p.meta["fab_ip"], peer_ip))
        p.rx.send_nowait(arp_request(other.meta["fab_ip"], peer_ip))
    for p in ports:
        await p.rx.wait_idle()
    await Timer(3, unit="us")
    peer = PEER_MAC.to_bytes(6, "big")
    for p in ports:
        own = addressing.parse_mac(p.meta["fab_mac"]).to_bytes(6, "big")
        reply = Ether(dst=peer, src=own) / ARP(
            op=2, hwsrc=own, psrc=p.meta["fab_ip"], hwdst=peer, pdst=p.dest_ip
        )
        assert [f.body for f in p.tx.frames] == [bytes(reply).ljust(60, b"\0")], p.block
        c = await counters(host, p, ("rx_frames", "rx_arp_requests", "rx_drop_arp"))
        assert c == {"rx_frames": 2, "rx_arp_requests": 1, "rx_drop_arp": 1}, (p.block, c)
        assert await host.core_reg(p.block, "tx_arp_replies") == 1
