"""How packets are grouped into chunks (Chunking), and the engine configuration a capture
gets from its chunking, its source and the rate it must take (`engine_config`, the one
place the sizing rule of sizing.py is applied)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from . import _core
from .placement import StagingSplit, gpu_sites, place, staging_split
from .sizing import CapacityWarning, Sizing, pool_size, size_for_rate

if TYPE_CHECKING:
    from .delivery import Delivery
    from .sources import Source

DEFAULT_PACKETS_PER_CHUNK = 1024


def _positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")


@dataclass(frozen=True)
class Chunking:
    """Chunk geometry, the reorder window, the pool, and what happens when the consumer
    falls behind.

    Each receive queue places its packets straight into the shared chunks and has its own
    window of `max_chunks`; a chunk is handed on once every queue has moved past it, or
    once a queue that stopped placing packets has held it back for `stall_timeout_ms`
    (counted `queue_stalls`). A queue that keeps placing but lags so far that the others
    wait for it a fifth of that time is moved forward, its older packets late (counted
    `queue_skips`) when `skip_lagging` (None: for live sources). With no free chunk,
    policy "block" waits for the consumer, "drop_oldest" recycles the oldest ready one.

    A packet may move a window at most `max_jump` chunks past its end; further ahead, or
    as far behind it, it is counted out_of_window and not placed (one corrupt or stray
    sequence number cannot throw the window away). `resync_after` such packets in a row,
    each within a window of the last, move the window to them (counted window_resyncs):
    a sender that restarted is followed (engine.h, window.h).
    """

    packets_per_chunk: int | None = None  # None: 1024, or sized for GPU delivery (sizing.py)
    max_chunks: int = 4
    n_chunks: int = 0  # 0: sized (sizing.py)
    policy: Literal["block", "drop_oldest"] = "block"
    first_chunk: int | None = None
    stall_timeout_ms: int = 50
    skip_lagging: bool | None = None
    max_jump: int | None = None  # None: four windows (the engine's default)
    resync_after: int = 16

    def __post_init__(self) -> None:
        _positive("packets_per_chunk", self.packets_per_chunk)
        _positive("max_chunks", self.max_chunks)
        _positive("stall_timeout_ms", self.stall_timeout_ms)
        _positive("max_jump", self.max_jump)
        _positive("resync_after", self.resync_after)
        if self.n_chunks < 0:
            raise ValueError(f"n_chunks must be >= 0, got {self.n_chunks!r}")
        if self.policy not in ("block", "drop_oldest"):
            raise ValueError(f"policy must be 'block' or 'drop_oldest', got {self.policy!r}")


@dataclass(frozen=True)
class Plan:
    """What a capture opens: its source with the queues it runs, the engine's
    configuration, and the outcome of the sizing rule when a rate was asked."""

    source: Source
    config: _core.EngineConfig
    sizing: Sizing | None


def engine_config(
    source: Source,
    fmt: _core.Format,
    chunking: Chunking,
    delivery: Delivery,
    rate_gbps: float | None,
) -> Plan:
    """The engine configuration for `source` delivering as `delivery` says: options the
    user gave stay, the others are sized for `rate_gbps` by the rule of sizing.py and
    placed by placement.py (lane CPUs, the other threads' CPUs, staging memory's node; a
    CapacityWarning for each thing this machine lacks), or take their defaults."""
    ppc, n_chunks = chunking.packets_per_chunk, chunking.n_chunks
    split = source.split_depth() is not None
    sizing = None
    staging = StagingSplit((), ())
    if len(delivery.targets) > 1:
        staging = staging_split(
            gpu_sites(delivery.targets, delivery.routes()),
            delivery.routes(),
            delivery.staging_nodes,
        )
    if rate_gbps is not None:
        sizing = size_for_rate(
            rate_gbps,
            fmt.payload_size,
            chunking.max_chunks,
            to_gpu=delivery.to_gpu,
            queues=source.lanes(),
            n_chunks=n_chunks,
            helper_threads=source.helper_threads(),
            path=source.rate_path(),
            packets_per_chunk=ppc,
            gpus=max(1, len(delivery.targets)),
        )
        ppc = ppc or sizing.packets_per_chunk
        source = source.with_lanes(sizing.queues, sizing.depth, fmt)
        if not split:
            n_chunks = sizing.n_chunks
        for note in sizing.warnings:
            warnings.warn(note, CapacityWarning, stacklevel=3)
        placement = place(
            source.pinned_threads(),
            source.cpus_given(),
            delivery.targets or delivery.device,
            source.nic(),
            routes=delivery.routes(),
            gpu_cpus=delivery.gpu_cpus,
        )
        if source.cpus_given() is None and placement.lane_cpus is not None:
            source = source.with_cpus(placement.lane_cpus)
        placement = replace(
            placement,
            decisions=(*placement.decisions, *staging.decisions),
            unmet=(*placement.unmet, *staging.unmet),
        )
        sizing = replace(sizing, placement=placement)
        for note in placement.unmet:
            warnings.warn(note, CapacityWarning, stacklevel=3)
    ppc = ppc or DEFAULT_PACKETS_PER_CHUNK
    lanes = source.lanes() or 1
    depth = source.split_depth()
    if depth is not None and not n_chunks and (delivery.to_gpu or rate_gbps is not None):
        # Room for the chunks on their way to the GPU, or (sized for a rate) in the hands
        # of a consumer that may pause (sizing.py).
        n_chunks = pool_size(lanes, chunking.max_chunks, ppc, depth)
    if lanes > 1 and not n_chunks and not split:
        n_chunks = pool_size(lanes, chunking.max_chunks, ppc)  # the engine's rule
    if n_chunks:
        n_chunks = -(-n_chunks // staging.period) * staging.period  # the engine's rounding
    if sizing is not None and (split or staging.route) and n_chunks:
        sizing = replace(sizing, n_chunks=n_chunks)  # the header-split engine's own pool
    skip_lagging = chunking.skip_lagging
    config = _core.EngineConfig(
        packets_per_chunk=ppc,
        max_chunks=chunking.max_chunks,
        n_chunks=n_chunks,
        policy=chunking.policy,
        first_chunk=chunking.first_chunk,
        stall_timeout_ms=chunking.stall_timeout_ms,
        skip_lagging=source.live if skip_lagging is None else skip_lagging,
        max_jump=chunking.max_jump or 0,
        resync_after=chunking.resync_after,
        staging_route=list(staging.route),
        staging_nodes=list(staging.nodes),
    )
    return Plan(source, config, sizing)
