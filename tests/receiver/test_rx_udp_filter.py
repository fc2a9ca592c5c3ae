"""The udp source's guards: only the FPGA's datagrams reach the engine (src_filter, the
others counted `source_filtered`), and the kernel's per-socket drop counts, 32 bits that
wrap, are followed in 64 bits (`kernel_drops`)."""

from __future__ import annotations

import itertools
import socket
import time

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_rx import Chunking, UdpSource, _core

SIZE = 1024


def send_from(src: str, port: int, seqs: list[int]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((src, 0))  # all of 127/8 is this host's loopback
        for seq in seqs:
            s.sendto(rx.example_payload(seq, SIZE), ("127.0.0.1", port))


def test_only_the_fpgas_datagrams_reach_the_engine() -> None:
    # Another sender on the same port (a stale test stream, a scanner) sends sequence
    # numbers of its own: unfiltered they are placed or wreck the window; with the FPGA's
    # address as src_filter they are dropped before the engine, and counted.
    ppc, n = 32, 8
    cap = rx.Capture(
        UdpSource(bind="127.0.0.1:0", src_filter="127.0.0.2"),
        fmt=rx.Format(payload_size=SIZE),
        chunking=Chunking(packets_per_chunk=ppc, max_chunks=n, first_chunk=0),
    )
    got: dict[int, np.ndarray] = {}
    with cap:
        assert cap.port
        good = list(range(n * ppc))
        foreign = [1 << 60, 5, 1 << 40, 7, 9]
        for k in range(0, len(good), ppc):
            send_from("127.0.0.2", cap.port, good[k : k + ppc])
            send_from("127.0.0.1", cap.port, foreign[:1] if k else foreign)
        deadline = time.monotonic() + 20
        while cap.stats.received < len(good) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # the foreign datagrams sent last are counted too
        cap.stop()
        for chunk in cap.chunks(timeout=5):
            got[chunk.chunk_id] = chunk.present.copy()
            chunk.release()
    s = cap.stats
    assert s.kernel_drops == 0
    sent_foreign = len(foreign) + (n - 1)
    assert (s.received, s.packets, s.source_filtered) == (len(good), len(good), sent_foreign)
    assert (s.out_of_window, s.duplicate, s.late, s.lost) == (0, 0, 0, 0)
    assert sorted(got) == list(range(n)) and all(p.all() for p in got.values())


def test_a_filter_that_is_not_an_address_is_named() -> None:
    with pytest.raises(ValueError, match="src_filter must be an IPv4 address, got 'fpga'"):
        UdpSource(src_filter="fpga")
    with pytest.raises(ValueError, match="src_filter must be the sender's IPv4 address"):
        _core.Capture.udp(_core.Format(), _core.EngineConfig(), "127.0.0.1", 0, src_filter="x")


def test_kernel_drop_counts_that_wrap_are_followed_in_64_bits() -> None:
    # SO_MEMINFO's drop count is a u32 per socket: summed as read, kernel_drops fell back
    # by 2^32 when it wrapped. Each reading adds what the counter grew by since the last.
    # Readings less than 2^32 drops apart (the source reads them far more often).
    true = [0, 10, 2**32 - 5, 2**32 + 3, 2**32 + 3, 2**33 - 7, 2**33 + 7, 3 * 2**32 + 1]
    assert all(0 <= b - a < 2**32 for a, b in itertools.pairwise(true))
    readings = [t % 2**32 for t in true]
    assert _core._wrapping_counter_replay(readings) == true
