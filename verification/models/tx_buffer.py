"""The MAC side of the core's TX buffer, for benches of its writers (docs/design/core.md §2).

Written from the layout the contract describes, independently of the RTL: the buffer is a
stream of 16-byte segments, eight to a 1024-bit word (byte x of a word in bits 8x+7:8x),
even words in bank 0 and odd words in bank 1 at address word / 2. A frame starts on a
segment boundary with a 42-byte gap the packer fills with the Ethernet/IPv4/UDP header;
its descriptor ``{start segment, UDP payload length, destination IP, destination port, UDP
checksum}`` follows once it is written whole. Words below ``final_word`` are never written
again, so only those are read; ``rd_word`` tells the writer the oldest word still needed.
Word and segment numbers carry a wrap bit above the buffer's address bits.

:class:`TxBufferReader` stands in for fhg_tx_path's buffer RAMs, descriptor queue and
packer around a writer under test: it stores the writes, queues the descriptors, reports
the queue's fill, and reads the frames out in order, one final word per cycle at most as
the packer does, stalling at random when asked to.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from .clocked import ClockedTask, int_reader

WORD_BYTES = 128
SEG_BYTES = 16
HEADER_GAP = 42
LEN_W = 14


@dataclass(frozen=True)
class Descriptor:
    start_seg: int  # wrap bit included
    length: int  # UDP payload bytes after the header gap
    dst_ip: int
    dst_port: int
    checksum: int


@dataclass(frozen=True)
class BufferFrame:
    desc: Descriptor
    body: bytes  # the descriptor's `length` bytes after the header gap
    end_seg: int  # the segment after the frame's last byte, wrap bit included
    cycle: int  # reader cycle it was taken out in


class TxBufferReader(ClockedTask):
    """The buffer and its reader on ``<prefix>wr0_*``, ``wr1_*``, ``final_word``,
    ``desc_valid``/``desc_data`` (in) and ``rd_word``, ``desc_used`` (out).

    ``stall_prob`` reads no word in that fraction of cycles, at random (seeded); :meth:`hold`
    stops the reader until :meth:`release`. ``rd_word`` is the next word to read: the word a
    frame ends in stays needed until the next frame has been read from it.
    """

    def __init__(
        self,
        dut: Any,
        buf_words: int,
        prefix: str = "",
        clock: Any = None,
        *,
        stall_prob: float = 0.0,
        seed: int = 0,
        reset: Any = None,
        start: bool = True,
    ) -> None:
        if buf_words < 4 or buf_words & (buf_words - 1):
            raise ValueError(f"buffer of {buf_words} words: not a power of two >= 4")
        sig = self.attach(dut, prefix, clock, "user_clk", reset, True)
        self.buf_words = buf_words
        aw = buf_words.bit_length() - 1
        self.wp_mod = 1 << (aw + 1)  # word numbers: address bits and the wrap bit
        self.sp_mod = self.wp_mod * (WORD_BYTES // SEG_BYTES)
        self._ports = [
            (bank, int_reader(sig(f"wr{bank}_en")), int_reader(sig(f"wr{bank}_addr")),
             sig(f"wr{bank}_data"))
            for bank in (0, 1)
        ]  # fmt: skip
        self._final = int_reader(sig("final_word"))
        self._dvalid = int_reader(sig("desc_valid"))
        self._ddata = int_reader(sig("desc_data"))
        self._rd_word = sig("rd_word")
        self._used = sig("desc_used")
        self.stall_prob = stall_prob
        self._rng = random.Random(seed)
        self.mem = [bytes(WORD_BYTES)] * buf_words
        self.queue: deque[Descriptor] = deque()
        self.frames: list[BufferFrame] = []
        self.rd_word = 0
        self._next: int | None = None  # next word of the head frame to read
        self._got: list[bytes] = []  # the head frame's words read so far
        self.cycle = 0
        self.max_used = 0
        self._held = False
        self._drive()
        if start:
            self.start()

    def hold(self) -> None:
        self._held = True

    def release(self) -> None:
        self._held = False

    def decode(self, value: int) -> Descriptor:
        sp_bits = self.sp_mod.bit_length() - 1
        csum = value & 0xFFFF
        port = (value >> 16) & 0xFFFF
        ip = (value >> 32) & 0xFFFF_FFFF
        length = (value >> 64) & ((1 << LEN_W) - 1)
        seg = (value >> (64 + LEN_W)) & ((1 << sp_bits) - 1)
        return Descriptor(seg, length, ip, port, csum)

    def is_final(self, word: int) -> bool:
        """``word`` lies below ``final_word`` (modulo the wrap)."""
        return (self._final() - 1 - word) % self.wp_mod < self.wp_mod // 2

    def _span(self, d: Descriptor) -> tuple[int, int]:
        """The frame's first and last byte in the segment stream (modulo the wrap)."""
        first = d.start_seg * SEG_BYTES + HEADER_GAP
        return first, first + d.length - 1

    def _read_word(self) -> None:
        """Read the head frame's next word if it is final; the frame is taken with its last."""
        d = self.queue[0]
        first, last = self._span(d)
        w_first, w_last = first // WORD_BYTES, last // WORD_BYTES
        if self._next is None:
            self._next, self._got = w_first, []
        word = self._next % self.wp_mod
        self.rd_word = word
        if not self.is_final(word):
            return
        self._got.append(self.mem[word % self.buf_words])
        self._next += 1
        if self._next <= w_last:
            self.rd_word = self._next % self.wp_mod
            return
        raw = b"".join(self._got)
        off = first - w_first * WORD_BYTES
        end_seg = (-(-(last + 1) // SEG_BYTES)) % self.sp_mod
        self.frames.append(BufferFrame(d, raw[off : off + d.length], end_seg, self.cycle))
        self.queue.popleft()
        self._next = None

    def on_edge(self) -> None:
        self.cycle += 1
        if self.in_reset():
            self.queue.clear()
            self.rd_word = 0
            self._next = None
            self._drive()
            return
        for bank, en, addr, data in self._ports:
            if en():
                self.mem[2 * addr() + bank] = int(data.value).to_bytes(WORD_BYTES, "little")
        if self._dvalid():
            self.queue.append(self.decode(self._ddata()))
        self.max_used = max(self.max_used, len(self.queue))
        if self.queue and not self._held and not (self._rng.random() < self.stall_prob):
            self._read_word()
        self._drive()

    def _drive(self) -> None:
        self._rd_word.value = self.rd_word
        self._used.value = len(self.queue)
