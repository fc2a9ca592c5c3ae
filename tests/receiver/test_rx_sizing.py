"""Capture settings sized for an asked rate (sizing.py): the rule, and its warnings."""

from __future__ import annotations

import math
import warnings

import pytest

import casper400g_rx as rx
from casper400g_rx import _core, sizing


def test_rule_for_400_gbps_into_a_gpu_and_into_host_memory() -> None:
    gpu = sizing.size_for_rate(400, 8192, 8, to_gpu=True, cpus=64)
    assert gpu.queues == math.ceil(400 / sizing.GPU_GBPS_PER_QUEUE) == 14
    assert gpu.n_chunks == 8 + 4 + 2 * 14
    assert gpu.warnings == ()
    host = sizing.size_for_rate(400, 8192, 8, to_gpu=False, cpus=64)
    assert host.queues == math.ceil(400 / sizing.HOST_GBPS_PER_QUEUE) == 5
    # Half-size packets cost twice the queues for the same rate.
    assert sizing.size_for_rate(400, 4096, 8, to_gpu=False, cpus=64).queues == 10


def test_given_queues_and_pool_are_kept_and_too_few_queues_are_named() -> None:
    s = sizing.size_for_rate(400, 8192, 4, to_gpu=True, queues=8, n_chunks=50, cpus=64)
    assert (s.queues, s.n_chunks) == (8, 50)
    assert len(s.warnings) == 1
    assert "400 Gb/s needs about 14 queues at 29 Gb/s each" in s.warnings[0]
    assert "this capture has 8" in s.warnings[0]


def test_too_few_cpus_is_named_with_the_numbers() -> None:
    s = sizing.size_for_rate(400, 8192, 4, to_gpu=True, helper_threads=1, cpus=8)
    (note,) = s.warnings
    assert "14 queues want 18 cores" in note
    assert "1 for the emulated NIC, 2 for the GPU copy and recycle threads" in note
    assert "this process may use 8 CPUs" in note


@pytest.mark.parametrize(("rate", "payload"), [(0, 8192), (-1, 8192), (100, 0)])
def test_bad_values_are_named(rate: float, payload: int) -> None:
    with pytest.raises(ValueError, match="must be > 0, got"):
        sizing.size_for_rate(rate, payload, 4, to_gpu=False)


def test_capture_sized_from_the_rate_runs_with_its_queues() -> None:
    ppc = 64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rx.CapacityWarning)  # this machine may be small
        cap = rx.Capture(
            rx.MemSource(count=ppc * 12),
            rate_gbps=150,
            chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=2),
        )
    assert cap.sizing is not None
    assert cap.sizing.queues == 2
    assert cap.config.n_chunks == 2 + 4 + 2 * 2
    with cap:
        ids = [c.chunk_id for c in cap.chunks(timeout=10)]
    s = cap.stats
    assert s.queues == 2 and s.packets == ppc * 12 and s.lost == 0
    assert sorted(ids) == list(range(12))


def test_capture_warns_when_the_machine_has_too_few_cpus() -> None:
    queues = sizing.available_cpus() + 1
    with pytest.warns(rx.CapacityWarning, match="this process may use"):
        rx.Capture(rx.UdpSource(), rate_gbps=queues * sizing.HOST_GBPS_PER_QUEUE)


def test_rule_by_path_and_chunk_size_for_gpu_delivery() -> None:
    split = sizing.size_for_rate(400, 8192, 4, to_gpu=True, cpus=64, path="split")
    assert split.queues == math.ceil(400 / sizing.SPLIT_GBPS_PER_QUEUE) == 8
    emulated = sizing.size_for_rate(400, 8192, 4, to_gpu=True, cpus=64, path="split_emulated")
    assert emulated.queues == math.ceil(400 / sizing.SPLIT_EMULATED_GBPS_PER_QUEUE) == 13
    # Chunks of at least 0.5 ms of the stream: 400 Gb/s of 8192-B packets is 6.1 Mpackets/s,
    # 3052 packets in 0.5 ms -> 4096; 100 Gb/s -> 763 -> the 1024 floor.
    assert split.packets_per_chunk == 4096 == sizing.chunk_packets(400, 8192)
    assert sizing.chunk_packets(100, 8192) == 1024
    assert sizing.chunk_packets(400, 1024) == 32768
    assert sizing.size_for_rate(400, 8192, 4, to_gpu=False, cpus=64).packets_per_chunk is None
    with pytest.raises(ValueError, match="path must be"):
        sizing.size_for_rate(400, 8192, 4, to_gpu=False, path="dpdk")  # type: ignore[arg-type]


def test_split_capture_sized_from_the_rate() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rx.CapacityWarning)
        cap = rx.Capture(rx.EmulatedNic(count=64 * 8, fill=True, split=True), rate_gbps=60)
    assert cap.sizing is not None and cap.sizing.queues == 2  # 33 Gb/s per emulated lane
    assert cap.config.packets_per_chunk == 1024  # host delivery: not sized
    with cap:
        for c in cap.chunks(timeout=10):
            c.release()
    assert cap.stats.packets == 64 * 8 and cap.stats.queues == 2


def test_small_chunks_into_a_gpu_at_a_high_rate_are_named() -> None:
    s = sizing.size_for_rate(400, 8192, 4, to_gpu=True, cpus=64, packets_per_chunk=1024)
    (note,) = s.warnings
    assert "1024-packet chunks at 400 Gb/s are 5960 chunks/s" in note
    assert "packets_per_chunk >= 4096" in note
    assert s.packets_per_chunk is None  # given: kept
    ok = sizing.size_for_rate(400, 8192, 4, to_gpu=True, cpus=64, packets_per_chunk=8192)
    assert ok.warnings == ()


@pytest.mark.parametrize(
    ("queues", "depth", "ppc"), [(1, 1024, 1024), (11, 1024, 4096), (3, 64, 256)]
)
def test_one_pool_rule_the_engines(queues: int, depth: int, ppc: int) -> None:
    # The pool rule lives in the engine (EngineConfig.sized); Python asks for it and
    # never restates it. Written out here from its contract (engine.h): the split window
    # is max_chunks plus the chunks depth x queues receives reach, plus one; its pool
    # twice that plus 4, and 8 more on the way to a GPU; copying queues: the window, 4,
    # and with several queues 2 of skew each.
    window = 4 + -(-depth * queues // ppc) + 1
    cfg = _core.EngineConfig(packets_per_chunk=ppc, max_chunks=4)
    assert cfg.split_window(queues, depth) == window
    assert cfg.sized(queues, depth).n_chunks == 2 * window + 4
    assert cfg.sized(queues, depth, delivery=True).n_chunks == 2 * window + 12
    assert sizing.pool_size(queues, 4, ppc, depth) == 2 * window + 12
    assert cfg.sized(1).n_chunks == 8 and cfg.sized(queues).n_chunks == (
        8 + 2 * queues if queues > 1 else 8
    )
    assert cfg.sized(1).max_jump == 16  # four windows
    # The header-split engine itself sizes by the same rule.
    cap = rx.Capture(
        rx.EmulatedNic(count=ppc, queues=queues, depth=depth, split=True),
        chunking=rx.Chunking(packets_per_chunk=ppc),
    )
    assert cap.config.n_chunks == 2 * window + 4
    # A pool given is kept, and one too small for the split is named.
    assert _core.EngineConfig(n_chunks=99).sized(2, 64).n_chunks == 99
    with pytest.raises(ValueError, match="n_chunks 5 is too small for header-data split"):
        _core.EngineConfig(packets_per_chunk=64, n_chunks=5).sized(1, 256)
    with pytest.raises(ValueError, match=r"queues must be 1\.\.1024, got 0"):
        cfg.sized(0)


def test_split_depth_holds_five_ms_of_a_lanes_share() -> None:
    # 50 Gb/s per lane of 8192-B packets is 763 kpackets/s: 3815 in 5 ms -> 4096.
    assert sizing.split_depth(250, 5, 8192) == 4096
    assert sizing.split_depth(10, 1, 8192) == sizing.MIN_DEPTH == 1024
    assert sizing.split_depth(400, 1, 1024) == sizing.MAX_DEPTH == 16384
    s = sizing.size_for_rate(250, 8192, 4, to_gpu=True, cpus=64, path="split")
    assert (s.queues, s.depth) == (5, 4096)
    assert sizing.size_for_rate(250, 8192, 4, to_gpu=True, cpus=64).depth is None  # copying
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rx.CapacityWarning)
        cap = rx.Capture(rx.EmulatedNic(count=64, fill=False, split=True), rate_gbps=250)
    # The engine's own pool rule with that depth (window 4 + 20 + 1 chunks), and room for
    # a consumer that pauses (sized by rate, host delivery too).
    assert cap.config.n_chunks == 2 * 25 + 4 + 8
    unsized = rx.Capture(rx.EmulatedNic(count=64, depth=4096, queues=5, fill=False, split=True))
    assert unsized.config.n_chunks == 2 * 25 + 4
