"""The Python face of a capture: one source, its chunking and delivery, a context manager,
a chunk iterator and the counters."""

from __future__ import annotations

import time
import warnings
import weakref
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from . import _core
from .affinity import Claim, KeepOff, opening, placing
from .chunking import Chunking, engine_config
from .delivery import Delivery
from .placement import with_staging_outcome
from .sizing import CapacityWarning
from .sources import (
    EmulatedNic,
    IbvSource,
    MemSource,
    PcapSource,
    RdmaSource,
    Source,
    UdpSource,
)

__all__ = ["Capture", "RcvbufWarning", "Stats"]


class RcvbufWarning(UserWarning):
    """The kernel gave the UDP socket less receive buffer than requested."""


class Stats(dict):  # type: ignore[type-arg]
    """Counters of a capture (dict keys, also readable as attributes), with rates."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _shortcut(kind: type[Source]) -> Any:
    def make(
        cls: type[Capture],
        *args: Any,
        fmt: _core.Format | None = None,
        chunking: Chunking | None = None,
        delivery: Delivery | None = None,
        rate_gbps: float | None = None,
        **options: Any,
    ) -> Capture:
        source = kind(*args, **options)
        return cls(source, fmt=fmt, chunking=chunking, delivery=delivery, rate_gbps=rate_gbps)

    name = kind.__name__
    make.__doc__ = f"Capture({name}(*args, **options), fmt=, chunking=, delivery=, rate_gbps=)"
    return classmethod(make)


class Capture:
    """One capture: a packet source (sources.py) feeding the placement engine.

    `chunking` (Chunking) says how packets are grouped, `delivery` (Delivery) where the
    chunks go, `fmt` (Format; SPEAD heaps with Format.spead) what a packet is.
    rate_gbps: the rate the capture must take; the source's queues, the chunk pool, the
    header-data split's receive depth and, for GPU delivery, packets_per_chunk not given
    are sized for it by the rule in sizing.py, and a CapacityWarning says when this
    machine has too few CPUs for them (`sizing` holds the outcome, `source` the source
    as it runs). With it the capture also places itself (placement.py): lane threads
    pinned one per physical core, the GPU's (or NIC's) NUMA node first, where `cpus` was
    not given; the thread that starts the capture (the consumer), the GPU copy threads
    and the CUDA driver's threads kept off the lane cores while it runs; staging memory
    on the GPU's node. `print(cap.sizing)` says what was chosen and what could not be
    done. Without it packets_per_chunk is 1024 and nothing is pinned.

    The shortcuts udp, pcap, mem, emulated_nic, ibv and rdma build the source from the
    arguments other than fmt, chunking, delivery and rate_gbps, and nothing else:
    `Capture.udp("10.0.0.2:7148", threads=4)` is `Capture(UdpSource("10.0.0.2:7148",
    threads=4))`.
    """

    udp = _shortcut(UdpSource)
    pcap = _shortcut(PcapSource)
    mem = _shortcut(MemSource)
    emulated_nic = _shortcut(EmulatedNic)
    ibv = _shortcut(IbvSource)
    rdma = _shortcut(RdmaSource)

    def __init__(
        self,
        source: Source,
        *,
        fmt: _core.Format | None = None,
        chunking: Chunking | None = None,
        delivery: Delivery | None = None,
        rate_gbps: float | None = None,
    ) -> None:
        if not isinstance(source, Source):
            raise TypeError(
                "source must be a UdpSource, PcapSource, MemSource, EmulatedNic, IbvSource "
                f"or RdmaSource, got {source!r}"
            )
        self.fmt = fmt if fmt is not None else _core.Format()
        self.chunking = chunking if chunking is not None else Chunking()
        self.delivery = delivery if delivery is not None else Delivery()
        with placing():
            # Placed and claimed under the host's lock: other captures keep off these lane
            # CPUs until this one stops.
            plan = engine_config(source, self.fmt, self.chunking, self.delivery, rate_gbps)
            self.source, self.sizing = plan.source, plan.sizing
            placement = self.sizing.placement if self.sizing is not None else None
            # GPUDirect has no copy threads to place (its engines run where it starts).
            copies = not self.delivery.gpudirect
            if placement and placement.gpu_cpus and copies and self.delivery.gpu_cpus is None:
                self.delivery = replace(self.delivery, gpu_cpus=placement.gpu_cpus)
            self._claim = Claim(placement.lane_cpus if placement and placement.lane_cpus else ())
        weakref.finalize(self, self._claim.release)
        if self._claim.lost:
            warnings.warn(
                f"lane CPUs {sorted(self._claim.lost)} were claimed by another process's "
                "capture while this one was placed: both pin lanes there",
                CapacityWarning,
                stacklevel=2,
            )
        self._keep_off = KeepOff(
            placement.lane_cpus if placement else None,
            placement.other_cpus if placement else None,
        )
        try:
            with opening(placement.open_cpus if placement else None):
                self._cap: Any = self.source.open(self.fmt, plan.config, self.delivery)
        except BaseException:
            self._claim.release()
            raise
        placed = self.sizing.placement if self.sizing is not None else None
        if placed is not None and len(self.delivery.targets) > 1:
            after = with_staging_outcome(placed, self._cap.stats["gpus"])
            for note in after.unmet[len(placed.unmet) :]:
                warnings.warn(note, CapacityWarning, stacklevel=2)
            self.sizing = replace(self.sizing, placement=after)
        # Opened here, in the capture's network namespace, held from start() to stop().
        self._membership = self.source.membership()
        self._t0: float | None = None
        self._t1: float | None = None

    @property
    def config(self) -> _core.EngineConfig:
        return self._cap.config

    @property
    def rdma_params(self) -> Any:
        """The rdma source's connection parameters (rdma.RdmaParams), for
        FourHundredGbe.rdma_connect."""
        if not isinstance(self.source, RdmaSource):
            raise ValueError(f"rdma_params belongs to the rdma source, not {self.source!r}")
        from .rdma import RdmaParams

        return RdmaParams.from_mapping(self._cap.params)

    @property
    def port(self) -> int | None:
        """The bound UDP port (udp source)."""
        return self._cap.port

    @property
    def rcvbuf(self) -> int | None:
        """The UDP receive buffer the kernel granted, in bytes (udp source)."""
        return self._cap.rcvbuf

    @property
    def running(self) -> bool:
        """True while source threads are still delivering packets."""
        return bool(self._cap.running)

    @property
    def finished(self) -> bool:
        """True once the stream has ended and every chunk was taken: chunks() returning
        because of its timeout leaves this False."""
        return bool(self._cap.finished)

    def start(self) -> Capture:
        if self._t0 is None:
            for text in self._cap.warnings:
                warnings.warn(text, RcvbufWarning, stacklevel=2)
            self._t0 = time.monotonic()
            if self._membership is not None:
                self._membership.join()
            # Before the capture's threads start: those it starts inherit the CPUs.
            self._keep_off.start()
            self._cap.start()
        return self

    def stop(self) -> None:
        """Stop receiving, flush the open chunks (iterate chunks() to drain them)."""
        if self._t1 is None and self._t0 is not None:
            self._t1 = time.monotonic()
        self._cap.stop()
        if self._membership is not None:
            self._membership.leave()
        self._keep_off.stop()
        self._claim.release()

    def __enter__(self) -> Capture:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def chunks(self, timeout: float | None = None) -> Iterator[_core.Chunk | _core.GpuChunk]:
        """Ready chunks in order of completion; ends when the stream ends or when
        `timeout` seconds pass without a chunk. Ctrl-C interrupts the wait."""
        self.start()
        while True:
            chunk = self._cap.next_chunk(timeout)
            if chunk is None:
                return
            yield chunk

    def __iter__(self) -> Iterator[_core.Chunk | _core.GpuChunk]:
        return self.chunks()

    @property
    def queue_received(self) -> list[int]:
        """Packets each receive queue (udp thread, mem or ibv queue) offered to the engine:
        how the stream spreads over them."""
        return list(self._cap.queue_received)

    @property
    def stats(self) -> Stats:
        s = Stats(self._cap.stats)
        end = self._t1 if self._t1 is not None else time.monotonic()
        elapsed = end - self._t0 if self._t0 is not None else 0.0
        s["elapsed"] = elapsed
        s["gbps"] = s["bytes"] * 8 / elapsed / 1e9 if elapsed > 0 else 0.0
        s["pps"] = s["packets"] / elapsed if elapsed > 0 else 0.0
        return s
