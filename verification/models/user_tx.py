"""Driver for the core's user TX port (docs/design/core.md §1).

Word format: 128 bytes per ``tx_data[1023:0]`` word, the first byte on the wire in
``tx_data[1023:1016]``; ``tx_byte_enable[127:0]`` marks the valid bytes of the last word,
contiguous from the MSB end (bit 127 <-> ``tx_data[1023:1016]``) and is all-ones on every
other word. ``tx_dest_ip``/``tx_dest_port`` are sampled with ``tx_end_of_frame``.

:func:`payload_to_words` / :func:`words_to_payload` are the pure conversions.
:class:`UserTxDriver` is the cocotb adapter; its per-cycle decision (:meth:`UserTxDriver.tick`)
is synchronous so it can be exercised without a simulator.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .clocked import ClockedDriver, int_reader

if TYPE_CHECKING:
    from cocotb.handle import SimHandleBase
    from cocotb.triggers import Event

WORD_BYTES = 128
WORD_BITS = WORD_BYTES * 8
ALL_BYTES = (1 << WORD_BYTES) - 1


def byte_enable_for(n: int) -> int:
    """Byte-enable of a word whose first ``n`` bytes are valid (MSB-end contiguous)."""
    if not 1 <= n <= WORD_BYTES:
        raise ValueError(f"a word holds 1..{WORD_BYTES} valid bytes, got {n}")
    return ((1 << n) - 1) << (WORD_BYTES - n)


def payload_to_words(payload: bytes) -> list[tuple[int, int]]:
    """Split a UDP payload into ``(tx_data, tx_byte_enable)`` words.

    Unused bytes of the last word are zero.
    """
    if not payload:
        raise ValueError("the user port cannot express an empty datagram")
    words = []
    for off in range(0, len(payload), WORD_BYTES):
        chunk = payload[off : off + WORD_BYTES]
        n = len(chunk)
        data = int.from_bytes(chunk, "big") << (8 * (WORD_BYTES - n))
        words.append((data, byte_enable_for(n)))
    return words


def valid_bytes(byte_enable: int) -> int:
    """Number of valid bytes in a byte-enable; raises if they are not MSB-contiguous."""
    if not 0 < byte_enable <= ALL_BYTES:
        raise ValueError(f"byte enable {byte_enable:#x} selects no byte or is too wide")
    n = byte_enable.bit_count()
    if byte_enable != byte_enable_for(n):
        raise ValueError(f"byte enable {byte_enable:#034x} is not contiguous from the MSB end")
    return n


def words_to_payload(words: list[tuple[int, int]]) -> bytes:
    """Inverse of :func:`payload_to_words`; checks the byte-enable rules."""
    if not words:
        raise ValueError("no words")
    out = bytearray()
    last = len(words) - 1
    for idx, (data, be) in enumerate(words):
        if not 0 <= data < 1 << WORD_BITS:
            raise ValueError(f"word {idx}: data wider than {WORD_BITS} bits")
        if idx != last and be != ALL_BYTES:
            raise ValueError(f"word {idx}: byte enable must be all-ones before the last word")
        n = valid_bytes(be)
        out += data.to_bytes(WORD_BYTES, "big")[:n]
    return bytes(out)


@dataclass
class UserTxStats:
    frames: int = 0
    words: int = 0
    payload_bytes: int = 0
    cycles: int = 0
    idle_cycles: int = 0  # tx_valid low
    afull_cycles: int = 0  # held between frames by tx_afull


class _Job:
    __slots__ = ("done", "dst_ip", "dst_port", "payload", "words")

    def __init__(
        self, payload: bytes, dst_ip: int, dst_port: int, done: Event | None = None
    ) -> None:
        if not 0 <= dst_ip <= 0xFFFFFFFF:
            raise ValueError(f"dst_ip {dst_ip:#x} is not 32-bit")
        if not 0 <= dst_port <= 0xFFFF:
            raise ValueError(f"dst_port {dst_port} is not 16-bit")
        self.payload = payload
        self.words = payload_to_words(payload)
        self.dst_ip = dst_ip
        self.dst_port = dst_port
        self.done = done


class UserTxDriver(ClockedDriver):
    """Streams datagrams into ``<prefix>tx_*`` of the DUT on ``clock``.

    ``idle_prob`` inserts seeded random idle cycles (``tx_valid`` low) between frames and,
    with ``idle_in_frame``, between the words of a frame; 0 streams back to back. A new
    frame never starts in a cycle after one in which ``tx_afull`` was seen high; a frame
    already started is finished. Outside the final word ``tx_dest_ip``/``tx_dest_port``
    carry the complement of the real values, so a core that samples them at the wrong time
    sends to a wrong address instead of passing by luck.
    """

    def __init__(
        self,
        dut: Any,  # a cocotb HierarchyObject: its signals are dynamic attributes
        prefix: str = "",
        clock: SimHandleBase | None = None,
        *,
        idle_prob: float = 0.0,
        idle_in_frame: bool = True,
        seed: int = 0,
        reset: SimHandleBase | None = None,
        reset_active_high: bool = True,
        start: bool = True,
    ) -> None:
        sig = self.attach(dut, prefix, clock, "user_clk", reset, reset_active_high)
        self._data = sig("tx_data")
        self._valid = sig("tx_valid")
        self._be = sig("tx_byte_enable")
        self._ip = sig("tx_dest_ip")
        self._port = sig("tx_dest_port")
        self._eof = sig("tx_end_of_frame")
        self._rd_afull = int_reader(sig("tx_afull"))
        self.idle_prob = idle_prob
        self.idle_in_frame = idle_in_frame
        self._rng = random.Random(seed)
        self._jobs: deque[_Job] = deque()
        self._cur: _Job | None = None
        self._word = 0
        self._valid_now = 0
        self._be_now = -1
        self.stats = UserTxStats()
        self._task: Any = None
        self._valid.value = 0
        self._eof.value = 0
        self._be.value = ALL_BYTES
        self._be_now = ALL_BYTES
        if start:
            self.start()

    @property
    def pending(self) -> int:
        """Frames queued or in flight."""
        return len(self._jobs) + (self._cur is not None)

    def send_nowait(self, payload: bytes, dst_ip: int, dst_port: int) -> None:
        """Queue a datagram for the background stream."""
        self._jobs.append(_Job(payload, dst_ip, dst_port))

    async def send(self, payload: bytes, dst_ip: int, dst_port: int) -> None:
        """Queue a datagram and return once its last word has been driven."""
        from cocotb.triggers import Event

        done = Event()
        self._jobs.append(_Job(payload, dst_ip, dst_port, done))
        await done.wait()

    def busy(self) -> bool:
        """Datagrams are still queued (``await wait_idle()`` for the end)."""
        return bool(self.pending)

    def on_edge(self) -> None:
        self.tick()

    def _idle(self) -> None:
        if self._valid_now:
            self._valid.value = 0
            self._eof.value = 0
            self._valid_now = 0
        self.stats.idle_cycles += 1

    def tick(self) -> None:
        """Decide what to present in the cycle that starts at this rising edge."""
        st = self.stats
        st.cycles += 1
        if self.in_reset():
            # The core's reset flushes a partly written frame: send it again from its start.
            if self._cur is not None:
                self._jobs.appendleft(self._cur)
                self._cur = None
            self._idle()
            return
        job = self._cur
        if job is None:
            # Between frames: tx_afull as sampled at this edge holds the next frame back.
            if self._jobs and self._rd_afull():
                st.afull_cycles += 1
                self._idle()
                return
            if not self._jobs or (self.idle_prob and self._rng.random() < self.idle_prob):
                self._idle()
                return
            job = self._cur = self._jobs.popleft()
            self._word = 0
        elif self.idle_in_frame and self.idle_prob and self._rng.random() < self.idle_prob:
            self._idle()
            return
        data, be = job.words[self._word]
        self._data.value = data
        if be != self._be_now:
            self._be.value = be
            self._be_now = be
        self._word += 1
        last = self._word == len(job.words)
        if last:
            self._ip.value = job.dst_ip
            self._port.value = job.dst_port
        elif self._word == 1:
            self._ip.value = job.dst_ip ^ 0xFFFFFFFF
            self._port.value = job.dst_port ^ 0xFFFF
        self._eof.value = int(last)
        if not self._valid_now:
            self._valid.value = 1
            self._valid_now = 1
        st.words += 1
        if last:
            st.frames += 1
            st.payload_bytes += len(job.payload)
            self._cur = None
            if job.done is not None:
                job.done.set()
            if not self._jobs:
                self.went_idle()
