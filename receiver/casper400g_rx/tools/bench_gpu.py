"""GPU benchmarks (scripts/gpu_check.sh runs them); every figure is printed next to a
reference measured in the same run, on the same GPU.

1. Into one GPU through host memory, against the pinned host-to-device copy peak:
   a. header-data split (the ibv backend's path): K emulated NIC queues, one pinned
      thread each, at a set total rate write each payload straight into its pinned
      chunk slot (streaming stores, as a NIC's DMA; or only headers + prefix) and place
      the completions -> one capture's cuMemcpyHtoDAsync -> GPU chunk ring;
   b. copying path: K NIC emulations (mem backend: a generator thread writes 8192-B
      example-stream packets into a receive ring at a set rate, a receive thread copies
      them into chunks) -> pinned host chunks -> cuMemcpyHtoDAsync -> GPU chunk ring.
   c. ONE capture whose K emulated NIC queues share its chunks (copying path, one
      generator thread, one pinned receive thread per queue, no lock per batch), the
      consumer reducing every GPU chunk with CuPy; then the same capture offered 1.25x
      its zero-loss rate (overload: delivered rate, every loss counted).
   d. ONE capture with its defaults, nothing set by hand (bench_defaults.py: sized and
      placed by `rate_gbps` alone), header-data split against the emulated NIC, whole
      payload or headers + prefix, the spectrometer consuming every chunk; a rate
      ladder, 3 trials of 10 s at 400 Gb/s, then 1.25x the zero-loss rate (overload).
   The highest aggregate zero-loss rate of each.
2. GPUDirect reorder kernels over a filled GPU arrival ring: payload Gb/s against the
   device-to-device copy bandwidth, per number of scatter blocks (SM footprint), and
   per batch size (the cost of one launch pair per batch).
3. DLPack hand-off: pointer identity and time per chunk (CuPy, PyTorch).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import Capture, Chunking, Delivery, EmulatedNic, MemSource, _core
from . import bench_defaults

PAYLOAD = 8192
GBIT = 1e9


def _cupy() -> Any:
    import cupy

    return cupy


def copy_gbps(cp: Any, dst: int, src: int, nbytes: int, kind: int, reps: int) -> float:
    """Bytes per second (Gb/s) that `reps` cudaMemcpyAsync of `nbytes` from `src` to `dst`
    copy, timed on the stream after one untimed copy."""
    s = cp.cuda.Stream(non_blocking=True)
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    cp.cuda.runtime.memcpyAsync(dst, src, nbytes, kind, s.ptr)
    e0.record(s)
    for _ in range(reps):
        cp.cuda.runtime.memcpyAsync(dst, src, nbytes, kind, s.ptr)
    e1.record(s)
    e1.synchronize()
    return reps * nbytes * 8 / (cp.cuda.get_elapsed_time(e0, e1) / 1e3) / GBIT


def h2d_peak_gbps(nbytes: int = 256 << 20, reps: int = 20) -> float:
    """Pinned host -> device cudaMemcpyAsync bandwidth (Gb/s), CuPy."""
    cp = _cupy()
    host = cp.cuda.alloc_pinned_memory(nbytes)
    dev = cp.empty(nbytes, dtype=cp.uint8)
    kind = cp.cuda.runtime.memcpyHostToDevice
    return copy_gbps(cp, dev.data.ptr, host.ptr, nbytes, kind, reps)


def d2d_gbps(nbytes: int = 1 << 30, reps: int = 10) -> float:
    """Device-to-device cudaMemcpyAsync: bytes copied per second, in Gb/s."""
    cp = _cupy()
    a = cp.ones(nbytes, dtype=cp.uint8)
    b = cp.empty_like(a)
    kind = cp.cuda.runtime.memcpyDeviceToDevice
    return copy_gbps(cp, b.data.ptr, a.data.ptr, nbytes, kind, reps)


def memcpy_gbps(threads: int, seconds: float = 0.5, block: int = 8 << 20) -> float:
    """Aggregate host memcpy bandwidth of `threads` threads (NumPy, GIL released),
    in Gb/s of bytes copied: the ceiling of a copy-based receive path."""
    done = [0] * threads

    def work(i: int) -> None:
        src = np.ones(block, np.uint8)
        dst = np.empty((4, block), np.uint8)
        end = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < end:
            np.copyto(dst[n % 4], src)
            n += 1
        done[i] = n

    ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(done) * block * 8 / (time.perf_counter() - t0) / GBIT


def receive_cpus(k: int) -> list[int] | None:
    """2K CPUs for K (generator, receiver) pairs, receivers on distinct physical cores
    first (a receiver sharing a core with another busy thread copies at half speed)."""
    if 2 * k >= (os.cpu_count() or 1):
        return None
    return physical_core_cpus()[: 2 * k]


def run_captures(
    caps: list[Capture], pinned: list[int] | None, nic_drops_from_source: bool = False
) -> tuple[list[int], float, float, list[dict[str, Any]]]:
    """Runs the captures together, a consumer thread each releasing every chunk, with this
    process kept off the `pinned` CPUs (the receive and emulated NIC threads'); returns
    the chunks each consumer got, the wall and CPU seconds, and each capture's stats
    (read before it stops). nic_drops_from_source: host-chunk captures, whose stats lack
    the emulated NIC's drops (the GPU wrapper adds them), ask the source."""
    ncpu = os.cpu_count() or 1
    got = [0] * len(caps)

    def consume(i: int) -> None:
        for chunk in caps[i].chunks(timeout=5):
            got[i] += 1
            chunk.release()

    saved = os.sched_getaffinity(0)
    if pinned:
        os.sched_setaffinity(0, set(range(ncpu)) - set(pinned))
    threads = [threading.Thread(target=consume, args=(i,)) for i in range(len(caps))]
    t_cpu0, t0 = time.process_time(), time.perf_counter()
    try:
        for c in caps:
            c.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        cpu = time.process_time() - t_cpu0
        stats = [dict(c.stats) for c in caps]
        if nic_drops_from_source:
            for st, c in zip(stats, caps, strict=True):
                st["nic_drops"] = _core.emu_nic_drops(c._cap) or 0
        for c in caps:
            c.stop()
    finally:
        os.sched_setaffinity(0, saved)
    return got, wall, cpu, stats


def consume_summing(cap: Capture, cp: Any) -> int:
    """Consumes every chunk of `cap` as a user's pipeline would: with CuPy (`cp`), sums
    every payload byte of each GPU chunk (real work per chunk) before releasing it; with
    cp None, releases host chunks at once. Returns the number of chunks."""
    got = 0
    checksum = cp.zeros((), dtype=cp.uint64) if cp is not None else None
    with cap:
        for chunk in cap.chunks(timeout=5):
            if cp is not None:
                checksum += cp.from_dlpack(chunk).sum(dtype=cp.uint64)
            got += 1
            chunk.release()
    if cp is not None:
        cp.cuda.get_current_stream().synchronize()
    return got


def host_path_trial(
    rate_gbps: float, k: int, seconds: float, ppc: int, device: str = "cuda:0"
) -> dict[str, Any]:
    """K emulated NIC queues sharing `rate_gbps`, all delivering into `device`."""
    per = rate_gbps / k
    count = max(ppc * 8, int(per * GBIT * seconds / (PAYLOAD * 8)) // ppc * ppc)
    pinned = receive_cpus(k)
    caps = []
    for i in range(k):
        # Receiver first (a physical core of its own), generator on the later CPUs.
        cpus = [pinned[k + i], pinned[i]] if pinned else None
        caps.append(
            Capture(
                EmulatedNic(count=count, first=0, nic_rate_gbps=per, cpus=cpus),
                chunking=Chunking(first_chunk=0, packets_per_chunk=ppc, max_chunks=4, n_chunks=12),
                delivery=Delivery(device=device, gpu_chunks=6 if device != "cpu" else 0),
            )
        )
    got, wall, cpu, stats = run_captures(caps, pinned, nic_drops_from_source=device == "cpu")
    packets = sum(s["packets"] for s in stats)
    drops = sum(s.get("nic_drops", 0) for s in stats)
    lost = sum(s["lost"] for s in stats)
    ok = drops == 0 and lost == 0 and packets == count * k and all(g == count // ppc for g in got)
    return {
        "rate": rate_gbps,
        "ok": ok,
        "achieved": packets * PAYLOAD * 8 / wall / GBIT,
        "nic_drops": drops,
        "lost": lost,
        "cores_busy": cpu / wall,
        "per_queue": [
            {k: s.get(k, 0) for k in ("packets", "nic_drops", "waits", "gpu_waits", "lost")}
            for s in stats
        ],
    }


Trial = dict[str, Any]


def climb(
    rates: Sequence[float],
    trial_at: Callable[[float], Trial],
    describe: Callable[[float, Trial], str],
    on_loss: Callable[[float, Trial], None] | None = None,
) -> tuple[Trial | None, Trial | None]:
    """A rate ladder: tries `rates` in order, printing each trial as `describe` says, until
    one loses a packet (`on_loss` then looks into why). Returns the highest zero-loss
    trial and the losing one (None where there is none)."""
    best = None
    for rate in rates:
        trial = trial_at(rate)
        print(describe(rate, trial), flush=True)
        if not trial["ok"]:
            if on_loss is not None:
                on_loss(rate, trial)
            return best, trial
        best = trial
    return best, None


def trial_line(label: str, rate: float, trial: Trial) -> str:
    """A ladder trial's line up to the rate it achieved: what was offered, and whether
    it lost any packet."""
    verdict = "zero-loss" if trial["ok"] else "LOSS"
    return f"  {label} offered {rate:6.1f} Gb/s: {verdict} achieved {trial['achieved']:6.1f} Gb/s"


def host_only_line(what: str, ref: Trial) -> str:
    """A losing rate tried again into host chunks only: whether the GPU stage lost."""
    verdict = "zero-loss" if ref["ok"] else "LOSS"
    return (
        f"    {what}: {verdict}, achieved {ref['achieved']:.1f} Gb/s, nic_drops {ref['nic_drops']}"
    )


def bench_host_path(args: argparse.Namespace, peak: float) -> list[dict[str, Any]]:
    return [{"queues": k, "best": host_ladder(args, k), "peak": peak} for k in args.queues]


def host_ladder(args: argparse.Namespace, k: int) -> Trial | None:
    """Benchmark 1b's ladder for K queues: its highest zero-loss trial."""

    def trial_at(rate: float, device: str = "cuda:0") -> Trial:
        return host_path_trial(rate, k, args.seconds, args.ppc, device=device)

    def describe(rate: float, trial: Trial) -> str:
        return (
            trial_line(f"host path K={k}", rate, trial)
            + f", nic_drops {trial['nic_drops']}, CPU cores busy {trial['cores_busy']:.1f}"
        )

    def without_gpu(rate: float, trial: Trial) -> None:
        print(f"    per queue: {trial['per_queue']}", flush=True)
        ref = trial_at(rate, device="cpu")
        print(host_only_line("same rate without the GPU stage (host chunks only)", ref), flush=True)

    return climb(args.rates, trial_at, describe, without_gpu)[0]


def shared_capture_trial(
    rate_gbps: float, k: int, seconds: float, ppc: int, device: str = "cuda:0"
) -> dict[str, Any]:
    """ONE capture, K emulated NIC queues sharing its chunks, delivering into `device`;
    the consumer sums every payload byte of each GPU chunk (CuPy) before releasing it."""
    cp = _cupy()
    count = max(ppc * 8, int(rate_gbps * GBIT * seconds / (PAYLOAD * 8)) // ppc * ppc)
    cores = physical_core_cpus()
    pinned = cores[: k + 1] if k + 1 < len(cores) else None
    cap = Capture(
        EmulatedNic(count=count, nic_rate_gbps=rate_gbps, fill=False, queues=k, cpus=pinned),
        chunking=Chunking(first_chunk=0, packets_per_chunk=ppc, max_chunks=4, n_chunks=8 + 2 * k),
        delivery=Delivery(device=device, gpu_chunks=8),
    )
    saved = os.sched_getaffinity(0)
    ncpu = os.cpu_count() or 1
    if pinned and ncpu > len(pinned):
        os.sched_setaffinity(0, set(range(ncpu)) - set(pinned))
    t_cpu0, t0 = time.process_time(), time.perf_counter()
    got = consume_summing(cap, cp)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - t_cpu0
    os.sched_setaffinity(0, saved)
    s = cap.stats
    drops = s.get("nic_drops", 0)
    ok = drops == 0 and s["lost"] == 0 and s["packets"] == count
    return {
        "rate": rate_gbps,
        "ok": ok,
        "achieved": s["packets"] * PAYLOAD * 8 / wall / GBIT,
        "offered_packets": count,
        "packets": s["packets"],
        "nic_drops": drops,
        "lost": s["lost"],
        "late": s["late"],
        "queue_stalls": s["queue_stalls"],
        "queue_skips": s["queue_skips"],
        # Skipped packets of a lagging queue count late, those of chunks given up for want
        # of a free one no_free_chunk: placed + dropped + each reason = offered.
        "no_free_chunk": s.get("no_free_chunk", 0),
        "accounted": s["packets"]
        + drops
        + sum(s.get(k, 0) for k in ("late", "discarded", "no_free_chunk", "out_of_window"))
        == count,
        "chunks": got,
        # Of the delivered chunks' slots, the share that holds a packet.
        "fill": s["packets"] / (got * cap.config.packets_per_chunk) if got else 0.0,
        "cores_busy": cpu / wall,
    }


def bench_shared_capture(args: argparse.Namespace, peak: float) -> list[dict[str, Any]]:
    # Warm-up, not reported: CUDA context, CuPy's reduction kernel compilation and the
    # first pinning of host memory would otherwise fall into the first trial.
    shared_capture_trial(50.0, 2, 0.3, args.ppc)
    rows = []
    for k in args.shared_queues:

        def describe(rate: float, trial: Trial, k: int = k) -> str:
            return trial_line(f"one capture K={k}", rate, trial) + (
                f", nic_drops {trial['nic_drops']}, lost {trial['lost']}, queue_stalls "
                f"{trial['queue_stalls']}, CPU cores busy {trial['cores_busy']:.1f}"
            )

        best, _ = climb(
            args.shared_capture_rates,
            lambda rate, k=k: shared_capture_trial(rate, k, args.seconds, args.ppc),
            describe,
        )
        over = None
        if best is not None:
            over = shared_capture_trial(1.25 * best["rate"], k, args.seconds, args.ppc)
            print(
                f"  overload 1.25x = {over['rate']:.1f} Gb/s: achieved {over['achieved']:.1f} "
                f"Gb/s ({over['achieved'] / best['achieved']:.2f} of zero-loss), nic_drops "
                f"{over['nic_drops']}, lost {over['lost']}, late {over['late']}, queue_skips "
                f"{over['queue_skips']}, queue_stalls {over['queue_stalls']}, every packet "
                f"accounted {over['accounted']}",
                flush=True,
            )
        rows.append({"queues": k, "best": best, "over": over, "peak": peak})
    return rows


def bench_default_capture(args: argparse.Namespace, peak: float) -> list[dict[str, Any]]:
    cfg = defaults_config(args)
    # Warm-up, not reported: the CUDA context, the first pinning of host memory.
    bench_defaults.trial(50.0, False, 0.3, cfg.spectrometer(cfg.device), cfg.device)
    out = []
    for fill in args.default_fill:
        print(f"  emulated DMA: {DMA[fill]}", flush=True)
        out.append(bench_defaults.run_defaults(cfg, fill == "payload", peak))
    return out


def defaults_config(args: argparse.Namespace) -> bench_defaults.DefaultsConfig:
    return bench_defaults.DefaultsConfig(
        rates=args.default_rates,
        ladder_seconds=args.seconds,
        target=args.default_target,
        trials=args.default_trials,
        trial_seconds=args.default_trial_seconds,
    )


def physical_core_cpus() -> list[int]:
    """CPUs ordered one per physical core first, then their hyperthread siblings."""
    ncpu = os.cpu_count() or 1
    seen: set[str] = set()
    firsts, seconds_ = [], []
    for c in range(ncpu):
        try:
            with open(f"/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list") as f:
                core = f.read().strip()
        except OSError:
            core = str(c)
        (seconds_ if core in seen else firsts).append(c)
        seen.add(core)
    return firsts + seconds_


def split_path_trial(
    rate_gbps: float,
    k: int,
    seconds: float,
    ppc: int,
    fill: bool,
    device: str = "cuda:0",
    per_queue: bool = True,
) -> dict[str, Any]:
    """K emulated NIC queues (header-data split), one pinned thread each, at `rate_gbps`
    in total, delivering into `device` (or into host chunks only, device="cpu").
    per_queue: K captures of one queue each (a stream per port, each with its own
    engine and GPU copy stream); else one capture whose K queues share one engine."""
    n_caps = k if per_queue else 1
    total = int(rate_gbps * GBIT * seconds / (PAYLOAD * 8))
    count = max(ppc * 8, total // n_caps // ppc * ppc)
    ncpu = os.cpu_count() or 1
    order = physical_core_cpus()
    # Queue threads on their own physical cores; copy, recycle and consumer threads
    # (and Python) keep off them.
    pinned = order[:k] if k < ncpu else None
    caps = []
    for c in range(n_caps):
        qs = 1 if per_queue else k
        cpus = (pinned[c : c + 1] if per_queue else pinned) if pinned else None
        caps.append(
            Capture(
                EmulatedNic(
                    queues=qs,
                    depth=1024,
                    count=count,
                    first=0,
                    nic_rate_gbps=rate_gbps / n_caps,
                    fill=fill,
                    cpus=cpus,
                    split=True,
                ),
                chunking=Chunking(
                    first_chunk=0,
                    packets_per_chunk=ppc,
                    max_chunks=4,
                    n_chunks=12 if per_queue else 0,
                ),
                delivery=Delivery(device=device, gpu_chunks=4 if device != "cpu" else 0),
            )
        )
    got, wall, cpu, stats = run_captures(caps, pinned)

    def total_of(key: str) -> int:
        return sum(int(s.get(key, 0)) for s in stats)

    packets = total_of("packets")
    ok = (
        total_of("nic_drops") == 0
        and total_of("lost") == 0
        and packets == count * n_caps
        and all(g == count // ppc for g in got)
        and total_of("gpu_chunks_dropped") == 0
    )
    return {
        "rate": rate_gbps,
        "ok": ok,
        "achieved": packets * PAYLOAD * 8 / wall / GBIT,
        "nic_drops": total_of("nic_drops"),
        "lost": total_of("lost"),
        "cores_busy": cpu / wall,
        "detail": {
            key: total_of(key)
            for key in ("packets", "in_place", "fixup_copies", "waits", "gpu_waits", "chunks")
        },
    }


def bench_split_path(args: argparse.Namespace, peak: float) -> list[dict[str, Any]]:
    rows = []
    for mode in args.split_mode:
        for fill in args.split_fill:
            for k in args.split_queues:
                best = split_ladder(args, peak, mode, fill, k)
                rows.append({"mode": mode, "fill": fill, "queues": k, "best": best})
    return rows


def split_ladder(
    args: argparse.Namespace, peak: float, mode: str, fill: str, k: int
) -> Trial | None:
    """Benchmark 1a's ladder for one mode, DMA fill and number of queues: its highest
    zero-loss trial."""
    per_queue = mode == "per-queue"

    def trial_at(rate: float, device: str = "cuda:0") -> Trial:
        return split_path_trial(
            rate, k, args.seconds, args.ppc, fill == "payload", device=device, per_queue=per_queue
        )

    def describe(rate: float, trial: Trial) -> str:
        return trial_line(f"split path ({mode}, {fill} DMA) K={k}", rate, trial) + (
            f" ({trial['achieved'] / peak:.2f} of H2D peak), nic_drops {trial['nic_drops']}, "
            f"lost {trial['lost']}, CPU cores busy {trial['cores_busy']:.1f}, {trial['detail']}"
        )

    def without_gpu(rate: float, trial: Trial) -> None:
        ref = trial_at(rate, device="cpu")
        print(host_only_line("same rate into host chunks only (no GPU stage)", ref), flush=True)

    rates = args.split_rates if per_queue else args.shared_rates
    return climb(rates, trial_at, describe, without_gpu)[0]


def ring_pass_delivery(blocks: int, batch: int, ring: int) -> Delivery:
    """GPUDirect into cuda:0 with an arrival ring of `ring` packets that one timed pass
    fills: every launch group of the pass in flight at once."""
    return Delivery(
        device="cuda:0",
        gpudirect=True,
        gpu_options={
            "blocks": blocks,
            "batch": batch,
            "ring_packets": ring,
            "slots": ring // batch + 2,
        },
    )


def gpudirect_pass(
    blocks: int, batch: int, ring: int, ppc: int, control_only: bool = False
) -> float:
    """Payload Gb/s of the reorder kernels over one pass of a filled arrival ring."""
    chunks = ring // ppc
    cap = Capture(
        MemSource(count=ring),
        chunking=Chunking(packets_per_chunk=ppc, max_chunks=4, n_chunks=chunks + 6, first_chunk=0),
        delivery=ring_pass_delivery(blocks, batch, ring),
    )
    seconds = cap._cap.time_ring_pass(control_only)
    if control_only:
        return ring * PAYLOAD * 8 / seconds / GBIT
    s = cap.stats
    if s["packets"] != ring or s["rejected"] or s["late"]:
        raise RuntimeError(f"reorder benchmark misplaced packets: {s}")
    return ring * PAYLOAD * 8 / seconds / GBIT


def bench_dlpack(n_chunks: int = 64, ppc: int = 1024) -> dict[str, Any]:
    cp = _cupy()
    out: dict[str, Any] = {}
    try:
        import torch
    except ImportError:
        torch = None
    cap = Capture(
        MemSource(count=n_chunks * ppc),
        chunking=Chunking(packets_per_chunk=ppc),
        delivery=Delivery(device="cuda:0"),
    )
    t_cp: list[float] = []
    t_torch: list[float] = []
    same = True
    with cap:
        for chunk in cap.chunks(timeout=10):
            t0 = time.perf_counter()
            x = cp.from_dlpack(chunk)
            t_cp.append(time.perf_counter() - t0)
            same &= x.data.ptr == chunk.ptr
            if torch is not None:
                t0 = time.perf_counter()
                y = torch.from_dlpack(chunk)
                t_torch.append(time.perf_counter() - t0)
                same &= y.data_ptr() == chunk.ptr
                del y
            del x
            chunk.release()
    out["chunks"] = len(t_cp)
    out["same_pointer"] = bool(same)
    out["cupy_us"] = float(np.median(t_cp) * 1e6)
    out["torch_us"] = float(np.median(t_torch) * 1e6) if t_torch else None
    out["chunk_mib"] = ppc * PAYLOAD / 2**20
    return out


def loopback_benchmarks(args: argparse.Namespace) -> list[str]:
    """The CPU-side figures on this host: spead2 side by side (SPEAD heaps from memory, the
    engines alone; then over loopback, one receive thread each, a multi-threaded sender),
    and the udp backend's SO_REUSEPORT scaling."""
    import contextlib
    import io

    from . import bench
    from .bench_spead2 import compare_spead_from_memory, compare_with_spead2

    st = args.sender_threads
    out = io.StringIO()

    class Tee(io.TextIOBase):
        # Shown as it comes (a run cut short by its time limit still shows what it did).
        def write(self, text: str) -> int:
            sys.__stdout__.write(text)
            sys.__stdout__.flush()
            return out.write(text)

    with contextlib.redirect_stdout(Tee()):
        if not args.udp_only:
            alone = bench.sender_alone_gbps(args.udp_seconds, st)
            print(f"loopback sender alone ({st} threads): {alone:.2f} Gb/s")
            compare_spead_from_memory()  # the engines alone, SPEAD heaps from memory
            compare_with_spead2(args.udp_seconds, attempts=2, sender_threads=st)
        # SO_REUSEPORT scaling: a sender of more threads, so that it outruns several
        # receive threads; the sockets share the stream by sequence-number blocks.
        ust, gso = args.udp_sender_threads, args.udp_gso
        alone_u = bench.sender_alone_gbps(1.0, ust, gso)
        how = f", {gso} datagrams per GSO send" if gso > 1 else ""
        print(f"loopback sender alone ({ust} threads{how}): {alone_u:.2f} Gb/s")
        base = None
        for k in [1, *args.udp_queues]:
            failed: list[tuple[float, dict]] = []
            best, achieved = bench.highest_lossless_rate(
                lambda rate, seconds, k=k: bench.udp_trial(
                    rate, seconds, threads=k, sender_threads=ust, gso_segments=gso
                ),
                args.udp_seconds,
                start=8.0,
                steps=3,
                attempts=2,
                failed=failed,
            )
            base = achieved if k == 1 else base
            ratio = achieved / (k * base) if base else 0.0
            print(
                f"udp, {k} SO_REUSEPORT thread(s), one capture: highest zero-loss {best:.2f} Gb/s "
                f"offered, {achieved:.2f} achieved (ratio to {k} x 1 thread {ratio:.2f})"
            )
            for rate, s in failed[-2:]:
                keys = (
                    "packets",
                    "lost",
                    "late",
                    "kernel_drops",
                    "queue_stalls",
                    "queue_skips",
                    "sender_threads",
                    "pinned",
                    "sender_lag_ms",
                    "window_ms",
                )
                print(
                    f"    failed at {rate:.2f} Gb/s (sender achieved {s['achieved']:.2f}): "
                    + ", ".join(f"{key} {s.get(key, 0)}" for key in keys)
                    + f", per thread {s.get('queue_received')}"
                )
    text = out.getvalue()
    return ["```", *text.rstrip().splitlines(), "```"]


DMA = {"payload": "whole payload", "prefix": "headers + prefix"}
# The columns every ladder's best trial fills (ladder_cells), after its offered rate.
LADDER_COLUMNS = ("achieved Gb/s", "ratio to pinned H2D peak", "CPU cores busy")


def ladder_cells(best: dict[str, Any], peak: float) -> list[str]:
    return [
        f"{best['achieved']:.1f}",
        f"{best['achieved'] / peak:.2f}",
        f"{best['cores_busy']:.1f}",
    ]


def ladder_row(
    lead: Sequence[str], cells: Sequence[str] | None, width: int, tail: Sequence[str] = ()
) -> list[str]:
    """A table row of a rate ladder: the row's labels, then the best trial's cells, or a
    note that no rate tried was zero-loss (blank cells to `width`), then `tail`."""
    if cells is None:
        cells = ["none of the rates tried", *[""] * (width - len(lead) - len(tail) - 1)]
    return [*lead, *cells, *tail]


def md_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A results section: its heading and a Markdown table."""
    return [
        "",
        f"## {title}",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(r) + " |" for r in rows),
    ]


# A ladder row's parts for ladder_row: its labels, the best trial's cells (None: no rate
# tried was zero-loss) and what follows them.
LadderParts = tuple[list[str], list[str] | None, list[str]]


def overload_cell(best: dict[str, Any], over: dict[str, Any]) -> str:
    return f"{over['achieved']:.1f} ({over['achieved'] / best['achieved']:.2f})"


def default_row(r: dict[str, Any], peak: float) -> LadderParts:
    cells = bench_defaults.summary(r)
    return cells[:1], cells[1:], []


def rate_cells(b: dict[str, Any] | None, peak: float) -> list[str] | None:
    return None if b is None else [f"{b['rate']:.0f}", *ladder_cells(b, peak)]


def split_row(r: dict[str, Any], peak: float) -> LadderParts:
    caps = "one per queue" if r["mode"] == "per-queue" else "one, shared engine"
    return [caps, DMA[r["fill"]], str(r["queues"])], rate_cells(r["best"], peak), []


def host_row(r: dict[str, Any], peak: float) -> LadderParts:
    return [str(r["queues"])], rate_cells(r["best"], peak), []


def shared_row(r: dict[str, Any], peak: float) -> LadderParts:
    b, o = r["best"], r["over"]
    cells = rate_cells(b, peak)
    if cells is not None:
        cells += [overload_cell(b, o), f"{o['accounted']}"]
    return [str(r["queues"])], cells, []


@dataclass(frozen=True)
class HostSection:
    """One table of benchmark 1: the argument that leaves it out, the line printed as it
    starts, its trials, the row a trial's result makes, and the table's title and columns."""

    skip: str
    heading: str
    bench: Callable[[argparse.Namespace, float], list[dict[str, Any]]]
    row: Callable[[dict[str, Any], float], LadderParts]
    title: str
    columns: tuple[str, ...]


def host_sections() -> list[HostSection]:
    """Benchmark 1's tables in the order they run (built per call, so that the trial
    functions are looked up when the benchmark runs)."""
    return [
        HostSection(
            "skip_default",
            "1d. one capture with its defaults (header-data split), into one GPU",
            bench_default_capture,
            default_row,
            "1d. ONE capture with its defaults, `Capture(EmulatedNic(count, nic_rate_gbps=R, "
            "fill, split=True), rate_gbps=R, delivery=Delivery(device='cuda:0'))`, nothing set "
            "by hand -> H2D -> GPU; the spectrometer (FFT, power, integration) consumes every "
            "chunk",
            bench_defaults.COLUMNS,
        ),
        HostSection(
            "skip_split",
            "1a. into one GPU through host memory, header-data split",
            bench_split_path,
            split_row,
            "1a. Header-data split: emulated NIC queues -> pinned chunk slots -> H2D -> GPU "
            "chunk ring",
            (
                "captures",
                "emulated DMA",
                "NIC queues (pinned threads)",
                "highest zero-loss offered Gb/s",
                *LADDER_COLUMNS,
            ),
        ),
        HostSection(
            "skip_copy_path",
            "1b. into one GPU through host memory, copying path",
            bench_host_path,
            host_row,
            "1b. Copying host path: NIC emulation -> placement -> H2D -> GPU chunk ring",
            ("NIC queues (captures)", "highest zero-loss offered Gb/s", *LADDER_COLUMNS),
        ),
        HostSection(
            "skip_shared",
            "1c. one capture, K queues sharing its chunks, into one GPU",
            bench_shared_capture,
            shared_row,
            "1c. One capture, K queues sharing its chunks (copying path) -> H2D -> GPU; "
            "consumer sums every chunk with CuPy",
            (
                "queues of ONE capture",
                "highest zero-loss offered Gb/s",
                *LADDER_COLUMNS,
                "overload 1.25x: delivered Gb/s (ratio to zero-loss)",
                "placed + NIC drops + late = offered",
            ),
        ),
    ]


def run_host_section(section: HostSection, args: argparse.Namespace, peak: float) -> list[str]:
    print(section.heading, flush=True)
    rows = [
        ladder_row(lead, cells, len(section.columns), tail)
        for lead, cells, tail in (section.row(r, peak) for r in section.bench(args, peak))
    ]
    return md_table(section.title, section.columns, rows)


def add_fill_option(p: argparse.ArgumentParser, flag: str, help_: str) -> None:
    """An option naming which emulated DMA fills (DMA's keys) a benchmark tries."""
    p.add_argument(flag, nargs="+", choices=list(DMA), default=list(DMA), help=help_)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", help="write the results table (Markdown) here")
    p.add_argument("--seconds", type=float, default=1.0, help="per host-path trial")
    p.add_argument("--ppc", type=int, default=4096, help="packets per chunk (host path)")
    p.add_argument("--queues", type=int, nargs="+", default=[4, 6])
    p.add_argument(
        "--rates", type=float, nargs="+", default=[200, 300, 350, 380, 400, 420, 440, 460]
    )
    p.add_argument(
        "--blocks",
        type=int,
        nargs="+",
        default=[1, 2, 4, 32, -4, 0],
        help="scatter blocks per GPUDirect trial (0: one per SM; -k: k fewer than the SMs)",
    )
    p.add_argument("--batches", type=int, nargs="+", default=[4096, 16384, 65536])
    p.add_argument(
        "--ring", type=int, default=524288, help="GPUDirect arrival ring packets (4 GiB at 8 KiB)"
    )
    p.add_argument("--skip-host", action="store_true", help="skip both host paths")
    p.add_argument("--skip-copy-path", action="store_true", help="skip the copying host path")
    p.add_argument("--skip-split", action="store_true", help="skip the header-split host path")
    p.add_argument("--skip-gpudirect", action="store_true", help="skip 2 (reorder kernels)")
    p.add_argument("--skip-shared", action="store_true", help="skip 1c (one shared capture)")
    p.add_argument("--shared-queues", type=int, nargs="+", default=[4, 8, 12])
    p.add_argument(
        "--shared-capture-rates",
        type=float,
        nargs="+",
        default=[150, 200, 225, 250, 275, 300, 325, 350, 375, 400],
        help="offered rates of 1c, tried in order until one loses packets",
    )
    p.add_argument("--skip-default", action="store_true", help="skip 1d (one default capture)")
    p.add_argument(
        "--default-rates",
        type=float,
        nargs="+",
        default=[250, 300, 350, 380, 400, 420, 440],
        help="offered rates of 1d, tried in order until one loses packets",
    )
    p.add_argument("--default-target", type=float, default=400.0, help="1d's target rate")
    p.add_argument("--default-trials", type=int, default=3, help="1d's trials at the target")
    p.add_argument("--default-trial-seconds", type=float, default=10.0, help="per 1d target trial")
    add_fill_option(p, "--default-fill", "1d's emulated DMA: whole payloads, or headers + prefix")
    p.add_argument("--spead2", action="store_true", help="also run the loopback CPU benchmarks")
    p.add_argument("--udp-seconds", type=float, default=0.5, help="per loopback trial (--spead2)")
    p.add_argument(
        "--udp-only", action="store_true", help="with --spead2: only the udp SO_REUSEPORT scaling"
    )
    p.add_argument("--udp-queues", type=int, nargs="+", default=[2, 4, 8])
    p.add_argument("--sender-threads", type=int, default=4)
    p.add_argument(
        "--udp-sender-threads", type=int, default=8, help="sender threads of the udp scaling"
    )
    p.add_argument(
        "--udp-gso",
        type=int,
        default=0,
        help="datagrams per UDP GSO send of the udp scaling's sender (0: one per send)",
    )
    p.add_argument("--split-queues", type=int, nargs="+", default=[8, 12])
    p.add_argument("--split-rates", type=float, nargs="+", default=[300, 350, 380, 400, 420, 440])
    p.add_argument(
        "--split-mode",
        nargs="+",
        choices=["per-queue", "shared"],
        default=["per-queue", "shared"],
        help="a capture per queue, or one capture whose queues share one engine",
    )
    p.add_argument("--shared-rates", type=float, nargs="+", default=[100, 150, 200, 250])
    add_fill_option(
        p, "--split-fill", "emulated DMA writes the whole payload, or only headers + prefix"
    )
    args = p.parse_args(argv)

    def save(lines: list[str]) -> None:
        # After every section, so that a run cut short by a time limit keeps what it has.
        if args.out:
            with open(args.out, "w") as f:
                f.write("\n".join(lines) + "\n")

    info = _core.cuda_device_info(0)
    lines = [f"# GPU benchmarks on {info['name']} ({info['sm_count']} SMs), {os.cpu_count()} CPUs"]
    print(lines[0], flush=True)
    peak = h2d_peak_gbps()
    d2d = d2d_gbps()
    print(f"pinned H2D cudaMemcpyAsync peak: {peak:.1f} Gb/s; D2D copy: {d2d:.1f} Gb/s", flush=True)
    mem = {k: memcpy_gbps(k) for k in sorted(set(args.queues))}
    print(f"host memcpy (NumPy, K threads): {mem}", flush=True)
    # What one core of the emulated NIC writes per second with each store it may use (the
    # emulation takes the widest): a lane's share of the whole-payload rate costs that
    # fraction of its core.
    stores = {s: _core._example_words_gbps(s) for s in _core._word_stores()}
    print(f"emulated DMA payload writes, one core: {stores}", flush=True)
    lines += [
        "",
        f"References (same run): pinned host-to-device copy {peak:.1f} Gb/s "
        f"({peak / 8:.1f} GB/s); device-to-device copy {d2d:.1f} Gb/s ({d2d / 8:.1f} GB/s "
        "copied, twice that read+written).",
        "Host memcpy, K threads (8 MiB blocks, Gb/s copied): "
        + ", ".join(f"K={k}: {v:.0f}" for k, v in mem.items())
        + ".",
        "Emulated NIC payload writes, one core (Gb/s, into a 256 MiB ring): "
        + ", ".join(f"{k}: {v:.0f}" for k, v in stores.items())
        + f" (the emulation uses {list(stores)[-1]}).",
    ]

    for section in host_sections():
        save(lines)
        if not args.skip_host and not getattr(args, section.skip):
            lines += run_host_section(section, args, peak)

    save(lines)
    if args.spead2:
        print("4. loopback CPU benchmarks: spead2 side by side, udp SO_REUSEPORT", flush=True)
        lines += ["", "## 4. Loopback (CPU): spead2 side by side, udp SO_REUSEPORT scaling", ""]
        lines += loopback_benchmarks(args)
        save(lines)

    save(lines)
    if not args.skip_gpudirect:
        print("2. GPUDirect reorder kernels", flush=True)
        sm = int(info["sm_count"])
        lines += [
            "",
            f"## 2. GPUDirect reorder kernels (arrival ring of {args.ring} frames, "
            "4096-packet chunks)",
            "",
            "| scatter blocks | batch | payload Gb/s | ratio to D2D copy | sustains 400 Gb/s |",
            "|---|---|---|---|---|",
        ]
        fewest = None
        best = (0.0, 0, 0)
        for blocks in args.blocks:
            b = blocks if blocks > 0 else sm + blocks
            for batch in args.batches:
                g = gpudirect_pass(b, batch, args.ring, 4096)
                print(
                    f"  blocks {b:4d} batch {batch:6d}: {g:8.1f} Gb/s ({g / d2d:.2f} of D2D)",
                    flush=True,
                )
                lines.append(
                    f"| {b} | {batch} | {g:.1f} | {g / d2d:.2f} | {'yes' if g >= 400 else 'no'} |"
                )
                if g >= 400 and (fewest is None or b < fewest):
                    fewest = b
                best = max(best, (g, b, batch))
        for b in (1, sm):
            g = gpudirect_pass(b, 4096, args.ring, 4096, control_only=True)
            print(f"  parse + walk alone, {b} parse blocks: {g:8.1f} Gb/s of payload", flush=True)
            lines.append(
                f"| {b} (parse + walk only, no scatter) | 4096 | {g:.1f} | {g / d2d:.2f} | |"
            )
        lines += [
            "",
            f"Best: {best[0]:.1f} Gb/s = {best[0] / d2d:.2f} of the D2D copy "
            f"({best[1]} scatter blocks, {best[2]}-packet batches).",
        ]
        lines += ["", f"Fewest scatter blocks sustaining 400 Gb/s: {fewest} (of {sm} SMs)."]

    save(lines)
    print("3. DLPack hand-off", flush=True)
    d = bench_dlpack()
    lines += [
        "",
        "## 3. DLPack hand-off",
        "",
        f"{d['chunks']} chunks of {d['chunk_mib']:.0f} MiB: same device pointer in the consumer: "
        f"{d['same_pointer']}; median time per chunk: cupy.from_dlpack {d['cupy_us']:.1f} µs"
        + (f", torch.from_dlpack {d['torch_us']:.1f} µs" if d["torch_us"] is not None else "")
        + ".",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    save(lines)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
