"""Declared sources: one object per backend with its own typed options, and the chunking
and delivery settings as objects of their own, for `Capture.open`.

```python
import casper400g_rx as rx
from casper400g_rx.sources import Chunking, Delivery, UdpSource

cap = rx.Capture.open(
    UdpSource(bind="10.0.0.2:7148", threads=4, cpus=[2, 3, 4, 5]),
    chunking=Chunking(packets_per_chunk=4096, max_chunks=8),
    delivery=Delivery(device="cuda:0"),
)
```

Each object checks its options when made (ValueError naming the value) and prints as
what it is (`repr`). `Capture("udp", bind=..., ...)` stays the short path for the
common case; both reach the same capture.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .endpoint import parse_endpoint
from .gpu import parse_device
from .multicast import parse_groups


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


@dataclass(frozen=True)
class UdpSource:
    """UDP sockets bound to `bind`; `threads` SO_REUSEPORT sockets share one chunk stream.
    `groups`: IPv4 multicast groups joined on `interface` (netdev name; '' lets each
    group's route choose) while the capture runs (multicast.py)."""

    bind: str = "127.0.0.1:0"
    threads: int | None = None  # None: 1, or sized for Capture.open's rate_gbps
    cpus: Sequence[int] | None = None
    rcvbuf: int = 64 << 20
    groups: Sequence[str] = ()
    interface: str = ""

    backend = "udp"

    def __post_init__(self) -> None:
        parse_endpoint(self.bind)
        _positive("threads", self.threads)
        object.__setattr__(self, "cpus", _cpus(self.cpus))
        if self.rcvbuf < 1:
            raise ValueError(f"rcvbuf must be >= 1, got {self.rcvbuf!r}")
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

    def capture_kwargs(self) -> dict[str, Any]:
        return {
            "bind": self.bind,
            "threads": self.threads,
            "cpus": self.cpus,
            "rcvbuf": self.rcvbuf,
            "groups": self.groups,
            "interface": self.interface,
        }


@dataclass(frozen=True)
class PcapSource:
    """A classic pcap file replayed (Ethernet, raw IPv4 or Linux cooked frames)."""

    path: str

    backend = "pcap"

    def __post_init__(self) -> None:
        if not str(self.path):
            raise ValueError("path must name a pcap file, got ''")

    def capture_kwargs(self) -> dict[str, Any]:
        return {"path": str(self.path)}


@dataclass(frozen=True)
class MemSource:
    """Packets from memory: given rows (`packets`, UDP payloads or frames), or the example
    stream (`count` from `first`, or exactly `schedule`), over `queues` threads
    (round-robin, or as `queue_of` says)."""

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

    backend = "mem"

    def __post_init__(self) -> None:
        if self.count < 0 or self.first < 0:
            raise ValueError(f"count and first must be >= 0, got {self.count!r}, {self.first!r}")
        _positive("queues", self.queues)
        _positive("repeat", self.repeat)

    def __repr__(self) -> str:
        what = (
            f"packets={np.shape(self.packets)[0]} rows"
            if self.packets is not None
            else f"schedule={len(np.asarray(self.schedule))} entries"
            if self.schedule is not None
            else f"count={self.count}, first={self.first}"
        )
        return f"MemSource({what}, queues={self.queues}, fill={self.fill})"

    def capture_kwargs(self) -> dict[str, Any]:
        return {
            k: getattr(self, k)
            for k in (
                "count", "first", "schedule", "queue_of", "packets", "sizes", "frames",
                "linktype", "repeat", "fill", "queues",
            )
        }  # fmt: skip


@dataclass(frozen=True)
class EmulatedNic:
    """A NIC played in software at `rate_gbps` (total over its queues). split=False: the
    copying path (a generator thread writes receive rings, a thread per queue places);
    split=True: the ibv backend's header-data split against the emulated NIC."""

    rate_gbps: float
    count: int
    first: int = 0
    queues: int | None = None
    cpus: Sequence[int] | None = None
    fill: bool = False
    split: bool = False
    depth: int | None = None  # split only: receives posted per queue

    backend = "mem"

    def __post_init__(self) -> None:
        if not self.rate_gbps >= 0:
            raise ValueError(f"rate_gbps must be >= 0, got {self.rate_gbps!r}")
        if self.count < 0:
            raise ValueError(f"count must be >= 0, got {self.count!r}")
        _positive("queues", self.queues)
        _positive("depth", self.depth)
        if self.depth is not None and not self.split:
            raise ValueError("depth is an option of the header-data split (split=True)")
        object.__setattr__(self, "cpus", _cpus(self.cpus))

    def capture_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "count": self.count,
            "first": self.first,
            "queues": self.queues,
            "cpus": self.cpus,
            "fill": self.fill,
            "nic_rate_gbps": self.rate_gbps,
        }
        if self.split:
            kw.update(emulate="ibv", depth=self.depth)
        return kw


@dataclass(frozen=True)
class IbvSource:
    """rdma-core raw-packet queues on `interface` for the stream sent to `bind`; with
    `groups`, for those IPv4 multicast groups at bind's port (flow rules on the groups'
    MACs and addresses, the groups joined through a socket while the capture runs)."""

    bind: str
    interface: str = ""
    queues: int | None = None
    depth: int | None = None
    cpus: Sequence[int] | None = None
    rq: Literal["split", "striding"] | None = None  # None: split, striding for SPEAD
    busy_poll: bool = True
    groups: Sequence[str] = ()

    backend = "ibv"

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

    def capture_kwargs(self) -> dict[str, Any]:
        return {
            "bind": self.bind,
            "interface": self.interface,
            "queues": self.queues,
            "depth": self.depth,
            "cpus": self.cpus,
            "rq": self.rq,
            "busy_poll": self.busy_poll,
            "groups": self.groups,
        }


@dataclass(frozen=True)
class RdmaSource:
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

    backend = "rdma"

    def __post_init__(self) -> None:
        from ipaddress import IPv4Address

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

    def capture_kwargs(self) -> dict[str, Any]:
        return {"rdma": self}


Source = UdpSource | PcapSource | MemSource | EmulatedNic | IbvSource | RdmaSource


@dataclass(frozen=True)
class Chunking:
    """How packets are grouped: chunk geometry, the reorder window, the pool, and what
    happens when the consumer falls behind."""

    packets_per_chunk: int | None = None  # None: 1024, or sized for GPU delivery (sizing.py)
    max_chunks: int = 4
    n_chunks: int = 0  # 0: sized (see sizing.py)
    policy: Literal["block", "drop_oldest"] = "block"
    first_chunk: int | None = None
    stall_timeout_ms: int = 50
    skip_lagging: bool | None = None  # None: for live sources (udp, ibv, emulated NIC)

    def __post_init__(self) -> None:
        _positive("packets_per_chunk", self.packets_per_chunk)
        _positive("max_chunks", self.max_chunks)
        _positive("stall_timeout_ms", self.stall_timeout_ms)
        if self.policy not in ("block", "drop_oldest"):
            raise ValueError(f"policy must be 'block' or 'drop_oldest', got {self.policy!r}")

    def capture_kwargs(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Delivery:
    """Where chunks go: host memory, or a GPU (through host memory, or GPUDirect with the
    reorder kernels; their options' defaults live in gpu.GPUDIRECT_DEFAULTS)."""

    device: str = "cpu"
    gpudirect: bool = False
    gpu_chunks: int = 0  # 0: as many as the host pool
    gpu_options: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        parse_device(self.device)
        if self.gpudirect and self.device == "cpu":
            raise ValueError("gpudirect=True needs device='cuda:N', got device='cpu'")
        if self.gpu_options is not None and not self.gpudirect:
            raise ValueError("gpu_options are the GPUDirect kernels' options (gpudirect=True)")
        if self.gpu_chunks < 0:
            raise ValueError(f"gpu_chunks must be >= 0, got {self.gpu_chunks!r}")

    def capture_kwargs(self) -> dict[str, Any]:
        return asdict(self)
