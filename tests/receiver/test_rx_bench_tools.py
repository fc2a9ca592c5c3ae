"""The benchmarks of issue 30 run on the CPU: the default-capture benchmark (bench_defaults:
ladder, target trials, overload; the capture opened with nothing set by hand) into host
chunks, and the packets-per-second benchmark (bench_pps) on both receive paths. Their
figures on this machine are not asserted (noisy, shared cores): what they report is."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import need_tool

import casper400g_rx as rx
from casper400g_rx.tools import bench_defaults, bench_gd_spead, bench_gpu, bench_pps, bench_spead2


def test_the_default_capture_benchmark_sets_nothing_by_hand() -> None:
    cfg = bench_defaults.DefaultsConfig(
        rates=(1.0, 2.0),
        ladder_seconds=0.2,
        target=2.0,
        trials=2,
        trial_seconds=0.2,
        device="cpu",
    )
    lines: list[str] = []
    r = bench_defaults.run_defaults(cfg, False, peak=100.0, log=lines.append)
    trials = [*r["targets"], *(t for t in (r["best"], r["fail"], r["over"]) if t)]
    assert len(r["targets"]) == 2
    for t in trials:
        # Offered = placed + NIC drops + counted reasons, whatever this machine managed.
        assert t["accounted"], t
        assert t["offered_packets"] % bench_defaults.WHOLE_CHUNKS == 0
        # The source was opened without CPUs; the capture chose them (placement.py).
        assert t["source_cpus"] == t["lane_cpus"]
        assert "placement:" in t["sizing"]
    if r["over"] is not None:
        assert r["over"]["sized_for"] == r["base"]["rate"]
        assert r["over"]["rate"] == pytest.approx(1.25 * r["base"]["rate"])
        assert any(line.startswith("  overload 1.25x: offered") for line in lines)
    assert any("target trial 2/2" in line for line in lines)
    cells = bench_defaults.summary(r)
    assert len(cells) == len(bench_defaults.COLUMNS)
    assert cells[0] == "headers + prefix" and cells[2].startswith(
        f"{sum(t['ok'] for t in r['targets'])} of 2: "
    )
    # The section's Markdown table as bench_gpu writes it.
    lead, rest, tail = bench_gpu.default_row(r, 100.0)
    row = bench_gpu.ladder_row(lead, rest, len(bench_defaults.COLUMNS), tail)
    table = bench_gpu.md_table("1d", bench_defaults.COLUMNS, [row])
    assert table[-1].count("|") == len(bench_defaults.COLUMNS) + 1


def test_bad_benchmark_settings_are_named() -> None:
    with pytest.raises(ValueError, match="trial_seconds must be > 0, got 0"):
        bench_defaults.DefaultsConfig(trial_seconds=0)
    with pytest.raises(ValueError, match="trials must be >= 1, got 0"):
        bench_defaults.DefaultsConfig(trials=0)
    with pytest.raises(ValueError, match="path must be one of"):
        bench_pps.source_for("dpdk", 64, 1, 1024)
    with pytest.raises(ValueError, match="seconds must be > 0, got 0"):
        bench_pps.trial("copy", 64, seconds=0)


@pytest.mark.parametrize("path", bench_pps.PATHS)
def test_packets_per_second_per_core(path: str) -> None:
    t = bench_pps.trial(path, 64, seconds=0.3)
    assert t.stopped and t.packets > 0 and t.threads == 1
    assert t.mpps_per_core == pytest.approx(t.packets / t.seconds / 1e6)
    assert t.gbps_per_core == pytest.approx(t.mpps_per_core * 64 * 8 / 1e3)
    rows = bench_pps.table([t])
    assert rows[0].startswith("| payload B | ")
    assert rows[2].startswith(f"| 64 | {t.mpps_per_core:.2f} | ")


def test_pps_table_takes_the_best_by_each_measure() -> None:
    # Wall clock and CPU time may pick different trials of a point; a trial whose stream
    # ended first is a lower bound, and one without CPU times leaves its cell empty.
    trial = bench_pps.PpsTrial
    rows = bench_pps.table(
        [
            trial("copy", 64, 1, 4_000_000, 1.0, None, True, 3_000_000, 0.2),
            trial("copy", 64, 1, 5_000_000, 1.0, None, True, 5_000_000, 0.5),
            trial("split", 64, 1, 9_000_000, 1.0, (1,), False),
        ]
    )
    assert rows[0].count("Mpps per CPU-second") == 2
    assert rows[2] == "| 64 | 5.00 | 2.6 | 0.25 | 15.00 | ≥ 9.00 | 4.6 | 0.45 |  |"


def test_pps_receive_threads_leave_out_the_generator() -> None:
    assert bench_pps.receive_threads("copy", [10, 11, 12], 2) == [11, 12]
    assert bench_pps.receive_threads("split", [10, 11], 2) == [10, 11]
    # Any other count of new threads: not guessed.
    assert bench_pps.receive_threads("copy", [10, 11], 2) == []


@pytest.mark.parametrize("path", bench_pps.PATHS)
def test_pps_trial_measures_the_receive_threads_cpu_time(path: str) -> None:
    t = bench_pps.trial(path, 256, seconds=0.3)
    assert t.cpu_seconds is not None and 0 < t.cpu_seconds < 2 * t.seconds
    assert 0 < t.cpu_packets <= t.packets
    assert t.mpps_per_cpu_second == pytest.approx(t.cpu_packets / t.cpu_seconds / 1e6)


def test_a_default_trial_with_the_spectrometer_consuming() -> None:
    spec = bench_defaults.DefaultsConfig(chunks_per_spectrum=4).spectrometer("cpu")
    t = bench_defaults.trial(0.5, False, 0.1, spec, device="cpu")
    assert t["accounted"] and t["offered_packets"] == bench_defaults.WHOLE_CHUNKS
    # 16 chunks of 1024 packets in spectra of 4 chunks; its work per chunk measured.
    assert t["spectra"] == 4 and t["chunks"] == 16
    assert t["work_ms"] > 0 and t["period_ms"] == pytest.approx(1024 * 8192 * 8 / 0.5e9 * 1e3)
    assert "spectrometer" in bench_defaults.describe(t, 100.0)


@pytest.mark.parametrize("shape", bench_spead2.SPEAD_SHAPES, ids=lambda s: s[0])
def test_gpudirect_spead_benchmark_frames_are_whole_heaps(shape: tuple[str, int, int]) -> None:
    """The GPUDirect SPEAD benchmark's frames (spead2's packets behind UDP headers), read by
    the copying engine as frames: every heap whole, with its items, nothing rejected; the
    kernels' own pass over them runs on a GPU host (bench_gd_spead.main)."""
    try:
        import spead2  # noqa: F401
    except ImportError:
        need_tool("spead2 is not installed (`make test` installs it: pip install spead2)")
    _, heap_size, max_packet = shape
    n_heaps = 16
    rows, sizes = bench_gd_spead.spead_frames(n_heaps, heap_size, max_packet)
    fmt = rx.Format.spead(
        heap_size,
        items=[bench_spead2.TIMESTAMP, bench_spead2.CHANNEL],
        max_packet=max_packet,
        udp_port=bench_gd_spead.PORT,
    )
    cap = rx.Capture(
        rx.MemSource(packets=rows, sizes=sizes, frames=True),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=4, first_chunk=0),
    )
    present = 0
    with cap:
        for c in cap.chunks(timeout=10):
            present += c.n_present
            slots = np.arange(4) + 4 * c.chunk_id
            assert c.items[bench_spead2.TIMESTAMP].tolist() == (slots * 4096).tolist()
            assert c.items[bench_spead2.CHANNEL].tolist() == [7] * 4
            c.release()
    s = cap.stats
    assert present == n_heaps and s.rejected == 0 and s.packets == len(sizes)
