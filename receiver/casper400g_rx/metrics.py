"""The receiver's counters for Prometheus: a capture's ``stats`` served for scraping.

``serve(cap, port)`` starts an HTTP endpoint (``/metrics``, the Prometheus text format)
in a background thread; every scrape reads ``cap.stats`` (which never waits for the
receive threads), so the figures are the capture's own, at the time of the scrape.
Counters are exported as ``casper400g_rx_<name>_total``, gauges as
``casper400g_rx_<name>``; ``labels`` (e.g. ``{"stream": "beam0"}``) tell captures apart.
Needs ``prometheus-client`` (``pip install casper400g[metrics]``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

COUNTERS: dict[str, str] = {
    "received": "Datagrams taken from the source (every outcome below counted once)",
    "packets": "Payloads placed in chunks",
    "bytes": "Payload bytes placed in chunks",
    "lost": "Slots of handed-on chunks that no packet filled",
    "late": "Packets for chunks already handed on (reordering, or a lagging queue)",
    "no_free_chunk": "Packets of chunks given up because the consumer held every chunk",
    "chunks_given_up": "Chunks given up whole because the consumer held every chunk",
    "out_of_window": "Packets too far ahead of or behind the window to trust",
    "window_resyncs": "Times a run of out-of-window packets moved the window to them",
    "duplicate": "Packets for slots already filled",
    "rejected": "Packets failing the format's checks",
    "discarded": "Packets discarded by the engine",
    "chunks": "Chunks handed to the consumer",
    "chunks_dropped": "Ready chunks recycled under the drop_oldest policy",
    "packets_dropped": "Packets in chunks recycled under the drop_oldest policy",
    "waits": "Times a receive queue waited for a free chunk (block policy)",
    "queue_stalls": "Chunks handed on past a receive queue that stopped placing",
    "queue_skips": "Times a lagging receive queue's window was moved forward",
    "kernel_drops": "Datagrams the kernel dropped at the sockets (udp backend)",
    "source_filtered": "Datagrams from senders other than the source filter (udp backend)",
}
GAUGES: dict[str, str] = {
    "chunks_in_use": "Chunks held by the engine or the consumer",
    "n_chunks": "Chunks in the pool",
    "queues": "Receive queues",
    "gbps": "Payload rate since the capture started, Gb/s",
    "pps": "Packet rate since the capture started, packets/s",
}


class HasStats(Protocol):
    @property
    def stats(self) -> Mapping[str, Any]: ...


class CaptureCollector:
    """A prometheus_client collector reading one capture's counters at each scrape."""

    def __init__(self, cap: HasStats, labels: Mapping[str, str] | None = None) -> None:
        self.cap = cap
        self.labels = dict(labels or {})

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        stats = self.cap.stats
        names, values = list(self.labels), list(self.labels.values())
        for key, help_text in COUNTERS.items():
            if key in stats:
                m = CounterMetricFamily(f"casper400g_rx_{key}", help_text, labels=names)
                m.add_metric(values, float(stats[key]))
                yield m
        for key, help_text in GAUGES.items():
            if key in stats:
                m = GaugeMetricFamily(f"casper400g_rx_{key}", help_text, labels=names)
                m.add_metric(values, float(stats[key]))
                yield m


class MetricsServer:
    """The HTTP endpoint of :func:`serve`; ``close()`` stops it."""

    def __init__(self, server: Any, thread: threading.Thread, port: int, registry: Any) -> None:
        self.server, self.thread, self.port, self.registry = server, thread, port, registry
        self.host = str(server.server_address[0])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(
    cap: HasStats, port: int, addr: str = "127.0.0.1", labels: Mapping[str, str] | None = None
) -> MetricsServer:
    """Serve ``cap``'s counters on ``addr:port`` (0: a free port, see ``.port``); localhost
    unless ``addr`` names a wider address (the counters tell anyone who can reach it what
    this host receives)."""
    try:
        from prometheus_client import CollectorRegistry, start_http_server
    except ImportError as exc:
        raise RuntimeError(
            "--metrics-port needs prometheus-client (pip install prometheus-client)"
        ) from exc
    if not 0 <= port < 65536:
        raise ValueError(f"metrics port {port}: outside 0..65535")
    registry = CollectorRegistry(auto_describe=True)
    registry.register(CaptureCollector(cap, labels))
    server, thread = start_http_server(port, addr=addr, registry=registry)
    return MetricsServer(server, thread, server.server_address[1], registry)
