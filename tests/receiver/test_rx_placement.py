"""Where a capture sized for a rate puts its threads and staging memory (placement.py,
from cpu_topology.py, applied by affinity.py):
the choice on fake sysfs trees of other machines, and on this machine the threads as the
kernel reports them (sched_getaffinity of each thread while a capture runs)."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest

import casper400g_rx as rx
from casper400g_rx import affinity, cpu_topology, gpu, placement
from casper400g_rx.cpu_topology import Topology
from casper400g_rx.placement import Need, plan_placement
from casper400g_rx.tools.bench_defaults import NOT_PLACED

GPU = "0000:c1:00.0"


def fake_sysfs(
    root: Path, nodes: list[list[tuple[int, ...]]], gpu_node: int = 1, nic_node: int = 0
) -> Path:
    """A sysfs tree: nodes[n] lists node n's physical cores, each as its CPUs (hyperthread
    siblings); a GPU at GPU on `gpu_node`; a NIC eth9 on `nic_node`."""
    system = root / "devices" / "system"
    for n, cores in enumerate(nodes):
        cpus = sorted(c for core in cores for c in core)
        node = system / "node" / f"node{n}"
        node.mkdir(parents=True)
        (node / "cpulist").write_text(",".join(map(str, cpus)) + "\n")
        for core in cores:
            for c in core:
                topo = system / "cpu" / f"cpu{c}" / "topology"
                topo.mkdir(parents=True)
                (topo / "thread_siblings_list").write_text(",".join(map(str, core)) + "\n")
    dev = root / "bus" / "pci" / "devices" / GPU
    dev.mkdir(parents=True)
    (dev / "numa_node").write_text(f"{gpu_node}\n")
    nic = root / "class" / "net" / "eth9" / "device"
    nic.mkdir(parents=True)
    (nic / "numa_node").write_text(f"{nic_node}\n")
    return root


def two_sockets(tmp_path: Path) -> Topology:
    """Two nodes of 4 cores with 2 hyperthreads each: node 0 CPUs 0-3 + 8-11, node 1
    CPUs 4-7 + 12-15 (core k: CPUs k and k + 8), the GPU on node 1."""
    nodes = [[(k, k + 8) for k in range(4)], [(k, k + 8) for k in range(4, 8)]]
    root = fake_sysfs(tmp_path, nodes)
    return Topology.read(allowed=range(16), root=str(root))


def test_cpu_lists_are_parsed_and_bad_ones_named() -> None:
    assert cpu_topology.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert cpu_topology.parse_cpulist("") == []
    for bad in ("0-x", "3-1", "a"):
        with pytest.raises(ValueError, match=f"not a CPU list: '{bad}'"):
            cpu_topology.parse_cpulist(bad)


def test_topology_and_numa_nodes_from_sysfs(tmp_path: Path) -> None:
    topo = two_sockets(tmp_path)
    assert topo.cpus == tuple(range(16))
    assert topo.nodes == [0, 1]
    assert topo.core[5] == topo.core[13] == (5, 13)
    assert [topo.node[c] for c in (0, 8, 4, 12)] == [0, 0, 1, 1]
    assert cpu_topology.pci_numa_node(GPU, str(tmp_path)) == 1
    assert cpu_topology.pci_numa_node(GPU.upper(), str(tmp_path)) == 1
    assert cpu_topology.netdev_numa_node("eth9", str(tmp_path)) == 0
    assert cpu_topology.pci_numa_node("0000:00:01.0", str(tmp_path)) is None  # absent
    (tmp_path / "bus" / "pci" / "devices" / GPU / "numa_node").write_text("-1\n")
    assert cpu_topology.pci_numa_node(GPU, str(tmp_path)) is None  # the kernel does not know
    # A CPU without topology files is a core of its own on node 0.
    bare = Topology.read(allowed=[0, 1], root=str(tmp_path / "nowhere"))
    assert bare.core == {0: (0,), 1: (1,)} and bare.node == {0: 0, 1: 0}


def test_lanes_take_physical_cores_of_the_gpus_node_first(tmp_path: Path) -> None:
    topo = two_sockets(tmp_path)
    p = plan_placement(Need(3, others=3, near=1, near_what="GPU cuda:0", gpu=True), topo)
    # One per physical core, node 1's, the highest-numbered first (CPU 0 last).
    assert p.lane_cpus == (7, 6, 5)
    # The other threads: CPUs of the cores without a lane, both nodes.
    assert p.other_cpus == (0, 1, 2, 3, 4, 8, 9, 10, 11, 12)
    # Staging memory allocated from node 1's CPUs that run no lane.
    assert p.staging_node == 1 and p.open_cpus == (4, 12, 13, 14, 15)
    assert p.unmet == ()
    text = str(p)
    assert "3 lane thread(s) pinned to CPUs 7, 6, 5, one per physical core" in text
    assert "(node 1, the GPU cuda:0's, first)" in text
    assert "GPU copy and recycle threads and the CUDA driver's threads kept on CPUs" in text
    assert "staging memory on node 1 (the GPU cuda:0's)" in text


def test_what_cannot_be_done_is_named(tmp_path: Path) -> None:
    topo = two_sockets(tmp_path)
    # More lanes than node 1 has cores: the rest on node 0.
    p = plan_placement(Need(6, near=1, near_what="GPU cuda:0", gpu=True), topo)
    assert p.lane_cpus == (7, 6, 5, 4, 3, 2)
    (note,) = p.unmet
    assert "2 lane(s) on CPUs 2-3 of another node" in note
    # More lanes than physical cores: siblings, named.
    p = plan_placement(Need(10, near=1, near_what="GPU cuda:0", gpu=True), topo)
    assert p.lane_cpus == (7, 6, 5, 4, 3, 2, 1, 0, 15, 14)
    assert any("10 lane threads, 8 cores free; 2 lane(s) share a core" in u for u in p.unmet)
    # The others then share cores with lanes.
    assert p.other_cpus == (8, 9, 10, 11, 12, 13)
    assert any("hyperthread siblings 8-13" in u for u in p.unmet)
    # As many lanes as CPUs: none left for the consumer, so nothing is pinned.
    p = plan_placement(Need(16, gpu=True, near=1, near_what="GPU cuda:0"), topo)
    assert p.lane_cpus is None and p.other_cpus is None
    assert "pin 16 lane thread(s): this process may use 16 CPU(s) (0-15)" in p.unmet[0]
    # One CPU left over where three are wanted.
    p = plan_placement(Need(15, others=3), topo)
    assert p.other_cpus is not None and len(p.other_cpus) == 1
    assert any("3 CPUs for them: 1 left over; they share it" in u for u in p.unmet)


def test_gpu_node_unknown_or_out_of_reach(tmp_path: Path) -> None:
    topo = two_sockets(tmp_path)
    p = plan_placement(Need(2, gpu=True, near_what="GPU cuda:0"), topo)
    assert p.staging_node is None and p.open_cpus is None
    assert any("its NUMA node is unknown" in u for u in p.unmet)
    # This process may only use node 0 (a cpuset, taskset): the GPU's node is out of reach.
    node0 = Topology.read(allowed=[0, 1, 2, 3, 8, 9, 10, 11], root=str(tmp_path))
    p = plan_placement(Need(2, gpu=True, near=1, near_what="GPU cuda:0"), node0)
    assert p.lane_cpus == (3, 2) and p.staging_node is None
    assert any("this process may not run there (CPUs 0-3,8-11)" in u for u in p.unmet)


def test_given_cpus_stay_and_other_captures_lanes_are_avoided(tmp_path: Path) -> None:
    topo = two_sockets(tmp_path)
    p = plan_placement(Need(2, given=(1, 2), near=1, near_what="GPU cuda:0", gpu=True), topo)
    assert p.lane_cpus == (1, 2)
    assert p.other_cpus is not None and not {1, 2, 9, 10} & set(p.other_cpus)
    assert "lane threads pinned to the CPUs given: 1-2" in str(p)
    p = plan_placement(Need(2, given=()), topo)
    assert p.lane_cpus is None and p.other_cpus is None
    assert "not pinned (cpus=() given)" in str(p)
    busy = frozenset({7, 15, 6})
    p = plan_placement(Need(2, near=1, near_what="GPU cuda:0", gpu=True, busy=busy), topo)
    assert p.lane_cpus == (5, 4)
    assert p.other_cpus is not None and not busy & set(p.other_cpus)
    assert p.open_cpus == (12, 13, 14)  # node 1's CPUs that run no lane, its or theirs
    assert "CPUs 6-7,15 held by the lanes of other captures" in str(p)


def test_one_numa_node_needs_no_memory_placement(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, [[(k,) for k in range(16)]], gpu_node=0)
    topo = Topology.read(allowed=range(16), root=str(root))
    p = plan_placement(Need(13, others=3, near=0, near_what="GPU cuda:0", gpu=True), topo)
    # The 16-CPU H100 host's shape: 13 lanes, the three lowest CPUs for the others.
    assert p.lane_cpus == tuple(range(15, 2, -1))
    assert p.other_cpus == (0, 1, 2)
    assert p.staging_node == 0 and p.open_cpus is None and p.unmet == ()
    # A GPU whose node the kernel does not know (a VM): one node, nothing to place.
    p = plan_placement(Need(13, others=3, near_what="GPU cuda:0", gpu=True), topo)
    assert p.staging_node == 0 and p.unmet == ()
    assert "one NUMA node (0): staging memory is local to every CPU" in str(p)


# --- on this machine: the threads as the kernel sees them ----------------------------


def _cpus_of_threads() -> dict[int, set[int]]:
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            out[int(task.name)] = os.sched_getaffinity(int(task.name))
        except OSError:
            continue
    return out


@pytest.fixture(autouse=True)
def own_lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Lane CPU claims of this test's captures apart from those of tests running beside
    it in other processes."""
    where = tmp_path / "lane-cpus"
    monkeypatch.setenv(affinity.LOCK_DIR_ENV, str(where))
    return where


def _this_machine() -> Topology:
    topo = Topology.read()
    if len(topo.cpus) < 2 or affinity.held_cpus():
        pytest.skip(f"needs two CPUs free for this process, has {topo.cpus}")
    return topo


def test_a_capture_sized_for_a_rate_pins_its_lanes_and_keeps_the_consumer_off() -> None:
    topo = _this_machine()
    me = threading.get_native_id()
    before = os.sched_getaffinity(0)
    count = 64 * 400
    cap = rx.Capture(
        rx.EmulatedNic(count=count, nic_rate_gbps=2.0, fill=False, split=True),
        chunking=rx.Chunking(packets_per_chunk=64),
        rate_gbps=2.0,
    )
    assert cap.sizing is not None and cap.sizing.placement is not None
    lanes = cap.sizing.placement.lane_cpus
    # One lane, on the highest-numbered physical core this process may use.
    want = plan_placement(Need(1), topo).lane_cpus
    assert lanes == want and lanes is not None and cap.source.cpus == lanes
    others = set(cap.sizing.placement.other_cpus or ())
    assert others and not others & set(lanes)
    assert affinity.held_cpus() == set(lanes)
    seen: dict[int, set[int]] = {}
    got = 0
    with cap:
        for chunk in cap.chunks(timeout=10):
            if not seen:
                seen = _cpus_of_threads()
            got += chunk.n_present
            chunk.release()
    # While it ran: the lane thread on its CPU alone, this (the consumer's) thread off it.
    assert seen[me] == others
    assert [t for t, c in seen.items() if c == set(lanes)], seen
    s = cap.stats
    assert got == s.packets and s.packets + s.nic_drops + sum(s[k] for k in NOT_PLACED) == count
    # Stopped: this thread's CPUs back, the lane CPUs free for another capture.
    assert os.sched_getaffinity(0) == before
    assert affinity.held_cpus() == frozenset()
    text = str(cap.sizing)
    assert text.startswith("1 receive queue(s)") and "placement:" in text
    # The pool printed is the one the header-split engine got.
    assert f"\n{cap.config.n_chunks} chunks in the pool\n" in text
    assert f"pinned to CPUs {lanes[0]}" in text


def test_a_second_capture_keeps_off_the_first_ones_lanes() -> None:
    _this_machine()

    def capture() -> rx.Capture:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rx.CapacityWarning)
            return rx.Capture(rx.EmulatedNic(count=64, split=True), rate_gbps=1.0)

    first = capture()
    second = capture()
    assert first.sizing is not None and second.sizing is not None
    assert first.sizing.placement is not None and second.sizing.placement is not None
    taken = set(first.sizing.placement.lane_cpus or ())
    assert taken and not taken & set(second.sizing.placement.lane_cpus or ())
    assert "held by the lanes of other captures" in str(second.sizing.placement)
    first.stop()
    second.stop()
    third = capture()
    assert third.sizing is not None and third.sizing.placement is not None
    assert set(third.sizing.placement.lane_cpus or ()) == taken
    third.stop()


def test_cpus_given_or_no_rate_are_left_alone() -> None:
    _this_machine()
    cap = rx.Capture(rx.EmulatedNic(count=64, split=True, cpus=()), rate_gbps=1.0)
    assert cap.source.cpus == () and cap.sizing is not None
    assert cap.sizing.placement is not None and cap.sizing.placement.lane_cpus is None
    unsized = rx.Capture(rx.EmulatedNic(count=64, split=True))
    assert unsized.sizing is None and unsized.source.cpus is None
    assert affinity.held_cpus() == frozenset()


def test_staging_memory_is_allocated_from_the_open_cpus() -> None:
    topo = _this_machine()
    target = (topo.cpus[-1],)
    before = os.sched_getaffinity(0)
    seen = []
    with affinity.opening(target):
        seen.append(os.sched_getaffinity(0))
    assert seen == [set(target)] and os.sched_getaffinity(0) == before


def test_the_cuda_drivers_threads_are_moved_off_the_lanes_and_back() -> None:
    topo = _this_machine()
    lane, rest = topo.cpus[-1], set(topo.cpus[:-1])
    libc = ctypes.CDLL(None, use_errno=True)
    ready, done = threading.Event(), threading.Event()
    tid = []

    def driver_like() -> None:
        libc.prctl(15, b"cuda-EvtHandlr", 0, 0, 0)  # PR_SET_NAME, as the CUDA driver names it
        tid.append(threading.get_native_id())
        ready.set()
        done.wait(10)

    t = threading.Thread(target=driver_like)
    t.start()
    ready.wait(10)
    try:
        assert tid[0] in affinity.driver_threads()
        before = os.sched_getaffinity(tid[0])
        others = affinity.KeepOff([lane], sorted(rest))
        others.start()
        assert os.sched_getaffinity(tid[0]) == rest
        assert os.sched_getaffinity(0) == rest  # the starting thread
        others.stop()
        assert os.sched_getaffinity(tid[0]) == before
    finally:
        done.set()
        t.join()


def test_the_nics_node_leads_without_a_gpu(tmp_path: Path) -> None:
    cpus = sorted(_this_machine().cpus)
    # This process's lowest CPU alone on node 1, the NIC's: it must take the lane, though
    # within one node the highest CPUs go first.
    root = fake_sysfs(tmp_path, [[(c,) for c in cpus[1:]], [(cpus[0],)]], nic_node=1)
    p = placement.place(1, None, "cpu", "eth9", root=str(root))
    assert p.lane_cpus == (cpus[0],)
    assert "(node 1, the NIC eth9's, first)" in str(p)
    assert all("GPU" not in d for d in p.decisions)


def test_captures_of_other_processes_keep_off_each_others_lanes(own_lock_dir: Path) -> None:
    topo = _this_machine()
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, warnings; import casper400g_rx as rx\n"
            "warnings.simplefilter('ignore')\n"
            "cap = rx.Capture(rx.EmulatedNic(count=64, split=True), rate_gbps=1.0)\n"
            "print(list(cap.sizing.placement.lane_cpus or []), flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, affinity.LOCK_DIR_ENV: str(own_lock_dir)},
    )
    try:
        assert child.stdout is not None
        theirs = set(json.loads(child.stdout.readline()))
        assert theirs == set(plan_placement(Need(1), topo).lane_cpus or ())
        assert affinity.held_cpus(topo.cpus) == theirs
        p = placement.place(1, None, "cpu")
        assert not theirs & set(p.lane_cpus or ())
        assert "held by the lanes of other captures" in str(p)
    finally:
        child.kill()  # no clean-up: the kernel drops its locks with the process
        child.wait(10)
    assert affinity.held_cpus(topo.cpus) == frozenset()
    assert set(placement.place(1, None, "cpu").lane_cpus or ()) == theirs


CUDA_OK, CUDA_WHY = gpu.cuda_status()


@pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
def test_into_a_gpu_the_copy_and_driver_threads_keep_off_the_lanes() -> None:
    _this_machine()
    address = cpu_topology.gpu_pci_address(0)
    assert address is not None
    node = Path(f"/sys/bus/pci/devices/{address}/numa_node")
    assert node.exists(), f"the GPU's PCI address {address} is not in sysfs"
    number = int(node.read_text())
    assert cpu_topology.pci_numa_node(address) == (number if number >= 0 else None)
    before = set(_cpus_of_threads())
    count = 1024 * 64
    cap = rx.Capture(
        rx.EmulatedNic(count=count, nic_rate_gbps=20.0, split=True),
        delivery=rx.Delivery(device="cuda:0"),
        rate_gbps=20.0,
    )
    assert cap.sizing is not None and cap.sizing.placement is not None
    p = cap.sizing.placement
    if p.lane_cpus is None:
        pytest.skip(f"too few CPUs to pin here: {p}")
    lanes, others = set(p.lane_cpus), set(p.other_cpus or ())
    assert f"GPU cuda:0 at {address}" in str(p)
    seen: dict[int, set[int]] = {}
    with cap:
        for chunk in cap.chunks(timeout=10):
            if not seen:
                seen = _cpus_of_threads()
            chunk.release()
    started = {t: c for t, c in seen.items() if t not in before}
    on_lanes = [t for t, c in started.items() if c <= lanes and len(c) == 1]
    assert len(on_lanes) == len(lanes)  # each lane thread on its CPU alone
    others = {t: c for t, c in started.items() if t not in on_lanes}
    assert others, "the GPU copy and recycle threads"
    assert all(c <= others for c in others.values()), (others, others)
    assert all(not seen[t] & lanes for t in affinity.driver_threads() if t in seen)
    s = cap.stats
    assert s.packets + s.nic_drops + sum(s[k] for k in NOT_PLACED) == count
