"""A self-contained loopback demonstration: sender and receiver on 127.0.0.1."""

from __future__ import annotations

import threading

import numpy as np

from . import _core
from .capture import Capture, Stats
from .example_stream import example_payloads


def demo_loopback(
    seconds: float = 2.0, rate_gbps: float = 2.0, packets_per_chunk: int = 256
) -> tuple[Stats, int]:
    """Send the example stream over loopback for about `seconds` and capture it.

    Returns the capture's stats and the number of payload bytes that differed from the
    example-stream formula (0 when every present packet is intact).
    """
    count = max(1, int(seconds * rate_gbps * 1e9 / (8192 * 8)))
    count -= count % packets_per_chunk
    count = max(count, packets_per_chunk)
    mismatched = 0
    with Capture("udp", bind="127.0.0.1:0", packets_per_chunk=packets_per_chunk) as cap:
        port = cap.port
        assert port is not None
        sender = _core.Sender(port=port, count=count, rate_gbps=rate_gbps)
        thread = threading.Thread(target=sender.run, daemon=True)
        thread.start()
        received = 0
        for chunk in cap.chunks(timeout=1.0):
            present = chunk.present
            seqs = chunk.first_seq + np.flatnonzero(present)
            expected = example_payloads(seqs)
            mismatched += int(np.count_nonzero(chunk.data[present] != expected))
            received += chunk.n_present
            chunk.release()
            if chunk.chunk_id == count // packets_per_chunk - 1:
                break
        thread.join()
        cap.stop()
        for chunk in cap.chunks(timeout=0):
            chunk.release()
    return cap.stats, mismatched
