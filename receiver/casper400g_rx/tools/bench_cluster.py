"""The capture cluster on a GPU host: one Dask worker per GPU (dask-cuda's
LocalCUDACluster), each capturing its share of the array's rate from an emulated NIC into
its own GPU, and the account of all shares.

    python -m casper400g_rx.tools.bench_cluster --rate 200 --seconds 10

Each worker sees its own GPU as cuda:0 (LocalCUDACluster orders CUDA_VISIBLE_DEVICES per
worker), so every stream delivers to "cuda:0" and lands on a different card. Each stream
is the example stream at rate/GPUs, sized by the capture's own rule (rate_gbps); the
table gives, per stream, the offered rate, what was placed and lost (the emulated NIC's
drops among them) and the worker's GPU, then the totals: the figures for
docs/benchmarks.md. Without dask-cuda or without GPUs the same runs on a LocalCluster
into host memory, and says so (a smoke run, not a figure).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

PAYLOAD = 8192
PPC = 4096  # whole chunks only: a last, partly sent chunk's empty slots count lost


def count_packets(chunk: Any) -> np.ndarray:
    return np.array([int(chunk.n_present)], dtype=np.int64)


def _cluster(gpus: int | None) -> tuple[Any, str, int]:
    """(cluster, device, workers): a LocalCUDACluster with a worker per GPU where
    dask-cuda and GPUs are there, else a LocalCluster delivering to host memory."""
    from .. import gpu

    usable, why = gpu.cuda_status()
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        LocalCUDACluster = None
        why = "dask-cuda is not installed (pip install casper400g-rx[cluster-cuda])"
    if usable and LocalCUDACluster is not None:
        from .. import _core

        n = gpus or _core.cuda_device_count()
        devices = ",".join(str(i) for i in range(n))
        cluster = LocalCUDACluster(
            CUDA_VISIBLE_DEVICES=devices, threads_per_worker=2, dashboard_address=None
        )
        return cluster, "cuda:0", n
    from distributed import LocalCluster

    n = gpus or 2
    print(f"no GPU workers ({why}): {n} CPU workers into host memory, a smoke run", flush=True)
    return LocalCluster(n_workers=n, threads_per_worker=2, dashboard_address=None), "cpu", n


def run(rate_gbps: float, seconds: float, gpus: int | None, queues: int | None) -> int:
    from distributed import Client

    from ..account import Transmitted
    from ..chunking import Chunking
    from ..cluster import CaptureCluster, Reduction, Stream
    from ..delivery import Delivery
    from ..sources import EmulatedNic

    cluster, device, n = _cluster(gpus)
    share = rate_gbps / n
    count = int(share * 1e9 * seconds / (8 * PAYLOAD)) // PPC * PPC
    with cluster, Client(cluster) as client:
        workers = sorted(client.scheduler_info()["workers"])[:n]
        streams = [
            Stream(
                f"share{i}",
                EmulatedNic(count=count, first=i << 40, nic_rate_gbps=share, queues=queues),
                chunking=Chunking(packets_per_chunk=PPC),
                delivery=Delivery(device=device),
                rate_gbps=share,
                workers=[w],
            )
            for i, w in enumerate(workers)
        ]
        cc = CaptureCluster(
            client,
            streams,
            Reduction(count_packets, chunks_per_result=64),
            [Transmitted(f"nic{i}", (s.name,), count) for i, s in enumerate(streams)],
        )
        t0 = time.monotonic()
        cc.start()
        time.sleep(seconds)
        report = cc.stop(timeout=seconds * 4 + 120)
        wall = time.monotonic() - t0
    print(f"\n{n} workers, {rate_gbps:g} Gb/s offered in all ({share:g} each), device {device}")
    print("| stream | worker | offered Gb/s | placed | lost | nic_drops | late |")
    print("|---|---|---|---|---|---|---|")
    for name, r in report.streams.items():
        s = r.stats
        print(
            f"| {name} | {r.worker} | {share:g} | {s['packets']:,} | {s['lost']:,} | "
            f"{s.get('nic_drops', 0):,} | {s['late']:,} |"
        )
    placed = sum(r.stats["packets"] for r in report.streams.values())
    lost = sum(r.stats["lost"] for r in report.streams.values())
    print(
        f"| all | | {rate_gbps:g} | {placed:,} | {lost:,} | | |\n"
        f"zero loss: {lost == 0}; account balanced: {report.account and report.account.balanced}"
        f"; wall {wall:.1f} s; errors: {report.errors or 'none'}"
    )
    return 0 if not report.errors and report.account and report.account.balanced else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m casper400g_rx.tools.bench_cluster", description=__doc__
    )
    p.add_argument("--rate", type=float, default=200.0, help="Gb/s offered in all")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--gpus", type=int, help="workers (default: every GPU)")
    p.add_argument("--queues", type=int, help="emulated NIC queues per stream (default: sized)")
    a = p.parse_args(argv)
    return run(a.rate, a.seconds, a.gpus, a.queues)


if __name__ == "__main__":
    sys.exit(main())
