"""The `rdma` source: the core's RDMA mode writes the stream into this process's chunk ring
(host or GPU memory) with RoCEv2 RDMA WRITE; one immediate per chunk, no CPU per packet.

```python
import casper400g_rx as rx

cap = rx.Capture(
    rx.RdmaSource(peer_ip="10.0.0.10", ip="10.0.0.2", credit_port=4792),
    chunking=rx.Chunking(packets_per_chunk=1024, max_chunks=8),   # slots per chunk, ring chunks
    delivery=rx.Delivery(device="cuda:0"),                        # the ring in GPU memory
)
core.rdma_connect(cap.rdma_params)       # casperfpga_ext.FourHundredGbe: the core writes here
for chunk in cap.chunks(timeout=1.0):
    x, ok = chunk, chunk.present             # the same Chunk interface as every source
    chunk.release()                          # gives the ring place back: a credit to the core
```

The ring is Chunking's geometry: `max_chunks` chunks of `packets_per_chunk` slots, each slot
the 8-byte sequence header and `fmt.payload_size` bytes (docs/design/core.md §6). What the
core needs to write into it is `cap.rdma_params` (:class:`RdmaParams`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from . import _core

SLOT_HEADER_BYTES = 8
PATH_MTUS = (1024, 2048, 4096)


@dataclass(frozen=True)
class RdmaParams:
    """What the core's RDMA registers need (FourHundredGbe.rdma_connect), and where it
    came from (device, memory, registration)."""

    qpn: int
    psn: int
    rkey: int
    va: int
    gid: str
    gid_index: int
    ip: str
    mac: str
    netdev: str
    device: str
    mtu: int
    slot_size: int
    slots_per_chunk: int
    chunks: int
    payload_size: int
    credit_port: int
    memory: str
    registration: str

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> RdmaParams:
        return cls(**{f.name: d[f.name] for f in fields(cls)})

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def open_rdma(
    fmt: _core.Format,
    config: _core.EngineConfig,
    source: Any,  # sources.RdmaSource
    device: str = "cpu",
) -> _core.RdmaCapture:
    """The RdmaCapture for a declared RdmaSource, the chunking (`config`) and the delivery
    device ("cpu", or "cuda:N" for a ring in GPU memory)."""
    from .gpu import parse_device

    gpu = parse_device(device)
    slot_size = source.slot_size or fmt.payload_size + SLOT_HEADER_BYTES
    if slot_size < fmt.payload_size + SLOT_HEADER_BYTES:
        raise ValueError(
            f"slot_size {slot_size} cannot hold the 8-byte header and fmt.payload_size "
            f"{fmt.payload_size}"
        )
    chunks = config.n_chunks or config.max_chunks
    psn = source.psn if source.psn is not None else random.getrandbits(24)
    return _core.RdmaCapture(
        slot_size=slot_size,
        slots=config.packets_per_chunk,
        chunks=chunks,
        payload_size=fmt.payload_size,
        device=source.device,
        ip=source.ip,
        peer_ip=source.peer_ip,
        credit_port=source.credit_port,
        psn=psn,
        mtu=source.mtu,
        gpu=-1 if gpu is None else gpu,
        recv_depth=source.recv_depth or 0,
        emulate=source.emulate,
    )
