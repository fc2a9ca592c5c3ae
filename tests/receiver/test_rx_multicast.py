"""Receivers join multicast groups: a sender publishes 4 groups through a switch with IGMP
snooping (a Linux bridge between network namespaces, casper400g_dev/lan.py), receivers on
two hosts each join 2 and get only their own: every payload checked against the example
stream's formula, every packet accounted, the switch forwarding nothing else to a host
(counted on its wire), and the groups left when the capture stops.

The namespace tests need root, like the twin's: skipped without, failed under CI=true.
The checks of the declared options run anywhere.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from conftest import need_tool

from casper400g_dev import lan
from casper400g_rx import Capture, Chunking, Format, IbvSource, UdpSource
from casper400g_rx.example_stream import example_payloads
from casper400g_rx.multicast import Membership, parse_groups

PORT = 7148
PPC = 64
GROUPS = ("239.2.0.1", "239.2.0.2", "239.2.0.3", "239.2.0.4")


# ---------------------------------------------------------------- declared options


def test_groups_are_checked_and_kept_as_addresses():
    assert parse_groups([" 239.2.0.1", "224.0.0.251"]) == ("239.2.0.1", "224.0.0.251")
    with pytest.raises(ValueError, match=r"'10\.0\.0\.1' is not an IPv4 multicast"):
        parse_groups(["10.0.0.1"])
    with pytest.raises(ValueError, match=re.escape("'239.2.0.x'")):
        parse_groups(["239.2.0.x"])
    with pytest.raises(ValueError, match="listed twice"):
        parse_groups(["239.2.0.1", "239.2.0.1"])
    with pytest.raises(ValueError, match=re.escape("the string '239.2.0.1'")):
        parse_groups("239.2.0.1")


def test_udp_source_refuses_what_cannot_receive_its_groups():
    src = UdpSource(bind=f"0.0.0.0:{PORT}", groups=list(GROUPS[:2]), interface="eth0")
    assert src.groups == GROUPS[:2]
    assert src.lanes() == 1 and src.with_lanes(4, None, Format()) is src
    UdpSource(bind=f"{GROUPS[0]}:{PORT}", groups=[GROUPS[0]])  # one group's own address
    with pytest.raises(ValueError, match="cannot receive the groups"):
        UdpSource(bind=f"10.0.0.2:{PORT}", groups=[GROUPS[0]])
    with pytest.raises(ValueError, match="cannot receive the groups"):
        UdpSource(bind=f"{GROUPS[0]}:{PORT}", groups=list(GROUPS[:2]))
    with pytest.raises(ValueError, match="UDP port"):
        UdpSource(bind="0.0.0.0:0", groups=[GROUPS[0]])
    with pytest.raises(ValueError, match="threads=2: every socket would get a copy"):
        UdpSource(bind=f"0.0.0.0:{PORT}", groups=[GROUPS[0]], threads=2)
    with pytest.raises(ValueError, match="interface='eth0' is where groups are joined"):
        UdpSource(bind=f"0.0.0.0:{PORT}", interface="eth0")


def test_ibv_source_takes_groups_on_a_nic():
    src = IbvSource(bind=f"0.0.0.0:{PORT}", interface="enp1s0f0np0", groups=list(GROUPS))
    assert src.groups == GROUPS
    with pytest.raises(ValueError, match="give interface="):
        IbvSource(bind=f"0.0.0.0:{PORT}", groups=[GROUPS[0]])


def test_membership_names_a_missing_interface():
    with pytest.raises(ValueError, match="no network interface named 'nosuch0'"):
        Membership([GROUPS[0]], "nosuch0")
    with pytest.raises(ValueError, match="at least one"):
        Membership([])


# ---------------------------------------------------------------- through the switch


@pytest.fixture
def net() -> Iterator[lan.Lan]:
    why = lan.missing()
    if why is not None:
        need_tool(f"hosts on a switch: {why}")
    with lan.Lan() as switch:
        yield switch


def consume(cap: Capture, out: dict[str, int], stop: threading.Event) -> None:
    """Check every chunk against the formula until told to stop and drained."""
    while True:
        for chunk in cap.chunks(timeout=0.2):
            with chunk:
                present = chunk.present
                seqs = chunk.first_seq + np.flatnonzero(present)
                bad = np.count_nonzero(chunk.data[present] != example_payloads(seqs))
                out["bad_bytes"] += int(bad)
                out["present"] += int(present.sum())
                out["chunks"] += 1
                out["min_chunk"] = min(out.get("min_chunk", chunk.chunk_id), chunk.chunk_id)
        if stop.is_set() and cap.finished:
            return


def test_two_hosts_each_get_their_two_groups_only(net: lan.Lan):
    tx = net.add_host("fpga")
    hosts = {"a": net.add_host("a"), "b": net.add_host("b")}
    joins = {"a": GROUPS[:2], "b": GROUPS[2:]}
    # Each host's stream is dealt over its two groups by chunk (as a destination table
    # deals heap ranges); the hosts' streams start far apart, so a packet of the other
    # host's groups could not pass for one of this host's.
    chunks_per_host = 48
    first = {"a": 0, "b": 1 << 20}
    schedules: dict[str, np.ndarray] = {}
    for name, groups in joins.items():
        ways = lan.chunk_spread(first[name], chunks_per_host * PPC, PPC, len(groups))
        schedules.update(zip(groups, ways, strict=True))
    caps: dict[str, Capture] = {}
    for name, host in hosts.items():
        with host.entered():
            caps[name] = Capture(
                UdpSource(bind=f"0.0.0.0:{PORT}", groups=joins[name], interface=host.ifname),
                chunking=Chunking(
                    packets_per_chunk=PPC, max_chunks=16, first_chunk=first[name] // PPC
                ),
            )
    assert net.memberships() == {"fpga": set(), "a": set(), "b": set()}
    results = {name: {"bad_bytes": 0, "present": 0, "chunks": 0} for name in hosts}
    stop = threading.Event()
    threads = []
    for name, cap in caps.items():
        cap.start()
        t = threading.Thread(target=consume, args=(cap, results[name], stop))
        t.start()
        threads.append(t)
    try:
        net.wait_memberships({name: set(groups) for name, groups in joins.items()})
        wires = {name: lan.WireCount(host) for name, host in hosts.items()}
        sent = lan.publish(tx, PORT, schedules, rate_gbps=0.3)
        wire = {name: w.stop() for name, w in wires.items()}
    finally:
        for cap in caps.values():
            cap.stop()
        stop.set()
        for t in threads:
            t.join(60)
    assert all(not t.is_alive() for t in threads)
    assert sent == {g: len(s) for g, s in schedules.items()}
    for name, groups in joins.items():
        # The switch forwarded this host's groups, every datagram, and nothing else.
        assert wires[name].dropped == 0
        assert dict(wire[name]) == {(g, PORT): sent[g] for g in groups}
        s = caps[name].stats
        total = sum(sent[g] for g in groups)
        r = results[name]
        assert r["bad_bytes"] == 0
        assert r["min_chunk"] == first[name] // PPC
        assert s.packets == r["present"] == total - s.lost
        # Every datagram that reached the host is accounted, each lost slot by its cause.
        assert s.received + s.kernel_drops == total
        assert s.lost == s.late + s.kernel_drops
        assert s.duplicate == s.rejected == 0
        assert s.packets + s.lost == total == chunks_per_host * PPC
    # Stopping left the groups: the switch forwards them to no one.
    net.wait_memberships({"a": set(), "b": set()})


# ---------------------------------------------------------------- the ibv backend's rules


@pytest.mark.parametrize("group", ["224.0.0.1", "239.2.0.4", "239.255.255.255", "225.128.1.2"])
def test_flow_rule_mac_of_a_group_is_rfc1112s(group: str):
    from scapy.layers.l2 import getmacbyip

    from casper400g_rx import _core

    if not _core.ibv_compiled():
        pytest.skip("the ibv backend is not compiled into this build")
    # scapy's own mapping of a multicast address to its Ethernet address.
    assert _core._multicast_mac(group) == bytes.fromhex(getmacbyip(group).replace(":", ""))
    # The flow rule built for that MAC carries it whole (the rule layout is tested by
    # test_rx_ibv_units.py; here that a group's MAC goes in unchanged).
    rule = _core._flow_rule_bytes(_core._multicast_mac(group), group, PORT)
    assert _core._multicast_mac(group) in rule


def test_flow_rule_mac_refuses_a_unicast_address():
    from casper400g_rx import _core

    if not _core.ibv_compiled():
        pytest.skip("the ibv backend is not compiled into this build")
    with pytest.raises(ValueError, match=r"'10\.0\.0\.2' is not an IPv4 multicast"):
        _core._multicast_mac("10.0.0.2")
