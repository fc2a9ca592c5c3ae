"""The receiver's counters for Prometheus (casper400g_rx.metrics, `--metrics-port`): what a
scrape returns, parsed by prometheus_client's own text parser, equals the capture's stats."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
import urllib.request

import numpy as np
import pytest
from conftest import tcp_listeners

import casper400g_rx as rx
from casper400g_rx.faults import faulty_schedule

parser = pytest.importorskip("prometheus_client.parser")
metrics = pytest.importorskip("casper400g_rx.metrics")


def scrape(port: int) -> dict[str, tuple[str, float, dict[str, str]]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = (family.type, sample.value, dict(sample.labels))
    return out


def test_a_scrape_carries_the_captures_counters_exactly():
    ppc, n_chunks, max_chunks = 128, 8, 4
    f = faulty_schedule(n_chunks, ppc, max_chunks, np.random.default_rng(3), n_late=2)
    cap = rx.Capture(
        rx.MemSource(schedule=f.schedule),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=max_chunks, first_chunk=0),
    )
    with cap, metrics.serve(cap, 0, addr="127.0.0.1", labels={"stream": "beam0"}) as server:
        for chunk in cap.chunks(timeout=5):
            chunk.release()
        stats = cap.stats
        got = scrape(server.port)
    assert stats["lost"] == len(f.dropped) and stats["late"] == len(f.late)
    for key in ("received", "packets", "bytes", "lost", "late", "duplicate", "rejected", "chunks"):
        kind, value, labels = got[f"casper400g_rx_{key}_total"]
        assert (kind, value, labels) == ("counter", stats[key], {"stream": "beam0"}), key
    assert got["casper400g_rx_n_chunks"][:2] == ("gauge", stats["n_chunks"])


class Counters:
    """All serve() reads of a capture: its stats."""

    def __init__(self) -> None:
        self.stats = {"received": 3, "n_chunks": 4}


def test_the_endpoint_listens_on_localhost_unless_told():
    with metrics.serve(Counters(), 0) as server:
        assert tcp_listeners(server.port) == {"127.0.0.1"}
        assert scrape(server.port)["casper400g_rx_received_total"][:2] == ("counter", 3)
    with metrics.serve(Counters(), 0, addr="0.0.0.0") as server:
        assert tcp_listeners(server.port) == {"0.0.0.0"}


def test_capture_cli_serves_metrics_while_it_runs():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # a free UDP port, released again
    argv = [sys.executable, "-m", "casper400g_rx", "capture", "--backend", "udp"]
    argv += ["--bind", f"127.0.0.1:{port}", "--packets-per-chunk", "64", "--chunks", "4"]
    argv += ["--npy", "/dev/null", "--seconds", "30", "--metrics-port", "0"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        lines: list[str] = []
        metrics_port = 0
        deadline = time.monotonic() + 30
        while not metrics_port and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("metrics on http://127.0.0.1:"):
                metrics_port = int(line.split(":")[-1].split("/")[0])
        assert metrics_port, lines
        assert tcp_listeners(metrics_port) == {"127.0.0.1"}
        sender = rx.Sender(port=port, count=100, rate_gbps=0.5)
        t = threading.Thread(target=sender.run, args=(20,))
        t.start()
        t.join()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            got = scrape(metrics_port)
            if got["casper400g_rx_received_total"][1] >= 100:
                break
            time.sleep(0.1)
        assert got["casper400g_rx_received_total"][1] == 100
        assert got["casper400g_rx_kernel_drops_total"][1] == 0
    finally:
        proc.terminate()
        proc.wait(10)
