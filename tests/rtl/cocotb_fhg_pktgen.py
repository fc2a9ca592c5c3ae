"""fhg_pktgen (the example design's generator) with its SPEAD framing (fhg_pktgen_spead).

The testbench drives the software registers as the design's sw_regs would and reads the
user-side TX interface beat by beat. Expected payloads are built here with `struct`
alone: the example stream (big-endian 64-bit words, word 0 = n, word k = (n << 10) | k)
and, in SPEAD mode, a SPEAD-64-48 header of seven item pointers before it
(verification/models/spead.py, also `struct` from the specification). The SPEAD
payloads go to $CASPER400G_JOB_OUT (JSON) for spead2 to decode (test_fhg_pktgen.py).

The destination table (fhg_dest_table) is checked packet by packet against
verification/models/dest_table.py, its contract's model: the tables switched in, from the
packet numbers the design reports.
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
from verification.models.dest_table import Entry, Routes

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
    """Collects the UDP payloads handed to the core (tx_valid beats up to end of frame)
    and the destination (IP, port) each was handed with."""

    def __init__(self, dut: Any) -> None:
        self.dut = dut
        self.packets: list[bytes] = []
        self.dests: list[tuple[int, int]] = []
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
                self.dests.append((int(dut.tx_dest_ip.value), int(dut.tx_dest_port.value)))
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


# ---------------------------------------------------------------- the destination table

DEFAULT_DEST = (0x0A000014, 7148)  # setup()'s dest_ip / dest_port
ENTRIES = 16
WRITE, SWITCH = 0, 1 << 8  # dest_tbl_ctrl [8]; [23:16] the command's sequence number
REFUSED = 1 << 24  # dest_tbl_status: the last command done ([23:16]) was refused
SETTLE = 64  # fhg_dest_table's default


def ip(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return a << 24 | b << 16 | c << 8 | d


def issue(dut: Any, op: int, index: int = 0) -> int:
    """Put a command in dest_tbl_ctrl with the sequence number after the last one done;
    the word written."""
    seq = (int(dut.dest_tbl_status.value) >> 16 & 0xFF) % 255 + 1
    ctrl = seq << 16 | op | index
    dut.dest_tbl_ctrl.value = ctrl
    return ctrl


def pending(dut: Any, ctrl: int) -> bool:
    return (int(dut.dest_tbl_status.value) >> 16 & 0xFF) != ctrl >> 16 & 0xFF


async def command(dut: Any, op: int, index: int = 0, limit: int = 4000) -> int:
    """One command through dest_tbl_ctrl; waits until the status shows it done, returns
    the status then."""
    ctrl = issue(dut, op, index)
    for _ in range(limit):
        await RisingEdge(dut.clk)
        await ReadOnly()
        if not pending(dut, ctrl):
            status = int(dut.dest_tbl_status.value)
            await RisingEdge(dut.clk)
            return status
    raise AssertionError(f"command {ctrl:#x} not done in {limit} cycles")


async def write_entry(dut: Any, index: int, entry: Entry, skew: int = 0) -> int:
    """Write one entry; with ``skew`` the command arrives ``skew`` cycles before the data,
    as two software registers may cross clocks in either order."""
    address, port, channel = entry
    if skew:
        cmd = cocotb.start_soon(command(dut, WRITE, index))
        await ClockCycles(dut.clk, skew)
    dut.dest_tbl_ip.value = address
    dut.dest_tbl_port.value = channel << 16 | port
    if skew:
        return await cmd
    return await command(dut, WRITE, index)


async def load(dut: Any, entries: list[Entry], skew: int = 0) -> int:
    """Write the entries, switch them in; the first packet number of the new table."""
    for k, entry in enumerate(entries):
        status = await write_entry(dut, k, entry, skew)
        assert not status & REFUSED, (k, hex(status))
    dut.dest_tbl_count.value = len(entries)
    status = await command(dut, SWITCH)
    assert not status & REFUSED and status & 0xFF == len(entries), hex(status)
    assert (status >> 8) & 0xFF == ENTRIES
    return int(dut.dest_tbl_switch.value)


async def sent_through(dut: Any, index: int) -> int:
    """dest_tbl_sent of an entry: its index in dest_tbl_ctrl, the sequence number kept (no
    command)."""
    dut.dest_tbl_ctrl.value = int(dut.dest_tbl_ctrl.value) & ~0xFF | index
    await ClockCycles(dut.clk, 3)
    await ReadOnly()
    value = int(dut.dest_tbl_sent.value)
    await RisingEdge(dut.clk)
    return value


def check_packets(mon: TxMonitor, routes: Routes, step: int | None = None) -> list[int]:
    """Every packet: its number in order (none lost or doubled), destination, and (SPEAD
    heaps: with ``step``) channel and timestamp by the model; the packets per entry index."""
    head = 64 if step is not None else 0
    for n, (got, dest, r) in enumerate(
        zip(mon.packets, mon.dests, routes.routes(len(mon.packets)), strict=True)
    ):
        number = got[head : head + 8]  # fewer bytes in a packet of fewer
        assert number == struct.pack(">Q", n)[: len(number)], f"packet {n}: {number.hex()}"
        assert dest == (r.ip, r.port), f"packet {n} to {dest}, the table says {r}"
        if step is None:
            assert got == example_payload(n, len(got)), f"packet {n}: payload"
        else:
            want = spead_payload(n, len(got) - 64, r.spectrum * step, r.channel)
            assert got == want, f"packet {n}: SPEAD header or payload ({r})"
    return routes.per_entry(len(mon.packets), ENTRIES)


async def table_off(dut: Any, default_channel: int) -> Routes:
    """The table off from packet 0 (the table and its handshake outlive setup's reset: a
    test before may have left one in force); the model of that."""
    for name in ("dest_tbl_ip", "dest_tbl_port", "dest_tbl_count"):
        getattr(dut, name).value = 0
    assert await load(dut, []) == 0
    routes = Routes((*DEFAULT_DEST, default_channel))
    routes.switched(0, [])
    return routes


def random_table(rng: random.Random, size: int) -> list[Entry]:
    hosts = [ip(f"10.0.0.{20 + j}") for j in range(4)]
    groups = [ip("239.2.0.0") + j for j in range(8)] + [ip("239.130.7.9"), ip("224.0.1.200")]
    return [
        (rng.choice(hosts + groups), rng.choice((7148, 7149, 9000)), rng.randrange(1 << 16))
        for _ in range(size)
    ]


@cocotb.test()
async def destination_table_spreads_each_spectrum(dut: Any) -> None:
    """Table off: every packet to the default. Then five entries (multicast groups and
    hosts, one host taking two channel groups): packet k of each spectrum to entry k, with
    its channel and the spectrum's timestamp, across bursts of every size (bursts ending
    mid-spectrum); the per-entry counts."""
    mon = await setup(dut)
    step = 1000
    routes = await table_off(dut, 0x77)
    dut.spead_ctrl.value = 1
    dut.spead_channel.value = 0x77
    dut.spead_ts_step.value = step
    await burst(dut, mon, 300, 3)
    table = [
        (ip("239.2.0.10"), 7148, 0),
        (ip("239.2.0.11"), 7148, 256),
        (ip("10.0.0.21"), 7150, 512),
        (ip("10.0.0.21"), 7150, 768),
        (ip("239.255.0.1"), 9000, 1024),
    ]
    first = await load(dut, table)
    assert first == 3, first  # the generator was idle: at once, before packet 3
    routes.switched(first, table)
    for size in SIZES:
        await burst(dut, mon, size, 7)
    per_entry = check_packets(mon, routes, step)
    assert per_entry[:5] == [14, 14, 14, 14, 14], per_entry
    assert set(mon.dests[3:]) == {e[:2] for e in table}
    for k in range(ENTRIES):
        assert await sent_through(dut, k) == per_entry[k], k
    assert await sent_through(dut, 200) == 0  # no such entry
    assert int(dut.sent.value) == len(mon.packets) == 3 + 7 * len(SIZES)


@cocotb.test()
async def destination_table_switches_mid_stream(dut: Any) -> None:
    """Packets back to back (a heap a cycle at 40 B) while tables of 0 to 16 entries are
    written and switched in, some with the data arriving after the write toggle: every
    packet numbered in order and sent where the table in force at its number says, with
    its channel and its spectrum's timestamp, each switch on a spectrum boundary."""
    mon = await setup(dut)
    rng = random.Random(31)
    step = 3
    routes = await table_off(dut, 5)
    dut.spead_ctrl.value = 1
    dut.spead_channel.value = 5
    dut.spead_ts_step.value = step
    dut.size.value = 40
    dut.ctrl.value = 1
    sizes = (40, 40, 64, 100, 1000, 8192)
    for round_ in range(24):
        size = 0 if round_ in (5, 6) else rng.randrange(17)
        size = {0: 0, 1: 1, 2: ENTRIES}.get(round_ % 8, size)
        table = random_table(rng, size)
        dut.size.value = rng.choice(sizes)
        before = len(mon.packets)
        first = await load(dut, table, skew=rng.choice((0, 0, 5, SETTLE - 8)))
        routes.switched(first, table)
        assert len(mon.packets) > before  # it ran while the table was rewritten
    dut.ctrl.value = 0
    await ClockCycles(dut.clk, 200)
    assert len(mon.packets) > 5000, len(mon.packets)
    check_packets(mon, routes, step)
    assert int(dut.sent.value) == len(mon.packets)
    dut._log.info(
        "%d packets, %d tables switched in mid-stream (%s entries)",
        len(mon.packets),
        len(routes.tables) - 1,
        [len(t) for t in routes.tables[1:]],
    )


@cocotb.test()
async def destination_table_waits_for_a_spectrum_and_refuses_bad_commands(dut: Any) -> None:
    """A switch waits for the spectrum to end (the generator stopped mid-spectrum) and a
    new command replaces it; an entry index or a count beyond the table is refused, the
    table in force unchanged; a generator reset lands a pending switch at packet 0; a
    command word of sequence number 0 (the register's reset value) does nothing; held in
    reset, the generator takes a switch at once."""
    mon = await setup(dut)
    routes = await table_off(dut, 0)
    t1 = [(ip("239.2.0.1"), 7148, 1), (ip("239.2.0.2"), 7148, 2), (ip("239.2.0.3"), 7148, 3)]
    t2 = [(ip("10.0.0.30"), 7000, 7), (ip("10.0.0.31"), 7001, 8)]
    routes.switched(await load(dut, t1), t1)
    await burst(dut, mon, 200, 4)  # stops in the second spectrum, after its first packet
    for k, entry in enumerate(t2):
        await write_entry(dut, k, entry)
    dut.dest_tbl_count.value = len(t2)
    ctrl = issue(dut, SWITCH)
    await ClockCycles(dut.clk, 10 * SETTLE)
    assert pending(dut, ctrl) and int(dut.dest_tbl_status.value) & 0xFF == 3
    await burst(dut, mon, 200, 2)  # packets 4, 5 end the spectrum: the switch lands
    assert not pending(dut, ctrl) and int(dut.dest_tbl_status.value) & 0xFF == 2
    routes.switched(int(dut.dest_tbl_switch.value), t2)
    assert routes.starts[-1] == 6
    await burst(dut, mon, 200, 3)  # stops mid-spectrum again

    # A switch not done yet is replaced by the next command: a write into t1's copy.
    dut.dest_tbl_count.value = 3
    ctrl = issue(dut, SWITCH)
    await ClockCycles(dut.clk, 3 * SETTLE)
    assert pending(dut, ctrl)
    status = await write_entry(dut, 1, (ip("239.9.9.9"), 7777, 99))
    assert not status & REFUSED and status & 0xFF == 2, hex(status)
    t1b = [t1[0], (ip("239.9.9.9"), 7777, 99), t1[2]]

    # Refused: entry 16 of 16, a table of 17; t2 stays in force.
    status = await write_entry(dut, ENTRIES, (ip("10.0.0.99"), 1, 1))
    assert status & REFUSED, hex(status)
    dut.dest_tbl_count.value = ENTRIES + 1
    status = await command(dut, SWITCH)
    assert status & REFUSED and status & 0xFF == 2, hex(status)
    await burst(dut, mon, 200, 3)  # packets 9 .. 11 end the spectrum again

    # A sequence number of 0 is no command, whatever else the word says.
    dut.dest_tbl_count.value = 3
    dut.dest_tbl_ctrl.value = SWITCH
    await ClockCycles(dut.clk, 3 * SETTLE)
    assert int(dut.dest_tbl_status.value) & 0xFF == 2

    status = await command(dut, SWITCH)  # t1b, at once: the generator is between spectra
    assert not status & REFUSED and status & 0xFF == 3, hex(status)
    routes.switched(int(dut.dest_tbl_switch.value), t1b)
    assert routes.starts[-1] == 12
    await burst(dut, mon, 200, 5)
    per_entry = check_packets(mon, routes)
    assert per_entry[:3] == [2 + 3 + 2, 2 + 3 + 2, 2 + 0 + 1], per_entry  # t1, t2, t1b

    # Stopped mid-spectrum again; a pending switch (to t2's copy with count 0: the table
    # off) lands with the generator's reset, at packet 0.
    dut.dest_tbl_count.value = 0
    ctrl = issue(dut, SWITCH)
    await ClockCycles(dut.clk, 3 * SETTLE)
    assert pending(dut, ctrl)
    dut.ctrl.value = 2
    await ClockCycles(dut.clk, 4)
    dut.ctrl.value = 0
    await ClockCycles(dut.clk, 10)
    assert not pending(dut, ctrl) and int(dut.dest_tbl_status.value) & 0xFF == 0
    assert int(dut.dest_tbl_switch.value) == 0
    assert [await sent_through(dut, k) for k in range(3)] == [0, 0, 0]  # reset
    start = len(mon.packets)
    await burst(dut, mon, 200, 2)
    assert mon.dests[start:] == [DEFAULT_DEST, DEFAULT_DEST]

    # While the generator is held in reset a switch lands at once, for packet 0.
    dut.ctrl.value = 2
    routes = Routes((*DEFAULT_DEST, 0))
    routes.switched(await load(dut, t2), t2)
    assert routes.starts == [0]
    dut.ctrl.value = 0
    await ClockCycles(dut.clk, 2)
    mon.packets.clear()
    mon.dests.clear()
    await burst(dut, mon, 200, 3)
    check_packets(mon, routes)
