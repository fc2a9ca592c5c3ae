"""GPUDirect into several GPUs: Delivery(devices=[...], gpudirect=True).

Everywhere: the parse kernel's chunk routing (the same function, compiled for the host),
the emulation's feeder (each GPU's ring gets its chunks' frames, as the NIC's steering
would give them), the chunks no GPU's window reached (counted lost once the stream has
ended), and the options' checks. References: Python's divmod, NumPy filters of the
stream, frames built with scapy, and a brute-force enumeration of the capture's extent.

On a host with two GPUs (skipped elsewhere with the reason): every chunk on GPU
chunk_id % 2, exported by DLPack on that device, with the CPU engine's bytes; the
capture's one account equal to the CPU engine's on the same stream (loss, duplicates,
reordering, whole chunks missing at either end of a GPU's share); late packets against
a CPU engine per GPU; `other_gpu` counted when each ring gets every frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether

import casper400g_rx as rx
from casper400g_rx import _core, gpu
from casper400g_rx.example_stream import example_payloads
from casper400g_rx.faults import faulty_schedule

CUDA_OK, CUDA_WHY = gpu.cuda_status()
N_GPUS = _core.cuda_device_count() if CUDA_OK else 0
needs_gpu = pytest.mark.skipif(not CUDA_OK, reason=f"no usable CUDA device: {CUDA_WHY}")
needs_two_gpus = pytest.mark.skipif(
    N_GPUS < 2, reason=f"needs two CUDA devices, this host has {N_GPUS} ({CUDA_WHY})"
)
PORT = 7148
COUNTERS = ("received", "packets", "bytes", "lost", "late", "duplicate", "rejected", "chunks")
TWO = ["cuda:0", "cuda:1"]


# --- the parse kernel's routing, the feeder, the extent: on the host --------------------


@pytest.mark.parametrize("gpus", [1, 2, 3, 4, 7])
def test_route_is_round_robin_by_chunk(gpus: int) -> None:
    rng = np.random.default_rng(gpus)
    ids = [0, 1, gpus - 1, gpus, 2**63, 2**64 - 1, *rng.integers(0, 2**63, 200).tolist()]
    for cid in ids:
        owners = []
        for g in range(gpus):
            local = _core.gpudirect_route(cid, gpus, g)
            if local is not None:
                owners.append(g)
                # The local id maps back to the global one: local * G + g.
                assert local * gpus + g == cid
                assert local == cid // gpus
        assert owners == [cid % gpus], (cid, owners)


def test_one_gpu_routes_every_chunk_unchanged() -> None:
    # gpus = 1 (and the zero the params of a one-GPU engine are cleared to) is the
    # one-GPU capture: every chunk its own, local id = global id.
    for cid in (0, 5, 2**64 - 1):
        assert _core.gpudirect_route(cid, 1, 0) == cid
        assert _core.gpudirect_route(cid, 0, 0) == cid


@pytest.mark.parametrize(
    ("first", "count", "ppc", "gpus"),
    [(0, 5000, 64, 2), (37, 4099, 128, 2), (1 << 40, 3000, 100, 3), (5, 7, 16, 4), (0, 0, 8, 2)],
)
def test_feeder_gives_each_gpu_its_chunks(first: int, count: int, ppc: int, gpus: int) -> None:
    fmt = rx.Format(payload_size=64, udp_port=PORT)
    seqs = np.arange(first, first + count, dtype=np.uint64)
    got = []
    for g in range(gpus):
        mine = _core.gpudirect_steered(fmt, ppc, gpus, g, first=first, count=count)["seqs"]
        want = seqs[(seqs // np.uint64(ppc)) % np.uint64(gpus) == g]
        assert np.array_equal(mine, want), g
        got.append(mine)
    assert sum(len(x) for x in got) == count


def test_feeder_splits_a_schedule_in_arrival_order() -> None:
    rng = np.random.default_rng(3)
    f = faulty_schedule(20, 32, 4, rng)
    fmt = rx.Format(payload_size=64, udp_port=PORT)
    for g in range(3):
        mine = _core.gpudirect_steered(fmt, 32, 3, g, schedule=f.schedule)["seqs"]
        assert np.array_equal(mine, f.schedule[(f.schedule // 32) % 3 == g])


def _frame(seq: int, payload: int, **bad: Any) -> bytes:
    p = example_payloads([seq], payload)[0].tobytes()
    eth = Ether(dst="0c:42:a1:00:00:14", src="02:00:0a:00:00:0a")
    if bad.get("tagged"):
        eth = eth / Dot1Q(vlan=5)
    if bad.get("port"):
        return bytes(eth / IP() / UDP(dport=PORT + 1) / p)
    if bad.get("short"):
        return bytes(eth / IP() / UDP(dport=PORT) / p[:-8])
    return bytes(eth / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=1, dport=PORT) / p)


def _rows(frames: list[bytes]) -> tuple[np.ndarray, list[int]]:
    stride = max(len(x) for x in frames)
    rows = np.zeros((len(frames), stride), np.uint8)
    for i, x in enumerate(frames):
        rows[i, : len(x)] = np.frombuffer(x, np.uint8)
    return rows, [len(x) for x in frames]


def test_feeder_steers_given_frames_by_their_sequence_number() -> None:
    # Frames of 6 chunks out of order, some VLAN-tagged; frames the parse rejects (wrong
    # port, wrong size) are stray traffic and land on GPU 0, which rejects them.
    ppc, payload = 4, 64
    rng = np.random.default_rng(9)
    seqs = rng.permutation(6 * ppc)
    frames, owner = [], []
    for k, s in enumerate(seqs):
        frames.append(_frame(int(s), payload, tagged=k % 5 == 0))
        owner.append(int(s) // ppc % 2)
        if k % 7 == 3:
            frames.append(_frame(int(s), payload, port=True))
            owner.append(0)
        if k % 11 == 5:
            frames.append(_frame(int(s), payload, short=True))
            owner.append(0)
    rows, sizes = _rows(frames)
    fmt = rx.Format(payload_size=payload, udp_port=PORT)
    for g in range(2):
        d = _core.gpudirect_steered(fmt, ppc, 2, g, frames=rows, sizes=sizes)
        pick = [i for i, o in enumerate(owner) if o == g]
        assert d["sizes"] == [sizes[i] for i in pick]
        assert np.array_equal(d["frames"], rows[pick])


def _unreached_reference(spans: list[tuple[int, int] | None], first_chunk: int | None) -> list[int]:
    """Enumerates the capture's extent chunk by chunk: those of GPU g outside the chunks
    its window walked (local ids lo..hi, global lo * G + g ..)."""
    gpus = len(spans)
    walked = {
        local * gpus + g
        for g, s in enumerate(spans)
        if s is not None
        for local in range(s[0], s[1] + 1)
    }
    opened = [s[0] * gpus + g for g, s in enumerate(spans) if s is not None]
    if not opened:
        return [0] * gpus
    lo = first_chunk if first_chunk is not None else min(opened)
    hi = max(s[1] * gpus + g for g, s in enumerate(spans) if s is not None)
    out = [0] * gpus
    for c in range(lo, hi + 1):
        if c not in walked:
            out[c % gpus] += 1
    return out


@pytest.mark.parametrize("gpus", [2, 3, 4])
def test_chunks_no_window_reached_are_counted_once(gpus: int) -> None:
    rng = np.random.default_rng(100 + gpus)
    for _ in range(300):
        spans: list[tuple[int, int] | None] = []
        for _g in range(gpus):
            if rng.random() < 0.15:
                spans.append(None)
                continue
            lo = int(rng.integers(0, 12))
            spans.append((lo, lo + int(rng.integers(0, 10))))
        first = None
        if rng.random() < 0.5:
            opened = [s[0] * gpus + g for g, s in enumerate(spans) if s is not None]
            # first_chunk at or before every GPU's first chunk (the window opens there).
            first = int(rng.integers(0, min(opened) + 1)) if opened else 0
        want = _unreached_reference(spans, first)
        assert _core.gpudirect_unreached(spans, first) == want, (spans, first)


def test_unreached_examples() -> None:
    # GPU 1 of 2 never saw chunk 1 (its first) and GPU 0 not chunk 8 (its last): each
    # counts its own once.
    assert _core.gpudirect_unreached([(0, 3), (1, 4)], None) == [1, 1]
    assert _core.gpudirect_unreached([(0, 3), (1, 4)], 0) == [1, 1]
    assert _core.gpudirect_unreached([(0, 4), (0, 4)], None) == [0, 0]
    # A GPU that got nothing: its share of the extent is all lost.
    assert _core.gpudirect_unreached([(0, 4), None], None) == [0, 4]
    assert _core.gpudirect_unreached([None, None], 0) == [0, 0]


# --- the options --------------------------------------------------------------------------


def test_gpudirect_into_several_gpus_is_accepted() -> None:
    d = rx.Delivery(devices=TWO, gpudirect=True, gpu_options={"steered": 0})
    assert d.targets == tuple(TWO) and d.to_gpu and d.routes() is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"devices": TWO, "gpudirect": True, "mapping": ["cuda:0", "cuda:0", "cuda:1"]},
            r"gives chunk k to devices\[k % 2\].*mapping=\['cuda:0', 'cuda:0', 'cuda:1'\]",
        ),
        ({"devices": ["cuda:1"], "gpudirect": True}, r"devices=\['cuda:1'\]: give device="),
        ({"gpudirect": True}, "needs device='cuda:N' or devices="),
        ({"devices": TWO, "gpudirect": True, "gpu_cpus": [[0], [1]]}, "not gpudirect=True"),
    ],
)
def test_gpudirect_options_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rx.Delivery(**kwargs)


@pytest.mark.parametrize(
    ("delivery", "message"),
    [
        (
            rx.Delivery(devices=TWO, gpudirect=True, gpu_options={"steered": 2}),
            "'steered' is 0 or 1, got 2",
        ),
        (
            rx.Delivery(device="cuda:0", gpudirect=True, gpu_options={"steered": 1}),
            "'steered' belongs to gpudirect into several GPUs",
        ),
        (
            rx.Delivery(devices=TWO, gpudirect=True, gpu_options={"steer": 1}),
            "unknown gpu option 'steer'",
        ),
    ],
)
def test_gpudirect_gpu_options_are_checked(delivery: rx.Delivery, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rx.Capture(rx.MemSource(count=64), delivery=delivery)


def test_gpudirect_into_several_gpus_needs_the_nic_emulation() -> None:
    with pytest.raises(ValueError, match="NIC emulation"):
        rx.Capture(rx.UdpSource(), delivery=rx.Delivery(devices=TWO, gpudirect=True))


@pytest.mark.skipif(CUDA_OK, reason="a CUDA device is present")
def test_missing_gpus_are_a_clear_error() -> None:
    with pytest.raises(gpu.CudaError, match=r"device='cuda:0' is not usable"):
        rx.Capture(rx.MemSource(count=64), delivery=rx.Delivery(devices=TWO, gpudirect=True))


# --- on two GPUs --------------------------------------------------------------------------


def _cpu_reference(
    source: rx.Source, chunking: rx.Chunking, fmt: Any = None
) -> tuple[dict, rx.Stats]:
    """The CPU engine's chunks (presence, payloads) and counters on the same packets."""
    cap = rx.Capture(source, fmt=fmt, chunking=chunking)
    out = {}
    with cap:
        for chunk in cap.chunks(timeout=30):
            with chunk:
                out[chunk.chunk_id] = (chunk.present.copy(), chunk.data.copy())
    return out, cap.stats


def _two_gpu_chunks(cap: rx.Capture) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], list]:
    """Every chunk (presence, payloads copied back), checked to lie on GPU id % 2 and to
    export there; the order they came in."""
    cp = pytest.importorskip("cupy", reason="cupy is not installed")
    got: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    order = []
    with cap:
        for chunk in cap.chunks(timeout=60):
            with chunk:
                assert chunk.chunk_id not in got, f"chunk {chunk.chunk_id} handed out twice"
                assert chunk.device == chunk.chunk_id % 2, (chunk.chunk_id, chunk.device)
                assert chunk.__dlpack_device__() == (2, chunk.chunk_id % 2)
                with cp.cuda.Device(chunk.device):
                    x = cp.from_dlpack(chunk)
                    assert x.device.id == chunk.device
                    assert x.data.ptr == chunk.ptr
                    got[chunk.chunk_id] = (chunk.present.copy(), cp.asnumpy(x))
                order.append(chunk.chunk_id)
    return got, order


def _assert_bytes(got: dict, ppc: int, payload: int) -> None:
    for cid, (present, data) in got.items():
        seqs = cid * ppc + np.flatnonzero(present)
        assert np.array_equal(data[present], example_payloads(seqs, payload)), cid


def _without_chunks(schedule: np.ndarray, ppc: int, chunks: list[int]) -> np.ndarray:
    return schedule[~np.isin(schedule // ppc, chunks)]


@needs_two_gpus
@pytest.mark.parametrize("first_chunk", [0, None], ids=["first-chunk", "opens-at-first"])
def test_two_gpus_equal_the_cpu_engine(first_chunk: int | None) -> None:
    # Loss, duplicates and reordering inside the window, chunk 1 (GPU 1's first) and
    # chunk 38 (GPU 0's last) missing whole: the capture's one account is the CPU
    # engine's on the same stream, each chunk on GPU id % 2 with its bytes.
    ppc, mc, n = 256, 8, 40
    rng = np.random.default_rng(31)
    f = faulty_schedule(n, ppc, mc, rng, drop_rate=0.04, dup_rate=0.03, n_late=0)
    sched = _without_chunks(f.schedule, ppc, [1, 17, n - 2])
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=first_chunk)
    ref, ref_stats = _cpu_reference(rx.MemSource(schedule=sched), chunking)
    cap = rx.Capture(
        rx.MemSource(schedule=sched),
        chunking=chunking,
        delivery=rx.Delivery(
            devices=TWO, gpudirect=True, gpu_options={"batch": 1024, "ring_packets": 4096}
        ),
    )
    got, order = _two_gpu_chunks(cap)
    s = cap.stats
    for k in COUNTERS:
        assert s[k] == ref_stats[k], (k, s[k], ref_stats[k])
    assert ref_stats["lost"] >= 3 * ppc and ref_stats["duplicate"] > 0
    assert s["other_gpu"] == 0
    assert sorted(got) == sorted(ref)
    for cid, (present, _) in got.items():
        assert np.array_equal(present, ref[cid][0]), cid
    _assert_bytes(got, ppc, 8192)
    # Each GPU hands its chunks over in order.
    for g in range(2):
        mine = [c for c in order if c % 2 == g]
        assert mine == sorted(mine)
    # Per GPU: its own chunks, counters that add up to the capture's.
    per = s["gpus"]
    assert [d["device"] for d in per] == [0, 1]
    for k in (*COUNTERS, "other_gpu"):
        assert sum(d[k] for d in per) == s[k], k
    for g, d in enumerate(per):
        assert d["chunks"] == sum(1 for c in ref if c % 2 == g)
        assert d["packets"] == sum(int(ref[c][0].sum()) for c in ref if c % 2 == g)


def _local_schedule(sched: np.ndarray, ppc: int, gpus: int, g: int) -> tuple[np.ndarray, Any]:
    """GPU g's share of the stream renumbered to its local chunks (id // gpus), and the
    map back from a local sequence number to the global one."""
    mine = sched[(sched // ppc) % gpus == g].astype(np.int64)
    local = (mine // ppc // gpus) * ppc + mine % ppc
    return local.astype(np.uint64), lambda s: (s // ppc * gpus + g) * ppc + s % ppc


@needs_two_gpus
def test_two_gpus_late_packets_as_a_cpu_engine_per_gpu() -> None:
    # Late packets: each GPU's window walks its own chunks (max_chunks of them), so the
    # reference is a CPU engine per GPU on its share renumbered to local chunk ids; the
    # chunks no GPU's window reached are added to the lost as the enumeration counts them.
    ppc, mc, n = 128, 3, 60
    rng = np.random.default_rng(77)
    f = faulty_schedule(n, ppc, 2 * mc, rng, drop_rate=0.05, dup_rate=0.03, n_late=12)
    sched = _without_chunks(f.schedule, ppc, [n - 2])
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc)
    cap = rx.Capture(
        rx.MemSource(schedule=sched),
        chunking=chunking,
        delivery=rx.Delivery(
            devices=TWO, gpudirect=True, gpu_options={"batch": 512, "ring_packets": 2048}
        ),
    )
    got, _ = _two_gpu_chunks(cap)
    s = cap.stats
    spans: list[tuple[int, int] | None] = []
    refs = []
    for g in range(2):
        local, _to_global = _local_schedule(sched, ppc, 2, g)
        ref, ref_stats = _cpu_reference(rx.MemSource(schedule=local), chunking)
        refs.append((ref, ref_stats))
        spans.append((min(ref), max(ref)) if ref else None)
    extra = _unreached_reference(spans, None)
    assert extra[0] == 1  # chunk n - 2, GPU 0's last of the extent, never came
    for g, (ref, ref_stats) in enumerate(refs):
        d = s["gpus"][g]
        for k in ("received", "packets", "bytes", "late", "duplicate", "rejected", "chunks"):
            assert d[k] == ref_stats[k], (g, k, d[k], ref_stats[k])
        assert d["lost"] == ref_stats["lost"] + extra[g] * ppc, g
        for lc, (present, _) in ref.items():
            assert np.array_equal(got[lc * 2 + g][0], present), (g, lc)
    assert s["late"] > 0 and s["duplicate"] > 0
    assert s["lost"] == sum(d["lost"] for d in s["gpus"])
    assert sorted(got) == sorted(lc * 2 + g for g, (ref, _) in enumerate(refs) for lc in ref)
    _assert_bytes(got, ppc, 8192)


@needs_two_gpus
def test_every_frame_to_every_gpu_counts_other_gpu() -> None:
    # steered=0: both rings get the whole stream (frames built with scapy, some rejected);
    # each GPU places its own chunks and counts the other's packets as other_gpu.
    ppc, mc, n, payload = 64, 4, 12, 1024
    rng = np.random.default_rng(5)
    f = faulty_schedule(n, ppc, mc, rng, drop_rate=0.03, dup_rate=0.0, n_late=0)
    frames, bad = [], 0
    for k, seq in enumerate(f.schedule):
        frames.append(_frame(int(seq), payload, tagged=k % 9 == 0))
        if k % 50 == 7:
            frames.append(_frame(int(seq), payload, port=True))
            bad += 1
    rows, sizes = _rows(frames)
    fmt = rx.Format(payload_size=payload, udp_port=PORT)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=0)
    source = rx.MemSource(packets=rows, sizes=sizes, frames=True)
    cap = rx.Capture(
        source,
        fmt=fmt,
        chunking=chunking,
        delivery=rx.Delivery(
            devices=TWO,
            gpudirect=True,
            gpu_options={"steered": 0, "batch": 512, "ring_packets": 2048},
        ),
    )
    got, _ = _two_gpu_chunks(cap)
    s = cap.stats
    good = len(f.schedule)
    per = s["gpus"]
    for g, d in enumerate(per):
        theirs = int(np.sum((f.schedule // ppc) % 2 != g))
        assert d["other_gpu"] == theirs, g
        assert d["received"] == len(frames), g
        assert d["rejected"] == bad, g
        assert d["packets"] == good - theirs, g
        assert (
            d["received"]
            == d["packets"] + d["other_gpu"] + d["rejected"] + d["late"] + d["duplicate"]
        )
    assert s["other_gpu"] == good and s["packets"] == good
    assert s["lost"] == len(f.dropped)
    assert sorted(got) == list(range(n))
    _assert_bytes(got, ppc, payload)


@needs_two_gpus
def test_two_gpus_steered_frames_with_rejects() -> None:
    # Given frames steered by their sequence number: the account is the CPU engine's on
    # the same frames; the rejected ones (stray traffic) all land on GPU 0.
    ppc, mc, n, payload = 64, 4, 16, 1024
    rng = np.random.default_rng(8)
    f = faulty_schedule(n, ppc, mc, rng, drop_rate=0.04, dup_rate=0.02, n_late=0)
    frames, bad = [], 0
    for k, seq in enumerate(f.schedule):
        frames.append(_frame(int(seq), payload, tagged=k % 9 == 0))
        if k % 40 == 3:
            frames.append(_frame(int(seq), payload, short=True))
            bad += 1
    rows, sizes = _rows(frames)
    fmt = rx.Format(payload_size=payload, udp_port=PORT)
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=0)
    source = rx.MemSource(packets=rows, sizes=sizes, frames=True)
    ref, ref_stats = _cpu_reference(source, chunking, fmt)
    cap = rx.Capture(
        source,
        fmt=fmt,
        chunking=chunking,
        delivery=rx.Delivery(
            devices=TWO, gpudirect=True, gpu_options={"batch": 512, "ring_packets": 2048}
        ),
    )
    got, _ = _two_gpu_chunks(cap)
    s = cap.stats
    for k in COUNTERS:
        assert s[k] == ref_stats[k], (k, s[k], ref_stats[k])
    assert s["rejected"] == bad and [d["rejected"] for d in s["gpus"]] == [bad, 0]
    assert sorted(got) == sorted(ref)
    for c, (p, _) in got.items():
        assert np.array_equal(p, ref[c][0]), c
    _assert_bytes(got, ppc, payload)


@needs_two_gpus
def test_two_gpus_generated_stream_and_slow_consumer() -> None:
    # The example stream's generator (first/count, no schedule), a pool barely larger
    # than the window on each GPU: the engines stall for free chunks and lose nothing.
    cp = pytest.importorskip("cupy", reason="cupy is not installed")
    ppc, mc, n = 512, 2, 30
    first = 7 * ppc + 100  # the stream starts inside chunk 7 (GPU 1)
    count = n * ppc
    cap = rx.Capture(
        rx.MemSource(first=first, count=count),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, n_chunks=mc + 1),
        delivery=rx.Delivery(
            devices=TWO, gpudirect=True, gpu_options={"batch": 1024, "ring_packets": 4096}
        ),
    )
    ids = []
    with cap:
        for chunk in cap.chunks(timeout=60):
            with cp.cuda.Device(chunk.device):
                x = cp.from_dlpack(chunk)
                seqs = chunk.first_seq + np.flatnonzero(chunk.present)
                assert np.array_equal(cp.asnumpy(x)[chunk.present], example_payloads(seqs))
                del x
            ids.append(chunk.chunk_id)
            chunk.release()
    s = cap.stats
    last = (first + count - 1) // ppc
    assert sorted(ids) == list(range(first // ppc, last + 1))
    assert s["packets"] == count and s["late"] == 0 and s["other_gpu"] == 0
    # Slots of the first and last chunks outside the stream are lost, nothing else.
    assert s["lost"] == (last - first // ppc + 1) * ppc - count
    assert s["stalls"] > 0


@needs_gpu
def test_one_gpu_is_unchanged() -> None:
    # device='cuda:N' runs the same kernels with one GPU (route: every chunk, local =
    # global): the CPU engine's account, nothing counted other_gpu, no per-GPU list.
    cp = pytest.importorskip("cupy", reason="cupy is not installed")
    ppc, mc = 256, 4
    f = faulty_schedule(24, ppc, mc, np.random.default_rng(2))
    chunking = rx.Chunking(packets_per_chunk=ppc, max_chunks=mc, first_chunk=0)
    ref, ref_stats = _cpu_reference(rx.MemSource(schedule=f.schedule), chunking)
    cap = rx.Capture(
        rx.MemSource(schedule=f.schedule),
        chunking=chunking,
        delivery=rx.Delivery(device="cuda:0", gpudirect=True),
    )
    got = {}
    with cap:
        for chunk in cap.chunks(timeout=30):
            with chunk:
                got[chunk.chunk_id] = (chunk.present.copy(), cp.asnumpy(cp.from_dlpack(chunk)))
    s = cap.stats
    for k in COUNTERS:
        assert s[k] == ref_stats[k], (k, s[k], ref_stats[k])
    assert s["other_gpu"] == 0 and "gpus" not in s
    assert sorted(got) == sorted(ref)
    _assert_bytes(got, ppc, 8192)
