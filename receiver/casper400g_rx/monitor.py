"""Live receive status (HASHPIPE-style keys) drawn with rich."""

from __future__ import annotations

import time

from rich.console import Console
from rich.live import Live
from rich.table import Table

from .capture import Capture, Stats


def status_table(stats: Stats, rate: tuple[float, float]) -> Table:
    gbps, pps = rate
    table = Table(title="casper400g rx monitor", show_header=False, min_width=44)
    table.add_column("key", style="bold cyan")
    table.add_column("value", justify="right")
    rows = [
        ("Gb/s", f"{gbps:.3f}"),
        ("packets/s", f"{pps:,.0f}"),
        ("packets", f"{stats.packets:,}"),
        ("lost", f"{stats.lost:,}"),
        ("late", f"{stats.late:,}"),
        # Not the network: the consumer held every chunk (too slow for the stream).
        ("no free chunk", f"{stats.get('no_free_chunk', 0):,}"),
        ("chunks given up", f"{stats.get('chunks_given_up', 0):,}"),
        ("out of window", f"{stats.get('out_of_window', 0):,}"),
        ("duplicate", f"{stats.duplicate:,}"),
        ("rejected", f"{stats.rejected:,}"),
        ("chunks", f"{stats.chunks:,}"),
        ("chunks dropped", f"{stats.chunks_dropped:,}"),
        ("buffers in use", f"{stats.chunks_in_use} / {stats.n_chunks}"),
    ]
    if "kernel_drops" in stats:
        rows.append(("kernel drops", f"{stats.kernel_drops:,}"))
    if stats.get("source_filtered"):
        rows.append(("other senders", f"{stats.source_filtered:,}"))
    for key, value in rows:
        table.add_row(key, value)
    return table


def run_monitor(
    cap: Capture, seconds: float | None, interval: float = 0.5, console: Console | None = None
) -> Stats:
    """Consume (and release) chunks, redrawing the status every `interval` s."""
    console = console or Console()
    deadline = None if seconds is None else time.monotonic() + seconds
    last_t, last = time.monotonic(), cap.stats
    rate = (0.0, 0.0)
    with cap, Live(status_table(last, rate), console=console, auto_refresh=False) as live:
        while deadline is None or time.monotonic() < deadline:
            for chunk in cap.chunks(timeout=interval):
                chunk.release()
                if time.monotonic() - last_t >= interval:
                    break
            now, stats = time.monotonic(), cap.stats
            if now - last_t >= interval:
                dt = now - last_t
                rate = (
                    (stats.bytes - last.bytes) * 8 / dt / 1e9,
                    (stats.packets - last.packets) / dt,
                )
                last_t, last = now, stats
            live.update(status_table(stats, rate), refresh=True)
            if not cap.running:
                break
        cap.stop()
        for chunk in cap.chunks(timeout=0):
            chunk.release()
        live.update(status_table(cap.stats, rate), refresh=True)
    return cap.stats
