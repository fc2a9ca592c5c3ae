"""UDP backend over loopback (127.0.0.1 only) with the C++ sender: accounting, errors, signals."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_rx.faults import faulty_schedule

PAYLOAD = 8192


def send_in_background(sender: rx.Sender) -> threading.Thread:
    thread = threading.Thread(target=sender.run, daemon=True)
    thread.start()
    return thread


def wait_for(cap: rx.Capture, received: int, timeout: float = 20.0) -> None:
    """Wait until the engine has seen `received` datagrams (or the kernel dropped some)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = cap.stats
        if s.received + s.get("kernel_drops", 0) >= received:
            return
        time.sleep(0.01)


def consume_all(
    cap: rx.Capture, out: dict | None = None, timeout: float = 5
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    out = {} if out is None else out
    for chunk in cap.chunks(timeout=timeout):
        out[chunk.chunk_id] = (chunk.present.copy(), chunk.data.copy())
        chunk.release()
    return out


def capture_while_sending(
    cap: rx.Capture, sender: rx.Sender, timeout: float = 30.0
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Consume chunks while `sender` runs, until every datagram was seen; then stop."""
    thread = send_in_background(sender)
    out: dict = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        consume_all(cap, out, timeout=0.1)
        s = cap.stats
        if not thread.is_alive() and s.received + s.get("kernel_drops", 0) >= sender.total:
            break
    thread.join(timeout=1)
    cap.stop()
    return consume_all(cap, out)


def check_payloads(chunk_id: int, present: np.ndarray, data: np.ndarray) -> None:
    seqs = chunk_id * len(present) + np.flatnonzero(present)
    np.testing.assert_array_equal(data[present], rx.example_payloads(seqs, data.shape[1]))


@pytest.mark.parametrize("gso_segments", [0, 4])
def test_loopback_exact_accounting_with_sender_faults(gso_segments: int) -> None:
    # With UDP GSO the sender hands the kernel runs of consecutive sequence numbers as one
    # send; the schedule's gaps, duplicates and reorderings break the runs, and the kernel
    # cuts each run into datagrams: the receiver must count exactly the same.
    ppc, n_chunks, max_chunks = 64, 30, 3
    f = faulty_schedule(n_chunks, ppc, max_chunks, np.random.default_rng(11))
    cap = rx.Capture(
        rx.UdpSource(bind="127.0.0.1:0"),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=max_chunks, first_chunk=0),
    )
    with cap:
        assert cap.port
        sender = rx.Sender(
            port=cap.port, schedule=f.schedule, rate_gbps=2.0, gso_segments=gso_segments
        )
        chunks = capture_while_sending(cap, sender)
        assert sender.packets_sent == len(f.schedule)
    s = cap.stats
    assert s.kernel_drops == 0, "the kernel dropped datagrams: the socket buffer was too small"
    assert s.received == len(f.schedule)
    assert (s.lost, s.duplicate, s.late, s.rejected) == (
        len(f.dropped),
        len(f.duplicated),
        len(f.late),
        0,
    )
    assert s.packets == f.total - len(f.dropped)
    missing = np.zeros(f.total, dtype=bool)
    missing[f.dropped] = True
    assert sorted(chunks) == list(range(n_chunks))
    for chunk_id, (present, data) in chunks.items():
        np.testing.assert_array_equal(present, ~missing[chunk_id * ppc : (chunk_id + 1) * ppc])
        check_payloads(chunk_id, present, data)


def test_reuseport_fan_out_over_two_pinned_threads() -> None:
    ppc, n_chunks = 64, 16
    total = ppc * n_chunks
    # The window spans the whole stream: the two threads may interleave freely.
    allowed = sorted(os.sched_getaffinity(0))
    cpus = [allowed[0], allowed[-1]]  # pinned, on two CPUs where there are two
    cap = rx.Capture(
        rx.UdpSource(bind="127.0.0.1:0", threads=2, cpus=cpus),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=n_chunks, first_chunk=0),
    )
    with cap:
        assert cap.port
        sender = rx.Sender(port=cap.port, count=total, rate_gbps=2.0, streams=4)
        chunks = capture_while_sending(cap, sender)
    s = cap.stats
    assert s.kernel_drops == 0
    assert (s.packets, s.lost, s.duplicate, s.late, s.rejected) == (total, 0, 0, 0, 0)
    assert sorted(chunks) == list(range(n_chunks))
    for chunk_id, (present, data) in chunks.items():
        assert present.all()
        check_payloads(chunk_id, present, data)


def test_gso_sends_reach_the_socket_their_block_is_steered_to() -> None:
    # Two SO_REUSEPORT threads share the stream by blocks of 64 sequence numbers (the
    # socket group's steering program reads the first datagram of a GSO send); a GSO run
    # never crosses a multiple of its length, so every datagram lands on its block's
    # socket. 41 blocks: socket 0 gets 21 of them, socket 1 20.
    from casper400g_rx.tools import multisend

    ppc, blocks = 64, 41
    count = ppc * blocks
    cap = rx.Capture(
        rx.UdpSource(bind="127.0.0.1:0", threads=2),
        chunking=rx.Chunking(packets_per_chunk=ppc, max_chunks=8, first_chunk=0),
    )
    sent: list[multisend.Sent] = []
    with cap:
        assert cap.port
        port = cap.port
        thread = threading.Thread(
            target=lambda: sent.append(multisend.send(port, 0, count, 1.0, 2, gso_segments=4)),
            daemon=True,
        )
        thread.start()
        out: dict = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            consume_all(cap, out, timeout=0.05)
            s = cap.stats
            if not thread.is_alive() and s.received + s.kernel_drops >= count:
                break
        thread.join()
        cap.stop()
        consume_all(cap, out)
    s = cap.stats
    assert sent and sent[0].packets == count
    assert (s.kernel_drops, s.packets, s.lost, s.late, s.duplicate) == (0, count, 0, 0, 0)
    assert cap.queue_received == [21 * ppc, 20 * ppc]
    assert sorted(out) == list(range(blocks))
    for chunk_id, (present, data) in out.items():
        assert present.all()
        check_payloads(chunk_id, present, data)


def test_bad_gso_settings_name_the_value() -> None:
    from casper400g_rx.tools import multisend

    with pytest.raises(ValueError, match=r"gso_segments 8 x 8192-byte datagrams exceed the 65507"):
        rx.Sender(port=9, count=1, gso_segments=8)
    with pytest.raises(ValueError, match="gso_segments must be at most 32, got 33"):
        rx.Sender(port=9, count=1, payload_size=8, gso_segments=33)
    with pytest.raises(ValueError, match="gso_segments must divide the 32-packet block, got 3"):
        multisend.send(9, 0, 1, 0.0, 2, gso_segments=3)


@pytest.mark.parametrize("policy", ["drop_oldest", "block"])
def test_slow_consumer_policies_over_udp(policy: str) -> None:
    """A consumer that reads nothing while 20 chunks arrive, with a pool of 5 chunks."""
    ppc, n_chunks, pool = 32, 20, 5
    cap = rx.Capture(
        rx.UdpSource(bind="127.0.0.1:0"),
        chunking=rx.Chunking(
            packets_per_chunk=ppc, max_chunks=2, n_chunks=pool, policy=policy, first_chunk=0
        ),
    )
    with cap:
        assert cap.port
        rx.Sender(port=cap.port, count=ppc * n_chunks, rate_gbps=1.0).run()
        if policy == "drop_oldest":
            wait_for(cap, ppc * n_chunks)  # the engine keeps receiving, recycling chunks
        else:
            time.sleep(0.2)  # the engine waits; the socket buffer holds the rest
        chunks: dict = {}
        deadline = time.monotonic() + 20
        while cap.stats.received < ppc * n_chunks and time.monotonic() < deadline:
            consume_all(cap, chunks, timeout=0.1)
        cap.stop()
        consume_all(cap, chunks)
    s = cap.stats
    assert s.kernel_drops == 0 and s.lost == 0 and s.packets == ppc * n_chunks
    if policy == "drop_oldest":
        # Every chunk became ready; only the newest `pool` could still be there.
        assert sorted(chunks) == list(range(n_chunks - pool, n_chunks))
        assert s.chunks_dropped == n_chunks - pool
        assert s.packets_dropped == (n_chunks - pool) * ppc
    else:
        assert sorted(chunks) == list(range(n_chunks))
        assert s.chunks_dropped == 0 and s.waits > 0
    for chunk_id, (present, data) in chunks.items():
        assert present.all()
        check_payloads(chunk_id, present, data)


def test_malformed_datagrams_are_rejected() -> None:
    ppc = 8
    cap = rx.Capture(
        rx.UdpSource(bind="127.0.0.1:0"), chunking=rx.Chunking(packets_per_chunk=ppc, first_chunk=0)
    )
    rng = np.random.default_rng(3)
    bad = [b"", b"x", bytes(PAYLOAD - 1), rng.bytes(PAYLOAD + 1), rng.bytes(9000), rng.bytes(100)]
    with cap, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        assert cap.port
        for seq in range(ppc):
            tx.sendto(rx.example_payload(seq), ("127.0.0.1", cap.port))
            tx.sendto(bad[seq % len(bad)], ("127.0.0.1", cap.port))
        wait_for(cap, 2 * ppc)
        cap.stop()
        chunks = consume_all(cap)
    assert cap.stats.rejected == ppc
    assert cap.stats.packets == ppc
    present, data = chunks[0]
    assert present.all()
    check_payloads(0, present, data)


def test_kernel_drops_are_counted_exactly() -> None:
    """A socket nobody reads yet overflows: the kernel's drops close the books exactly."""
    count = 200
    cap = rx.Capture(
        rx.UdpSource(bind="127.0.0.1:0", rcvbuf=256 << 10),
        chunking=rx.Chunking(packets_per_chunk=count, first_chunk=0),
    )
    assert cap.port
    rx.Sender(port=cap.port, count=count).run()  # before start(): nothing reads the socket
    assert cap.stats.kernel_drops > 0
    with cap:
        deadline = time.monotonic() + 10
        while cap.stats.received + cap.stats.kernel_drops < count:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        cap.stop()
        chunks = consume_all(cap)
    s = cap.stats
    assert s.received + s.kernel_drops == count
    assert s.packets == s.received and s.lost == s.kernel_drops
    present, data = chunks[0]
    assert present.sum() == s.packets
    check_payloads(0, present, data)


def test_port_in_use_raises_oserror_naming_it() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        with pytest.raises(OSError, match=f"127.0.0.1:{port}.*in use") as exc:
            rx.Capture(rx.UdpSource(bind=f"127.0.0.1:{port}"))
    assert exc.value.errno == errno.EADDRINUSE


def test_address_not_on_this_host_raises_oserror() -> None:
    # 192.0.2.0/24 is reserved for documentation: never a local address. Nothing is sent.
    with pytest.raises(OSError, match=r"192\.0\.2\.1") as exc:
        rx.Capture(rx.UdpSource(bind="192.0.2.1:0"))
    assert exc.value.errno == errno.EADDRNOTAVAIL


@pytest.mark.parametrize("bind", ["127.0.0.1", "300.1.1.1:5", "host:5", "127.0.0.1:70000"])
def test_bad_bind_address_raises_value_error(bind: str) -> None:
    with pytest.raises(ValueError, match=r"bind|address"):
        rx.Capture(rx.UdpSource(bind=bind))


def test_bad_cpu_pinning_names_the_cpu() -> None:
    with pytest.raises(ValueError, match="CPU 5000"):
        rx.Capture(rx.UdpSource(cpus=[5000]))
    with pytest.raises(ValueError, match="2 threads"):
        rx.Capture(rx.UdpSource(threads=2, cpus=[0]))
    cap = rx.Capture(rx.UdpSource(cpus=[1023]))
    if 1023 not in os.sched_getaffinity(0):
        with pytest.raises(OSError, match="CPU 1023"):
            cap.start()
    cap.stop()


def test_ipv4_id_sequence_is_refused_on_sockets() -> None:
    with pytest.raises(ValueError, match="ipv4_id"):
        rx.Capture(rx.UdpSource(), fmt=rx.Format(seq="ipv4_id"))


def test_sender_refuses_non_loopback_destinations() -> None:
    with pytest.raises(ValueError, match="loopback"):
        rx.Sender(host="192.0.2.1", port=9, count=1)
    with pytest.raises(ValueError, match="multiple of 8"):
        rx.Sender(port=9, count=1, payload_size=100)


UNPRIVILEGED = """
import os, warnings
import casper400g_rx as rx  # imported first: the stdlib may be unreadable to "nobody"
os.setgroups([]); os.setgid(65534); os.setuid(65534)
try:
    rx.Capture(rx.UdpSource("127.0.0.1:1"))
except PermissionError as e:
    print("permission", e.errno, e)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    cap = rx.Capture(rx.UdpSource("127.0.0.1:0", rcvbuf=1 << 30))
    cap.start()
    cap.stop()
    print("warning", [x.category.__name__ + ": " + str(x.message) for x in w])
"""


def test_unprivileged_errors_name_their_cause() -> None:
    """Binding a privileged port gives PermissionError; a capped SO_RCVBUF warns."""
    if os.geteuid() == 0:
        cmd = [sys.executable, "-c", UNPRIVILEGED]
    else:
        cmd = [sys.executable, "-c", UNPRIVILEGED.replace("os.setgroups", "# ")]
    with open("/proc/sys/net/ipv4/ip_unprivileged_port_start") as f:
        if int(f.read()) <= 1:
            pytest.skip("net.ipv4.ip_unprivileged_port_start lets everyone bind port 1")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"permission {errno.EACCES}" in out.stdout
    assert "127.0.0.1:1" in out.stdout
    assert "RcvbufWarning" in out.stdout and "rmem_max" in out.stdout


# A shell without job control starts background jobs with SIGINT ignored, and Python then
# installs no handler: restore the interactive default that the test is about.
CTRL_C = """
import signal
signal.signal(signal.SIGINT, signal.default_int_handler)
import casper400g_rx as rx
cap = rx.Capture(rx.UdpSource("127.0.0.1:0"))
with cap:
    print("waiting", flush=True)
    for chunk in cap.chunks():
        pass
"""


def test_ctrl_c_interrupts_a_blocked_wait() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "waiting"
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "KeyboardInterrupt" in err
    assert proc.returncode != 0


def test_sender_rate_limit_is_honoured() -> None:
    count, rate = 2000, 1.0
    cap = rx.Capture(rx.UdpSource(bind="127.0.0.1:0"), chunking=rx.Chunking(packets_per_chunk=1000))
    with cap:
        assert cap.port
        sender = rx.Sender(port=cap.port, count=count, rate_gbps=rate)
        capture_while_sending(cap, sender)
    expected = count * PAYLOAD * 8 / (rate * 1e9)
    # Never faster than asked. How much slower depends on what else the machine runs
    # (CI runs this beside other tests on two cores): only a sender that ignores its
    # pacing altogether, or hangs, is caught above.
    assert expected * 0.95 <= sender.elapsed <= expected * 20 + 5
    assert cap.stats.packets + cap.stats.kernel_drops == count


def test_sender_prefix_carries_the_sequence_for_other_framings() -> None:
    """A SPEAD-like prefix with the counter at bytes 10..15, decoded by a matching format."""
    prefix = bytes.fromhex("530402060000000580010000000000001000000000000000")
    ppc, count = 16, 64
    fmt = rx.Format(payload_size=len(prefix) + PAYLOAD, seq_offset=10, seq_width=6)
    cap = rx.Capture(
        rx.UdpSource(bind="127.0.0.1:0"),
        fmt=fmt,
        chunking=rx.Chunking(packets_per_chunk=ppc, first_chunk=0),
    )
    with cap:
        assert cap.port
        sender = rx.Sender(
            port=cap.port,
            count=count,
            rate_gbps=1.0,
            prefix=prefix,
            prefix_seq_offset=10,
            prefix_seq_width=6,
        )
        chunks = capture_while_sending(cap, sender)
    assert cap.stats.packets == count and cap.stats.lost == 0
    for chunk_id, (present, data) in chunks.items():
        assert present.all()
        seqs = chunk_id * ppc + np.arange(ppc)
        np.testing.assert_array_equal(data[:, len(prefix) :], rx.example_payloads(seqs))
        np.testing.assert_array_equal(
            data[:, :8], np.frombuffer(prefix[:8], np.uint8)[None, :].repeat(ppc, 0)
        )
        counters = data[:, 10:16].astype(np.uint64) << (8 * np.arange(5, -1, -1, dtype=np.uint64))
        np.testing.assert_array_equal(counters.sum(axis=1), seqs)
    with pytest.raises(ValueError, match="prefix"):
        rx.Sender(port=9, count=1, prefix=b"abc", prefix_seq_offset=0, prefix_seq_width=4)


def test_senders_in_step_share_one_schedule_and_report_their_lag() -> None:
    # send_in_step starts every sender on one schedule: each thread's packets are due at
    # the same instants, whenever its thread started. A rate no loopback sender reaches
    # leaves it behind that schedule (max_lag grows with the stream); a rate it reaches
    # easily keeps it on time. The udp scaling benchmark reads max_lag to tell a sender
    # that fell behind by more than the receiver's window from a receiver that lost.
    from casper400g_rx import _core
    from casper400g_rx.tools import multisend

    sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sink.bind(("127.0.0.1", 0))
    port = sink.getsockname()[1]
    try:
        fast = [
            _core.Sender(port=port, schedule=s, rate_gbps=1e6, catch_up=True)
            for s in multisend.schedules(0, 8192, 2)
        ]
        _core.send_in_step(fast, [])
        assert [s.packets_sent for s in fast] == [4096, 4096]
        # 4096 packets each, all due within 0.3 us: far behind by the end at any speed.
        assert min(s.max_lag for s in fast) > 1e-3
        slow = [
            _core.Sender(port=port, schedule=s, rate_gbps=0.25, catch_up=True)
            for s in multisend.schedules(0, 512, 2)
        ]
        _core.send_in_step(slow, [])
        # 256 packets each in batches of 32, the last batch due 59 ms after the common
        # start: both end then (and not behind it by more than a loaded machine's slice).
        assert all(0.05 < s.elapsed < 1.0 for s in slow), [s.elapsed for s in slow]
        assert abs(slow[0].elapsed - slow[1].elapsed) < 0.02
        with pytest.raises(ValueError, match="cpus lists 1 CPUs for 2 senders"):
            _core.send_in_step(slow, [0])
    finally:
        sink.close()
