"""The two-port design's twin (examples/pktgen2x400g) without TAP devices: in udp mode a
tunnel per port, in pcap mode a file per port.

udp: each port's tunnel at its own ports (the first's + 1 for gbe1), both ways: an ARP
request sent into a port's tunnel is answered by that port's core alone, as scapy builds
the reply, and one for the other core's address is dropped by the core it reached; both
generators stream at once and every datagram out of each tunnel equals scapy's frame of
that port's stream (its MACs, IPs, UDP ports, IP Identification and stream id), the
generator's and core's counters (casperfpga_ext over KATCP) equal to what came out.
pcap: each port's frames in a file of its own (the first port's the file named, the
second's beside it named for its block), every UDP frame equal to scapy's and each file's
frames and bytes equal to its core's tx counters.

No privileges needed: these run wherever the twin builds. The two-port design is built
once for the module; its twin compile is cached by source hash (CASPER400G_SIM_CACHE).
"""

from __future__ import annotations

import argparse
import select
import socket
import time
from pathlib import Path

import pytest
from scapy.layers.l2 import ARP, Ether

from casper400g_dev import toolflow_sim
from casper400g_dev.twin import two_port
from casper400g_twin import run as twin_run
from casper400g_twin.board import Network, TwinBoard, TwinError, wait_until
from casper400g_twin.tunnel import Endpoint, Tunnel
from casperfpga_ext.fpga import Fpga
from verification.models import frames
from verification.pcapio import read_pcap

# 64 datagrams of 2 KiB a port: a peer's socket holds a whole burst should the reader lag.
RUN = two_port.Run(size=2048, count=64)
PORTS = {p.block: p for p in two_port.EXAMPLE}


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    build = toolflow_sim.build_example(
        tmp_path_factory.mktemp("twin2modes") / "pktgen2x400g",
        design=toolflow_sim.TWO_PORT_DESIGN,
    )
    return build.build_dir


def katcp(board: TwinBoard) -> Fpga:
    fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
    fpga.get_system_information()
    return fpga


def block_meta(board: TwinBoard, block: str) -> dict[str, str]:
    assert board.header is not None
    return dict(board.header.blocks[block].params)


def expected_stream(board: TwinBoard, block: str, ip_id: int) -> list[bytes]:
    """Scapy's frames of ``block``'s burst: from its core (the design's mask parameters) to
    its host side, IP Identification on from ``ip_id``, the example stream of its id."""
    p, meta, host = PORTS[block], block_meta(board, block), board.host_side(block)
    return [
        frames.expected_udp_frame(
            meta["fab_mac"],
            host.mac,
            meta["fab_ip"],
            host.address,
            int(meta["fab_udp"]),
            p.dest_port,
            ip_id=(ip_id + n) & 0xFFFF,
            ttl=int(meta["ttl"]),
            payload=frames.example_payload(n, RUN.size, p.stream_id),
            udp_checksum=bool(int(meta["udp_checksum_en"])),
        )
        for n in range(RUN.count)
    ]


def is_udp(frame: bytes) -> bool:
    return frame[12:14] == b"\x08\x00" and frame[23] == 17


def tx_counters(fpga: Fpga, block: str) -> dict[str, int]:
    gbe = fpga.gbes[block]
    names = ("tx_frames", "tx_bytes", "tx_udp_packets", "tx_udp_bytes", "tx_arp_miss")
    names += ("tx_arp_replies", "tx_cpu_frames", "ip_id")
    out = {name: gbe.read_reg(name) for name in names}
    out["pkt_sent"] = fpga.read_uint(f"{PORTS[block].regs}pkt_sent")
    return out


def configure_and_start(board: TwinBoard, fpga: Fpga) -> dict[str, dict[str, int]]:
    """Both cores and generators configured (each core's ARP entry its host side, each
    generator's destination), then both generators started together; the cores' counters
    from before the start."""
    proc = two_port.configure(board, two_port.EXAMPLE, RUN)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    before = {b: tx_counters(fpga, b) for b in PORTS}
    for p in two_port.EXAMPLE:
        fpga.write_int(f"{p.regs}pkt_ctrl", 1)
    return before


def check_counters(block: str, before: dict[str, int], now: dict[str, int]) -> None:
    """The burst in the generator's and the core's counters, exact."""
    assert now["pkt_sent"] == RUN.count, (block, now)
    assert now["tx_udp_packets"] - before["tx_udp_packets"] == RUN.count, (block, now)
    assert now["tx_udp_bytes"] - before["tx_udp_bytes"] == RUN.count * RUN.size, (block, now)
    assert now["tx_arp_miss"] == 0, (block, now)
    assert now["ip_id"] == (before["ip_id"] + RUN.count) & 0xFFFF, (block, now)


# ---------------------------------------------------------------- options (no twin)


def parse(*argv: str) -> Network:
    p = argparse.ArgumentParser()
    twin_run.add_arguments(p)
    return twin_run.network_of(p.parse_args(["build", *argv]))


def test_a_tunnel_per_block_at_the_next_ports_unless_given() -> None:
    net = parse("--tunnel", "127.0.0.1:50000,10.1.2.3:60000")
    assert net.mode == "udp"  # --tunnel makes auto udp
    assert [str(net.tunnel(k)) for k in range(3)] == [
        "127.0.0.1:50000 <-> 10.1.2.3:60000",
        "127.0.0.1:50001 <-> 10.1.2.3:60001",
        "127.0.0.1:50002 <-> 10.1.2.3:60002",
    ]
    net = parse("--tunnel", "127.0.0.1:0,127.0.0.1:6000", "--tunnel", "0.0.0.0:7000,10.0.0.9:7001")
    assert net.tunnel(1) == Tunnel(Endpoint("0.0.0.0", 7000), Endpoint("10.0.0.9", 7001))
    assert str(net.tunnel(2)) == "127.0.0.1:0 <-> 127.0.0.1:6002"  # local 0 stays any
    assert parse("--network", "pcap", "--tunnel", "127.0.0.1:1,127.0.0.1:2").mode == "pcap"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--tunnel", "127.0.0.1:5000"], "'127.0.0.1:5000'"),
        (["--tunnel", "127.0.0.1:5000,localhost:6000"], "'localhost'"),
        (["--tunnel", "127.0.0.1:5000,127.0.0.1:70000"], "'70000'"),
        (["--tunnel", "127.0.0.1:5000,127.0.0.1:0"], "127.0.0.1:0"),
        (["--tunnel", "127.0.0.1:1,127.0.0.1:2", "--tunnel", "127.0.0.1:3"], "'127.0.0.1:3'"),
    ],
)
def test_a_bad_tunnel_is_refused_naming_it(argv: list[str], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        parse(*argv)


def test_udp_mode_without_a_peer_does_not_start() -> None:
    board = TwinBoard(None, network=parse("--network", "udp"), katcp_port=0)
    with pytest.raises(TwinError, match="needs the tunnel's peer"):
        board.start()


def test_a_tunnel_past_the_last_port_is_refused_naming_it() -> None:
    net = parse("--tunnel", "127.0.0.1:65535,127.0.0.1:60000")
    with pytest.raises(ValueError, match="65536"):
        net.tunnel(1)


# ---------------------------------------------------------------- udp mode


def consecutive_udp_ports() -> tuple[socket.socket, socket.socket]:
    """Two sockets on 127.0.0.1 at ports P and P + 1 (the peers of two blocks' tunnels)."""
    for _ in range(100):
        a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        a.bind(("127.0.0.1", 0))
        b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            b.bind(("127.0.0.1", a.getsockname()[1] + 1))
        except OSError:
            a.close()
            b.close()
            continue
        for s in (a, b):
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        return a, b
    raise AssertionError("no two consecutive free UDP ports on 127.0.0.1")


def arp_request(board: TwinBoard, block: str, target_ip: str) -> bytes:
    host = board.host_side(block)
    return bytes(
        Ether(dst="ff:ff:ff:ff:ff:ff", src=host.mac)
        / ARP(op=1, hwsrc=host.mac, psrc=host.address, hwdst="00:00:00:00:00:00", pdst=target_ip)
    ).ljust(60, b"\0")


def arp_reply(board: TwinBoard, block: str) -> bytes:
    host, meta = board.host_side(block), block_meta(board, block)
    return bytes(
        Ether(dst=host.mac, src=meta["fab_mac"])
        / ARP(op=2, hwsrc=meta["fab_mac"], psrc=meta["fab_ip"], hwdst=host.mac, pdst=host.address)
    ).ljust(60, b"\0")


def drain(sock: socket.socket) -> list[bytes]:
    out = []
    while select.select([sock], [], [], 0)[0]:
        out.append(sock.recv(65536))
    return out


def test_udp_mode_carries_each_port_through_its_own_tunnel(build_dir: Path) -> None:
    a, b = consecutive_udp_ports()
    peers = {"gbe0": a, "gbe1": b}
    net = Network("udp", tunnel_local="127.0.0.1:0", tunnel_peer=f"127.0.0.1:{a.getsockname()[1]}")
    with a, b, TwinBoard(build_dir, network=net, katcp_port=0, icmp=False) as board:
        assert board.blocks == ("gbe0", "gbe1")
        tunnels = {blk: board.tunnel(blk) for blk in board.blocks}
        for blk, t in tunnels.items():
            assert t.peer == Endpoint("127.0.0.1", peers[blk].getsockname()[1]), t
            assert t.local.port != 0, t  # chosen, so the twin can say where it is
        assert tunnels["gbe0"].local != tunnels["gbe1"].local
        assert board.ports == {blk: t.spec() for blk, t in tunnels.items()}
        text = "\n".join(board.describe())
        for blk, t in tunnels.items():
            meta = block_meta(board, blk)
            assert f"{blk}: {t}, core {meta['fab_ip']} {meta['fab_mac']}" in text, text
        t = tunnels["gbe1"]
        assert board.stats()["macs"]["gbe1"]["port"] == f"udp tunnel {t.local} <-> {t.peer}"

        fpga = katcp(board)
        try:
            # Host to FPGA and back, per port: a request for its own core's address is
            # answered by that core through that tunnel alone; one for the other core's is
            # dropped by the core it reached (asked again each second, as an ARP client
            # does, while a core boots).
            rx0 = {blk: fpga.gbes[blk].read_reg("rx_arp_requests") for blk in PORTS}
            for blk, other in (("gbe0", "gbe1"), ("gbe1", "gbe0")):
                local = tunnels[blk].local
                dropped = fpga.gbes[blk].read_reg("rx_drop_arp")
                peers[blk].sendto(
                    arp_request(board, blk, block_meta(board, other)["fab_ip"]),
                    (local.ip, local.port),
                )
                assert wait_until(
                    lambda blk=blk, n=dropped + 1: fpga.gbes[blk].read_reg("rx_drop_arp") == n, 60
                ), blk
                reply: list[bytes] = []
                for _ in range(60):
                    peers[blk].sendto(
                        arp_request(board, blk, block_meta(board, blk)["fab_ip"]),
                        (local.ip, local.port),
                    )
                    if select.select([peers[blk]], [], [], 1.0)[0]:
                        reply = [f for f in drain(peers[blk]) if f[12:14] == b"\x08\x06"]
                        if reply:
                            break
                assert reply and reply[0] == arp_reply(board, blk), (blk, reply)
            time.sleep(0.5)  # replies to requests asked again may still be on their way
            for blk, sock in peers.items():
                assert all(f == arp_reply(board, blk) for f in drain(sock)), blk
            rx = {blk: fpga.gbes[blk].read_reg("rx_arp_requests") for blk in PORTS}
            assert all(rx[blk] > rx0[blk] for blk in PORTS), (rx0, rx)

            # Both streams at once, each out of its own tunnel only.
            link0 = {blk: m["link"]["datagrams"] for blk, m in board.stats()["macs"].items()}
            before = configure_and_start(board, fpga)
            got: dict[str, list[bytes]] = {blk: [] for blk in PORTS}
            deadline = time.monotonic() + 300
            while any(len(v) < RUN.count for v in got.values()):
                left = deadline - time.monotonic()
                assert left > 0, ({blk: len(v) for blk, v in got.items()}, board.stats())
                for sock in select.select(list(peers.values()), [], [], min(left, 1.0))[0]:
                    blk = next(k for k, s in peers.items() if s is sock)
                    frame = sock.recv(65536)
                    if is_udp(frame):  # (ARP the other way is checked above)
                        got[blk].append(frame)
            time.sleep(0.5)
            for blk, sock in peers.items():
                assert [f for f in drain(sock) if is_udp(f)] == [], f"{blk}: more than asked"
            for blk in PORTS:
                now = tx_counters(fpga, blk)
                want = expected_stream(board, blk, before[blk]["ip_id"])
                assert len(got[blk]) == len(want) == RUN.count
                bad = [n for n, (g, w) in enumerate(zip(got[blk], want, strict=True)) if g != w]
                assert bad == [], f"{blk}: frames {bad[:8]} differ from scapy's"
                check_counters(blk, before[blk], now)
                link = board.stats()["macs"][blk]["link"]
                assert link["datagrams"] - link0[blk] == RUN.count, (blk, link)
        finally:
            for p in two_port.EXAMPLE:
                fpga.write_int(f"{p.regs}pkt_ctrl", 0)
            fpga.disconnect()


# ---------------------------------------------------------------- pcap mode


def test_pcap_mode_writes_each_port_to_a_file_of_its_own(build_dir: Path, tmp_path: Path) -> None:
    first = tmp_path / "twin.pcap"
    net = Network("pcap", pcap=first)
    with TwinBoard(build_dir, network=net, katcp_port=0, icmp=False) as board:
        files = {blk: board.pcap_file(blk) for blk in board.blocks}
        assert files == {"gbe0": first, "gbe1": tmp_path / "twin.gbe1.pcap"}
        assert board.pcap == first
        text = "\n".join(board.describe())
        for blk, path in files.items():
            assert f"  {blk}: {path}" in text, text
        fpga = katcp(board)
        try:
            before = configure_and_start(board, fpga)

            def udp_frames(blk: str) -> list[bytes]:
                return [f for f in read_pcap(files[blk]) if is_udp(f)]

            assert wait_until(
                lambda: all(len(udp_frames(blk)) >= RUN.count for blk in PORTS), 300, 0.5
            ), ({blk: len(udp_frames(blk)) for blk in PORTS}, board.stats())
            # The generators have stopped at their count: nothing more comes.
            assert wait_until(
                lambda: all(
                    fpga.read_uint(f"{p.regs}pkt_sent") == RUN.count for p in two_port.EXAMPLE
                ),
                30,
            )
            now = {blk: tx_counters(fpga, blk) for blk in PORTS}
            written = {blk: read_pcap(path) for blk, path in files.items()}
        finally:
            for p in two_port.EXAMPLE:
                fpga.write_int(f"{p.regs}pkt_ctrl", 0)
            fpga.disconnect()
    for blk, frames_ in written.items():
        udp = [f for f in frames_ if is_udp(f)]
        want = expected_stream(board, blk, before[blk]["ip_id"])
        assert len(udp) == RUN.count, (blk, len(udp))
        bad = [n for n, (g, w) in enumerate(zip(udp, want, strict=True)) if g != w]
        assert bad == [], f"{blk}: frames {bad[:8]} in {files[blk].name} differ from scapy's"
        check_counters(blk, before[blk], now[blk])
        # Every frame the core handed its MAC since the design started is in its file, and
        # nothing else: the other frames are its ARP replies and CPU frames.
        c = now[blk]
        assert len(frames_) == c["tx_frames"], (blk, len(frames_), c)
        assert sum(len(f) for f in frames_) == c["tx_bytes"], (blk, c)
        assert len(frames_) - len(udp) == c["tx_arp_replies"] + c["tx_cpu_frames"], (blk, c)
