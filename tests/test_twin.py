"""The digital twin (`casper400g twin`): the example design's generated top.v, Verilated with
the C++ harness, run as a board. KATCP configuration by casperfpga_ext and by the real
casperfpga; ARP answered by the core, ping by the ICMP helper, both from Linux's own tools
on the twin's TAP device; >= 1000 datagrams through the interface into the receiver with
every payload checked and exact accounting; faults injected by the twin's link model
(this kernel has no netem) counted exactly; the core's counters as KATCP sensors read by
aiokatcp; ?progdev restarting the design; the fallbacks without a TAP device (pcap file,
UDP tunnel).

The TAP tests need root (a network namespace and a TAP device): skipped without, failed
under CI=true; the fallback tests run anywhere.
The twin is compiled once (cached by source hash) and one board serves the module.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import need_tool

from casper400g_dev import toolflow_sim
from casper400g_dev.twin import chain, netns
from casper400g_dev.twin.board import Network, TwinBoard, wait_until
from casperfpga_ext import addressing
from casperfpga_ext.fpga import Fpga
from verification import tone_model

CORE_MAC = "02:00:0a:00:00:0a"
CORE_IP = "10.0.0.10"


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return toolflow_sim.build_example(tmp_path_factory.mktemp("twin") / "pktgen_400g").build_dir


@pytest.fixture(scope="module")
def board(build_dir: Path) -> Iterator[TwinBoard]:
    why = netns.privileged()
    if why is not None:
        need_tool(f"the twin's TAP device: {why}")
    for tool in ("arping", "ping"):
        if shutil.which(tool) is None:
            need_tool(f"{tool} is not installed (Debian iputils-{tool}; `make test` installs it)")
    with TwinBoard(build_dir, network=Network("tap"), katcp_port=0) as b:
        yield b


def katcp_fpga(board: TwinBoard) -> Fpga:
    fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
    fpga.get_system_information()
    return fpga


def test_arp_is_answered_by_the_cores_responder(board: TwinBoard):
    before = board.icmp_counts().get("arp_reply", 0)
    fpga = katcp_fpga(board)
    try:
        replies0 = fpga.gbes.gbe0.read_reg("tx_arp_replies")
        out = board.netns.run("arping", "-c", "3", "-w", "60", "-I", board.interface(), CORE_IP)
        assert out.returncode == 0, out.stdout + out.stderr
        assert out.stdout.count(f"[{CORE_MAC.upper()}]") == 3, out.stdout
        # Answered in hardware: the core counted its replies, the software helper saw none.
        assert fpga.gbes.gbe0.read_reg("tx_arp_replies") - replies0 >= 3
        assert board.icmp_counts().get("arp_reply", 0) == before
    finally:
        fpga.disconnect()


def test_ping_is_answered_by_the_icmp_helper(board: TwinBoard):
    before = board.icmp_counts().get("icmp_reply", 0)
    out = board.netns.run("ping", "-c", "2", "-W", "30", CORE_IP, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 2 received" in out.stdout, out.stdout
    # (the helper counts a reply once it is sent: ping may have it a moment earlier)
    assert wait_until(lambda: board.icmp_counts()["icmp_reply"] - before == 2, 10)
    # The kernel's own ARP resolved the core's address first (the hardware responder).
    neigh = board.netns.run("ip", "neigh", "show", CORE_IP, "dev", board.interface())
    assert CORE_MAC in neigh.stdout.lower(), neigh.stdout


def test_configure_over_katcp_with_casperfpga_ext(board: TwinBoard):
    cfg = chain.StreamConfig(core_ip="10.0.0.11", port=7150, chunks=1)
    proc = chain.configure(board, cfg, python=sys.executable)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "casperfpga_ext.Fpga" in proc.stdout
    fpga = katcp_fpga(board)
    gbe = fpga.gbes.gbe0
    assert gbe.read_reg("ip") == addressing.parse_ip("10.0.0.11")
    assert gbe.read_reg("port") == 7150
    assert gbe.read_field("ctrl", "fabric_en") == 1
    host = board.network.host
    entry = gbe.get_arp_entries(256)[20]
    assert entry["valid"] and entry["mac"] == addressing.parse_mac(host.mac), entry
    for name, value in cfg.generator_writes(host.address):
        assert fpga.read_uint(name) == value, name
    fpga.disconnect()


def test_configure_over_katcp_with_the_real_casperfpga(board: TwinBoard, casperfpga_python: str):
    cfg = chain.StreamConfig(chunks=1)
    proc = chain.configure(board, cfg, python=casperfpga_python)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "(casperfpga " in proc.stdout, proc.stdout
    host_mac = board.network.host.mac
    assert re.search(rf"IP\[7:0\]\s+20 -> {host_mac}", proc.stdout), proc.stdout
    fpga = katcp_fpga(board)
    assert fpga.gbes.gbe0.read_reg("ip") == addressing.parse_ip(CORE_IP)
    assert fpga.read_uint("pkt_mode") == tone_model.MODE_TONE
    fpga.disconnect()


def run_chain(board: TwinBoard, cfg: chain.StreamConfig) -> chain.Verdict:
    proc = chain.configure(board, cfg)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = chain.capture(board, cfg, timeout=600)
    verdict = chain.verify(board, cfg, got)
    print("\n" + "\n".join(verdict.table()))
    return verdict


def test_1024_tone_datagrams_through_the_interface_accounted_exactly(board: TwinBoard):
    cfg = chain.StreamConfig(packets_per_chunk=256, chunks=4)
    verdict = run_chain(board, cfg)
    assert verdict.ok, "\n".join(verdict.table())
    rows = {name: value for _side, name, value, _check in verdict.rows}
    assert rows["packets (placed)"] == 1024 and rows["lost"] == 0
    assert cfg.tone is not None and verdict.peak == pytest.approx(cfg.tone.frequency, abs=1e-9)
    stats = board.stats()["macs"]["gbe0"]
    assert stats["violations"] == 0, stats["violation"]


def test_the_chain_into_gpu_chunks(board: TwinBoard):
    """The capture into GPU memory (host-staged delivery), the spectrum taken there with
    CuPy; skipped without a GPU (scripts/gpu_check.sh runs it on one)."""
    from casper400g_dev.demo_twin import gpu_device

    device, why = gpu_device()
    if device == "cpu":
        pytest.skip(f"no GPU capture here: {why}")
    cfg = chain.StreamConfig(packets_per_chunk=256, chunks=4)
    proc = chain.configure(board, cfg)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = chain.capture(board, cfg, device=device, timeout=600)
    verdict = chain.verify(board, cfg, got)
    assert verdict.ok, "\n".join(verdict.table())
    assert got.spectrum_blocks > 0 and cfg.tone is not None
    assert verdict.peak == pytest.approx(cfg.tone.frequency, abs=1e-9)


def test_link_faults_are_counted_exactly_by_the_receiver(board: TwinBoard):
    # The example stream this time; drops, duplicates and delays by a seeded schedule
    # plus some at fixed places (first and last datagram dropped, a delay across a chunk).
    cfg = chain.StreamConfig(packets_per_chunk=256, chunks=4, tone=None)
    board.harness.set_faults(
        "gbe0",
        drop=0.01,
        duplicate=0.01,
        delay=0.01,
        depth=3,
        seed=7,
        drop_at=[0, 1023],
        duplicate_at=[100],
        delay_at=[254],
    )
    try:
        verdict = run_chain(board, cfg)
    finally:
        board.harness.set_faults("gbe0")
    assert verdict.ok, "\n".join(verdict.table())
    rows = {name: value for _side, name, value, _check in verdict.rows}
    assert rows["dropped"] >= 2 and rows["duplicated"] >= 1 and rows["delayed (reordered)"] >= 1
    assert rows["lost"] == rows["dropped"] and rows["duplicate"] == rows["duplicated"]
    assert rows["packets + lost"] == rows["tx_udp_packets (core)"] == 1024


def test_sensors_carry_the_cores_counters_to_aiokatcp(board: TwinBoard):
    aiokatcp = pytest.importorskip("aiokatcp")
    counters = chain.core_counters(board)

    async def read() -> dict[str, tuple[str, str]]:
        client = await aiokatcp.Client.connect(board.katcp_host, board.port)
        try:
            _, informs = await client.request("sensor-value")
            return {
                i.arguments[2].decode(): (i.arguments[3].decode(), i.arguments[4].decode())
                for i in informs
            }
        finally:
            client.close()
            await client.wait_closed()

    values = asyncio.run(asyncio.wait_for(read(), 60))
    assert values["gbe0.link-up"] == ("nominal", "1")
    assert values["gbe0.tx-udp-packets"] == ("nominal", str(counters["tx_udp_packets"]))
    assert values["gbe0.tx-arp-miss"] == ("nominal", "0")
    assert values["gbe0.tx-overflowed"] == ("nominal", "0")
    assert values["gbe0.fabric-enabled"] == ("nominal", "1")


def test_progdev_of_the_designs_fpg_restarts_the_twin(board: TwinBoard):
    aiokatcp = pytest.importorskip("aiokatcp")
    assert board.fpg is not None
    old = board.harness

    async def progdev() -> list[bytes]:
        client = await aiokatcp.Client.connect(board.katcp_host, board.port)
        try:
            reply, _ = await client.request("progdev", board.fpg.name)
            return reply
        finally:
            client.close()
            await client.wait_closed()

    reply = asyncio.run(asyncio.wait_for(progdev(), 600))
    assert int(reply[0]) == len(board.header.devices)
    assert board.harness is not old and board.harness_alive and not old.alive
    fpga = katcp_fpga(board)
    # A fresh design: the generator's counter and the core's back to their reset values.
    assert fpga.read_uint("pkt_sent") == 0
    assert fpga.gbes.gbe0.read_reg("tx_udp_packets") == 0
    assert fpga.read_uint("pkt_size") == 8192
    fpga.disconnect()


def test_without_a_tap_device_the_frames_go_to_a_pcap_file(build_dir: Path, tmp_path: Path):
    pcap = tmp_path / "twin.pcap"
    with TwinBoard(
        build_dir, network=Network("pcap", pcap=pcap), katcp_port=0, icmp=False
    ) as board:
        assert any("pcap" in line for line in board.describe())
        cfg = chain.StreamConfig(packets_per_chunk=128, chunks=2)
        proc = chain.configure(board, cfg)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        got = chain.capture(board, cfg, timeout=600)
        assert got.source == "pcap"
        verdict = chain.verify(board, cfg, got)
    assert verdict.ok, "\n".join(verdict.table())
    assert pcap.stat().st_size > 256 * 8192


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_udp_tunnel_carries_frames_both_ways(build_dir: Path):
    """No privileges needed: one Ethernet frame per datagram. An ARP request sent into the
    tunnel is answered by the core; the generator's datagrams come out as frames whose
    UDP payloads are the example stream."""
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    peer.settimeout(60)
    local = f"127.0.0.1:{free_udp_port()}"
    net = Network("udp", tunnel_local=local, tunnel_peer=f"127.0.0.1:{peer.getsockname()[1]}")
    host_mac = bytes.fromhex(net.host.mac.replace(":", ""))
    with peer, TwinBoard(build_dir, network=net, katcp_port=0, icmp=False) as board:
        assert any("UDP tunnel" in line for line in board.describe())
        arp = (
            b"\xff" * 6 + host_mac + b"\x08\x06"
            + bytes.fromhex("0001080006040001") + host_mac + bytes([10, 0, 0, 20])
            + b"\x00" * 6 + bytes([10, 0, 0, 10])
        )  # fmt: skip
        host, port = local.split(":")
        # Asked again each second, as an ARP client does: once, in a full parallel test run,
        # a single request got no reply within 60 s, while the test alone passed in
        # seconds (the cause was not found). Further replies are skipped below with the
        # other non-UDP frames.
        peer.settimeout(1)
        reply = b""
        for _ in range(60):
            peer.sendto(arp, (host, int(port)))
            try:
                reply = peer.recv(65536)
            except TimeoutError:
                continue
            if reply[12:14] == b"\x08\x06":
                break
        peer.settimeout(60)
        assert reply[12:14] == b"\x08\x06" and reply[20:22] == b"\x00\x02"  # an ARP reply
        assert reply[22:28] == bytes.fromhex(CORE_MAC.replace(":", "")) and reply[0:6] == host_mac
        # 1 KiB datagrams: 16 of them fit a default socket buffer, read or not.
        cfg = chain.StreamConfig(size=1024, packets_per_chunk=8, chunks=2, tone=None)
        proc = chain.configure(board, cfg)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        fpga = katcp_fpga(board)
        fpga.write_int("pkt_ctrl", 1)
        payloads = []
        while len(payloads) < cfg.count:  # (a gratuitous ARP may come first)
            try:
                f = peer.recv(65536)
            except TimeoutError:
                raise AssertionError(f"{len(payloads)} datagrams: {board.stats()}") from None
            if f[12:14] == b"\x08\x00" and f[23] == 17:
                payloads.append(f[42:])
        fpga.disconnect()
    want = chain.expected_payloads(cfg, range(cfg.count))
    assert [bytes(p) for p in payloads] == [w.tobytes() for w in want]
