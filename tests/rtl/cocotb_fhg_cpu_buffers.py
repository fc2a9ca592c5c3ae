"""The CPU buffers alone: fhg_tx_cpu (CPU TX buffer, 0x4000) and fhg_rx_cpu (CPU RX
buffer, 0x8000), against their contracts (docs/design/core.md §4, docs/registers.md).

TX: software's big-endian words go in through the register block's strobes; a length
written with cpu_tx_en set sends the frame once. The packer's side, modelled here, takes
the words one per cycle with random stalls: the frame must come out in wire order, padded
with zeros to 60 bytes, every byte past its length zero, with the segment count and `mty`
of that padded length, and `busy` must fall once it has left. Disabled, too short and too
long requests are refused (busy falls, stat_refused pulses, nothing is offered); a length
written while busy is ignored.

RX: the lane's side, modelled here, writes a frame's 1024-bit words (one per cycle, the
last two together when it ends so), then `placed` with its length; software must see
`ready` and the length, read the frame back as big-endian words, find its writes ignored,
and `ack` must reach the lane as `released`, clearing `ready` and the length.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from verification.models.clocked import ClockedTask, PulseCounter

AXIL_PERIOD_PS = 4000  # 250 MHz
MAC_PERIOD_PS = 2557  # 391.03 MHz
WORD = 128
MIN_FRAME = 60
MAX_LEN = 16368  # the longest CPU frame: 1023 segments (cpu_tx_len)
BUF_BYTES = 16384


async def start(dut) -> None:  # noqa: ANN001
    cocotb.start_soon(Clock(dut.axil_clk, AXIL_PERIOD_PS, unit="ps").start())
    cocotb.start_soon(Clock(dut.mac_clk, MAC_PERIOD_PS, unit="ps").start())
    for name in ("tx_req", "tx_len_write", "tx_cpu_tx_en", "cpu_pop", "cpu_done", "rx_we0",
                 "rx_we1", "rx_placed", "rx_req", "rx_ack"):  # fmt: skip
        getattr(dut, name).value = 0
    dut.axil_rst.value = 1
    dut.mac_rst.value = 1
    await ClockCycles(dut.axil_clk, 8)
    dut.axil_rst.value = 0
    dut.mac_rst.value = 0
    await ClockCycles(dut.axil_clk, 8)


async def strobe(dut, side: str, addr: int, data: int | None = None) -> int:  # noqa: ANN001
    """One register-block strobe on the ``side`` (tx/rx) buffer: a write of ``data`` or a
    read; returns the read word (0 for a write) at its acknowledge."""
    req, is_wr = getattr(dut, f"{side}_req"), getattr(dut, f"{side}_req_is_wr")
    req.value = 1
    is_wr.value = int(data is not None)
    getattr(dut, f"{side}_addr").value = addr
    if data is not None:
        dut.tx_wr_data.value = data
    await RisingEdge(dut.axil_clk)
    req.value = 0
    await RisingEdge(dut.axil_clk)
    ack = getattr(dut, f"{side}_{'wr' if data is not None else 'rd'}_ack")
    assert int(ack.value), f"{side} buffer: no acknowledge one cycle after the request"
    return 0 if data is not None else int(getattr(dut, f"{side}_rd_data").value)


def be_words(frame: bytes) -> list[int]:
    """The frame as software writes it: big-endian 32-bit words, the last zero padded."""
    padded = frame + bytes(-len(frame) % 4)
    return [int.from_bytes(padded[i : i + 4], "big") for i in range(0, len(padded), 4)]


class PackerSide(ClockedTask):
    """Takes CPU frames off fhg_tx_cpu as fhg_tx_ctl_arb and the packer do: from the cycle
    after cpu_valid a word per cycle with cpu_pop (none in a random share of cycles), then
    cpu_done. Each edge closes a cycle: a word is taken in a cycle with cpu_pop high."""

    def __init__(self, dut, rng: random.Random, stall: float) -> None:  # noqa: ANN001
        self.attach(dut, "", dut.mac_clk, "mac_clk", dut.mac_rst, True)
        self.d, self.rng, self.stall = dut, rng, stall
        self.frames: list[tuple[int, int, bytes]] = []  # (nseg, mty, bytes of the words)
        self._left = 0  # words of the frame still to take; 0: between frames
        self._frame: tuple[int, int, bytearray] | None = None
        dut.cpu_pop.value = 0
        dut.cpu_done.value = 0
        self.start()

    def on_edge(self) -> None:
        d = self.d
        done = 0
        if self._frame is not None and int(d.cpu_pop.value):
            assert int(d.cpu_word_valid.value), "cpu_pop in a cycle without a word"
            self._frame[2].extend(int(d.cpu_word.value).to_bytes(WORD, "little"))
            self._left -= 1
            if self._left == 0:
                nseg, mty, got = self._frame
                self.frames.append((nseg, mty, bytes(got)))
                self._frame = None
                done = 1
        elif self._frame is None and not int(d.cpu_done.value) and int(d.cpu_valid.value):
            nseg = int(d.cpu_nseg.value)
            self._frame = (nseg, int(d.cpu_mty.value), bytearray())
            self._left = -(-nseg // 8)
        d.cpu_done.value = done
        d.cpu_pop.value = int(self._frame is not None and self.rng.random() >= self.stall)


async def send_cpu_frame(
    dut,  # noqa: ANN001
    frame: bytes,
    enable: bool = True,
    length: int | None = None,
) -> None:
    """Software's sequence: the words, cpu_tx_en, then the length (one register write;
    ``length`` when it is not the frame's)."""
    for k, w in enumerate(be_words(frame)):
        await strobe(dut, "tx", 4 * k, w)
    dut.tx_cpu_tx_en.value = int(enable)
    await RisingEdge(dut.axil_clk)
    dut.tx_len_value.value = len(frame) if length is None else length
    dut.tx_len_write.value = 1
    await RisingEdge(dut.axil_clk)
    dut.tx_len_write.value = 0


async def wait_not_busy(dut, limit: int = 20000) -> None:  # noqa: ANN001
    await ClockCycles(dut.axil_clk, 2)
    for _ in range(limit):
        if not int(dut.tx_busy.value):
            return
        await RisingEdge(dut.axil_clk)
    raise AssertionError("cpu_tx busy never fell")


def expected_words(frame: bytes) -> tuple[int, int, bytes]:
    padded = max(len(frame), MIN_FRAME)
    nseg = -(-padded // 16)
    words = -(-nseg // 8)
    body = frame + bytes(words * WORD - len(frame))
    return nseg, (16 * nseg - padded) % 16, body


@cocotb.test()
async def cpu_tx_frames_leave_as_written(dut) -> None:  # noqa: ANN001
    """Lengths at every boundary (14, the 60-byte pad, word edges, 16384), random bytes:
    each frame once, in wire order, padded, its tail zero; software reads back its words."""
    await start(dut)
    rng = random.Random(31)
    packer = PackerSide(dut, rng, stall=0.3)
    lengths = [14, 59, 60, 61, 127, 128, 129, 255, 1514, 9018, MAX_LEN, rng.randint(14, 4000)]
    for n in lengths:
        frame = rng.randbytes(n)
        before = len(packer.frames)
        await send_cpu_frame(dut, frame)
        await wait_not_busy(dut)
        assert len(packer.frames) == before + 1, f"{n} B: {len(packer.frames) - before} frames"
        assert packer.frames[-1] == expected_words(frame), f"{n}-byte frame differs"
        for k in sorted({0, len(frame) // 8, (len(frame) - 1) // 4}):
            assert await strobe(dut, "tx", 4 * k) == be_words(frame)[k], f"{n} B: word {k}"


@cocotb.test()
async def cpu_tx_refusals_and_lengths_while_busy(dut) -> None:  # noqa: ANN001
    """Disabled, 13 bytes, one byte over the longest frame and the buffer's size: refused,
    counted, nothing offered, busy falls. A second length written while a frame is on its
    way is ignored."""
    await start(dut)
    rng = random.Random(32)
    pulses = PulseCounter(dut, ("stat_refused",), dut.mac_clk)
    packer = PackerSide(dut, rng, stall=0.9)
    for frame, enable, length in ((rng.randbytes(100), False, None),
                                  (rng.randbytes(13), True, None),
                                  (rng.randbytes(64), True, MAX_LEN + 1),
                                  (rng.randbytes(64), True, BUF_BYTES)):  # fmt: skip
        await send_cpu_frame(dut, frame, enable, length)
        await wait_not_busy(dut)
    await ClockCycles(dut.mac_clk, 20)
    assert pulses.counts["stat_refused"] == 4 and not packer.frames, (pulses.counts, packer)
    # A long frame taken slowly, and a second length while it is busy.
    frame = rng.randbytes(3000)
    await send_cpu_frame(dut, frame)
    await ClockCycles(dut.axil_clk, 4)
    assert int(dut.tx_busy.value)
    dut.tx_len_value.value = 64
    dut.tx_len_write.value = 1
    await RisingEdge(dut.axil_clk)
    dut.tx_len_write.value = 0
    await wait_not_busy(dut)
    await ClockCycles(dut.axil_clk, 50)
    assert packer.frames == [expected_words(frame)], f"{len(packer.frames)} frames"
    assert pulses.counts["stat_refused"] == 4


async def lane_writes(dut, frame: bytes, rng: random.Random) -> None:  # noqa: ANN001
    """The lane's side: the frame's words in order (idle cycles between at random; the last
    two in one cycle when the frame ends so), then `placed` the cycle after the last."""
    rows = [frame[i : i + WORD] for i in range(0, len(frame), WORD)]
    r = 0
    while r < len(rows):
        await RisingEdge(dut.mac_clk)
        dut.rx_we0.value = 0
        dut.rx_we1.value = 0
        if rng.random() < 0.3:
            continue
        dut.rx_we0.value = 1
        dut.rx_row0.value = r
        dut.rx_data0.value = int.from_bytes(rows[r].ljust(WORD, b"\0"), "little")
        if r == len(rows) - 2 and rng.random() < 0.5:
            dut.rx_we1.value = 1
            dut.rx_row1.value = r + 1
            dut.rx_data1.value = int.from_bytes(rows[r + 1].ljust(WORD, b"\0"), "little")
            r += 1
        r += 1
    await RisingEdge(dut.mac_clk)
    dut.rx_we0.value = 0
    dut.rx_we1.value = 0
    dut.rx_placed.value = 1
    dut.rx_placed_len.value = len(frame)
    await RisingEdge(dut.mac_clk)
    dut.rx_placed.value = 0


@cocotb.test()
async def cpu_rx_frames_reach_software_whole(dut) -> None:  # noqa: ANN001
    """Frames of 60 to 16383 bytes (the 14-bit length's largest): ready and the length once
    placed, the bytes as big-endian words, writes ignored, and the acknowledge releases the
    buffer."""
    await start(dut)
    rng = random.Random(33)
    pulses = PulseCounter(dut, ("rx_released",), dut.mac_clk)
    for n in [60, 64, 127, 128, 129, 256, 1514, 9018, BUF_BYTES - 1, rng.randint(60, 3000)]:
        frame = rng.randbytes(n)
        assert not int(dut.rx_ready.value) and int(dut.rx_len.value) == 0
        await lane_writes(dut, frame, rng)
        for _ in range(100):
            await RisingEdge(dut.axil_clk)
            if int(dut.rx_ready.value):
                break
        assert int(dut.rx_ready.value), f"{n} B: ready never rose"
        assert int(dut.rx_len.value) == n
        words = be_words(frame)
        picks = sorted({0, 1, len(words) // 2, len(words) - 1, *rng.sample(range(len(words)), 8)})
        for k in picks:
            assert await strobe(dut, "rx", 4 * k) == words[k], f"{n} B: word {k}"
        await strobe(dut, "rx", 0, 0xDEADBEEF)  # software cannot write the RX buffer
        assert await strobe(dut, "rx", 0) == words[0]
        before = pulses.counts["rx_released"]
        dut.rx_ack.value = 1
        await RisingEdge(dut.axil_clk)
        dut.rx_ack.value = 0
        await ClockCycles(dut.mac_clk, 20)
        released = pulses.counts["rx_released"] - before
        assert released == 1, f"{n} B: released {released} times"
        assert not int(dut.rx_ready.value) and int(dut.rx_len.value) == 0
