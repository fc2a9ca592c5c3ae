"""One capture into several GPUs (Delivery(devices=[...])), in one command with the
capture's defaults:

    python -m casper400g_rx.tools.bench_multigpu --out multigpu.md

On this host's GPUs (all of them, or --devices cuda:0 cuda:1), every figure next to a
reference measured in the same run:

1. References: each GPU's pinned host-to-device copy peak alone, and all of them at once.
2. The goal: --trials (3) trials of --seconds (10) at --rate (400) Gb/s offered. ONE
   capture as a user opens it for that rate: the header-data split against the emulated
   NIC (whole payloads written as a NIC's DMA writes them, or with --fill prefix only
   headers and a prefix), lanes, chunk size, pools and rings sized by rate_gbps alone,
   nothing pinned by hand; chunks round-robin over the GPUs; the consumer runs an FFT per
   chunk on the chunk's own GPU (CuPy: each packet 4096 complex int8 samples, a
   4096-point FFT per packet, the power summed per channel), queued on that GPU's stream,
   the chunk released behind it. Zero loss: no NIC drop, no lost, late or missing packet.
3. The highest zero-loss rate: a ladder of --ladder-seconds trials from the goal up (or
   down, if the goal lost), and the first losing rate again into host chunks only (no GPU
   stage), which tells the CPU side's limit from the GPUs'.

Rates are set against N x the same run's pinned H2D peak (each GPU's alone, summed).
--smoke runs the same steps at a low rate into host memory standing in for the GPUs
(_core.host_lanes), NumPy's FFT on a few packets of each chunk: the tool's plumbing, not
a figure.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import Capture, Chunking, Delivery, EmulatedNic, _core, gpu, sizing
from ..gpu import parse_device

PAYLOAD = 8192
GBIT = 1e9
CHANNELS = PAYLOAD // 2  # complex int8 samples per packet
Trial = dict[str, Any]


@dataclass(frozen=True)
class Setup:
    """What every trial of a run shares: the GPUs (or host lanes standing in, smoke),
    and what the emulated NIC's DMA writes."""

    devices: tuple[str, ...]
    fill: bool
    smoke: bool


def offered_packets(rate_gbps: float, seconds: float, ppc: int) -> int:
    """Packets of `seconds` at `rate_gbps`, in whole chunks (at least eight)."""
    return max(ppc * 8, int(rate_gbps * GBIT * seconds / (PAYLOAD * 8)) // ppc * ppc)


def verdict(stats: dict[str, Any], offered: int) -> tuple[bool, bool]:
    """(zero loss, every packet accounted) of a finished trial's stats: zero loss is no
    NIC drop, no lost or late packet and every offered packet placed; accounted is
    offered = received + NIC drops, received = placed + late + duplicate + rejected +
    discarded, and the GPUs' packets = placed - those in chunks the engine dropped."""
    drops = int(stats.get("nic_drops", 0))
    zero = drops == 0 and stats["lost"] == 0 and stats["late"] == 0 and stats["packets"] == offered
    placed = (
        stats["packets"]
        + stats["late"]
        + stats["duplicate"]
        + stats["rejected"]
        + stats["discarded"]
    )
    on_gpus = sum(d["packets"] for d in stats.get("gpus", []))
    accounted = (
        stats["received"] + drops == offered
        and placed == stats["received"]
        and (not stats.get("gpus") or on_gpus == stats["packets"] - stats["packets_dropped"])
    )
    return zero, accounted


class GpuFft:
    """An FFT per chunk on the chunk's GPU, queued on that GPU's own stream: each
    packet's payload as CHANNELS complex int8 samples (I, Q), a CHANNELS-point FFT per
    packet, the power summed per channel into the GPU's spectrum; the chunk goes back to
    its ring once the work queued on it has run."""

    def __init__(self, devices: Sequence[str]) -> None:
        import cupy

        self.cp = cupy
        self.streams: dict[int, Any] = {}
        self.spectra: dict[int, Any] = {}
        self.ffts: dict[int, int] = {}
        for name in devices:
            d = parse_device(name)
            assert d is not None
            with cupy.cuda.Device(d):
                self.streams[d] = cupy.cuda.Stream(non_blocking=True)
                self.spectra[d] = cupy.zeros(CHANNELS, cupy.float32)
            self.ffts[d] = 0

    def __call__(self, chunk: Any) -> None:
        cp, d = self.cp, chunk.device
        with cp.cuda.Device(d), self.streams[d]:
            x = cp.from_dlpack(chunk)  # the stream waits for the chunk's copy
            z = x.view(cp.int8).astype(cp.float32).view(cp.complex64)
            f = cp.fft.fft(z, axis=1)
            self.spectra[d] += (f.real * f.real + f.imag * f.imag).sum(axis=0)
            del x, z, f
            chunk.release()  # refilled only after the FFT queued on the stream
        self.ffts[d] += 1

    def finish(self) -> None:
        for s in self.streams.values():
            s.synchronize()


class HostFft:
    """--smoke: NumPy's FFT on a few packets of each chunk of a host lane."""

    ROWS = 8

    def __init__(self, devices: Sequence[str]) -> None:
        self.ffts = dict.fromkeys(range(len(devices)), 0)
        self.spectra = {i: np.zeros(CHANNELS, np.float32) for i in self.ffts}

    def __call__(self, chunk: Any) -> None:
        with chunk:
            x = chunk.data[: self.ROWS].view(np.int8).astype(np.float32).view(np.complex64)
            f = np.fft.fft(x, axis=1)
            self.spectra[chunk.lane] += (np.abs(f) ** 2).sum(axis=0).astype(np.float32)
            self.ffts[chunk.lane] += 1

    def finish(self) -> None:
        pass


def open_capture(setup: Setup, rate: float, count: int, to_gpus: bool = True) -> tuple[Any, Any]:
    """(the Capture, what the trial reads chunks and stats from) for `count` packets at
    `rate` Gb/s, sized by rate_gbps alone. to_gpus=False: into host chunks only."""
    source = EmulatedNic(count=count, nic_rate_gbps=rate, fill=setup.fill, split=True)
    chunking = Chunking(first_chunk=0)
    if not to_gpus or setup.smoke:
        cap = Capture(source, rate_gbps=rate, chunking=chunking)
        if not to_gpus:
            return cap, cap._cap
        lanes = _core.host_lanes(cap._cap, len(setup.devices), 0, None)
        return cap, gpu.StagedDelivery(cap._cap, lanes)
    cap = Capture(
        source, rate_gbps=rate, chunking=chunking, delivery=Delivery(devices=setup.devices)
    )
    return cap, cap._cap


def run_trial(
    setup: Setup,
    rate: float,
    seconds: float,
    consumer: Callable[[Sequence[str]], Any] | None,
    to_gpus: bool = True,
) -> Trial:
    """One capture of `seconds` at `rate`, every chunk through `consumer` (None: released
    at once); its figures and counters, read before the capture stops."""
    ppc = sizing.chunk_packets(rate, PAYLOAD)
    count = offered_packets(rate, seconds, ppc)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cap, run = open_capture(setup, rate, count, to_gpus)
    work = consumer(setup.devices) if consumer is not None else None
    chunks = 0
    t_cpu0, t0 = time.process_time(), time.perf_counter()
    run.start()
    while (chunk := run.next_chunk(5.0)) is not None:
        chunks += 1
        if work is None:
            chunk.release()
        else:
            work(chunk)
    if work is not None:
        work.finish()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - t_cpu0
    s = dict(run.stats)
    run.stop()
    if "nic_drops" not in s:
        s["nic_drops"] = 0
    zero, accounted = verdict(s, count)
    return {
        "rate": rate,
        "seconds": seconds,
        "offered": count,
        "ok": zero,
        "accounted": accounted,
        "achieved": s["packets"] * PAYLOAD * 8 / wall / GBIT,
        "lanes": cap.sizing.queues if cap.sizing else None,
        "ppc": cap.config.packets_per_chunk,
        "n_chunks": cap.config.n_chunks,
        "gpus": s.get("gpus", []),
        "ffts": dict(work.ffts) if work is not None else {},
        "chunks": chunks,
        "cores_busy": cpu / wall,
        "warnings": [str(w.message) for w in caught],
        **{k: int(s.get(k, 0)) for k in ("nic_drops", "lost", "late", "packets", "waits")},
        **{k: int(s.get(k, 0)) for k in ("gpu_waits", "gpu_chunks_dropped", "n_gpu_chunks")},
    }


def h2d_peaks(devices: Sequence[str], nbytes: int = 256 << 20, reps: int = 20) -> Trial:
    """Pinned host -> device cudaMemcpyAsync Gb/s of each GPU alone, and of all at once
    (a thread per GPU, started together; the sum of their rates)."""
    import cupy

    from .bench_gpu import copy_gbps

    kind = cupy.cuda.runtime.memcpyHostToDevice
    bufs = {}
    for name in devices:
        d = parse_device(name)
        with cupy.cuda.Device(d):
            bufs[d] = (cupy.cuda.alloc_pinned_memory(nbytes), cupy.empty(nbytes, cupy.uint8))
    alone = {}
    for d, (host, dev) in bufs.items():
        with cupy.cuda.Device(d):
            alone[d] = copy_gbps(cupy, dev.data.ptr, host.ptr, nbytes, kind, reps)
    together = dict.fromkeys(bufs, 0.0)
    start = threading.Barrier(len(bufs))

    def copy(d: int) -> None:
        host, dev = bufs[d]
        with cupy.cuda.Device(d):
            start.wait()
            together[d] = copy_gbps(cupy, dev.data.ptr, host.ptr, nbytes, kind, 2 * reps)

    threads = [threading.Thread(target=copy, args=(d,)) for d in bufs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"alone": alone, "together": together}


def ladder_rates(goal: float, ok: bool, up: Sequence[float], down: Sequence[float]) -> list[float]:
    """The ladder after the goal's trials: up from the goal when it held, else down."""
    return [r for r in up if r > goal] if ok else [r for r in down if r < goal]


def climb(
    goal: Sequence[Trial],
    rates: Sequence[float],
    trial_at: Callable[[float], Trial],
    on_trial: Callable[[Trial], None],
) -> tuple[Trial | None, Trial | None]:
    """The ladder after the goal's trials: up from a goal that held in every trial, rate
    after rate until one loses; down from a goal that lost, until one holds. Returns the
    highest zero-loss trial and the first losing one (the ladder's, else the goal's),
    None where there is none."""
    if all(t["ok"] for t in goal):
        best = max(goal, key=lambda t: t["achieved"])
        for rate in rates:
            t = trial_at(rate)
            on_trial(t)
            if not t["ok"]:
                return best, t
            best = t
        return best, None
    failed = next(t for t in goal if not t["ok"])
    for rate in rates:
        t = trial_at(rate)
        on_trial(t)
        if t["ok"]:
            return t, failed
    return None, failed


def trial_row(label: str, t: Trial, peak: float) -> str:
    per = ", ".join(f"{d.get('device', d.get('lane'))}: {d['chunks']}" for d in t["gpus"]) or "-"
    return (
        f"| {label} | {t['rate']:.0f} | {t['achieved']:.1f} | {t['achieved'] / peak:.2f} | "
        f"{t['lanes']}, {t['ppc']}, {t['n_chunks']}, {t['n_gpu_chunks']} | {t['nic_drops']} | "
        f"{t['lost']} | {t['late']} | {per} | {t['cores_busy']:.1f} | {t['accounted']} | "
        f"{'yes' if t['ok'] else 'NO'} |"
    )


TABLE_HEAD = [
    "| trial | offered Gb/s | achieved Gb/s | ratio to N x H2D peak | lanes, chunk packets, "
    "host pool, GPU chunks | NIC drops | lost | late | chunks per GPU (an FFT each) | "
    "CPU cores busy | every packet accounted | zero loss |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
]


def describe(t: Trial) -> str:
    return (
        f"  offered {t['rate']:6.1f} Gb/s for {t['seconds']:g} s: "
        f"{'zero-loss' if t['ok'] else 'LOSS'} achieved {t['achieved']:6.1f} Gb/s, "
        f"nic_drops {t['nic_drops']}, lost {t['lost']}, late {t['late']}, waits {t['waits']}, "
        f"gpu_waits {t['gpu_waits']}, FFTs {t['ffts']}, accounted {t['accounted']}"
        + "".join(f"\n    warning: {w}" for w in t["warnings"])
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", help="write the results (Markdown) here")
    p.add_argument("--devices", nargs="+", help="GPUs to deliver into (default: every GPU)")
    p.add_argument("--rate", type=float, default=400.0, help="the goal's offered Gb/s")
    p.add_argument("--trials", type=int, default=3, help="trials at the goal's rate")
    p.add_argument("--seconds", type=float, default=10.0, help="per goal trial")
    p.add_argument("--ladder-seconds", type=float, default=3.0, help="per ladder trial")
    p.add_argument(
        "--ladder",
        type=float,
        nargs="+",
        default=[450, 500, 550, 600, 650, 700, 750, 800, 850],
        help="rates tried above the goal, in order, until one loses",
    )
    p.add_argument(
        "--ladder-down",
        type=float,
        nargs="+",
        default=[350, 300, 250, 200, 150, 100],
        help="rates tried below the goal when it lost",
    )
    p.add_argument(
        "--fill", choices=["payload", "prefix"], default="payload", help="what the DMA writes"
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="host memory standing in for the GPUs, at a low rate: the plumbing, not a figure",
    )
    args = p.parse_args(argv)
    command = " ".join(["python -m casper400g_rx.tools.bench_multigpu", *(argv or sys.argv[1:])])
    lines: list[str] = []

    def say(text: str) -> None:
        print(text, flush=True)

    def save() -> None:
        # After every step: a run cut short by a time limit keeps what it has.
        if args.out:
            with open(args.out, "w") as f:
                f.write("\n".join(lines) + "\n")

    if args.smoke:
        devices = tuple(args.devices or ("cuda:0", "cuda:1"))
        peak_each: dict[int, float] = {i: 1.0 for i in range(len(devices))}
        together: dict[int, float] = dict(peak_each)
        consumer: Callable[[Sequence[str]], Any] = HostFft
        names = ", ".join(f"host lane {i}" for i in range(len(devices)))
        say("smoke run: host memory stands in for the GPUs; the figures are not measurements")
    else:
        usable, why = gpu.cuda_status()
        if not usable:
            say(f"no usable CUDA device: {why}")
            return 2
        n = _core.cuda_device_count()
        devices = tuple(args.devices or (f"cuda:{i}" for i in range(n)))
        infos = [_core.cuda_device_info(parse_device(d) or 0) for d in devices]
        names = ", ".join(
            f"{d} {i['name']} ({i['sm_count']} SMs, PCI {i['pci_bus_id']}, "
            f"NUMA node {i['numa_node']})"
            for d, i in zip(devices, infos, strict=True)
        )
        peaks = h2d_peaks(devices)
        peak_each, together = peaks["alone"], peaks["together"]
        consumer = GpuFft
    setup = Setup(devices, args.fill == "payload", args.smoke)
    peak = sum(peak_each.values())
    lines += [
        f"# One capture into {len(devices)} GPUs: {names}; {os.cpu_count()} CPUs",
        "",
        f"Command: `{command}`",
        "",
        "References (same run): pinned host-to-device copy alone "
        + ", ".join(f"cuda:{d} {v:.1f} Gb/s" for d, v in peak_each.items())
        + f" (N x peak = {peak:.1f} Gb/s); all at once "
        + " + ".join(f"{v:.1f}" for v in together.values())
        + f" = {sum(together.values()):.1f} Gb/s.",
        f"Emulated DMA: {'whole payloads' if setup.fill else 'headers + prefix'}; chunks "
        "round-robin over the GPUs; an FFT per chunk on its GPU.",
    ]
    say(lines[0])
    say(lines[4])
    save()

    # Warm-up, not reported: CUDA contexts, pinning, cuFFT plans and CuPy's kernels.
    run_trial(setup, min(args.rate, 50.0 if not args.smoke else args.rate), 0.5, consumer)

    goal = args.rate
    say(f"goal: {args.trials} trials of {args.seconds:g} s at {goal:g} Gb/s offered")
    lines += ["", f"## {goal:g} Gb/s offered, {args.trials} trials of {args.seconds:g} s", ""]
    lines += TABLE_HEAD
    trials = []
    for i in range(args.trials):
        t = run_trial(setup, goal, args.seconds, consumer)
        say(describe(t))
        trials.append(t)
        lines.append(trial_row(str(i + 1), t, peak))
        save()
    held = sum(t["ok"] for t in trials)
    lines += ["", f"Zero loss in {held} of {args.trials} trials at {goal:g} Gb/s."]
    lines += [f"Warning: {w}" for w in sorted({w for t in trials for w in t["warnings"]})]

    rates = ladder_rates(goal, held == args.trials, args.ladder, args.ladder_down)
    say(f"ladder ({args.ladder_seconds:g} s per rate): {rates}")
    lines += ["", f"## Highest zero-loss rate ({args.ladder_seconds:g} s per rate)", ""]
    lines += TABLE_HEAD

    def rung(t: Trial) -> None:
        say(describe(t))
        lines.append(trial_row("ladder", t, peak))
        save()

    best, failed = climb(
        trials, rates, lambda rate: run_trial(setup, rate, args.ladder_seconds, consumer), rung
    )
    lines.append("")
    if best is not None:
        lines.append(
            f"Highest zero-loss rate: {best['rate']:g} Gb/s offered, {best['achieved']:.1f} "
            f"achieved = {best['achieved'] / peak:.2f} of N x the pinned H2D peak."
        )
    else:
        lines.append("No rate tried was zero-loss.")
    if failed is not None:
        ref = run_trial(setup, failed["rate"], args.ladder_seconds, None, to_gpus=False)
        say("  the same rate into host chunks only: " + describe(ref))
        lines.append(
            f"At {failed['rate']:g} Gb/s into host chunks only (no GPU stage): "
            f"{'zero-loss' if ref['ok'] else 'LOSS'}, achieved {ref['achieved']:.1f} Gb/s, "
            f"NIC drops {ref['nic_drops']}, lost {ref['lost']}."
        )
    save()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
