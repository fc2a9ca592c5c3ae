"""The receiver's counters for Prometheus (casper400g_rx.metrics, `--metrics-port`): what a
scrape returns, parsed by prometheus_client's own text parser, equals the capture's stats."""

from __future__ import annotations

import re
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
    argv = [sys.executable, "-m", "mlib_devel_400g", "rx", "capture", "--backend", "udp"]
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


def held_split_capture() -> rx.Capture:
    """A live split lane whose consumer holds every chunk while the stream passes: the
    chunks it cannot have are given up whole (their packets `no_free_chunk`)."""
    from casper400g_rx import Chunking, EmulatedNic

    ppc, n = 64, 40
    cap = rx.Capture(
        EmulatedNic(nic_rate_gbps=0.3, count=ppc * n, queues=1, split=True, depth=64),
        chunking=Chunking(packets_per_chunk=ppc, max_chunks=2, n_chunks=8, first_chunk=0),
    )
    with cap:
        time.sleep(0.5)  # the stream lasts 0.07 s
        for chunk in cap.chunks(timeout=5):
            chunk.release()
    return cap


def test_loss_reasons_are_scraped_apart():
    # "The consumer was too slow" (no_free_chunk, chunks_given_up) and "the network
    # reordered" (late) are different counters in the scrape, as in the stats.
    cap = held_split_capture()
    with metrics.serve(cap, 0, addr="127.0.0.1") as server:
        stats = cap.stats
        got = scrape(server.port)
    assert stats["no_free_chunk"] > 0 and stats["chunks_given_up"] > 0 and stats["late"] == 0
    for key in ("no_free_chunk", "chunks_given_up", "late", "out_of_window", "window_resyncs"):
        assert got[f"casper400g_rx_{key}_total"][:2] == ("counter", stats[key]), key


def test_monitor_shows_loss_reasons_apart():
    from rich.console import Console

    from casper400g_rx.monitor import status_table

    stats = rx.Stats(received=10, packets=4, bytes=0, lost=6, late=1, no_free_chunk=3)
    stats.update(chunks_given_up=1)
    stats.update(out_of_window=2, duplicate=0, rejected=0, chunks=1, chunks_dropped=0)
    stats.update(chunks_in_use=0, n_chunks=8)
    console = Console(width=80, record=True)
    console.print(status_table(stats, (0.0, 0.0)))
    text = console.export_text().replace("│", " ")
    rows = dict(re.findall(r"^\s+([a-z/ ]+?)\s{2,}([\d,./ ]+?)\s*$", text, re.M))
    assert (rows["late"], rows["no free chunk"], rows["out of window"]) == ("1", "3", "2")
    assert rows["chunks given up"] == "1"
