"""Declared sources (sources.py) through Capture.open: the same capture as the keyword
path, typed options checked when made, and readable reprs."""

from __future__ import annotations

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_rx.sources import (
    Chunking,
    Delivery,
    EmulatedNic,
    IbvSource,
    MemSource,
    PcapSource,
    UdpSource,
)


def drain(cap: rx.Capture) -> list[tuple[int, np.ndarray, np.ndarray]]:
    out = []
    with cap:
        for c in cap.chunks(timeout=10):
            out.append((c.chunk_id, c.present.copy(), c.data.copy()))
            c.release()
    return out


COUNTERS = ("received", "packets", "lost", "late", "duplicate", "queues", "chunks")


def test_declared_mem_source_equals_the_keyword_path() -> None:
    ppc = 64
    sched = np.concatenate([np.arange(0, 300), np.arange(310, 8 * ppc), [5, 6]])
    chunking = Chunking(packets_per_chunk=ppc, max_chunks=3, first_chunk=0)
    a = rx.Capture.open(MemSource(schedule=sched, queues=2), chunking=chunking)
    b = rx.Capture(
        "mem", schedule=sched, queues=2, packets_per_chunk=ppc, max_chunks=3, first_chunk=0
    )
    got, want = drain(a), drain(b)
    assert [g[0] for g in got] == [w[0] for w in want] == list(range(8))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g[1], w[1])
        np.testing.assert_array_equal(g[2], w[2])
    assert {k: a.stats[k] for k in COUNTERS} == {k: b.stats[k] for k in COUNTERS}
    # 300..309 never sent; 5 and 6 come back after both queues passed chunk 0.
    assert (a.stats.lost, a.stats.late, a.stats.duplicate) == (10, 2, 0)


def test_emulated_nic_source_counts_every_packet() -> None:
    ppc, count = 64, 64 * 16
    cap = rx.Capture.open(
        EmulatedNic(rate_gbps=2.0, count=count, queues=2),
        chunking=Chunking(packets_per_chunk=ppc, max_chunks=4, first_chunk=0),
    )
    drain(cap)
    s = cap.stats
    assert s.queues == 2
    assert s.packets + (rx._core.emu_nic_drops(cap._cap) or 0) == count


def test_udp_and_pcap_sources_reach_their_backends(tmp_path) -> None:  # noqa: ANN001
    cap = rx.Capture.open(UdpSource(threads=2), rate_gbps=None)
    assert cap.port and cap.port > 0
    missing = tmp_path / "missing.pcap"
    with pytest.raises(FileNotFoundError, match=r"missing\.pcap"):
        rx.Capture.open(PcapSource(str(missing)))


def test_reprs_say_what_the_objects_are() -> None:
    assert repr(UdpSource(bind="127.0.0.1:7148", threads=4, cpus=[2, 3, 4, 5])) == (
        "UdpSource(bind='127.0.0.1:7148', threads=4, cpus=(2, 3, 4, 5), rcvbuf=67108864, "
        "groups=(), interface='')"
    )
    assert repr(MemSource(schedule=np.arange(5), queues=2)) == (
        "MemSource(schedule=5 entries, queues=2, fill=True)"
    )
    assert "rate_gbps=400.0" in repr(EmulatedNic(rate_gbps=400.0, count=10, split=True))
    assert repr(Delivery(device="cuda:0")).startswith("Delivery(device='cuda:0', gpudirect=False")


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: UdpSource(bind="nohost"), "bind must be 'IPv4:port'"),
        (lambda: UdpSource(threads=0), "threads must be >= 1, got 0"),
        (lambda: UdpSource(cpus=[1, -2]), "CPU numbers >= 0, got -2"),
        (lambda: IbvSource(bind="10.0.0.2:7148", rq="ring"), "rq must be 'split' or 'striding'"),
        (lambda: EmulatedNic(rate_gbps=-1, count=1), "rate_gbps must be >= 0, got -1"),
        (lambda: EmulatedNic(rate_gbps=1, count=1, depth=8), "depth is an option of the header"),
        (lambda: Chunking(policy="newest"), "policy must be 'block' or 'drop_oldest'"),
        (lambda: Chunking(max_chunks=0), "max_chunks must be >= 1, got 0"),
        (lambda: Delivery(device="gpu0"), "device must be 'cpu', 'cuda' or 'cuda:N'"),
        (lambda: Delivery(gpudirect=True), "gpudirect=True needs device='cuda:N'"),
        (lambda: MemSource(count=-1), "count and first must be >= 0"),
    ],
)
def test_bad_options_are_named_when_made(make, match: str) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match=match):
        make()


def test_open_needs_a_source_object() -> None:
    with pytest.raises(TypeError, match=r"source must be one of sources\.py's source objects"):
        rx.Capture.open("udp")  # type: ignore[arg-type]
