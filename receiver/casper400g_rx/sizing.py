"""Capture settings sized for an asked rate: queues, chunk size, chunk pool, and a warning
when this machine cannot give the queues the cores they need.

The rule (docs/benchmarks.md sections 6 and 7 hold the measurements it comes from):

* queues = ceil(rate / per-queue rate), the per-queue rate by path, for 8192-B packets:
  - copying path (udp, pcap, mem, ibv striding): one queue thread places about 80 Gb/s
    into host chunks (7.1: 635 Gb/s with 8 queues on the 16-core H100 host), about
    29 Gb/s when the chunks then go to a GPU through host memory (7.2: 350 Gb/s with 12
    queues), where the host's memory bandwidth is shared with the DMA to the GPU;
  - header-data split (ibv split): the NIC writes the payloads, a lane thread handles
    headers and completions: about 55 Gb/s per lane (5.1b: 440 Gb/s on 8 lanes into a
    GPU); its NIC-less emulation writing whole payloads from the CPU (emulate="ibv",
    fill=True) about 33 Gb/s per lane (5.1b: 400 Gb/s on 12).
  Smaller packets cost more per byte: the per-queue rate scales with payload / 8192 below
  8192 B.
* packets_per_chunk (when not given, for GPU delivery): the smallest power of two >= 1024
  whose chunk holds at least 0.5 ms of the stream, so that the per-chunk costs (the copy
  thread's two copies and events, the consumer's Python and kernel launches) stay under
  2000 chunks/s: 4096 packets (32 MiB) at 400 Gb/s of 8192-B packets.
* n_chunks: the engine's own rule (EngineConfig.sized, engine.h), asked for here, never
  restated: the window, 4 chunks in the consumer's hands or on their way to the GPU, and
  with several queues two chunks of skew per queue; for the header-data split twice its
  window (max_chunks plus the chunks its posted receives reach ahead, depth x queues
  packets) plus 4, and delivering into a GPU or sized by rate_gbps some more for chunks
  on their way through the copy or in the hands of a consumer that pauses -- without a
  free chunk a live source gives chunks up whole.
* depth (header-data split, when not given): the smallest power of two >= 1024 whose
  receive queue holds DEPTH_SECONDS of a lane's share of the stream (4096 at 50 Gb/s per
  lane), at most 16384: a lane thread that loses its core that long (the kernel's own
  work on that core) loses nothing, where 1024 receives last 1.3 ms at 50 Gb/s -- and a
  queue that ran dry costs packets (docs/benchmarks.md section 9).
* Each queue wants a core of its own (plus one for an emulated NIC's generator, two for
  the GPU copy and recycle threads -- per GPU, and a dispatcher, into several -- and one
  for the consumer): with fewer CPUs available
  to this process a `CapacityWarning` says so, naming the numbers.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from . import _core

if TYPE_CHECKING:
    from .placement import Placement

HOST_GBPS_PER_QUEUE = 80.0  # into host chunks (measured, 8192-B payloads)
GPU_GBPS_PER_QUEUE = 29.0  # into a GPU through host memory (measured, 8192-B payloads)
SPLIT_GBPS_PER_QUEUE = 55.0  # header-data split, the NIC writing payloads (measured)
SPLIT_EMULATED_GBPS_PER_QUEUE = 33.0  # its emulation writing whole payloads (measured)
REFERENCE_PAYLOAD = 8192
MIN_CHUNK_SECONDS = 0.5e-3  # a chunk holds at least this much of the stream (GPU delivery)
DEPTH_SECONDS = 5e-3  # header-split receive queues hold this much of a lane's share
MIN_DEPTH, MAX_DEPTH = 1024, 16384
Path = Literal["copy", "split", "split_emulated"]


class CapacityWarning(UserWarning):
    """The asked rate needs more cores (or queues) than this capture has."""


@dataclass(frozen=True)
class Sizing:
    queues: int
    n_chunks: int
    gbps_per_queue: float
    warnings: tuple[str, ...]
    packets_per_chunk: int | None = None  # sized only for GPU delivery
    depth: int | None = None  # receive queue depth, sized only for the header-data split
    placement: Placement | None = None  # threads and staging memory (placement.py)

    def __str__(self) -> str:
        lines = [f"{self.queues} receive queue(s), about {self.gbps_per_queue:.0f} Gb/s each"]
        if self.packets_per_chunk is not None:
            lines.append(f"{self.packets_per_chunk} packets per chunk (0.5 ms of the stream)")
        lines.append(f"{self.n_chunks} chunks in the pool")
        if self.depth is not None:
            lines.append(f"{self.depth} receives per header-split queue (5 ms of its share)")
        lines += [f"could not: {w}" for w in self.warnings]
        text = "\n".join(lines)
        if self.placement is not None:
            text += "\nplacement:\n" + str(self.placement)
        return text


def chunk_packets(rate_gbps: float, payload_size: int) -> int:
    """packets_per_chunk for GPU delivery at `rate_gbps`: the smallest power of two >= 1024
    whose chunk carries at least MIN_CHUNK_SECONDS of the stream."""
    need = rate_gbps * 1e9 / 8 * MIN_CHUNK_SECONDS / payload_size
    return max(1024, 1 << max(0, math.ceil(math.log2(max(need, 1.0)))))


def split_depth(rate_gbps: float, queues: int, payload_size: int) -> int:
    """Receives per header-split queue: DEPTH_SECONDS of a lane's share of the stream,
    a power of two within MIN_DEPTH .. MAX_DEPTH."""
    need = rate_gbps * 1e9 / 8 / payload_size / max(1, queues) * DEPTH_SECONDS
    depth = 1 << max(0, math.ceil(math.log2(max(need, 1.0))))
    return min(MAX_DEPTH, max(MIN_DEPTH, depth))


def pool_size(queues: int, max_chunks: int, packets_per_chunk: int, depth: int = 0) -> int:
    """n_chunks by the engine's rule (EngineConfig.sized): for `queues` copying queues, or
    (depth > 0) header-data split lanes posting `depth` receives each, with room for
    chunks on their way on (a GPU, a consumer that pauses)."""
    config = _core.EngineConfig(packets_per_chunk=packets_per_chunk, max_chunks=max_chunks)
    return int(config.sized(queues, depth, delivery=depth > 0).n_chunks)


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def size_for_rate(
    rate_gbps: float,
    payload_size: int,
    max_chunks: int,
    *,
    to_gpu: bool,
    queues: int | None = None,
    n_chunks: int = 0,
    helper_threads: int = 0,
    cpus: int | None = None,
    path: Path = "copy",
    packets_per_chunk: int | None = None,
    gpus: int = 1,
) -> Sizing:
    """Queues and chunk pool for `rate_gbps` (see the module's rule); `queues` or
    `n_chunks` given by the caller are kept. `helper_threads`: threads besides the queues
    that need a core (an emulated NIC's generator); `gpus`: how many GPUs the chunks are
    copied into (to_gpu), each with its copy and recycle threads."""
    if not rate_gbps > 0:
        raise ValueError(f"rate_gbps must be > 0, got {rate_gbps!r}")
    if payload_size <= 0:
        raise ValueError(f"payload_size must be > 0, got {payload_size!r}")
    if path == "split":
        per = SPLIT_GBPS_PER_QUEUE
    elif path == "split_emulated":
        per = SPLIT_EMULATED_GBPS_PER_QUEUE
    elif path == "copy":
        per = GPU_GBPS_PER_QUEUE if to_gpu else HOST_GBPS_PER_QUEUE
    else:
        raise ValueError(f"path must be 'copy', 'split' or 'split_emulated', got {path!r}")
    per *= min(1.0, payload_size / REFERENCE_PAYLOAD)
    want = max(1, math.ceil(rate_gbps / per))
    k = want if queues is None else queues
    if k < 1:
        raise ValueError(f"queues must be >= 1, got {k}")
    notes = []
    if k < want:
        notes.append(
            f"{rate_gbps:g} Gb/s needs about {want} queues at {per:.0f} Gb/s each "
            f"(docs/benchmarks.md section 7); this capture has {k}"
        )
    # Per GPU a copy and a recycle thread; into several, the dispatcher that routes.
    copiers = (2 * gpus + (1 if gpus > 1 else 0)) if to_gpu else 0
    threads = k + helper_threads + copiers + 1
    have = available_cpus() if cpus is None else cpus
    if threads > have:
        notes.append(
            f"{k} queues want {threads} cores (a core per queue thread"
            + (f", {helper_threads} for the emulated NIC" if helper_threads else "")
            + (", 2 for the GPU copy and recycle threads" if to_gpu and gpus == 1 else "")
            + (
                f", {copiers} for the copy and recycle threads of {gpus} GPUs and their dispatcher"
                if to_gpu and gpus > 1
                else ""
            )
            + f", 1 for the consumer); this process may use {have} CPUs: expect losses above "
            f"about {max(1, have - threads + k) * per:.0f} Gb/s"
        )
    ppc = chunk_packets(rate_gbps, payload_size) if to_gpu else None
    if ppc is not None and packets_per_chunk is not None and packets_per_chunk < ppc:
        per_s = rate_gbps * 1e9 / 8 / (packets_per_chunk * payload_size)
        notes.append(
            f"{packets_per_chunk}-packet chunks at {rate_gbps:g} Gb/s are {per_s:.0f} chunks/s "
            f"into the GPU; above {1 / MIN_CHUNK_SECONDS:.0f}/s the per-chunk costs (copies, "
            f"events, the consumer's launches) limit the rate: packets_per_chunk >= {ppc}"
        )
    depth = split_depth(rate_gbps, k, payload_size) if path != "copy" else None
    chunk = packets_per_chunk or ppc or 1024
    pool = n_chunks or pool_size(k, max_chunks, chunk, depth or 0)
    return Sizing(k, pool, per, tuple(notes), ppc if packets_per_chunk is None else None, depth)
