"""Receiving a loopback sender's stream with the udp backend's SO_REUSEPORT threads: the
capture the tests open and the receive loop they run while a sender thread sends."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import casper400g_rx as rx


def reuseport_capture(
    threads: int,
    ppc: int,
    cpus: Sequence[int] | None = None,
    *,
    rcvbuf: int = 64 << 20,
    **chunking: Any,
) -> rx.Capture:
    """A udp capture on a loopback port of its own: `threads` SO_REUSEPORT threads, chunks
    of `ppc` packets numbered from 0 (`chunking`: the other options of rx.Chunking)."""
    return rx.Capture(
        rx.UdpSource("127.0.0.1:0", threads=threads, cpus=cpus, rcvbuf=rcvbuf),
        chunking=rx.Chunking(packets_per_chunk=ppc, first_chunk=0, **chunking),
    )


def apart_cpus() -> list[int]:
    """Two CPUs this process may use, as far apart as it has (the same one on one CPU)."""
    allowed = sorted(os.sched_getaffinity(0))
    return [allowed[0], allowed[-1]]


def keep_present(into: dict[int, np.ndarray]) -> Callable[[rx.Chunk], None]:
    """Keeps each chunk's presence, by chunk id."""

    def keep(chunk: rx.Chunk) -> None:
        into[chunk.chunk_id] = chunk.present.copy()

    return keep


def receive_while_sending(
    cap: rx.Capture,
    send: Callable[[], object],
    count: int,
    keep: Callable[[rx.Chunk], None] | None = None,
    *,
    take_while_sending: bool = True,
    poll: float = 0.02,
    last_timeout: float = 5.0,
) -> int:
    """Runs `send` in a thread while the started `cap` receives, until the thread is done
    and `count` datagrams were received or dropped by the kernel (30 s at most); then
    stops the capture and takes the chunks left. Each chunk taken is handed to `keep`,
    then released. take_while_sending=False leaves the chunks queued until the capture
    stops (the pool must hold the stream). Returns the number of chunks taken while
    sending."""
    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    taken = 0

    def take(chunk: rx.Chunk) -> None:
        if keep is not None:
            keep(chunk)
        chunk.release()

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if take_while_sending:
            for chunk in cap.chunks(timeout=poll):
                take(chunk)
                taken += 1
        else:
            time.sleep(poll)
        s = cap.stats
        if not thread.is_alive() and s.received + s.kernel_drops >= count:
            break
    thread.join()
    cap.stop()
    for chunk in cap.chunks(timeout=last_timeout):
        take(chunk)
    return taken
