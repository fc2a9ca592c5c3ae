"""The twin of the two-port example design (examples/pktgen2x400g): both ports live, each a
TAP device of its own on its block's subnet, each core answering ARP (its hardware
responder) and ping (the ICMP helper) with its own MAC and IP; both streams at once into
one host, a receiver capture per port keyed by its stream id, every payload checked and
each core's, link's and capture's counts exact; the status with a line per port.

Needs root (a network namespace and TAP devices): skipped without, failed under CI=true.
The twin is compiled once (cached by source hash) and one board serves the module.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from conftest import need_tool

from casper400g_dev import toolflow_sim
from casper400g_dev.twin import two_port
from casper400g_twin import netns
from casper400g_twin.board import Network, TwinBoard, wait_until
from casperfpga_ext.fpga import Fpga

CORES = {"gbe0": ("10.0.0.10", "02:00:0a:00:00:0a"), "gbe1": ("10.0.1.10", "02:00:0a:00:01:0a")}


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwinBoard]:
    why = netns.privileged()
    if why is not None:
        need_tool(f"the twin's TAP devices: {why}")
    for tool in ("arping", "ping"):
        if shutil.which(tool) is None:
            need_tool(f"{tool} is not installed (Debian iputils-{tool}; `make test` installs it)")
    build = toolflow_sim.build_example(
        tmp_path_factory.mktemp("twin2") / "pktgen2x400g", design=toolflow_sim.TWO_PORT_DESIGN
    )
    with TwinBoard(build.build_dir, network=Network("tap"), katcp_port=0) as b:
        yield b


def test_each_port_has_an_interface_on_its_subnet(board: TwinBoard) -> None:
    assert board.blocks == ("gbe0", "gbe1")
    hosts = [board.host_side(b) for b in board.blocks]
    assert [(h.ifname, h.ip) for h in hosts] == [("c4g0", "10.0.0.20/24"), ("c4g1", "10.0.1.20/24")]
    assert hosts[0].mac != hosts[1].mac
    assert board.interface("gbe1") == "c4g1"
    text = "\n".join(board.describe())
    for block, (ip, mac) in CORES.items():
        assert f"-> {block} {ip} {mac}" in text, text
    assert board.netns is not None
    route = board.netns.run("ip", "route", "get", "10.0.1.10").stdout
    assert "dev c4g1" in route, route


@pytest.mark.parametrize("block", sorted(CORES))
def test_each_core_answers_arp_and_ping_with_its_own_address(board: TwinBoard, block: str) -> None:
    ip, mac = CORES[block]
    assert board.netns is not None
    fpga = Fpga(board.katcp_host, port=board.port, timeout=30)
    fpga.get_system_information()
    try:
        replies = {b: fpga.gbes[b].read_reg("tx_arp_replies") for b in CORES}
        out = board.netns.run("arping", "-c", "2", "-w", "60", "-I", board.interface(block), ip)
        assert out.returncode == 0, out.stdout + out.stderr
        assert out.stdout.count(f"[{mac.upper()}]") == 2, out.stdout
        # Its own core answered; the other one saw nothing of it.
        now = {b: fpga.gbes[b].read_reg("tx_arp_replies") for b in CORES}
        for b in CORES:
            assert (now[b] - replies[b] >= 2) if b == block else now[b] == replies[b], (b, now)
    finally:
        fpga.disconnect()
    before = board.icmp_counts().get("icmp_reply", 0)
    # A deadline (-w), not a per-reply wait: under load the first echo can take seconds (the
    # twin resolves ARP first) and ping would stop waiting for the second one too early.
    out = board.netns.run("ping", "-c", "2", "-w", "60", ip, timeout=120)
    assert out.returncode == 0 and " 2 received" in out.stdout, out.stdout + out.stderr
    assert wait_until(lambda: board.icmp_counts()["icmp_reply"] - before == 2, 10)
    neigh = board.netns.run("ip", "neigh", "show", ip, "dev", board.interface(block))
    assert mac in neigh.stdout.lower(), neigh.stdout


def test_both_streams_into_one_host(board: TwinBoard) -> None:
    run = two_port.Run(size=8192, count=256, packets_per_chunk=64)
    proc = two_port.configure(board, two_port.EXAMPLE, run)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    prev = board.stats()
    got = two_port.capture(board, two_port.EXAMPLE, run, timeout=600)
    ok, rows = two_port.verify(board, got, run)
    for b, name, value, check in rows:
        print(f"{b:<5} {name:<36} {value:>8,}  {check}")
    assert ok, rows
    for block, pc in got.items():
        assert pc.present.all(), block
    lines, _now = board.status_lines(prev)
    assert len(lines) == 3
    for k, block in enumerate(board.blocks):
        assert lines[k + 1].startswith(f"{block}: FPGA->host "), lines
        frames = int(lines[k + 1].split("FPGA->host ")[1].split()[0].replace(",", ""))
        assert frames >= run.count, lines
