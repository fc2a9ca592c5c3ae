"""Model of the DCMAC TX client interface (400G, port 0, 8 x 128-bit segments).

Pure-Python parts:

* :class:`DcmacTxChecker` checks every cycle of the segmented AXI4-Stream bus against the
  PG369 rules collected in docs/design/core.md §2, reassembles the frames and appends the FCS
  the MAC would insert.
* :class:`LinePacer` decides ``tready``/``taf`` so that the long-run frame rate equals the
  400GbE line (or stalls at random, or never stalls).
* :class:`SegmentPacker` is a minimal compliant client: it packs whole frames into
  segments. Tests use it to produce legal traffic, and it documents what the RTL packer
  has to do.

cocotb part: :class:`DcmacTxMonitor` drives ``tready``/``taf`` on the DUT and feeds the
checker from the bus every rising edge.

Bus conventions (PG369): the first byte of a segment is bits 7:0; ``mty`` counts the unused
bytes at the top end of the EOP segment. Runt padding by the DCMAC is not confirmed from
public sources, so the model appends the FCS to the frame exactly as received; the core is
required to pad to 60 bytes itself.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .clocked import QueueMonitor, int_reader

if TYPE_CHECKING:
    from cocotb.handle import SimHandleBase
    from cocotb.queue import Queue

SEGMENTS = 8
SEG_BYTES = 16
BUS_BYTES = SEGMENTS * SEG_BYTES
FCS_BYTES = 4
# Preamble + SFD (8) + minimum inter-frame gap (12): wire time a frame costs beyond its FCS.
PREAMBLE_IFG_BYTES = 20
WIRE_OVERHEAD_BYTES = FCS_BYTES + PREAMBLE_IFG_BYTES
MIN_FRAME_BYTES = 60  # before FCS; shorter frames still occupy 64 B + 20 B on the wire
DEFAULT_MAC_CLK_HZ = 391.03e6
LINE_BPS = 400e9

RULES: dict[str, str] = {
    "seg_order": "segments are filled in order with no gaps (a frame's segments are contiguous)",
    "seg0_active": "a cycle that carries data has segment 0 active",
    "new_sop_seg0": "a new SOP after idle is on segment 0",
    "sop_after_eop": "an SOP on segment k>0 directly follows an EOP on segment k-1 "
    "of the same cycle",
    "idle_after_eop": "once a segment after an EOP is inactive, the rest of the cycle is inactive",
    "one_sop_per_half": "at most one SOP in segments 0-3 and one in segments 4-7",
    "sop_in_frame": "no SOP inside a frame",
    "eop_outside_frame": "no EOP outside a frame",
    "data_outside_frame": "an active segment outside a frame must carry SOP",
    "mty_not_eop": "mty is non-zero only on EOP segments",
    "tvalid_gap": "tvalid stays high from a frame's start to its end unless taf was asserted "
    "in the previous cycle",
    "hold": "while tready is low the presented bus is held unchanged",
    "taf_lead": "taf rises at least one cycle before tready falls",
    "x_value": "a sampled control signal or active data segment is X/Z",
}


class DcmacProtocolError(Exception):
    """A PG369 rule was broken; carries the cycle, segment (-1: whole port) and rule id."""

    def __init__(self, rule: str, cycle: int, segment: int, detail: str = "") -> None:
        self.rule = rule
        self.cycle = cycle
        self.segment = segment
        self.detail = detail
        where = f"segment {segment}" if segment >= 0 else "port"
        text = f"cycle {cycle}, {where}: rule '{rule}' broken: {RULES[rule]}"
        if detail:
            text += f" ({detail})"
        super().__init__(text)


def _crc32_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xEDB88320 if crc & 1 else 0)
        table.append(crc)
    return tuple(table)


_CRC_TABLE = _crc32_table()


def crc32_ethernet(data: bytes | bytearray | memoryview) -> int:
    """IEEE 802.3 CRC-32 as the MAC computes it: reflected 0x04C11DB7, preset and final
    inversion. Written out here (instead of calling zlib) so the model states the MAC's
    algorithm; the tests check it against zlib and scapy."""
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def ethernet_fcs(frame: bytes | bytearray) -> bytes:
    """The 4 FCS bytes in wire order (the CRC's least significant byte goes first)."""
    return crc32_ethernet(frame).to_bytes(4, "little")


def wire_bytes(frame_len: int) -> int:
    """Wire time of one frame given its length without FCS, in bytes (runts padded)."""
    return max(frame_len, MIN_FRAME_BYTES) + WIRE_OVERHEAD_BYTES


class TxFrame:
    """One frame leaving the MAC: ``body`` as the client sent it, ``data`` with the FCS.

    Where it lay on the bus: ``first_seg``/``last_seg`` are its SOP and EOP segments,
    ``first_dcycle``/``last_dcycle`` the indices of those cycles among the consumed cycles
    (stalls and idle cycles are not counted), so packing can be checked whatever the pacing.
    """

    __slots__ = (
        "_fcs",
        "body",
        "err",
        "first_cycle",
        "first_dcycle",
        "first_seg",
        "last_cycle",
        "last_dcycle",
        "last_seg",
    )

    def __init__(
        self,
        body: bytes,
        err: bool,
        first_cycle: int,
        last_cycle: int,
        first_seg: int = 0,
        last_seg: int = 0,
        first_dcycle: int = 0,
        last_dcycle: int = 0,
    ) -> None:
        self.body = body
        self.err = err
        self.first_cycle = first_cycle
        self.last_cycle = last_cycle
        self.first_seg = first_seg
        self.last_seg = last_seg
        self.first_dcycle = first_dcycle
        self.last_dcycle = last_dcycle
        self._fcs: bytes | None = None

    @property
    def fcs(self) -> bytes:
        # Computed on demand: throughput runs never look at most FCS values.
        if self._fcs is None:
            self._fcs = ethernet_fcs(self.body)
        return self._fcs

    @property
    def data(self) -> bytes:
        return self.body + self.fcs

    def __len__(self) -> int:
        return len(self.body)

    def __repr__(self) -> str:
        return (
            f"TxFrame(len={len(self.body)}, err={self.err}, "
            f"cycles={self.first_cycle}..{self.last_cycle})"
        )


class TxCycle:
    """Bus state of one cycle; lists are indexed by segment."""

    __slots__ = ("data", "ena", "eop", "err", "mty", "sop", "tvalid")

    def __init__(self) -> None:
        self.tvalid = 0
        self.ena = [0] * SEGMENTS
        self.sop = [0] * SEGMENTS
        self.eop = [0] * SEGMENTS
        self.err = [0] * SEGMENTS
        self.mty = [0] * SEGMENTS
        self.data = [0] * SEGMENTS

    def copy(self) -> TxCycle:
        c = TxCycle()
        c.tvalid = self.tvalid
        c.ena = list(self.ena)
        c.sop = list(self.sop)
        c.eop = list(self.eop)
        c.err = list(self.err)
        c.mty = list(self.mty)
        c.data = list(self.data)
        return c

    def set_segment(
        self,
        seg: int,
        chunk: bytes,
        *,
        sop: bool = False,
        eop: bool = False,
        err: bool = False,
    ) -> None:
        """Put up to 16 bytes on a segment; a short chunk must be the EOP segment."""
        n = len(chunk)
        if not 0 < n <= SEG_BYTES:
            raise ValueError(f"segment chunk must be 1..16 bytes, got {n}")
        if n < SEG_BYTES and not eop:
            raise ValueError("only the EOP segment may be partial")
        self.tvalid = 1
        self.ena[seg] = 1
        self.sop[seg] = int(sop)
        self.eop[seg] = int(eop)
        self.err[seg] = int(err)
        self.mty[seg] = SEG_BYTES - n if eop else 0
        self.data[seg] = int.from_bytes(chunk, "little")


@dataclass
class TxStats:
    """Counters over the monitored window (see :meth:`DcmacTxChecker.reset_stats`).

    Rates are taken over the first-SOP to last-EOP window of the frames counted here.
    """

    cycles: int = 0
    data_cycles: int = 0  # cycles in which at least one segment was consumed
    segments: int = 0  # active segments consumed
    idle_cycles: int = 0  # tready high but nothing offered
    stall_cycles: int = 0  # tready low
    frames: int = 0
    bytes: int = 0  # frame bytes without FCS
    wire_bytes: int = 0  # frame + FCS + preamble/IFG, runts padded
    udp_payload_bytes: int = 0
    err_frames: int = 0
    first_sop_cycle: int = -1
    last_eop_cycle: int = -1

    def window_s(self, mac_clk_hz: float) -> float:
        """Time from the first SOP to the last EOP of the window, both cycles included."""
        if self.first_sop_cycle < 0 or self.last_eop_cycle < 0:
            return 0.0
        return (self.last_eop_cycle - self.first_sop_cycle + 1) / mac_clk_hz

    def goodput_bps(self, mac_clk_hz: float) -> float:
        """UDP payload bits per second over the window."""
        t = self.window_s(mac_clk_hz)
        return 8 * self.udp_payload_bytes / t if t else 0.0

    def frame_rate(self, mac_clk_hz: float) -> float:
        t = self.window_s(mac_clk_hz)
        return self.frames / t if t else 0.0

    def line_utilisation(self, mac_clk_hz: float, line_bps: float = LINE_BPS) -> float:
        t = self.window_s(mac_clk_hz)
        return 8 * self.wire_bytes / (t * line_bps) if t else 0.0


def udp_payload_len(frame: bytes) -> int:
    """UDP payload length from the headers of an untagged IPv4/UDP frame, else 0."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return 0
    ihl = (frame[14] & 0x0F) * 4
    off = 14 + ihl
    if len(frame) < off + 8:
        return 0
    return max(int.from_bytes(frame[off + 4 : off + 6], "big") - 8, 0)


class DcmacTxChecker:
    """Checks the segmented TX bus cycle by cycle and reassembles frames.

    Feed it with :meth:`step` once per clock cycle, including idle and stalled cycles,
    passing the ``tready``/``taf`` that were presented to the client in that cycle. A cycle
    is consumed when ``tvalid`` and ``tready`` are both high. The first violation raises
    :class:`DcmacProtocolError`.

    PG369 marks an idle cycle either with ``tvalid`` low or with ``tvalid`` high and segment
    0 inactive; inside a frame both count as a gap, allowed only in a cycle that follows one
    with ``taf`` high ("halt ... on the cycle after taf"; from the cycle after taf falls,
    tvalid must be back). Segments may be inactive only after an EOP, so a cycle that ends
    with inactive segments while a frame is open breaks ``seg_order``.
    """

    def __init__(
        self,
        on_frame: Callable[[TxFrame], None] | None = None,
        keep_frames: bool = True,
    ) -> None:
        self.frames: list[TxFrame] = []
        self.stats = TxStats()
        self.cycle = 0
        self._on_frame = on_frame
        self._keep = keep_frames
        self._in_frame = False
        self._buf = bytearray()
        self._first_cycle = 0
        self._first_seg = 0
        self._first_dcycle = 0
        self.data_cycle = 0  # consumed cycles so far (stalls and idle cycles excluded)
        self._prev_taf = 0
        # No fall can be seen in cycle 0: the port comes out of reset with tready low.
        self._prev_tready = 0
        self._held: tuple[tuple[int, ...], ...] | None = None

    def reset_stats(self) -> None:
        self.stats = TxStats()

    @property
    def in_frame(self) -> bool:
        return self._in_frame

    def step_cycle(self, cyc: TxCycle | None, tready: int, taf: int) -> int:
        """Check one cycle (``cyc``: what the client presents, None or not tvalid: nothing).
        Returns the wire bytes the consumed segments cost (data bytes plus, per EOP, FCS +
        preamble + IFG and any runt padding) for the pacer."""
        if cyc is None or not cyc.tvalid:
            cyc = _IDLE
        tvalid = cyc.tvalid
        c = self.cycle
        st = self.stats
        st.cycles += 1
        if self._prev_tready and not tready and not self._prev_taf:
            raise DcmacProtocolError("taf_lead", c, -1, "tready fell with taf low last cycle")
        if self._held is not None:
            self._check_hold(c, cyc)
        active = bool(tvalid) and any(cyc.ena)
        try:
            if tvalid and not tready:
                st.stall_cycles += 1
                self._held = self._snapshot(cyc)
                return 0
            self._held = None
            if not tready:
                st.stall_cycles += 1
            if not active:
                if tready:
                    st.idle_cycles += 1
                if self._in_frame and not self._prev_taf:
                    raise DcmacProtocolError(
                        "tvalid_gap", c, -1, "no data inside a frame without taf the cycle before"
                    )
                return 0
            st.data_cycles += 1
            try:
                return self._consume(c, cyc)
            finally:
                self.data_cycle += 1
        finally:
            self._prev_tready = tready
            self._prev_taf = taf
            self.cycle = c + 1

    @staticmethod
    def _snapshot(cyc: TxCycle) -> tuple[tuple[int, ...], ...]:
        # Only active segments matter; inactive ones may carry anything.
        return tuple(
            (1, cyc.sop[i], cyc.eop[i], cyc.err[i], cyc.mty[i], cyc.data[i]) if cyc.ena[i] else (0,)
            for i in range(SEGMENTS)
        )

    def _check_hold(self, c: int, cyc: TxCycle) -> None:
        held = self._held
        assert held is not None
        if not cyc.tvalid:
            raise DcmacProtocolError("hold", c, -1, "tvalid dropped before the cycle was taken")
        now = self._snapshot(cyc)
        for i in range(SEGMENTS):
            if now[i] != held[i]:
                raise DcmacProtocolError("hold", c, i, "segment changed while tready was low")

    def _consume(self, c: int, cyc: TxCycle) -> int:
        ena, sop, eop, err, mty, data = cyc.ena, cyc.sop, cyc.eop, cyc.err, cyc.mty, cyc.data
        in_frame = self._in_frame
        buf = self._buf
        if not ena[0]:
            first = next(i for i in range(SEGMENTS) if ena[i])
            if not in_frame and sop[first]:
                raise DcmacProtocolError("new_sop_seg0", c, first, "SOP after idle not on seg 0")
            raise DcmacProtocolError("seg0_active", c, 0, f"first active segment is {first}")
        cost = 0
        idle_seen = False
        sop_lo = sop_hi = False
        for i in range(SEGMENTS):
            if not ena[i]:
                if in_frame:
                    raise DcmacProtocolError("seg_order", c, i, "inactive segment inside a frame")
                idle_seen = True
                continue
            if idle_seen:
                raise DcmacProtocolError("idle_after_eop", c, i, "active after an idle segment")
            e = eop[i]
            m = mty[i]
            if m and not e:
                raise DcmacProtocolError("mty_not_eop", c, i, f"mty={m} without EOP")
            if sop[i]:
                if i and not eop[i - 1]:
                    raise DcmacProtocolError("sop_after_eop", c, i, f"segment {i - 1} has no EOP")
                if in_frame:
                    raise DcmacProtocolError("sop_in_frame", c, i)
                if i < 4:
                    if sop_lo:
                        raise DcmacProtocolError("one_sop_per_half", c, i, "second SOP in 0-3")
                    sop_lo = True
                else:
                    if sop_hi:
                        raise DcmacProtocolError("one_sop_per_half", c, i, "second SOP in 4-7")
                    sop_hi = True
                in_frame = True
                buf = bytearray()
                self._first_cycle = c
                self._first_seg = i
                self._first_dcycle = self.data_cycle
            elif not in_frame:
                raise DcmacProtocolError("eop_outside_frame" if e else "data_outside_frame", c, i)
            self.stats.segments += 1
            try:
                chunk = data[i].to_bytes(SEG_BYTES, "little")
            except OverflowError:
                raise DcmacProtocolError("x_value", c, i, "data wider than 128 bits") from None
            if e:
                if m > 15:
                    raise DcmacProtocolError("x_value", c, i, f"mty={m} is not 4-bit")
                n = SEG_BYTES - m
                buf += chunk[:n]
                cost += n
                cost += self._finish(bytes(buf), bool(err[i]), c, i)
                in_frame = False
            else:
                buf += chunk
                cost += SEG_BYTES
        self._in_frame = in_frame
        self._buf = buf
        return cost

    def _finish(self, body: bytes, err: bool, c: int, seg: int) -> int:
        st = self.stats
        frame = TxFrame(
            body,
            err,
            self._first_cycle,
            c,
            self._first_seg,
            seg,
            self._first_dcycle,
            self.data_cycle,
        )
        st.frames += 1
        st.bytes += len(body)
        w = wire_bytes(len(body))
        st.wire_bytes += w
        st.udp_payload_bytes += udp_payload_len(body)
        st.err_frames += int(err)
        if st.first_sop_cycle < 0:
            st.first_sop_cycle = self._first_cycle
        st.last_eop_cycle = c
        if self._keep:
            self.frames.append(frame)
        if self._on_frame is not None:
            self._on_frame(frame)
        # The data bytes were charged segment by segment; add what the wire adds.
        return w - len(body)


_IDLE = TxCycle()  # a cycle without tvalid; never changed


@dataclass
class PackingStats:
    """Where consecutive frames started relative to the previous frame's end.

    ``gapless``: the next SOP is in the segment right after the previous EOP (the same
    cycle, or segment 0 of the next consumed cycle after an EOP on segment 7).
    ``same_cycle``: the next SOP follows the EOP inside the same cycle. ``two_sop_cycles``:
    consumed cycles with two SOPs; ``two_sop_ideal``: how many the same frames would have
    with gapless packing from the same first segment. ``fill``: segments carrying data per
    segment of the consumed cycles the frames span; ``fill_ideal``: the same for gapless
    packing.
    """

    frames: int = 0
    pairs: int = 0
    gapless: int = 0
    same_cycle: int = 0
    two_sop_cycles: int = 0
    two_sop_ideal: int = 0
    fill: float = 0.0
    fill_ideal: float = 0.0

    @property
    def gapless_fraction(self) -> float:
        return self.gapless / self.pairs if self.pairs else 0.0


def segments_of(frame_len: int) -> int:
    return -(-frame_len // SEG_BYTES)


def packing_stats(frames: Sequence[TxFrame]) -> PackingStats:
    """Packing figures of frames sent back to back (see :class:`PackingStats`)."""
    st = PackingStats(frames=len(frames))
    if not frames:
        return st
    sops: dict[int, int] = {}
    for f in frames:
        sops[f.first_dcycle] = sops.get(f.first_dcycle, 0) + 1
    st.two_sop_cycles = sum(1 for n in sops.values() if n >= 2)
    for a, b in itertools.pairwise(frames):
        st.pairs += 1
        if a.last_seg < SEGMENTS - 1:
            same = b.first_dcycle == a.last_dcycle and b.first_seg == a.last_seg + 1
            st.same_cycle += int(same)
            st.gapless += int(same)
        else:
            st.gapless += int(b.first_dcycle == a.last_dcycle + 1 and b.first_seg == 0)
    segs = [segments_of(len(f)) for f in frames]
    span = frames[-1].last_dcycle - frames[0].first_dcycle + 1
    st.fill = sum(segs) / (SEGMENTS * span)
    # The same frames packed without gaps from the same first segment.
    pos = frames[0].first_seg
    ideal_sops: dict[int, int] = {}
    for n in segs:
        ideal_sops[pos // SEGMENTS] = ideal_sops.get(pos // SEGMENTS, 0) + 1
        pos += n
    st.two_sop_ideal = sum(1 for n in ideal_sops.values() if n >= 2)
    st.fill_ideal = sum(segs) / (SEGMENTS * -(-pos // SEGMENTS))
    return st


PACER_MODES = ("line", "random", "always")


class LinePacer:
    """Chooses ``tready``/``taf`` per MAC cycle.

    ``line``: a token bucket in bytes. Each cycle adds ``line_bps / 8 / mac_clk_hz`` bytes
    of credit (127.9 B at 391.03 MHz, just under the 128-B bus); each consumed cycle costs
    the wire bytes :meth:`DcmacTxChecker.step` reports. ``tready`` is high while the credit
    is positive, so the debt stays bounded and the long-run frame rate is the line rate.
    ``taf`` is raised whenever the worst case consumption of the current cycle could empty
    the bucket, which guarantees it precedes every ``tready`` fall by at least
    ``taf_lead`` cycles.

    ``random``: seeded stall runs of 1..``max_stall`` cycles with probability
    ``stall_prob`` per cycle, ``taf`` high from ``taf_lead`` cycles before each run to its
    end, plus spurious ``taf`` pulses (probability ``taf_prob``) that are not followed by
    a stall, to exercise the client's ``taf`` handling. No rate limit.

    ``always``: ``tready`` high, ``taf`` low.
    """

    # Worst charge of one cycle: a full bus plus three frame ends (one continuing frame and
    # two new ones), each padded from 1 byte to the 60-byte minimum.
    MAX_CYCLE_COST = BUS_BYTES + 3 * (WIRE_OVERHEAD_BYTES + MIN_FRAME_BYTES - 1)

    def __init__(
        self,
        mac_clk_hz: float = DEFAULT_MAC_CLK_HZ,
        line_bps: float = LINE_BPS,
        mode: str = "line",
        *,
        seed: int = 0,
        taf_lead: int = 1,
        burst_bytes: float | None = None,
        stall_prob: float = 0.05,
        max_stall: int = 8,
        taf_prob: float = 0.02,
    ) -> None:
        if mode not in PACER_MODES:
            raise ValueError(f"mode must be one of {PACER_MODES}, got {mode!r}")
        if taf_lead < 1:
            raise ValueError("taf must lead tready by at least one cycle")
        self.mode = mode
        self.mac_clk_hz = mac_clk_hz
        self.line_bps = line_bps
        self.bytes_per_cycle = line_bps / 8 / mac_clk_hz
        self.taf_lead = taf_lead
        # The bucket's size stands for the MAC's small TX FIFO: it lets a client that was
        # held off catch up briefly, but never hides a sustained rate above the line. It
        # starts full (an idle MAC), so a window opened at the first frame sees up to
        # burst_bytes above the line rate; reset the statistics after a warm-up for
        # steady-state figures.
        self.burst_bytes = (
            burst_bytes if burst_bytes is not None else 2 * self.MAX_CYCLE_COST * taf_lead
        )
        self.credit = self.burst_bytes
        self._rng = random.Random(seed)
        self.stall_prob = stall_prob
        self.max_stall = max_stall
        self.taf_prob = taf_prob
        self._stall_left = 0
        self._spurious = 0
        # tready of cycles t, t+1, .., t+taf_lead (random mode plans ahead to honour taf_lead)
        self._plan: deque[int] = deque([1] * (taf_lead + 1))
        self.tready = 1
        self.taf = 0
        self._decide()

    def _decide(self) -> None:
        if self.mode == "always":
            self.tready, self.taf = 1, 0
        elif self.mode == "line":
            self.tready = int(self.credit > 0)
            lead = self.taf_lead
            worst = self.credit + lead * (self.bytes_per_cycle - self.MAX_CYCLE_COST)
            self.taf = int(worst <= 0)
        else:
            self.tready = self._plan[0]
            stall_ahead = not all(self._plan)
            if self._spurious:
                self._spurious -= 1
            elif self._rng.random() < self.taf_prob:
                self._spurious = self._rng.randint(1, 3)
            self.taf = int(stall_ahead or self._spurious > 0)

    def _plan_next(self) -> int:
        if self._stall_left:
            self._stall_left -= 1
            return 0
        if self._rng.random() < self.stall_prob:
            self._stall_left = self._rng.randint(1, self.max_stall) - 1
            return 0
        return 1

    def advance(self, cost: int) -> tuple[int, int]:
        """Close the current cycle (``cost`` wire bytes were consumed in it) and return
        ``(tready, taf)`` for the next one."""
        if self.mode == "line":
            self.credit = min(self.credit + self.bytes_per_cycle - cost, self.burst_bytes)
        elif self.mode == "random":
            self._plan.popleft()
            self._plan.append(self._plan_next())
        self._decide()
        return self.tready, self.taf


class SegmentPacker:
    """A compliant client: packs queued whole frames onto the segments.

    Frames start on segment 0 after idle and right after the previous EOP otherwise (at
    most one SOP per half-bus); a frame's segments are contiguous. Like the simplest
    compliant RTL it presents nothing new in the cycle after ``taf``, and holds the bus
    while ``tready`` is low.
    """

    def __init__(self) -> None:
        self._frames: deque[tuple[bytes, bool]] = deque()
        self._off = 0  # bytes of the head frame already consumed
        self._pending: TxCycle | None = None
        self._pending_state: tuple[int, int] = (0, 0)  # frames completed, offset after
        self.frames_done = 0

    def push(self, frame: bytes, err: bool = False) -> None:
        if not frame:
            raise ValueError("empty frame")
        self._frames.append((frame, err))

    def __len__(self) -> int:
        return len(self._frames)

    @property
    def busy(self) -> bool:
        return bool(self._frames) or self._pending is not None

    def present(self, taf_prev: int) -> TxCycle | None:
        """Bus content for this cycle (``None`` = idle), given last cycle's ``taf``."""
        if self._pending is not None:
            return self._pending
        if taf_prev or not self._frames:
            return None
        cyc = TxCycle()
        done = 0
        off = self._off
        seg = 0
        half_sop = [False, False]
        while seg < SEGMENTS and done < len(self._frames):
            frame, err = self._frames[done]
            if off == 0:
                if half_sop[seg >> 2]:
                    break
                half_sop[seg >> 2] = True
            chunk = frame[off : off + SEG_BYTES]
            last = off + len(chunk) >= len(frame)
            cyc.set_segment(seg, chunk, sop=off == 0, eop=last, err=err and last)
            seg += 1
            if last:
                done += 1
                off = 0
            else:
                off += len(chunk)
        self._pending = cyc
        self._pending_state = (done, off)
        return cyc

    def taken(self, tready: int) -> None:
        """Report whether the presented cycle was consumed."""
        if self._pending is None or not tready:
            return
        done, off = self._pending_state
        for _ in range(done):
            self._frames.popleft()
        self.frames_done += done
        self._off = off
        self._pending = None


class DcmacTxMonitor(QueueMonitor[TxFrame]):
    """cocotb adapter: plays the DCMAC's TX port 0 towards the DUT.

    Drives ``tx_axis_tready_0``/``tx_axis_taf_0`` from a :class:`LinePacer` and samples
    the bus at every rising edge of ``clock`` into a :class:`DcmacTxChecker`. Received
    frames appear in :attr:`frames` and in :attr:`queue` (``await monitor.recv()``).
    While ``reset`` (optional handle) is active the port is held not ready and nothing is
    checked.
    """

    def __init__(
        self,
        dut: Any,  # a cocotb HierarchyObject: its signals are dynamic attributes
        prefix: str = "",
        clock: SimHandleBase | None = None,
        *,
        mac_clk_hz: float = DEFAULT_MAC_CLK_HZ,
        line_bps: float = LINE_BPS,
        mode: str = "line",
        seed: int = 0,
        reset: SimHandleBase | None = None,
        reset_active_high: bool = True,
        start: bool = True,
        **pacer_kw: Any,
    ) -> None:
        self.mac_clk_hz = mac_clk_hz
        self.line_bps = line_bps
        self.pacer = LinePacer(mac_clk_hz, line_bps, mode, seed=seed, **pacer_kw)
        self.frames: list[TxFrame] = []
        self.queue: Queue[TxFrame] | None = None
        self.checker = DcmacTxChecker(on_frame=self._got_frame, keep_frames=False)
        sig = self.attach(dut, prefix, clock, "tx_axi_clk", reset, reset_active_high)
        self._tready = sig("tx_axis_tready_0")
        self._taf = sig("tx_axis_taf_0")
        self._rd_tvalid = int_reader(sig("tx_axis_tvalid_0"))

        def readers(name: str) -> list[Callable[[], int]]:
            return [int_reader(sig(f"{name}{i}")) for i in range(SEGMENTS)]

        self._rd_data = readers("tx_axis_tdata")
        self._rd_ena = readers("tx_axis_tuser_ena")
        self._rd_sop = readers("tx_axis_tuser_sop")
        self._rd_eop = readers("tx_axis_tuser_eop")
        self._rd_err = readers("tx_axis_tuser_err")
        self._rd_mty = readers("tx_axis_tuser_mty")
        # Reused every cycle instead of building new lists.
        self._cyc = TxCycle()
        self._cur_tready = 0
        self._cur_taf = 0
        self._in_reset = False
        self._task: Any = None
        self._drive(0, 1, force=True)
        if start:
            self.start()

    @property
    def stats(self) -> TxStats:
        return self.checker.stats

    def reset_stats(self) -> None:
        self.checker.reset_stats()

    def goodput_bps(self) -> float:
        return self.stats.goodput_bps(self.mac_clk_hz)

    def _got_frame(self, frame: TxFrame) -> None:
        self.frames.append(frame)
        self.deliver(frame)

    async def wait_frames(self, count: int, limit_ns: int = 200_000) -> None:
        """Wait until :attr:`frames` holds ``count`` frames; fail after ``limit_ns`` of
        simulated time."""
        from cocotb.triggers import Timer

        waited = 0
        while len(self.frames) < count and waited < limit_ns:
            await Timer(200, unit="ns")
            waited += 200
        assert len(self.frames) >= count, f"only {len(self.frames)} of {count} frames arrived"

    def _drive(self, tready: int, taf: int, force: bool = False) -> None:
        # Writes are scheduled simulator events: skip the ones that change nothing.
        if force or tready != self._cur_tready:
            self._tready.value = tready
        if force or taf != self._cur_taf:
            self._taf.value = taf
        self._cur_tready = tready
        self._cur_taf = taf

    def on_edge(self) -> None:
        self.sample()

    def sample(self) -> None:
        """Process the cycle that ended at this rising edge and set up the next one."""
        if self.in_reset():
            if not self._in_reset:
                self._in_reset = True
                self._drive(0, 1)
            return
        if self._in_reset:
            # First cycle out of reset (presented not ready): check from a clean state, as a
            # freshly reset MAC port would, keeping the counters.
            self._in_reset = False
            self.checker = _restart_checker(self.checker, self._got_frame)
        c = self.checker
        cyc = self._cyc
        try:
            cyc.tvalid = self._rd_tvalid()
            if cyc.tvalid:
                ena = cyc.ena
                for i, rd in enumerate(self._rd_ena):
                    e = rd()
                    ena[i] = e
                    if e:
                        cyc.sop[i] = self._rd_sop[i]()
                        cyc.eop[i] = self._rd_eop[i]()
                        cyc.err[i] = self._rd_err[i]()
                        cyc.mty[i] = self._rd_mty[i]()
                        cyc.data[i] = self._rd_data[i]()
        except ValueError as exc:
            raise DcmacProtocolError("x_value", c.cycle, -1, str(exc)) from None
        cost = c.step_cycle(cyc, self._cur_tready, self._cur_taf)
        tready, taf = self.pacer.advance(cost)
        self._drive(tready, taf)


def assert_frames(got: Sequence[TxFrame], want: Sequence[bytes]) -> None:
    """``got`` (frames the monitor took) are exactly ``want`` (expected frames, no FCS),
    in order, none marked with an error."""
    assert len(got) == len(want), f"{len(got)} frames, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.body != w:
            diff = (
                next(i for i in range(min(len(g.body), len(w))) if g.body[i] != w[i])
                if len(g.body) == len(w)
                else None
            )
            raise AssertionError(
                f"frame {k}: length {len(g.body)} vs {len(w)}, first difference at {diff}\n"
                f"got  {g.body[:64].hex()}\nwant {w[:64].hex()}"
            )
        assert not g.err


def _restart_checker(old: DcmacTxChecker, on_frame: Callable[[TxFrame], None]) -> DcmacTxChecker:
    new = DcmacTxChecker(on_frame=on_frame, keep_frames=False)
    new.stats = old.stats
    new.cycle = old.cycle
    new.data_cycle = old.data_cycle
    return new
