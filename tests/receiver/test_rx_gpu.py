"""GPU delivery. The tests marked `gpu` need a CUDA device (plus CuPy/PyTorch) and are
skipped elsewhere with the reason; the others run everywhere (CI has no GPU).

References: chunks from the CPU engine on the same arrival order, payloads from the
NumPy example-stream formula, frames from scapy.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

import casper400g_rx as rx
from casper400g_rx import _core, gpu
from casper400g_rx.example_stream import example_payloads
from casper400g_rx.faults import faulty_schedule
from casper400g_rx.tools.bench_defaults import NOT_PLACED

CUDA_OK, CUDA_WHY = gpu.cuda_status()
needs_gpu = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
PORT = 7148


def _import_or_skip(name: str):
    return pytest.importorskip(name, reason=f"{name} is not installed")


# --- everywhere ------------------------------------------------------------------------


def test_parse_device() -> None:
    assert gpu.parse_device("cpu") is None
    assert gpu.parse_device("cuda") == 0
    assert gpu.parse_device("cuda:3") == 3
    for bad in ("gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA:0"):
        with pytest.raises(ValueError, match="device must be"):
            gpu.parse_device(bad)


def test_kernels_compiled_in_ci() -> None:
    # CI builds with nvcc from PyPI: the reorder kernels must be in the extension.
    if os.environ.get("CI") != "true" and not _core.cuda_has_kernels():
        pytest.skip("built without nvcc (outside CI the kernels are optional)")
    assert _core.cuda_has_kernels()


@pytest.mark.skipif(CUDA_OK, reason="a CUDA device is present")
def test_missing_gpu_is_a_clear_error_only_when_asked() -> None:
    # Without a GPU the CPU path still works ...
    cap = rx.Capture(rx.MemSource(count=64), chunking=rx.Chunking(packets_per_chunk=64))
    with cap:
        assert sum(c.n_present for c in cap.chunks(timeout=5)) == 64
    # ... and asking for a device names the reason.
    with pytest.raises(gpu.CudaError, match=r"device='cuda:0' is not usable: .*(CUDA|cuda)"):
        rx.Capture(rx.MemSource(count=64), delivery=rx.Delivery(device="cuda:0"))
    with pytest.raises(gpu.CudaError, match="not usable"):
        rx.Capture(rx.MemSource(count=64), delivery=rx.Delivery(device="cuda:0", gpudirect=True))


def test_gpudirect_argument_errors() -> None:
    with pytest.raises(ValueError, match="gpudirect=True needs device"):
        rx.Capture(rx.MemSource(count=64), delivery=rx.Delivery(gpudirect=True))
    with pytest.raises(ValueError, match=r"NIC emulation \(MemSource\), not UdpSource"):
        rx.Capture(rx.UdpSource(), delivery=rx.Delivery(gpudirect=True, device="cuda:0"))
    with pytest.raises(ValueError, match="device must be"):
        rx.Capture(rx.MemSource(count=64), delivery=rx.Delivery(device="gpu0"))


def test_example_frame_matches_scapy() -> None:
    for seq in (0, 1, 0x1234_5678_9ABC):
        ours = _core.example_frame(seq, 8192, PORT)
        ref = (
            Ether(dst="0c:42:a1:00:00:14", src="02:00:0a:00:00:0a")
            / IP(src="10.0.0.10", dst="10.0.0.20", id=seq & 0xFFFF, flags="DF", ttl=64)
            / UDP(sport=PORT, dport=PORT, chksum=0)
            / example_payloads([seq])[0].tobytes()
        )
        assert ours == bytes(ref)


def test_nic_emulation_every_byte() -> None:
    # Unpaced: the generator waits for the receiver, so nothing may be lost.
    ppc = 128
    cap = rx.Capture(
        rx.EmulatedNic(count=ppc * 20, nic_rate_gbps=0.0, fill=True),
        chunking=rx.Chunking(packets_per_chunk=ppc),
    )
    seen = 0
    with cap:
        for chunk in cap.chunks(timeout=10):
            with chunk:
                assert chunk.present.all()
                seqs = chunk.first_seq + np.arange(ppc)
                assert np.array_equal(chunk.data, example_payloads(seqs))
                seen += 1
    s = cap.stats
    assert seen == 20 and s.packets == ppc * 20 and s.lost == 0
    assert _core.emu_nic_drops(cap._cap) == 0


def test_nic_emulation_drops_are_counted() -> None:
    # A paced generator against a receiver that never frees chunks: the ring fills
    # and every packet that finds it full is a NIC drop, none silently gone.
    cap = rx.Capture(
        rx.EmulatedNic(count=50_000, nic_rate_gbps=50.0),
        chunking=rx.Chunking(packets_per_chunk=64, n_chunks=5, max_chunks=4),
    )
    cap.start()
    held = [cap._cap.next_chunk(5.0)]
    import time

    deadline = time.monotonic() + 20
    while _core.emu_nic_drops(cap._cap) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    drops = _core.emu_nic_drops(cap._cap)
    cap.stop()
    for c in held:
        if c is not None:
            c.release()
    for c in cap.chunks(timeout=2):
        c.release()
    s = cap.stats
    assert drops > 0
    assert s.received + _core.emu_nic_drops(cap._cap) <= 50_000


# --- on a GPU --------------------------------------------------------------------------


def cpu_reference(cap: rx.Capture) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], rx.Stats]:
    """The chunks (presence, payloads) and counters of a capture into host memory."""
    out = {}
    with cap:
        for chunk in cap.chunks(timeout=20):
            with chunk:
                out[chunk.chunk_id] = (chunk.present.copy(), chunk.data.copy())
    return out, cap.stats


COUNTERS = ("received", "packets", "bytes", "lost", "late", "duplicate", "rejected", "chunks")


@needs_gpu
@pytest.mark.parametrize("consumer", ["cupy", "torch"])
def test_host_to_gpu_equals_cpu(consumer: str) -> None:
    lib = _import_or_skip(consumer)
    ppc, mc = 256, 4
    f = faulty_schedule(40, ppc, mc, np.random.default_rng(7))
    source = rx.MemSource(schedule=f.schedule)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=0)
    ref, ref_stats = cpu_reference(rx.Capture(source, chunking=chunking))
    gpu = rx.Delivery(device="cuda:0", gpu_chunks=3)
    cap = rx.Capture(source, chunking=chunking, delivery=gpu)
    got = {}
    with cap:
        for chunk in cap.chunks(timeout=20):
            if consumer == "cupy":
                x = lib.from_dlpack(chunk)
                assert x.data.ptr == chunk.ptr  # no copy
                pres = lib.from_dlpack(chunk.present_gpu)
                data, present_gpu = lib.asnumpy(x), lib.asnumpy(pres)
            else:
                x = lib.from_dlpack(chunk)
                assert x.data_ptr() == chunk.ptr and x.device.type == "cuda"
                data = x.cpu().numpy()
                present_gpu = lib.from_dlpack(chunk.present_gpu).cpu().numpy()
            got[chunk.chunk_id] = (chunk.present.copy(), data)
            assert np.array_equal(present_gpu, chunk.present)
            del x
            chunk.release()
    stats = cap.stats
    assert stats["lost"] == len(f.dropped) and stats["duplicate"] == len(f.duplicated)
    assert stats["late"] == len(f.late)
    _assert_same_chunks(got, stats, ref, ref_stats, ppc)


def _gpu_chunks(cap: rx.Capture) -> tuple[dict, rx.Stats]:
    cp = _import_or_skip("cupy")
    got = {}
    with cap:
        for chunk in cap.chunks(timeout=20):
            x = cp.from_dlpack(chunk)
            present_gpu = cp.asnumpy(cp.from_dlpack(chunk.present_gpu))
            assert np.array_equal(present_gpu, chunk.present)
            got[chunk.chunk_id] = (chunk.present.copy(), cp.asnumpy(x))
            del x
            chunk.release()
    return got, cap.stats


def _assert_as_reference(got: dict, stats: rx.Stats, ref: dict, ref_stats: rx.Stats) -> None:
    """The GPU capture's counters, chunks, presence and payloads are the CPU reference's."""
    for k in COUNTERS:
        assert stats[k] == ref_stats[k], (k, stats[k], ref_stats[k])
    assert sorted(got) == sorted(ref)
    for cid, (present, data) in got.items():
        assert np.array_equal(present, ref[cid][0]), cid
        assert np.array_equal(data[present], ref[cid][1][present]), cid


def _assert_same_chunks(got: dict, stats: rx.Stats, ref: dict, ref_stats: rx.Stats, ppc: int):
    _assert_as_reference(got, stats, ref, ref_stats)
    for cid, (present, data) in got.items():
        seqs = cid * ppc + np.flatnonzero(present)
        assert np.array_equal(data[present], example_payloads(seqs))


def split_to_gpu_equals_cpu(
    ppc: int, reference: rx.Capture, split: rx.EmulatedNic, chunking: rx.Chunking, gpu_chunks: int
) -> rx.Stats:
    """The split path (`split`, an emulated NIC) into `gpu_chunks` GPU chunks against the
    copying engine's `reference` capture of the same stream: the same counters and
    chunks. Returns the split capture's stats."""
    ref, ref_stats = cpu_reference(reference)
    gpu = rx.Delivery(device="cuda:0", gpu_chunks=gpu_chunks)
    cap = rx.Capture(split, chunking=chunking, delivery=gpu)
    got, stats = _gpu_chunks(cap)
    _assert_same_chunks(got, stats, ref, ref_stats, ppc)
    return stats


@needs_gpu
def test_split_placement_to_gpu_equals_cpu_paced() -> None:
    # The deployment's path: four emulated NIC queues at a set rate write payloads
    # straight into the pinned host chunks (header-data split), which are copied into
    # GPU chunks. The window spans the stream, so the outcome is exact.
    ppc, n = 512, 24
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=n, first_chunk=0)
    reference = rx.Capture(rx.MemSource(count=ppc * n), chunking=chunking)
    nic = rx.EmulatedNic(count=ppc * n, queues=4, nic_rate_gbps=20.0, split=True)
    stats = split_to_gpu_equals_cpu(ppc, reference, nic, chunking, gpu_chunks=4)
    assert stats["nic_drops"] == 0 and stats["in_place"] == ppc * n
    assert stats["fixup_copies"] == 0 and stats["gpu_chunks"] == n


@needs_gpu
def test_split_placement_to_gpu_equals_cpu_faults() -> None:
    # Losses, duplicates, late packets through the split path (fix-up copies,
    # bounce buffers) and then into GPU memory: equal to the copying engine.
    ppc, mc = 256, 4
    f = faulty_schedule(40, ppc, mc, np.random.default_rng(11))
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=0)
    reference = rx.Capture(rx.MemSource(schedule=f.schedule), chunking=chunking)
    nic = rx.EmulatedNic(schedule=f.schedule, queues=2, depth=128, split=True, serial=True)
    stats = split_to_gpu_equals_cpu(ppc, reference, nic, chunking, gpu_chunks=3)
    assert stats["lost"] == len(f.dropped) and stats["duplicate"] == len(f.duplicated)
    assert stats["fixup_copies"] > 0
    assert stats["in_place"] + stats["fixup_copies"] == stats["packets"]


@needs_gpu
def test_cuda_array_interface_and_streams() -> None:
    cp = _import_or_skip("cupy")
    ppc = 128
    cap = rx.Capture(
        rx.MemSource(count=ppc * 12),
        chunking=rx.Chunking(packets_per_chunk=ppc),
        delivery=rx.Delivery(device="cuda:0", gpu_chunks=2),
    )
    s = cp.cuda.Stream(non_blocking=True)
    n = 0
    with cap:
        for chunk in cap.chunks(timeout=20):
            cai = chunk.__cuda_array_interface__
            assert cai["version"] == 3 and cai["stream"] == chunk.stream
            assert cai["shape"] == (ppc, 8192) and cai["data"][0] == chunk.ptr
            y = cp.asarray(chunk)  # through __cuda_array_interface__, no copy
            assert y.data.ptr == chunk.ptr
            with s:
                x = cp.from_dlpack(chunk)  # CuPy hands its current stream to __dlpack__
                # Per-packet checksum on the GPU against the formula's (NumPy).
                got = cp.asnumpy(x.view(cp.uint64).sum(axis=1))
            ref = example_payloads(chunk.first_seq + np.arange(ppc)).view(np.uint64)
            assert np.array_equal(got, ref.sum(axis=1))
            assert np.array_equal(cp.asnumpy(y), example_payloads(chunk.first_seq + np.arange(ppc)))
            del x, y
            chunk.release(stream=s)
            n += 1
    assert n == 12


@needs_gpu
def test_numba_consumer() -> None:
    ncuda = _import_or_skip("numba.cuda")
    ppc = 64
    cap = rx.Capture(
        rx.MemSource(count=ppc * 2),
        chunking=rx.Chunking(packets_per_chunk=ppc),
        delivery=rx.Delivery(device="cuda:0"),
    )
    with cap:
        for chunk in cap.chunks(timeout=20):
            with chunk:
                chunk.synchronize()
                y = ncuda.as_cuda_array(chunk)
                seqs = chunk.first_seq + np.arange(ppc)
                assert np.array_equal(y.copy_to_host(), example_payloads(seqs))


JAX_CONSUMER = """
import numpy as np, jax, jax.dlpack, jax.numpy as jnp
import casper400g_rx as rx
from casper400g_rx.example_stream import example_payloads
ppc = 64
cap = rx.Capture(rx.MemSource(count=ppc * 3), chunking=rx.Chunking(packets_per_chunk=ppc),
                 delivery=rx.Delivery(device="cuda:0"))
n = 0
with cap:
    for chunk in cap.chunks(timeout=20):
        x = jax.dlpack.from_dlpack(chunk)
        ref = example_payloads(chunk.first_seq + np.arange(ppc))
        assert np.array_equal(np.asarray(x), ref)
        assert x.unsafe_buffer_pointer() == chunk.ptr
        del x
        chunk.release()
        n += 1
assert n == 3
print("jax ok")
"""


@needs_gpu
def test_jax_consumer() -> None:
    # JAX brings its own CUDA libraries: a process of its own, as an application would be.
    _import_or_skip("jax")
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-c", JAX_CONSUMER], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and "jax ok" in r.stdout, r.stdout[-2000:] + r.stderr[-4000:]


def random_frames(
    rng: np.random.Generator, ppc: int, max_chunks: int
) -> tuple[np.ndarray, list[int]]:
    """A randomised arrival order: loss, reordering, duplicates, late packets, plus
    frames the checks must reject (wrong port, wrong size, not UDP, truncated, fragment),
    some with 802.1Q tags. Built with scapy."""
    f = faulty_schedule(24, ppc, max_chunks, rng, drop_rate=0.05, dup_rate=0.03, n_late=6)
    frames: list[bytes] = []
    for seq in f.schedule:
        p = example_payloads([int(seq)])[0].tobytes()
        tagged = rng.random() < 0.1
        eth = Ether(dst="0c:42:a1:00:00:14", src="02:00:0a:00:00:0a")
        if tagged:
            eth = eth / Dot1Q(vlan=5)
        frames.append(
            bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=PORT) / p)
        )
        r = rng.random()
        if r < 0.03:
            frames.append(bytes(eth / IP() / UDP(dport=PORT + 1) / p))  # wrong port
        elif r < 0.05:
            frames.append(bytes(eth / IP() / UDP(dport=PORT) / p[:-8]))  # wrong size
        elif r < 0.06:
            frames.append(bytes(eth / IP(proto=6) / p))  # not UDP
        elif r < 0.07:
            frames.append(bytes(eth / IP() / UDP(dport=PORT) / p)[:100])  # truncated
        elif r < 0.08:
            frames.append(bytes(eth / IP(flags="MF") / UDP(dport=PORT) / p))  # fragment
    stride = max(len(x) for x in frames)
    rows = np.zeros((len(frames), stride), np.uint8)
    for i, x in enumerate(frames):
        rows[i, : len(x)] = np.frombuffer(x, np.uint8)
    return rows, [len(x) for x in frames]


def _gpudirect_chunks(
    cap: rx.Capture, cp: Any, check: Callable[[Any, Any], None] | None = None
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Every chunk of `cap` (presence, payloads copied back from the GPU), by chunk id;
    `check(chunk, array)` looks at each chunk and its CuPy array first."""
    got = {}
    with cap:
        for chunk in cap.chunks(timeout=30):
            with chunk:
                x = cp.from_dlpack(chunk)
                if check is not None:
                    check(chunk, x)
                got[chunk.chunk_id] = (chunk.present.copy(), cp.asnumpy(x))
    return got


@needs_gpu
@pytest.mark.parametrize(
    "opts",
    [
        {"batch": 512, "ring_packets": 2048, "blocks": 2},
        {"batch": 2048, "ring_packets": 8192, "blocks": 5, "headroom": 0},
    ],
)
def test_gpudirect_equals_cpu_engine(opts: dict[str, int]) -> None:
    cp = _import_or_skip("cupy")
    rng = np.random.default_rng(11 + opts["batch"])
    ppc, mc = 256, 3
    rows, sizes = random_frames(rng, ppc, mc)
    fmt = rx.Format(payload_size=8192, udp_port=PORT)
    source = rx.MemSource(packets=rows, sizes=sizes, frames=True)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc)
    ref, ref_stats = cpu_reference(rx.Capture(source, fmt=fmt, chunking=chunking))
    cap = rx.Capture(
        source,
        fmt=fmt,
        chunking=replace(chunking, n_chunks=mc + 2),
        delivery=rx.Delivery(device="cuda:0", gpudirect=True, gpu_options=opts),
    )

    def in_place(chunk: Any, x: Any) -> None:
        assert x.data.ptr == chunk.ptr
        assert np.array_equal(cp.asnumpy(cp.from_dlpack(chunk.present_gpu)), chunk.present)

    got = _gpudirect_chunks(cap, cp, in_place)
    _assert_as_reference(got, cap.stats, ref, ref_stats)
    assert ref_stats["rejected"] > 0 and ref_stats["late"] > 0 and ref_stats["duplicate"] > 0


def wild_schedule(rng: np.random.Generator, ppc: int, mc: int) -> np.ndarray:
    """Example-stream sequence numbers far from 0 with everything the window walk must
    get right: loss, duplicates, reordering, late packets, a whole chunk missing, a jump
    over several windows, strays from far ahead that move the window early, and a chunk
    whose first packets arrive after a later chunk opened."""
    f = faulty_schedule(48, ppc, mc, rng, drop_rate=0.05, dup_rate=0.03, reorder_rate=0.1, n_late=8)
    s = f.schedule.astype(np.int64)
    s = s[s // ppc != 9]  # chunk 9 never arrives
    mid = len(s) // 2
    s[mid:] += (3 * mc + 1) * ppc  # jump: 3 windows of chunks skipped
    strays = rng.choice(len(s), size=6, replace=False)
    s = np.insert(s, strays, s[strays] + (mc + 2) * ppc)
    # chunk 20: its first half arrives after chunk 21's first packets
    c20 = np.flatnonzero(s // ppc == 20)
    c21 = np.flatnonzero(s // ppc == 21)
    if len(c20) and len(c21):
        first_half = c20[: len(c20) // 2]
        moved = s[first_half]
        s = np.delete(s, first_half)
        at = int(np.flatnonzero(s // ppc == 21)[0]) + 1
        s = np.insert(s, at, moved)
    return (s + (1 << 40)).astype(np.uint64)


@needs_gpu
@pytest.mark.parametrize(
    "opts,first_chunk,pool",
    [
        ({"batch": 4096, "ring_packets": 8192, "blocks": 3}, None, 0),
        ({"batch": 1536, "ring_packets": 6144, "blocks": 2}, (1 << 40) // 128 + 1, 0),
        ({"batch": 4096, "ring_packets": 16384, "blocks": 7}, None, 1),
        ({"batch": 1024, "ring_packets": 3072, "blocks": 1}, (1 << 40) // 128 - 3, 1),
    ],
    ids=["multi-tile", "partial-tiles-first-chunk", "stalls", "stalls-first-chunk"],
)
def test_gpudirect_equals_cpu_engine_wild(
    opts: dict[str, int], first_chunk: int | None, pool: int
) -> None:
    # Multi-tile batches (several parse blocks, events in many tiles), partial tiles,
    # and with pool=1 a GPU chunk pool only one chunk larger than the window, so the
    # walk stalls for free chunks mid-batch and the host re-issues from there.
    cp = _import_or_skip("cupy")
    ppc, mc = 128, 4
    rng = np.random.default_rng(5 + opts["batch"] + pool)
    sched = wild_schedule(rng, ppc, mc)
    source = rx.MemSource(schedule=sched)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=first_chunk)
    ref, ref_stats = cpu_reference(rx.Capture(source, chunking=chunking))
    n_chunks = mc + 1 if pool else mc + 6
    cap = rx.Capture(
        source,
        chunking=replace(chunking, n_chunks=n_chunks),
        delivery=rx.Delivery(device="cuda:0", gpudirect=True, gpu_options=opts),
    )
    got = _gpudirect_chunks(cap, cp)
    _assert_as_reference(got, cap.stats, ref, ref_stats)
    assert ref_stats["late"] > 0 and ref_stats["duplicate"] > 0 and ref_stats["lost"] > 0
    if pool:
        assert cap.stats["stalls"] > 0


@needs_gpu
def test_gpudirect_generator_and_slow_consumer() -> None:
    # A pool barely larger than the window: the kernels stall for free chunks and
    # resume where they stopped, losing nothing (policy block).
    cp = _import_or_skip("cupy")
    ppc, mc = 512, 2
    n = ppc * 30
    cap = rx.Capture(
        rx.MemSource(count=n),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, n_chunks=mc + 1),
        delivery=rx.Delivery(
            device="cuda:0", gpudirect=True, gpu_options={"batch": 1024, "ring_packets": 4096}
        ),
    )
    ids = []
    with cap:
        for chunk in cap.chunks(timeout=30):
            x = cp.from_dlpack(chunk)
            ref = example_payloads(chunk.first_seq + np.arange(ppc))
            assert np.array_equal(cp.asnumpy(x), ref)
            ids.append(chunk.chunk_id)
            del x
            chunk.release()
    s = cap.stats
    assert ids == list(range(30))
    assert s["packets"] == n and s["lost"] == 0 and s["late"] == 0


@needs_gpu
def test_gpudirect_rejects_ipv4_id_sequence() -> None:
    with pytest.raises(ValueError, match="ipv4_id"):
        rx.Capture(
            rx.MemSource(count=10),
            fmt=rx.Format(seq="ipv4_id"),
            delivery=rx.Delivery(device="cuda:0", gpudirect=True),
        )


@pytest.mark.skipif(CUDA_OK, reason="a CUDA device is present")
def test_demo_gpu_stage_says_why_it_was_skipped() -> None:
    from rich.console import Console

    from casper400g_dev.demo import run_gpu
    from casper400g_rx.tools.demo import demo_gpu

    ok, lines = demo_gpu()
    assert not ok and lines[0].startswith("GPU stage skipped: ") and CUDA_WHY in lines[0]
    console = Console(record=True, width=200)
    assert run_gpu(console) == 0
    assert "GPU stage skipped" in console.export_text()


@needs_gpu
@pytest.mark.parametrize("queues", [3, 4])
def test_split_lanes_sharing_chunks_to_gpu_match_the_per_queue_model(queues: int) -> None:
    # K lanes of ONE capture share its chunks (each its own window), under drops,
    # duplicates, reordering across lanes and late packets, into GPU chunks: the counts
    # of the per-queue model and the copying engine with the same assignment (seq % K).
    from test_rx_queues import model

    ppc, n, mc = 256, 30, 3
    f = faulty_schedule(n, ppc, mc, np.random.default_rng(17))
    e = model(f.schedule, f.schedule % queues, queues, ppc, mc)
    chunking = rx.Chunking(
        packets_per_chunk=ppc, max_chunks=mc, first_chunk=0, stall_timeout_ms=60_000
    )
    reference = rx.Capture(
        rx.MemSource(schedule=f.schedule, queue_of=f.schedule % queues, queues=queues),
        chunking=replace(chunking, n_chunks=16),
    )
    nic = rx.EmulatedNic(schedule=f.schedule, queues=queues, depth=64, split=True, serial=True)
    stats = split_to_gpu_equals_cpu(ppc, reference, nic, chunking, gpu_chunks=3)
    assert (stats["late"], stats["duplicate"], stats["lost"]) == (e.late, e.duplicate, e.lost)
    assert stats["packets"] == len(e.placed) and stats["queue_stalls"] == 0


@needs_gpu
def test_split_overload_to_gpu_counts_every_packet() -> None:
    # Four lanes offered far more than they take, into GPU chunks: every packet placed, a
    # NIC drop, in a chunk given up whole for want of a free one (no_free_chunk), late, or discarded
    # (landed in a receive posted before its lane saw its queue had run dry); the GPU copy
    # of each chunk equal to its host presence and payloads.
    ppc, count = 512, 512 * 60
    cap = rx.Capture(
        rx.EmulatedNic(
            count=count, queues=4, depth=16, nic_rate_gbps=3000.0, fill=True, split=True
        ),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=4, first_chunk=0),
        delivery=rx.Delivery(device="cuda:0"),
    )
    got, s = _gpu_chunks(cap)
    assert s["nic_drops"] > 0
    not_placed = sum(s[k] for k in NOT_PLACED)
    assert s["packets"] + s["nic_drops"] + not_placed == count, dict(s)
    assert s["received"] == s["packets"] + not_placed, dict(s)
    assert s["duplicate"] == 0
    assert s["packets"] == sum(int(p.sum()) for p, _ in got.values())
    for cid, (present, data) in got.items():
        seqs = cid * ppc + np.flatnonzero(present)
        assert np.array_equal(data[present], example_payloads(seqs))
