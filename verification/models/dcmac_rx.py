"""Model of the DCMAC RX client interface (400G, port 0, 8 x 128-bit segments).

The RX bus mirrors the TX bus (docs/design/core.md §5) but has no ``tready``: the MAC
presents a cycle and the core must take it. Pure-Python parts:

* :class:`RxSegmentPacker` turns queued frames into per-cycle bus states the way the MAC
  may present them: back to back with the next SOP right after an EOP (at most one SOP per
  half-bus, so up to two frames start in one cycle), optional seeded idle cycles between
  or inside frames, optional random start segment after idle, and either line-rate pacing
  (the wire cannot deliver faster than 400 Gb/s) or as fast as the bus allows.
* :func:`reassemble_rx` decodes a list of bus cycles back into frames; tests use it where
  the TX checker's stricter rules (SOP on segment 0 after idle) do not hold.

cocotb part: :class:`DcmacRxDriver` drives ``rx_axis_*`` of the DUT from a packer.

Frames are queued without FCS. With ``strip_fcs=False`` the bus carries the FCS as well
(corrupted for frames flagged bad, as the MAC forwards what it received); with
``strip_fcs=True`` only the frame. Whether the DCMAC strips by default is not confirmed
from public sources (``MAC_PORT0_RX_STRIP``), so both are modelled.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .clocked import ClockedDriver
from .dcmac_tx import (
    BUS_BYTES,
    DEFAULT_MAC_CLK_HZ,
    FCS_BYTES,
    LINE_BPS,
    SEG_BYTES,
    SEGMENTS,
    TxCycle,
    ethernet_fcs,
    wire_bytes,
)

if TYPE_CHECKING:
    from cocotb.handle import SimHandleBase

RX_MODES = ("line", "fast")


def rx_fcs(frame: bytes | bytearray) -> bytes:
    """FCS bytes of ``frame`` (no FCS) in wire order, as the RX bus carries them."""
    return ethernet_fcs(frame)


class RxCycle(TxCycle):
    """Bus state of one RX cycle; same layout as :class:`TxCycle` (lists per segment)."""

    __slots__ = ()


@dataclass
class RxStats:
    cycles: int = 0
    data_cycles: int = 0  # tvalid high
    idle_cycles: int = 0
    frames: int = 0
    bytes: int = 0  # frame bytes without FCS
    bus_bytes: int = 0  # bytes put on the bus (FCS included when not stripped)
    wire_bytes: int = 0  # frame + FCS + preamble/IFG, runts padded
    err_frames: int = 0
    two_sop_cycles: int = 0
    first_sop_cycle: int = -1
    last_eop_cycle: int = -1

    def line_utilisation(self, mac_clk_hz: float, line_bps: float = LINE_BPS) -> float:
        """Wire bits delivered per second over first SOP .. last EOP, over the line rate."""
        if self.first_sop_cycle < 0 or self.last_eop_cycle < 0:
            return 0.0
        t = (self.last_eop_cycle - self.first_sop_cycle + 1) / mac_clk_hz
        return 8 * self.wire_bytes / (t * line_bps)


class RxSegmentPacker:
    """Per-cycle bus states of the DCMAC RX port for a queue of frames.

    ``mode="line"``: a token bucket of ``line_bps / 8 / mac_clk_hz`` bytes per cycle. A
    cycle carries data only while the credit is positive; each frame costs its wire bytes
    (:func:`wire_bytes`: frame + FCS + preamble/IFG, runts padded), charged as its bytes
    go on the bus and its overhead at its EOP. A new frame starts after an EOP in the same
    cycle only while credit remains, so most of the slack lands between frames; when the
    credit runs out inside a frame the idle cycle falls inside it (the port has no
    tready, and the MAC cannot hold back a frame it is receiving).

    ``mode="fast"``: every cycle carries as much as the segment rules allow.

    ``idle_prob``: seeded probability of an idle cycle where a cycle would start with a new
    frame (and, with ``idle_in_frame``, also inside a frame). ``random_align``: a frame that
    starts a cycle after an idle cycle begins on a random segment (segments below it
    inactive), which the MAC may do; the TX rules forbid it, so keep it off when checking
    with :class:`DcmacTxChecker`.
    """

    def __init__(
        self,
        *,
        strip_fcs: bool = True,
        mode: str = "fast",
        mac_clk_hz: float = DEFAULT_MAC_CLK_HZ,
        line_bps: float = LINE_BPS,
        idle_prob: float = 0.0,
        idle_in_frame: bool = False,
        random_align: bool = False,
        seed: int = 0,
        burst_bytes: float = 2 * BUS_BYTES,
    ) -> None:
        if mode not in RX_MODES:
            raise ValueError(f"mode must be one of {RX_MODES}, got {mode!r}")
        if not 0.0 <= idle_prob < 1.0:
            raise ValueError("idle_prob must be in [0, 1)")
        self.strip_fcs = strip_fcs
        self.mode = mode
        self.mac_clk_hz = mac_clk_hz
        self.line_bps = line_bps
        self.bytes_per_cycle = line_bps / 8 / mac_clk_hz
        self.idle_prob = idle_prob
        self.idle_in_frame = idle_in_frame
        self.random_align = random_align
        self._rng = random.Random(seed)
        # The cap stands for an idle line: after a pause the MAC still cannot deliver more
        # than a little above the line rate.
        self.burst_bytes = burst_bytes
        self.credit = burst_bytes
        # (bus bytes, frame length without FCS, err)
        self._frames: deque[tuple[bytes, int, bool]] = deque()
        self._off = 0
        self._prev_idle = True
        self.stats = RxStats()

    def push(self, frame: bytes, err: bool = False) -> None:
        """Queue a frame given without FCS; ``err`` marks it as received with a bad FCS."""
        if not frame:
            raise ValueError("empty frame")
        data = bytes(frame)
        if not self.strip_fcs:
            fcs = rx_fcs(data)
            if err:
                fcs = bytes(b ^ 0xFF for b in fcs)
            data += fcs
        self._frames.append((data, len(frame), bool(err)))

    def extend(self, frames: Iterable[bytes | tuple[bytes, bool]]) -> None:
        for f in frames:
            if isinstance(f, tuple):
                self.push(f[0], f[1])
            else:
                self.push(f)

    def __len__(self) -> int:
        return len(self._frames)

    @property
    def busy(self) -> bool:
        return bool(self._frames)

    def next_cycle(self) -> RxCycle | None:
        """Bus state of the next cycle; ``None`` is an idle cycle (``tvalid`` low)."""
        st = self.stats
        c = st.cycles
        st.cycles += 1
        line = self.mode == "line"
        if line:
            self.credit = min(self.credit + self.bytes_per_cycle, self.burst_bytes)
        frames = self._frames
        if not frames or (line and self.credit <= 0):
            return self._idle()
        mid_frame = self._off > 0
        may_idle = self.idle_prob and (not mid_frame or self.idle_in_frame)
        if may_idle and self._rng.random() < self.idle_prob:
            return self._idle()
        cyc = RxCycle()
        seg = 0
        if self.random_align and self._prev_idle and not mid_frame:
            seg = self._rng.randrange(SEGMENTS)
        off = self._off
        half_sop = [False, False]
        sops = 0
        credit = self.credit
        while seg < SEGMENTS and frames:
            data, flen, err = frames[0]
            if off == 0:
                if half_sop[seg >> 2] or (line and credit <= 0):
                    break
                half_sop[seg >> 2] = True
                sops += 1
                if st.first_sop_cycle < 0:
                    st.first_sop_cycle = c
            chunk = data[off : off + SEG_BYTES]
            n = len(chunk)
            last = off + n >= len(data)
            cyc.set_segment(seg, chunk, sop=off == 0, eop=last, err=err and last)
            credit -= n
            seg += 1
            if last:
                frames.popleft()
                off = 0
                w = wire_bytes(flen)
                # The bytes on the bus were charged already; the rest of the wire time here.
                credit -= w - len(data)
                st.frames += 1
                st.bytes += flen
                st.bus_bytes += len(data)
                st.wire_bytes += w
                st.err_frames += int(err)
                st.last_eop_cycle = c
            else:
                off += n
        self._off = off
        if line:
            self.credit = credit
        st.data_cycles += 1
        st.two_sop_cycles += int(sops == 2)
        self._prev_idle = False
        return cyc

    def _idle(self) -> None:
        self.stats.idle_cycles += 1
        self._prev_idle = True


@dataclass
class RxFrame:
    data: bytes  # as carried on the bus (FCS included when not stripped)
    err: bool
    first_cycle: int
    last_cycle: int


class RxBusError(Exception):
    """The bus broke a rule the RX side must obey (cycle, segment, what)."""


def reassemble_rx(cycles: Iterable[TxCycle | None]) -> list[RxFrame]:
    """Decode RX bus cycles into frames, checking the rules every RX bus obeys: a frame's
    segments are contiguous (no inactive segment inside a frame within a cycle), no SOP
    inside a frame, no EOP or data outside one, an SOP after another frame's EOP in the
    same cycle follows it directly, at most one SOP per half-bus, mty only on EOP. Unlike
    TX, a frame may start on any segment after an idle stretch."""
    out: list[RxFrame] = []
    in_frame = False
    buf = bytearray()
    first = 0
    for c, cyc in enumerate(cycles):
        if cyc is None or not cyc.tvalid:
            continue
        sop_half = [False, False]
        seen_active = False
        idle_after = False
        for i in range(SEGMENTS):
            if not cyc.ena[i]:
                if in_frame:
                    raise RxBusError(c, i, "inactive segment inside a frame")
                if seen_active:
                    idle_after = True
                continue
            if idle_after:
                raise RxBusError(c, i, "active segment after an idle one in the same cycle")
            if cyc.sop[i]:
                if in_frame:
                    raise RxBusError(c, i, "SOP inside a frame")
                if seen_active and not cyc.eop[i - 1]:
                    raise RxBusError(c, i, "SOP not directly after an EOP")
                if sop_half[i >> 2]:
                    raise RxBusError(c, i, "second SOP in one half")
                sop_half[i >> 2] = True
                in_frame = True
                buf = bytearray()
                first = c
            elif not in_frame:
                raise RxBusError(c, i, "data outside a frame")
            seen_active = True
            chunk = cyc.data[i].to_bytes(SEG_BYTES, "little")
            if cyc.eop[i]:
                buf += chunk[: SEG_BYTES - cyc.mty[i]]
                out.append(RxFrame(bytes(buf), bool(cyc.err[i]), first, c))
                in_frame = False
            else:
                if cyc.mty[i]:
                    raise RxBusError(c, i, "mty without EOP")
                buf += chunk
    if in_frame:
        raise RxBusError(-1, -1, "bus ended inside a frame")
    return out


def strip_checked(data: bytes) -> tuple[bytes, bool]:
    """Split bus data that carries an FCS into (frame, fcs_ok)."""
    if len(data) < FCS_BYTES:
        raise ValueError("shorter than an FCS")
    body = data[:-FCS_BYTES]
    return body, rx_fcs(body) == data[-FCS_BYTES:]


class DcmacRxDriver(ClockedDriver):
    """cocotb adapter: plays the DCMAC's RX port 0 towards the DUT.

    At every rising edge of ``clock`` (default ``<prefix>rx_axi_clk``) it puts the next
    :meth:`RxSegmentPacker.next_cycle` on ``<prefix>rx_axis_*``. While ``reset`` (optional
    handle) is active it drives idle and holds the queue. Keyword arguments are those of
    :class:`RxSegmentPacker`.
    """

    def __init__(
        self,
        dut: Any,  # a cocotb HierarchyObject: its signals are dynamic attributes
        prefix: str = "",
        clock: SimHandleBase | None = None,
        *,
        reset: SimHandleBase | None = None,
        reset_active_high: bool = True,
        start: bool = True,
        **packer_kw: Any,
    ) -> None:
        self.packer = RxSegmentPacker(**packer_kw)
        sig = self.attach(dut, prefix, clock, "rx_axi_clk", reset, reset_active_high)
        self._tvalid = sig("rx_axis_tvalid_0")

        def handles(name: str) -> list[Any]:
            return [sig(f"{name}{i}") for i in range(SEGMENTS)]

        self._h_data = handles("rx_axis_tdata")
        self._h_ena = handles("rx_axis_tuser_ena")
        self._h_sop = handles("rx_axis_tuser_sop")
        self._h_eop = handles("rx_axis_tuser_eop")
        self._h_err = handles("rx_axis_tuser_err")
        self._h_mty = handles("rx_axis_tuser_mty")
        # Last values written, so that a cycle only schedules the writes that change.
        self._cur = [[0] * SEGMENTS for _ in range(5)]  # ena, sop, eop, err, mty
        self._cur_tvalid = 0
        self._task: Any = None
        self._tvalid.value = 0
        for group in (self._h_ena, self._h_sop, self._h_eop, self._h_err, self._h_mty):
            for h in group:
                h.value = 0
        for h in self._h_data:
            h.value = 0
        if start:
            self.start()

    @property
    def stats(self) -> RxStats:
        return self.packer.stats

    def send_nowait(self, frame: bytes, err: bool = False) -> None:
        """Queue a frame (without FCS) for the background stream."""
        self.packer.push(frame, err)

    def busy(self) -> bool:
        """Frames are still queued or on the bus (``await wait_idle()`` for the end)."""
        return bool(self.packer.busy)

    def on_edge(self) -> None:
        self.tick()

    def tick(self) -> None:
        """Drive the cycle that starts at this rising edge."""
        cyc = None if self.in_reset() else self.packer.next_cycle()
        self._put(cyc)
        if not self.packer.busy:
            self.went_idle()

    def _put(self, cyc: TxCycle | None) -> None:
        if cyc is None:
            if self._cur_tvalid:
                self._tvalid.value = 0
                self._cur_tvalid = 0
            # Clear the segment flags too: a core that ignores tvalid must not see frames.
            ena_now = self._cur[0]
            for i in range(SEGMENTS):
                if ena_now[i]:
                    self._h_ena[i].value = 0
                    ena_now[i] = 0
            return
        if not self._cur_tvalid:
            self._tvalid.value = 1
            self._cur_tvalid = 1
        cur_ena, cur_sop, cur_eop, cur_err, cur_mty = self._cur
        ena, sop, eop, err, mty, data = cyc.ena, cyc.sop, cyc.eop, cyc.err, cyc.mty, cyc.data
        for i in range(SEGMENTS):
            if ena[i] != cur_ena[i]:
                self._h_ena[i].value = ena[i]
                cur_ena[i] = ena[i]
            if not ena[i]:
                continue
            self._h_data[i].value = data[i]
            if sop[i] != cur_sop[i]:
                self._h_sop[i].value = sop[i]
                cur_sop[i] = sop[i]
            if eop[i] != cur_eop[i]:
                self._h_eop[i].value = eop[i]
                cur_eop[i] = eop[i]
            if err[i] != cur_err[i]:
                self._h_err[i].value = err[i]
                cur_err[i] = err[i]
            if mty[i] != cur_mty[i]:
                self._h_mty[i].value = mty[i]
                cur_mty[i] = mty[i]
