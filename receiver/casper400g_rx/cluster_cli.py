"""`casper400g-rx cluster`: the capture cluster (cluster.py) from the shell.

    casper400g-rx cluster --scheduler tcp://10.0.1.1:8786 \\
        --stream name=f0a,bind=0.0.0.0:7148,groups=239.2.0.1+239.2.0.2,interface=ens1,\\
resource=nic-ens1 \\
        --fpga 10.0.1.50:gbe0=f0a --seconds 60

Each --stream is one capture: `name`, the UDP `bind` address, optionally multicast
`groups` (joined by '+') on `interface`, and where it runs: a worker `resource` (declared
by `dask worker --resources "nic-ens1=1"` on the host with that NIC) or a `worker` (name
or address). Without --scheduler a LocalCluster on this machine runs them. The cluster's
counters are printed every --interval seconds; at the end (--seconds, or Ctrl-C) every
worker flushes and reports, and with --fpga (a board server's host[:port], the core, and
the streams it feeds) the array's loss account is printed, the cores' counts read over
KATCP after the captures stopped.
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any

from . import _core
from .account import Transmitted, from_core
from .chunking import Chunking
from .cluster import CaptureCluster, Reduction, Stream, example_check
from .sources import UdpSource

STREAM_KEYS = ("name", "bind", "groups", "interface", "resource", "worker")


def parse_stream(text: str, chunking: Chunking, payload: int) -> Stream:
    """One --stream: comma-separated key=value (see the module's text)."""
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key not in STREAM_KEYS:
            raise ValueError(f"--stream {text!r}: {part!r} is not one of {', '.join(STREAM_KEYS)}=")
        fields[key] = value
    if "name" not in fields or "bind" not in fields:
        raise ValueError(f"--stream {text!r} needs name= and bind=")
    groups = [g for g in fields.get("groups", "").split("+") if g]
    return Stream(
        fields["name"],
        UdpSource(bind=fields["bind"], groups=groups, interface=fields.get("interface", "")),
        chunking=chunking,
        fmt=functools.partial(_core.Format, payload_size=payload),
        resources={fields["resource"]: 1} if fields.get("resource") else {},
        workers=[fields["worker"]] if fields.get("worker") else [],
    )


def parse_fpga(text: str) -> tuple[str, int, str, tuple[str, ...]]:
    """One --fpga: host[:port]:core=stream+stream."""
    where, sep, streams = text.partition("=")
    parts = where.split(":")
    if not sep or not streams or len(parts) not in (2, 3):
        raise ValueError(f"--fpga {text!r}: give host[:port]:core=stream+stream")
    host, core = parts[0], parts[-1]
    port = int(parts[1]) if len(parts) == 3 else 7147
    return host, port, core, tuple(s for s in streams.split("+") if s)


def read_cores(fpgas: list[tuple[str, int, str, tuple[str, ...]]]) -> list[Transmitted]:
    from casperfpga_ext.fpga import Fpga

    out = []
    for host, port, core, streams in fpgas:
        fpga = Fpga(host, port=port, timeout=30)
        try:
            fpga.get_system_information()
            out.append(from_core(fpga.gbes[core], f"{host}:{core}", streams))
        finally:
            fpga.disconnect()
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scheduler", help="Dask scheduler address (default: a LocalCluster here)")
    p.add_argument("--stream", action="append", required=True, help="one capture (see above)")
    p.add_argument("--fpga", action="append", default=[], help="host[:port]:core=stream+stream")
    p.add_argument("--payload", type=int, default=8192, help="UDP payload bytes")
    p.add_argument("--packets-per-chunk", type=int, default=1024)
    p.add_argument("--max-chunks", type=int, default=8)
    p.add_argument("--seconds", type=float, help="stop after this long (default: Ctrl-C)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between stats lines")
    p.add_argument(
        "--check-example",
        action="store_true",
        help="check every chunk on its worker against the example stream's formula",
    )


def _print_stats(stats: dict[str, dict[str, Any]]) -> None:
    keys = ("packets", "lost", "late", "duplicate", "rejected", "kernel_drops")
    for name, s in sorted(stats.items()):
        line = "  ".join(f"{k}={s[k]:,}" for k in keys if k in s)
        print(f"{name}@{s['host']}: {line}  gbps={s.get('gbps', 0.0):.3f}", flush=True)


def run(args: argparse.Namespace) -> int:
    from distributed import Client, LocalCluster
    from rich.console import Console

    chunking = Chunking(packets_per_chunk=args.packets_per_chunk, max_chunks=args.max_chunks)
    streams = [parse_stream(s, chunking, args.payload) for s in args.stream]
    fpgas = [parse_fpga(f) for f in args.fpga]
    cluster = None if args.scheduler else LocalCluster(processes=False, dashboard_address=None)
    client = Client(args.scheduler or cluster)
    reduction = Reduction(example_check) if args.check_example else None
    cc = CaptureCluster(client, streams, reduction, (lambda: read_cores(fpgas)) if fpgas else None)
    try:
        for name, where in cc.start().items():
            print(f"{name}: capturing on {where['host']} ({where['worker']})", flush=True)
        deadline = None if args.seconds is None else time.monotonic() + args.seconds
        try:
            while deadline is None or time.monotonic() < deadline:
                time.sleep(args.interval)
                _print_stats(cc.stats())
        except KeyboardInterrupt:
            print("stopping", flush=True)
        report = cc.stop()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    console = Console()
    for name, r in report.streams.items():
        if r.error:
            console.print(f"[red]{name}@{r.host} failed:[/red]\n{r.error}")
    bad = 0
    if args.check_example:
        bad = sum(int(x.value[1]) for rs in cc.results().values() for x in rs)
        print(f"packets whose payload differs from the example stream's formula: {bad}")
    if report.account is not None:
        console.print(report.account.table())
    else:
        _print_stats({n: {**r.stats, "host": r.host} for n, r in report.streams.items()})
    balanced = report.account is None or report.account.balanced
    return 0 if not report.errors and balanced and bad == 0 else 1
