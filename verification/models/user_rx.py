"""Monitor of the core's user RX port (docs/design/core.md §1).

Word format is that of the TX port (:mod:`.user_tx`): 128 bytes per ``rx_data[1023:0]``
word, the first payload byte in ``rx_data[1023:1016]``, ``rx_byte_enable[127:0]`` marking
the valid bytes of the last word contiguous from the MSB end and all-ones before it. A
datagram without payload (UDP length 8) is one word with ``rx_byte_enable`` all zero.
``rx_source_ip/port`` and ``rx_dest_ip/port`` are valid with ``rx_valid`` and must stay the
same for every word of a datagram; ``rx_bad_frame`` counts only with ``rx_end_of_frame``.

The port is a first-word-fall-through FIFO: a word is taken in a cycle where ``rx_valid``
and ``rx_ack`` are both high. :class:`AckPattern` decides ``rx_ack`` per cycle (always,
seeded random, or a periodic throttle that builds back-pressure), :class:`RxWordAssembler`
is the pure reassembly, and :class:`UserRxMonitor` is the cocotb adapter, which also
watches ``rx_overrun`` and pulses ``rx_overrun_ack``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .clocked import QueueMonitor, int_reader
from .user_tx import ALL_BYTES, WORD_BYTES, words_to_payload

if TYPE_CHECKING:
    from cocotb.handle import SimHandleBase
    from cocotb.queue import Queue


class UserRxProtocolError(Exception):
    """The user RX port broke one of its rules (which word, what)."""


@dataclass(frozen=True)
class RxDatagram:
    payload: bytes
    src_ip: int
    src_port: int
    dst_ip: int
    dst_port: int
    bad: bool
    first_cycle: int = -1
    last_cycle: int = -1

    @property
    def words(self) -> int:
        """Words the datagram took on the port (an empty one still takes one)."""
        return max(1, -(-len(self.payload) // WORD_BYTES))


class RxWordAssembler:
    """Collects accepted words into :class:`RxDatagram` records, checking that the
    metadata is constant within a datagram, the byte-enable rules of
    :func:`words_to_payload`, and (``strict_bad``) that ``rx_bad_frame`` is only raised
    with ``rx_end_of_frame``."""

    def __init__(self, strict_bad: bool = True) -> None:
        self.strict_bad = strict_bad
        self._words: list[tuple[int, int]] = []
        self._meta: tuple[int, int, int, int] | None = None
        self._first = -1
        self.datagrams = 0
        self.words = 0

    @property
    def in_frame(self) -> bool:
        return bool(self._words)

    def word(
        self,
        data: int,
        byte_enable: int,
        eof: int,
        bad: int,
        src_ip: int,
        src_port: int,
        dst_ip: int,
        dst_port: int,
        cycle: int = -1,
    ) -> RxDatagram | None:
        """Take one accepted word; returns the datagram it completes, if any."""
        meta = (src_ip, src_port, dst_ip, dst_port)
        n = len(self._words)
        where = f"word {n} of a datagram (cycle {cycle})"
        if not self._words:
            self._meta = meta
            self._first = cycle
        elif meta != self._meta:
            raise UserRxProtocolError(
                f"{where}: metadata changed inside a datagram: {_fmt(self._meta)} -> {_fmt(meta)}"
            )
        if bad and not eof and self.strict_bad:
            raise UserRxProtocolError(f"{where}: rx_bad_frame without rx_end_of_frame")
        if not eof and byte_enable != ALL_BYTES:
            raise UserRxProtocolError(f"{where}: byte enable {byte_enable:#x} before the last word")
        self._words.append((data, byte_enable))
        self.words += 1
        if not eof:
            return None
        try:
            # the empty datagram: one word, no byte enabled
            empty = n == 0 and byte_enable == 0
            payload = b"" if empty else words_to_payload(self._words)
        except ValueError as exc:
            self._words = []
            raise UserRxProtocolError(f"{where}: {exc}") from None
        self._words = []
        self.datagrams += 1
        return RxDatagram(
            payload, src_ip, src_port, dst_ip, dst_port, bool(bad), self._first, cycle
        )


def _fmt(meta: tuple[int, int, int, int] | None) -> str:
    if meta is None:
        return "-"
    s_ip, s_port, d_ip, d_port = meta
    return f"{_ip(s_ip)}:{s_port}->{_ip(d_ip)}:{d_port}"


def _ip(v: int) -> str:
    return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))


ACK_MODES = ("always", "random", "throttle")


class AckPattern:
    """``rx_ack`` per cycle.

    ``always``: 1. ``random``: 1 with probability ``prob`` (seeded). ``throttle``: ``on``
    cycles high then ``off`` cycles low, repeating; with ``jitter`` the run lengths vary
    at random up to twice their value, so the FIFO fill level wanders.
    """

    def __init__(
        self,
        mode: str = "always",
        *,
        prob: float = 0.5,
        on: int = 1,
        off: int = 3,
        jitter: bool = False,
        seed: int = 0,
    ) -> None:
        if mode not in ACK_MODES:
            raise ValueError(f"mode must be one of {ACK_MODES}, got {mode!r}")
        if not 0.0 < prob <= 1.0:
            raise ValueError("prob must be in (0, 1]: the port must drain eventually")
        if on < 1 or off < 0:
            raise ValueError("throttle needs on >= 1 and off >= 0")
        self.mode = mode
        self.prob = prob
        self.on = on
        self.off = off
        self.jitter = jitter
        self._rng = random.Random(seed)
        self._left = 0
        self._level = 0

    def next(self) -> int:
        if self.mode == "always":
            return 1
        if self.mode == "random":
            return int(self._rng.random() < self.prob)
        while self._left == 0:
            self._level ^= 1
            n = self.on if self._level else self.off
            if self.jitter and n:
                n = self._rng.randint(1, 2 * n)
            self._left = n
        self._left -= 1
        return self._level


@dataclass
class UserRxStats:
    cycles: int = 0
    valid_cycles: int = 0
    words: int = 0
    held_cycles: int = 0  # rx_valid high, rx_ack low: back-pressure applied
    datagrams: int = 0
    payload_bytes: int = 0
    bad_frames: int = 0
    overrun_cycles: int = 0
    overrun_events: int = 0  # rising edges of rx_overrun
    overrun_acks: int = 0


class UserRxMonitor(QueueMonitor[RxDatagram]):
    """cocotb adapter: takes words from ``<prefix>rx_*`` on ``clock`` (default
    ``<prefix>user_clk``), drives ``rx_ack`` from an :class:`AckPattern` and, with
    ``auto_overrun_ack``, a one-cycle ``rx_overrun_ack`` pulse whenever ``rx_overrun`` is
    seen high (at most every other cycle, so the core sees each pulse end). Completed
    datagrams go to :attr:`datagrams` and :attr:`queue`. While ``reset`` is active
    ``rx_ack`` is held low and a partly received datagram is discarded.
    """

    def __init__(
        self,
        dut: Any,  # a cocotb HierarchyObject: its signals are dynamic attributes
        prefix: str = "",
        clock: SimHandleBase | None = None,
        *,
        ack: str = "always",
        seed: int = 0,
        auto_overrun_ack: bool = True,
        strict_bad: bool = True,
        reset: SimHandleBase | None = None,
        reset_active_high: bool = True,
        start: bool = True,
        **ack_kw: Any,
    ) -> None:
        sig = self.attach(dut, prefix, clock, "user_clk", reset, reset_active_high)
        self.pattern = AckPattern(ack, seed=seed, **ack_kw)
        self.assembler = RxWordAssembler(strict_bad)
        self.auto_overrun_ack = auto_overrun_ack
        self.datagrams: list[RxDatagram] = []
        self.queue: Queue[RxDatagram] | None = None
        self.stats = UserRxStats()
        self._ack = sig("rx_ack")
        self._overrun_ack = sig("rx_overrun_ack")
        self._rd_valid = int_reader(sig("rx_valid"))
        self._rd_data = int_reader(sig("rx_data"))
        self._rd_be = int_reader(sig("rx_byte_enable"))
        self._rd_eof = int_reader(sig("rx_end_of_frame"))
        self._rd_bad = int_reader(sig("rx_bad_frame"))
        self._rd_src_ip = int_reader(sig("rx_source_ip"))
        self._rd_src_port = int_reader(sig("rx_source_port"))
        self._rd_dst_ip = int_reader(sig("rx_dest_ip"))
        self._rd_dst_port = int_reader(sig("rx_dest_port"))
        self._rd_overrun = int_reader(sig("rx_overrun"))
        self._prev_overrun = 0
        self._task: Any = None
        self._cur_ack = self.pattern.next()
        self._ack.value = self._cur_ack
        self._cur_ovr_ack = 0
        self._overrun_ack.value = 0
        if start:
            self.start()

    def on_edge(self) -> None:
        self.sample()

    def _set_ack(self, v: int) -> None:
        if v != self._cur_ack:
            self._ack.value = v
            self._cur_ack = v

    def _set_overrun_ack(self, v: int) -> None:
        if v != self._cur_ovr_ack:
            self._overrun_ack.value = v
            self._cur_ovr_ack = v

    def sample(self) -> None:
        """Process the cycle that ended at this rising edge and set up the next one."""
        st = self.stats
        c = st.cycles
        st.cycles += 1
        if self.in_reset():
            self.assembler = RxWordAssembler(self.assembler.strict_bad)
            self._set_ack(0)
            self._set_overrun_ack(0)
            self._prev_overrun = 0
            return
        try:
            self._sample_port(c)
        except ValueError as exc:  # X/Z on a sampled signal
            raise UserRxProtocolError(f"cycle {c}: unknown value ({exc})") from None
        self._set_ack(self.pattern.next())

    def _sample_port(self, c: int) -> None:
        st = self.stats
        overrun = self._rd_overrun()
        if overrun:
            st.overrun_cycles += 1
            if not self._prev_overrun:
                st.overrun_events += 1
        self._prev_overrun = overrun
        if self._cur_ovr_ack:
            st.overrun_acks += 1
        pulse = int(self.auto_overrun_ack and bool(overrun) and not self._cur_ovr_ack)
        self._set_overrun_ack(pulse)
        if not self._rd_valid():
            return
        st.valid_cycles += 1
        if not self._cur_ack:
            st.held_cycles += 1
            return
        st.words += 1
        d = self.assembler.word(
            self._rd_data(),
            self._rd_be(),
            self._rd_eof(),
            self._rd_bad(),
            self._rd_src_ip(),
            self._rd_src_port(),
            self._rd_dst_ip(),
            self._rd_dst_port(),
            c,
        )
        if d is None:
            return
        st.datagrams += 1
        st.payload_bytes += len(d.payload)
        st.bad_frames += int(d.bad)
        self.datagrams.append(d)
        if self.queue is not None:
            self.queue.put_nowait(d)
