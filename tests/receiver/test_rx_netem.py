"""Exact accounting through a real network path: a veth pair between two network
namespaces the test creates, optionally with `tc netem` loss, duplication and reordering.

Needs root (namespaces); the netem case also needs the sch_netem kernel module. Traffic
stays inside the test's own namespaces. The expected counts come from the kernel: netem's
qdisc statistics give the packets it dropped and the packets it sent (duplicates included).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

PPC, COUNT, PORT = 64, 64 * 40, 15000
TX_IP, RX_IP = "10.213.0.1", "10.213.0.2"

RECEIVER = f"""
import json, time, numpy as np, casper400g_rx as rx
cap = rx.Capture(rx.UdpSource("{RX_IP}:{PORT}"),
                 chunking=rx.Chunking(packets_per_chunk={PPC}, max_chunks=4, first_chunk=0))
bad = 0
def check(chunk):
    global bad
    with chunk:
        seqs = chunk.first_seq + np.flatnonzero(chunk.present)
        bad += int(np.count_nonzero(chunk.data[chunk.present] != rx.example_payloads(seqs)))
with cap:
    print("ready", flush=True)
    start = time.monotonic(); last, last_change = 0, time.monotonic()
    while time.monotonic() - start < 30:
        for chunk in cap.chunks(timeout=0.1):
            check(chunk)
        n = cap.stats.received
        if n != last:
            last, last_change = n, time.monotonic()
        elif n and time.monotonic() - last_change > 1.0:
            break
    cap.stop()
    for chunk in cap.chunks(timeout=0):
        check(chunk)
print(json.dumps({{"stats": dict(cap.stats), "bad": bad}}))
"""

SENDER = f"""
import casper400g_rx as rx
rx.Sender(host="{RX_IP}", port={PORT}, count={COUNT}, rate_gbps=0.2, allow_remote=True).run()
"""


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str]]:
    if os.geteuid() != 0:
        pytest.skip("needs root to create network namespaces and a veth pair")
    if shutil.which("ip") is None or shutil.which("tc") is None:
        pytest.skip("needs iproute2 (ip, tc)")
    tag = f"{os.getpid() % 100000}"
    tx, rx = f"c4rx_tx{tag}", f"c4rx_rx{tag}"
    try:
        ip("netns", "add", tx)
        ip("netns", "add", rx)
    except subprocess.CalledProcessError as e:
        subprocess.run(["ip", "netns", "del", tx], capture_output=True)
        pytest.skip(f"cannot create network namespaces: {e.stderr.strip()}")
    try:
        ip("-n", tx, "link", "add", "veth_tx", "type", "veth", "peer", "name", "veth_rx",
           "netns", rx)  # fmt: skip
        for ns, dev, addr in ((tx, "veth_tx", TX_IP), (rx, "veth_rx", RX_IP)):
            # No IPv6 and no ARP: only the test's datagrams cross the link (and its qdisc).
            subprocess.run(
                ["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1"],
                capture_output=True,
            )
            ip("-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
        mac_rx = json.loads(
            subprocess.run(
                ["ip", "-j", "-n", rx, "link", "show", "veth_rx"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )[0]["address"]
        ip(
            "-n",
            tx,
            "neigh",
            "replace",
            RX_IP,
            "lladdr",
            mac_rx,
            "dev",
            "veth_tx",
            "nud",
            "permanent",
        )
        yield tx, rx
    finally:
        subprocess.run(["ip", "netns", "del", tx], capture_output=True)
        subprocess.run(["ip", "netns", "del", rx], capture_output=True)


def qdisc_counts(ns: str) -> tuple[int, int]:
    """(packets sent, packets dropped) by the root qdisc of veth_tx."""
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", "veth_tx"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    m = re.search(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+)", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def run_pair(tx: str, rx: str) -> dict:
    receiver = subprocess.Popen(
        ["ip", "netns", "exec", rx, sys.executable, "-c", RECEIVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert receiver.stdout is not None
        assert receiver.stdout.readline().strip() == "ready", receiver.stderr.read()
        subprocess.run(
            ["ip", "netns", "exec", tx, sys.executable, "-c", SENDER], check=True, timeout=60
        )
        out, err = receiver.communicate(timeout=60)
    finally:
        if receiver.poll() is None:
            receiver.kill()
    assert receiver.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_veth_path_loses_nothing(namespaces: tuple[str, str]) -> None:
    tx, rx = namespaces
    result = run_pair(tx, rx)
    s = result["stats"]
    assert result["bad"] == 0
    assert s["kernel_drops"] == 0
    assert (s["packets"], s["lost"], s["late"], s["duplicate"]) == (COUNT, 0, 0, 0)


def test_netem_faults_are_counted_exactly(namespaces: tuple[str, str]) -> None:
    tx, rx = namespaces
    netem = ["loss", "3%", "duplicate", "2%", "delay", "1ms", "reorder", "90%"]
    added = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            tx,
            "tc",
            "qdisc",
            "add",
            "dev",
            "veth_tx",
            "root",
            "netem",
            *netem,
        ],
        capture_output=True,
        text=True,
    )
    if added.returncode != 0:
        pytest.skip(f"tc netem unavailable (sch_netem kernel module?): {added.stderr.strip()}")
    result = run_pair(tx, rx)
    time.sleep(0.1)
    sent, dropped = qdisc_counts(tx)
    duplicated = sent - (COUNT - dropped)
    s = result["stats"]
    assert dropped > 0 and duplicated > 0
    assert result["bad"] == 0
    assert s["kernel_drops"] == 0
    assert s["received"] == sent
    assert (s["lost"], s["duplicate"], s["late"]) == (dropped, duplicated, 0)
    assert s["packets"] == COUNT - dropped
