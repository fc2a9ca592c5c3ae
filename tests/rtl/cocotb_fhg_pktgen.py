"""fhg_pktgen (the example design's generator) with its SPEAD framing (fhg_pktgen_spead).

The testbench drives the software registers as the design's sw_regs would and reads the
user-side TX interface beat by beat. Expected payloads are built here with `struct`
alone: the example stream (big-endian 64-bit words, word 0 = n, word k = (n << 10) | k)
and, in SPEAD mode, a SPEAD-64-48 header of seven item pointers before it
(verification/models/spead.py, also `struct` from the specification). The SPEAD
payloads go to $CASPER400G_JOB_OUT (JSON) for spead2 to decode (test_fhg_pktgen.py).
"""

from __future__ import annotations

import json
import os
import random
import struct
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from verification.models import spead

BEAT = 128


def example_payload(n: int, size: int) -> bytes:
    words = (size + 7) // 8
    raw = b"".join(
        struct.pack(">Q", n if k == 0 else ((n << 10) | k) & (2**64 - 1)) for k in range(words)
    )
    return raw[:size]


def spead_payload(n: int, size: int, timestamp: int, channel: int) -> bytes:
    return spead.heap_packet(n, example_payload(n, size), timestamp, channel)


class TxMonitor:
    """Collects the UDP payloads handed to the core (tx_valid beats up to end of frame)."""

    def __init__(self, dut: Any) -> None:
        self.dut = dut
        self.packets: list[bytes] = []
        self._cur = bytearray()
        cocotb.start_soon(self._run())

    async def _run(self) -> None:
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            await ReadOnly()
            if not int(dut.tx_valid.value):
                continue
            data = int(dut.tx_data.value).to_bytes(BEAT, "big")
            enable = int(dut.tx_byte_enable.value)
            self._cur += bytes(b for i, b in enumerate(data) if (enable >> (127 - i)) & 1)
            if int(dut.tx_end_of_frame.value):
                self.packets.append(bytes(self._cur))
                self._cur = bytearray()


async def setup(dut: Any) -> TxMonitor:
    Clock(dut.clk, 2560, unit="ps").start()
    for name, value in (
        ("ctrl", 2), ("period", 0), ("count", 0), ("size", 8192), ("dest_ip", 0x0A000014),
        ("dest_port", 7148), ("spead_ctrl", 0), ("spead_channel", 0), ("spead_ts_step", 4096),
        ("tx_afull", 0), ("tx_overflow", 0),
    ):  # fmt: skip
        getattr(dut, name).value = value
    await ClockCycles(dut.clk, 4)
    dut.ctrl.value = 0
    await ClockCycles(dut.clk, 2)
    return TxMonitor(dut)


async def burst(dut: Any, mon: TxMonitor, size: int, count: int) -> list[bytes]:
    start = len(mon.packets)
    dut.size.value = size
    dut.count.value = count
    await ClockCycles(dut.clk, 1)
    dut.ctrl.value = 1
    for _ in range(count * 80 + 50):
        await RisingEdge(dut.clk)
        if len(mon.packets) >= start + count:
            break
    await ClockCycles(dut.clk, 20)
    dut.ctrl.value = 0
    await ClockCycles(dut.clk, 2)
    got = mon.packets[start:]
    assert len(got) == count, (size, len(got), count)
    return got


SIZES = (8192, 1000, 1, 63, 64, 65, 127, 128, 129, 8191)


@cocotb.test()
async def example_stream_unchanged(dut: Any) -> None:
    """SPEAD off: the example stream, byte for byte, at every size."""
    mon = await setup(dut)
    n = 0
    for size in SIZES:
        for got in await burst(dut, mon, size, 2):
            assert got == example_payload(n, size), f"packet {n} ({size} B)"
            n += 1
    assert int(dut.sent.value) == n


@cocotb.test()
async def spead_heaps(dut: Any) -> None:
    """SPEAD on: each packet one heap — header, heap counter n, timestamp n * step,
    channel — then the example payload; written out for spead2."""
    mon = await setup(dut)
    step, channel = 2048, 0x123
    dut.spead_ctrl.value = 1
    dut.spead_channel.value = channel
    dut.spead_ts_step.value = step
    n = 0
    out = []
    for size in SIZES:
        for got in await burst(dut, mon, size, 3):
            want = spead_payload(n, size, n * step, channel)
            assert len(got) == 64 + size, (n, size, len(got))
            assert got == want, f"heap {n} ({size} B): first difference at byte " + str(
                next(i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b)
            )
            out.append({"n": n, "size": size, "payload": got.hex()})
            n += 1
    path = os.environ.get("CASPER400G_JOB_OUT")
    if path:
        with open(path, "w") as fh:
            json.dump({"step": step, "channel": channel, "packets": out}, fh)


@cocotb.test()
async def mode_follows_the_register_per_packet(dut: Any) -> None:
    """spead_ctrl toggled at random while packets go back to back: every packet is whole
    in one format, and the timestamp counts every packet in either format."""
    mon = await setup(dut)
    rng = random.Random(3)
    dut.spead_ts_step.value = 7
    dut.spead_channel.value = 9
    dut.size.value = 300
    dut.ctrl.value = 1
    while len(mon.packets) < 40:
        dut.spead_ctrl.value = rng.getrandbits(1)
        await ClockCycles(dut.clk, rng.randint(1, 5))
    dut.ctrl.value = 0
    await ClockCycles(dut.clk, 10)
    kinds = []
    for n, got in enumerate(mon.packets):
        if got == example_payload(n, 300):
            kinds.append("example")
        else:
            assert got == spead_payload(n, 300, 7 * n, 9), f"packet {n} is neither format"
            kinds.append("spead")
    assert {"example", "spead"} <= set(kinds), kinds
