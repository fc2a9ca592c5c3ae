"""DCMAC TX client-interface model: checker rules, FCS, pacer rate and taf, adapter."""

from __future__ import annotations

import random
import zlib

import numpy as np
import pytest

from verification.models import frames
from verification.models.dcmac_tx import (
    SEGMENTS,
    DcmacProtocolError,
    DcmacTxChecker,
    DcmacTxMonitor,
    LinePacer,
    SegmentPacker,
    TxCycle,
    crc32_ethernet,
    ethernet_fcs,
    int_reader,
    packing_stats,
)

MAC_HZ = 391.03e6


def frame_bytes(n: int, seed: int = 0) -> bytes:
    return random.Random(seed * 100003 + n).randbytes(n)


def bus(segs: dict[int, tuple[bytes, str]]) -> TxCycle:
    """A cycle from {segment: (chunk, flags)}; flags: s=SOP, e=EOP, x=err."""
    c = TxCycle()
    for i, (chunk, flags) in segs.items():
        c.set_segment(i, chunk, sop="s" in flags, eop="e" in flags, err="x" in flags)
    return c


def run(cycles: list[TxCycle | None], checker: DcmacTxChecker | None = None) -> DcmacTxChecker:
    chk = checker or DcmacTxChecker()
    for cyc in cycles:
        chk.step_cycle(cyc, 1, 0)
    return chk


def simple_cycles(frame: bytes, first_flags: str = "s") -> list[TxCycle]:
    """One frame, starting on segment 0, written out independently of SegmentPacker."""
    chunks = [frame[i : i + 16] for i in range(0, len(frame), 16)]
    out = []
    for base in range(0, len(chunks), SEGMENTS):
        segs = {}
        for j, ch in enumerate(chunks[base : base + SEGMENTS]):
            k = base + j
            flags = ("s" if k == 0 else "") + ("e" if k == len(chunks) - 1 else "")
            segs[j] = (ch, flags)
        out.append(bus(segs))
    return out


# --- FCS ---------------------------------------------------------------------------------


def test_crc_matches_zlib_and_check_value():
    # 0xCBF43926 is the published check value of CRC-32/ISO-HDLC for "123456789".
    assert crc32_ethernet(b"123456789") == 0xCBF43926
    rng = random.Random(1)
    for n in (0, 1, 59, 60, 1500, 9018):
        data = rng.randbytes(n)
        assert crc32_ethernet(data) == zlib.crc32(data)
        assert ethernet_fcs(data) == zlib.crc32(data).to_bytes(4, "little")
        # The receiver's CRC over frame + FCS leaves the 802.3 residue 0xDEBB20E3
        # (0x2144DF1C after the final inversion).
        assert crc32_ethernet(data + ethernet_fcs(data)) == 0x2144DF1C


# --- legal traffic -----------------------------------------------------------------------


def test_runt_60_bytes_one_cycle():
    f = frame_bytes(60)
    chk = run([bus({0: (f[0:16], "s"), 1: (f[16:32], ""), 2: (f[32:48], ""), 3: (f[48:], "e")})])
    assert len(chk.frames) == 1
    fr = chk.frames[0]
    assert fr.body == f
    assert fr.data == f + zlib.crc32(f).to_bytes(4, "little")
    assert (fr.first_cycle, fr.last_cycle, fr.err) == (0, 0, False)


def test_segment_byte_order_and_mty():
    # Bits 7:0 of a segment are its first byte; mty counts unused top bytes.
    c = TxCycle()
    c.tvalid = 1
    c.ena[0] = c.sop[0] = c.eop[0] = 1
    c.mty[0] = 13
    c.data[0] = 0x00FFEE_CCBBAA  # only the low three bytes are valid
    chk = run([c])
    assert chk.frames[0].body == b"\xaa\xbb\xcc"


def test_two_frames_per_cycle():
    a, b = frame_bytes(60, 1), frame_bytes(64, 2)
    flags = ["s", "", "", "e"]
    segs = {i: (a[16 * i : 16 * i + 16], flags[i]) for i in range(4)}
    segs.update({4 + i: (b[16 * i : 16 * i + 16], flags[i]) for i in range(4)})
    chk = run([bus(segs)])
    assert [f.body for f in chk.frames] == [a, b]
    assert chk.stats.frames == 2
    assert chk.stats.bytes == 124


def test_sop_right_after_eop_and_spanning_frames():
    a = frame_bytes(100, 3)  # 6 full segments + 4 bytes: EOP on segment 6
    b = frame_bytes(70, 4)  # SOP on segment 7, EOP on segment 4 of the next cycle
    c0 = {i: (a[16 * i : 16 * i + 16], "") for i in range(7)}
    c0[0] = (a[0:16], "s")
    c0[6] = (a[96:100], "e")
    c0[7] = (b[0:16], "s")
    c1 = {0: (b[16:32], ""), 1: (b[32:48], ""), 2: (b[48:64], ""), 3: (b[64:70], "e")}
    chk = run([bus(c0), bus(c1), None])
    assert [f.body for f in chk.frames] == [a, b]
    assert (chk.frames[1].first_cycle, chk.frames[1].last_cycle) == (0, 1)


def test_partial_final_cycle_then_new_frame():
    a, b = frame_bytes(150, 5), frame_bytes(61, 6)
    cycles: list[TxCycle | None] = [*simple_cycles(a), None, *simple_cycles(b)]
    chk = run(cycles)
    assert [f.body for f in chk.frames] == [a, b]
    assert chk.stats.idle_cycles == 1
    assert chk.frames[1].first_cycle == 3


def test_eop_on_segment7_then_sop_on_segment0():
    a, b = frame_bytes(128, 7), frame_bytes(60, 8)
    chk = run([*simple_cycles(a), *simple_cycles(b)])
    assert [f.body for f in chk.frames] == [a, b]


def test_jumbo_9018_and_err_flag():
    f = frame_bytes(9018, 9)
    cycles = simple_cycles(f)
    last = cycles[-1]
    eop_seg = max(i for i in range(SEGMENTS) if last.ena[i])
    last.err[eop_seg] = 1
    chk = run(cycles)
    (fr,) = chk.frames
    assert fr.body == f and fr.err
    assert fr.fcs == zlib.crc32(f).to_bytes(4, "little")
    assert (fr.first_cycle, fr.last_cycle) == (0, len(cycles) - 1) == (0, 70)


def test_stall_holds_and_consumes_once():
    f = frame_bytes(200, 10)
    c0, c1 = simple_cycles(f)
    chk = DcmacTxChecker()
    chk.step_cycle(c0, 1, 1)  # taf warns
    chk.step_cycle(c1, 0, 1)  # not taken
    chk.step_cycle(c1.copy(), 0, 1)
    chk.step_cycle(c1.copy(), 1, 0)
    assert [fr.body for fr in chk.frames] == [f]
    assert chk.stats.stall_cycles == 2


def test_tvalid_gap_allowed_after_taf():
    f = frame_bytes(300, 11)
    c = simple_cycles(f)
    chk = DcmacTxChecker()
    chk.step_cycle(c[0], 1, 1)
    chk.step_cycle(None, 1, 1)
    chk.step_cycle(None, 1, 0)
    chk.step_cycle(c[1], 1, 0)
    chk.step_cycle(c[2], 1, 0)
    assert [fr.body for fr in chk.frames] == [f]


# --- one illegal example per rule ---------------------------------------------------------

D = bytes(range(16))


def raw(**fields: dict[int, int]) -> TxCycle:
    """A cycle with control bits set directly (to express what set_segment refuses)."""
    c = TxCycle()
    c.tvalid = 1
    for name, per_seg in fields.items():
        lst = getattr(c, name)
        for i, v in per_seg.items():
            lst[i] = v
    return c


def full_open() -> TxCycle:
    """Eight segments of a frame that continues into the next cycle."""
    return bus({i: (D, "s" if i == 0 else "") for i in range(8)})


ILLEGAL: dict[str, tuple[list[TxCycle | None], int, int]] = {
    # rule: (cycles, cycle number of the violation, segment)
    "seg_order": ([bus({0: (D, "s"), 1: (D, "")})], 0, 2),
    "seg0_active": ([full_open(), bus({1: (D, ""), 2: (D[:4], "e")})], 1, 0),
    "new_sop_seg0": ([None, bus({1: (D, "s"), 2: (D, "e")})], 1, 1),
    "sop_after_eop": ([bus({0: (D, "s"), 1: (D, ""), 2: (D, "se")})], 0, 2),
    "idle_after_eop": ([bus({0: (D, "s"), 1: (D, "e"), 3: (D, "se")})], 0, 3),
    "one_sop_per_half": ([bus({0: (D, "se"), 1: (D, "se")})], 0, 1),
    "sop_in_frame": ([full_open(), bus({0: (D, "se")})], 1, 0),
    "eop_outside_frame": ([bus({0: (D, "e")})], 0, 0),
    "data_outside_frame": ([bus({0: (D, ""), 1: (D, "e")})], 0, 0),
    "mty_not_eop": (
        [raw(ena={0: 1, 1: 1}, sop={0: 1}, eop={1: 1}, mty={0: 3}, data={0: 1, 1: 2})],
        0,
        0,
    ),
    "tvalid_gap": ([full_open(), None], 1, -1),
    "x_value": ([raw(ena={0: 1}, sop={0: 1}, eop={0: 1}, mty={0: 16})], 0, 0),
}


@pytest.mark.parametrize("rule", sorted(ILLEGAL))
def test_illegal_example_raises_its_rule(rule: str):
    cycles, cyc, seg = ILLEGAL[rule]
    with pytest.raises(DcmacProtocolError) as info:
        run(cycles)
    err = info.value
    assert (err.rule, err.cycle, err.segment) == (rule, cyc, seg)
    assert rule in str(err) and f"cycle {cyc}" in str(err)


def test_illegal_second_sop_in_upper_half():
    a = bus({0: (D, "s"), 1: (D, ""), 2: (D, ""), 3: (D, "e"), 4: (D, "se"), 5: (D, "se")})
    with pytest.raises(DcmacProtocolError) as info:
        run([a])
    assert (info.value.rule, info.value.segment) == ("one_sop_per_half", 5)


def test_illegal_trailing_idle_inside_frame():
    with pytest.raises(DcmacProtocolError) as info:
        run([bus({i: (D, "s" if i == 0 else "") for i in range(6)})])
    assert (info.value.rule, info.value.segment) == ("seg_order", 6)


def test_illegal_hold_data_changed():
    c0 = full_open()
    c1 = c0.copy()
    c1.data[5] ^= 1
    chk = DcmacTxChecker()
    chk.step_cycle(c0, 1, 1)
    chk.step_cycle(c0, 0, 1)
    with pytest.raises(DcmacProtocolError) as info:
        chk.step_cycle(c1, 1, 0)
    assert (info.value.rule, info.value.cycle, info.value.segment) == ("hold", 2, 5)


def test_illegal_hold_tvalid_dropped():
    chk = DcmacTxChecker()
    chk.step_cycle(None, 1, 1)
    chk.step_cycle(full_open(), 0, 1)
    with pytest.raises(DcmacProtocolError) as info:
        chk.step_cycle(None, 1, 0)
    assert (info.value.rule, info.value.cycle) == ("hold", 2)


def test_illegal_tready_fall_without_taf():
    chk = DcmacTxChecker()
    chk.step_cycle(None, 1, 0)
    with pytest.raises(DcmacProtocolError) as info:
        chk.step_cycle(None, 0, 1)
    assert (info.value.rule, info.value.cycle) == ("taf_lead", 1)


def test_illegal_gap_needs_taf_in_previous_cycle():
    # taf rising in the gap cycle itself is too late for the strict rule.
    chk = DcmacTxChecker()
    chk.step_cycle(full_open(), 1, 0)
    with pytest.raises(DcmacProtocolError) as info:
        chk.step_cycle(None, 1, 1)
    assert info.value.rule == "tvalid_gap"


# --- packer + pacer ----------------------------------------------------------------------


def stream(
    pacer: LinePacer,
    sizes: list[int],
    cycles: int,
    obey_taf: bool = True,
    seed: int = 0,
) -> tuple[DcmacTxChecker, list[tuple[int, int]], list[bytes]]:
    """Run a saturated SegmentPacker against the pacer; returns checker, (tready, taf)."""
    rng = random.Random(seed)
    packer = SegmentPacker()
    chk = DcmacTxChecker()
    sent: list[bytes] = []
    trace = []
    tready, taf = pacer.tready, pacer.taf
    prev_taf = 0
    for _ in range(cycles):
        while len(packer) < 4:
            f = frame_bytes(rng.choice(sizes), rng.randrange(1 << 30))
            packer.push(f)
            sent.append(f)
        cyc = packer.present(prev_taf if obey_taf else 0)
        trace.append((tready, taf))
        cost = chk.step_cycle(cyc, tready, taf)
        packer.taken(tready)
        prev_taf = taf
        tready, taf = pacer.advance(cost)
    return chk, trace, sent


@pytest.mark.parametrize("size", [60, 64, 65, 256, 1500, 8192, 9018])
def test_pacer_long_run_rate_is_line_rate(size: int):
    pacer = LinePacer(MAC_HZ, 400e9)
    chk, trace, sent = stream(pacer, [size], 10000)
    # The bucket starts full (an idle MAC) and a saturated client drains it only slowly,
    # because the bus is barely faster than the line: measure from the first throttle on.
    start = next(t for t, (r, a) in enumerate(trace) if a or not r)
    assert start < 3000
    ends = np.array([f.last_cycle for f in chk.frames if f.last_cycle > start])
    assert len(ends) > 100
    measured = MAC_HZ / np.polyfit(np.arange(len(ends)), ends, 1)[0]
    expected = 400e9 / (8 * (max(size, 60) + 4 + 20))
    assert measured == pytest.approx(expected, rel=1e-3)
    assert [f.body for f in chk.frames] == sent[: len(chk.frames)]


def test_pacer_rate_when_client_ignores_taf():
    chk, trace, _ = stream(LinePacer(MAC_HZ), [1500], 12000, obey_taf=False)
    start = next(t for t, (r, _) in enumerate(trace) if not r)
    ends = np.array([f.last_cycle for f in chk.frames if f.last_cycle > start])
    measured = MAC_HZ / np.polyfit(np.arange(len(ends)), ends, 1)[0]
    assert measured == pytest.approx(400e9 / (8 * 1524), rel=1e-3)


@pytest.mark.parametrize("payload", [18, 1472, 8192])
def test_measured_goodput_of_udp_stream(payload: int):
    pacer = LinePacer(MAC_HZ)
    packer = SegmentPacker()
    chk = DcmacTxChecker(keep_frames=False)
    # scapy is slow: build a few frames once and cycle through them.
    pool = [
        frames.expected_udp_frame(
            1, 2, "10.0.0.1", "10.0.0.2", 3, 4, n, 64, frames.example_payload(n, payload)
        )
        for n in range(4)
    ]
    tready, taf = pacer.tready, pacer.taf
    prev_taf = 0
    for cycle in range(6000):
        if cycle == 2000:
            chk.reset_stats()  # past the initial burst the idle MAC allows
        while len(packer) < 4:
            packer.push(pool[(cycle + len(packer)) % 4])
        cyc = packer.present(prev_taf)
        cost = chk.step_cycle(cyc, tready, taf)
        packer.taken(tready)
        prev_taf = taf
        tready, taf = pacer.advance(cost)
    st = chk.stats
    assert st.udp_payload_bytes == payload * st.frames
    assert st.cycles == 4000 and st.data_cycles + st.idle_cycles + st.stall_cycles == 4000
    # Frame-granular window: allow one frame's worth over ~4000 cycles.
    want = frames.theoretical_goodput(payload)
    assert st.goodput_bps(MAC_HZ) == pytest.approx(want, rel=max(1.5 / st.frames, 1e-3))
    assert st.line_utilisation(MAC_HZ) == pytest.approx(1.0, rel=max(1.5 / st.frames, 1e-3))


def taf_precedes_every_fall(trace: list[tuple[int, int]]) -> int:
    falls = 0
    for t in range(1, len(trace)):
        if trace[t - 1][0] and not trace[t][0]:
            falls += 1
            assert trace[t - 1][1], f"tready fell at {t} without taf at {t - 1}"
    return falls


@pytest.mark.parametrize("mode", ["line", "random"])
def test_taf_precedes_tready_low(mode: str):
    pacer = LinePacer(MAC_HZ, mode=mode, seed=5, stall_prob=0.1)
    # A client that ignores taf runs into tready falls; one that obeys it never should.
    _, trace, _ = stream(pacer, [60, 100, 333, 1500], 5000, obey_taf=False, seed=2)
    assert taf_precedes_every_fall(trace) > 10


def test_taf_lead_of_three_cycles():
    for mode in ("line", "random"):
        pacer = LinePacer(MAC_HZ, mode=mode, seed=1, taf_lead=3, stall_prob=0.1)
        _, trace, _ = stream(pacer, [60, 64, 100, 1000], 4000, obey_taf=False)
        falls = 0
        for t in range(3, len(trace)):
            if trace[t - 1][0] and not trace[t][0]:
                falls += 1
                assert all(trace[t - k][1] for k in (1, 2, 3)), (mode, t)
        assert falls > 5


def test_random_mode_is_seeded_and_round_trips():
    def run_seed(seed: int) -> tuple[list[tuple[int, int]], list[bytes], DcmacTxChecker]:
        pacer = LinePacer(MAC_HZ, mode="random", seed=seed, stall_prob=0.2, max_stall=5)
        chk, trace, sent = stream(pacer, [1, 15, 16, 17, 60, 200, 9018], 3000, seed=9)
        return trace, sent, chk

    t1, sent, chk = run_seed(3)
    t2, _, _ = run_seed(3)
    t3, _, _ = run_seed(4)
    assert t1 == t2 and t1 != t3
    stalled = sum(1 for r, _ in t1 if not r) / len(t1)
    # Runs start with p = 0.2 and last 3 cycles on average: about 0.2 * 3 / (1 + 0.2 * 3).
    assert 0.25 < stalled < 0.5
    assert len(chk.frames) > 20
    assert [f.body for f in chk.frames] == sent[: len(chk.frames)]


def test_always_mode():
    pacer = LinePacer(mode="always")
    _, trace, _ = stream(pacer, [1500], 500)
    assert set(trace) == {(1, 0)}


def test_pacer_rejects_bad_arguments():
    with pytest.raises(ValueError):
        LinePacer(mode="fast")
    with pytest.raises(ValueError):
        LinePacer(taf_lead=0)


# --- cocotb adapter with stand-in handles (no simulator) ----------------------------------


class Sig:
    def __init__(self, value: object = 0) -> None:
        self.value = value


class Unknown:
    """Stands for an X/Z value: converting it to int fails like cocotb's LogicArray."""

    def __int__(self) -> int:
        raise ValueError("X")


class FakeDut:
    def __init__(self, prefix: str) -> None:
        names = [f"{prefix}tx_axis_tvalid_0", f"{prefix}tx_axis_tready_0", f"{prefix}tx_axis_taf_0"]
        for i in range(SEGMENTS):
            names += [f"{prefix}tx_axis_tdata{i}"]
            names += [f"{prefix}tx_axis_tuser_{k}{i}" for k in ("ena", "sop", "eop", "err", "mty")]
        for n in names:
            setattr(self, n, Sig())
        self.prefix = prefix

    def put(self, cyc: TxCycle | None) -> None:
        p = self.prefix
        getattr(self, f"{p}tx_axis_tvalid_0").value = cyc.tvalid if cyc else 0
        for i in range(SEGMENTS):
            for k in ("ena", "sop", "eop", "err", "mty"):
                getattr(self, f"{p}tx_axis_tuser_{k}{i}").value = getattr(cyc, k)[i] if cyc else 0
            getattr(self, f"{p}tx_axis_tdata{i}").value = cyc.data[i] if cyc else 0


def test_monitor_with_stand_in_dut():
    dut = FakeDut("core_")
    clk = Sig()
    mon = DcmacTxMonitor(dut, "core_", clk, mode="line", start=False)
    tready_h = dut.core_tx_axis_tready_0
    taf_h = dut.core_tx_axis_taf_0
    assert (tready_h.value, taf_h.value) == (0, 1)
    packer = SegmentPacker()
    rng = random.Random(4)
    sent = [frame_bytes(rng.randint(60, 2000), i) for i in range(200)]
    for f in sent:
        packer.push(f)
    falls = 0
    prev_ready = 0
    prev_taf_seen = 1
    for _ in range(4000):
        ready, taf = tready_h.value, taf_h.value
        if prev_ready and not ready:
            falls += 1
            assert prev_taf_seen
        prev_taf_seen = taf
        # Ignoring taf makes the pacer pull tready low, so holds go through the adapter too.
        dut.put(packer.present(0))
        mon.sample()  # rising edge: the DUT's bus and our tready/taf of this cycle
        packer.taken(ready)
        prev_ready = ready
        if not packer.busy:
            break
    assert [f.body for f in mon.frames] == sent
    st = mon.stats
    assert st.frames == 200 and st.bytes == sum(map(len, sent))
    assert st.stall_cycles > 0 and falls > 0
    # Random frames carry no UDP header: the goodput counter must not invent payload.
    assert mon.goodput_bps() == 0.0


def test_monitor_reports_unknown_values():
    dut = FakeDut("")
    mon = DcmacTxMonitor(dut, clock=Sig(), mode="always", start=False)
    dut.put(bus({0: (D, "se")}))
    dut.tx_axis_tdata0.value = Unknown()
    with pytest.raises(DcmacProtocolError) as info:
        mon.sample()
    assert info.value.rule == "x_value"


class RawSim:
    def __init__(self, binstr: str) -> None:
        self.binstr = binstr

    def get_signal_val_binstr(self) -> str:
        return self.binstr


class RawHandle:
    """Like a cocotb handle: the simulator object sits behind ``_handle``."""

    def __init__(self, binstr: str) -> None:
        self._handle = RawSim(binstr)

    @property
    def value(self) -> int:
        raise AssertionError("the fast path must not go through .value")


def test_int_reader_paths():
    h = RawHandle("0101")
    rd = int_reader(h)
    assert rd() == 5
    h._handle.binstr = "1" * 128
    assert rd() == (1 << 128) - 1  # reads the current value each call
    h._handle.binstr = "01x1"
    with pytest.raises(ValueError):
        rd()
    s = Sig(7)
    assert int_reader(s)() == 7


# --- packing figures -----------------------------------------------------------------------


def test_packing_stats_of_a_gapless_packer():
    """SegmentPacker packs without gaps: every start follows the previous end, two SOPs
    share a cycle where the sizes allow, and the figures equal the ideal ones."""
    sizes = [106, 107, 170, 64, 60, 300, 106]  # 7, 7, 11, 4, 4, 19, 7 segments
    packer = SegmentPacker()
    for i, n in enumerate(sizes * 6):
        packer.push(frame_bytes(n, i))
    chk = DcmacTxChecker()
    while packer.busy:
        chk.step_cycle(packer.present(0), 1, 0)
        packer.taken(1)
    st = packing_stats(chk.frames)
    assert st.frames == len(sizes) * 6 and st.pairs == st.frames - 1
    assert st.gapless == st.pairs and st.gapless_fraction == 1.0
    assert st.same_cycle > 0 and st.two_sop_cycles > 0
    assert st.two_sop_cycles == st.two_sop_ideal
    assert st.fill == pytest.approx(st.fill_ideal) and st.fill > 0.95
    # positions as written out by hand: 7 segments from 0, then 7 from 7, then 11 from 6
    f = chk.frames
    assert [(x.first_seg, x.last_seg) for x in f[:3]] == [(0, 6), (7, 5), (6, 0)]
    assert [(x.first_dcycle, x.last_dcycle) for x in f[:3]] == [(0, 0), (0, 1), (1, 3)]


def test_packing_stats_when_every_frame_starts_on_segment_0():
    """The figures see a client that never packs (each frame alone from segment 0)."""
    chk = DcmacTxChecker()
    frames_ = [frame_bytes(170, i) for i in range(10)]  # 11 segments each
    for fr in frames_:
        for cyc in simple_cycles(fr):
            chk.step_cycle(cyc, 1, 0)
    st = packing_stats(chk.frames)
    assert st.gapless == 0 and st.same_cycle == 0 and st.two_sop_cycles == 0
    assert st.fill == pytest.approx(11 / 16)
    assert st.fill_ideal == pytest.approx(110 / (8 * 14))
    assert chk.stats.segments == 110 and chk.data_cycle == 20
