"""A self-contained loopback demonstration: sender and receiver on 127.0.0.1."""

from __future__ import annotations

import threading
import time

import numpy as np

from .. import Capture, Chunking, Delivery, MemSource, Stats, UdpSource, _core
from ..example_stream import example_payloads


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
        UdpSource(bind="127.0.0.1:0"),
        chunking=Chunking(packets_per_chunk=packets_per_chunk, n_chunks=32, first_chunk=0),
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


def demo_gpu(n_chunks: int = 8, packets_per_chunk: int = 1024) -> tuple[bool, list[str]]:
    """The GPU stage of `make demo`: the example stream (with injected drops, duplicates
    and reordering) captured into GPU memory, host-staged and GPUDirect, and every chunk
    checked on the GPU with a CuPy reduction (per-packet sum of the payload's 64-bit
    words against the formula's).

    Returns (ok, lines to print): ok is False when a check failed or, with the reason
    in the first line, when there is no GPU to run on.
    """
    from .. import gpu
    from ..faults import faulty_schedule

    usable, why = gpu.cuda_status()
    if not usable:
        return False, [f"GPU stage skipped: {why}"]
    try:
        import cupy as cp
    except ImportError:
        return False, ["GPU stage skipped: CuPy is not installed (pip install cupy-cuda13x)"]
    ppc = packets_per_chunk
    sched = faulty_schedule(n_chunks, ppc, 4, np.random.default_rng(1)).schedule
    lines = [f"GPU: {_core.cuda_device_info(0)['name']}"]
    all_ok = True
    for label, gpudirect in (
        ("host-staged (pinned chunks -> cudaMemcpyAsync)", False),
        ("GPUDirect (frames in GPU memory -> reorder kernels)", True),
    ):
        cap = Capture(
            MemSource(schedule=sched),
            chunking=Chunking(packets_per_chunk=ppc, max_chunks=4, first_chunk=0),
            delivery=Delivery(device="cuda:0", gpudirect=gpudirect),
        )
        bad = 0
        with cap:
            for chunk in cap.chunks(timeout=10):
                with chunk:
                    x = cp.from_dlpack(chunk)  # no copy: the chunk's own GPU memory
                    present = cp.from_dlpack(chunk.present_gpu)
                    sums = cp.asnumpy(x.view(cp.uint64).sum(axis=1)[present])
                    seqs = chunk.first_seq + np.flatnonzero(chunk.present)
                    ref = example_payloads(seqs).view(np.uint64).sum(axis=1)
                    bad += int(np.count_nonzero(sums != ref))
        s = cap.stats
        all_ok &= bad == 0
        lines.append(
            f"{label}: {s['chunks']} chunks, {s['packets']} packets, lost {s['lost']}, "
            f"duplicate {s['duplicate']}, late {s['late']}; packets whose GPU checksum "
            f"differs from the formula: {bad}"
        )
    return all_ok, lines
