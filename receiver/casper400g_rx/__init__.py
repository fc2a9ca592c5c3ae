"""casper400g receiver: captures the core's UDP streams into chunks placed by sequence number.

```python
import casper400g_rx as rx

source = rx.UdpSource(bind="127.0.0.1:10000")
with rx.Capture(source, chunking=rx.Chunking(packets_per_chunk=1024)) as cap:
    for chunk in cap.chunks(timeout=1.0):
        data, ok = chunk.data, chunk.present  # NumPy views, no copy
        chunk.release()
    print(cap.stats)
```

A capture is made from pieces: a source (UdpSource, PcapSource, MemSource, EmulatedNic,
IbvSource, RdmaSource), its Chunking, its Delivery and the packet Format. Benchmarks,
hardware checks, senders and the loopback demonstration live in casper400g_rx.tools.
"""

from __future__ import annotations

from ._core import Chunk, Format, IbvUnavailableError, Sender, example_payload, parse_frame
from .capture import Capture, RcvbufWarning, Stats
from .chunking import Chunking
from .delivery import Delivery
from .endpoint import parse_endpoint
from .example_stream import example_chunk, example_payloads
from .rdma import RdmaParams
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

__all__ = [
    "CapacityWarning",
    "Capture",
    "Chunk",
    "Chunking",
    "Delivery",
    "EmulatedNic",
    "Format",
    "IbvSource",
    "IbvUnavailableError",
    "MemSource",
    "PcapSource",
    "RcvbufWarning",
    "RdmaParams",
    "RdmaSource",
    "Sender",
    "Source",
    "Stats",
    "UdpSource",
    "example_chunk",
    "example_payload",
    "example_payloads",
    "parse_endpoint",
    "parse_frame",
]
