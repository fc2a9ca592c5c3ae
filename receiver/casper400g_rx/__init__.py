"""casper400g receiver: captures the core's UDP streams into chunks placed by sequence number.

```python
import casper400g_rx as rx
with rx.Capture("udp", bind="127.0.0.1:10000", packets_per_chunk=1024) as cap:
    for chunk in cap.chunks(timeout=1.0):
        data, ok = chunk.data, chunk.present  # NumPy views, no copy
        chunk.release()
    print(cap.stats)
```
"""

from __future__ import annotations

from ._core import Chunk, Format, IbvUnavailableError, Sender, example_payload, parse_frame
from .capture import Capture, RcvbufWarning, Stats, parse_endpoint
from .demo import demo_loopback
from .example_stream import example_chunk, example_payloads
from .sizing import CapacityWarning

__all__ = [
    "CapacityWarning",
    "Capture",
    "Chunk",
    "Format",
    "IbvUnavailableError",
    "RcvbufWarning",
    "Sender",
    "Stats",
    "demo_loopback",
    "example_chunk",
    "example_payload",
    "example_payloads",
    "parse_endpoint",
    "parse_frame",
]
