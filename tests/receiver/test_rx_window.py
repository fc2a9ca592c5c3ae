"""The window policy both placement engines share (window.h): the copying engine (the mem
generator's queues) and the header-data split (its lanes, against the emulated NIC in
schedule order) run the same schedules and must count them the same, by the contract:

* one packet may move a queue's window at most `max_jump` chunks past its end; further
  ahead, or that far behind its head, a packet is `out_of_window` and moves nothing;
* `resync_after` out-of-window packets in a row, each within a window of the one before,
  move the window to them (`window_resyncs`), the chunks between not counted lost;
* after a resync, a queue that has not yet placed into the new window starts no run with
  packets of the stream the window left (its backlog): the window never moves back.

Expected counts are written from that contract, not read from either engine.
"""

from __future__ import annotations

import numpy as np
import pytest

import casper400g_rx as rx
from casper400g_rx import Chunking, MemSource, _core

ENGINES = ["copy", "split"]
PAYLOAD = 64
WILD = 1 << 60
R = 16  # resync_after's default


def run(
    engine: str,
    schedule: list[int] | np.ndarray,
    ppc: int,
    max_chunks: int = 2,
    queues: int = 1,
    **cfg: object,
) -> tuple[rx.Stats, dict[int, tuple[np.ndarray, np.ndarray]]]:
    """`schedule` through `queues` queues of `engine` (round robin: the generator's
    threads; the emulated NIC steers seq % queues, in the schedule's order), skip_lagging
    off (a replay). Every chunk id is handed out once."""
    fmt = rx.Format(payload_size=PAYLOAD)
    config = _core.EngineConfig(
        packets_per_chunk=ppc,
        max_chunks=max_chunks,
        skip_lagging=False,
        **cfg,  # type: ignore[arg-type]
    )
    sched = np.asarray(schedule, dtype=np.uint64)
    if engine == "copy":
        cap = _core.Capture.generator(fmt, config, 0, 0, sched, True, queues, None)
    else:
        options = _core.EmulatorOptions(queues=queues, depth=16, schedule=sched, serial=True)
        cap = _core.Capture.split_emulation(fmt, config, options)
    cap.start()
    got: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    while (chunk := cap.next_chunk(20.0)) is not None:
        assert chunk.chunk_id not in got, chunk.chunk_id
        got[chunk.chunk_id] = (chunk.present.copy(), chunk.data.copy())
        chunk.release()
    cap.stop()
    s = rx.Stats(cap.stats)
    assert s.received == len(sched)
    assert (
        s.packets + s.late + s.duplicate + s.rejected + s.discarded + s.out_of_window == s.received
    ), dict(s)
    for cid, (present, data) in got.items():
        seqs = cid * ppc + np.flatnonzero(present)
        np.testing.assert_array_equal(data[present], rx.example_payloads(seqs, PAYLOAD))
    return s, got


def present_of(got: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[int, list[int]]:
    return {cid: np.flatnonzero(p).tolist() for cid, (p, _) in got.items()}


@pytest.mark.parametrize("engine", ENGINES)
def test_one_wild_packet_does_not_wreck_the_capture(engine: str) -> None:
    # A datagram whose sequence number is 2^60 moved the window there: every later good
    # packet was late, and lost became about 2^60. It is out of window now, nothing else.
    ppc, n = 16, 12
    schedule = list(range(n * ppc))
    schedule.insert(100, WILD)
    s, got = run(engine, schedule, ppc)
    assert (s.out_of_window, s.window_resyncs, s.late, s.lost) == (1, 0, 0, 0), dict(s)
    assert s.packets == n * ppc
    assert sorted(got) == list(range(n))
    assert all(p.all() for p, _ in got.values())


@pytest.mark.parametrize("engine", ENGINES)
def test_a_bad_first_packet_is_outvoted_by_the_stream(engine: str) -> None:
    # The first packet sets the window: a bad one put it at 2^60 and the whole stream
    # after it counted late. The stream's first R - 1 packets are out of window; the R-th
    # moves the window to them, and the bad packet's chunk goes out on its own.
    ppc, n = 16, 6
    s, got = run(engine, [WILD, *range(n * ppc)], ppc)
    assert (s.window_resyncs, s.out_of_window, s.late) == (1, R - 1, 0), dict(s)
    assert s.packets == 1 + n * ppc - (R - 1)
    assert s.lost == (ppc - 1) + (R - 1)
    have = present_of(got)
    assert have.pop(WILD // ppc) == [WILD % ppc]
    assert have == {0: list(range(R - 1, ppc)), **{c: list(range(ppc)) for c in range(1, n)}}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_restarted_stream_resyncs_without_counting_the_jump(engine: str) -> None:
    # The sender restarts its counter: far behind the window, which follows after R.
    ppc, n, old = 16, 4, 1000
    schedule = [*range(old * ppc, (old + n) * ppc), *range(n * ppc)]
    s, got = run(engine, schedule, ppc)
    assert (s.window_resyncs, s.out_of_window, s.late, s.lost) == (1, R - 1, 0, R - 1), dict(s)
    assert sorted(got) == [*range(n), *range(old, old + n)]
    assert present_of(got)[0] == list(range(R - 1, ppc))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_restart_seen_by_two_queues_resyncs_once(engine: str) -> None:
    # Both queues see the stream restart; the first whose run is long enough moves the
    # window (waiting until the other is out of its placement). The other's packets of
    # the old stream not yet placed (its backlog, far from the new window) are out of
    # window but start no run: the window never swings back to the old stream.
    ppc, n, old = 16, 8, 1000
    schedule = [*range(old * ppc, (old + n) * ppc), *range(n * ppc)]
    s, got = run(engine, schedule, ppc, queues=2)
    assert (s.window_resyncs, s.late, s.duplicate) == (1, 0, 0), dict(s)
    new = sorted(c for c in got if c < old)
    assert new == list(range(new[0], n)) and new[0] <= 2, new
    # What the resync cost: the runs before it, and any backlog of the old stream.
    assert s.out_of_window <= 2 * R + n * ppc
    assert s.packets + s.out_of_window == len(schedule)
    have = present_of(got)
    assert s.packets == sum(len(v) for v in have.values())
    # Lost: the empty slots of the chunks handed on, and the new window's first chunks
    # if every packet of theirs came before the resync.
    empty = sum(ppc - len(v) for v in have.values())
    assert empty <= s.lost <= empty + 2 * ppc
    # The new stream is whole from the chunk after the runs' packets on.
    assert all(have[c] == list(range(ppc)) for c in range(3, n))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_lagging_queues_backlog_never_moves_the_window_back(engine: str) -> None:
    # Under overload one queue sees the stream again far ahead (after its NIC drops) and
    # resyncs the window there, while the other still holds packets it took before the
    # jump: chunk 10, more than max_jump behind the new window, from a queue that has
    # placed nothing since the resync. They are out of window; a run of them moved the
    # window back to chunk 10 and then forward to chunk 100 again, handing chunk ids
    # out twice (and a queue waiting ahead of the moved-back window waited for ever).
    ppc = 8
    old = list(range(4 * ppc))
    ahead = [100 * ppc + 2 * k + 1 for k in range(4)]  # odd: the second queue's run
    backlog = [10 * ppc + 2 * k for k in range(4)]  # even: the first queue's backlog
    schedule = [*old, *ahead, *backlog, *range(100 * ppc + 8, 104 * ppc)]
    s, got = run(engine, schedule, ppc, queues=2, max_jump=3, resync_after=4)
    if engine == "split":
        # Steered seq % 2 in the schedule's order: exactly the overload's sequence.
        assert (s.window_resyncs, s.out_of_window, s.late) == (1, 3 + 4, 0), dict(s)
        assert s.packets == len(old) + 1 + 3 * ppc
        assert s.lost == ppc - 1
        assert sorted(got) == [0, 1, 2, 3, 100, 101, 102, 103]
        assert present_of(got)[100] == [7]
    else:
        # Two threads, round robin: which queue gets to its packets first varies. The
        # backlog may come before the jump (a run forward, to chunk 10) but never after
        # the window has reached chunk 100.
        assert s.window_resyncs in (1, 2), dict(s)
        assert set(got) >= {0, 1, 2, 3, 102, 103}
        assert all(c in (0, 1, 2, 3, 10, 100, 101, 102, 103) for c in got), sorted(got)
    # The window went forward only: chunk 10, if any, before every chunk from 100 on.
    assert not (10 in got and any(c >= 100 for c in list(got)[: list(got).index(10)]))
    assert all(present_of(got)[c] == list(range(ppc)) for c in (102, 103))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("target", "moves"), [(4, True), (5, False)])
def test_a_window_moves_at_most_max_jump_chunks_past_its_end(
    engine: str, target: int, moves: bool
) -> None:
    # Window of 2 from chunk 0 (ends at chunk 1); max_jump 3: chunk 4 moves it (the
    # chunks between count lost), chunk 5 does not, until resync_after=4 packets in a
    # row have come from there (then nothing between counts).
    ppc = 8
    schedule = [*range(2 * ppc), *range(target * ppc, (target + 1) * ppc)]
    s, got = run(engine, schedule, ppc, max_jump=3, resync_after=4)
    if moves:
        assert (s.out_of_window, s.window_resyncs, s.lost) == (0, 0, 2 * ppc), dict(s)
        assert sorted(got) == [0, 1, 4]
    else:
        assert (s.out_of_window, s.window_resyncs, s.lost) == (3, 1, 3), dict(s)
        assert sorted(got) == [0, 1, 5]
        assert present_of(got)[5] == list(range(3, ppc))
    assert s.late == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_late_within_reach_and_out_of_window_beyond(engine: str) -> None:
    # Behind the window: late up to max_jump chunks behind its head, out of window
    # further (older than any reordering; a lone one moves nothing).
    ppc = 8
    schedule = [*range(10 * ppc), 9 * ppc - 1 - 3 * ppc, 2]  # chunk 5 (late), chunk 0
    s, got = run(engine, schedule, ppc, max_jump=4)
    # The window ends at chunk 9 (head 8): chunk 5 is 3 behind, chunk 0 is 8 behind.
    assert (s.late, s.out_of_window, s.window_resyncs, s.lost) == (1, 1, 0, 0), dict(s)
    assert sorted(got) == list(range(10))


def test_out_of_window_runs_must_be_consistent() -> None:
    # Wild packets scattered far apart never make a run: no resync however many come.
    ppc = 8
    wild = [WILD + k * (1 << 40) for k in range(3 * R)]
    schedule = [*range(4 * ppc)]
    for i, w in enumerate(wild):
        schedule.insert(2 * i + 1, w)
    s, got = run("copy", schedule, ppc)
    assert (s.out_of_window, s.window_resyncs, s.lost, s.late) == (3 * R, 0, 0, 0)
    assert sorted(got) == [0, 1, 2, 3]


def test_the_bound_and_run_length_are_chunking_options() -> None:
    ppc = 8
    schedule = [*range(2 * ppc), *range(5 * ppc, 6 * ppc)]
    cap = rx.Capture(
        MemSource(schedule=np.array(schedule, dtype=np.uint64)),
        fmt=rx.Format(payload_size=PAYLOAD),
        chunking=Chunking(packets_per_chunk=ppc, max_chunks=2, max_jump=3, resync_after=4),
    )
    assert (cap.config.max_jump, cap.config.resync_after) == (3, 4)
    with cap:
        ids = sorted(c.chunk_id for c in cap.chunks(timeout=10))
    assert ids == [0, 1, 5]
    assert (cap.stats.out_of_window, cap.stats.window_resyncs) == (3, 1)
    # Unset, the bound is four windows.
    default = rx.Capture(MemSource(count=1), chunking=Chunking(max_chunks=3))
    assert (default.config.max_jump, default.config.resync_after) == (12, 16)
    with pytest.raises(ValueError, match="resync_after must be >= 1, got 0"):
        Chunking(resync_after=0)
    with pytest.raises(ValueError, match="max_jump must be >= 1, got 0"):
        Chunking(max_jump=0)
    with pytest.raises(ValueError, match="resync_after must be > 0, got 0"):
        _core.EngineConfig(resync_after=0)
