"""casperfpga_ext live against ``fhg_core``: the software ARP/ICMP loop and KATCP end to end.

* The tap (``casperfpga_ext.tap``) runs its real blocking code on ``SimTransport``: ARP
  requests and ICMP echo requests made by scapy enter on the DCMAC RX bus, reach the CPU
  RX buffer (hardware ARP responder off), and the replies leaving on the TX bus must be
  the ones scapy builds, byte for byte; requests for other addresses get nothing.
* KATCP: a ``BoardServer`` serves the simulated core over localhost (``SimWindow``); the
  blocking KATCP client (``casperfpga_ext.Fpga``), in a plain thread, configures the core,
  and the datagrams the core then sends carry the configured addresses; then the tap runs
  as a background thread (``tap_start``) over the same KATCP connection and answers ARP
  and ping.
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Callable
from typing import Any

import cocotb
from cocotb.task import bridge
from cocotb.triggers import Timer
from cocotb_casperfpga_ext import (
    ARP_TABLE,
    GATEWAY,
    NETMASK,
    OWN_IP,
    OWN_MAC,
    PORT,
    TTL,
    expected,
)
from scapy.layers.inet import ICMP, IP, UDP
from scapy.layers.l2 import ARP, Ether

from casperfpga_ext.fpga import Fpga
from casperfpga_ext.gbe import FourHundredGbe
from casperfpga_ext.tap import Answer, Tap
from verification.core_harness import CoreHarness
from verification.models.dcmac_rx import DcmacRxDriver
from verification.models.dcmac_tx import DcmacTxMonitor, assert_frames
from verification.models.user_tx import UserTxDriver
from verification.sim_bus import (
    CORE_DEVICES,
    DEVICE,
    SYS_REGISTERS,
    ServerThread,
    SimTransport,
    SimWindow,
)

PEER_MAC = "0c:42:a1:00:00:21"
PEER_IP = "10.0.0.33"


async def start(dut) -> tuple[CoreHarness, DcmacTxMonitor, DcmacRxDriver, UserTxDriver]:  # noqa: ANN001
    h = CoreHarness(dut)
    mon = h.tx_monitor()
    rx = DcmacRxDriver(
        dut, clock=dut.rx_mac_clk, reset=dut.rx_mac_rst, mode="line", mac_clk_hz=h.mac_clk_hz
    )
    drv = h.user_tx()
    await h.reset()
    return h, mon, rx, drv


# ----------------------------------------------------------------- scapy's frames
def arp_request(target_ip: str) -> bytes:
    pkt = Ether(dst="ff:ff:ff:ff:ff:ff", src=PEER_MAC) / ARP(
        op=1, hwsrc=PEER_MAC, psrc=PEER_IP, hwdst="00:00:00:00:00:00", pdst=target_ip
    )
    return bytes(pkt).ljust(60, b"\0")


def arp_reply() -> bytes:
    pkt = Ether(dst=PEER_MAC, src=OWN_MAC) / ARP(
        op=2, hwsrc=OWN_MAC, psrc=OWN_IP, hwdst=PEER_MAC, pdst=PEER_IP
    )
    return bytes(pkt).ljust(60, b"\0")


def echo_request(dst_ip: str, ident: int, seq: int, data: bytes, ip_id: int = 0x4D2) -> bytes:
    pkt = (
        Ether(dst=OWN_MAC, src=PEER_MAC)
        / IP(src=PEER_IP, dst=dst_ip, id=ip_id, tos=0x10, flags="DF", ttl=64)
        / ICMP(type=8, id=ident, seq=seq)
        / data
    )
    return bytes(pkt).ljust(60, b"\0")


def echo_reply(ident: int, seq: int, data: bytes, ip_id: int = 0x4D2) -> bytes:
    """The documented reply: request's TOS and Identification, no DF, the core's TTL."""
    pkt = (
        Ether(dst=PEER_MAC, src=OWN_MAC)
        / IP(src=OWN_IP, dst=PEER_IP, id=ip_id, tos=0x10, flags=0, ttl=TTL)
        / ICMP(type=0, id=ident, seq=seq)
        / data
    )
    return bytes(pkt).ljust(60, b"\0")


def udp_to_other_port() -> bytes:
    pkt = Ether(dst=OWN_MAC, src=PEER_MAC) / IP(src=PEER_IP, dst=OWN_IP) / UDP(dport=9) / b"x"
    return bytes(pkt).ljust(60, b"\0")


def poll_until_frame(tap: Tap, limit: int = 400) -> Answer:
    """Poll (each poll a few simulated bus cycles) until the tap took a frame."""
    for _ in range(limit):
        result = tap.poll()
        if result is not None:
            return result
    raise AssertionError(f"no frame reached the CPU RX buffer in {limit} polls")


@cocotb.test()
async def tap_answers_arp_and_ping(dut) -> None:  # noqa: ANN001
    """Hardware ARP off, CPU RX/TX on: the tap answers what is for us and nothing else."""
    h, mon, rx, _drv = await start(dut)
    gbe = FourHundredGbe(SimTransport(h.axi), DEVICE)
    tap = Tap(gbe)

    def configure() -> dict[str, int]:
        gbe.configure_core(OWN_MAC, OWN_IP, PORT, GATEWAY, NETMASK)
        gbe.set_ttl(TTL)
        tap.enable(hardware_arp=False)
        return gbe.get_gbe_core_details()["ctrl"]

    ctrl = await bridge(configure)()
    assert (ctrl["arp_reply_en"], ctrl["cpu_rx_en"], ctrl["cpu_tx_en"]) == (0, 1, 1), ctrl

    big = bytes(range(256)) * 5 + b"end"
    cases: list[tuple[bytes, str, bytes | None]] = [
        (arp_request(OWN_IP), "arp_reply", arp_reply()),
        (arp_request("10.0.0.99"), "arp_other_ip", None),
        (echo_request(OWN_IP, 0x77, 1, b"ping data 0123456789abcdef"), "icmp_reply", None),
        (echo_request("10.0.0.77", 0x77, 2, b"not for us"), "ip_other_dst", None),
        (echo_request(OWN_IP, 0x78, 3, big, ip_id=0xBEEF), "icmp_reply", None),
        (udp_to_other_port(), "ip_protocol", None),
    ]
    goldens = {
        2: echo_reply(0x77, 1, b"ping data 0123456789abcdef"),
        4: echo_reply(0x78, 3, big, ip_id=0xBEEF),
    }
    want_sent: list[bytes] = []
    for k, (request, outcome, reply) in enumerate(cases):
        rx.send_nowait(request)
        result = await bridge(poll_until_frame)(tap)
        assert result.outcome == outcome, f"case {k}: {result.outcome}, expected {outcome}"
        golden = reply or goldens.get(k)
        if golden is not None:
            want_sent.append(golden)
            await mon.wait_frames(len(want_sent))
        await Timer(500, unit="ns")  # anything wrongly sent would show up by now
        assert len(mon.frames) == len(want_sent), f"case {k}: {len(mon.frames)} frames left"
    for k, (got, want) in enumerate(zip(mon.frames, want_sent, strict=True)):
        assert got.body == want, f"reply {k}:\ngot  {got.body.hex()}\nwant {want.hex()}"
        assert not got.err

    assert tap.counts() == {
        "frames": 6,
        "arp_reply": 1,
        "icmp_reply": 2,
        "arp_other_ip": 1,
        "ip_other_dst": 1,
        "ip_protocol": 1,
    }, tap.counts()
    await Timer(1, unit="us")
    c = await bridge(gbe.read_core_counters)()
    assert c["rx_to_cpu"] == 6 and c["rx_drop_cpu_busy"] == 0, c
    assert c["tx_cpu_frames"] == 3 and c["tx_arp_replies"] == 0, c
    assert c["rx_arp_requests"] == 0, c


async def serve_client(window: SimWindow, body: Callable[[], Any], limit_s: float = 120.0) -> Any:
    """Run ``body`` in a plain thread (a KATCP client) while the simulation serves it."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["result"] = body()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, name="katcp-client", daemon=True)
    thread.start()
    await bridge(window.serve)(lambda: not thread.is_alive(), limit_s)
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["result"]


@cocotb.test()
async def katcp_board_server_configures_core(dut) -> None:  # noqa: ANN001
    """BoardServer over localhost on the simulated bus; our KATCP client configures the
    core, which then sends with the configured MAC/IP/port; the tap thread answers ping."""
    h, mon, rx, drv = await start(dut)
    window = SimWindow(h.axi)
    server = ServerThread(window)
    port = server.start()
    try:
        fpga_box: dict[str, Fpga] = {}

        def configure() -> dict[str, Any]:
            fpga = Fpga("127.0.0.1", port=port, timeout=30.0)
            fpga.get_system_information()  # the .fpg's devices and ?meta from the server
            fpga_box["fpga"] = fpga
            gbe = fpga.gbes.gbe0
            gbe.set_ttl(TTL)
            gbe.set_arp_table(ARP_TABLE)
            gbe.configure_core(OWN_MAC, OWN_IP, PORT, GATEWAY, NETMASK)
            gbe.fabric_enable()
            return {
                "listdev": fpga.listdev(),
                "address": gbe.address,
                "details": gbe.get_gbe_core_details(read_arp=True),
            }

        got = await serve_client(window, configure)
        # The core, its registers by name (as the yellow block lists them), the sys_block.
        assert got["listdev"] == [*CORE_DEVICES, *SYS_REGISTERS]
        assert got["address"] == 0xA4010000
        d = got["details"]
        assert (d["mac"], d["ip"], d["fabric_port"]) == (
            0x02000A00000A,
            int(ipaddress.IPv4Address(OWN_IP)),
            PORT,
        )
        assert d["fabric_en"] and d["ttl"] == TTL
        assert [int(m) for m in d["arp"]] == ARP_TABLE

        await h.wait_tx_ready()
        sends = [(bytes(range(100)), "10.0.0.20", 9000), (b"off-subnet", "192.168.1.5", 5001)]
        for payload, dst, dport in sends:
            await drv.send(payload, int(ipaddress.IPv4Address(dst)), dport)
        await mon.wait_frames(len(sends))
        assert_frames(mon.frames, [expected(p, d, dp, i) for i, (p, d, dp) in enumerate(sends)])

        # The tap as casperfpga runs it: a background thread on the same KATCP link.
        gbe = fpga_box["fpga"].gbes.gbe0
        started, finish = threading.Event(), threading.Event()

        def tap_thread() -> dict[str, int]:
            tap = gbe.tap_start(hardware_arp=False, interval=0.001)
            started.set()
            finish.wait(60)
            gbe.tap_stop()
            return tap.counts()

        out: dict[str, Any] = {}

        def run() -> None:
            try:
                out["counts"] = tap_thread()
            except BaseException as exc:
                out["error"] = exc
            finally:
                started.set()

        client = threading.Thread(target=run, name="katcp-tap", daemon=True)
        client.start()
        await bridge(window.serve)(started.is_set)
        base = len(mon.frames)
        data = b"ping over katcp"
        requests = [arp_request(OWN_IP), arp_request("10.0.0.98"), echo_request(OWN_IP, 9, 1, data)]
        # (frames sent so far, frames the tap has taken) once each request is handled
        marks = [(base + 1, 1), (base + 1, 2), (base + 2, 3)]
        for request, (sent, taken) in zip(requests, marks, strict=True):
            rx.send_nowait(request)

            def handled(sent: int = sent, taken: int = taken) -> bool:
                tap = gbe.tap
                if "error" in out or tap is None:
                    return True
                return len(mon.frames) >= sent and tap.frames >= taken

            await bridge(window.serve)(handled)
        finish.set()
        await bridge(window.serve)(lambda: not client.is_alive())
        client.join()
        if "error" in out:
            raise out["error"]
        bodies = [f.body for f in mon.frames[base:]]
        assert bodies == [arp_reply(), echo_reply(9, 1, data)], [b.hex() for b in bodies]
        assert out["counts"] == {
            "frames": 3,
            "arp_reply": 1,
            "icmp_reply": 1,
            "arp_other_ip": 1,
        }, out["counts"]
        await Timer(1, unit="us")
        direct = FourHundredGbe(SimTransport(h.axi), DEVICE)  # not through the server
        c = await bridge(direct.read_core_counters)("tx_")
        assert c["tx_arp_replies"] == 0 and c["tx_cpu_frames"] == 2, c
    finally:
        if "fpga" in fpga_box:
            fpga_box["fpga"].transport.close()  # type: ignore[attr-defined]
        server.stop()
