"""`casper400g rx ...`: capture, monitor, bench and send the example stream; a capture
cluster."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from . import _core
from .capture import Capture
from .chunking import Chunking
from .endpoint import parse_endpoint
from .sources import IbvSource, PcapSource, Source, UdpSource


def _add_engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=["udp", "pcap", "ibv"], default="udp")
    p.add_argument("--bind", default="127.0.0.1:10000", help="IPv4:port (udp, ibv backends)")
    p.add_argument("--interface", default="", help="NIC interface (ibv backend)")
    p.add_argument("--queues", type=int, default=1, help="ibv queues: ports port..port+N-1")
    p.add_argument("--pcap-in", help="capture file to replay (pcap backend)")
    p.add_argument("--threads", type=int, default=1, help="SO_REUSEPORT receive threads")
    p.add_argument("--cpus", help="comma-separated CPUs to pin the receive threads to")
    p.add_argument("--payload", type=int, default=8192, help="UDP payload bytes")
    p.add_argument("--packets-per-chunk", type=int, default=1024)
    p.add_argument("--max-chunks", type=int, default=4)
    p.add_argument("--policy", choices=["block", "drop_oldest"], default="block")
    p.add_argument(
        "--metrics-port", type=int, help="serve the counters for Prometheus on this port"
    )
    p.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address of --metrics-port (default 127.0.0.1; 0.0.0.0 shows the counters to "
        "every host that reaches this one)",
    )


def _source(args: argparse.Namespace) -> Source:
    cpus = [int(c) for c in args.cpus.split(",")] if args.cpus else None
    if args.backend == "udp":
        return UdpSource(args.bind, threads=args.threads, cpus=cpus)
    if args.backend == "pcap":
        if not args.pcap_in:
            raise ValueError("--backend pcap needs --pcap-in FILE")
        return PcapSource(args.pcap_in)
    return IbvSource(args.bind, interface=args.interface, queues=args.queues, cpus=cpus)


def _open_capture(args: argparse.Namespace) -> Capture:
    return Capture(
        _source(args),
        fmt=_core.Format(payload_size=args.payload),
        chunking=Chunking(
            packets_per_chunk=args.packets_per_chunk,
            max_chunks=args.max_chunks,
            policy=args.policy,
        ),
    )


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[threading.Event]:
    """SIGINT and SIGTERM set the event instead of unwinding the capture, so that what was
    captured is flushed and written. A signal the process ignores (a shell's background
    job) stays ignored."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def note(signum: int, frame: object) -> None:
        stop.set()

    kept = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            kept[sig] = signal.signal(sig, note)
    try:
        yield stop
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)


def _metrics(args: argparse.Namespace, cap: Capture) -> contextlib.AbstractContextManager:
    """The Prometheus endpoint of --metrics-port, or nothing."""
    if args.metrics_port is None:
        return contextlib.nullcontext()
    from .metrics import serve

    server = serve(cap, args.metrics_port, addr=args.metrics_host)
    print(f"metrics on http://{server.host}:{server.port}/metrics", flush=True)
    return server


def _print_stats(cap: Capture) -> None:
    s = cap.stats
    keys = ("packets", "lost", "late", "duplicate", "rejected", "chunks", "chunks_dropped")
    # Reasons only some paths count (a consumer too slow, a wild sequence number).
    extra = ("no_free_chunk", "out_of_window", "source_filtered")
    line = "  ".join([f"{k}={s[k]}" for k in keys] + [f"{k}={s[k]}" for k in extra if s.get(k)])
    print(line + f"  gbps={s.gbps:.3f}")


def _cmd_capture(args: argparse.Namespace) -> int:
    from .pcap_writer import PcapWriter

    if not args.npy and not args.pcap:
        print("capture: give --npy FILE and/or --pcap FILE", file=sys.stderr)
        return 2
    cap = _open_capture(args)
    data: list[np.ndarray] = []
    present: list[np.ndarray] = []
    ids: list[int] = []
    writer = PcapWriter(args.pcap, dport=cap.port or 10000) if args.pcap else None

    def take(chunk: _core.Chunk) -> None:
        with chunk:
            if len(ids) >= args.chunks:
                return
            ids.append(chunk.chunk_id)
            if args.npy:
                data.append(chunk.data.copy())
                present.append(chunk.present.copy())
            if writer is not None:
                now = time.time()
                for slot in np.flatnonzero(chunk.present):
                    writer.write(chunk.data[slot].tobytes(), chunk.first_seq + int(slot), now)

    deadline = time.monotonic() + args.seconds if args.seconds else None
    last_received, last_change = 0, time.monotonic()
    with _stop_on_signals() as interrupted:
        try:
            with cap, _metrics(args, cap):
                print(f"capturing from {_where(args, cap)}", flush=True)
                while len(ids) < args.chunks and cap.running and not interrupted.is_set():
                    if deadline is not None and time.monotonic() > deadline:
                        break
                    for chunk in cap.chunks(timeout=0.1):
                        take(chunk)
                        break
                    received = cap.stats.received
                    if received != last_received:
                        last_received, last_change = received, time.monotonic()
                    elif args.idle and received and time.monotonic() - last_change > args.idle:
                        break
                cap.stop()  # flushes the chunks still open
                for chunk in cap.chunks(timeout=0):
                    take(chunk)
        finally:
            if writer is not None:
                writer.close()
        _write_npy(args, data, present, ids)
    if interrupted.is_set():
        print(f"interrupted: kept {len(ids)} chunks", file=sys.stderr)
    if args.pcap:
        print(f"wrote {args.pcap}")
    _print_stats(cap)
    return 130 if interrupted.is_set() else 0


def _where(args: argparse.Namespace, cap: Capture) -> str:
    if args.backend == "pcap":
        return str(args.pcap_in)
    if args.backend == "udp":
        host, _ = parse_endpoint(args.bind)
        return f"{host}:{cap.port}"
    return str(args.bind)


def _write_npy(
    args: argparse.Namespace, data: list[np.ndarray], present: list[np.ndarray], ids: list[int]
) -> None:
    if not args.npy:
        return
    base = Path(args.npy)
    stem = base.with_suffix("")
    np.save(base, np.stack(data) if data else np.zeros((0, 0, 0), np.uint8))
    np.save(f"{stem}.present.npy", np.stack(present) if present else np.zeros((0, 0), bool))
    np.save(f"{stem}.chunk_ids.npy", np.asarray(ids, dtype=np.int64))
    print(f"wrote {base}, {stem}.present.npy, {stem}.chunk_ids.npy ({len(ids)} chunks)")


def _cmd_monitor(args: argparse.Namespace) -> int:
    from .monitor import run_monitor

    cap = _open_capture(args)
    with _metrics(args, cap):
        run_monitor(cap, args.seconds, interval=args.interval)
    return 0


def _cmd_send(args: argparse.Namespace) -> int:
    from .faults import faulty_schedule

    host, port = parse_endpoint(args.dest)
    schedule = None
    if args.drop or args.duplicate or args.reorder or args.late:
        ppc = args.packets_per_chunk
        n_chunks = max(args.count // ppc, args.max_chunks + 3)
        f = faulty_schedule(
            n_chunks,
            ppc,
            args.max_chunks,
            np.random.default_rng(args.seed),
            drop_rate=args.drop,
            dup_rate=args.duplicate,
            reorder_rate=args.reorder,
            n_late=args.late,
        )
        schedule = f.schedule + np.uint64(args.first)
        print(
            f"schedule: {f.total} packets, dropped {len(f.dropped)}, duplicated "
            f"{len(f.duplicated)}, late {len(f.late)}, delayed {f.reordered}"
        )
    sender = _core.Sender(
        host=host,
        port=port,
        payload_size=args.payload,
        rate_gbps=args.rate,
        first=args.first,
        count=args.count,
        schedule=schedule,
        streams=args.streams,
        allow_remote=args.allow_remote,
    )
    sender.run()
    gbps = sender.packets_sent * args.payload * 8 / sender.elapsed / 1e9 if sender.elapsed else 0
    print(f"sent {sender.packets_sent} packets in {sender.elapsed:.3f} s ({gbps:.3f} Gb/s)")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    from .tools.bench import run_benchmarks

    return run_benchmarks(args)


def _cmd_hwcheck(args: argparse.Namespace) -> int:
    from .tools.hwcheck import run_hwcheck

    return run_hwcheck(args)


def _cmd_cluster(args: argparse.Namespace) -> int:
    from .cluster_cli import run

    return run(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="casper400g rx", description="Receive the core's UDP stream (casper400g_rx)."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    cap = sub.add_parser("capture", help="capture chunks to .npy and/or a pcap file")
    _add_engine_args(cap)
    cap.add_argument("--npy", help="write chunk data here (+ .present.npy, .chunk_ids.npy)")
    cap.add_argument("--pcap", help="write every received packet to this pcap file")
    cap.add_argument("--chunks", type=int, default=16, help="stop after this many chunks")
    cap.add_argument("--seconds", type=float, help="stop after this long")
    cap.add_argument("--idle", type=float, help="stop once no packet arrived for this long")
    cap.set_defaults(func=_cmd_capture)

    mon = sub.add_parser("monitor", help="live rate and loss display")
    _add_engine_args(mon)
    mon.add_argument("--seconds", type=float, help="stop after this long (default: Ctrl-C)")
    mon.add_argument("--interval", type=float, default=0.5, help="refresh period in seconds")
    mon.set_defaults(func=_cmd_monitor)

    send = sub.add_parser("send", help="send the example stream (loopback unless allowed)")
    send.add_argument("--dest", default="127.0.0.1:10000", help="IPv4:port")
    send.add_argument("--count", type=int, default=100_000)
    send.add_argument("--first", type=int, default=0, help="first sequence number")
    send.add_argument("--rate", type=float, default=1.0, help="Gb/s of payload; 0 = unlimited")
    send.add_argument("--payload", type=int, default=8192)
    send.add_argument("--streams", type=int, default=1, help="source sockets (flows)")
    send.add_argument("--drop", type=float, default=0.0, help="fraction of packets to drop")
    send.add_argument("--duplicate", type=float, default=0.0, help="fraction to send twice")
    send.add_argument("--reorder", type=float, default=0.0, help="fraction to delay")
    send.add_argument("--late", type=int, default=0, help="packets to re-send after the window")
    send.add_argument("--packets-per-chunk", type=int, default=1024, help="receiver's, for faults")
    send.add_argument("--max-chunks", type=int, default=4, help="receiver's, for faults")
    send.add_argument("--seed", type=int, default=0)
    send.add_argument("--allow-remote", action="store_true", help="allow non-loopback targets")
    send.set_defaults(func=_cmd_send)

    bench = sub.add_parser("bench", help="engine and loopback benchmarks (prints ratios)")
    bench.add_argument("--packets", type=int, default=1_000_000, help="mem-backend packets")
    bench.add_argument("--udp-seconds", type=float, default=1.0, help="per loopback rate trial")
    bench.add_argument("--skip-udp", action="store_true", help="only the mem-backend benchmark")
    bench.add_argument(
        "--queues",
        type=int,
        nargs="*",
        default=[2],
        help="queue counts of one capture to compare with one queue (default: 2)",
    )
    bench.add_argument("--spead2", action="store_true", help="also measure spead2 (if installed)")
    bench.add_argument(
        "--overload-queues",
        type=int,
        nargs="*",
        default=[],
        help="queue counts of one capture fed by the emulated NIC (copying and header-split "
        "paths): the zero-loss ladder, then 1.25x overload",
    )
    bench.add_argument(
        "--overload-rates",
        type=float,
        nargs="+",
        default=[2, 4, 8, 12, 16, 24, 32, 48, 64],
        help="offered Gb/s of the overload ladder, tried in order until one loses packets",
    )
    bench.add_argument(
        "--sender-threads",
        type=int,
        default=max(1, (os.cpu_count() or 1) // 4),
        help="loopback sender threads, each its own socket (default: a quarter of the CPUs)",
    )
    bench.set_defaults(func=_cmd_bench)

    from .tools.hwcheck import add_arguments as add_hwcheck_arguments

    hw = sub.add_parser("hwcheck", help="RDMA NICs, GPUs and PCIe topology for the ibv backend")
    add_hwcheck_arguments(hw)
    hw.set_defaults(func=_cmd_hwcheck)

    from .cluster_cli import add_arguments as add_cluster_arguments

    clu = sub.add_parser("cluster", help="captures on a Dask cluster, then the loss account")
    add_cluster_arguments(clu)
    clu.set_defaults(func=_cmd_cluster)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, OSError, _core.IbvUnavailableError) as e:
        # Bad addresses, ports in use, missing files, no rdma-core: the message names the cause.
        print(f"casper400g rx {args.command}: {e}", file=sys.stderr)
        return 1
