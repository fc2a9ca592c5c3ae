"""The Python face of a capture: backend selection, context manager, chunk iterator, stats."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import _core
from .endpoint import parse_endpoint
from .ibv import DEFAULT_DEPTH, open_ibv, open_split_emulation
from .multicast import Membership
from .sizing import CapacityWarning, Sizing, size_for_rate, split_pool
from .sources import Chunking, Delivery, Source

__all__ = ["Capture", "RcvbufWarning", "Stats", "parse_endpoint"]

Backend = Literal["udp", "pcap", "mem", "ibv", "rdma"]
Policy = Literal["block", "drop_oldest"]


class RcvbufWarning(UserWarning):
    """The kernel gave the UDP socket less receive buffer than requested."""


class Stats(dict):  # type: ignore[type-arg]
    """Counters of a capture (dict keys, also readable as attributes), with rates."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Capture:
    """One capture: a packet source feeding the placement engine.

    backend "udp" binds `bind` ("IPv4:port"; port 0 picks a free one, see `port`),
    "pcap" replays `path`, "mem" replays `packets` (2-D uint8 array, one packet per row,
    `sizes` bytes each; link-layer frames when `frames`) or generates the example stream
    (`count` packets from `first`, or exactly the sequence numbers in `schedule`);
    with `nic_rate_gbps` the generator emulates a NIC filling a receive ring at that rate.
    "ibv" receives `bind`'s IPv4:port through rdma-core on `interface` (ibv.py), and
    "mem" with emulate="ibv" runs the same header-split path against an emulated NIC
    (at `nic_rate_gbps` over all `queues` when given).

    Several receive queues (`queues` for mem and ibv, `threads` for udp) feed ONE chunk
    stream: each queue places its packets straight into the shared chunks and has its own
    window of `max_chunks`; a chunk is handed on once every queue has moved past it, or
    once a queue that stopped placing packets has held it back for `stall_timeout_ms`
    (counted `queue_stalls`); a queue that keeps placing but lags so far that the others
    wait for it a fifth of that time is moved forward, its older packets late (counted
    `queue_skips`; `skip_lagging`, by default for live sources: udp, ibv, an emulated NIC
    at a rate). The same holds for the header-split lanes (ibv, emulate="ibv").
    The mem generator spreads packets round-robin over its
    queues, or as `queue_of` (one queue index per packet) says.

    fmt=Format.spead(...) makes each slot a SPEAD heap (receiver/README.md, "SPEAD heaps");
    the ibv backend then receives with rq="striding" (rq=None picks it).

    device="cuda:N" delivers the chunks into GPU memory (gpu.py); gpudirect=True places
    frames already in GPU memory with the reorder kernels (mem backend: NIC emulation).

    rate_gbps: the rate the capture must take; the queues (`threads` for udp), the chunk
    pool, the header-data split's receive queue depth and, for GPU delivery,
    packets_per_chunk not given are sized for it by the rule in sizing.py (per path:
    copying, header-data split, its emulation), and a
    CapacityWarning says when this machine has too few CPUs for them (`sizing` holds the
    outcome). Without it packets_per_chunk is 1024.
    """

    def __init__(
        self,
        backend: Backend = "udp",
        *,
        fmt: _core.Format | None = None,
        packets_per_chunk: int | None = None,
        max_chunks: int = 4,
        n_chunks: int = 0,
        policy: Policy = "block",
        first_chunk: int | None = None,
        stall_timeout_ms: int = 50,
        skip_lagging: bool | None = None,
        bind: str = "127.0.0.1:0",
        threads: int | None = None,
        cpus: Sequence[int] | None = None,
        rcvbuf: int = 64 << 20,
        path: str | None = None,
        packets: npt.ArrayLike | None = None,
        sizes: Sequence[int] | None = None,
        frames: bool = False,
        linktype: int = 1,
        repeat: int = 1,
        first: int = 0,
        count: int = 0,
        schedule: npt.ArrayLike | None = None,
        queue_of: npt.ArrayLike | None = None,
        fill: bool = True,
        # ibv backend and its emulation (see ibv.py)
        interface: str = "",
        queues: int | None = None,
        depth: int | None = None,
        rq: str | None = None,
        busy_poll: bool = True,
        emulate: str | None = None,
        bad: npt.ArrayLike | None = None,
        nic_rate_gbps: float | None = None,
        device: str = "cpu",
        gpudirect: bool = False,
        gpu_chunks: int = 0,
        gpu_options: Mapping[str, int] | None = None,
        rate_gbps: float | None = None,
        rdma: Any = None,  # sources.RdmaSource: the rdma backend's options (rdma.py)
        groups: Sequence[str] = (),  # udp, ibv: multicast groups joined while running
    ) -> None:
        self.fmt = fmt if fmt is not None else _core.Format()
        if groups and backend == "udp":
            # Linux gives every socket of a SO_REUSEPORT group a copy of each multicast
            # datagram: one socket receives the groups.
            if threads is not None and threads > 1:
                raise ValueError(f"threads={threads}: multicast groups need threads=1")
            threads = 1
        # The header-split engine sizes its own pool from its receive queues.
        split = backend == "ibv" or (backend == "mem" and emulate is not None)
        self.sizing: Sizing | None = None
        if rate_gbps is not None:
            path = "copy"
            if split:
                path = "split_emulated" if backend == "mem" and fill else "split"
            self.sizing = size_for_rate(
                rate_gbps,
                self.fmt.payload_size,
                max_chunks,
                to_gpu=device != "cpu",
                queues=threads if backend == "udp" else queues,
                n_chunks=n_chunks,
                helper_threads=(
                    1 if backend == "mem" and nic_rate_gbps is not None and not split else 0
                ),
                path=path,
                packets_per_chunk=packets_per_chunk,
            )
            if packets_per_chunk is None and self.sizing.packets_per_chunk is not None:
                packets_per_chunk = self.sizing.packets_per_chunk
            striding = backend == "ibv" and (
                rq == "striding" or (rq is None and self.fmt.spead_config is not None)
            )
            if depth is None and split and not striding and self.sizing.depth is not None:
                depth = self.sizing.depth
            if backend == "udp":
                threads = self.sizing.queues
            else:
                queues = self.sizing.queues
            if not split:
                n_chunks = self.sizing.n_chunks
            for note in self.sizing.warnings:
                warnings.warn(note, CapacityWarning, stacklevel=2)
        if packets_per_chunk is None:
            packets_per_chunk = 1024
        threads = 1 if threads is None else threads
        queues = 1 if queues is None else queues
        if split and not n_chunks and (device != "cpu" or rate_gbps is not None):
            # Room for the chunks on their way to the GPU, or (sized for a rate) in the
            # hands of a consumer that may pause (sizing.py).
            n_chunks = split_pool(
                max_chunks, queues, DEFAULT_DEPTH if depth is None else depth, packets_per_chunk
            )
        k = threads if backend == "udp" else queues
        if k > 1 and not n_chunks and not split:
            n_chunks = max_chunks + 4 + 2 * k  # the rule of sizing.py without a rate
        if skip_lagging is None:
            # Live sources (a NIC, a socket, an emulated NIC at a rate) drop while their
            # queues wait for a lagging one; replays lose nothing by waiting.
            skip_lagging = backend in ("udp", "ibv") or nic_rate_gbps is not None
        config = _core.EngineConfig(
            packets_per_chunk=packets_per_chunk,
            max_chunks=max_chunks,
            n_chunks=n_chunks,
            policy=policy,
            first_chunk=first_chunk,
            stall_timeout_ms=stall_timeout_ms,
            skip_lagging=skip_lagging,
        )
        self.backend = backend
        self.device = device
        self._cap: Any
        self._membership = Membership(groups, interface) if groups else None
        if gpudirect:
            from . import gpu

            if self.fmt.spead_config is not None:
                raise ValueError(
                    "gpudirect places fixed-size packets by a sequence number in the payload; "
                    "SPEAD heaps (Format.spead) are placed on the CPU path: device='cuda:N' "
                    "without gpudirect copies their chunks to the GPU"
                )
            if backend != "mem" or device == "cpu":
                raise ValueError(
                    "gpudirect=True needs device='cuda:N' and the mem backend's NIC emulation, "
                    f"got backend={backend!r}, device={device!r}"
                )
            self._cap = gpu.GpuDirect(
                self.fmt,
                config,
                device,
                packets=packets,
                sizes=sizes,
                frames=frames,
                repeat=repeat,
                first=first,
                count=count,
                schedule=schedule,
                options=gpu_options,
            )
        elif backend == "mem" and emulate is not None:
            self._cap = open_split_emulation(
                self.fmt,
                config,
                emulate,
                first,
                count,
                schedule,
                queues,
                depth,
                bad,
                fill,
                nic_rate_gbps,
                list(cpus or []),
            )
        elif backend == "mem" and nic_rate_gbps is not None:
            self._cap = _core.emu_capture(
                self.fmt,
                config,
                first,
                count,
                nic_rate_gbps,
                fill=fill,
                cpus=list(cpus or []),
                queues=queues,
            )
        elif backend == "udp":
            host, port = parse_endpoint(bind)
            self._cap = _core.Capture.udp(
                self.fmt, config, host, port, threads, list(cpus or []), rcvbuf
            )
        elif backend == "pcap":
            if path is None:
                raise ValueError("backend 'pcap' needs path=")
            self._cap = _core.Capture.pcap(self.fmt, config, str(path))
        elif backend == "ibv":
            # SPEAD heaps need the copying receive queue (the split places fixed payloads).
            spead = self.fmt.spead_config is not None
            if spead and rq == "split":
                raise ValueError(
                    "rq='split' places fixed-size payloads at a fixed offset; SPEAD heaps "
                    "(Format.spead) need rq='striding' (the default for SPEAD formats)"
                )
            rq = rq or ("striding" if spead else "split")
            self._cap = open_ibv(
                self.fmt,
                config,
                bind,
                interface,
                queues,
                depth,
                list(cpus or []),
                rq,
                busy_poll,
                tuple(groups),
            )
        elif backend == "rdma":
            from .rdma import open_rdma

            if rdma is None:
                raise ValueError("backend 'rdma' needs rdma=sources.RdmaSource(...)")
            self._cap = open_rdma(self.fmt, config, rdma, device)
        elif backend == "mem":
            if packets is not None:
                rows = np.ascontiguousarray(packets, dtype=np.uint8)
                self._cap = _core.Capture.buffer(
                    self.fmt,
                    config,
                    rows,
                    list(sizes) if sizes is not None else None,
                    frames,
                    linktype,
                    repeat,
                    queues,
                )
            else:
                sched = None if schedule is None else np.asarray(schedule, dtype=np.uint64)
                assign = None if queue_of is None else [int(q) for q in np.asarray(queue_of)]
                self._cap = _core.Capture.generator(
                    self.fmt, config, first, count, sched, fill, queues, assign
                )
        else:
            raise ValueError(
                f"backend must be 'udp', 'pcap', 'mem', 'ibv' or 'rdma', got {backend!r}"
            )
        # The rdma source's ring is already where the device says.
        if device != "cpu" and not gpudirect and backend != "rdma":
            from . import gpu

            gpu.parse_device(device)
            self._cap = gpu.HostToGpu(self._cap, device, gpu_chunks)
        self._t0: float | None = None
        self._t1: float | None = None

    @classmethod
    def open(
        cls,
        source: Source,
        *,
        fmt: _core.Format | None = None,
        chunking: Chunking | None = None,
        delivery: Delivery | None = None,
        rate_gbps: float | None = None,
    ) -> Capture:
        """A capture from declared pieces (sources.py): one source object per backend,
        the chunking and the delivery settings."""
        if not hasattr(source, "capture_kwargs") or not hasattr(source, "backend"):
            raise TypeError(f"source must be one of sources.py's source objects, got {source!r}")
        kw: dict[str, Any] = dict(source.capture_kwargs())
        kw.update((chunking or Chunking()).capture_kwargs())
        kw.update((delivery or Delivery()).capture_kwargs())
        return cls(source.backend, fmt=fmt, rate_gbps=rate_gbps, **kw)

    @property
    def config(self) -> _core.EngineConfig:
        return self._cap.config

    @property
    def rdma_params(self) -> Any:
        """The rdma source's connection parameters (rdma.RdmaParams), for
        FourHundredGbe.rdma_connect."""
        if self.backend != "rdma":
            raise ValueError(f"rdma_params belongs to the rdma source, not {self.backend!r}")
        from .rdma import RdmaParams

        return RdmaParams.from_mapping(self._cap.params)

    @property
    def port(self) -> int | None:
        """The bound UDP port (udp backend)."""
        return self._cap.port

    @property
    def rcvbuf(self) -> int | None:
        """The UDP receive buffer the kernel granted, in bytes (udp backend)."""
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
            self._cap.start()
        return self

    def stop(self) -> None:
        """Stop receiving, flush the open chunks (iterate chunks() to drain them)."""
        if self._t1 is None and self._t0 is not None:
            self._t1 = time.monotonic()
        self._cap.stop()
        if self._membership is not None:
            self._membership.leave()

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
