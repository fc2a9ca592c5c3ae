"""The ibv backend's striding receive queue owns its producer index and doorbell record.

rdma-core's ibv_post_wq_recv refuses a post once the posts outstanding reach the
queue's size, counting against a tail that only ibv_poll_cq advances (mlx5_wq_overflow).
The backend reads completions directly and never calls ibv_poll_cq, so reposting through
the provider stops after one pass over the ring. These tests hold the backend's own
bookkeeping against two models written here: that overflow rule (which the old way of
reposting breaks, and the backend never meets: it makes no provider posts), and the NIC's
side of a cyclic work queue (it fills entries in ring order while its count is below the
16-bit producer counter in the doorbell record).
"""

from __future__ import annotations

import struct

import pytest

from casper400g_rx import _core

STRIDE = 32  # next segment + one data segment
ADDR, BYTES, LKEY = 0x7F00_1234_0000, 1 << 20, 0x00ABCDEF


class ProviderOverflowModel:
    """ibv_post_wq_recv's admission check: at most `max_post` posts outstanding, the
    outstanding count being posts minus a tail that only ibv_poll_cq moves."""

    def __init__(self, max_post: int) -> None:
        self.max_post = max_post
        self.head = 0
        self.tail = 0  # never advanced: completions are read without ibv_poll_cq

    def post(self) -> bool:
        if self.head - self.tail + 1 > self.max_post:
            return False
        self.head += 1
        return True


def replay(wqe_cnt: int, completed: list[int]) -> tuple[bytes, list[int], int, int]:
    ring, records, produced, consumed = _core._striding_wq_replay(
        wqe_cnt, STRIDE, ADDR, BYTES, LKEY, completed
    )
    # The doorbell record is big-endian in memory, whatever the host's byte order.
    return ring, [struct.unpack(">I", r)[0] for r in records], produced, consumed


def test_reposting_through_the_provider_stops_after_one_pass() -> None:
    # The model reproduces the failure the backend had: the first repost after the ring's
    # initial fill is refused.
    wqe_cnt = 8
    provider = ProviderOverflowModel(wqe_cnt)
    assert all(provider.post() for _ in range(wqe_cnt))
    assert not provider.post()


@pytest.mark.parametrize("wqe_cnt", [4, 8, 64])
def test_entries_are_written_once_with_their_buffers(wqe_cnt: int) -> None:
    ring, doorbells, produced, consumed = replay(wqe_cnt, [])
    assert (produced, consumed, doorbells) == (wqe_cnt, 0, [wqe_cnt & 0xFFFF])
    for k in range(wqe_cnt):
        entry = ring[k * STRIDE : (k + 1) * STRIDE]
        assert entry[:16] == bytes(16)  # next segment: unused by a cyclic queue
        assert entry[16:] == struct.pack(">IIQ", BYTES, LKEY, ADDR + k * BYTES)


@pytest.mark.parametrize("wqe_cnt", [4, 16])
def test_many_passes_keep_the_nic_fed_without_provider_posts(wqe_cnt: int) -> None:
    # Past 65536 entries, so the 16-bit counter wraps several times for wqe_cnt=4.
    n = 3 * 65536 // wqe_cnt * wqe_cnt + 5 * wqe_cnt + 3
    completed = [i % wqe_cnt for i in range(n)]
    ring, doorbells, produced, consumed = replay(wqe_cnt, completed)
    assert (produced, consumed) == (wqe_cnt + n, n)
    provider = ProviderOverflowModel(wqe_cnt)  # what the backend asks of the provider:
    assert provider.head == 0  # nothing, so its admission check is never met

    # NIC model: it may fill entry number c (counting from 0 over all passes) only while
    # c is below the producer count; the doorbell carries that count modulo 2^16.
    producer = wqe_cnt
    assert doorbells[0] == producer & 0xFFFF
    for filled, k in enumerate(completed):
        # The NIC filled entry number `filled` (ring position k); software handed it back.
        assert filled % wqe_cnt == k
        assert filled < producer  # it was the NIC's to fill
        producer += 1
        assert doorbells[filled + 1] == producer & 0xFFFF
        # Never starved (a full ring is posted) and never overfed (software still owns
        # nothing the NIC may overwrite).
        assert producer - (filled + 1) == wqe_cnt
    assert ring[16:32] == struct.pack(">IIQ", BYTES, LKEY, ADDR)  # entries never rewritten


def test_out_of_order_and_spurious_completions_are_errors() -> None:
    with pytest.raises(RuntimeError, match=r"entry 2 completed out of ring order \(expected 0\)"):
        replay(4, [2])
    with pytest.raises(RuntimeError, match=r"entry 1 completed out of ring order \(expected 2\)"):
        replay(4, [0, 1, 1])


@pytest.mark.parametrize(
    ("wqe_cnt", "stride", "match"),
    [
        (6, 32, "power of two up to 65536, got 6"),
        (1 << 17, 32, "power of two up to 65536, got 131072"),
        (4, 16, "stride 16 B cannot hold"),
    ],
)
def test_bad_geometry_names_the_value(wqe_cnt: int, stride: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        _core._striding_wq_replay(wqe_cnt, stride, ADDR, BYTES, LKEY, [])
