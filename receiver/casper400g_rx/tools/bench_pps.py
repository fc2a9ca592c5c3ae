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
MAX_MPPS = 30.0  # per thread: the stream is long enough for this rate over the trial


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

    @property
    def mpps_per_core(self) -> float:
        return self.packets / self.seconds / self.threads / 1e6

    @property
    def gbps_per_core(self) -> float:
        return self.mpps_per_core * 1e6 * self.payload * 8 / 1e9


def source_for(path: str, payload: int, queues: int, count: int) -> EmulatedNic:
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")
    return EmulatedNic(count=count, queues=queues, fill=False, split=path == "split")


def trial(path: str, payload: int, queues: int = 1, seconds: float = 1.0) -> PpsTrial:
    """Receives the unpaced example stream of `payload`-byte packets on `queues` receive
    threads of one capture for `seconds`."""
    if seconds <= 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    ppc = max(1024, CHUNK_BYTES // payload)
    # The stream's length, a bound the trial stops before: 30 Mpps or 400 Gb/s per
    # thread (the header-split emulation keeps 9 bytes per packet of it in memory).
    per_thread = min(MAX_MPPS * 1e6, 400e9 / (8 * payload))
    count = max(8 * ppc, int(seconds * per_thread * queues * 1.2) // ppc * ppc)
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
    try:
        t0 = time.perf_counter()
        stopped = False
        with cap:
            for chunk in cap.chunks(timeout=5):
                chunk.release()
                if not stopped and time.perf_counter() - t0 >= seconds:
                    cap.stop()
                    stopped = True
    finally:
        others.stop()
    s = cap.stats
    return PpsTrial(path, payload, queues, int(s.received), s.elapsed, plan.lane_cpus, stopped)


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
    """The results as a Markdown table: payload rows, a column pair per path."""
    by = {(t.path, t.payload): t for t in trials}
    paths = [p for p in PATHS if any(t.path == p for t in trials)]
    head = ["payload B"]
    for p in paths:
        head += [f"{p}: Mpps per core", f"{p}: Gb/s per core", f"{p}: ÷ {GOAL_MPPS:g} Mpps"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for payload in sorted({t.payload for t in trials}):
        cells = [str(payload)]
        for p in paths:
            t = by.get((p, payload))
            cells += (
                ["", "", ""]
                if t is None
                else [
                    f"{t.mpps_per_core:.2f}",
                    f"{t.gbps_per_core:.1f}",
                    f"{t.mpps_per_core / GOAL_MPPS:.2f}",
                ]
            )
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
    lines = [
        f"Mpps per receive core, {args.queues} receive thread(s), best of {args.trials} "
        f"trials of {args.seconds:g} s; {cpu_model()}, {len(os.sched_getaffinity(0))} CPUs "
        f"for this process",
        "",
    ]
    print(lines[0], flush=True)
    best: list[PpsTrial] = []
    for payload in args.payloads:
        for path in args.paths:
            runs = [trial(path, payload, args.queues, args.seconds) for _ in range(args.trials)]
            for r in runs:
                print(
                    f"  {path:5s} {payload:5d} B: {r.mpps_per_core:6.2f} Mpps per core "
                    f"({r.gbps_per_core:6.1f} Gb/s), CPUs {r.cpus}"
                    + ("" if r.stopped else f" (stream ended first: at least {MAX_MPPS:g})"),
                    flush=True,
                )
            best.append(max(runs, key=lambda r: r.mpps_per_core))
    lines += table(best)
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
