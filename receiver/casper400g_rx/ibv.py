"""The ibv backend (rdma-core, loaded at run time) and its NIC-less emulation.

`Capture(IbvSource(bind="10.0.0.2:10000", interface="enp1s0f0np0"))` steers the UDP stream
sent to 10.0.0.2:10000 (and, with `queues=N`, ports 10000..10000+N-1, one queue and one
pinned thread each) into a raw-packet queue of the NIC. With `rq="split"` (default) each
receive scatters the frame's headers into a small host ring and the payload straight into
its predicted chunk slot; `rq="striding"` uses the mlx5 multi-packet receive queue and
copies each payload once.

`Capture(EmulatedNic(count=..., split=True))` drives the same header-split engine from an
emulated NIC that writes frames into the posted receives and completes them in arrival
order (the schedule's), so drops, duplicates and reordering exercise the fix-up path.
With several queues, it runs one thread per queue (their interleaving races, as on a
NIC); serial=True serves all queues from one thread in the schedule's exact order, which
makes the outcome a function of the schedule alone.
With `nic_rate_gbps` the packets arrive at that total rate (each queue its share, each
queue thread pinned to its entry of `cpus`), and a packet that finds its queue without
a posted receive is dropped at once and counted `nic_drops`, as on a NIC.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from . import _core
from .endpoint import parse_endpoint

IbvUnavailableError = _core.IbvUnavailableError

DEFAULT_DEPTH = 1024


def ibv_status() -> str:
    """'' when the ibv backend can be used here, otherwise the reason."""
    return str(_core.ibv_load_error())


def open_ibv(
    fmt: _core.Format,
    config: _core.EngineConfig,
    bind: str,
    interface: str,
    queues: int,
    depth: int | None,
    cpus: Sequence[int],
    rq: str,
    busy_poll: bool,
    groups: Sequence[str] = (),
) -> _core.Capture:
    host, port = parse_endpoint(bind)
    if port == 0:
        raise ValueError(f"the ibv backend needs the stream's UDP port in bind=, got {bind!r}")
    if groups:
        # The flow rules match the groups' addresses and MACs (multicast.py joins them).
        host = "0.0.0.0"
        if not interface:
            raise ValueError("the ibv backend receives groups on a NIC: give interface=")
    # Without an explicit address the interface's own IPv4 is the flow's destination.
    ip = "" if host in ("0.0.0.0", "127.0.0.1", "localhost") and interface else host
    if host in ("127.0.0.1", "localhost") and not interface:
        raise ValueError(
            "the ibv backend receives from a NIC, not loopback: give bind='NIC-IP:port' "
            "and/or interface="
        )
    if host == "0.0.0.0" and not interface:
        raise ValueError(f"bind={bind!r} names no address: give interface= (or the NIC's IP)")
    options = _core.IbvOptions(
        interface=interface,
        ip=ip,
        port=port,
        queues=queues,
        depth=DEFAULT_DEPTH if depth is None else depth,
        cpus=list(cpus),
        rq=rq,
        busy_poll=busy_poll,
        groups=list(groups),
    )
    return _core.Capture.ibv(fmt, config, options)


def open_split_emulation(
    fmt: _core.Format,
    config: _core.EngineConfig,
    serial: bool,
    first: int,
    count: int,
    schedule: npt.ArrayLike | None,
    queues: int,
    depth: int | None,
    bad: npt.ArrayLike | None,
    fill: bool,
    rate_gbps: float | None = None,
    cpus: Sequence[int] = (),
    packets: npt.ArrayLike | None = None,
    sizes: Sequence[int] | None = None,
    queue_of: npt.ArrayLike | None = None,
) -> _core.Capture:
    options = _core.EmulatorOptions(
        queues=queues,
        depth=DEFAULT_DEPTH if depth is None else depth,
        first=first,
        count=count,
        schedule=None if schedule is None else np.asarray(schedule, dtype=np.uint64),
        bad=None if bad is None else np.asarray(bad, dtype=np.uint64),
        udp_port=fmt.udp_port or 10000,
        fill=fill,
        serial=serial,
        rate_gbps=rate_gbps or 0.0,
        cpus=list(cpus),
    )
    if packets is not None:
        rows = np.ascontiguousarray(packets, dtype=np.uint8)
        if rows.ndim != 2:
            raise ValueError(f"packets must be 2-D (one row a packet), got shape {rows.shape}")
        given = [rows.shape[1]] * rows.shape[0] if sizes is None else [int(n) for n in sizes]
        queues_of = None if queue_of is None else np.asarray(queue_of, dtype=np.uint64)
        options.give_packets(rows, given, queues_of)
    return _core.Capture.split_emulation(fmt, config, options)
