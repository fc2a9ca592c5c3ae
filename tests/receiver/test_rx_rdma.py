"""The rdma source's ring logic without an RDMA device (emulate=True): the ring is written
as the NIC would write it, from the packets the core's golden model sends
(verification/models/rdma_ring.py), and the immediates are posted as completions.

Checked: every chunk's data and present mask (from the slot headers), exact accounting
(lost slots, chunks the core dropped, chunks whose immediate was lost, late and duplicate
immediates, a ring place the consumer still holds), the credits sent on release(), the
chunk interface (views, DLPack), and that the chunks equal those the UDP path's engine
builds from the same stream. The same source over a real RDMA stack: test_softroce_vm.py.
"""

from __future__ import annotations

import socket
from dataclasses import replace

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_rx import Chunking, RdmaSource, _core
from casper400g_rx.rdma import RdmaParams
from verification.models.rdma_ring import RingConfig, RingSender
from verification.models.roce import Operation, RdmaWrite

PAYLOAD = 200
SLOTS = 4
CHUNKS = 3


def template() -> RdmaWrite:
    return RdmaWrite(
        src_mac=1, dst_mac=2, src_ip="10.0.0.10", dst_ip="10.0.0.2", dest_qp=0, psn=0, payload=b""
    )


class Rig:
    """An emulated ring, the core's model writing into it, a UDP socket for the credits."""

    def __init__(self, mtu: int = 1024, payload_size: int = PAYLOAD, flow: bool = True) -> None:
        slot_size = payload_size + 8
        self.credits = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.credits.bind(("127.0.0.1", 0))
        self.credits.settimeout(2.0)
        self.cap = rx.Capture(
            RdmaSource(
                peer_ip="127.0.0.1",
                credit_port=self.credits.getsockname()[1],
                mtu=mtu,
                slot_size=slot_size,
                psn=5,
                emulate=True,
            ),
            fmt=rx.Format(payload_size=payload_size),
            chunking=Chunking(packets_per_chunk=SLOTS, max_chunks=CHUNKS),
        )
        p = self.cap.rdma_params
        self.cfg = RingConfig(qpn=p.qpn, psn=p.psn, rkey=p.rkey, va=p.va, slot_size=p.slot_size,
                              slots=SLOTS, chunks=CHUNKS, mtu=mtu, flow_ctrl=flow)  # fmt: skip
        self.sender = RingSender(self.cfg, template())
        self.cap.start()

    def deliver(self, w: RdmaWrite) -> None:
        """What the NIC does with one packet."""
        self.cap._cap.emulate_write(w.va - self.cfg.va, w.payload)
        if w.operation is Operation.RDMA_WRITE_ONLY_WITH_IMMEDIATE:
            self.cap._cap.emulate_immediate(w.immediate)

    def credit(self) -> int:
        msg = self.credits.recv(64)
        assert msg[:4] == b"CRDT" and len(msg) == 8, msg
        return int.from_bytes(msg[4:], "big")

    def close(self) -> None:
        self.cap.stop()
        self.credits.close()


def payload(seq: int, size: int = PAYLOAD) -> bytes:
    return rx.example_payload(seq, size)


def test_params_and_geometry() -> None:
    rig = Rig()
    p = rig.cap.rdma_params
    assert isinstance(p, RdmaParams)
    assert (p.slot_size, p.slots_per_chunk, p.chunks, p.payload_size) == (208, 4, 3, 200)
    assert (p.psn, p.mtu, p.registration, p.memory) == (5, 1024, "emulated", "host")
    assert p.va % 4096 == 0
    rig.close()
    with pytest.raises(ValueError, match="peer_ip"):
        RdmaSource(ip="10.0.0.2")
    with pytest.raises(ValueError, match="mtu must be"):
        RdmaSource(peer_ip="10.0.0.1", mtu=1500)
    with pytest.raises(ValueError, match=r"slot_size .* cannot hold"):
        rx.Capture(RdmaSource(slot_size=100, emulate=True), fmt=rx.Format(payload_size=200))
    with pytest.raises(ValueError, match="payload_size must be"):
        _core.RdmaCapture(slot_size=16, slots=1, chunks=1, payload_size=9, emulate=True)


def test_chunks_accounting_and_credits() -> None:
    """Six chunks: 0 intact; 1 loses a slot; 2's immediate is lost; 3 and 4 are dropped by
    the core (the consumer holds chunks 1 and 2, then 2); 5 arrives with the count."""
    rig = Rig()
    got: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    expected_present: dict[int, list[bool]] = {}

    def send_chunk(lose_slot: int | None = None, lose_imm: bool = False) -> int:
        chunk = rig.sender.seq // SLOTS
        present = []
        for s in range(SLOTS):
            packets = rig.sender.send(payload(rig.sender.seq))
            present.append(bool(packets) and s != lose_slot)
            for w in packets:
                if s == lose_slot:
                    continue
                if lose_imm and w.immediate is not None:
                    rig.cap._cap.emulate_write(w.va - rig.cfg.va, w.payload)
                    continue
                rig.deliver(w)
        expected_present[chunk] = present
        return chunk

    def take() -> rx.Chunk:
        c = rig.cap._cap.next_chunk(1.0)
        assert c is not None
        got[c.chunk_id] = (np.array(c.data), np.array(c.present))
        return c

    send_chunk()
    c0 = take()
    c0.release()
    assert rig.credit() == 0
    send_chunk(lose_slot=2)  # a lost packet: that slot only
    c1 = take()
    assert c1.lost == 1 and list(c1.present) == [True, True, False, True]
    send_chunk(lose_imm=True)  # chunk 2 comes without its immediate
    rig.sender.credit = 0  # the core knows the consumer released chunk 0 only
    send_chunk()  # chunk 3: place 0, free -> written
    c2 = take()
    c3 = take()
    assert (c2.chunk_id, c3.chunk_id) == (2, 3)
    assert rig.sender.dropped == 0
    send_chunk()  # chunk 4: place 1, held by chunk 1 -> dropped by the core
    send_chunk()  # chunk 5: place 2, held by chunk 2 -> dropped
    assert rig.sender.dropped == 2
    c1.release()
    assert rig.credit() == 1
    c2.release()
    assert rig.credit() == 2
    c3.release()
    assert rig.credit() == 3
    rig.sender.credit = 3
    send_chunk()  # chunk 6: written, its immediate says 2 chunks were dropped
    c6 = take()
    assert c6.chunk_id == 6 and c6.n_present == SLOTS
    # A repeated immediate and one from the ring's last pass are late.
    rig.cap._cap.emulate_immediate(rig.cfg.immediate(6, 2))
    rig.cap._cap.emulate_immediate(rig.cfg.immediate(1, 0))
    assert rig.credit() == 5  # chunks 4 and 5 were passed: their places are free
    c6.release()
    assert rig.credit() == 6
    st = rig.cap.stats
    assert st.chunks == 5 and st.immediates == 6, st
    assert st.core_dropped_chunks == 2 and st.lost_chunks == 0, st
    assert st.missing_immediates == 1 and st.late_immediates == 2, st
    assert st.packets == 5 * SLOTS - 1 and st.bytes == st.packets * PAYLOAD, st
    assert st.lost == 1 + 2 * SLOTS, st
    assert st.overruns == 0 and st.errors == 0, st
    assert st.credit == 6 and st.credits_sent == 6, st
    for chunk, (data, present) in got.items():
        assert list(present) == expected_present[chunk], chunk
        for s in range(SLOTS):
            if present[s]:
                assert data[s].tobytes() == payload(chunk * SLOTS + s), (chunk, s)
    rig.close()


@pytest.mark.parametrize("mtu", [1024, 2048, 4096])
def test_multi_packet_slots_and_the_udp_path_agree(mtu: int) -> None:
    """Slots larger than the MTU (several packets each): the chunks equal the ones the
    placement engine builds from the same datagrams, the UDP path's chunks."""
    size = 5000
    rig = Rig(mtu=mtu, payload_size=size)
    n = 2 * SLOTS * CHUNKS
    payloads = [payload(k, size) for k in range(n)]
    rows = np.array([np.frombuffer(p, np.uint8) for p in payloads], dtype=np.uint8)
    lost = {5, 17}
    keep = [j for j in range(n) if j not in lost]
    udp = rx.Capture(rx.MemSource(packets=rows[keep]), fmt=rx.Format(payload_size=size),
                     chunking=Chunking(packets_per_chunk=SLOTS, max_chunks=CHUNKS))  # fmt: skip
    ref = {u.chunk_id: (np.array(u.data), np.array(u.present)) for u in udp.chunks(1.0)}
    for k, pl in enumerate(payloads):
        for w in rig.sender.send(pl):
            if k in lost and w.va == rig.cfg.va + rig.cfg.slot_offset(k):
                continue  # the slot's first packet (its header) is lost
            rig.deliver(w)
        if k % SLOTS == SLOTS - 1:
            c = rig.cap._cap.next_chunk(1.0)
            data, present = ref[c.chunk_id]
            assert np.array_equal(np.asarray(c.present), present)
            assert np.array_equal(np.asarray(c.data)[present], data[present])
            assert np.array_equal(np.from_dlpack(c), np.asarray(c.data))
            chunk_id = c.chunk_id
            c.release()
            rig.sender.credit = chunk_id  # what the core learns from the credit
    st = rig.cap.stats
    assert st.lost == len(lost) and st.chunks == n // SLOTS, st
    rig.close()


def test_held_place_is_an_overrun_without_flow_control() -> None:
    rig = Rig(flow=False)
    held = []
    for _ in range(CHUNKS + 1):
        for _ in range(SLOTS):
            for w in rig.sender.send(payload(rig.sender.seq)):
                rig.deliver(w)
        c = rig.cap._cap.next_chunk(0.2)
        if c is not None:
            held.append(c)
    # Chunk 3 went over chunk 0's place while the consumer held it.
    assert [c.chunk_id for c in held] == [0, 1, 2]
    st = rig.cap.stats
    assert st.overruns == 1 and st.lost == SLOTS and st.chunks == 3, st
    for c in held:
        c.release()
    rig.close()


def test_chunk_interface_matches_chunk() -> None:
    rig = Rig()
    for _ in range(SLOTS):
        for w in rig.sender.send(payload(rig.sender.seq)):
            rig.deliver(w)
    c = rig.cap._cap.next_chunk(1.0)
    common = {n for n in dir(_core.Chunk) if not n.startswith("_")} | {"__dlpack__"}
    assert common <= set(dir(c))
    assert (c.first_seq, c.packets_per_chunk, c.payload_size) == (0, SLOTS, PAYLOAD)
    assert c.data.strides == (PAYLOAD + 8, 1)
    assert np.asarray(c).shape == (SLOTS, PAYLOAD)
    with c:
        pass
    assert c.released
    with pytest.raises(RuntimeError, match="released"):
        _ = c.chunk_id
    rig.close()


def test_writes_out_of_the_ring_are_refused() -> None:
    rig = Rig()
    with pytest.raises(IndexError, match="beyond"):
        rig.cap._cap.emulate_write(rig.cfg.ring_bytes - 4, bytes(8))
    w = replace(template(), va=rig.cfg.va, payload=b"x")
    assert w.va == rig.cfg.va
    rig.close()


def send_whole_chunk(rig: Rig) -> None:
    for _ in range(SLOTS):
        for w in rig.sender.send(payload(rig.sender.seq)):
            rig.deliver(w)


def test_an_immediate_beyond_the_window_is_refused_and_never_credited() -> None:
    # A corrupted or forged immediate naming chunk 1000 made the ring pass chunks 1..999
    # (their slots lost), hand out an empty chunk 1000 and, once chunk 0 was released,
    # credit the core up to chunk 999.
    rig = Rig()
    send_whole_chunk(rig)
    c0 = rig.cap._cap.next_chunk(1.0)
    assert c0.chunk_id == 0
    rig.cap._cap.emulate_immediate(rig.cfg.immediate(1000, 0))
    c0.release()
    assert rig.credit() == 0  # chunk 0's release, nothing for chunk 1000
    rig.sender.credit = 0
    send_whole_chunk(rig)
    c1 = rig.cap._cap.next_chunk(1.0)
    assert (c1.chunk_id, c1.n_present) == (1, SLOTS)
    c1.release()
    assert rig.credit() == 1
    assert rig.cap._cap.next_chunk(0.1) is None
    st = rig.cap.stats
    assert st.out_of_window == 1 and st.out_of_window_immediates == 1, st
    assert st.lost == 0 and st.late_immediates == 0 and st.resyncs == 0, st
    assert st.chunks == 2 and st.immediates == 3 and st.credit == 1, st
    rig.close()


def test_a_run_of_immediates_beyond_the_window_resyncs() -> None:
    # Immediates that follow each other far ahead are the stream (a core without flow
    # control that lost a ring of immediates): after rdma_resync_after of them the ring
    # moves there, without counting the chunks it jumped as lost.
    rig = Rig()
    send_whole_chunk(rig)
    rig.cap._cap.next_chunk(1.0).release()
    assert rig.credit() == 0
    for c in (500, 501, 502):
        rig.cap._cap.emulate_immediate(rig.cfg.immediate(c, 0))
    st = rig.cap.stats
    assert (st.out_of_window, st.resyncs, st.chunks) == (3, 0, 1), st
    rig.cap._cap.emulate_immediate(rig.cfg.immediate(503, 0))
    st = rig.cap.stats
    assert (st.out_of_window, st.resyncs) == (3, 1), st
    # The ring's last places before chunk 503 (501, 502) count lost, not the 500 before.
    assert st.lost == 3 * SLOTS and st.lost_chunks + st.core_dropped_chunks == 2, st
    assert rig.cap._cap.next_chunk(1.0).chunk_id == 503
    rig.close()
