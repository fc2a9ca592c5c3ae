"""cocotb tests of the clock-crossing and RAM primitives through ``fhg_cdc_tb``.

Every test runs two free-running clocks with non-harmonic periods and random start phases:
clk_a drives the source/write side of each primitive and clk_b the destination/read side.
Inputs are driven and outputs sampled on falling edges, so each value seen in Python is the
one the registers settled to after the preceding rising edge, and each value driven is the
one the next rising edge captures. Expected behaviour comes from small Python models written
from each module's header contract, never from the RTL itself.
"""

from __future__ import annotations

import bisect
import random
from collections import deque
from collections.abc import Callable

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer
from cocotb.utils import get_sim_time

STAGES = 3  # fhg_cdc_tb's synchroniser depth

# Clock periods in ps (even, so both half periods are whole picoseconds).
USER_PS = 2560  # 390.625 MHz user clock
MAC_PS = 2558  # ~391 MHz MAC clock, slightly faster and drifting against the user clock
AXI250_PS = 4000  # 250 MHz AXI clock
AXI100_PS = 10000  # 100 MHz AXI clock: about 4x slower than the MAC clock

FIFO_DEPTH = 8
SDP_WORDS = 64
TDP_WORDS = 32
CFG_RST_VAL = 0x5A5A_0000_C3C3


def _now() -> int:
    return int(get_sim_time("ps"))


async def _start_clock(sig, period_ps: int, phase_ps: int) -> None:  # noqa: ANN001
    await Timer(phase_ps, "ps")
    Clock(sig, period_ps, "ps").start()


_INPUTS = [
    "sb_d",
    "fifo_wr_en",
    "fifo_wr_data",
    "fifo_rd_ready",
    "ps_pulse_a",
    "sdp_wr_en",
    "sdp_wr_addr",
    "sdp_wr_data",
    "sdp_rd_en",
    "sdp_rd_addr",
    "tdp_a_en",
    "tdp_a_we",
    "tdp_a_addr",
    "tdp_a_wdata",
    "tdp_b_en",
    "tdp_b_we",
    "tdp_b_addr",
    "tdp_b_wdata",
    "cd_incr",
    "cs_src",
]


async def _setup(dut, period_a: int, period_b: int, rng: random.Random) -> None:  # noqa: ANN001
    """Zero the inputs, start both clocks at random phases, and run both resets together."""
    for name in _INPUTS:
        getattr(dut, name).value = 0
    dut.rst_a.value = 1
    dut.rst_b.value = 1
    dut.clk_a.value = 0
    dut.clk_b.value = 0
    cocotb.start_soon(_start_clock(dut.clk_a, period_a, rng.randrange(period_a)))
    cocotb.start_soon(_start_clock(dut.clk_b, period_b, rng.randrange(period_b)))
    await Timer(8 * max(period_a, period_b), "ps")
    await FallingEdge(dut.clk_a)
    dut.rst_a.value = 0
    await FallingEdge(dut.clk_b)
    dut.rst_b.value = 0


async def _cycles(clk, n: int) -> None:  # noqa: ANN001
    for _ in range(n):
        await FallingEdge(clk)


def _u(sig) -> int:  # noqa: ANN001
    return int(sig.value)


# --------------------------------------------------------------------------- fhg_sync_bits


@cocotb.test()
async def sync_bits_latency_is_stages(dut) -> None:  # noqa: ANN001
    """sb_q after a clk_b edge equals sb_d as sampled STAGES-1 clk_b edges earlier."""
    rng = random.Random(11)
    half_b = MAC_PS // 2
    await _setup(dut, USER_PS, MAC_PS, rng)
    changes: list[tuple[int, int]] = [(0, 0)]  # (time the value settles, value)
    done = False

    async def source() -> None:
        gray_step = 0
        while not done:
            await FallingEdge(dut.clk_a)
            if rng.random() < 0.4:
                gray_step = (gray_step + 1) % 16
                value = gray_step ^ (gray_step >> 1)
                dut.sb_d.value = value
                changes.append((_now(), value))

    def d_at(t: int) -> int:
        times = [c[0] for c in changes]
        return changes[bisect.bisect_right(times, t) - 1][1]

    cocotb.start_soon(source())
    edges: list[int] = []
    checked = 0
    for _ in range(600):
        await FallingEdge(dut.clk_b)
        edges.append(_now() - half_b)
        if len(edges) < STAGES + 2:
            continue
        sample_edge = edges[-STAGES]
        if any(abs(t - sample_edge) < 1 for t, _ in changes[-8:]):
            continue  # source changed exactly on the sampling edge: either value is right
        got, want = _u(dut.sb_q), d_at(sample_edge)
        assert got == want, f"sb_q={got:#x}, want {want:#x} (sb_d at edge t={sample_edge} ps)"
        checked += 1
    done = True
    assert checked > 500 and len(changes) > 100


# --------------------------------------------------------------------------- fhg_async_fifo


async def _fifo_run(dut, period_a: int, period_b: int, seed: int, n_words: int) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    await _setup(dut, period_a, period_b, rng)
    sent: deque[int] = deque()
    stats = {"writes": 0, "pops": 0, "full_seen": 0, "empty_seen": 0, "burst_pops": 0}
    # Phases of (write probability, read-ready probability) that force both full and empty.
    phases = [(0.9, 0.2), (0.2, 0.9), (1.0, 1.0), (0.5, 0.5), (1.0, 0.0), (0.0, 1.0)]
    phase = [phases[0]]

    async def writer() -> None:
        while stats["writes"] < n_words:
            await FallingEdge(dut.clk_a)
            full, wr_count = _u(dut.fifo_full), _u(dut.fifo_wr_count)
            true_items = stats["writes"] - stats["pops"]
            assert wr_count <= FIFO_DEPTH, f"wr_count {wr_count} > DEPTH"
            assert full == (wr_count == FIFO_DEPTH), f"full={full} with wr_count={wr_count}"
            # The RAM holds all unread words but the one in the output register.
            assert wr_count >= true_items - 1, (
                f"wr_count {wr_count} under-reports {true_items} words in the FIFO"
            )
            stats["full_seen"] += full
            if not full and rng.random() < phase[0][0]:
                word = rng.getrandbits(32)
                dut.fifo_wr_en.value = 1
                dut.fifo_wr_data.value = word
                sent.append(word)
                stats["writes"] += 1
            else:
                dut.fifo_wr_en.value = 0
                dut.fifo_wr_data.value = rng.getrandbits(32)  # ignored while wr_en is low
        await FallingEdge(dut.clk_a)
        dut.fifo_wr_en.value = 0

    async def phase_switcher() -> None:
        while True:
            await _cycles(dut.clk_a, rng.randrange(20, 120))
            phase[0] = rng.choice(phases)

    async def reader() -> None:
        while stats["pops"] < n_words:
            await FallingEdge(dut.clk_b)
            valid, data = _u(dut.fifo_rd_valid), _u(dut.fifo_rd_data)
            rd_count = _u(dut.fifo_rd_count)
            true_items = stats["writes"] - stats["pops"]
            assert rd_count <= FIFO_DEPTH + 1, f"rd_count {rd_count} > DEPTH+1"
            assert rd_count <= true_items, f"rd_count {rd_count} over-reports {true_items} words"
            assert rd_count >= valid, "rd_valid high with rd_count 0"
            if valid:
                assert sent, f"rd_valid with nothing written (data {data:#x})"
            else:
                stats["empty_seen"] += 1
            # The word shown now is popped by the next edge if ready is driven high now.
            ready = rng.random() < phase[0][1]
            dut.fifo_rd_ready.value = int(ready)
            if valid and ready:
                want = sent.popleft()
                assert data == want, f"word {stats['pops']}: read {data:#x}, want {want:#x}"
                stats["pops"] += 1

    switcher = cocotb.start_soon(phase_switcher())
    w = cocotb.start_soon(writer())
    await reader()
    await w
    switcher.cancel()
    await FallingEdge(dut.clk_b)  # the edge that takes the last word
    dut.fifo_rd_ready.value = 0
    assert stats["full_seen"] > 0, "test never filled the FIFO"
    assert stats["empty_seen"] > 0, "test never emptied the FIFO"

    # Fill it with the reader stopped: capacity is DEPTH RAM words plus the output register.
    expect_words: list[int] = []
    stop = _now() + 16 * max(period_a, period_b)
    while _now() < stop:
        await FallingEdge(dut.clk_a)
        if _u(dut.fifo_full):
            dut.fifo_wr_en.value = 0
        else:
            word = rng.getrandbits(32)
            dut.fifo_wr_en.value = 1
            dut.fifo_wr_data.value = word
            expect_words.append(word)
    await FallingEdge(dut.clk_a)
    dut.fifo_wr_en.value = 0
    assert len(expect_words) == FIFO_DEPTH + 1, f"held {len(expect_words)} words, want DEPTH+1"
    await _cycles(dut.clk_b, 2 * STAGES + 4)
    assert _u(dut.fifo_rd_count) == FIFO_DEPTH + 1, "reader should see every stored word"
    assert _u(dut.fifo_wr_count) == FIFO_DEPTH and _u(dut.fifo_full)
    # Drain with ready held high: one word per clk_b cycle, no bubbles.
    await FallingEdge(dut.clk_b)
    dut.fifo_rd_ready.value = 1
    for i, want in enumerate(expect_words):
        assert _u(dut.fifo_rd_valid), f"bubble before word {i} of a full FIFO"
        assert _u(dut.fifo_rd_data) == want, f"drain word {i} wrong"
        await FallingEdge(dut.clk_b)
    dut.fifo_rd_ready.value = 0
    assert not _u(dut.fifo_rd_valid), "rd_valid after the last word"
    await _cycles(dut.clk_a, 2 * STAGES + 6)
    await _cycles(dut.clk_b, 2)
    assert not _u(dut.fifo_rd_valid) and _u(dut.fifo_rd_count) == 0
    assert _u(dut.fifo_wr_count) == 0 and not _u(dut.fifo_full), "FIFO not empty after drain"


@cocotb.test()
async def fifo_fast_writer_slow_reader(dut) -> None:  # noqa: ANN001
    await _fifo_run(dut, MAC_PS, AXI100_PS, seed=21, n_words=1200)


@cocotb.test()
async def fifo_slow_writer_fast_reader(dut) -> None:  # noqa: ANN001
    await _fifo_run(dut, AXI250_PS, USER_PS, seed=22, n_words=1500)


@cocotb.test()
async def fifo_near_equal_clocks(dut) -> None:  # noqa: ANN001
    await _fifo_run(dut, USER_PS, MAC_PS, seed=23, n_words=2000)


# --------------------------------------------------------------------------- fhg_pulse_sync


async def _pulse_run(dut, period_a: int, period_b: int, seed: int, cycles: int) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    await _setup(dut, period_a, period_b, rng)
    counts = {"sent": 0, "dropped": 0, "got": 0}
    done = False

    async def sink() -> None:
        while not done:
            await FallingEdge(dut.clk_b)
            if _u(dut.ps_pulse_b):
                counts["got"] += 1
                assert counts["got"] <= counts["sent"], "pulse_b without a source pulse"

    cocotb.start_soon(sink())
    pending_busy = False
    for _ in range(cycles):
        await FallingEdge(dut.clk_a)
        busy = _u(dut.ps_busy_a)
        if not busy:
            # Once the acknowledgement is back, the destination must have produced the pulse.
            assert counts["got"] == counts["sent"], (
                f"busy_a low with {counts['sent']} sent, {counts['got']} delivered"
            )
        if pending_busy:
            assert busy, "busy_a not raised the cycle after an accepted pulse"
        pending_busy = False
        fire = rng.random() < (0.3 if busy else 0.5)
        dut.ps_pulse_a.value = int(fire)
        if fire and busy:
            counts["dropped"] += 1  # documented: ignored, never delivered
        elif fire:
            counts["sent"] += 1
            pending_busy = True
    await FallingEdge(dut.clk_a)
    dut.ps_pulse_a.value = 0
    await _cycles(dut.clk_a, 4 * STAGES + 8)
    await _cycles(dut.clk_b, 4 * STAGES + 8)
    done = True
    assert not _u(dut.ps_busy_a)
    assert counts["got"] == counts["sent"], f"{counts['got']} pulses for {counts['sent']} sent"
    assert counts["sent"] > 50 and counts["dropped"] > 50


@cocotb.test()
async def pulse_sync_fast_to_slow(dut) -> None:  # noqa: ANN001
    await _pulse_run(dut, MAC_PS, AXI100_PS, seed=31, cycles=3000)


@cocotb.test()
async def pulse_sync_slow_to_fast(dut) -> None:  # noqa: ANN001
    await _pulse_run(dut, AXI250_PS, USER_PS, seed=32, cycles=2000)


# --------------------------------------------------------------------------- fhg_ram_sdp


class _History:
    """Write history of a RAM model: per address, (write time, word, writing port) in order."""

    def __init__(self) -> None:
        self.writes: dict[int, list[tuple[int, int, str]]] = {}

    def write(self, addr: int, t: int, word: int, port: str) -> None:
        self.writes.setdefault(addr, []).append((t, word, port))

    def read(self, addr: int, t: int, port: str, margin: int = 2) -> int | None:
        """Word a read by ``port`` at edge time ``t`` returns.

        None when the word was never written, or another port wrote it too close to ``t``
        to say which side of the read the write fell (undefined by contract). A write by the
        reading port on the same edge is after the read: the RAMs are read-first.
        """
        hist = self.writes.get(addr, [])
        if any(abs(wt - t) <= margin and wp != port for wt, _, wp in hist):
            return None
        before = [w for wt, w, _ in hist if wt < t]
        return before[-1] if before else None


@cocotb.test()
async def ram_sdp_read_after_write_both_latencies(dut) -> None:  # noqa: ANN001
    """Latency-1 and latency-2 instances against one model; half the reads chase writes."""
    rng = random.Random(41)
    await _setup(dut, MAC_PS, AXI250_PS, rng)
    half_a, half_b = MAC_PS // 2, AXI250_PS // 2
    mem = _History()
    recent: deque[int] = deque(maxlen=4)

    async def writer() -> None:
        while True:
            await FallingEdge(dut.clk_a)
            en = rng.random() < 0.6
            addr = rng.randrange(SDP_WORDS)
            word = rng.getrandbits(36)
            dut.sdp_wr_en.value = int(en)
            dut.sdp_wr_addr.value = addr
            dut.sdp_wr_data.value = word
            if en:
                mem.write(addr, _now() + half_a, word, "w")
                recent.append(addr)

    w = cocotb.start_soon(writer())
    # Reads issued on each clk_b edge: (address, edge time), or None for an idle edge. The
    # expected word is looked up only once every write before that edge has been recorded.
    issued: list[tuple[int, int] | None] = []
    want1: int | None = None
    want2: int | None = None
    checked = [0, 0]
    for cycle in range(2500):
        await FallingEdge(dut.clk_b)
        # Latency 1 loads one edge after an enabled edge, latency 2 two; both hold otherwise.
        if len(issued) >= 1 and issued[-1] is not None:
            want1 = mem.read(*issued[-1], port="r")
        if len(issued) >= 2 and issued[-2] is not None:
            want2 = mem.read(*issued[-2], port="r")
        if cycle > 100 and want1 is not None:
            got = _u(dut.sdp1_rd_data)
            assert got == want1, f"latency-1 read at cycle {cycle}: {got:#x}, want {want1:#x}"
            checked[0] += 1
        if cycle > 100 and want2 is not None:
            got = _u(dut.sdp2_rd_data)
            assert got == want2, f"latency-2 read at cycle {cycle}: {got:#x}, want {want2:#x}"
            checked[1] += 1
        en = rng.random() < 0.7
        addr = rng.choice(recent) if recent and rng.random() < 0.5 else rng.randrange(SDP_WORDS)
        dut.sdp_rd_en.value = int(en)
        dut.sdp_rd_addr.value = addr
        issued.append((addr, _now() + half_b) if en else None)
    w.cancel()
    assert checked[0] > 1500 and checked[1] > 1500, f"too few checked reads: {checked}"


# --------------------------------------------------------------------------- fhg_ram_tdp


@cocotb.test()
async def ram_tdp_both_ports_read_write(dut) -> None:  # noqa: ANN001
    """Port a writes even words, port b odd ones; both read everything (read-first)."""
    rng = random.Random(51)
    await _setup(dut, USER_PS, AXI100_PS, rng)
    mem = _History()
    checked = {"a": 0, "b": 0, "read_first": 0, "cross": 0}

    async def port(name: str, clk, half: int, parity: int, cycles: int) -> None:  # noqa: ANN001
        def sig(field: str):
            return getattr(dut, f"tdp_{name}_{field}")

        want: int | None = None
        pending: tuple[int, int, bool] | None = None  # (address, edge time, wrote too)
        for cycle in range(cycles):
            await FallingEdge(clk)
            if pending is not None:
                want = mem.read(pending[0], pending[1], port=name)
                if want is not None:
                    checked["read_first"] += pending[2]
                    checked["cross"] += pending[0] % 2 != parity
            if cycle > 10 and want is not None:
                got = _u(sig("rdata"))
                assert got == want, f"port {name} cycle {cycle}: read {got:#x}, want {want:#x}"
                checked[name] += 1
            en = rng.random() < 0.8
            addr = rng.randrange(TDP_WORDS)
            we = en and addr % 2 == parity and rng.random() < 0.5
            word = rng.getrandbits(24)
            t_edge = _now() + half
            pending = (addr, t_edge, we) if en else None
            if we:
                mem.write(addr, t_edge, word, name)
            sig("en").value = int(en)
            sig("we").value = int(we)
            sig("addr").value = addr
            sig("wdata").value = word
        await FallingEdge(clk)  # let the last operation reach its edge before idling
        sig("en").value = 0

    a = cocotb.start_soon(port("a", dut.clk_a, USER_PS // 2, 0, 4000))
    await port("b", dut.clk_b, AXI100_PS // 2, 1, 1000)
    await a
    assert checked["a"] > 2000 and checked["b"] > 500, f"too few checked reads: {checked}"
    assert checked["read_first"] > 100 and checked["cross"] > 500, f"weak coverage: {checked}"


# --------------------------------------------------------------------------- fhg_cdc_delta


async def _delta_run(dut, period_a: int, period_b: int, seed: int, cycles: int) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    await _setup(dut, period_a, period_b, rng)
    totals = {"src": 0, "dst": 0, "transfers": 0}
    done = False

    async def sink() -> None:
        while not done:
            await FallingEdge(dut.clk_b)
            if _u(dut.cd_valid):
                delta = _u(dut.cd_delta)
                assert delta != 0, "dst_valid with a zero delta"
                totals["dst"] += delta
                totals["transfers"] += 1
                assert totals["dst"] <= totals["src"], "destination counted more than was sent"

    cocotb.start_soon(sink())
    # Mix of sparse, dense and worst-case (all-ones every cycle) stretches.
    styles: list[Callable[[], int]] = [
        lambda: 0,
        lambda: rng.randrange(256),
        lambda: 255,
        lambda: 1 if rng.random() < 0.1 else 0,
        lambda: rng.choice((0, 1, 254, 255)),
    ]
    style = styles[1]
    for cycle in range(cycles):
        if cycle % 97 == 0:
            style = rng.choice(styles)
        await FallingEdge(dut.clk_a)
        incr = style()
        dut.cd_incr.value = incr
        totals["src"] += incr
    await FallingEdge(dut.clk_a)
    dut.cd_incr.value = 0
    # Flush: two round trips at the slower clock move whatever is still accumulated.
    await Timer(4 * (STAGES + 3) * max(period_a, period_b), "ps")
    await _cycles(dut.clk_b, 2)
    done = True
    assert totals["dst"] == totals["src"], f"sent {totals['src']}, received {totals['dst']}"
    assert totals["transfers"] > 50, "too few transfers to mean anything"


@cocotb.test()
async def cdc_delta_mac_to_axi100(dut) -> None:  # noqa: ANN001
    await _delta_run(dut, MAC_PS, AXI100_PS, seed=61, cycles=5000)


@cocotb.test()
async def cdc_delta_user_to_axi250(dut) -> None:  # noqa: ANN001
    await _delta_run(dut, USER_PS, AXI250_PS, seed=62, cycles=4000)


@cocotb.test()
async def cdc_delta_slow_to_fast(dut) -> None:  # noqa: ANN001
    await _delta_run(dut, AXI100_PS, MAC_PS, seed=63, cycles=1500)


# --------------------------------------------------------------------------- fhg_cfg_sync


async def _cfg_run(dut, period_a: int, period_b: int, seed: int, cycles: int) -> None:  # noqa: ANN001
    rng = random.Random(seed)
    await _setup(dut, period_a, period_b, rng)
    # Every value carries its sequence number in the top 12 bits, so order can be checked.
    written: dict[int, int] = {0: 0}  # value -> sequence number (0 is the post-reset input)
    current = [0]
    done = False
    stats = {"updates": 0, "held_ok": 0}

    async def monitor() -> None:
        last_seq = -1
        valid_seen = False
        while not done:
            await FallingEdge(dut.clk_b)
            data, valid = _u(dut.cs_data), _u(dut.cs_valid)
            if not valid:
                assert not valid_seen, "dst_valid fell without a reset"
                assert data == CFG_RST_VAL, f"before dst_valid, dst_data={data:#x}"
                continue
            valid_seen = True
            assert data in written, f"dst_data {data:#x} was never written"
            seq = written[data]
            assert seq >= last_seq, f"dst_data went back from #{last_seq} to #{seq}"
            last_seq = seq
            stats["updates"] += _u(dut.cs_update)

    cocotb.start_soon(monitor())
    seq = 0
    round_trip = (STAGES + 3) * (period_a + period_b)
    cycle = 0
    long_hold = 2 * round_trip // period_a + 1
    while cycle < cycles:
        hold = rng.choice((1, 1, 2, 5, long_hold))
        seq += 1
        value = (seq << 36) | rng.getrandbits(36)
        written[value] = seq
        current[0] = value
        await FallingEdge(dut.clk_a)
        dut.cs_src.value = value
        await _cycles(dut.clk_a, hold - 1)
        cycle += hold
        if hold == long_hold:
            assert _u(dut.cs_data) == value, "a value held for two round trips did not arrive"
            stats["held_ok"] += 1
    await Timer(3 * round_trip, "ps")
    await FallingEdge(dut.clk_b)
    assert _u(dut.cs_data) == current[0], "final value did not arrive"
    done = True
    assert stats["updates"] > 20 and seq > 200


@cocotb.test()
async def cfg_sync_axi_to_mac(dut) -> None:  # noqa: ANN001
    await _cfg_run(dut, AXI100_PS, MAC_PS, seed=71, cycles=1500)


@cocotb.test()
async def cfg_sync_fast_to_slow(dut) -> None:  # noqa: ANN001
    await _cfg_run(dut, USER_PS, AXI100_PS, seed=72, cycles=4000)
