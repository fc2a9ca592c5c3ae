"""SPEAD heaps placed in GPU memory by the GPUDirect reorder kernels: heap payload Gb/s of
one pass over a filled arrival ring, against the same run's device-to-device copy.

The frames are spead2's own sender's packets (two immediate items, timestamp and
channel, and the data item; heap counters 0..N-1) behind Ethernet/IPv4/UDP headers, as
the NIC would write them into the arrival ring; the ring holds them all. The kernels'
launches for the whole ring are queued behind a gate and timed with CUDA events (as
section 5.2 of docs/benchmarks.md times fixed-size packets), then every heap must be
whole and every packet placed, or the trial fails.

    python -m casper400g_rx.tools.bench_gd_spead [--mbytes 512] [--blocks 2 128]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from .. import Capture, Chunking, MemSource, _core
from .bench_gpu import d2d_gbps, ring_pass_delivery
from .bench_spead2 import CHANNEL, SPEAD_SHAPES, TIMESTAMP, spead_packets

PORT = 7148
HEADERS = 42  # Ethernet, IPv4, UDP


def spead_frames(n_heaps: int, heap_size: int, max_packet: int) -> tuple[np.ndarray, list[int]]:
    """Rows of Ethernet frames carrying spead2's packets of n_heaps heaps."""
    packets = spead_packets(n_heaps, heap_size, max_packet)
    stride = HEADERS + max(len(p) for p in packets)
    rows = np.zeros((len(packets), stride), np.uint8)
    headers: dict[int, bytes] = {}
    for i, p in enumerate(packets):
        h = headers.get(len(p))
        if h is None:
            h = headers[len(p)] = _core._frame_header(len(p), PORT, 0)
        rows[i, :HEADERS] = np.frombuffer(h, np.uint8)
        rows[i, HEADERS : HEADERS + len(p)] = np.frombuffer(p, np.uint8)
    return rows, [HEADERS + len(p) for p in packets]


def ring_pass(
    rows: np.ndarray,
    sizes: list[int],
    n_heaps: int,
    heap_size: int,
    max_packet: int,
    blocks: int,
    batch: int,
) -> dict[str, Any]:
    """One timed pass of the kernels over the frames of n_heaps heaps; their heap payload
    Gb/s. Chunks of about 8 MiB, enough of them for every heap of the pass."""
    n = len(sizes)
    ring = max(2, -(-n // batch)) * batch  # the kernels need two launch groups at least
    fmt = _core.Format.spead(
        heap_size, items=[TIMESTAMP, CHANNEL], max_packet=max_packet, udp_port=PORT
    )
    hpc = max(1, (8 << 20) // heap_size)
    cap = Capture(
        MemSource(packets=rows, sizes=sizes, frames=True),
        fmt=fmt,
        chunking=Chunking(
            packets_per_chunk=hpc, max_chunks=4, n_chunks=-(-n_heaps // hpc) + 6, first_chunk=0
        ),
        delivery=ring_pass_delivery(blocks, batch, ring),
    )
    seconds = cap._cap.time_ring_pass(False)
    s = cap.stats
    heaps = s["bytes"] // heap_size
    if heaps != n_heaps or s["packets"] != n or s["rejected"] or s["late"] or s["heaps_partial"]:
        raise RuntimeError(f"GPUDirect SPEAD benchmark misplaced packets: {s}")
    return {"gbps": heaps * heap_size * 8 / seconds / 1e9, "packets": n, "heaps": heaps}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--mbytes", type=int, default=512, help="heap payload in the ring (MiB)")
    p.add_argument("--blocks", type=int, nargs="+", default=[2, 128], help="scatter blocks")
    p.add_argument("--batch", type=int, default=65536, help="packets per launch group")
    args = p.parse_args(argv)
    d2d = d2d_gbps()
    print(f"device-to-device copy: {d2d:.1f} Gb/s")
    print("heaps | packets | scatter blocks | Gb/s | ratio to D2D copy")
    for label, heap_size, max_packet in SPEAD_SHAPES:
        n_heaps = (args.mbytes << 20) // heap_size
        rows, sizes = spead_frames(n_heaps, heap_size, max_packet)
        for blocks in args.blocks:
            r = ring_pass(rows, sizes, n_heaps, heap_size, max_packet, blocks, args.batch)
            print(
                f"{label} | {r['packets']} | {blocks} | {r['gbps']:.1f} | {r['gbps'] / d2d:.2f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
