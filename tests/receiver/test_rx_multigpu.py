"""One capture into several GPUs: Delivery(devices=[...], mapping=...).

Everywhere: the options' checks, and the staged delivery itself -- its routing by chunk
number, each device's ring, drop_oldest, the per-device counters beside the capture's
one accounting -- with host memory standing in for the GPUs (_core.host_lanes runs the
same C++ lanes as the GPUs', a memcpy in place of the DMA). References: the CPU engine's
chunks and counters on the same stream, payloads from the NumPy example-stream formula,
SPEAD packets built with struct.

On a host with two GPUs (marked; skipped elsewhere with the reason): every chunk on the
GPU the mapping names, exported by DLPack on that device, with the CPU engine's bytes;
exact accounting under injected faults and a consumer slow on one GPU.
"""

from __future__ import annotations

import itertools
import os
import struct
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_rx import _core, affinity, chunking, gpu, placement, sizing
from casper400g_rx.chunking import engine_config
from casper400g_rx.example_stream import example_payloads
from casper400g_rx.faults import faulty_schedule
from casper400g_rx.placement import GpuSite, gpu_staging

CUDA_OK, CUDA_WHY = gpu.cuda_status()
N_GPUS = _core.cuda_device_count() if CUDA_OK else 0
needs_gpu = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
needs_two_gpus = pytest.mark.skipif(
    N_GPUS < 2, reason=f"needs two CUDA devices, this host has {N_GPUS} ({CUDA_WHY})"
)
PAYLOAD = 8192
Trial = dict[str, Any]
COUNTERS = ("received", "packets", "bytes", "lost", "late", "duplicate", "rejected", "chunks")


def lane_of(mapping: Sequence[int] | None, lanes: int) -> Callable[[int], int]:
    """The device position of chunk k, written from the rule the docs state."""
    if mapping is None:
        return lambda k: k % lanes
    return lambda k: mapping[k % len(mapping)]


def host_capture(source: rx.Source, chunking: rx.Chunking, fmt: Any = None) -> Any:
    """The engine's capture of `source` into host chunks (not started)."""
    return rx.Capture(source, fmt=fmt, chunking=chunking)._cap


def cpu_reference(
    source: rx.Source, chunking: rx.Chunking, fmt: Any = None
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], rx.Stats]:
    cap = rx.Capture(source, fmt=fmt, chunking=chunking)
    out = {}
    with cap:
        for chunk in cap.chunks(timeout=20):
            with chunk:
                out[chunk.chunk_id] = (chunk.present.copy(), chunk.data.copy())
    return out, cap.stats


def drain(lanes: Any, timeout: float = 20) -> dict[int, tuple[int, np.ndarray, np.ndarray]]:
    """Every chunk of a started HostLanes: {chunk_id: (lane, present, payloads)}."""
    got = {}
    while (chunk := lanes.next_chunk(timeout)) is not None:
        with chunk:
            assert chunk.chunk_id not in got, f"chunk {chunk.chunk_id} handed out twice"
            assert np.array_equal(chunk.present_host, chunk.present)
            got[chunk.chunk_id] = (chunk.lane, chunk.present.copy(), chunk.data.copy())
    return got


# --- the options -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"device": "cuda:0", "devices": ["cuda:1"]}, "give device= for one GPU or devices="),
        ({"devices": ["cuda:0", "cuda"]}, "names cuda:0 twice"),
        ({"devices": ["cuda:0", "cpu"]}, "devices entries must be 'cuda' or 'cuda:N', got 'cpu'"),
        ({"devices": ["cuda:0", "gpu1"]}, "device must be 'cpu', 'cuda' or 'cuda:N', got 'gpu1'"),
        ({"devices": "cuda:0"}, "devices is a list of 'cuda:N', got the string 'cuda:0'"),
        ({"mapping": ["cuda:0"]}, "give devices too"),
        ({"devices": ["cuda:0", "cuda:1"], "mapping": []}, "mapping is empty"),
        ({"devices": ["cuda:0", "cuda:1"], "mapping": "cuda:0"}, "got the string 'cuda:0'"),
        (
            {"devices": ["cuda:0", "cuda:1"], "mapping": ["cuda:0", "cuda:2"]},
            r"mapping\[1\] = 'cuda:2' is not one of devices",
        ),
        (
            {"devices": ["cuda:0", "cuda:1"], "mapping": ["cuda:1", "cuda:1"]},
            "'cuda:0' of devices gets no chunk from mapping",
        ),
        (
            {"devices": ["cuda:0", "cuda:1"], "gpudirect": True, "mapping": ["cuda:1", "cuda:0"]},
            r"gpudirect=True into several GPUs gives chunk k to devices\[k % 2\]",
        ),
        ({"devices": ["cuda:0", "cuda:1"], "gpu_chunks": -1}, "gpu_chunks must be >= 0, got -1"),
        ({"devices": ["cuda:0", "cuda:1"], "gpu_cpus": [[0]]}, r"1 CPU list\(s\) for 2 GPU"),
        ({"devices": ["cuda:0", "cuda:1"], "gpu_cpus": [[0], [-2]]}, r"gpu_cpus\[1\] has -2"),
        ({"devices": ["cuda:0", "cuda:1"], "gpu_cpus": [[0], "1"]}, r"gpu_cpus\[1\] is a list"),
        ({"devices": ["cuda:0", "cuda:1"], "gpu_cpus": "0,1"}, "a list of CPU lists"),
        ({"gpu_cpus": [[0]]}, "gpu_cpus places the copy threads"),
        ({"device": "cuda:0", "gpudirect": True, "gpu_cpus": [[0]]}, r"not gpudirect=True"),
    ],
)
def test_delivery_options_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rx.Delivery(**kwargs)


def test_gpu_cpus_are_kept_per_gpu() -> None:
    d = rx.Delivery(devices=["cuda:0", "cuda:1"], gpu_cpus=[[4, 5], ()])
    assert d.gpu_cpus == ((4, 5), ())
    assert rx.Delivery(device="cuda:1", gpu_cpus=[[3]]).gpu_cpus == ((3,),)


def test_delivery_targets_and_routes() -> None:
    assert rx.Delivery().targets == () and not rx.Delivery().to_gpu
    one = rx.Delivery(device="cuda:1")
    assert one.targets == ("cuda:1",) and one.routes() is None and one.to_gpu
    two = rx.Delivery(devices=["cuda:1", "cuda:0"])
    assert two.targets == ("cuda:1", "cuda:0") and two.routes() is None and two.to_gpu
    runs = ["cuda:0", "cuda:0", "cuda", "cuda:1"]
    table = rx.Delivery(devices=("cuda:1", "cuda:0"), mapping=runs)
    # Positions in devices: cuda:0 is the second entry ("cuda" names it too).
    assert table.routes() == [1, 1, 1, 0]
    assert table.mapping == ("cuda:0", "cuda:0", "cuda", "cuda:1")


def test_rdma_source_refuses_several_gpus() -> None:
    with pytest.raises(ValueError, match=r"devices= \(several GPUs\) belong to the other sources"):
        rx.Capture(rx.RdmaSource(emulate=True), delivery=rx.Delivery(devices=["cuda:0", "cuda:1"]))


@pytest.mark.skipif(CUDA_OK, reason="a CUDA device is present")
def test_missing_gpus_are_a_clear_error() -> None:
    with pytest.raises(gpu.CudaError, match=r"device='cuda:0' is not usable: .*(CUDA|cuda)"):
        rx.Capture(rx.MemSource(count=64), delivery=rx.Delivery(devices=["cuda:0", "cuda:1"]))


@pytest.mark.parametrize(
    ("lanes", "ring", "mapping", "message"),
    [
        (0, 4, None, "1 to 64 devices, got 0"),
        (65, 4, None, "1 to 64 devices, got 65"),
        (2, 4, [], "mapping is empty"),
        (2, 4, [0, 2], "mapping entry 1 is device 2 of 2"),
        (3, 4, [0, 1, 1, 0], "device 2 gets no chunk from the mapping"),
        (2, 1, None, "gpu_chunks must be at least 2, got 1"),
    ],
)
def test_lane_options_are_checked(
    lanes: int, ring: int, mapping: list[int] | None, message: str
) -> None:
    host = host_capture(rx.MemSource(count=64), rx.Chunking(packets_per_chunk=64))
    with pytest.raises(ValueError, match=message):
        _core.host_lanes(host, lanes, ring, mapping)


# --- placement of a capture into several GPUs ------------------------------------------

HALF = Fraction(1, 2)


def site(name: str, node: int | None, share: Fraction = HALF) -> GpuSite:
    return GpuSite(name, None, node, share)


def test_the_lanes_go_where_the_fewest_bytes_cross_the_sockets() -> None:
    # Two GPUs a node each, equal shares, no NIC: a tie, the lower node; cuda:1 reads
    # its half across the link, and that is said.
    s = gpu_staging([site("cuda:0", 0), site("cuda:1", 1)], None)
    assert s.node == 0 and s.what == "GPU cuda:0"
    both = "cuda:0 (node 0, 1/2 of the chunks), cuda:1 (node 1, 1/2 of the chunks)"
    assert both in s.decisions[0]
    assert "(1/2 of each byte received)" in s.decisions[1]
    (note,) = s.unmet
    assert "local to cuda:1's staging (node 1): its 1/2 of the chunks is written across" in note
    # The NIC on node 1 breaks the tie: its writes stay local.
    s = gpu_staging([site("cuda:0", 0), site("cuda:1", 1)], 1, "eth9")
    assert s.node == 1 and s.what == "GPU cuda:1"
    (note,) = s.unmet
    assert note.startswith("lanes local to cuda:0's staging (node 0): its 1/2 of the chunks")
    # A mapping sending 3 of 4 chunks to cuda:1: its node, a quarter crossing.
    s = gpu_staging([site("cuda:0", 0, Fraction(1, 4)), site("cuda:1", 1, Fraction(3, 4))], None)
    assert s.node == 1 and "(1/4 of each byte received)" in s.decisions[1]
    # Both GPUs on node 1, the NIC on node 0: a tie (the NIC's stream crosses, or the
    # GPUs' reads do), the NIC's node; no other node ever wins, whatever the shares.
    s = gpu_staging([site("cuda:0", 1), site("cuda:1", 1)], 0, "eth9")
    assert s.node == 0 and s.what == "NIC eth9" and len(s.unmet) == 2
    assert "near node 0 (the NIC eth9's)" in s.decisions[1] and "(1 of each byte" in s.decisions[1]
    shares = [Fraction(1, 8), Fraction(7, 8)]
    s = gpu_staging([site("cuda:0", 0, shares[0]), site("cuda:1", 1, shares[1])], 0, "eth9")
    assert s.node == 0 and "(7/8 of each byte received)" in s.decisions[1]
    # Everything on one node: nothing crosses, nothing unmet.
    s = gpu_staging([site("cuda:0", 0), site("cuda:1", 0)], 0, "eth9")
    assert s.node == 0 and "no byte crosses between the sockets" in s.decisions[1]
    assert s.unmet == ()
    # A GPU of unknown node is named and left out of the choice; none known: no node.
    s = gpu_staging([site("cuda:0", None), site("cuda:1", 1)], None)
    assert s.node == 1 and "near cuda:0: NUMA node unknown" in s.unmet[0]
    assert gpu_staging([site("cuda:0", None), site("cuda:1", None)], None).node is None


def test_gpu_shares_follow_the_mapping() -> None:
    assert placement.gpu_shares(3, None) == [Fraction(1, 3)] * 3
    assert placement.gpu_shares(2, [1, 1, 1, 0]) == [Fraction(1, 4), Fraction(3, 4)]


def test_sizing_counts_each_gpus_copy_threads() -> None:
    # 2 queues + 1 emulated NIC + (2 GPUs x copy and recycle + the dispatcher) + consumer;
    # into one GPU, 6.
    s = sizing.size_for_rate(50, 8192, 4, to_gpu=True, queues=2, helper_threads=1, cpus=9, gpus=2)
    assert s.warnings == ()
    s = sizing.size_for_rate(50, 8192, 4, to_gpu=True, queues=2, helper_threads=1, cpus=8, gpus=2)
    (note,) = s.warnings
    assert "2 queues want 9 cores" in note
    assert "5 for the copy and recycle threads of 2 GPUs and their dispatcher" in note
    one = sizing.size_for_rate(50, 8192, 4, to_gpu=True, queues=2, helper_threads=1, cpus=6)
    assert one.warnings == ()


def two_gpu_sysfs(root: Path, gpu_nodes: Sequence[int]) -> dict[int, str]:
    """A sysfs tree of two nodes of 4 cores with 2 hyperthreads each (node 0: CPUs 0-3 +
    8-11, node 1: CPUs 4-7 + 12-15), a GPU per entry of `gpu_nodes` on that node;
    returns their PCI addresses by CUDA ordinal."""
    system = root / "devices" / "system"
    for n in (0, 1):
        node = system / "node" / f"node{n}"
        node.mkdir(parents=True)
        cpus = [*range(4 * n, 4 * n + 4), *range(8 + 4 * n, 12 + 4 * n)]
        (node / "cpulist").write_text(",".join(map(str, cpus)) + "\n")
        for c in cpus:
            topo = system / "cpu" / f"cpu{c}" / "topology"
            topo.mkdir(parents=True)
            (topo / "thread_siblings_list").write_text(f"{c % 8},{c % 8 + 8}\n")
    addresses = {}
    for ordinal, n in enumerate(gpu_nodes):
        address = f"0000:{0x1B + 0x40 * ordinal:02x}:00.0"
        dev = root / "bus" / "pci" / "devices" / address
        dev.mkdir(parents=True)
        (dev / "numa_node").write_text(f"{n}\n")
        addresses[ordinal] = address
    return addresses


def test_place_reads_each_gpus_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The CUDA driver's PCI addresses are the one thing taken from elsewhere than sysfs.
    addresses = two_gpu_sysfs(tmp_path, [0, 1])
    monkeypatch.setattr(placement, "gpu_pci_address", addresses.get)
    monkeypatch.setenv(affinity.LOCK_DIR_ENV, str(tmp_path / "lane-cpus"))
    # This process may use the fake machine's 16 CPUs.
    read = placement.Topology.read
    monkeypatch.setattr(
        placement.Topology, "read", staticmethod(lambda root: read(allowed=range(16), root=root))
    )
    # Three of every four chunks to cuda:1 (node 1): lanes and staging on node 1.
    p = placement.place(3, None, ["cuda:0", "cuda:1"], root=str(tmp_path), routes=[1, 1, 1, 0])
    assert p.lane_cpus == (7, 6, 5) and p.staging_node == 1
    assert p.open_cpus == (4, 12, 13, 14, 15)
    text = str(p)
    assert "cuda:0 (node 0, 1/4 of the chunks), cuda:1 (node 1, 3/4 of the chunks)" in text
    assert "(node 1, the GPU cuda:1's, first)" in text
    assert "staging memory on node 1 (the GPU cuda:1's)" in text
    assert "could not: lanes local to cuda:0's staging (node 0): its 1/4 of the chunks" in text
    # Each GPU's copy and recycle threads on the CPUs of its own node left over by the
    # lanes (cores 5-7 and their siblings 13-15 are the lanes').
    assert p.gpu_cpus == ((0, 1, 2, 3, 8, 9, 10, 11), (4, 12))
    assert "cuda:0 (1/4 of the chunks): its copy and recycle threads on CPUs 0-3,8-11 of " in text
    assert "cuda:1 (3/4 of the chunks): its copy and recycle threads on CPUs 4,12 of its " in text
    # Round-robin: a tie, node 0.
    p = placement.place(2, None, ["cuda:0", "cuda:1"], root=str(tmp_path))
    assert p.lane_cpus == (3, 2) and p.staging_node == 0
    assert p.gpu_cpus == ((0, 1, 8, 9), (4, 5, 6, 7, 12, 13, 14, 15))
    # CPUs given for the GPUs' threads stay.
    p = placement.place(2, None, ["cuda:0", "cuda:1"], root=str(tmp_path), gpu_cpus=[[9], []])
    assert p.gpu_cpus == ((9,), ())
    assert "GPU threads on the CPUs given (cuda:0: 9; cuda:1: with the other threads)" in str(p)
    # One device in a list is placed as device= places it; its threads are the others'.
    p = placement.place(2, None, ["cuda:1"], root=str(tmp_path))
    assert p.staging_node == 1 and f"GPU cuda:1 at {addresses[1]}" in str(p)
    assert p.gpu_cpus is None


def test_each_gpus_threads_go_to_its_own_node() -> None:
    # Node 0: CPUs 0-3, node 1: CPUs 4-5, one CPU a core; node 2 holds a GPU but none of
    # this process's CPUs.
    cpus = tuple(range(6))
    topo = placement.Topology(cpus, {c: (c,) for c in cpus}, {c: int(c >= 4) for c in cpus})
    gpus = [site("cuda:0", 0), site("cuda:1", 1), site("cuda:2", 2), site("cuda:3", None)]
    # Lanes on 4, 5 (the whole of node 1) and 3: cuda:1 has no CPU left on its node.
    placed = placement.Placement((5, 4, 3), (0, 1, 2), None, 1)
    t = placement.gpu_threads(gpus, topo, placed)
    assert t.cpus == ((0, 1, 2), (), (), ())
    assert t.decisions == (
        "cuda:0 (1/2 of the chunks): its copy and recycle threads on CPUs 0-2 of its node 0, "
        "off the lane cores",
    )
    one, two, three = t.unmet
    assert "cuda:1 (1/2 of the chunks): its copy and recycle threads on its node 1: every " in one
    assert "CPU of node 1 (4-5) runs a lane of this capture or another's" in one
    assert "they run with the other threads (CPUs 0-2)" in one
    assert "cuda:2 (1/2 of the chunks): its copy and recycle threads on its node 2: this " in two
    assert "process may not run on node 2 (CPUs 0-5)" in two
    assert "cuda:3 (1/2 of the chunks): its copy and recycle threads near it: NUMA node " in three
    # Lanes not pinned: each GPU's node's CPUs that other captures' lanes leave free.
    unpinned = placement.Placement(None, None, None, None)
    t = placement.gpu_threads(gpus[:2], topo, unpinned, busy={0, 4})
    assert t.cpus == ((1, 2, 3), (5,))
    assert t.decisions[1].endswith("its copy and recycle threads on CPUs 5 of its node 1")
    # Lanes that leave only hyperthread siblings of their cores: the other threads share
    # those cores, and a GPU's threads go with them where its node has such a CPU.
    ht = placement.Topology(
        tuple(range(4)), {0: (0, 2), 2: (0, 2), 1: (1, 3), 3: (1, 3)}, {0: 0, 2: 0, 1: 1, 3: 1}
    )
    placed = placement.Placement((0, 1), (2, 3), None, None)
    assert placement.gpu_threads(gpus[:2], ht, placed).cpus == ((2,), (3,))


def test_a_capture_into_several_gpus_prints_its_placement(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # On this machine's CPUs, the GPUs' nodes given: the capture's sizing passes its
    # devices and mapping to the placement and prints what it chose.
    nodes = {"0000:1b:00.0": 0, "0000:5b:00.0": 0}
    monkeypatch.setattr(placement, "gpu_pci_address", lambda o: list(nodes)[o])
    monkeypatch.setattr(placement, "pci_numa_node", lambda a, root: nodes[a])
    delivery = rx.Delivery(devices=["cuda:0", "cuda:1"], mapping=["cuda:0", "cuda:1", "cuda:1"])
    source = rx.EmulatedNic(count=1024, nic_rate_gbps=20.0)
    plan = chunking.engine_config(source, rx.Format(), rx.Chunking(), delivery, 20.0)
    assert plan.sizing is not None and plan.sizing.placement is not None
    text = str(plan.sizing)
    assert "cuda:0 (node 0, 1/3 of the chunks), cuda:1 (node 0, 2/3 of the chunks)" in text
    assert "no byte crosses between the sockets" in text
    # The staging split per GPU in the mapping's runs, each part bound to its GPU's node.
    assert list(plan.config.staging_route) == [0, 1, 1]
    assert list(plan.config.staging_nodes) == [0, 0]
    assert plan.config.n_chunks % 3 == 0 and plan.sizing.n_chunks == plan.config.n_chunks
    assert "staging of cuda:1 (2/3 of the chunks) bound to node 0 (its GPU's node)" in text
    # Per GPU, where its copy and recycle threads go (this machine's node 0).
    p = plan.sizing.placement
    assert p.gpu_cpus is not None and len(p.gpu_cpus) == 2
    for name, cpus in zip(("cuda:0", "cuda:1"), p.gpu_cpus, strict=True):
        if cpus:
            assert f"{name} (" in text and "its copy and recycle threads on CPUs" in text
            assert not set(cpus) & set(p.lane_cpus or ())
        else:
            assert f"{name} (" in text and "they run with the other threads" in text


# --- the staged lanes, host memory standing in for the GPUs ------------------------------


@pytest.mark.parametrize(
    ("lanes", "mapping"),
    [(2, None), (3, None), (2, [0, 0, 1, 1]), (3, [2, 0, 1, 1, 0])],
    ids=["rr2", "rr3", "runs2", "table3"],
)
def test_every_chunk_on_its_lane_with_the_cpu_engines_bytes(
    lanes: int, mapping: list[int] | None
) -> None:
    ppc, mc = 128, 4
    f = faulty_schedule(60, ppc, mc, np.random.default_rng(lanes * 10 + len(mapping or ())))
    source = rx.MemSource(schedule=f.schedule)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=0)
    ref, ref_stats = cpu_reference(source, chunking)

    host = host_capture(source, chunking)
    staged = gpu.StagedDelivery(host, _core.host_lanes(host, lanes, 3, mapping))
    staged.start()
    got = drain(staged)
    staged.stop()
    stats = staged.stats

    # The capture's one accounting is the CPU engine's, faults counted as injected.
    for k in COUNTERS:
        assert stats[k] == ref_stats[k], (k, stats[k], ref_stats[k])
    assert stats["lost"] == len(f.dropped) and stats["duplicate"] == len(f.duplicated)
    assert stats["late"] == len(f.late)
    # Every chunk once, on the lane its number names, with the reference's bytes.
    assert sorted(got) == sorted(ref)
    want_lane = lane_of(mapping, lanes)
    for cid, (lane, present, data) in got.items():
        assert lane == want_lane(cid), cid
        assert np.array_equal(present, ref[cid][0]), cid
        seqs = cid * ppc + np.flatnonzero(present)
        assert np.array_equal(data[present], example_payloads(seqs)), cid
    # Per lane: what was routed to it, copied and handed on; the sums are the capture's.
    per = stats["gpus"]
    assert len(per) == lanes
    for i, d in enumerate(per):
        mine = [cid for cid in ref if want_lane(cid) == i]
        assert d["routed"] == d["chunks"] == len(mine) > 0, (i, d)
        assert d["packets"] == sum(int(ref[c][0].sum()) for c in mine)
        assert d["chunks_dropped"] == d["packets_dropped"] == d["chunks_in_use"] == 0
        assert d["n_chunks"] == 3 and d["h2d_bytes"] == len(mine) * (ppc * PAYLOAD + ppc)
    assert sum(d["packets"] for d in per) == stats["packets"]
    assert stats["gpu_chunks"] == sum(d["chunks"] for d in per) == stats["chunks"]
    assert stats["n_gpu_chunks"] == 3 * lanes and stats["gpu_chunks_dropped"] == 0
    assert staged.finished


# --- staging split per GPU -------------------------------------------------------------


def split_capture(
    source: rx.Source,
    chunking: rx.Chunking,
    devices: int,
    mapping: Sequence[int] | None = None,
    nodes: Sequence[int | None] | None = None,
) -> Any:
    """The host capture (not started) a Capture into `devices` GPUs opens: its pool split
    per GPU by the routing (positions in the device list), each part bound to `nodes`."""
    names = [f"cuda:{i}" for i in range(devices)]
    delivery = rx.Delivery(
        devices=names,
        mapping=None if mapping is None else [names[m] for m in mapping],
        staging_nodes=nodes,
    )
    fmt = _core.Format()
    plan = engine_config(source, fmt, chunking, delivery, None)
    return plan.source.open_host(fmt, plan.config)


def staged_parts(lanes: Any) -> list[dict[str, Any]]:
    return [d["staging"] for d in lanes.device_stats]


@pytest.mark.parametrize(
    ("lanes", "mapping"),
    [(2, None), (3, None), (2, [0, 0, 1, 1]), (3, [2, 0, 1, 1, 0])],
    ids=["rr2", "rr3", "runs2", "table3"],
)
def test_every_chunk_is_staged_in_its_gpus_part_of_the_pool(
    lanes: int, mapping: list[int] | None
) -> None:
    ppc, mc = 128, 4
    f = faulty_schedule(60, ppc, mc, np.random.default_rng(lanes * 7 + len(mapping or ())))
    source = rx.MemSource(schedule=f.schedule)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=0)
    ref, ref_stats = cpu_reference(source, chunking)

    host = split_capture(source, chunking, lanes, mapping)
    config = host.config
    period = len(mapping) if mapping else lanes
    assert list(config.staging_route) == (mapping or list(range(lanes)))
    assert config.n_chunks % period == 0 and config.n_chunks >= chunking.max_chunks + 4
    staged = gpu.StagedDelivery(host, _core.host_lanes(host, lanes, 3, mapping))
    parts = [d["staging"] for d in staged.stats["gpus"]]
    # Each GPU's part: the pool's chunks whose number routes to it, in one block of its own.
    want_lane = lane_of(mapping, lanes)
    for i, p in enumerate(parts):
        assert p["split"] and p["chunks"] == sum(want_lane(k) == i for k in range(config.n_chunks))
        assert p["end"] - p["begin"] >= p["chunks"] * ppc * PAYLOAD
    spans = sorted((p["begin"], p["end"]) for p in parts)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans
    staged.start()
    got: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}
    while (chunk := staged.next_chunk(20)) is not None:
        with chunk:
            assert chunk.chunk_id not in got, f"chunk {chunk.chunk_id} handed out twice"
            part = parts[chunk.lane]
            assert part["begin"] <= chunk.staged_from < part["end"], (chunk.chunk_id, chunk.lane)
            got[chunk.chunk_id] = (chunk.lane, chunk.present.copy(), chunk.data.copy())
    staged.stop()
    stats = staged.stats

    # The account is the CPU engine's with one pool, faults counted as injected.
    for k in (*COUNTERS, "chunks_dropped", "no_free_chunk"):
        assert stats[k] == ref_stats[k], (k, stats[k], ref_stats[k])
    assert stats["lost"] == len(f.dropped) and stats["duplicate"] == len(f.duplicated)
    assert stats["late"] == len(f.late)
    assert sorted(got) == sorted(ref)
    for cid, (lane, present, data) in got.items():
        assert lane == want_lane(cid), cid
        assert np.array_equal(present, ref[cid][0]), cid
        seqs = cid * ppc + np.flatnonzero(present)
        assert np.array_equal(data[present], example_payloads(seqs)), cid
    for i, d in enumerate(stats["gpus"]):
        assert d["routed"] == d["chunks"] == sum(want_lane(c) == i for c in ref)


def test_header_split_lanes_take_their_gpus_chunks() -> None:
    # The header-data split engine over the emulated NIC, pool split for two GPUs in runs
    # of two: every chunk once, whole, staged in its GPU's part.
    ppc, n = 64, 48
    source = rx.EmulatedNic(count=ppc * n, queues=2, split=True, depth=64)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=4, first_chunk=0)
    host = split_capture(source, chunking, 2, [0, 0, 1, 1])
    assert host.config.n_chunks % 4 == 0
    staged = gpu.StagedDelivery(host, _core.host_lanes(host, 2, 3, [0, 0, 1, 1]))
    parts = [d["staging"] for d in staged.stats["gpus"]]
    staged.start()
    seen = []
    while (chunk := staged.next_chunk(20)) is not None:
        with chunk:
            assert chunk.lane == [0, 0, 1, 1][chunk.chunk_id % 4]
            part = parts[chunk.lane]
            assert part["begin"] <= chunk.staged_from < part["end"], chunk.chunk_id
            assert chunk.present.all()
            want = example_payloads(chunk.chunk_id * ppc + np.arange(ppc))
            assert np.array_equal(chunk.data, want), chunk.chunk_id
            seen.append(chunk.chunk_id)
    staged.stop()
    assert sorted(seen) == list(range(n))
    stats = staged.stats
    assert stats["packets"] == stats["received"] == ppc * n
    assert stats["lost"] == stats["no_free_chunk"] == stats["chunks_given_up"] == 0


def test_drop_oldest_in_the_engine_takes_a_chunk_of_the_same_gpu() -> None:
    # Nobody takes the host chunks until the stream has ended: the engine, short of a free
    # chunk for a number, drops the oldest ready chunk of that number's GPU, so what is
    # left is each GPU's newest, and every packet is counted once.
    ppc, n = 64, 30
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=2, n_chunks=6, policy="drop_oldest")
    host = split_capture(rx.MemSource(count=ppc * n), chunking, 2)
    assert host.config.n_chunks == 6
    host.start()
    deadline = time.monotonic() + 20
    while host.running and time.monotonic() < deadline:
        time.sleep(0.01)
    left: list[int] = []
    while (chunk := host.next_chunk(1)) is not None:
        with chunk:
            left.append(chunk.chunk_id)
    host.stop()
    stats = dict(host.stats)
    assert stats["chunks"] == n and stats["lost"] == 0
    assert stats["chunks_dropped"] + len(left) == n
    assert stats["packets_dropped"] == stats["chunks_dropped"] * ppc
    # 3 chunks per GPU's part: each GPU keeps its own newest, none of the other's count.
    for g in (0, 1):
        mine = [c for c in range(n) if c % 2 == g]
        assert sorted(c for c in left if c % 2 == g) == mine[-3:], (g, left)


def _mempolicy(address: int) -> tuple[int, int]:
    """(policy of the mapping at `address`, node of its page) from get_mempolicy(2)."""
    import ctypes
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("get_mempolicy's syscall number is x86_64's here")
    libc = ctypes.CDLL(None, use_errno=True)
    sys_get_mempolicy, mpol_f_node, mpol_f_addr = 239, 1, 2
    mode, node = ctypes.c_int(-1), ctypes.c_int(-1)
    for out, flags in ((mode, mpol_f_addr), (node, mpol_f_addr | mpol_f_node)):
        rc = libc.syscall(
            sys_get_mempolicy,
            ctypes.byref(out),
            None,
            ctypes.c_ulong(0),
            ctypes.c_void_p(address),
            ctypes.c_ulong(flags),
        )
        assert rc == 0, os.strerror(ctypes.get_errno())
    return mode.value, node.value


needs_node0 = pytest.mark.skipif(
    not Path("/sys/devices/system/node/node0").exists(), reason="no NUMA node 0 in sysfs"
)


@needs_node0
def test_each_part_is_bound_to_its_node_and_an_impossible_node_is_said() -> None:
    ppc, n = 64, 24
    mpol_default, mpol_preferred = 0, 1
    source = rx.MemSource(count=ppc * n)
    chunking = rx.Chunking(packets_per_chunk=ppc, first_chunk=0)
    host = split_capture(source, chunking, 3, None, [0, 1023, None])
    staged = gpu.StagedDelivery(host, _core.host_lanes(host, 3, 2, None))
    bound, impossible, unknown = (d["staging"] for d in staged.stats["gpus"])
    assert bound["bound"] and bound["node"] == 0 and bound["why_not"] == ""
    assert bound["pages"] > 0 and bound["pages_on_node"] == bound["pages"]
    # The kernel's own view of that memory: its policy, and the node its pages are on.
    assert _mempolicy(bound["begin"]) == (mpol_preferred, 0)
    assert _mempolicy(bound["end"] - 1) == (mpol_preferred, 0)
    assert not impossible["bound"] and impossible["node"] == 1023
    assert "node 1023" in impossible["why_not"] and impossible["pages"] == 0
    assert _mempolicy(impossible["begin"])[0] == mpol_default
    assert not unknown["bound"] and unknown["node"] is None
    assert unknown["why_not"] == "NUMA node unknown"
    assert placement.staging_outcome([bound, impossible, unknown]) == (
        (
            f"GPU 0's staging ({bound['chunks']} chunks) on node 0: "
            f"{bound['pages']} of {bound['pages']} pages there",
        ),
        (f"bind GPU 1's staging to node 1023: {impossible['why_not']}",),
    )
    # Unbound parts still work: every chunk arrives.
    staged.start()
    got = []
    while (chunk := staged.next_chunk(20)) is not None:
        with chunk:
            got.append(chunk.chunk_id)
    staged.stop()
    assert sorted(got) == list(range(n))


def test_one_gpu_and_host_chunks_keep_one_pool() -> None:
    chunking = rx.Chunking(packets_per_chunk=64)
    host = host_capture(rx.MemSource(count=64), chunking)
    assert list(host.config.staging_route) == [] and list(host.config.staging_nodes) == []
    lanes = _core.host_lanes(host, 2, 2, None)
    (a, b) = staged_parts(lanes)
    assert a == b and not a["split"] and a["chunks"] == host.config.n_chunks
    assert a["why_not"] == "one pool for every device"


def test_staging_split_plan() -> None:
    sites = [site("cuda:0", 0), site("cuda:1", None)]
    s = placement.staging_split(sites, None)
    assert s.route == (0, 1) and s.nodes == (0, -1)
    (decision,) = s.decisions
    assert decision == "staging of cuda:0 (1/2 of the chunks) bound to node 0 (its GPU's node)"
    assert s.unmet == (
        "staging of cuda:1 on its node: NUMA node unknown (sysfs numa_node); its part is not bound",
    )
    s = placement.staging_split(sites, [0, 0, 1], [1, None])
    assert s.route == (0, 0, 1) and s.nodes == (1, -1) and s.period == 3
    assert "none given" in s.unmet[0]
    long = placement.staging_split(sites, [0, 1] * 200)
    assert long.route == () and long.period == 1
    assert "period of 400 chunks is over 256" in long.unmet[0]
    assert placement.staging_split(sites[:1], None) == placement.StagingSplit((), ())


@pytest.mark.parametrize(
    ("route", "nodes", "message"),
    [
        ([0, 2], [0, 0], "staging route entry 1 is part 2 of 2"),
        ([0, 0], [0, 0], "staging part 1 gets no chunk number from the route"),
        ([], [0, 0], "needs a route"),
        ([0, 1], [0, -2], "node -2 is not a NUMA node"),
        ([0, 1] * 129, [0, 0], "staging route of 258 entries: at most 256"),
    ],
)
def test_bad_staging_is_named(route: list[int], nodes: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _core.EngineConfig(staging_route=route, staging_nodes=nodes)


def test_the_split_pool_is_a_multiple_of_the_routes_period() -> None:
    c = _core.EngineConfig(max_chunks=4, staging_route=[0, 0, 1], staging_nodes=[-1, -1])
    assert c.sized(1).n_chunks == 9  # 4 + 4 rounded up to 3s
    assert c.sized(2, 64, delivery=True).n_chunks % 3 == 0
    assert _core.EngineConfig(max_chunks=4).sized(1).n_chunks == 8  # one pool: as before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"device": "cuda:0", "staging_nodes": [0]}, "binds the staging pool's part"),
        ({"devices": ["cuda:0", "cuda:1"], "staging_nodes": [0]}, r"1 node\(s\) for 2 GPUs"),
        ({"devices": ["cuda:0", "cuda:1"], "staging_nodes": [0, -1]}, r"staging_nodes\[1\] is -1"),
        ({"devices": ["cuda:0", "cuda:1"], "staging_nodes": "0"}, "a list of NUMA nodes"),
    ],
)
def test_staging_nodes_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rx.Delivery(**kwargs)


def test_queues_sharing_chunks_into_three_lanes() -> None:
    # Three receive queues place into shared chunks; the dispatcher routes what leaves.
    ppc, n = 256, 48
    source = rx.MemSource(count=ppc * n, queues=3)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=4, first_chunk=0)
    host = host_capture(source, chunking)
    lanes = _core.host_lanes(host, 3, 4, [1, 2, 0])
    lanes.start()
    got = drain(lanes)
    lanes.stop()
    assert sorted(got) == list(range(n))
    for cid, (lane, present, data) in got.items():
        assert lane == [1, 2, 0][cid % 3] and present.all()
        assert np.array_equal(data, example_payloads(cid * ppc + np.arange(ppc)))
    assert [d["routed"] for d in lanes.device_stats] == [n // 3] * 3


def test_drop_oldest_takes_back_each_lanes_own_oldest() -> None:
    # Nobody consumes until the stream has ended: each lane keeps its ring's newest
    # chunks and takes back its own oldest, counted; the engine (a pool larger than the
    # stream) drops nothing.
    ppc, n, ring, k = 64, 30, 2, 3
    chunking = rx.Chunking(packets_per_chunk=ppc, n_chunks=n + 8, policy="drop_oldest")
    host = host_capture(rx.MemSource(count=ppc * n), chunking)
    lanes = _core.host_lanes(host, k, ring, None)
    lanes.start()
    deadline = time.monotonic() + 20
    while lanes.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not lanes.running
    got = drain(lanes, timeout=1)
    lanes.stop()
    stats = dict(host.stats)
    assert stats["chunks"] == n and stats["chunks_dropped"] == 0
    for i, d in enumerate(lanes.device_stats):
        mine = [cid for cid in range(n) if cid % k == i]
        assert sorted(c for c, v in got.items() if v[0] == i) == mine[-ring:]
        assert d["routed"] == d["chunks"] == len(mine)
        assert d["chunks_dropped"] == len(mine) - ring
        assert d["packets_dropped"] == (len(mine) - ring) * ppc
    totals = lanes.stats
    assert totals["gpu_chunks_dropped"] + len(got) == totals["gpu_chunks"] == n


def test_a_held_lane_waits_and_then_everything_arrives() -> None:
    # The consumer holds lane 1's chunks (its whole ring) for a while: lane 1 waits for
    # them (block policy), the others go on while the host pool lasts, nothing is lost.
    ppc, n, ring = 64, 40, 3
    chunking = rx.Chunking(packets_per_chunk=ppc, first_chunk=0)
    host = host_capture(rx.MemSource(count=ppc * n), chunking)
    lanes = _core.host_lanes(host, 2, ring, None)
    lanes.start()
    held: list[Any] = []
    seen = []
    while (chunk := lanes.next_chunk(20)) is not None:
        seen.append(chunk.chunk_id)
        assert np.array_equal(chunk.data, example_payloads(chunk.first_seq + np.arange(ppc)))
        if chunk.lane == 1:
            held.append(chunk)
            if len(held) == ring:
                time.sleep(0.3)
                for c in held:
                    c.release()
                held.clear()
        else:
            chunk.release()
    for c in held:
        c.release()
    lanes.stop()
    assert sorted(seen) == list(range(n))
    stats = dict(host.stats)
    assert stats["lost"] == 0 and stats["packets"] == ppc * n
    per = lanes.device_stats
    assert per[1]["waits"] > 0
    assert [d["routed"] for d in per] == [n // 2, n // 2]


def test_stop_mid_stream_hands_on_every_routed_chunk() -> None:
    # A live source stopped while it sends: the open chunks are flushed and routed, and
    # every chunk the engine handed on reaches the consumer from its lane.
    ppc = 256
    chunking = rx.Chunking(packets_per_chunk=ppc, n_chunks=16)
    host = host_capture(rx.EmulatedNic(count=10**9, nic_rate_gbps=4.0), chunking)
    lanes = _core.host_lanes(host, 2, 4, [0, 1, 1])
    lanes.start()
    got = {}
    t_end = time.monotonic() + 0.5
    while time.monotonic() < t_end:
        chunk = lanes.next_chunk(5)
        assert chunk is not None
        with chunk:
            got[chunk.chunk_id] = (chunk.lane, chunk.n_present)
    lanes.stop()
    got.update({k: (v[0], int(v[1].sum())) for k, v in drain(lanes, timeout=5).items()})
    assert lanes.finished and not lanes.running
    stats = dict(host.stats)
    per = lanes.device_stats
    assert len(got) == stats["chunks"] - stats["chunks_dropped"] == sum(d["routed"] for d in per)
    assert sum(n for _, n in got.values()) == stats["packets"] == sum(d["packets"] for d in per)
    assert all(lane == [0, 1, 1][cid % 3] for cid, (lane, _) in got.items())
    assert stats["received"] == (
        stats["packets"]
        + stats["late"]
        + stats["duplicate"]
        + stats["rejected"]
        + stats["discarded"]
    )


def _lane_threads() -> dict[str, set[int]]:
    """This process's delivery threads by name (rx-copy<lane>, rx-recycle<lane>,
    rx-dispatch) and the CPUs the kernel lets each run on."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            if name.startswith("rx-"):
                out[name] = os.sched_getaffinity(int(task.name))
        except OSError:  # the thread has ended
            continue
    return out


def test_each_lanes_threads_run_on_its_cpus() -> None:
    # Each lane's copy and recycle threads named and pinned where its cpus say, a lane
    # given none left on the starting thread's CPUs; every chunk still arrives once.
    mine = sorted(os.sched_getaffinity(0))
    first, last = mine[0], mine[-1]
    ppc, n = 64, 40
    host = host_capture(rx.MemSource(count=ppc * n), rx.Chunking(packets_per_chunk=ppc))
    lanes = _core.host_lanes(host, 3, 2, None, [[last], [first], []])
    staged = gpu.StagedDelivery(host, lanes)
    staged.start()
    held = staged.next_chunk(20)  # a lane waits on its ring: its threads stay up
    assert held is not None
    deadline = time.monotonic() + 20
    while len(threads := _lane_threads()) < 7 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threads["rx-copy0"] == threads["rx-recycle0"] == {last}
    assert threads["rx-copy1"] == threads["rx-recycle1"] == {first}
    assert threads["rx-copy2"] == threads["rx-recycle2"] == set(mine)
    assert "rx-dispatch" in threads
    ids = [held.chunk_id]
    held.release()
    while (chunk := staged.next_chunk(20)) is not None:
        ids.append(chunk.chunk_id)
        chunk.release()
    staged.stop()
    assert sorted(ids) == list(range(n))
    assert [d["cpus"] for d in staged.stats["gpus"]] == [[last], [first], []]


@pytest.mark.parametrize(
    ("cpus", "error", "message"),
    [
        ([[0]], ValueError, "cpus names the CPUs of 1 devices' threads, the delivery has 2"),
        ([[0], [-1]], ValueError, r"lane 1: CPU -1 is not a CPU number \(0..1023\)"),
        ([[0], [5000]], ValueError, "lane 1: CPU 5000 is not a CPU number"),
    ],
)
def test_bad_lane_cpus_are_named(cpus: list[list[int]], error: type, message: str) -> None:
    host = host_capture(rx.MemSource(count=64), rx.Chunking(packets_per_chunk=64))
    with pytest.raises(error, match=message):
        _core.host_lanes(host, 2, 2, None, cpus)


def test_a_cpu_the_lane_may_not_use_stops_the_delivery_naming_it() -> None:
    # A CPU number this machine lacks: the lane's thread cannot be pinned there, and the
    # delivery ends with an error naming the lane, its thread and the CPU.
    absent = max(os.sched_getaffinity(0)) + 1
    host = host_capture(rx.MemSource(count=64 * 8), rx.Chunking(packets_per_chunk=64))
    staged = gpu.StagedDelivery(host, _core.host_lanes(host, 2, 2, None, [[], [absent]]))
    staged.start()
    with pytest.raises(
        RuntimeError, match=f"cannot pin lane 1's (copy|recycle) thread to CPUs {absent}"
    ):
        while staged.next_chunk(20) is not None:
            pass
        staged.stop()


def test_dropping_a_running_delivery_ends_its_threads() -> None:
    # Destroyed while its source still sends and a lane waits for a held chunk: the
    # threads give up and the process ends (a hang here would be a leaked thread).
    code = textwrap.dedent(
        """
        import casper400g_rx as rx
        from casper400g_rx import _core
        cap = rx.Capture(rx.EmulatedNic(count=10**9, nic_rate_gbps=4.0),
                         chunking=rx.Chunking(packets_per_chunk=256))
        lanes = _core.host_lanes(cap._cap, 2, 2, None)
        lanes.start()
        held = [lanes.next_chunk(5) for _ in range(3)]
        assert all(c is not None for c in held)
        del lanes, cap, held  # the last chunk held keeps the delivery until here
        print("ended")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0 and "ended" in out.stdout, out.stderr


def _spead_packet(cnt: int, payload: bytes, offset: int, heap: int, timestamp: int) -> bytes:
    """A SPEAD-64-48 data packet (struct, after the protocol's item pointer layout)."""
    imm = 1 << 63
    items = [imm | (1 << 48) | cnt, imm | (2 << 48) | heap, imm | (3 << 48) | offset]
    items += [imm | (4 << 48) | len(payload)]
    if offset == 0:
        items.append(imm | (0x1600 << 48) | timestamp)
    head = struct.pack(">BBBBHH", 0x53, 4, 2, 6, 0, len(items))
    return head + b"".join(struct.pack(">Q", i) for i in items) + payload


def test_spead_heaps_and_items_follow_their_chunk() -> None:
    # Per-heap byte counts and named items ride with each chunk into its lane's ring.
    rng = np.random.default_rng(5)
    heap, ts_item = 256, 0x1600
    pkts = []
    for cnt in range(96):
        body = rng.integers(0, 256, heap, dtype=np.uint8).tobytes()
        for off in range(0, heap, 64):
            if rng.random() > 0.08:
                pkts.append(_spead_packet(cnt, body[off : off + 64], off, heap, cnt * 3))
    stride = max(map(len, pkts))
    rows = np.zeros((len(pkts), stride), np.uint8)
    for i, p in enumerate(pkts):
        rows[i, : len(p)] = np.frombuffer(p, np.uint8)
    source = rx.MemSource(packets=rows, sizes=[len(p) for p in pkts])
    fmt = rx.Format.spead(heap, items=[ts_item])
    chunking = rx.Chunking(packets_per_chunk=16, max_chunks=4)
    cpu = rx.Capture(source, fmt=fmt, chunking=chunking)
    want = {}
    with cpu:
        for c in cpu.chunks(timeout=10):
            with c:
                want[c.chunk_id] = (c.present.copy(), c.heap_bytes.copy(), c.items[ts_item].copy())
    host = host_capture(source, chunking, fmt)
    lanes = _core.host_lanes(host, 2, 3, None)
    lanes.start()
    got = {}
    while (chunk := lanes.next_chunk(10)) is not None:
        with chunk:
            assert chunk.lane == chunk.chunk_id % 2
            got[chunk.chunk_id] = (
                chunk.present.copy(),
                chunk.heap_bytes.copy(),
                chunk.items[ts_item].copy(),
            )
    lanes.stop()
    assert sorted(got) == sorted(want)
    for cid, w in want.items():
        for a, b in zip(got[cid], w, strict=True):
            assert np.array_equal(a, b), cid
    assert sum(int(w[1].sum()) for w in want.values()) == dict(host.stats)["bytes"]


# --- on GPUs -------------------------------------------------------------------------


def _cupy() -> Any:
    return pytest.importorskip("cupy", reason="cupy reads the GPU chunks back")


def gpu_chunks(cap: rx.Capture, cp: Any, check: Callable[[Any, Any], None] | None = None) -> dict:
    """Every chunk of a capture into GPUs, read back under its own device:
    {chunk_id: (device, present, payloads)}."""
    got = {}
    with cap:
        for chunk in cap.chunks(timeout=30):
            with cp.cuda.Device(chunk.device):
                x = cp.from_dlpack(chunk)
                assert x.device.id == chunk.device
                assert chunk.__dlpack_device__() == (2, chunk.device)  # kDLCUDA, its GPU
                assert x.data.ptr == chunk.ptr
                present_gpu = cp.asnumpy(cp.from_dlpack(chunk.present_gpu))
                assert np.array_equal(present_gpu, chunk.present)
                if check is not None:
                    check(chunk, x)
                got[chunk.chunk_id] = (chunk.device, chunk.present.copy(), cp.asnumpy(x))
                del x
                chunk.release()
    return got


@needs_two_gpus
@pytest.mark.parametrize("mapping", [None, ["cuda:1", "cuda:0", "cuda:0"]], ids=["rr", "table"])
def test_every_chunk_on_its_gpu_with_the_cpu_engines_bytes(mapping: list[str] | None) -> None:
    cp = _cupy()
    ppc, mc = 256, 4
    f = faulty_schedule(48, ppc, mc, np.random.default_rng(3))
    source = rx.MemSource(schedule=f.schedule)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=0)
    ref, ref_stats = cpu_reference(source, chunking)
    delivery = rx.Delivery(devices=["cuda:0", "cuda:1"], mapping=mapping, gpu_chunks=3)
    cap = rx.Capture(source, chunking=chunking, delivery=delivery)
    got = gpu_chunks(cap, cp)
    stats = cap.stats
    for k in COUNTERS:
        assert stats[k] == ref_stats[k], (k, stats[k], ref_stats[k])
    assert stats["lost"] == len(f.dropped) and stats["late"] == len(f.late)
    assert sorted(got) == sorted(ref)
    want = lane_of(delivery.routes(), 2)
    for cid, (device, present, data) in got.items():
        assert device == want(cid), cid  # devices are cuda:0, cuda:1 in this order
        assert np.array_equal(present, ref[cid][0]), cid
        seqs = cid * ppc + np.flatnonzero(present)
        assert np.array_equal(data[present], example_payloads(seqs)), cid
    per = stats["gpus"]
    assert [d["device"] for d in per] == [0, 1]
    for i, d in enumerate(per):
        mine = [cid for cid in ref if want(cid) == i]
        assert d["routed"] == d["chunks"] == len(mine) and d["chunks_dropped"] == 0
        assert d["packets"] == sum(int(ref[c][0].sum()) for c in mine)
        assert d["h2d_bytes"] == len(mine) * (ppc * PAYLOAD + ppc)
        # Its part of the staging pool: the chunks its numbers take, bound to its node
        # where sysfs knows it (all its pages there), else said.
        st = d["staging"]
        assert st["split"] and st["chunks"] == sum(want(k) == i for k in range(cap.config.n_chunks))
        if d["numa_node"] >= 0:
            assert st["node"] == d["numa_node"] and st["bound"], st
            assert st["pages_on_node"] == st["pages"] > 0, st
        else:
            assert not st["bound"] and st["why_not"] == "NUMA node unknown", st
    assert stats["gpu_chunks"] == stats["chunks"]


@needs_two_gpus
def test_faults_and_a_slow_gpu_are_counted_exactly() -> None:
    # A live emulated NIC (its drops counted), drop_oldest, and a consumer that sleeps on
    # every chunk of cuda:1: every packet offered is placed, dropped by the NIC or late,
    # every chunk routed is consumed or counted dropped on its GPU, and what the consumer
    # gets is on the right GPU with the formula's bytes.
    cp = _cupy()
    ppc, count = 1024, 1024 * 400
    chunking = rx.Chunking(packets_per_chunk=ppc, first_chunk=0, policy="drop_oldest")
    delivery = rx.Delivery(devices=["cuda:0", "cuda:1"], gpu_chunks=3)
    cap = rx.Capture(
        rx.EmulatedNic(count=count, nic_rate_gbps=40.0, queues=2),
        chunking=chunking,
        delivery=delivery,
    )
    consumed = {0: [0, 0], 1: [0, 0]}  # device: [chunks, packets]

    def check(chunk: Any, x: Any) -> None:
        assert chunk.device == chunk.chunk_id % 2
        present = chunk.present
        sums = cp.asnumpy(x.view(cp.uint64).sum(axis=1))
        seqs = chunk.first_seq + np.arange(ppc)
        ref = example_payloads(seqs[present]).view(np.uint64).sum(axis=1)
        assert np.array_equal(sums[present], ref)
        consumed[chunk.device][0] += 1
        consumed[chunk.device][1] += int(present.sum())
        if chunk.device == 1:
            time.sleep(0.01)

    gpu_chunks(cap, cp, check)
    s = cap.stats
    assert s["received"] + s["nic_drops"] == count
    placed = s["packets"] + s["late"] + s["duplicate"] + s["rejected"] + s["discarded"]
    assert placed == s["received"]
    routed = sum(d["routed"] for d in s["gpus"])
    assert routed == s["chunks"] - s["chunks_dropped"] == sum(d["chunks"] for d in s["gpus"])
    for i, d in enumerate(s["gpus"]):
        assert consumed[i][0] + d["chunks_dropped"] == d["chunks"], (i, d, consumed[i])
        assert consumed[i][1] + d["packets_dropped"] == d["packets"], (i, d, consumed[i])
    assert s["gpus"][1]["chunks_dropped"] > 0  # the slow GPU's consumer lost chunks
    assert sum(d["packets"] for d in s["gpus"]) == s["packets"] - s["packets_dropped"]


@needs_two_gpus
def test_each_gpus_copy_threads_run_on_its_node() -> None:
    # Sized for a rate: each GPU's copy and recycle threads where the placement put them
    # (its node's CPUs left over by the lanes, or with the other threads where it said it
    # could not), as the kernel reports them while chunks flow.
    cp = _cupy()
    delivery = rx.Delivery(devices=["cuda:0", "cuda:1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sizing.CapacityWarning)
        cap = rx.Capture(rx.EmulatedNic(count=1024 * 64), delivery=delivery, rate_gbps=20.0)
    p = cap.sizing.placement
    assert p is not None and p.gpu_cpus is not None
    topo = placement.Topology.read()
    seen: dict[str, set[int]] = {}
    with cap:
        for chunk in cap.chunks(timeout=30):
            if not seen:
                seen = _lane_threads()
            with cp.cuda.Device(chunk.device):
                chunk.release()
    per = cap.stats["gpus"]
    for i, d in enumerate(per):
        want = p.gpu_cpus[i]
        assert tuple(d["cpus"]) == want, (i, d["cpus"], want)
        if want:
            assert {topo.node[c] for c in want} == {d["numa_node"]}
            assert seen[f"rx-copy{i}"] == seen[f"rx-recycle{i}"] == set(want)
        else:
            assert f"{delivery.devices[i]} (" in "\n".join(p.unmet)


@needs_two_gpus
def test_a_stream_of_another_gpu_is_refused() -> None:
    cp = _cupy()
    cap = rx.Capture(
        rx.MemSource(count=64 * 4),
        chunking=rx.Chunking(packets_per_chunk=64, first_chunk=0),
        delivery=rx.Delivery(devices=["cuda:0", "cuda:1"]),
    )
    with cap:
        for chunk in cap.chunks(timeout=20):
            with chunk:
                other = 1 - chunk.device
                with cp.cuda.Device(other):
                    s = cp.cuda.Stream(non_blocking=True)
                with pytest.raises(ValueError, match=f"chunk is on cuda:{chunk.device}"):
                    chunk.__dlpack__(stream=s.ptr)
                with pytest.raises(ValueError, match="another GPU's"):
                    chunk.release(stream=s.ptr)
                assert not chunk.released  # still the consumer's: released on leaving


@needs_gpu
def test_two_lanes_on_one_gpu_route_by_number() -> None:
    # The multi-device lanes on a one-GPU host: two rings and streams on cuda:0, chunks
    # split by the table; each ring's stream fills exactly its chunks, with their bytes.
    cp = _cupy()
    ppc, n = 128, 30
    chunking = rx.Chunking(packets_per_chunk=ppc, first_chunk=0)
    host = host_capture(rx.MemSource(count=ppc * n), chunking)
    staged = gpu.StagedDelivery(host, _core.gpu_delivery(host, [0, 0], 3, [0, 1, 1]))
    staged.start()
    by_stream: dict[int, list[int]] = {}
    while (chunk := staged.next_chunk(20)) is not None:
        x = cp.from_dlpack(chunk)
        assert np.array_equal(cp.asnumpy(x), example_payloads(chunk.first_seq + np.arange(ppc)))
        by_stream.setdefault(chunk.stream, []).append(chunk.chunk_id)
        del x
        chunk.release()
    staged.stop()
    assert len(by_stream) == 2
    groups = sorted(sorted(v) for v in by_stream.values())
    assert groups == sorted([[k for k in range(n) if k % 3 == 0], [k for k in range(n) if k % 3]])
    per = staged.stats["gpus"]
    assert [d["device"] for d in per] == [0, 0] and [d["routed"] for d in per] == [10, 20]


@needs_gpu
def test_a_gpu_this_host_lacks_is_named() -> None:
    with pytest.raises(gpu.CudaError, match=f"device='cuda:{N_GPUS}' is not usable"):
        rx.Capture(
            rx.MemSource(count=64), delivery=rx.Delivery(devices=["cuda:0", f"cuda:{N_GPUS}"])
        )


# --- the benchmark's own logic (tools/bench_multigpu.py) --------------------------------


def test_benchmark_verdict_counts_every_packet() -> None:
    from casper400g_rx.tools.bench_multigpu import verdict

    clean = {
        "received": 4096,
        "packets": 4096,
        "late": 0,
        "duplicate": 0,
        "rejected": 0,
        "discarded": 0,
        "lost": 0,
        "nic_drops": 0,
        "packets_dropped": 0,
        "gpus": [{"packets": 2048}, {"packets": 2048}],
    }
    assert verdict(clean, 4096) == (True, True)
    # The NIC dropped 10 and 10 slots stayed empty: a loss, every packet accounted.
    dropped = {**clean, "received": 4086, "packets": 4086, "lost": 10, "nic_drops": 10}
    dropped["gpus"] = [{"packets": 2043}, {"packets": 2043}]
    assert verdict(dropped, 4096) == (False, True)
    # A GPU that reports a packet the engine never placed breaks the account.
    assert verdict({**clean, "gpus": [{"packets": 2049}, {"packets": 2048}]}, 4096) == (True, False)
    # Late packets are losses even when every one is counted.
    late = {**clean, "packets": 4090, "late": 6, "gpus": [{"packets": 4090}]}
    assert verdict(late, 4096) == (False, True)


def test_benchmark_ladder_goes_up_from_a_goal_that_held_and_down_from_one_that_lost() -> None:
    from casper400g_rx.tools.bench_multigpu import climb, ladder_rates

    def trial(rate: float, limit: float) -> Trial:
        return {"rate": rate, "ok": rate <= limit, "achieved": min(rate, limit)}

    seen: list[float] = []
    goal = [trial(400, 520)] * 3
    rates = ladder_rates(400, True, [350, 450, 500, 550, 600], [300])
    assert rates == [450, 500, 550, 600]
    best, failed = climb(goal, rates, lambda r: trial(r, 520), lambda t: seen.append(t["rate"]))
    assert best is not None and best["rate"] == 500
    assert failed is not None and failed["rate"] == 550 and seen == [450, 500, 550]
    seen.clear()
    goal = [trial(400, 320), trial(400, 320)]
    rates = ladder_rates(400, False, [450], [350, 300, 250])
    best, failed = climb(goal, rates, lambda r: trial(r, 320), lambda t: seen.append(t["rate"]))
    assert best is not None and best["rate"] == 300 and seen == [350, 300]
    assert failed is goal[0]
    best, failed = climb(goal, [], lambda r: trial(r, 0), lambda t: None)
    assert best is None and failed is goal[0]


def test_benchmark_smoke_run_writes_its_tables(tmp_path: Any) -> None:
    # The whole tool at a low rate into host lanes: the plumbing the GPU run relies on.
    from casper400g_rx.tools import bench_multigpu

    out = tmp_path / "multigpu.md"
    argv = ["--smoke", "--rate", "2", "--trials", "1", "--seconds", "0.5"]
    argv += ["--ladder-seconds", "0.3", "--ladder", "3", "--out", str(out)]
    assert bench_multigpu.main(argv) == 0
    text = out.read_text()
    assert "# One capture into 2 GPUs: host lane 0, host lane 1" in text
    assert "## 2 Gb/s offered, 1 trials of 0.5 s" in text
    assert "## Highest zero-loss rate (0.3 s per rate)" in text
    rows = [r for r in text.splitlines() if r.startswith(("| 1 |", "| ladder |"))]
    assert rows and all(r.split("|")[-3].strip() == "True" for r in rows), rows
    assert "Highest zero-loss rate:" in text or "No rate tried was zero-loss." in text
