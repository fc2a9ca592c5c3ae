"""Benchmarks of the receiver; every figure is printed next to a reference from the same run.

* engine: the mem backend pushes the 8192-B example stream through the placement engine
  (one thread decodes and copies each payload into its chunk slot) — the software path's
  ceiling, compared with a NumPy copy with the same memory traffic on this machine: from
  a 64-packet staging area (as the generator's, so it stays in cache) into a pool of
  chunk-sized destinations.
* queues: one capture, K queue threads sharing its chunks, against one queue of the same
  capture in the same run (the scaling the shared window allows, up to the cores and
  the memory bandwidth).
* udp: the C++ sender and the receiver over loopback; the highest rate at which the
  receiver loses nothing, compared with the rate the sender alone can reach.
* split: the ibv backend's header-data split path against the emulated NIC (one thread
  plays the NIC and places completions): packets/s per core in order (zero payload
  copies) and with drops and reordering (fix-up copies), next to the copying engine and
  memcpy measured in the same run.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np

from .. import Capture, Chunking, EmulatedNic, MemSource, Stats, UdpSource, _core
from . import multisend

PAYLOAD = 8192


def drain(cap: Capture) -> Stats:
    """Runs `cap` to its end, releasing each chunk at once (what the engine takes with no
    consumer's work); returns its stats."""
    with cap:
        for chunk in cap.chunks(timeout=30):
            chunk.release()
    return cap.stats


def memcpy_gbps(
    total_bytes: int, source_packets: int = 64, pool_chunks: int = 8, packets_per_chunk: int = 1024
) -> float:
    """Copy bandwidth (Gb/s of bytes copied) with the engine's memory traffic.

    The source is `source_packets` packets (the generator's staging area, 64 packets, stays
    in cache), copied packet batch by batch into a pool of `pool_chunks` chunk-sized
    destinations in turn, as the engine fills chunk slots.
    """
    src = np.ones((source_packets, PAYLOAD), dtype=np.uint8)
    dst = np.empty((pool_chunks * packets_per_chunk, PAYLOAD), dtype=np.uint8)
    dst.fill(0)  # first-touch faults out of the timed loop, as the engine's pool
    rows = len(dst) // source_packets * source_packets
    reps = max(1, total_bytes // src.nbytes)
    t0 = time.perf_counter()
    for i in range(reps):
        at = i * source_packets % rows
        np.copyto(dst[at : at + source_packets], src)
    return reps * src.nbytes * 8 / (time.perf_counter() - t0) / 1e9


def engine_rate(
    packets: int, fill: bool = False, packets_per_chunk: int = 1024, queues: int = 1
) -> tuple[float, float]:
    """(packets/s, Gb/s) of the placement engine on the mem backend, `queues` threads
    placing into one capture's chunks."""
    packets = max(packets_per_chunk, packets // packets_per_chunk * packets_per_chunk)
    cap = Capture(
        MemSource(count=packets, fill=fill, queues=queues),
        chunking=Chunking(
            packets_per_chunk=packets_per_chunk,
            max_chunks=4,
            n_chunks=4 + 4 * queues,
            first_chunk=0,
        ),
    )
    s = drain(cap)
    if s.packets != packets or s.lost:
        raise RuntimeError(f"engine benchmark lost packets: {dict(s)}")
    return s.packets / s.elapsed, s.bytes * 8 / s.elapsed / 1e9


def queue_scaling(packets: int, queues: list[int], trials: int = 3) -> dict[int, float]:
    """Best-of-`trials` Gb/s of one capture with each number of queues, trials interleaved
    so that a noisy neighbour affects every configuration alike."""
    best = dict.fromkeys(queues, 0.0)
    for _ in range(trials):
        for k in queues:
            best[k] = max(best[k], engine_rate(packets, queues=k)[1])
    return best


def split_rate(
    packets: int, fill: bool = False, fault_rate: float = 0.0, packets_per_chunk: int = 1024
) -> tuple[float, dict]:
    """(packets/s, stats) of header-split placement fed by the emulated NIC, one thread.

    fill=False: the emulated DMA writes headers and the payload prefix only, so the
    figure is the placement's own cost; fill=True: it writes every payload word too.
    fault_rate: that fraction of packets dropped and as many delayed (reordered); each
    drop costs up to a queue's depth of fix-up copies, as the receives already posted
    were predicted before the gap was seen.
    """
    from ..faults import faulty_schedule

    ppc = packets_per_chunk
    n_chunks = max(8, packets // ppc)
    schedule = None
    if fault_rate:
        f = faulty_schedule(
            n_chunks,
            ppc,
            4,
            np.random.default_rng(1),
            drop_rate=fault_rate,
            dup_rate=0.0,
            reorder_rate=fault_rate,
            n_late=0,
        )
        schedule = f.schedule
    cap = Capture(
        EmulatedNic(count=n_chunks * ppc, schedule=schedule, fill=fill, depth=1024, split=True),
        chunking=Chunking(packets_per_chunk=ppc, max_chunks=4, first_chunk=0),
    )
    s = drain(cap)
    expected = n_chunks * ppc if schedule is None else len(schedule)
    if s.received != expected:
        raise RuntimeError(f"split benchmark lost track of packets: {dict(s)}")
    return s.received / s.elapsed, dict(s)


def split_lanes_rate(packets: int, lanes: int, packets_per_chunk: int = 1024) -> float:
    """Packets/s of ONE capture whose `lanes` header-split lanes (one emulated NIC thread
    each, writing headers + prefix, placing its completions) share its chunks."""
    ppc = packets_per_chunk
    cap = Capture(
        EmulatedNic(
            count=max(8, packets // ppc) * ppc, queues=lanes, depth=1024, fill=False, split=True
        ),
        chunking=Chunking(packets_per_chunk=ppc, max_chunks=4, first_chunk=0),
    )
    s = drain(cap)
    if s.packets != s.received or s.lost:
        raise RuntimeError(f"split lanes benchmark lost packets: {dict(s)}")
    return s.packets / s.elapsed


def emulated_nic_trial(
    path: str, rate_gbps: float, queues: int, seconds: float, ppc: int = 1024
) -> dict[str, float]:
    """ONE capture fed by an emulated NIC at `rate_gbps` (a NIC drops what finds no room:
    `nic_drops`), `queues` queue threads sharing its chunks, the consumer releasing each
    chunk. path "copy": the mem backend's generator + receive rings (every payload copied
    once); "split": the header-split lanes (headers + prefix written per packet)."""
    count = max(8 * ppc, int(rate_gbps * 1e9 * seconds / (PAYLOAD * 8)) // ppc * ppc)
    nic = EmulatedNic(
        count=count, nic_rate_gbps=rate_gbps, queues=queues, fill=False, split=path != "copy"
    )
    cap = Capture(nic, chunking=Chunking(packets_per_chunk=ppc, max_chunks=4, first_chunk=0))
    t0 = time.perf_counter()
    with cap:
        for chunk in cap.chunks(timeout=10):
            chunk.release()
    wall = time.perf_counter() - t0
    s = cap.stats
    drops = int(s.get("nic_drops", 0))
    if path == "copy":
        drops = int(_core.emu_nic_drops(cap._cap) or 0)
    return {
        "ok": drops == 0 and s.lost == 0 and s.packets == count,
        "achieved": s.packets * PAYLOAD * 8 / wall / 1e9,
        "accounted": s.packets + drops + s.late + s.discarded == count,
        "late": s.late,
        "skips": s.queue_skips,
        "stalls": s.queue_stalls,
        "drops": drops,
    }


def overload(path: str, queues: int, rates: list[float], seconds: float) -> None:
    """Highest zero-loss rate of the ladder, then the same capture offered 1.25x that."""
    best = None
    for rate in rates:
        t = emulated_nic_trial(path, rate, queues, seconds)
        print(
            f"  {path} K={queues} offered {rate:.1f}: {'zero-loss' if t['ok'] else 'LOSS'} "
            f"achieved {t['achieved']:.2f} Gb/s, nic_drops {t['drops']}"
        )
        if not t["ok"]:
            break
        best = (rate, t)
    if best is None:
        return
    over = emulated_nic_trial(path, 1.25 * best[0], queues, seconds)
    print(
        f"one capture, {path} path, {queues} queues: zero-loss {best[1]['achieved']:.2f} Gb/s "
        f"({best[0]:.1f} offered); overload 1.25x: delivered {over['achieved']:.2f} Gb/s "
        f"({over['achieved'] / best[1]['achieved']:.2f} of zero-loss), nic_drops "
        f"{over['drops']}, late {over['late']}, queue_skips {over['skips']}, queue_stalls "
        f"{over['stalls']}, every packet accounted {over['accounted']}"
    )


def sender_alone_gbps(seconds: float, sender_threads: int = 1, gso_segments: int = 0) -> float:
    """Rate the sender reaches with nobody reading (datagrams to a bound, idle socket)."""
    cap = Capture(UdpSource(bind="127.0.0.1:0", rcvbuf=1 << 20))
    assert cap.port is not None
    if sender_threads > 1:
        count = int(seconds * 40e9 / (PAYLOAD * 8))
        return multisend.send(cap.port, 0, count, 0.0, sender_threads, gso_segments=gso_segments)[0]
    count = int(seconds * 20e9 / (PAYLOAD * 8))
    sender = _core.Sender(port=cap.port, count=count, gso_segments=gso_segments)
    sender.run(seconds)
    return sender.packets_sent * PAYLOAD * 8 / sender.elapsed / 1e9


def split_cpus(receivers: int, senders: int) -> tuple[list[int], list[int]] | None:
    """CPUs for `receivers` receive threads (one per physical core first) and up to
    `senders` sender threads on the CPUs left, one kept free for the consumer; None when
    this process may not use enough CPUs to keep them apart."""
    import os

    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return None

    def core_of(cpu: int) -> tuple[int, int]:
        try:
            base = f"/sys/devices/system/cpu/cpu{cpu}/topology/"
            with open(base + "core_id") as f, open(base + "physical_package_id") as g:
                return int(g.read()), int(f.read())
        except OSError:
            return 0, cpu

    first, rest, seen = [], [], set()
    for cpu in allowed:
        (rest if core_of(cpu) in seen else first).append(cpu)
        seen.add(core_of(cpu))
    order = first + rest
    if len(order) < receivers + 2:
        return None
    left = order[receivers:-1]  # the last one for the consumer
    return order[:receivers], left[:senders]


def udp_trial(
    rate_gbps: float,
    seconds: float,
    threads: int = 1,
    sender_threads: int = 1,
    gso_segments: int = 0,
) -> tuple[bool, float, dict]:
    """Send `seconds` worth of packets at `rate_gbps`; (lossless, achieved Gb/s, stats).
    With several sender threads each has its own socket (source port), so SO_REUSEPORT
    spreads them over the receive threads; receive and sender threads are then pinned to
    CPUs of their own where the process has enough (the sender threads to those left, as
    many as fit), and the stats say how far the sender fell behind its schedule
    (`sender_lag_ms`) against how much of the stream the receiver's window holds
    (`window_ms`): a sender thread further behind than that makes packets late whatever
    the receive threads do. `gso_segments` > 1: the sender sends that many datagrams per
    UDP GSO send (the kernel cuts them apart before the receiving sockets)."""
    ppc = 1024
    count = max(ppc, int(seconds * rate_gbps * 1e9 / (PAYLOAD * 8)) // ppc * ppc)
    max_chunks = 16
    pins = split_cpus(threads, sender_threads) if sender_threads > 1 else None
    if pins is not None:
        sender_threads = len(pins[1])
    cap = Capture(
        UdpSource(bind="127.0.0.1:0", threads=threads, cpus=pins[0] if pins else None),
        chunking=Chunking(
            packets_per_chunk=ppc, max_chunks=max_chunks, n_chunks=28 + 2 * threads, first_chunk=0
        ),
    )
    result: dict[str, float] = {}
    with cap:
        assert cap.port is not None
        port = cap.port
        if sender_threads > 1:

            def run() -> None:
                sent = multisend.send(
                    port,
                    0,
                    count,
                    rate_gbps,
                    sender_threads,
                    cpus=pins[1] if pins else None,
                    gso_segments=gso_segments,
                )
                result["achieved"] = sent.gbps
                result["lag"] = sent.max_lag

        else:
            sender = _core.Sender(
                port=port,
                count=count,
                rate_gbps=rate_gbps,
                streams=threads,
                gso_segments=gso_segments,
            )

            def run() -> None:
                sender.run()
                result["achieved"] = count * PAYLOAD * 8 / sender.elapsed / 1e9
                result["lag"] = sender.max_lag

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        deadline = time.monotonic() + seconds * 4 + 2
        while time.monotonic() < deadline:
            for chunk in cap.chunks(timeout=0.05):
                chunk.release()
            s = cap.stats
            if not thread.is_alive() and s.received + s.kernel_drops >= count:
                break
        thread.join()
        cap.stop()
        for chunk in cap.chunks(timeout=0):
            chunk.release()
    s = cap.stats
    lossless = s.packets == count and s.lost == 0 and s.kernel_drops == 0
    window_ms = max_chunks * ppc * PAYLOAD * 8 / (rate_gbps * 1e9) * 1e3
    return (
        lossless,
        result.get("achieved", 0.0),
        {
            **s,
            "queue_received": cap.queue_received,
            "sender_threads": sender_threads,
            "gso_segments": gso_segments,
            "pinned": pins is not None,
            "sender_lag_ms": round(result.get("lag", 0.0) * 1e3, 2),
            "window_ms": round(window_ms, 2),
        },
    )


def highest_lossless_rate(
    trial: object,
    seconds: float,
    start: float = 1.0,
    steps: int = 6,
    attempts: int = 1,
    failed: list[tuple[float, dict]] | None = None,
) -> tuple[float, float]:
    """Doubles the offered rate until a trial loses packets, then bisects `steps` times.
    A rate is lossless when any of `attempts` trials is (one trial on a busy machine fails
    at random); the stats of failed trials are appended to `failed` as (rate, stats).

    Returns (highest lossless offered Gb/s, the rate the sender actually achieved there).
    """
    assert callable(trial)

    def attempt(rate: float) -> tuple[bool, float]:
        achieved = 0.0
        for _ in range(attempts):
            ok, achieved, stats = trial(rate, seconds)
            if ok:
                return True, achieved
            if failed is not None:
                failed.append((rate, {**stats, "achieved": achieved}))
        return False, achieved

    good, good_achieved, bad = 0.0, 0.0, None
    rate = start
    while bad is None and rate <= 400:
        ok, achieved = attempt(rate)
        if ok:
            good, good_achieved = rate, achieved
            if achieved < rate * 0.9:  # the sender cannot go faster: that is the ceiling
                return good, good_achieved
            rate *= 2
        else:
            bad = rate
    for _ in range(steps if bad is not None else 0):
        mid = (good + bad) / 2
        ok, achieved = attempt(mid)
        if ok:
            good, good_achieved = mid, achieved
        else:
            bad = mid
    return good, good_achieved


def run_benchmarks(args: argparse.Namespace) -> int:
    print(f"# casper400g-rx bench (payload {PAYLOAD} B)")
    pps, gbps = engine_rate(args.packets)
    ref = memcpy_gbps(args.packets * PAYLOAD)
    print(f"engine (mem backend, 1 thread): {pps / 1e6:.3f} Mpackets/s  {gbps:.1f} Gb/s per core")
    print(f"memcpy reference (NumPy, 64-packet cached source into chunk pool): {ref:.1f} Gb/s")
    print(f"ratio engine / memcpy: {gbps / ref:.2f}")
    pps_fill, gbps_fill = engine_rate(args.packets // 2, fill=True)
    print(
        f"engine with the generator writing every payload word: {pps_fill / 1e6:.3f} Mpackets/s "
        f"{gbps_fill:.1f} Gb/s (ratio to memcpy {gbps_fill / ref:.2f})"
    )
    ref_pps = ref * 1e9 / (PAYLOAD * 8)
    eng_pps, _ = engine_rate(args.packets // 2)
    print(
        f"memcpy reference as packets: {ref_pps / 1e6:.3f} Mpackets/s of {PAYLOAD} B; "
        f"copying engine (same run): {eng_pps / 1e6:.3f} Mpackets/s"
    )
    for label, fill, fault_rate in (
        ("in order, prefix-only DMA", False, 0.0),
        ("in order, full-payload DMA", True, 0.0),
        ("0.01% drops + 0.01% reordering, prefix-only DMA", False, 1e-4),
        ("1% drops + 1% reordering, prefix-only DMA", False, 1e-2),
    ):
        n = args.packets // (2 if fill else 1)
        pps, st = split_rate(n, fill=fill, fault_rate=fault_rate)
        print(
            f"split (emulated NIC, 1 thread), {label}: {pps / 1e6:.3f} Mpackets/s per core "
            f"(ratio to memcpy {pps / ref_pps:.2f}, to copying engine {pps / eng_pps:.2f}); "
            f"in place {st['in_place']}, fix-up copies {st['fixup_copies']}, "
            f"bounced {st['bounced']}"
        )
    ks = sorted({1, *args.queues})
    scale = queue_scaling(args.packets // 2, ks)
    for k in ks:
        print(
            f"one capture, {k} queue(s): {scale[k]:.1f} Gb/s "
            f"(ratio to {k} x one queue {scale[k] / (k * scale[1]):.2f}, "
            f"to memcpy {scale[k] / ref:.2f})"
        )
    split_best = dict.fromkeys(ks, 0.0)
    for _ in range(3):
        for k in ks:
            split_best[k] = max(split_best[k], split_lanes_rate(args.packets // 2, k))
    for k in ks:
        print(
            f"one capture, {k} header-split lane(s), prefix-only DMA: "
            f"{split_best[k] / 1e6:.3f} Mpackets/s (ratio to {k} x one lane "
            f"{split_best[k] / (k * split_best[1]):.2f})"
        )
    for k in getattr(args, "overload_queues", None) or []:
        for path in ("copy", "split"):
            overload(path, k, args.overload_rates, args.udp_seconds)
    if args.spead2:
        from .bench_spead2 import compare_spead_from_memory

        compare_spead_from_memory()
    if args.skip_udp:
        return 0
    st = getattr(args, "sender_threads", 1)
    alone = sender_alone_gbps(args.udp_seconds, st)
    print(f"loopback sender alone (C++ sendmmsg, {st} thread(s)): {alone:.2f} Gb/s")
    best, achieved = highest_lossless_rate(
        lambda rate, seconds: udp_trial(rate, seconds, sender_threads=st), args.udp_seconds
    )
    print(
        f"casper400g_rx udp (recvmmsg, 1 thread): highest zero-loss rate {best:.2f} Gb/s offered, "
        f"{achieved:.2f} Gb/s achieved"
    )
    print(f"ratio zero-loss receive / sender alone: {achieved / alone:.2f}")
    for k in ks[1:]:
        best_k, achieved_k = highest_lossless_rate(
            lambda rate, seconds, k=k: udp_trial(rate, seconds, threads=k, sender_threads=st),
            args.udp_seconds,
        )
        print(
            f"casper400g_rx udp, {k} SO_REUSEPORT threads, one capture: highest zero-loss "
            f"{best_k:.2f} Gb/s offered, {achieved_k:.2f} Gb/s achieved "
            f"(ratio to 1 thread {achieved_k / achieved:.2f}, to {k} x 1 thread "
            f"{achieved_k / (k * achieved):.2f}; {st} sender threads, alone {alone:.2f})"
        )
    if args.spead2:
        from .bench_spead2 import compare_with_spead2

        compare_with_spead2(args.udp_seconds, sender_threads=st)
    return 0
