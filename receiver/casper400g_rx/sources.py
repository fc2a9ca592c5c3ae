"""The packet sources of a capture: one typed object per kind of source, each checking
its own options when made (ValueError naming the value) and opening itself.

```python
import casper400g_rx as rx

cap = rx.Capture(
    rx.UdpSource(bind="10.0.0.2:7148", threads=4, cpus=[2, 3, 4, 5]),
    chunking=rx.Chunking(packets_per_chunk=4096, max_chunks=8),
    delivery=rx.Delivery(device="cuda:0"),
)
```

A source knows how many receive queues it asks for (`lanes`, sized for a rate when left
None), whether it is live (it drops while a queue lags: `live`), whether it is the
header-data split (`split_depth`), and how it opens the engine's capture for a format, an
engine configuration and a delivery (`open`). An option of one source (a source-address
filter, multicast groups) is a field of that source plus the lines of its `open` that use
it.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from ipaddress import IPv4Address
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from . import _core
from .delivery import Delivery
from .endpoint import parse_endpoint
from .ibv import DEFAULT_DEPTH, open_ibv, open_split_emulation
from .multicast import Membership, parse_groups

if TYPE_CHECKING:
    from .sizing import Path as RatePath


def _positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")


def _cpus(value: Sequence[int] | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    cpus = tuple(int(c) for c in value)
    bad = [c for c in cpus if c < 0]
    if bad:
        raise ValueError(f"cpus must be CPU numbers >= 0, got {bad[0]}")
    return cpus


def _given(cpus: Sequence[int] | None) -> tuple[int, ...] | None:
    """A source's `cpus` as given: None lets a capture sized for a rate choose them, an
    empty list leaves its threads unpinned."""
    return None if cpus is None else tuple(cpus)


def _multicast(source: UdpSource | IbvSource) -> None:
    """Checks a source's multicast groups, and that its bind address can receive them."""
    object.__setattr__(source, "groups", parse_groups(source.groups))
    host, port = parse_endpoint(source.bind)
    if not source.groups:
        return
    if port == 0:
        raise ValueError(f"with groups, bind must name the groups' UDP port, got {source.bind!r}")
    if host != "0.0.0.0" and (host not in source.groups or len(source.groups) > 1):
        raise ValueError(
            f"bind={source.bind!r} cannot receive the groups {list(source.groups)}: bind "
            "'0.0.0.0:port' (any group), or one group's address with that group alone"
        )


class Source(ABC):
    """A packet source. Subclasses are frozen dataclasses of their options."""

    def lanes(self) -> int | None:
        """Receive queues asked for; None: one, or as many as Capture's rate_gbps needs."""
        return 1

    def with_lanes(self, lanes: int, depth: int | None, fmt: _core.Format) -> Source:
        """This source with the receive queues (and header-split depth) sized for a rate;
        options the user gave stay."""
        return self

    @property
    def live(self) -> bool:
        """A live source loses packets while its queues wait for a lagging one (so the
        engine skips past it, see Chunking.skip_lagging); a replay loses nothing."""
        return False

    def split_depth(self) -> int | None:
        """Receives posted per queue of the header-data split (whose engine sizes its own
        chunk pool); None for the copying path."""
        return None

    def rate_path(self) -> RatePath:
        """The path of sizing.py's per-queue rates: copy, split or split_emulated."""
        return "copy"

    def helper_threads(self) -> int:
        """Threads besides the receive queues that want a core (an emulated NIC's)."""
        return 0

    def pinned_threads(self) -> int:
        """Threads its `cpus` option pins, one CPU each (0: it has no such option)."""
        return 0

    def cpus_given(self) -> tuple[int, ...] | None:
        """The CPUs the user gave its threads (None: the capture may choose)."""
        return None

    def with_cpus(self, cpus: Sequence[int]) -> Source:
        """This source with its threads pinned to `cpus` (placement.py)."""
        return self

    def nic(self) -> str:
        """The network interface it receives on, whose NUMA node is the data's ('')."""
        return ""

    def open(self, fmt: _core.Format, config: _core.EngineConfig, delivery: Delivery) -> Any:
        """The engine's capture of this source, its chunks delivered as `delivery` says."""
        if delivery.gpudirect:
            raise ValueError(
                f"gpudirect=True places frames of the NIC emulation (MemSource), not {self!r}"
            )
        return delivery.deliver(self.open_host(fmt, config))

    @abstractmethod
    def open_host(self, fmt: _core.Format, config: _core.EngineConfig) -> Any:
        """The engine's capture of this source into host chunks."""

    def membership(self) -> Membership | None:
        """The multicast membership the capture holds while it runs (multicast.py)."""
        return None


@dataclass(frozen=True)
class UdpSource(Source):
    """UDP sockets bound to `bind` ("IPv4:port"; port 0 picks a free one, see
    Capture.port); `threads` SO_REUSEPORT sockets share one chunk stream, each thread
    pinned to its entry of `cpus`; `rcvbuf` bytes of kernel receive buffer asked per socket.
    `groups`: IPv4 multicast groups joined on `interface` (netdev name; '' lets each
    group's route choose) while the capture runs (multicast.py). `src_filter`: the sender's
    IPv4 (the FPGA's); datagrams from others are dropped and counted (source_filtered)."""

    bind: str = "127.0.0.1:0"
    threads: int | None = None  # None: 1, or sized for Capture's rate_gbps
    cpus: Sequence[int] | None = None
    rcvbuf: int = 64 << 20
    groups: Sequence[str] = ()
    interface: str = ""
    src_filter: str | None = None

    def __post_init__(self) -> None:
        parse_endpoint(self.bind)
        _positive("threads", self.threads)
        object.__setattr__(self, "cpus", _cpus(self.cpus))
        if self.rcvbuf < 1:
            raise ValueError(f"rcvbuf must be >= 1, got {self.rcvbuf!r}")
        if self.src_filter is not None:
            from ipaddress import IPv4Address

            try:
                IPv4Address(self.src_filter)
            except ValueError:
                raise ValueError(
                    f"src_filter must be an IPv4 address, got {self.src_filter!r}"
                ) from None
        _multicast(self)
        if self.interface and not self.groups:
            raise ValueError(
                f"interface={self.interface!r} is where groups are joined; give groups= too"
            )
        if self.groups and (self.threads or 1) > 1:
            # Linux hands each multicast datagram to every socket of a SO_REUSEPORT group.
            raise ValueError(
                f"threads={self.threads}: every socket would get a copy of each multicast "
                "datagram; receive groups with threads=1 (one capture per group to spread)"
            )

    def lanes(self) -> int | None:
        return 1 if self.groups else self.threads

    def with_lanes(self, lanes: int, depth: int | None, fmt: _core.Format) -> UdpSource:
        return self if self.groups else replace(self, threads=lanes)

    def membership(self) -> Membership | None:
        return Membership(self.groups, self.interface) if self.groups else None

    def pinned_threads(self) -> int:
        return self.threads or 1

    def cpus_given(self) -> tuple[int, ...] | None:
        return _given(self.cpus)

    def with_cpus(self, cpus: Sequence[int]) -> UdpSource:
        return replace(self, cpus=tuple(cpus))

    def nic(self) -> str:
        return self.interface

    @property
    def live(self) -> bool:
        return True

    def open_host(self, fmt: _core.Format, config: _core.EngineConfig) -> Any:
        host, port = parse_endpoint(self.bind)
        return _core.Capture.udp(
            fmt,
            config,
            host,
            port,
            self.threads or 1,
            list(self.cpus or ()),
            self.rcvbuf,
            self.src_filter or "",
        )


@dataclass(frozen=True)
class PcapSource(Source):
    """A classic pcap file replayed (Ethernet, raw IPv4 or Linux cooked frames)."""

    path: str | os.PathLike[str]

    def __post_init__(self) -> None:
        if not str(self.path):
            raise ValueError("path must name a pcap file, got ''")

    def open_host(self, fmt: _core.Format, config: _core.EngineConfig) -> Any:
        return _core.Capture.pcap(fmt, config, os.fspath(self.path))


@dataclass(frozen=True)
class MemSource(Source):
    """Packets from memory: given rows (`packets`, one packet per row, `sizes` bytes each;
    link-layer frames of `linktype` when `frames`; the rows played `repeat` times), or the
    example stream (`count` packets from `first`, or exactly the sequence numbers in
    `schedule`; `fill=False` leaves the payloads unwritten). Its `queues` threads take
    the packets round-robin, or as `queue_of` (one queue index per packet) says.

    With Delivery(gpudirect=True) the packets are frames written into GPU memory and
    placed there by the reorder kernels (the rows must then be frames)."""

    count: int = 0
    first: int = 0
    schedule: npt.ArrayLike | None = field(default=None, repr=False)
    queue_of: npt.ArrayLike | None = field(default=None, repr=False)
    packets: npt.ArrayLike | None = field(default=None, repr=False)
    sizes: Sequence[int] | None = field(default=None, repr=False)
    frames: bool = False
    linktype: int = 1
    repeat: int = 1
    fill: bool = True
    queues: int | None = None

    def __post_init__(self) -> None:
        if self.count < 0 or self.first < 0:
            raise ValueError(f"count and first must be >= 0, got {self.count!r}, {self.first!r}")
        _positive("queues", self.queues)
        _positive("repeat", self.repeat)
        if self.packets is not None and (self.schedule is not None or self.queue_of is not None):
            raise ValueError(
                "packets= replays the given rows; schedule= and queue_of= belong to the "
                "example stream's generator"
            )

    def __repr__(self) -> str:
        what = (
            f"packets={np.shape(self.packets)[0]} rows"
            if self.packets is not None
            else f"schedule={len(np.asarray(self.schedule))} entries"
            if self.schedule is not None
            else f"count={self.count}, first={self.first}"
        )
        return f"MemSource({what}, queues={self.queues}, fill={self.fill})"

    def lanes(self) -> int | None:
        return self.queues

    def with_lanes(self, lanes: int, depth: int | None, fmt: _core.Format) -> MemSource:
        return replace(self, queues=lanes)

    def open(self, fmt: _core.Format, config: _core.EngineConfig, delivery: Delivery) -> Any:
        if not delivery.gpudirect:
            return super().open(fmt, config, delivery)
        from .gpu import GpuDirect

        if fmt.spead_config is not None and self.packets is None:
            raise ValueError(
                "gpudirect with a SPEAD format places the frames given (packets=..., "
                "frames=True): the example stream it generates otherwise is not SPEAD"
            )
        return GpuDirect(
            fmt,
            config,
            delivery.devices or delivery.device,
            packets=self.packets,
            sizes=self.sizes,
            frames=self.frames,
            repeat=self.repeat,
            first=self.first,
            count=self.count,
            schedule=self.schedule,
            options=delivery.gpu_options,
        )

    def open_host(self, fmt: _core.Format, config: _core.EngineConfig) -> Any:
        queues = self.queues or 1
        if self.packets is not None:
            rows = np.ascontiguousarray(self.packets, dtype=np.uint8)
            sizes = list(self.sizes) if self.sizes is not None else None
            return _core.Capture.buffer(
                fmt, config, rows, sizes, self.frames, self.linktype, self.repeat, queues
            )
        sched = None if self.schedule is None else np.asarray(self.schedule, dtype=np.uint64)
        assign = None if self.queue_of is None else [int(q) for q in np.asarray(self.queue_of)]
        return _core.Capture.generator(
            fmt, config, self.first, self.count, sched, self.fill, queues, assign
        )


@dataclass(frozen=True)
class EmulatedNic(Source):
    """A NIC played in software, sending the example stream (`count` packets from
    `first`) over `queues` receive queues, each queue's thread pinned to its entry of
    `cpus`. `nic_rate_gbps` (total over the queues) paces it like a NIC: packets that find
    their queue full are dropped and counted `nic_drops`, and the capture is live; None
    sends as fast as the queues take them. `fill=False` leaves the payloads unwritten.

    split=False: the copying path (a generator thread writes receive rings, a thread per
    queue places). split=True: the ibv source's header-data split against the emulated
    NIC, with `depth` receives posted per queue; it also replays exactly `schedule`, with
    the sequence numbers in `bad` sent as frames the NIC's checks reject, and
    `serial=True` serves all queues from one thread in the schedule's order (without a
    rate), which makes the outcome a function of the schedule alone. With `packets` (UDP
    payloads, one a row, the first `sizes[i]` bytes of row i; SPEAD packets for a SPEAD
    format) it sends those rows in order instead of the example stream, row i to queue
    `queue_of[i]` (needed with several queues), each scattered over its receive as the
    NIC does."""

    count: int = 0
    first: int = 0
    nic_rate_gbps: float | None = None
    queues: int | None = None
    cpus: Sequence[int] | None = None
    fill: bool = True
    split: bool = False
    depth: int | None = None
    schedule: npt.ArrayLike | None = field(default=None, repr=False)
    bad: npt.ArrayLike | None = field(default=None, repr=False)
    serial: bool = False
    packets: npt.ArrayLike | None = field(default=None, repr=False)
    sizes: Sequence[int] | None = field(default=None, repr=False)
    queue_of: npt.ArrayLike | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.nic_rate_gbps is not None and not self.nic_rate_gbps >= 0:
            raise ValueError(f"nic_rate_gbps must be >= 0, got {self.nic_rate_gbps!r}")
        if self.count < 0 or self.first < 0:
            raise ValueError(f"count and first must be >= 0, got {self.count!r}, {self.first!r}")
        _positive("queues", self.queues)
        _positive("depth", self.depth)
        if not self.split:
            given = [
                name
                for name, value in (
                    ("depth", self.depth),
                    ("schedule", self.schedule),
                    ("bad", self.bad),
                    ("serial", self.serial or None),
                    ("packets", self.packets),
                    ("queue_of", self.queue_of),
                )
                if value is not None
            ]
            if given:
                raise ValueError(
                    f"{', '.join(given)}: options of the header-data split's emulation (split=True)"
                )
        if self.packets is not None and (self.count or self.schedule is not None):
            raise ValueError(
                "packets= sends the given rows; count= and schedule= belong to the example stream"
            )
        if (self.sizes is not None or self.queue_of is not None) and self.packets is None:
            raise ValueError("sizes= and queue_of= describe the rows of packets=; give packets=")
        object.__setattr__(self, "cpus", _cpus(self.cpus))

    def lanes(self) -> int | None:
        return self.queues

    def with_lanes(self, lanes: int, depth: int | None, fmt: _core.Format) -> EmulatedNic:
        if not self.split:
            return replace(self, queues=lanes)
        return replace(self, queues=lanes, depth=self.depth if self.depth else depth)

    @property
    def live(self) -> bool:
        return self.nic_rate_gbps is not None

    def split_depth(self) -> int | None:
        return (self.depth or DEFAULT_DEPTH) if self.split else None

    def rate_path(self) -> RatePath:
        if not self.split:
            return "copy"
        return "split_emulated" if self.fill else "split"

    def helper_threads(self) -> int:
        return 0 if self.split else 1

    def pinned_threads(self) -> int:
        if self.split:
            return 1 if self.serial else self.queues or 1
        return 1 + (self.queues or 1)  # the generator, then a receiver per queue

    def cpus_given(self) -> tuple[int, ...] | None:
        return _given(self.cpus)

    def with_cpus(self, cpus: Sequence[int]) -> EmulatedNic:
        return replace(self, cpus=tuple(cpus))

    def open_host(self, fmt: _core.Format, config: _core.EngineConfig) -> Any:
        cpus = list(self.cpus or ())
        if self.split:
            return open_split_emulation(
                fmt,
                config,
                self.serial,
                self.first,
                self.count,
                self.schedule,
                self.queues or 1,
                self.depth,
                self.bad,
                self.fill,
                self.nic_rate_gbps,
                cpus,
                self.packets,
                self.sizes,
                self.queue_of,
            )
        return _core.emu_capture(
            fmt,
            config,
            self.first,
            self.count,
            self.nic_rate_gbps or 0.0,
            fill=self.fill,
            cpus=cpus,
            queues=self.queues or 1,
        )


@dataclass(frozen=True)
class IbvSource(Source):
    """rdma-core raw-packet queues on `interface` for the stream sent to `bind`
    ("NIC-IPv4:port"; with `queues=N` ports port..port+N-1, one queue and one thread
    pinned to its entry of `cpus` each). rq="split" (default) scatters each frame's
    headers into a small ring and its payload straight into the predicted chunk slot
    (for SPEAD formats each packet's heap bytes at their heap offset in the heap's slot),
    `depth` receives posted per queue; rq="striding" uses the mlx5 multi-packet receive
    queue and copies each payload once. With `groups`,
    the queues take those IPv4 multicast groups at bind's port (flow rules on the groups'
    MACs and addresses, the groups joined through a socket while the capture runs)."""

    bind: str
    interface: str = ""
    queues: int | None = None
    depth: int | None = None
    cpus: Sequence[int] | None = None
    rq: Literal["split", "striding"] | None = None
    busy_poll: bool = True
    groups: Sequence[str] = ()

    def __post_init__(self) -> None:
        parse_endpoint(self.bind)
        _positive("queues", self.queues)
        _positive("depth", self.depth)
        if self.rq not in (None, "split", "striding"):
            raise ValueError(f"rq must be 'split' or 'striding', got {self.rq!r}")
        object.__setattr__(self, "cpus", _cpus(self.cpus))
        _multicast(self)
        if self.groups and not self.interface:
            raise ValueError("groups are received on a NIC: give interface= (its netdev name)")

    def membership(self) -> Membership | None:
        return Membership(self.groups, self.interface) if self.groups else None

    def receive_queue(self, fmt: _core.Format) -> str:
        """The receive queue for `fmt`: the header-data split unless rq says otherwise
        (SPEAD formats too: each packet's heap bytes go straight to their heap offset)."""
        return self.rq or "split"

    def lanes(self) -> int | None:
        return self.queues

    def with_lanes(self, lanes: int, depth: int | None, fmt: _core.Format) -> IbvSource:
        striding = self.receive_queue(fmt) == "striding"
        keep = self.depth is not None or striding
        return replace(self, queues=lanes, depth=self.depth if keep else depth)

    @property
    def live(self) -> bool:
        return True

    def split_depth(self) -> int | None:
        return self.depth or DEFAULT_DEPTH

    def rate_path(self) -> RatePath:
        return "split"

    def pinned_threads(self) -> int:
        return self.queues or 1

    def cpus_given(self) -> tuple[int, ...] | None:
        return _given(self.cpus)

    def with_cpus(self, cpus: Sequence[int]) -> IbvSource:
        return replace(self, cpus=tuple(cpus))

    def nic(self) -> str:
        return self.interface

    def open_host(self, fmt: _core.Format, config: _core.EngineConfig) -> Any:
        return open_ibv(
            fmt,
            config,
            self.bind,
            self.interface,
            self.queues or 1,
            self.depth,
            list(self.cpus or ()),
            self.receive_queue(fmt),
            self.busy_poll,
            self.groups,
        )


@dataclass(frozen=True)
class RdmaSource(Source):
    """The core's RDMA mode (rdma.py): a UC queue pair on the RDMA device with a RoCE v2
    GID for `ip`, accepting RDMA WRITEs from the core at `peer_ip` into a chunk ring
    (Chunking: `packets_per_chunk` slots per chunk, `max_chunks` chunks, or `n_chunks` when
    given; Delivery(device="cuda:N") puts the ring in GPU memory). Released chunks go back
    to the core as credit datagrams to `peer_ip`:`credit_port` (0: none; then credits are
    the application's business, e.g. FourHundredGbe.rdma_credit). `slot_size` defaults
    to fmt.payload_size + 8; `psn` (the QP's receive PSN, the core's start PSN) to a random
    one. `emulate`: no verbs at all, the ring is written by the caller (tests, demos)."""

    peer_ip: str = ""
    ip: str = ""
    device: str = ""
    credit_port: int = 0
    mtu: int = 4096
    slot_size: int | None = None
    psn: int | None = None
    recv_depth: int | None = None
    emulate: bool = False

    def __post_init__(self) -> None:
        for name in ("peer_ip", "ip"):
            value = getattr(self, name)
            if value:
                try:
                    IPv4Address(value)
                except ValueError:
                    raise ValueError(f"{name} must be an IPv4 address, got {value!r}") from None
        if not self.peer_ip and not self.emulate:
            raise ValueError("peer_ip (the core's IPv4 address) is needed")
        if self.mtu not in (1024, 2048, 4096):
            raise ValueError(f"mtu must be 1024, 2048 or 4096, got {self.mtu!r}")
        if not 0 <= self.credit_port <= 0xFFFF:
            raise ValueError(f"credit_port must be 0..65535, got {self.credit_port!r}")
        if self.psn is not None and not 0 <= self.psn < 1 << 24:
            raise ValueError(f"psn must be 0..2^24-1, got {self.psn!r}")
        if self.slot_size is not None and not 9 <= self.slot_size < 1 << 24:
            raise ValueError(f"slot_size must be 9..2^24-1, got {self.slot_size!r}")
        _positive("recv_depth", self.recv_depth)

    def open(self, fmt: _core.Format, config: _core.EngineConfig, delivery: Delivery) -> Any:
        from .rdma import open_rdma

        if delivery.gpudirect or delivery.gpu_chunks or delivery.devices:
            raise ValueError(
                "the rdma source's ring is where Delivery's device says (the NIC writes "
                "it); gpudirect, gpu_chunks and devices= (several GPUs) belong to the other "
                "sources"
            )
        # The ring is already where the device says: no copy stage after it.
        return open_rdma(fmt, config, self, delivery.device)

    def open_host(self, fmt: _core.Format, config: _core.EngineConfig) -> Any:
        return self.open(fmt, config, Delivery())
