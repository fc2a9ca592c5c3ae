"""Captures from pieces (a source object, Chunking, Delivery): the one door, its
shortcuts, typed options checked when made, and readable reprs."""

from __future__ import annotations

import re

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_rx import (
    Chunking,
    Delivery,
    EmulatedNic,
    IbvSource,
    MemSource,
    PcapSource,
    RdmaSource,
    UdpSource,
)
from casper400g_rx.tools.bench_defaults import NOT_PLACED


def drain(cap: rx.Capture) -> list[tuple[int, np.ndarray, np.ndarray]]:
    out = []
    with cap:
        for c in cap.chunks(timeout=10):
            out.append((c.chunk_id, c.present.copy(), c.data.copy()))
            c.release()
    return out


COUNTERS = ("received", "packets", "lost", "late", "duplicate", "queues", "chunks")
SHORTCUTS = {
    UdpSource: "udp",
    PcapSource: "pcap",
    MemSource: "mem",
    EmulatedNic: "emulated_nic",
    IbvSource: "ibv",
    RdmaSource: "rdma",
}


def test_shortcut_builds_the_source_and_nothing_else() -> None:
    ppc = 64
    sched = np.concatenate([np.arange(0, 300), np.arange(310, 8 * ppc), [5, 6]])
    chunking = Chunking(packets_per_chunk=ppc, max_chunks=3, first_chunk=0)
    a = rx.Capture.mem(schedule=sched, queues=2, chunking=chunking)
    b = rx.Capture(MemSource(schedule=sched, queues=2), chunking=chunking)
    assert type(a.source) is MemSource and a.source.queues == 2
    assert a.chunking is b.chunking is chunking
    got, want = drain(a), drain(b)
    assert [g[0] for g in got] == [w[0] for w in want] == list(range(8))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g[1], w[1])
        np.testing.assert_array_equal(g[2], w[2])
    assert {k: a.stats[k] for k in COUNTERS} == {k: b.stats[k] for k in COUNTERS}
    # 300..309 never sent; 5 and 6 come back after both queues passed chunk 0.
    assert (a.stats.lost, a.stats.late, a.stats.duplicate) == (10, 2, 0)


def test_every_source_is_exported_with_its_shortcut() -> None:
    assert set(rx.Source.__subclasses__()) == set(SHORTCUTS)
    for kind, name in SHORTCUTS.items():
        assert getattr(rx, kind.__name__) is kind
        assert kind.__name__ in (getattr(rx.Capture, name).__doc__ or "")
    cap = rx.Capture.udp("127.0.0.1:0", threads=2, chunking=Chunking(max_chunks=3))
    assert cap.source == UdpSource("127.0.0.1:0", threads=2)
    assert cap.config.max_chunks == 3 and cap.port
    with pytest.raises(TypeError, match="'thread'"):
        rx.Capture.udp(thread=2)


def test_emulated_nic_source_counts_every_packet() -> None:
    ppc, count = 64, 64 * 16
    cap = rx.Capture(
        EmulatedNic(count=count, nic_rate_gbps=2.0, queues=2),
        chunking=Chunking(packets_per_chunk=ppc, max_chunks=4, first_chunk=0),
    )
    assert cap.config.skip_lagging  # paced: a live source
    drain(cap)
    s = cap.stats
    assert s.queues == 2
    # Every packet placed, dropped by the NIC, or counted by its reason (a queue that
    # lagged on a busy machine is moved forward, its older packets late).
    drops = rx._core.emu_nic_drops(cap._cap) or 0
    assert s.packets + drops + sum(s[k] for k in NOT_PLACED) == count
    assert s.received + drops == count


def test_replays_wait_for_lagging_queues_and_live_sources_skip_them() -> None:
    assert not rx.Capture(MemSource(count=64)).config.skip_lagging
    assert not rx.Capture(EmulatedNic(count=64, split=True)).config.skip_lagging
    assert rx.Capture(UdpSource()).config.skip_lagging
    keep = Chunking(skip_lagging=False)
    assert not rx.Capture(UdpSource(), chunking=keep).config.skip_lagging


def test_udp_and_pcap_sources_reach_their_engines(tmp_path) -> None:  # noqa: ANN001
    cap = rx.Capture(UdpSource(threads=2))
    assert cap.port and cap.port > 0
    assert cap.config.n_chunks == 4 + 4 + 2 * 2  # the pool of sizing.py's rule for 2 queues
    missing = tmp_path / "missing.pcap"
    with pytest.raises(FileNotFoundError, match=r"missing\.pcap"):
        rx.Capture(PcapSource(missing))


def test_reprs_say_what_the_objects_are() -> None:
    assert repr(UdpSource(bind="127.0.0.1:7148", threads=4, cpus=[2, 3, 4, 5])) == (
        "UdpSource(bind='127.0.0.1:7148', threads=4, cpus=(2, 3, 4, 5), rcvbuf=67108864, "
        "groups=(), interface='', src_filter=None)"
    )
    assert repr(MemSource(schedule=np.arange(5), queues=2)) == (
        "MemSource(schedule=5 entries, queues=2, fill=True)"
    )
    assert "nic_rate_gbps=400.0" in repr(EmulatedNic(count=10, nic_rate_gbps=400.0, split=True))
    assert repr(Delivery(device="cuda:0")).startswith("Delivery(device='cuda:0', gpudirect=False")


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: UdpSource(bind="nohost"), "bind must be 'IPv4:port'"),
        (lambda: UdpSource(threads=0), "threads must be >= 1, got 0"),
        (lambda: UdpSource(cpus=[1, -2]), "CPU numbers >= 0, got -2"),
        (lambda: IbvSource(bind="10.0.0.2:7148", rq="ring"), "rq must be 'split' or 'striding'"),
        (lambda: EmulatedNic(nic_rate_gbps=-1, count=1), "nic_rate_gbps must be >= 0, got -1"),
        (lambda: EmulatedNic(count=1, depth=8), "depth: options of the header-data split"),
        (
            lambda: EmulatedNic(count=1, schedule=[1], serial=True),
            "schedule, serial: options of the header-data split",
        ),
        (lambda: Chunking(policy="newest"), "policy must be 'block' or 'drop_oldest'"),
        (lambda: Chunking(max_chunks=0), "max_chunks must be >= 1, got 0"),
        (lambda: Chunking(n_chunks=-1), "n_chunks must be >= 0, got -1"),
        (lambda: Delivery(device="gpu0"), "device must be 'cpu', 'cuda' or 'cuda:N'"),
        (lambda: Delivery(gpudirect=True), "gpudirect=True needs device='cuda:N'"),
        (lambda: MemSource(count=-1), "count and first must be >= 0"),
        (
            lambda: MemSource(packets=np.zeros((2, 8), np.uint8), schedule=[0, 1]),
            "schedule= and queue_of= belong to the example stream",
        ),
        (lambda: PcapSource(""), "path must name a pcap file"),
    ],
)
def test_bad_options_are_named_when_made(make, match: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=re.escape(match)):
        make()


def test_gpudirect_belongs_to_the_nic_emulation() -> None:
    gpudirect = Delivery(device="cuda:0", gpudirect=True)
    with pytest.raises(ValueError, match=r"NIC emulation \(MemSource\), not PcapSource"):
        rx.Capture(PcapSource("x.pcap"), delivery=gpudirect)


def test_a_capture_needs_a_source_object() -> None:
    with pytest.raises(TypeError, match=r"source must be a UdpSource, .* got 'udp'"):
        rx.Capture("udp")  # type: ignore[arg-type]
