"""A self-contained loopback demonstration: sender and receiver on 127.0.0.1."""

from __future__ import annotations

import threading
import time

import numpy as np

from . import _core
from .capture import Capture, Stats
from .example_stream import example_payloads


def demo_loopback(
    seconds: float = 2.0, rate_gbps: float = 0.5, packets_per_chunk: int = 256
) -> tuple[Stats, int]:
    """Send the example stream over loopback for about `seconds` and capture it, checking
    every byte of every packet against the example-stream formula in NumPy.

    Returns the capture's stats and the number of payload bytes that differed from the
    example-stream formula (0 when every present packet is intact).
    """
    count = max(1, int(seconds * rate_gbps * 1e9 / (8192 * 8)))
    count = max(packets_per_chunk, count - count % packets_per_chunk)
    mismatched = 0

    def check(chunk: _core.Chunk) -> None:
        nonlocal mismatched
        with chunk:
            present = chunk.present
            seqs = chunk.first_seq + np.flatnonzero(present)
            mismatched += int(np.count_nonzero(chunk.data[present] != example_payloads(seqs)))

    cap = Capture(
        "udp", bind="127.0.0.1:0", packets_per_chunk=packets_per_chunk, n_chunks=32, first_chunk=0
    )
    with cap:
        assert cap.port is not None
        sender = _core.Sender(port=cap.port, count=count, rate_gbps=rate_gbps)
        thread = threading.Thread(target=sender.run, args=(seconds * 3 + 5,))
        thread.start()
        try:
            deadline = time.monotonic() + seconds * 3 + 5
            while time.monotonic() < deadline:
                for chunk in cap.chunks(timeout=0.1):
                    check(chunk)
                s = cap.stats
                if not thread.is_alive() and s.received + s.kernel_drops >= count:
                    break
        finally:
            thread.join()
        cap.stop()
        for chunk in cap.chunks(timeout=0):
            check(chunk)
    return cap.stats, mismatched
