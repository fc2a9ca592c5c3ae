"""Packets per second per receive core, by payload size, on the two receive paths fed by
the emulated NIC (`python -m casper400g_rx.tools.bench_pps`; docs/benchmarks.md).

* copy: `EmulatedNic(split=False)`: a generator thread (the NIC, on a core of its own)
  writes each packet's sequence word into a receive ring; each queue's receive thread
  decodes it and copies the payload into its chunk slot. Figure: packets per second per
  receive thread.
* split: `EmulatedNic(split=True, fill=False)`: the header-data split. Each lane thread
  also plays its NIC queue -- it writes each frame's headers and payload prefix into the
  posted receive, as the NIC's DMA would, but not the payload -- and handles the
  completions. Figure: packets per second per lane core, the NIC's header writes
  included (a NIC makes them itself).

Each trial runs unpaced for `seconds` (the emulated NIC waits for the receive threads,
so nothing is lost) and is then stopped; the rate is the packets the capture received
from its start to its stop, over that time, per receive thread. The threads are placed
by the capture's own rule (placement.py: one physical core each, the consumer kept off
them). NVIDIA's DAQIRI reports about 20 Mpps per queue; GOAL_MPPS is that figure.

Beside it, the packets per second of CPU time the receive threads ran (Linux's per-thread
run time, /proc/self/task/*/schedstat): on a host whose cores are shared with other work
the wall-clock rate measures the share of a core the thread got as much as the receive
path, and this one only the path. On an idle host with pinned threads the two agree.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from .. import Capture, Chunking, EmulatedNic, Format
from ..affinity import KeepOff
from ..cpu_topology import Topology
from ..placement import Need, plan_placement

PAYLOADS = (64, 256, 1024, 1472, 8192)
PATHS = ("copy", "split")
GOAL_MPPS = 20.0
CHUNK_BYTES = 1 << 20  # at least 1 MiB per chunk: the consumer's per-chunk cost stays small
MAX_MPPS = 80.0  # per thread: the stream is long enough for this rate over the trial


@dataclass(frozen=True)
class PpsTrial:
    """One trial's outcome: `packets` received by `threads` receive threads in `seconds`,
    on CPUs `cpus` (None: not pinned); `stopped`: False when the stream ended first (the
    rate, drain included, is then a lower bound)."""

    path: str
    payload: int
    threads: int
    packets: int
    seconds: float
    cpus: tuple[int, ...] | None
    stopped: bool = True
    # Packets received by the time the receive threads had run `cpu_seconds` of CPU time
    # together (None: not measured, e.g. the stream ended first and the threads with it).
    cpu_packets: int = 0
    cpu_seconds: float | None = None

    @property
    def mpps_per_core(self) -> float:
        return self.packets / self.seconds / self.threads / 1e6

    @property
    def mpps_per_cpu_second(self) -> float | None:
        if not self.cpu_seconds:
            return None
        return self.cpu_packets / self.cpu_seconds / 1e6

    @property
    def gbps_per_core(self) -> float:
        return self.mpps_per_core * 1e6 * self.payload * 8 / 1e9


def source_for(path: str, payload: int, queues: int, count: int) -> EmulatedNic:
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")
    return EmulatedNic(count=count, queues=queues, fill=False, split=path == "split")


def _thread_ids() -> set[int]:
    return {int(t) for t in os.listdir("/proc/self/task")}


def _run_ns(tid: int) -> int | None:
    """CPU time thread `tid` of this process has run, in ns (None once it has ended)."""
    try:
        with open(f"/proc/self/task/{tid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def receive_threads(path: str, started: Sequence[int], queues: int) -> list[int]:
    """The receive threads among the capture's threads `started` (in the order the
    capture started them: its source's threads 0, 1, ...): on the copy path thread 0 is
    the emulated NIC's generator and 1..queues receive; on the split path every thread
    is a lane. Empty when the capture started other threads than these."""
    first = 1 if path == "copy" else 0
    if len(started) != first + queues:
        return []
    return list(started[first:])


def trial(path: str, payload: int, queues: int = 1, seconds: float = 1.0) -> PpsTrial:
    """Receives the unpaced example stream of `payload`-byte packets on `queues` receive
    threads of one capture for `seconds`."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    ppc = max(1024, CHUNK_BYTES // payload)
    # The stream's length, a bound the trial stops before: MAX_MPPS per thread (the
    # emulations count the example stream's packets, they do not list them).
    count = max(8 * ppc, int(seconds * MAX_MPPS * 1e6 * queues * 1.2) // ppc * ppc)
    source = source_for(path, payload, queues, count)
    plan = plan_placement(Need(source.pinned_threads()), Topology.read())
    if plan.lane_cpus is not None:
        source = source.with_cpus(plan.lane_cpus)
    cap = Capture(
        source,
        fmt=Format(payload_size=payload),
        chunking=Chunking(packets_per_chunk=ppc, first_chunk=0),
    )
    others = KeepOff(plan.lane_cpus, plan.other_cpus)
    others.start()
    cpu_packets, cpu_seconds = 0, None
    try:
        before = _thread_ids()
        t0 = time.perf_counter()
        stopped = False
        with cap:
            # Linux numbers threads in the order they start (a wrap of the id space
            # aside, which leaves the count check below to fail).
            lanes = receive_threads(path, sorted(_thread_ids() - before), queues)
            for chunk in cap.chunks(timeout=5):
                chunk.release()
                if not stopped and time.perf_counter() - t0 >= seconds:
                    run = [_run_ns(t) for t in lanes]
                    received = int(cap.stats.received)
                    if lanes and all(r is not None for r in run):
                        cpu_packets, cpu_seconds = received, sum(run) / 1e9  # type: ignore[misc]
                    cap.stop()
                    stopped = True
    finally:
        others.stop()
    s = cap.stats
    return PpsTrial(
        path,
        payload,
        queues,
        int(s.received),
        s.elapsed,
        plan.lane_cpus,
        stopped,
        cpu_packets,
        cpu_seconds,
    )


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def table(trials: Sequence[PpsTrial]) -> list[str]:
    """The results as a Markdown table: payload rows, columns per path; of several trials
    of a point, the best by each measure."""
    runs: dict[tuple[str, int], list[PpsTrial]] = {}
    for t in trials:
        runs.setdefault((t.path, t.payload), []).append(t)
    by = {k: max(v, key=lambda r: r.mpps_per_core) for k, v in runs.items()}
    per_cpu = {
        k: max((c for r in v if (c := r.mpps_per_cpu_second) is not None), default=None)
        for k, v in runs.items()
    }
    paths = [p for p in PATHS if any(t.path == p for t in trials)]
    head = ["payload B"]
    for p in paths:
        head += [
            f"{p}: Mpps per core",
            f"{p}: Gb/s per core",
            f"{p}: ÷ {GOAL_MPPS:g} Mpps",
            f"{p}: Mpps per CPU-second",
        ]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for payload in sorted({t.payload for t in trials}):
        cells = [str(payload)]
        for p in paths:
            t = by.get((p, payload))
            if t is None:
                cells += ["", "", "", ""]
                continue
            c = per_cpu[(p, payload)]
            at_least = "" if t.stopped else "≥ "  # the stream ended before the trial did
            cells += [
                f"{at_least}{t.mpps_per_core:.2f}",
                f"{t.gbps_per_core:.1f}",
                f"{t.mpps_per_core / GOAL_MPPS:.2f}",
                "" if c is None else f"{c:.2f}",
            ]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--payloads", type=int, nargs="+", default=list(PAYLOADS))
    p.add_argument("--paths", nargs="+", choices=PATHS, default=list(PATHS))
    p.add_argument("--queues", type=int, default=1, help="receive threads of the capture")
    p.add_argument("--seconds", type=float, default=2.0, help="per trial")
    p.add_argument("--trials", type=int, default=3, help="per point; the best is reported")
    p.add_argument("--out", help="also write the Markdown table here")
    args = p.parse_args(argv)
    load = os.getloadavg()
    lines = [
        f"Mpps per receive core, {args.queues} receive thread(s), best of {args.trials} "
        f"trials of {args.seconds:g} s; {cpu_model()}, {len(os.sched_getaffinity(0))} CPUs "
        f"for this process, load average {load[0]:.1f} at the start",
        "",
    ]
    print(lines[0], flush=True)
    done: list[PpsTrial] = []
    for payload in args.payloads:
        for path in args.paths:
            for _ in range(args.trials):
                r = trial(path, payload, args.queues, args.seconds)
                c = r.mpps_per_cpu_second
                print(
                    f"  {path:5s} {payload:5d} B: {r.mpps_per_core:6.2f} Mpps per core "
                    f"({r.gbps_per_core:6.1f} Gb/s), "
                    + ("" if c is None else f"{c:6.2f} Mpps per CPU-second, ")
                    + f"CPUs {r.cpus}"
                    + ("" if r.stopped else f" (stream ended first: at least {MAX_MPPS:g})"),
                    flush=True,
                )
                done.append(r)
    lines.append(f"load average {os.getloadavg()[0]:.1f} at the end")
    lines.append("")
    lines += table(done)
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
