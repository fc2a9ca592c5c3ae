"""pcap backend: captures written by scapy replay to the same chunks as a live capture."""

from __future__ import annotations

import errno
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.utils import wrpcap

import casper400g_rx as rx
from casper400g_rx.faults import faulty_schedule

PORT = 10000


def frame(payload: bytes, dport: int = PORT, ip_id: int = 1) -> Ether:
    return (
        Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        / IP(src="10.0.0.1", dst="10.0.0.2", id=ip_id)
        / UDP(sport=4000, dport=dport)
        / payload
    )


def chunks_of(cap: rx.Capture) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for chunk in cap.chunks(timeout=10):
        out[chunk.chunk_id] = (chunk.present.copy(), chunk.data.copy())
        chunk.release()
    return out


def live_capture(schedule: np.ndarray, ppc: int, max_chunks: int) -> tuple[dict, rx.Stats]:
    cap = rx.Capture(
        rx.UdpSource(bind="127.0.0.1:0"),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=max_chunks, first_chunk=0),
    )
    out: dict = {}
    with cap:
        assert cap.port
        sender = rx.Sender(port=cap.port, schedule=schedule, rate_gbps=1.0)
        thread = threading.Thread(target=sender.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for chunk in cap.chunks(timeout=0.1):
                out[chunk.chunk_id] = (chunk.present.copy(), chunk.data.copy())
                chunk.release()
            if not thread.is_alive() and cap.stats.received >= len(schedule):
                break
        cap.stop()
        out.update(chunks_of(cap))
    return out, cap.stats


def test_scapy_capture_replays_like_live_capture(tmp_path: Path) -> None:
    ppc, n_chunks, max_chunks = 32, 12, 3
    f = faulty_schedule(n_chunks, ppc, max_chunks, np.random.default_rng(5), n_late=2)
    path = tmp_path / "stream.pcap"
    wrpcap(str(path), [frame(rx.example_payload(int(s))) for s in f.schedule])

    replay = rx.Capture(
        rx.PcapSource(path=str(path)),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=max_chunks, first_chunk=0),
    )
    with replay:
        replayed = chunks_of(replay)
    live, live_stats = live_capture(f.schedule, ppc, max_chunks)

    assert live_stats.kernel_drops == 0
    keys = ("packets", "lost", "late", "duplicate", "rejected", "chunks")
    assert {k: replay.stats[k] for k in keys} == {k: live_stats[k] for k in keys}
    assert replay.stats.lost == len(f.dropped) and replay.stats.late == len(f.late)
    assert sorted(replayed) == sorted(live) == list(range(n_chunks))
    for chunk_id, (present, data) in replayed.items():
        np.testing.assert_array_equal(present, live[chunk_id][0])
        np.testing.assert_array_equal(data[present], live[chunk_id][1][present])
        seqs = chunk_id * ppc + np.flatnonzero(present)
        np.testing.assert_array_equal(data[present], rx.example_payloads(seqs))


def test_other_traffic_in_the_capture_is_rejected(tmp_path: Path) -> None:
    ppc = 8
    good = [frame(rx.example_payload(s)) for s in range(ppc)]
    others = [
        frame(rx.example_payload(99), dport=PORT + 1),  # another port
        Ether() / IP(dst="10.0.0.2") / TCP(dport=PORT) / (b"x" * 8192),  # not UDP
        Ether() / ARP(pdst="10.0.0.2"),  # not IPv4
        frame(b"short"),  # wrong payload size
    ]
    path = tmp_path / "mixed.pcap"
    wrpcap(str(path), good[:4] + others + good[4:])
    fmt = rx.Format(udp_port=PORT)
    cap = rx.Capture(
        rx.PcapSource(path=str(path)), fmt=fmt, chunking=rx.Chunking(packets_per_chunk=ppc)
    )
    with cap:
        chunks = chunks_of(cap)
    assert cap.stats.rejected == len(others)
    assert cap.stats.packets == ppc and cap.stats.lost == 0
    assert chunks[0][0].all()


def test_ipv4_identification_sequence_unwraps_16_bits(tmp_path: Path) -> None:
    size, ppc, start, count = 64, 100, 65_300, 500  # crosses 65535 -> 0
    rng = np.random.default_rng(9)
    payloads = rng.integers(0, 256, (count, size), dtype=np.uint8)
    frames = [frame(payloads[i].tobytes(), ip_id=(start + i) & 0xFFFF) for i in range(count)]
    path = tmp_path / "ipid.pcap"
    wrpcap(str(path), frames)
    fmt = rx.Format(payload_size=size, seq="ipv4_id")
    cap = rx.Capture(
        rx.PcapSource(path=str(path)), fmt=fmt, chunking=rx.Chunking(packets_per_chunk=ppc)
    )
    with cap:
        chunks = chunks_of(cap)
    assert sorted(chunks) == list(range(start // ppc, (start + count - 1) // ppc + 1))
    placed = np.concatenate([chunks[c][1] for c in sorted(chunks)])
    offset = start % ppc
    np.testing.assert_array_equal(placed[offset : offset + count], payloads)
    assert cap.stats.packets == count and cap.stats.rejected == 0


def to_big_endian_pcap(little: bytes) -> bytes:
    """The same capture with every header field big-endian (as written on a big-endian host)."""
    out = bytearray(struct.pack(">IHHiIII", *struct.unpack("<IHHiIII", little[:24])))
    off = 24
    while off < len(little):
        hdr = struct.unpack("<IIII", little[off : off + 16])
        out += struct.pack(">IIII", *hdr) + little[off + 16 : off + 16 + hdr[2]]
        off += 16 + hdr[2]
    return bytes(out)


def test_big_endian_and_damaged_captures(tmp_path: Path) -> None:
    ppc = 4
    path = tmp_path / "le.pcap"
    wrpcap(str(path), [frame(rx.example_payload(s)) for s in range(2 * ppc)])
    data = path.read_bytes()

    be = tmp_path / "be.pcap"
    be.write_bytes(to_big_endian_pcap(data))
    cap = rx.Capture(rx.PcapSource(path=str(be)), chunking=rx.Chunking(packets_per_chunk=ppc))
    with cap:
        assert sorted(chunks_of(cap)) == [0, 1]
    assert cap.stats.packets == 2 * ppc

    # Snap-length cut: the second record claims a longer original length.
    first_len = struct.unpack("<I", data[24 + 8 : 24 + 12])[0]
    rec2 = 24 + 16 + first_len
    snapped = bytearray(data)
    snapped[rec2 + 12 : rec2 + 16] = struct.pack("<I", first_len + 100)
    # And the file ends in the middle of the last record.
    damaged = tmp_path / "damaged.pcap"
    damaged.write_bytes(bytes(snapped[:-100]))
    cap = rx.Capture(
        rx.PcapSource(path=str(damaged)), chunking=rx.Chunking(packets_per_chunk=ppc, first_chunk=0)
    )
    with cap:
        chunks_of(cap)
    assert cap.stats.rejected == 2
    assert cap.stats.packets == 2 * ppc - 2
    assert cap.stats.lost == 2


def test_unreadable_files_raise_naming_the_cause(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope\.pcap") as exc:
        rx.Capture(rx.PcapSource(path=str(tmp_path / "nope.pcap")))
    assert exc.value.errno == errno.ENOENT
    text = tmp_path / "text.pcap"
    text.write_bytes(b"definitely not a capture file")
    with pytest.raises(ValueError, match="not a pcap file"):
        rx.Capture(rx.PcapSource(path=str(text)))
    ng = tmp_path / "ng.pcap"
    ng.write_bytes(b"\x0a\x0d\x0d\x0a" + bytes(60))
    with pytest.raises(ValueError, match="pcapng"):
        rx.Capture(rx.PcapSource(path=str(ng)))


TRUNCATED_REPLAY = """
import os, sys
import casper400g_rx as rx
from casper400g_rx.pcap_writer import PcapWriter

path = sys.argv[1]
with PcapWriter(path) as w:
    for s in range(2000):  # 16.6 MB: several reads of the replay's buffer
        w.write(rx.example_payload(s), s, 0.0)
cap = rx.Capture.pcap(
    path, chunking=rx.Chunking(packets_per_chunk=64, max_chunks=2, n_chunks=4)
)
chunks = cap.chunks(timeout=10)
held = [next(chunks) for _ in range(3)]  # the replay waits for chunks
os.truncate(path, 6 << 20)  # rotated or overwritten under the replay
for c in held:
    c.release()
try:
    for c in chunks:
        c.release()
    cap.stop()
except RuntimeError as exc:
    print("ERROR:", exc)
    sys.exit(0)
print("NO ERROR", dict(cap.stats))
sys.exit(3)
"""


def test_a_pcap_truncated_while_replaying_raises_naming_file_and_offset(tmp_path: Path) -> None:
    # The replay read the file through a mapping: pages cut off by the truncation killed
    # the process with SIGBUS. It must end with an error that names the file and where.
    import subprocess
    import sys

    path = tmp_path / "rotating.pcap"
    out = subprocess.run(
        [sys.executable, "-c", TRUNCATED_REPLAY, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, (out.returncode, out.stdout, out.stderr[-2000:])
    assert "ERROR:" in out.stdout and str(path) in out.stdout, out.stdout
    assert f"ends at offset {6 << 20}" in out.stdout, out.stdout
